//! Every option spelling of AIPerf 0.13.0's `aiperf profile --help` (the fixture written by
//! scripts/aiperf-profile-help.sh) is in our table, and `aiperf-cli profile` either parses it
//! (honoured) or refuses it by name in one line (refused): never clap's "unexpected argument".
#![allow(clippy::unwrap_used)]

mod common;

#[allow(dead_code)]
#[path = "../src/profile/aiperf_options.rs"]
mod aiperf_options;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use aiperf_options::{OPTIONS, Verdict};
use common::BIN;

const HELP: &str = "tests/fixtures/aiperf-0.13.0-profile-help.txt";
/// The trace of every honoured run: missing, so that the run stops once the options are valid.
const MISSING: &str = "missing.jsonl";

/// The option spellings of AIPerf's help: the name column of each option's rows (a row of a
/// box starting `│ -`, or `│   -` for names wrapped onto the next row), up to the first double
/// space.
fn help_spellings() -> Vec<String> {
    let path = common::root().join(HELP);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut out = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix('│') else { continue };
        let names = match rest.strip_prefix("   -").or_else(|| rest.strip_prefix(" -")) {
            Some(n) => format!("-{n}"),
            None => continue,
        };
        let column = names.split("  ").next().unwrap();
        out.extend(column.split(' ').filter(|s| !s.is_empty()).map(str::to_string));
    }
    out
}

fn profile(dir: &Path, args: &[&str]) -> Output {
    Command::new(BIN).current_dir(dir).arg("profile").args(args).env_remove("OPENAI_API_KEY").output().unwrap()
}

/// What a run of one spelling must print.
enum Expect {
    /// The options were valid: the run got as far as reading the (missing) trace.
    ReachesTheTrace,
    /// Exactly this line on stderr.
    Refusal(String),
}

/// The failure of one run, if it failed; exit status 2 either way.
fn check(dir: &Path, args: &[String], expect: &Expect) -> Option<String> {
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = profile(dir, &argv);
    let err = String::from_utf8_lossy(&out.stderr);
    let ok = out.status.code() == Some(2)
        && match expect {
            Expect::ReachesTheTrace => err.contains(MISSING) && !clap_refused(&err),
            Expect::Refusal(line) => err == *line,
        };
    (!ok).then(|| format!("{argv:?}: status {:?}: {err}", out.status.code()))
}

fn clap_refused(stderr: &str) -> bool {
    stderr.contains("unexpected argument") || stderr.contains("unrecognized") || stderr.contains("invalid value")
}

