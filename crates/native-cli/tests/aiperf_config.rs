//! `profile --config FILE.yaml` (`-f`) on AIPerf 0.13.0's own config templates
//! (`tests/fixtures/aiperf-0.13.0-templates`, written by `aiperf config init`): each template
//! either runs against the mock server (the command line overriding its URL, model and
//! tokenizer, and shortening long runs), its records and options showing the file's values, or
//! is refused in one line naming the file, the key and why.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::*;
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(180);

fn templates() -> PathBuf {
    root().join("tests/fixtures/aiperf-0.13.0-templates")
}

/// What a template does under `profile --config`.
enum Expect {
    /// It runs against the mock with these extra command-line options; the check reads the run.
    Runs(&'static [&'static str], fn(&Run)),
    /// It is refused at this key, naming this AIPerf option (or this reason).
    Refused(&'static str, &'static str),
}

/// A finished run: its records and the options it ran with (`aiperf_cli_config` of the summary);
/// of several runs (`run_1`, `run_2`, … folders), every run's records and the first's options.
struct Run {
    records: Vec<Value>,
    options: Value,
    runs: usize,
    /// The artifact folder.
    art: PathBuf,
}

impl Run {
    fn option(&self, name: &str) -> &Value {
        &self.options[name]
    }
    fn meta(&self, name: &str) -> Vec<f64> {
        self.records.iter().map(|r| r["metadata"][name].as_f64().unwrap()).collect()
    }
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Every template of `aiperf config init --list` (tests/fixtures/…/list.txt).
const TEMPLATES: &[(&str, Expect)] = &[
    (
        "minimal",
        Expect::Runs(&[], |r| {
            assert_eq!(r.records.len(), 100);
            assert_eq!(r.option("concurrency"), 8);
            assert_eq!(r.option("request_count"), 100);
            assert!(r.meta("input_tokens").iter().all(|&t| t == 512.0));
            assert!(r.meta("max_tokens").iter().all(|&t| t == 128.0));
        }),
    ),
    (
        "warmup_profiling",
        Expect::Runs(
            &["--benchmark-duration", "2", "--request-rate-ramp-duration", "0.5", "--warmup-request-count", "10"],
            |r| {
                assert_eq!(r.option("arrival_pattern"), "gamma");
                assert_eq!(r.option("arrival_smoothness"), 1.5);
                assert_eq!(r.option("request_rate"), 50.0);
                assert_eq!(r.option("concurrency"), 64);
                assert_eq!(r.option("warmup_concurrency"), 8);
                assert_eq!(r.option("warmup_request_count"), 10);
                assert!(r.records.len() >= 5, "{} records", r.records.len());
            },
        ),
    ),
    (
        "fixed_schedule",
        Expect::Runs(&[], |r| {
            assert_eq!(r.records.len(), 8);
            assert_eq!(r.option("fixed_schedule"), true);
            assert_eq!(r.option("fixed_schedule_auto_offset"), true);
            assert_eq!(r.option("concurrency"), 100);
            assert_eq!(r.option("random_seed"), 42);
            assert_eq!(r.option("slice_duration"), 10.0);
            assert_eq!(r.option("streaming"), true);
            assert_eq!(r.option("request_timeout_seconds"), 300.0);
            // The schedule's timestamps (ms), the first at zero.
            let mut at: Vec<f64> = r.meta("scheduled_ns");
            at.sort_by(f64::total_cmp);
            let first = at[0];
            let ms: Vec<f64> = at.iter().map(|t| ((t - first) / 1e6).round()).collect();
            assert_eq!(ms, [0.0, 500.0, 750.0, 1000.0, 1500.0, 2000.0, 3000.0, 5000.0]);
            let mut by_time: Vec<(f64, f64)> = r.meta("scheduled_ns").into_iter().zip(r.meta("input_tokens")).collect();
            by_time.sort_by(|a, b| a.0.total_cmp(&b.0));
            let isl: Vec<f64> = by_time.iter().map(|p| p.1).collect();
            assert_eq!(isl, [100.0, 200.0, 150.0, 300.0, 800.0, 400.0, 250.0, 600.0]);
        }),
    ),
    (
        "goodput_slo",
        Expect::Runs(&["--benchmark-duration", "2", "--warmup-request-count", "10"], |r| {
            assert_eq!(r.option("request_rate"), 30.0);
            assert_eq!(r.option("arrival_pattern"), "poisson");
            assert_eq!(r.option("warmup_concurrency"), 16);
            let goodput = r.option("goodput").to_string();
            assert!(goodput.contains("time_to_first_token") && goodput.contains("request_latency"), "{goodput}");
            assert!(r.records.len() >= 5, "{} records", r.records.len());
        }),
    ),
    (
        "latency_test",
        Expect::Runs(&["--benchmark-duration", "2"], |r| {
            assert_eq!(r.option("request_rate"), 20.0);
            assert_eq!(r.option("arrival_pattern"), "poisson");
            assert_eq!(r.option("concurrency"), 100);
            assert_eq!(r.option("benchmark_duration"), 2.0);
            assert_eq!(r.option("benchmark_grace_period"), 60.0);
            assert_eq!(r.option("slice_duration"), 30.0);
            assert!(r.records.len() >= 5, "{} records in 2 s at 20/s", r.records.len());
            let isl = mean(&r.meta("input_tokens"));
            assert!((150.0..360.0).contains(&isl), "mean ISL {isl}");
            let osl = mean(&r.meta("max_tokens"));
            assert!((80.0..180.0).contains(&osl), "mean OSL {osl}");
        }),
    ),
    (
        "multi_url_load_balancing",
        Expect::Runs(
            &[
                "--benchmark-duration",
                "2",
                "--concurrency-ramp-duration",
                "0.5",
                "--warmup-request-count",
                "10",
                "--no-server-metrics",
            ],
            |r| {
                assert_eq!(r.option("concurrency"), 256);
                assert_eq!(r.option("concurrency_ramp_duration"), 0.5);
                assert_eq!(r.option("warmup_concurrency"), 16);
                assert!(r.records.len() >= 5, "{} records", r.records.len());
            },
        ),
    ),
    (
        "ramping",
        Expect::Runs(
            &[
                "--benchmark-duration",
                "2",
                "--concurrency-ramp-duration",
                "0.5",
                "--request-rate-ramp-duration",
                "0.5",
                "--warmup-request-count",
                "10",
                "--warmup-concurrency-ramp-duration",
                "0.5",
                "--no-server-metrics",
            ],
            |r| {
                assert_eq!(r.option("concurrency"), 200);
                assert_eq!(r.option("request_rate"), 200.0);
                assert_eq!(r.option("concurrency_ramp_duration"), 0.5);
                // The file's prefill ramp, which ramps nothing without a prefill limit (as in AIPerf).
                assert_eq!(r.option("prefill_concurrency_ramp_duration"), 30.0);
                assert_eq!(r.option("warmup_concurrency"), 50);
                assert!(r.records.len() >= 5, "{} records", r.records.len());
            },
        ),
    ),
    (
        "request_cancellation",
        Expect::Runs(&["--request-count", "30", "--warmup-request-count", "5", "--no-server-metrics"], |r| {
            assert_eq!(r.option("request_cancellation_rate"), 10.0);
            assert_eq!(r.option("request_cancellation_delay"), 0.5);
            assert_eq!(r.option("request_rate"), 20.0);
            assert_eq!(r.records.len(), 30);
        }),
    ),
    (
        "time_based_soak",
        Expect::Runs(
            &["--benchmark-duration", "2", "--warmup-duration", "0.5", "--no-server-metrics", "--no-gpu-telemetry"],
            |r| {
                assert_eq!(r.option("concurrency"), 32);
                assert_eq!(r.option("warmup_duration"), 0.5);
                assert_eq!(r.option("warmup_concurrency"), 16);
                assert_eq!(r.option("slice_duration"), 300.0);
                assert!(r.records.len() >= 5, "{} records", r.records.len());
            },
        ),
    ),
    (
        "inline_dataset",
        Expect::Runs(&[], |r| {
            assert_eq!(r.option("concurrency"), 4);
            assert_eq!(r.option("request_count"), 50);
            assert_eq!(r.records.len(), 50);
            // The five records in order (AIPerf's sequential sampling of single_turn), ten times:
            // each its prompt's tokens, the second with its output_length.
            let mut by_session: Vec<&Value> = r.records.iter().collect();
            by_session.sort_by_key(|l| l["metadata"]["session_num"].as_u64());
            let tokens = [5.0, 8.0, 7.0, 4.0, 4.0];
            for (k, l) in by_session.iter().enumerate() {
                let m = &l["metadata"];
                assert_eq!(m["trace_line"].as_u64(), Some(k as u64 % 5 + 1), "request {k}");
                assert_eq!(m["input_tokens"].as_f64(), Some(tokens[k % 5]), "request {k}");
                let max_tokens = if k % 5 == 1 { Some(200.0) } else { None };
                assert_eq!(m["max_tokens"].as_f64(), max_tokens, "request {k}");
            }
        }),
    ),
    (
        "multi_turn_conversation",
        Expect::Runs(
            &[
                "--benchmark-duration",
                "2",
                "--benchmark-grace-period",
                "5",
                "--conversation-turn-delay-mean",
                "100",
                "--conversation-turn-delay-stddev",
                "10",
                "--no-server-metrics",
            ],
            |r| {
                assert_eq!(r.option("connection_reuse_strategy"), "sticky-user-sessions");
                assert_eq!(r.option("concurrency"), 20);
                assert!(r.records.len() >= 5, "{} records", r.records.len());
            },
        ),
    ),
    ("public_dataset", Expect::Refused("benchmark.dataset.type", "--public-dataset")),
    (
        "trace_replay",
        Expect::Runs(&[], |r| {
            assert_eq!(r.records.len(), 10);
            assert_eq!(r.option("server_metrics_formats"), &serde_json::json!(["json", "csv", "parquet"]));
            for f in ["json", "csv", "parquet"] {
                assert!(r.art.join(format!("server_metrics_export.{f}")).is_file(), "{f}");
            }
            let head = std::fs::read(r.art.join("server_metrics_export.parquet")).unwrap();
            assert!(head.starts_with(b"PAR1") && head.ends_with(b"PAR1"));
        }),
    ),
    ("scenario_workload_profiles", Expect::Refused("sweep.type", "scenario, zip and sampled sweeps")),
    ("speed_bench_sweep", Expect::Refused("sweep.parameters.datasets.main.format", "only concurrency and rate")),
    ("sweep_distributions", Expect::Refused("sweep.parameters", "several parameters")),
    ("sweep_with_plot", Expect::Refused("plot", "--auto-plot")),
    (
        "env_var_production",
        Expect::Runs(
            &[
                "--benchmark-duration",
                "1",
                "--profile-run-cooldown-seconds",
                "0",
                "--request-rate-ramp-duration",
                "0.5",
                "--warmup-request-count",
                "10",
                "--no-server-metrics",
            ],
            |r| {
                assert_eq!(r.runs, 3, "multiRun.numRuns");
                assert_eq!(r.option("random_seed"), 42);
                assert_eq!(r.option("request_rate"), 30.0);
                assert_eq!(r.option("arrival_pattern"), "gamma");
                assert_eq!(r.option("arrival_smoothness"), 1.5);
                assert_eq!(r.option("concurrency"), 64);
                assert_eq!(r.option("warmup_concurrency"), 8);
                assert!(r.option("goodput").to_string().contains("time_to_first_token:1000"));
                assert!(r.records.len() >= 3 * 5, "{} records", r.records.len());
                // The first conversations' ISL (the peaks) and OSL (log-normal) are the draws of
                // AIPerf's own samplers for seed 42 (`Distribution.sample_int` on
                // `derive("dataset.prompt.length")` and `derive("composer.turn.max_tokens")`), in
                // every run (setConsistentSeed).
                const ISL: [f64; 8] = [147.0, 2256.0, 363.0, 174.0, 241.0, 542.0, 324.0, 444.0];
                const OSL: [f64; 8] = [429.0, 97.0, 210.0, 444.0, 443.0, 362.0, 299.0, 231.0];
                let mut seen = 0;
                for rec in &r.records {
                    let m = &rec["metadata"];
                    let id = m["conversation_id"].as_str().unwrap();
                    let k: usize = id.trim_start_matches("session_").parse().unwrap();
                    if k < 8 {
                        assert_eq!(m["input_tokens"].as_f64(), Some(ISL[k]), "{id}");
                        assert_eq!(m["max_tokens"].as_f64(), Some(OSL[k]), "{id}");
                        seen += 1;
                    }
                }
                assert!(seen >= 3 * 5, "{seen} of the first conversations");
            },
        ),
    ),
    (
        "gpu_telemetry",
        Expect::Runs(&["--request-count", "40", "--warmup-request-count", "4"], |r| {
            assert_eq!(r.option("concurrency"), 16);
            assert_eq!(r.option("warmup_concurrency"), 4);
            assert_eq!(r.records.len(), 40);
        }),
    ),
    (
        "http_trace_metrics",
        Expect::Runs(&["--request-count", "20"], |r| {
            assert_eq!(r.option("export_http_trace"), true);
            assert_eq!(r.option("show_trace_timing"), true);
            assert_eq!(r.option("request_rate"), 20.0);
            assert_eq!(r.records.len(), 20);
            assert!(r.records.iter().all(|l| l["trace_data"]["request_send_start_ns"].is_u64()));
        }),
    ),
    (
        "jinja2_variables",
        Expect::Runs(
            &[
                "--num-profile-runs",
                "1",
                "--benchmark-duration",
                "1",
                "--request-rate-ramp-duration",
                "0.5",
                "--warmup-request-count",
                "2",
            ],
            |r| {
                assert_eq!(r.option("random_seed"), 42);
                assert_eq!(r.option("request_rate"), 30.0);
                assert_eq!(r.option("arrival_pattern"), "gamma");
                assert!(!r.records.is_empty());
            },
        ),
    ),
    (
        "kv_cache_test",
        Expect::Runs(&["--warmup-duration", "1.5", "--benchmark-duration", "2", "--no-server-metrics"], |r| {
            assert_eq!(r.option("warmup_user_centric_rate"), 1.0);
            assert_eq!(r.option("warmup_num_users"), 10);
            assert_eq!(r.option("warmup_duration"), 1.5);
            assert_eq!(r.option("user_centric_rate"), 2.0);
            assert_eq!(r.option("num_users"), 30);
            // The profiling phase alone: its users' first turns at 0, 0.5, 1 and 1.5 s.
            assert_eq!(r.records.len(), 4);
            assert!(r.meta("input_tokens").iter().all(|&t| t > 512.0), "the 512-token prefix and the prompt");
        }),
    ),
    (
        "long_context",
        Expect::Runs(&["--request-count", "10", "--request-rate", "50", "--no-server-metrics"], |r| {
            assert_eq!(r.option("prefill_concurrency"), 5);
            assert_eq!(r.option("prefill_concurrency_ramp_duration"), 30.0);
            assert_eq!(r.option("warmup_prefill_concurrency"), 2);
            assert_eq!(r.option("concurrency"), 20);
            assert_eq!(r.records.len(), 10);
        }),
    ),
    ("user_files", Expect::Refused("benchmark.artifacts.userFiles", "files written from templates")),
    ("audio_multimodal", Expect::Refused("benchmark.dataset.audio", "--audio-length-mean")),
    ("multimodal_vision", Expect::Refused("benchmark.dataset.images", "--image-width-mean")),
    ("embeddings", Expect::Refused("benchmark.dataset.prompts.batchSize", "--prompt-batch-size")),
];

/// `aiperf-cli profile ARGS` in `dir`, with a time limit.
fn profile_in(dir: &Path, args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.current_dir(dir).arg("profile").args(args).env_remove("OPENAI_API_KEY");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    wait_limited(child, LIMIT)
}

fn read_run(art: &Path) -> Run {
    let folders: Vec<PathBuf> =
        (1..).map(|k| art.join(format!("run_{k}"))).take_while(|d| d.join("profile_export.jsonl").is_file()).collect();
    if folders.is_empty() {
        let records = read_jsonl(&art.join("profile_export.jsonl"));
        return Run { records, options: summary(art)["aiperf_cli_config"].clone(), runs: 1, art: art.to_path_buf() };
    }
    let records = folders.iter().flat_map(|d| read_jsonl(&d.join("profile_export.jsonl"))).collect();
    Run {
        records,
        options: summary(&folders[0])["aiperf_cli_config"].clone(),
        runs: folders.len(),
        art: art.to_path_buf(),
    }
}

#[test]
fn every_template_runs_against_the_mock_or_is_refused_by_key() {
    // The table names every template of the list, once.
    let list = std::fs::read_to_string(templates().join("list.txt")).unwrap();
    let in_list: BTreeSet<String> = list
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| templates().join(format!("{w}.yaml")).is_file())
        .map(str::to_string)
        .collect();
    let in_table: BTreeSet<String> = TEMPLATES.iter().map(|(n, _)| n.to_string()).collect();
    assert_eq!(in_table.len(), TEMPLATES.len(), "a template is twice in the table");
    assert_eq!(in_list, in_table);
    assert_eq!(in_list.len(), 27);