#[test]
fn every_aiperf_option_is_honoured_or_refused_by_name() {
    let spellings = help_spellings();
    assert!(spellings.len() > 300, "{} spellings read from {HELP}", spellings.len());
    let in_help: BTreeSet<&str> = spellings.iter().map(String::as_str).collect();
    let in_table: BTreeSet<&str> = OPTIONS.iter().map(|o| o.spelling).collect();
    assert_eq!(in_table.len(), OPTIONS.len(), "a spelling is twice in the table");
    let missing: Vec<_> = in_help.difference(&in_table).collect();
    assert!(missing.is_empty(), "AIPerf spellings missing from the table: {missing:?}");
    let extra: Vec<_> = in_table.difference(&in_help).collect();
    assert!(extra.is_empty(), "table spellings not in AIPerf's help: {extra:?}");

    let dir = tempfile::tempdir().unwrap();
    let tokenizer = common::tokenizer();
    let config = common::fixture("aiperf-0.13.0-templates/minimal.yaml").display().to_string();
    let series = common::fixture("rate-series.json").display().to_string();
    let system_prompt = common::fixture("system-prompt.txt").display().to_string();
    // One command line per spelling, with what its run must print: a path in the error that
    // stops an honoured run, or the whole refusal line.
    let mut runs: Vec<(Vec<String>, Expect)> = Vec::new();
    let (mut honoured, mut refused) = (0, 0);
    for o in OPTIONS {
        match o.verdict {
            Verdict::Honoured { ours, example } => {
                honoured += 1;
                // The required options, unless the spelling is one of them; a URL nothing listens on.
                let mut args: Vec<String> = Vec::new();
                for (flag, value) in [("--model", "m"), ("--input-file", MISSING), ("--url", "http://127.0.0.1:9")] {
                    if ours != flag {
                        args.extend([flag.to_string(), value.to_string()]);
                    }
                }
                args.push(o.spelling.to_string());
                args.extend(example.iter().map(|e| {
                    e.replace("missing-tokenizer.json", &tokenizer)
                        .replace("minimal.yaml", &config)
                        .replace("rate-series.json", &series)
                        .replace("system-prompt.txt", &system_prompt)
                }));
                runs.push((args, Expect::ReachesTheTrace));
            }
            Verdict::Refused(why) => {
                refused += 1;
                let args = ["-m", "m", "--input-file", MISSING, o.spelling, "1"].map(String::from).to_vec();
                let line = format!(
                    "error: the AIPerf option {} is not supported by `aiperf-cli profile`: {}; instead: {}\n",
                    o.spelling, why.why, why.instead
                );
                runs.push((args, Expect::Refusal(line)));
            }
        }
    }
    let failures: Vec<String> = std::thread::scope(|s| {
        let workers: Vec<_> = runs
            .chunks(runs.len().div_ceil(8))
            .map(|chunk| {
                s.spawn(|| {
                    chunk.iter().filter_map(|(args, expect)| check(dir.path(), args, expect)).collect::<Vec<_>>()
                })
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().unwrap()).collect()
    });
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
    println!("AIPerf 0.13.0 profile option spellings: {} ({honoured} honoured, {refused} refused)", OPTIONS.len());
    assert_eq!(aiperf_options::counts(), (honoured, refused));
}

#[test]
fn refusals_cover_attached_values_and_aiperf_stream_domains() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["--server-profiler-timeout-seconds=2"][..],
        &["-b4"],
        &["-b", "4"],
        &["--stream", "metrics"],
        &["--stream=timing"],
    ] {
        let mut argv = vec!["-m", "m", "--input-file", MISSING];
        argv.extend_from_slice(args);
        let out = profile(dir.path(), &argv);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("is not supported by `aiperf-cli profile`") && err.lines().count() == 1,
            "{args:?}: {err}"
        );
    }
    // Our `--stream` switch (an alias of --streaming) stays ours.
    let out = profile(dir.path(), &["-m", "m", "--input-file", MISSING, "--url", "http://127.0.0.1:9", "--stream"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains(MISSING));
}