    let mock = Mock::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let tok = tokenizer();
    let mut failures = Vec::new();
    for (name, expect) in TEMPLATES {
        let file = format!("{name}.yaml");
        let art = dir.path().join(name);
        let art_s = art.display().to_string();
        let mut args = vec!["--config", &file, "--url", &mock.url, "--model", "m", "--tokenizer", &tok];
        args.extend(["--artifact-dir", &art_s, "--ui-type", "none"]);
        match expect {
            Expect::Runs(extra, check) => {
                args.extend_from_slice(extra);
                let out = profile_in(&templates(), &args, &[]);
                if !out.status.success() {
                    failures.push(format!("{name}: {:?}: {}", out.status, String::from_utf8_lossy(&out.stderr)));
                    continue;
                }
                let run = read_run(&art);
                assert_eq!(run.option("model"), "m", "{name}: --model overrides the file's");
                assert_eq!(run.option("url"), mock.url.as_str(), "{name}: --url overrides the file's");
                assert_eq!(run.option("tokenizer"), tok.as_str(), "{name}");
                check(&run);
                assert_times_consistent(&run.records);
            }
            Expect::Refused(key, what) => {
                let out = profile_in(&templates(), &args, &[]);
                let err = String::from_utf8_lossy(&out.stderr);
                let line = format!("error: {file}: key `{key}` = ");
                let ok = out.status.code() == Some(2)
                    && err.lines().count() == 1
                    && err.starts_with(&line)
                    && err.contains("is not supported by `aiperf-cli profile`: ")
                    && err.contains(what);
                if !ok {
                    failures.push(format!("{name}: {:?}: expected `{key}` ({what}): {err}", out.status.code()));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// A config file of the test's own in `dir`.
fn write_config(dir: &Path, text: &str) -> String {
    let p = dir.join("config.yaml");
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

#[test]
fn env_variables_and_jinja_values_reach_the_run_and_the_command_line_wins() {
    let mock = Mock::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        "schemaVersion: \"2.0\"\nvariables:\n  base: 3\nrandom_seed: ${SEED:7}\nbenchmark:\n  model: ${MODEL_NAME:file-model}\n  endpoint:\n    url: ${MOCK_URL}\n    type: chat\n  dataset:\n    type: synthetic\n    entries: \"{{ base * 4 }}\"\n    prompts: {isl: \"{{ base * 10 }}\", osl: 5}\n  profiling:\n    type: concurrency\n    concurrency: \"{{ base - 1 }}\"\n    requests: \"{{ base * 4 }}\"\n",
    );
    let art = dir.path().join("art");
    let (tok, art_s) = (tokenizer(), art.display().to_string());
    let base = ["--tokenizer", tok.as_str(), "--ui-type", "none", "--artifact-dir", art_s.as_str()];
    // `-f` and `--config=` are the same option; `--request-count` on the command line wins.
    let args = [&["-f", config.as_str(), "--request-count", "5"][..], &base].concat();
    let out = profile_in(dir.path(), &args, &[("MOCK_URL", &mock.url), ("SEED", "11")]);
    ok(&out);
    let run = read_run(&art);
    assert_eq!(run.records.len(), 5);
    assert_eq!(run.option("model"), "file-model");
    assert_eq!(run.option("url"), mock.url.as_str());
    assert_eq!(run.option("random_seed"), 11);
    assert_eq!(run.option("concurrency"), 2);
    assert!(run.meta("input_tokens").iter().all(|&t| t == 30.0));
    assert!(run.meta("max_tokens").iter().all(|&t| t == 5.0));

    std::fs::remove_dir_all(&art).unwrap();
    let arg = format!("--config={config}");
    let out = profile_in(dir.path(), &[&[arg.as_str()][..], &base].concat(), &[("MOCK_URL", &mock.url)]);
    ok(&out);
    let run = read_run(&art);
    assert_eq!(run.records.len(), 12);
    assert_eq!(run.option("random_seed"), 7);

    // Without MOCK_URL, which has no default, the error names the variable and the key.
    let out = profile_in(dir.path(), &[&["-f", config.as_str()][..], &base].concat(), &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        err,
        format!(
            "error: {config}: key `benchmark.endpoint.url`: the environment variable MOCK_URL is not set and `${{MOCK_URL}}` gives no default (write `${{MOCK_URL:DEFAULT}}` or set it)\n"
        )
    );
}

#[test]
fn errors_name_the_file_the_key_path_the_value_and_what_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, &str)] = &[
        (
            "benchmark:\n  model: m\n  phases:\n    - {name: warmup, type: concurrency, requests: 2}\n    - {name: profiling, type: poisson, requestRate: 10}\n",
            "key `benchmark.phases[1].requestRate` = 10 is not a key of AIPerf 0.13's config file; accepted keys here (camelCase or snake_case): name, kind, type, excludeFromResults, requests,",
        ),
        (
            "benchmark:\n  modle: m\n",
            "key `benchmark.modle` = m is not a key of AIPerf 0.13's config file (did you mean `model`?); accepted keys here",
        ),
        (
            "benchmark:\n  model: m\n  profiling: {type: poisson, rate: 5, failed_request_threshold: 4}\n",
            "key `benchmark.profiling.failedRequestThreshold` = 4 (AIPerf option --failed-request-threshold) is not supported by `aiperf-cli profile`: ",
        ),
        (
            "benchmark:\n  model: m\n  profiling: {type: concurrency, rate: 5}\n",
            "key `benchmark.profiling.rate`: a concurrency phase has no rate (accepted for poisson, gamma, constant and user_centric phases)",
        ),
        (
            "benchmark:\n  model: m\n  profiling: {type: poisson, rate: 5, gracePeriod: soon}\n",
            "key `benchmark.profiling.gracePeriod` = soon: accepted is a duration: seconds, or 30s, 5m, 2h, inf",
        ),
        (
            "benchmark:\n  model: m\n  endpoint: {timeout: [1]}\n",
            "key `benchmark.endpoint.timeout` = [1]: invalid type: sequence, expected a number, a string or true/false",
        ),
        ("schemaVersion: \"1.0\"\nbenchmark: {model: m}\n", "key `schemaVersion` = 1.0: accepted is \"2.0\""),
        (
            "benchmark:\n  model: \"{{ missing }}\"\n",
            "key `benchmark.model`: the Jinja2 template `{{ missing }}` fails: ",
        ),
        ("benchmark: [1\n", "not a YAML config file: "),
    ];
    for (text, expected) in cases {
        let config = write_config(dir.path(), text);
        let out = profile_in(dir.path(), &["-f", &config], &[]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text}: {err}");
        assert!(err.starts_with(&format!("error: {config}: {expected}")), "{text}:\n{err}");
    }
    // A value clap refuses: clap's error, then the key it came from.
    let config = write_config(dir.path(), "benchmark:\n  model: m\n  profiling: {type: poisson, rate: abc}\n");
    let out = profile_in(dir.path(), &["-f", &config], &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(err.contains("invalid value 'abc' for '--request-rate"), "{err}");
    assert!(
        err.ends_with(&format!("  from {config}: `benchmark.profiling.rate` = abc (--request-rate=abc)\n")),
        "{err}"
    );
    // A value the plan refuses (a negative one stays a value): the plan's error, then the key.
    let config = write_config(dir.path(), "benchmark:\n  model: m\n  profiling: {type: poisson, rate: -3}\n");
    let out = profile_in(dir.path(), &["-f", &config], &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        err,
        format!(
            "error: --request-rate -3.0: accepted is 0.001 to 1000000 requests per second\n  from {config}: `benchmark.profiling.rate` = -3 (--request-rate=-3)\n"
        )
    );
    // A missing file.
    let out = profile_in(dir.path(), &["--config", "nowhere.yaml"], &[]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).lines().next(),
        Some("error: cannot read the config file nowhere.yaml: No such file or directory (os error 2)")
    );
}

#[test]
fn inline_records_are_single_turn_lines_and_a_bad_one_is_named_by_its_key() {
    let mock = Mock::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let art = dir.path().join("art");
    let (tok, art_s) = (tokenizer(), art.display().to_string());
    let base = [
        "--url",
        mock.url.as_str(),
        "--tokenizer",
        tok.as_str(),
        "--ui-type",
        "none",
        "--artifact-dir",
        art_s.as_str(),
    ];
    // Sessions, a role, extra body fields, delays and texts as AIPerf's objects.
    let config = write_config(
        dir.path(),
        "benchmark:\n  model: m\n  endpoint: {type: chat, streaming: true}\n  dataset:\n    type: file\n    records:\n      - {text: \"hello there\", session_id: a, output_length: 3}\n      - {texts: [{name: q, contents: [\"and then\"]}], session_id: a, delay: 50, output_length: 4}\n      - {text: \"42\", role: user, extra: {temperature: 0.5}, output_length: 5}\n  profiling: {type: concurrency, concurrency: 2, requests: 3}\n",
    );
    let out = profile_in(dir.path(), &[&["-f", config.as_str(), "--export-level", "raw"][..], &base].concat(), &[]);
    ok(&out);
    let run = read_run(&art);
    assert_eq!(run.records.len(), 3);
    let raw = read_jsonl(&art.join("profile_export_raw.jsonl"));
    let bodies: Vec<&Value> = raw.iter().map(|l| &l["payload"]).collect();
    let with = |max: u64| *bodies.iter().find(|b| b["max_completion_tokens"] == max).unwrap();
    // The session's second turn follows the first, sent alone (AIPerf's records are self-contained).
    assert_eq!(with(4)["messages"], serde_json::json!([{"role": "user", "content": "and then"}]));
    assert_eq!(run.option("turn_history"), "none");
    let third = with(5);
    assert_eq!(third["messages"], serde_json::json!([{"role": "user", "content": "42"}]));
    assert_eq!(third["temperature"], 0.5);

    // A bad record: the file, the key path of the record's field, the value and what is accepted.
    let config = write_config(
        dir.path(),
        "benchmark:\n  model: m\n  dataset:\n    records:\n      - {text: a}\n      - {text: b}\n      - {text: c}\n      - {text: 7}\n",
    );
    let out = profile_in(dir.path(), &[&["-f", config.as_str()][..], &base].concat(), &[]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("error: {config}: key `benchmark.dataset.records[3].text` = 7: accepted is a string (the prompt)\n")
    );
    let config =
        write_config(dir.path(), "benchmark:\n  model: m\n  dataset:\n    records:\n      - {text: a, image: x.png}\n");
    let out = profile_in(dir.path(), &[&["-f", config.as_str()][..], &base].concat(), &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with(&format!(
            "error: {config}: key `benchmark.dataset.records[0].image` = \"x.png\": accepted is no images"
        )),
        "{err}"
    );
}

#[test]
fn trace_replay_runs_when_the_command_line_turns_server_metrics_off() {
    // --no-server-metrics drops the file's serverMetrics, its formats with it.
    let mock = Mock::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let art = dir.path().join("art");
    let (tok, art_s) = (tokenizer(), art.display().to_string());
    let args = ["-f", "trace_replay.yaml", "--url", &mock.url, "--tokenizer", &tok, "--no-server-metrics"];
    let out = profile_in(&templates(), &[&args[..], &["--artifact-dir", &art_s, "--ui-type", "none"]].concat(), &[]);
    ok(&out);
    let run = read_run(&art);
    assert_eq!(run.records.len(), 10);
    assert_eq!(run.option("fixed_schedule"), true);
    assert_eq!(run.option("benchmark_duration"), 600.0);
    assert_eq!(run.option("benchmark_grace_period"), 120.0);
    assert_eq!(run.option("server_metrics").as_array().map(Vec::len), Some(0));
    // speedupRatio 2 halves the trace's timestamps (ms).
    let mut at = run.meta("scheduled_ns");
    at.sort_by(f64::total_cmp);
    let ms: Vec<f64> = at.iter().map(|t| ((t - at[0]) / 1e6).round()).collect();
    assert_eq!(ms, [0.0, 25.0, 60.0, 100.0, 175.0, 250.0, 375.0, 450.0, 550.0, 750.0]);
    assert_times_consistent(&run.records);
}

/// `v` with every object's keys in order.
fn sorted_keys(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let sorted: std::collections::BTreeMap<String, Value> =
                m.into_iter().map(|(k, v)| (k, sorted_keys(v))).collect();
            Value::Object(sorted.into_iter().collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted_keys).collect()),
        other => other,
    }
}