#[test]
fn spellings_that_are_not_aiperfs_keep_clap_errors() {
    let dir = tempfile::tempdir().unwrap();
    let out = profile(dir.path(), &["-m", "m", "--input-file", MISSING, "--no-such-option"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unexpected argument '--no-such-option'"));
}

#[test]
fn custom_dataset_type_reads_the_named_format() {
    const LIMIT: Duration = Duration::from_secs(120);
    let mock = common::Mock::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    // A Bailian trace (AIPerf's bailian_trace): seconds, 16-token hash ids, three root chats.
    let lines: Vec<String> = (0..3)
        .map(|i| {
            let isl: u32 = 100 + 20 * i;
            let ids: Vec<String> = (0..isl.div_ceil(16)).map(|b| (1000 * i + b).to_string()).collect();
            format!(
                r#"{{"chat_id": {i}, "parent_chat_id": -1, "timestamp": {}, "input_length": {isl}, "output_length": 4, "type": "text", "turn": 1, "hash_ids": [{}]}}"#,
                f64::from(i) * 0.05,
                ids.join(", ")
            )
        })
        .collect();
    let trace = common::write_trace(dir.path(), &lines);
    let out = common::profile_on(
        &mock.url,
        &trace,
        &dir.path().join("a"),
        &["--custom-dataset-type", "bailian_trace"],
        LIMIT,
    );
    common::ok(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("detected format"), "the named format is read, not detected: {err}");
    let mut isls: Vec<u64> = mock.arrivals().iter().map(|a| a["prompt_tokens"].as_u64().unwrap()).collect();
    isls.sort_unstable();
    assert_eq!(isls, [100, 120, 140]);
    // Without it the format is detected (and said); AIPerf's other names read the file as theirs.
    let out = common::profile_on(&mock.url, &trace, &dir.path().join("b"), &[], LIMIT);
    common::ok(&out);
    assert!(String::from_utf8_lossy(&out.stderr).contains("detected format: bailian"));
    let out = common::profile_on(
        &mock.url,
        &trace,
        &dir.path().join("c"),
        &["--custom-dataset-type", "burst_gpt_trace"],
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    for (extra, expected) in [
        (
            &["--custom-dataset-type", "bailian_trace", "--trace-format", "weka"][..],
            "reads bailian traces, but --trace-format names weka",
        ),
        (
            &["--custom-dataset-type", "raw_payload"],
            "--custom-dataset-type raw_payload: accepted is mooncake_trace, bailian_trace, burst_gpt_trace, weka_trace",
        ),
        // AIPerf's own files are read as theirs: a Bailian line is no single_turn record.
        (&["--custom-dataset-type", "single_turn"], ":1: `chat_id`: a key of AIPerf's single_turn record"),
    ] {
        let out = common::profile_on(&mock.url, &trace, &dir.path().join("d"), extra, LIMIT);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.code() == Some(2) && err.contains(expected), "{extra:?}: {err}");
    }
    assert_eq!(mock.arrivals().len(), 6, "only the two runs that read the trace sent anything");
}

/// `--dataset-sampling-strategy` picks each session run's session as AIPerf's samplers do for
/// `--random-seed 0` (their orders printed by AIPerf 0.13.0's `RandomSampler` and
/// `ShuffleSampler` over five conversations after `rng.init(0)`).
#[test]
fn dataset_sampling_strategy_sends_sessions_in_aiperfs_order() {
    const LIMIT: Duration = Duration::from_secs(120);
    let mock = common::Mock::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let lines: Vec<String> =
        (0..5).map(|i| format!(r#"{{"input_length": {}, "output_length": 2}}"#, 100 + 20 * i)).collect();
    let trace = common::write_trace(dir.path(), &lines);
    let mut sent = 0;
    for (strategy, order) in [
        ("sequential", [0, 1, 2, 3, 4, 0, 1, 2, 3, 4]),
        ("random", [1, 0, 0, 1, 1, 1, 4, 1, 3, 1]),
        ("shuffle", [2, 1, 3, 4, 0, 1, 4, 3, 2, 0]),
    ] {
        let art = dir.path().join(strategy);
        let args = ["--concurrency", "1", "--request-count", "10", "--dataset-sampling-strategy", strategy];
        let out = common::profile_on(&mock.url, &trace, &art, &[&args[..], &["--allow-dataset-wrap"]].concat(), LIMIT);
        common::ok(&out);
        let arrivals = mock.arrivals();
        let sessions: Vec<u64> =
            arrivals[sent..].iter().map(|a| (a["prompt_tokens"].as_u64().unwrap() - 100) / 20).collect();
        assert_eq!(sessions, order, "{strategy}");
        sent = arrivals.len();
        let dataset = &common::summary(&art)["input_config"]["datasets"][0];
        assert_eq!(dataset["sampling"], strategy);
        assert_eq!(dataset["synthesis"]["allow_dataset_wrap"], true);
    }
    // Without a request count each session run is one draw: random may repeat a session.
    let out = common::profile_on(
        &mock.url,
        &trace,
        &dir.path().join("once"),
        &["--concurrency", "1", "--dataset-sampling-strategy", "random"],
        LIMIT,
    );
    common::ok(&out);
    assert_eq!(common::summary(&dir.path().join("once"))["request_count"]["avg"], 5.0);
    let arrivals = mock.arrivals();
    let once: Vec<u64> = arrivals[sent..].iter().map(|a| (a["prompt_tokens"].as_u64().unwrap() - 100) / 20).collect();
    assert_eq!(once, [1, 0, 0, 1, 1]);
    sent = arrivals.len();
    // A fixed schedule sends sessions at their timestamps: only sequential, as in AIPerf.
    let timed: Vec<String> =
        (0..3).map(|i| format!(r#"{{"timestamp": {}, "input_length": 100, "output_length": 2}}"#, i * 10)).collect();
    let timed = common::write_trace(dir.path(), &timed);
    for extra in [
        &["--dataset-sampling-strategy", "shuffle"][..],
        &["--fixed-schedule", "--dataset-sampling-strategy", "random"],
    ] {
        let out = common::profile_on(&mock.url, &timed, &dir.path().join("fixed"), extra, LIMIT);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.code() == Some(2) && err.contains("a fixed schedule (the trace's timestamps) sends each session at its timestamp, so it takes only sequential"),
            "{extra:?}: {err}"
        );
    }
    assert_eq!(mock.arrivals().len(), sent);
}

/// `--connection-reuse-strategy never` opens a connection for every request (counted by a relay
/// in front of the mock, and none of the records' connections reused); `pooled`, the default,
/// keeps one for all the requests of a run at concurrency 1.
#[test]
fn connection_reuse_strategy_never_opens_a_connection_per_request() {
    const LIMIT: Duration = Duration::from_secs(120);
    let mock = common::Mock::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let lines: Vec<String> =
        (0..3).map(|i| format!(r#"{{"input_length": {}, "output_length": 2}}"#, 100 + i)).collect();
    let trace = common::write_trace(dir.path(), &lines);
    for strategy in ["pooled", "never"] {
        let (url, connections) = recording_relay(&mock.url);
        let art = dir.path().join(strategy);
        let args = [
            "--concurrency",
            "1",
            "--request-count",
            "6",
            "--no-server-metrics",
            "--export-http-trace",
            "--connection-reuse-strategy",
            strategy,
        ];
        let out = common::profile_on(&url, &trace, &art, &args, LIMIT);
        common::ok(&out);
        let lines = common::read_jsonl(&art.join("profile_export.jsonl"));
        assert_eq!(lines.len(), 6);
        let reused = lines.iter().filter(|l| l["trace_data"].get("connection_reused_ns").is_some()).count();
        let opened = connections.lock().unwrap().len();
        if strategy == "never" {
            // One connection to find out that the server answers, then one per request.
            assert_eq!((reused, opened), (0, 7), "{strategy}");
        } else {
            assert_eq!((reused, opened), (6, 1), "{strategy}");
        }
        let config = &common::summary(&art)["input_config"]["endpoint"];
        assert_eq!(config["connection_reuse"], strategy);
    }
}

/// What a client sent on each connection a relay accepted, in order.
type Sent = std::sync::Arc<std::sync::Mutex<Vec<std::sync::Arc<std::sync::Mutex<Vec<u8>>>>>>;

/// A TCP relay to `target` that keeps, per connection it accepts, the bytes the client sent.
fn recording_relay(target: &str) -> (String, Sent) {
    use std::io::{Read, Write};
    use std::net::{Shutdown, TcpListener, TcpStream};
    use std::sync::{Arc, Mutex};
    let target = target.trim_start_matches("http://").trim_end_matches('/').to_owned();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let conns: Sent = Arc::default();
    let seen = conns.clone();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(mut client) = client else { continue };
            let sent: Arc<Mutex<Vec<u8>>> = Arc::default();
            seen.lock().unwrap().push(sent.clone());
            let Ok(mut server) = TcpStream::connect(&target) else { continue };
            let (mut back_from, mut back_to) = (server.try_clone().unwrap(), client.try_clone().unwrap());
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut back_from, &mut back_to);
                let _ = back_to.shutdown(Shutdown::Write);
            });
            std::thread::spawn(move || {
                let mut buf = [0u8; 16 << 10];
                while let Ok(n) = client.read(&mut buf) {
                    if n == 0 || server.write_all(&buf[..n]).is_err() {
                        break;
                    }
                    sent.lock().unwrap().extend_from_slice(&buf[..n]);
                }
                let _ = server.shutdown(Shutdown::Write);
            });
        }
    });
    (url, conns)
}

/// The values of header `name` in the requests of an HTTP/1.1 byte stream.
fn header_values(bytes: &[u8], name: &str) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes);
    let prefix = format!("{}:", name.to_ascii_lowercase());
    text.split("\r\n")
        .filter(|l| l.to_ascii_lowercase().starts_with(&prefix))
        .map(|l| l[prefix.len()..].trim().to_owned())
        .collect()
}