/// The bodies a mock logged (`--log-bodies`) without the model, sorted, and the time from the
/// first request to the one with `max_completion_tokens` 4 (ms).
fn logged(lines: &[Value]) -> (Vec<String>, f64) {
    let at = |l: &Value| l["arrival_ns"].as_str().unwrap().parse::<f64>().unwrap();
    let first = lines.iter().map(at).fold(f64::INFINITY, f64::min);
    let second_turn = lines.iter().find(|l| l["body"]["max_completion_tokens"] == 4).map(at).unwrap();
    let mut bodies: Vec<String> = lines
        .iter()
        .map(|l| {
            let mut b = l["body"].clone();
            b.as_object_mut().unwrap().remove("model");
            serde_json::to_string(&sorted_keys(b)).unwrap()
        })
        .collect();
    bodies.sort();
    (bodies, (second_turn - first) / 1e6)
}

#[test]
#[ignore = "needs AIPerf 0.13.0 from PyPI (1.2 GB venv): scripts/aiperf-venv.sh"]
fn aiperf_sends_a_config_files_inline_records_as_we_do() {
    let Some(venv) = aiperf_venv() else { return };
    let dir = tempfile::tempdir().unwrap();
    let records = "      - {text: \"hello there\", session_id: a, output_length: 3}\n      - {texts: [{name: q, contents: [\"and then\"]}], session_id: a, delay: 50, output_length: 4}\n      - {text: \"42\", role: user, extra: {temperature: 0.5}, output_length: 5}\n      - {text: \"What is machine learning?\"}\n";
    let run = |who: &str| -> (Vec<String>, f64) {
        let mock = Mock::start(&["--log-bodies"]);
        let config = dir.path().join(format!("{who}.yaml"));
        let text = format!(
            "schemaVersion: \"2.0\"\nbenchmark:\n  model: m\n  endpoint: {{url: \"{}\", type: chat, streaming: true}}\n  dataset:\n    type: file\n    records:\n{records}  phases: {{type: concurrency, concurrency: 1, requests: 4}}\n",
            mock.url
        );
        std::fs::write(&config, text).unwrap();
        let (config, art) = (config.display().to_string(), dir.path().join(format!("{who}-art")).display().to_string());
        let args = ["profile", "--config", config.as_str(), "--ui-type", "none", "--artifact-dir", art.as_str()];
        if who == "aiperf" {
            let args = [&args[..], &["--tokenizer", "local/smollm2"]].concat();
            let out = aiperf(&venv, dir.path(), dir.path(), &args, Duration::from_secs(300));
            assert!(out.status.success(), "aiperf: {}", String::from_utf8_lossy(&out.stderr));
        } else {
            let tok = tokenizer();
            let out = profile_in(dir.path(), &[&args[1..], &["--tokenizer", tok.as_str()]].concat(), &[]);
            ok(&out);
        }
        logged(&mock.arrivals())
    };
    let (theirs, their_gap) = run("aiperf");
    let (ours, our_gap) = run("ours");
    // The same four bodies: each record alone (no history), its role, max tokens and extra fields.
    assert_eq!(theirs, ours);
    // The session's second record waits its 50 ms delay after the first ends, in both.
    assert!(their_gap >= 50.0 && our_gap >= 50.0, "AIPerf {their_gap} ms, ours {our_gap} ms");
}