/// `--connection-reuse-strategy sticky-user-sessions`: each session's turns go over one
/// connection of its own, which no other session uses (seen by a relay in front of the mock):
/// the connections are the sessions (and the one that found out that the server answers), and
/// every later turn reuses its session's connection.
#[test]
fn sticky_user_sessions_keep_each_session_on_a_connection_of_its_own() {
    const LIMIT: Duration = Duration::from_secs(120);
    let mock = common::Mock::start(&["--ttft-ms", "5", "--itl-ms", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let lines: Vec<String> = (0..4)
        .flat_map(|s| {
            (0..3).map(move |t| format!(r#"{{"session_id": "s{s}", "input_length": {}, "output_length": 2}}"#, 50 + t))
        })
        .collect();
    let trace = common::write_trace(dir.path(), &lines);
    let (url, conns) = recording_relay(&mock.url);
    let art = dir.path().join("sticky");
    let args = [
        "--concurrency",
        "2",
        "--no-server-metrics",
        "--export-http-trace",
        "--connection-reuse-strategy",
        "sticky-user-sessions",
    ];
    common::ok(&common::profile_on(&url, &trace, &art, &args, LIMIT));
    let records = common::read_jsonl(&art.join("profile_export.jsonl"));
    assert_eq!(records.len(), 12);
    let reused = records.iter().filter(|l| l["trace_data"].get("connection_reused_ns").is_some()).count();
    assert_eq!(reused, 8, "every later turn on its session's connection");
    let conns = conns.lock().unwrap();
    let per_conn: Vec<std::collections::BTreeSet<String>> = conns
        .iter()
        .map(|c| header_values(&c.lock().unwrap(), "x-correlation-id").into_iter().collect())
        .filter(|ids: &std::collections::BTreeSet<String>| !ids.is_empty())
        .collect();
    assert_eq!(conns.len(), 5, "one connection per session and the server check: {per_conn:?}");
    assert_eq!(per_conn.len(), 4, "{per_conn:?}");
    assert!(per_conn.iter().all(|ids| ids.len() == 1), "a connection carried several sessions: {per_conn:?}");
    let sessions: std::collections::BTreeSet<&String> = per_conn.iter().flatten().collect();
    assert_eq!(sessions.len(), 4, "a session used several connections: {per_conn:?}");
    assert_eq!(common::summary(&art)["input_config"]["endpoint"]["connection_reuse"], "sticky-user-sessions");
}

/// `--per-chunk-usage` asks for usage on every chunk, and inter-token latency leaves out the
/// tokens the server counted in the first content chunk (four here, bundled by the mock) instead
/// of one, as AIPerf's; it needs server token counts, a stream and the chat endpoint.
#[test]
fn per_chunk_usage_takes_the_first_chunks_tokens_out_of_inter_token_latency() {
    const LIMIT: Duration = Duration::from_secs(120);
    let mock = common::Mock::start(&["--first-chunk-tokens", "4", "--ttft-ms", "5", "--itl-ms", "5", "--log-bodies"]);
    let dir = tempfile::tempdir().unwrap();
    let lines: Vec<String> = (0..3).map(|_| r#"{"input_length": 50, "output_length": 10}"#.to_owned()).collect();
    let trace = common::write_trace(dir.path(), &lines);
    let mut sent = 0;
    for (extra, first_chunk) in [(&["--per-chunk-usage"][..], 4.0), (&[], 1.0)] {
        let art = dir.path().join(format!("first{first_chunk}"));
        let args = [&["--concurrency", "1", "--streaming", "--use-server-token-count"][..], extra].concat();
        let out = common::profile_on(&mock.url, &trace, &art, &args, LIMIT);
        common::ok(&out);
        let records = common::read_jsonl(&art.join("profile_export.jsonl"));
        assert_eq!(records.len(), 3);
        for r in &records {
            let m = |k: &str| r["metrics"][k]["value"].as_f64().unwrap_or_else(|| panic!("{k}: {r}"));
            assert_eq!(m("output_sequence_length"), 10.0);
            let decode = m("request_latency") - m("time_to_first_token");
            let itl = m("inter_token_latency");
            assert!((itl * (10.0 - first_chunk) - decode).abs() < 1e-6 * decode.max(1.0), "{extra:?}: {r}");
        }
        let arrivals = mock.arrivals();
        for a in &arrivals[sent..] {
            assert_eq!(
                a["body"]["stream_options"]["continuous_usage_stats"].as_bool().is_some(),
                !extra.is_empty(),
                "{a}"
            );
        }
        sent = arrivals.len();
        assert_eq!(
            common::summary(&art)["input_config"]["endpoint"].get("per_chunk_usage").is_some(),
            !extra.is_empty()
        );
    }
    for (extra, expected) in [
        (&["--per-chunk-usage", "--streaming"][..], "--per-chunk-usage needs --use-server-token-count"),
        (&["--per-chunk-usage", "--use-server-token-count"], "--per-chunk-usage needs --streaming"),
        (
            &["--per-chunk-usage", "--use-server-token-count", "--streaming", "--endpoint-type", "completions"],
            "--per-chunk-usage needs --endpoint-type chat",
        ),
    ] {
        let out = common::profile_on(&mock.url, &trace, &dir.path().join("bad"), extra, LIMIT);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.code() == Some(2) && err.contains(expected), "{extra:?}: {err}");
    }
    assert_eq!(mock.arrivals().len(), sent);
}

#[test]
fn aiperf_names_of_our_features_do_what_ours_do() {
    const LIMIT: Duration = Duration::from_secs(120);
    let mock = common::Mock::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let lines: Vec<String> =
        (0..5).map(|i| format!(r#"{{"timestamp": {}, "input_length": 50, "output_length": 2}}"#, i * 10)).collect();
    let trace = common::write_trace(dir.path(), &lines);
    let art = dir.path().join("named");
    let names = [
        "--output-artifact-dir",
        art.to_str().unwrap(),
        "--wait-for-model-timeout",
        "5",
        "--reset-kv-cache",
        "--server-kind",
        "vllm",
        "--num-requests",
        "3",
        "--transport",
        "http",
        "-vv",
        "--no-gpu-telemetry",
        "--no-auto-plot",
    ];
    let out = common::profile(
        &[
            &["-m", "m", "-u", &mock.url, "--tokenizer", &common::tokenizer(), "--input-file", trace.to_str().unwrap()],
            &names[..],
        ]
        .concat(),
        LIMIT,
    );
    common::ok(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Waiting up to 5.0 s for") && err.contains("Prefix cache emptied (vllm)"), "{err}");
    assert_eq!(common::summary(&art)["request_count"]["avg"], 3.0);
    let arrivals = mock.arrivals();
    // The reset, then the three requests.
    assert_eq!(arrivals[0]["reset"], "/reset_prefix_cache");
    assert_eq!(arrivals.iter().filter(|a| a["path"] == "/v1/chat/completions").count(), 3);
    assert_eq!(arrivals.len(), 4);
    // AIPerf's default of --wait-for-model-timeout, 0, does not wait.
    let out = common::profile_on(&mock.url, &trace, &dir.path().join("b"), &["--wait-for-model-timeout", "0"], LIMIT);
    common::ok(&out);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("Waiting up to"));
}

#[test]
fn aiperf_server_options_probe_reset_and_choose_files_against_the_mock() {
    const LIMIT: Duration = Duration::from_secs(120);
    let mock = common::Mock::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let lines: Vec<String> =
        (0..3).map(|i| format!(r#"{{"timestamp": {}, "input_length": 50, "output_length": 2}}"#, i * 10)).collect();
    let trace = common::write_trace(dir.path(), &lines);
    let run = |name: &str, model: &str, extra: &[&str]| {
        let art = dir.path().join(name);
        let tok = common::tokenizer();
        let base = ["-m", model, "-u", &mock.url, "--tokenizer", &tok, "--input-file", trace.to_str().unwrap()];
        let out = common::profile(&[&base[..], &["--artifact-dir", art.to_str().unwrap()], extra].concat(), LIMIT);
        (out, art)
    };
    // inference (AIPerf's default mode): one request of one token "Lo" before the run's three.
    let (out, _) = run("inference", "m", &["--wait-for-model-timeout", "5", "--wait-for-model-mode", "inference"]);
    common::ok(&out);
    let arrivals = mock.arrivals();
    assert_eq!(arrivals.len(), 4, "{arrivals:?}");
    assert_eq!(arrivals[0]["max_tokens"], 1, "{}", arrivals[0]);
    // models: the mock lists "mock"; another model is waited for until the limit, the error says why.
    let (out, _) = run(
        "models",
        "mock",
        &["--wait-for-model-timeout", "5", "--wait-for-model-mode", "models", "--wait-for-model-interval", "0.1"],
    );
    common::ok(&out);
    assert_eq!(mock.arrivals().len(), 7, "the models probe sends no completion");
    let (out, _) = run(
        "absent",
        "other",
        &["--wait-for-model-timeout", "0.5", "--wait-for-model-mode", "both", "--wait-for-model-interval", "0.1"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0));
    assert!(
        err.contains("did not come up within --wait-for-model-timeout 0.5 s (GET /v1/models lists other; last: /v1/models does not list other)"),
        "{err}"
    );
    assert_eq!(mock.arrivals().len(), 7, "nothing sent when the server is not ready");
    // --reset-kv-cache-path: that path is POSTed, whatever the server's kind.
    let (out, art) = run(
        "reset",
        "m",
        &["--reset-kv-cache", "--reset-kv-cache-path", "flush_cache", "--server-metrics-formats", "csv"],
    );
    common::ok(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Prefix cache emptied (--reset-kv-cache-path): POST /flush_cache"), "{err}");
    assert_eq!(mock.arrivals()[7]["reset"], "/flush_cache");
    // --server-metrics-formats csv: the CSV alone.
    assert!(art.join("server_metrics_export.csv").exists());
    assert!(!art.join("server_metrics_export.json").exists());
    let (out, art) = run("json", "m", &["--server-metrics-formats", "json"]);
    common::ok(&out);
    assert!(art.join("server_metrics_export.json").exists() && !art.join("server_metrics_export.csv").exists());
}

#[test]
fn a_cache_reset_that_gets_no_answer_ends_at_its_timeout() {
    // A server that accepts connections and never answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let held = std::thread::spawn(move || {
        let mut open = Vec::new();
        for s in listener.incoming().take(4) {
            open.push(s);
        }
        std::thread::sleep(Duration::from_secs(5));
    });
    let dir = tempfile::tempdir().unwrap();
    let trace = common::write_trace(dir.path(), &[r#"{"timestamp": 0, "input_length": 5, "output_length": 2}"#.into()]);
    let tok = common::tokenizer();
    let out = common::profile(
        &[
            "-m",
            "m",
            "-u",
            &url,
            "--tokenizer",
            &tok,
            "--input-file",
            trace.to_str().unwrap(),
            "--no-server-metrics",
            "--reset-kv-cache",
            "--server-kind",
            "vllm",
            "--reset-kv-cache-timeout-seconds",
            "0.3",
            "--artifact-dir",
            dir.path().join("art").to_str().unwrap(),
        ],
        Duration::from_secs(60),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0));
    assert!(
        err.contains("--reset-prefix-cache: POST") && err.contains("/reset_prefix_cache: no answer within 0.3 s"),
        "{err}"
    );
    drop(held);
}