/// `kv_cache_test`'s user-centric warm-up (AIPerf's config-file phase, our
/// `--warmup-user-centric-rate`/`--warmup-num-users`), its rate and users given on the command
/// line: 2 users at 10 per second for 1.05 s send a request every 100 ms, each user's turns one
/// turn gap (200 ms) apart, later turns after their session's history; then the profiling phase,
/// whose records alone are the results.
#[test]
fn kv_cache_test_warms_up_on_its_users_schedule_apart_from_the_results() {
    let mock = Mock::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let art = dir.path().join("art");
    let (tok, art_s) = (tokenizer(), art.display().to_string());
    let args = [
        &["-f", "kv_cache_test.yaml", "--url", &mock.url, "--tokenizer", &tok, "--no-server-metrics"][..],
        &["--warmup-user-centric-rate", "10", "--warmup-num-users", "2", "--warmup-duration", "1.05"],
        &["--user-centric-rate", "10", "--num-users", "2", "--benchmark-duration", "1"],
        &["--artifact-dir", &art_s, "--ui-type", "none"],
    ]
    .concat();
    ok(&profile_in(&templates(), &args, &[]));
    let run = read_run(&art);
    let (warm, measured): (Vec<Value>, Vec<Value>) = mock
        .arrivals()
        .into_iter()
        .partition(|a| a["headers"]["request_id"].as_str().is_some_and(|id| id.contains("-warmup-")));
    // Due at 0, 100, …, 1000 ms: all 11 on time; a late machine sends fewer, never more.
    assert!((1..=11).contains(&warm.len()), "{} warm-up requests", warm.len());
    assert!((1..=10).contains(&measured.len()), "{} measured requests", measured.len());
    assert_eq!(run.records.len(), measured.len(), "the warm-up is not in the results");
    // The schedule's times are the core's (`replay::warmup`'s tests hold them exactly); what holds
    // at any load here: each session's turns, taken in the order they arrived, each carry a
    // longer prompt than the one before (its history).
    let at = arrival_ms(&warm);
    let mut by_session: std::collections::BTreeMap<String, Vec<(f64, u64)>> = Default::default();
    for (a, t) in warm.iter().zip(&at) {
        let id = a["headers"]["correlation_id"].as_str().unwrap().to_string();
        by_session.entry(id).or_default().push((*t, a["prompt_tokens"].as_u64().unwrap()));
    }
    assert!(warm.len() < 3 || by_session.values().any(|turns| turns.len() > 1), "{by_session:?}");
    for turns in by_session.values_mut() {
        turns.sort_by(|a, b| a.0.total_cmp(&b.0));
        assert!(turns.windows(2).all(|w| w[1].1 > w[0].1), "{by_session:?}");
    }
    let phases = &summary(&art)["input_config"]["phases"];
    assert_eq!(phases[0]["type"], "user_centric", "{phases}");
    assert_eq!((phases[0]["users"].as_u64(), phases[0]["rate"].as_f64()), (Some(2), Some(10.0)), "{phases}");
    assert_times_consistent(&run.records);
}
