//! The plan of one replay: where requests go, what is replayed, when sending stops, what is
//! written, the server's side; [`ReplayPlan::from_args`] checks the options group by group (the
//! input read in [`input`](super::input), the URLs in [`target`](super::target)).

use std::path::PathBuf;
use std::time::Duration;

use aiperf_core::formats::Format;
use aiperf_core::replay::sampling::Sampling;
use aiperf_core::replay::schedule::{self, Shard};
use aiperf_core::results::metrics::parse_goodput;
use aiperf_core::trace::dataset_file::Kind as DatasetKind;
use anyhow::{Result, anyhow, bail, ensure};
use serde_json::{Map, Value};

use super::arrivals::Arrivals;
use super::input::{
    DATASET_FILE_REQUESTS, cache_bust, dag_format, dataset_format, dataset_kind, file_osl, input, synthesis,
};
use super::limits::{
    MAX_CONCURRENCY, MAX_REQUESTS, MIN_SLICE, RATE_RANGE, in_range, key_value, parse_start_at, seconds,
};
use super::model::*;
use super::schedule::sequential_for_fixed;
use super::server::ServerPlan;
use super::target::urls;
use super::tls::TlsOptions;
use crate::io::trace_format::FormatChoice;
use crate::profile::body::{BodyTemplate, EndpointType, SystemMessage, TurnHistory};
use crate::profile::options::{Args, ConnectionReuse, UiType};
use crate::profile::{artifacts, progress};

impl ReplayPlan {
    /// Validates the flags into a plan. The groups are checked in this order, so that of several
    /// bad options the same one is always the one reported.
    pub fn from_args(a: Args) -> Result<ReplayPlan> {
        let urls = urls(&a.url)?;
        let tls = TlsOptions::of(a.ssl_ca_cert.as_ref(), a.insecure_skip_tls_verify)?;
        let dag = a.custom_dataset_type == DAG_JSONL;
        let format =
            if dag { dag_format(&a.trace_format)? } else { dataset_format(&a.custom_dataset_type, &a.trace_format)? };
        let block_size = in_range(a.isl_block_size, "--isl-block-size", 1, u64::from(u32::MAX))?;
        one_value_per_run(&a)?;
        let load = load(&a)?;
        let users = super::shaping::users(&a.shape, !a.request_rate.is_empty(), a.fixed_schedule)?;
        let rate_series = super::shaping::rate_series(&a.shape, !a.request_rate.is_empty())?;
        // With a series the run's rate starts at its first point's, as AIPerf's.
        let run_rate = load.rate.or(rate_series.as_deref().and_then(|p| p.first()).map(|p| p.1)).or(users.map(|u| u.0));
        let ramps = super::shaping::ramps(&a.shape, run_rate, load.concurrency)?;
        let smoothness = super::shaping::smoothness(&a.shape, a.arrival_pattern)?;
        let headers = a.headers.iter().map(|h| key_value(h, "--header")).collect::<Result<Vec<_>>>()?;
        let extra_inputs = extra_inputs(&a.extra_inputs)?;
        let slos = match &a.goodput {
            Some(g) => parse_goodput(g)?,
            None => Vec::new(),
        };
        let times = times(&a)?;
        let prefill = super::shaping::prefill(&a.shape, load.concurrency, a.streaming, load.coordination.shard)?;
        let synthesis = synthesis(&a, block_size)?;
        let input = input(&a, block_size)?;
        let osl = if matches!(input, Input::File(_)) { file_osl(&a)? } else { None };
        let dataset = match &input {
            Input::Dataset(d) => Some(d.kind),
            _ => None,
        };
        if let Input::Dataset(d) = &input {
            super::dataset_file::check_endpoint(d, a.endpoint_type)?;
        }
        let system = super::dataset_file::system_prompt(
            match &a.system_prompt_text {
                Some(t) => Some(t.clone()),
                None => super::system_prompt::resolve(&a)?,
            },
            match &input {
                Input::Dataset(d) => Some(d),
                _ => None,
            },
        );
        let cache_bust_shrinks = cache_bust(&a, &input, system.is_some())?;
        let delay_cap_s = super::delay_cap::check(&a, &input)?;
        let weka = super::weka::timing(&a, &format, &input, synthesis.as_ref().and_then(|p| p.max_osl))?;
        let baseten = super::baseten::plan(&a, &format, &input, synthesis.as_ref(), &extra_inputs)?;
        let is_baseten = match (&input, format.trace_format) {
            (Input::File(_), FormatChoice::Is(f)) => f == Format::Baseten,
            (Input::File(f), FormatChoice::Auto) => super::baseten::looks_columnar(f),
            _ => false,
        };
        let server = ServerPlan::of(&a, &urls)?;
        // AIPerf samples a dag_jsonl file's conversations at random, and a random_pool's in a
        // new order every pass, unless told otherwise.
        let sampling = a.dataset_sampling_strategy.unwrap_or(match dataset {
            _ if dag => Sampling::Random,
            Some(DatasetKind::RandomPool) if !a.fixed_schedule => Sampling::Shuffle,
            _ => Sampling::default(),
        });
        if a.fixed_schedule {
            sequential_for_fixed(sampling)?;
        }
        // AIPerf replays the timestamps of its own dataset files only when asked.
        let fixed = if a.fixed_schedule {
            Some(true)
        } else if a.no_fixed_schedule || dataset.is_some() {
            Some(false)
        } else {
            None
        };
        let mut plan = ReplayPlan {
            target: Target {
                url: urls[0].clone(),
                path: a.custom_endpoint.clone().unwrap_or_else(|| a.endpoint_type.path().to_owned()),
                urls,
                tls,
                api_key: a.api_key.clone().filter(|k| !k.is_empty()),
                headers,
                session_header: a.session_header.clone(),
                timeout: times.timeout,
                max_response_bytes: in_range(a.max_response_bytes, "--max-response-bytes", 1024, 1 << 40)?,
                body: BodyTemplate {
                    endpoint: a.endpoint_type,
                    model: a.model.clone(),
                    streaming: a.streaming,
                    legacy_max_tokens: a.use_legacy_max_tokens,
                    // WEKA sessions' rows carry their conversation in `input_length`; AIPerf sends
                    // each single_turn record alone, a session's records in order, and each
                    // Baseten row's recorded prompt as it is.
                    turn_history: if weka.is_some()
                        || is_baseten
                        || matches!(input, Input::Records(_))
                        || dataset == Some(DatasetKind::SingleTurn)
                    {
                        TurnHistory::None
                    } else {
                        a.turn_history
                    },
                    max_prompt_tokens: in_range(a.max_prompt_tokens, "--max-prompt-tokens", 1, 1 << 32)?,
                    extra_inputs,
                    continuous_usage: per_chunk_usage(&a)?,
                    system: system.map(SystemMessage::new),
                    cache_bust: a.cache_bust,
                    cache_bust_shrinks,
                },
                reuse_connections: a.connection_reuse_strategy != Some(ConnectionReuse::Never),
                sticky: a.connection_reuse_strategy == Some(ConnectionReuse::StickyUserSessions),
            },
            source: Source {
                input,
                format,
                weka,
                dag,
                baseten,
                delay_cap_s,
                osl,
                max_line_bytes: in_range(a.max_line_bytes, "--max-line-bytes", 1, 1 << 40)?,
                block_size,
                seed: a.random_seed,
                synthesis,
                tokenizer: a.tokenizer.clone(),
                tokenizer_revision: a.tokenizer_revision.clone(),
                arrivals: Arrivals {
                    fixed,
                    start_offset_ms: a.fixed_schedule_start_offset,
                    end_offset_ms: a.fixed_schedule_end_offset,
                    auto_offset: a.fixed_schedule_auto_offset,
                    // User-centric starts follow the users' own schedule.
                    rate: run_rate.map(|r| {
                        (r, if users.is_some() { schedule::ArrivalPattern::Constant } else { a.arrival_pattern })
                    }),
                },
                sampling,
            },
            limits: Limits {
                request_count: load.request_count,
                duration: times.duration,
                grace: times.grace,
                concurrency: load.concurrency,
                prefill,
                users: users.map(|u| u.1),
                cancellation: super::shaping::cancellation(&a.shape, a.random_seed)?,
                warmup: super::shaping::warmup(
                    &a.shape,
                    &super::shaping::RunLoad {
                        rate: load.rate,
                        pattern: a.arrival_pattern,
                        concurrency: load.concurrency,
                        warmup_requests: load.warmup_requests,
                        shard: load.coordination.shard,
                        seed: a.random_seed,
                        ramps,
                        smoothness,
                        prefill,
                        streaming: a.streaming,
                    },
                )?,
                ramps,
                smoothness,
                rate_series,
                system_idle_cap: system_idle_cap(&a, run_rate)?,
            },
            counting: if a.use_server_token_count { TokenCounting::ServerOnly } else { TokenCounting::Client },
            exports: Exports {
                artifact_dir: a.artifact_dir.clone().unwrap_or_else(|| PathBuf::from(artifacts::DEFAULT_ROOT)),
                slos,
                progress: match a.ui_type {
                    UiType::None => progress::Mode::Off,
                    UiType::Simple => {
                        progress::Mode::Auto { every: seconds(a.progress_interval, "--progress-interval", false)? }
                    }
                    UiType::Dashboard => {
                        progress::Mode::Dashboard { every: seconds(a.progress_interval, "--progress-interval", false)? }
                    }
                },
                slice: times.slice,
                records: a.export_level != crate::profile::options::ExportLevel::Summary,
                raw: a.export_level == crate::profile::options::ExportLevel::Raw,
                names: match &a.profile_export_prefix {
                    Some(p) => crate::io::exports::ExportNames::with_prefix(p)?,
                    None => crate::io::exports::ExportNames::default(),
                },
                http_trace: a.export_http_trace,
                show_trace_timing: a.show_trace_timing,
            },
            coordination: load.coordination,
            server,
            cli_config: Value::Null,
            aiperf_config: Value::Null,
        };
        plan.cli_config = super::cli_config::cli_config(&a, &plan);
        plan.aiperf_config = super::aiperf_config::aiperf_input_config(&a, &plan);
        Ok(plan)
    }

    /// This plan without its warm-up phase (a repeat after the first), `a` being its options.
    pub fn without_warmup(mut self, a: &Args) -> ReplayPlan {
        if self.limits.warmup.take().is_some() {
            self.cli_config["warmup_skipped"] = Value::Bool(true);
            self.aiperf_config = super::aiperf_config::aiperf_input_config(a, &self);
        }
        self
    }

    /// The options as written to the exports' `aiperf_cli_config` (secrets redacted).
    pub fn cli_config(&self) -> &Value {
        &self.cli_config
    }

    /// The options in AIPerf's configuration shape, the exports' `input_config` (secrets redacted).
    pub fn aiperf_config(&self) -> &Value {
        &self.aiperf_config
    }
}

/// `--per-chunk-usage`, checked as AIPerf checks it: the first chunk's count comes from the
/// server's usage, which only a streamed chat answer carries on every chunk.
fn per_chunk_usage(a: &Args) -> Result<bool> {
    if a.per_chunk_usage {
        ensure!(
            a.use_server_token_count,
            "--per-chunk-usage needs --use-server-token-count: the first chunk's token count is the server's, so the output length must be too"
        );
        ensure!(
            a.endpoint_type == EndpointType::Chat,
            "--per-chunk-usage needs --endpoint-type chat: usage on every chunk (continuous_usage_stats) is asked of chat servers only"
        );
        ensure!(
            a.streaming,
            "--per-chunk-usage needs --streaming: per-chunk usage and inter-token latency are for streamed answers"
        );
    }
    Ok(a.per_chunk_usage)
}

/// A run takes one value of each load option: a list is a sweep of sub-runs ([`super::ProfilePlan`]).
fn one_value_per_run(a: &Args) -> Result<()> {
    for (name, n) in [("--request-rate", a.request_rate.len()), ("--concurrency", a.concurrency.len())] {
        ensure!(n <= 1, "{name} has {n} values: one run takes one value (a list is a sweep of sub-runs)");
    }
    if let Some((p, v)) = a.synthesis.lists().next() {
        bail!("--{} has {} values: one run takes one value (a list is a sweep of sub-runs)", p.flag(), v.len());
    }
    Ok(())
}

/// The load options, checked, with this process's part of a sharded run.
struct Load {
    concurrency: Option<usize>,
    rate: Option<f64>,
    request_count: Option<u64>,
    warmup_requests: u64,
    coordination: Coordination,
}

fn load(a: &Args) -> Result<Load> {
    let mut concurrency =
        a.concurrency.first().map(|&c| in_range(c, "--concurrency", 1, MAX_CONCURRENCY)).transpose()?;
    // AIPerf's default load for its synthetic workload and its own dataset files: one request at
    // a time (its users' own schedule for a user-centric rate, which no concurrency caps unless
    // given).
    let dataset_file = dataset_kind(a).is_some() && !a.fixed_schedule;
    if (a.input_file.is_none() || dataset_file)
        && concurrency.is_none()
        && a.request_rate.is_empty()
        && a.shape.user_centric_rate.is_none()
    {
        concurrency = Some(1);
    }
    let rate = a
        .request_rate
        .first()
        .copied()
        .map(|r| {
            ensure!(
                r.is_finite() && r >= RATE_RANGE.0 && r <= RATE_RANGE.1,
                "--request-rate {r:?}: accepted is {} to {} requests per second",
                RATE_RANGE.0,
                RATE_RANGE.1
            );
            Ok(r)
        })
        .transpose()?;
    let mut request_count = a.request_count.map(|n| in_range(n, "--request-count", 1, MAX_REQUESTS)).transpose()?;
    // AIPerf's bound of a run on its single_turn, multi_turn and random_pool files given none
    // (no request count, duration or session count): 10 requests, the file's sessions in turn.
    if dataset_file
        && request_count.is_none()
        && a.benchmark_duration.is_none()
        && a.synthetic.conversation_num.is_none()
    {
        request_count = Some(DATASET_FILE_REQUESTS);
    }
    let warmup_requests = in_range(a.warmup_request_count, "--warmup-request-count", 0, MAX_REQUESTS)?;
    // A shard sends the whole run's sessions K, K+N, K+2N…, at the whole run's times:
    // `--request-count` stays the whole run's (the shards together send exactly it), while
    // the concurrency ceiling and the warm-up are totals divided as evenly as possible.
    let shard = match &a.shard {
        Some(s) => Shard::parse(s).map_err(|e| anyhow!("--shard {s}: {e}"))?,
        None => Shard::WHOLE,
    };
    if let Some(c) = concurrency {
        ensure!(
            c >= shard.count as usize,
            "--concurrency {c} with --shard {shard}: the ceiling is divided across the {} shards, so it must be at least {}",
            shard.count,
            shard.count
        );
    }
    let start_at_unix_ns = a.start_at.as_deref().map(parse_start_at).transpose()?;
    let clock_warn_ms = a.clock_offset_warn_ms;
    ensure!(
        clock_warn_ms.is_finite() && clock_warn_ms >= 0.0,
        "--clock-offset-warn-ms {clock_warn_ms:?}: accepted is a number of milliseconds ≥ 0"
    );
    Ok(Load {
        concurrency: concurrency.map(|c| shard.part_of(c as u64) as usize),
        rate,
        request_count,
        warmup_requests: shard.part_of(warmup_requests),
        coordination: Coordination { shard, start_at_unix_ns, clock_warn_ms },
    })
}

/// `--extra-inputs key:value`: the value as JSON when it is JSON, else as a string.
fn extra_inputs(given: &[String]) -> Result<Map<String, Value>> {
    let mut extra_inputs = Map::new();
    for e in given {
        let (k, v) = key_value(e, "--extra-inputs")?;
        let value = serde_json::from_str::<Value>(v.trim()).unwrap_or(Value::String(v.trim().to_owned()));
        extra_inputs.insert(k, value);
    }
    Ok(extra_inputs)
}

/// The time spans of a run, checked, and the fixed schedule's offsets.
struct Times {
    timeout: Duration,
    grace: Duration,
    duration: Option<Duration>,
    slice: Option<Duration>,
}

fn times(a: &Args) -> Result<Times> {
    let timeout = seconds(a.request_timeout_seconds, "--request-timeout-seconds", false)?;
    let grace = seconds(a.benchmark_grace_period, "--benchmark-grace-period", true)?;
    let duration = a.benchmark_duration.map(|d| seconds(d, "--benchmark-duration", false)).transpose()?;
    let slice = a.slice_duration.map(|d| seconds(d, "--slice-duration", false)).transpose()?;
    if let Some(d) = slice {
        ensure!(d >= MIN_SLICE, "--slice-duration {}: accepted is at least 0.001 s", d.as_secs_f64());
    }
    for (name, v) in [
        ("--fixed-schedule-start-offset", a.fixed_schedule_start_offset),
        ("--fixed-schedule-end-offset", a.fixed_schedule_end_offset),
    ] {
        if let Some(v) = v {
            ensure!(v.is_finite() && v >= 0.0, "{name} {v:?}: accepted is a number of milliseconds ≥ 0");
        }
    }
    Ok(Times { timeout, grace, duration, slice })
}

/// `--system-idle-gap-cap-seconds` (≥ 0) where the trace's own times are replayed: AIPerf
/// applies it to its trace replay only, and a rate run (`run_rate`) ignores it as AIPerf's does.
fn system_idle_cap(a: &Args, run_rate: Option<f64>) -> Result<Option<Duration>> {
    let Some(s) = a.system_idle_gap_cap_seconds else { return Ok(None) };
    let cap = seconds(s, "--system-idle-gap-cap-seconds", true)?;
    Ok(run_rate.is_none().then_some(cap))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(super) mod tests {
    use super::*;
    use crate::profile::options;
    use crate::profile::plan::limits::parse_start_at;
    use aiperf_core::replay::schedule::Timing;

    /// The plan of `profile -m m --input-file t.jsonl EXTRA…` (shared by the plan's tests).
    pub(crate) fn plan(extra: &[&str]) -> Result<ReplayPlan> {
        let mut argv = vec!["x", "-m", "m", "--input-file", "t.jsonl"];
        argv.extend_from_slice(extra);
        ReplayPlan::from_args(options::parse(argv)?)
    }

    /// The error of [`plan`], with its causes.
    pub(crate) fn err(extra: &[&str]) -> String {
        format!("{:#}", plan(extra).unwrap_err())
    }

    #[test]
    fn defaults_resolve() {
        let p = plan(&[]).unwrap();
        assert_eq!(p.target.url, "http://localhost:8000");
        assert_eq!(p.target.path, "/v1/chat/completions");
        assert_eq!(p.target.timeout, Duration::from_secs(21_600));
        assert_eq!(p.limits.grace, Duration::from_secs(30));
        assert_eq!(p.counting, TokenCounting::Client);
        assert_eq!(plan(&["--client-token-count"]).unwrap().counting, TokenCounting::Client);
        assert_eq!(plan(&["--use-server-token-count"]).unwrap().counting, TokenCounting::ServerOnly);
        assert!(plan(&["--use-server-token-count", "--client-token-count"]).is_err());
        assert!(p.source.synthesis.is_none());
        assert!(matches!(p.timing(true).unwrap(), Timing::Fixed { auto_offset: true, .. }));
        assert!(p.timing(false).is_err());
    }

    #[test]
    fn dag_jsonl_reads_aiperfs_dag_conversations_sampled_at_random_by_default() {
        let p = plan(&["--custom-dataset-type", "dag_jsonl"]).unwrap();
        assert!(p.source.dag);
        assert_eq!(p.source.sampling, Sampling::Random);
        let p = plan(&["--custom-dataset-type", "dag_jsonl", "--dataset-sampling-strategy", "sequential"]).unwrap();
        assert_eq!(p.source.sampling, Sampling::Sequential);
        assert!(!plan(&[]).unwrap().source.dag);
        assert_eq!(plan(&[]).unwrap().source.sampling, Sampling::default());
        assert!(err(&["--custom-dataset-type", "dag_jsonl", "--trace-format", "weka"]).contains(
            "--custom-dataset-type dag_jsonl reads AIPerf's DAG conversations, but --trace-format names weka"
        ));
    }

    #[test]
    fn shards_divide_the_ceiling_and_the_warm_up_and_keep_the_request_count() {
        let p = plan(&["--shard", "1/3", "--concurrency", "10", "--warmup-request-count", "4", "--request-count", "7"])
            .unwrap();
        assert_eq!(p.coordination.shard, Shard { index: 1, count: 3 });
        assert_eq!(p.limits.concurrency, Some(3));
        assert_eq!(p.limits.warmup.unwrap().shape.requests, Some(1));
        assert_eq!(p.limits.request_count, Some(7));
        assert_eq!(p.cli_config()["shard"], "1/3");
        assert!(p.coordination.probe_clock());
        let whole = plan(&["--concurrency", "10"]).unwrap();
        assert_eq!(whole.limits.concurrency, Some(10));
        assert!(whole.cli_config()["shard"].is_null());
        assert!(!whole.coordination.probe_clock());
        for (args, needle) in [
            (&["--shard", "3/3"][..], "--shard 3/3: shard 3/3: K must be from 0 to N-1"),
            (&["--shard", "a/3"], "--shard a/3: 'a/3' is not of the form K/N"),
            (&["--shard", "0/4", "--concurrency", "3"], "--concurrency 3 with --shard 0/4"),
            (&["--start-at", "tomorrow"], "--start-at 'tomorrow': accepted is an RFC 3339 time"),
            (&["--clock-offset-warn-ms", "NaN"], "--clock-offset-warn-ms NaN"),
        ] {
            let e = err(args);
            assert!(e.contains(needle), "{args:?}: {e}");
        }
    }

    #[test]
    fn start_at_takes_rfc_3339_with_offsets_and_epoch_milliseconds() {
        assert_eq!(parse_start_at("2026-11-23T22:00:00Z").unwrap(), 1_795_471_200_000_000_000);
        assert_eq!(parse_start_at("2026-11-23T23:00:00+01:00").unwrap(), 1_795_471_200_000_000_000);
        assert_eq!(parse_start_at("2026-11-23T22:00:00.5Z").unwrap(), 1_795_471_200_500_000_000);
        assert_eq!(parse_start_at("1795471200000").unwrap(), 1_795_471_200_000_000_000);
        assert!(parse_start_at("1969-12-31T23:59:59Z").is_err());
        assert!(parse_start_at("99999999999999999999").is_err());
        let p = plan(&["--start-at", "1795471200000"]).unwrap();
        assert_eq!(p.coordination.start_at_unix_ns, Some(1_795_471_200_000_000_000));
        assert!(p.coordination.probe_clock());
    }

    #[test]
    fn extreme_values_are_rejected_with_the_option_the_value_and_the_range() {
        for (args, needle) in [
            (&["--request-timeout-seconds", "1e300"][..], "--request-timeout-seconds 1e300: accepted"),
            (&["--request-timeout-seconds", "0"], "--request-timeout-seconds 0.0"),
            (&["--request-timeout-seconds", "NaN"], "--request-timeout-seconds NaN"),
            (&["--benchmark-duration", "1e300"], "--benchmark-duration"),
            (&["--benchmark-duration=-1"], "--benchmark-duration -1.0"),
            (&["--benchmark-grace-period", "1e300"], "--benchmark-grace-period"),
            (&["--benchmark-grace-period", "inf"], "--benchmark-grace-period inf"),
            (&["--request-rate", "1e-300"], "--request-rate 1e-300: accepted is 0.001 to 1000000"),
            (&["--request-rate", "0"], "--request-rate 0.0"),
            (&["--concurrency", "0"], "--concurrency 0: accepted is 1 to 1000000"),
            (&["--request-count", "0"], "--request-count 0"),
            (&["--isl-block-size", "0"], "--isl-block-size 0"),
            (&["--fixed-schedule-start-offset=-5"], "--fixed-schedule-start-offset -5.0"),
            (&["--header", "novalue"], "--header 'novalue' is not of the form key:value"),
            (&["--goodput", "ttft:5"], "unknown metric"),
        ] {
            let e = err(args);
            assert!(e.contains(needle), "{args:?}: {e}");
        }
    }

    #[test]
    fn the_ca_file_is_checked_before_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("none.pem");
        let e = err(&["--ssl-ca-cert", missing.to_str().unwrap()]);
        assert!(e.contains("none.pem: cannot read the file"), "{e}");
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "just text\n").unwrap();
        let e = err(&["--ssl-ca-cert", empty.to_str().unwrap()]);
        assert!(e.contains("holds no certificate") && e.contains("BEGIN CERTIFICATE"), "{e}");
        let garbage = dir.path().join("garbage.pem");
        std::fs::write(&garbage, "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n").unwrap();
        let e = err(&["--ssl-ca-cert", garbage.to_str().unwrap()]);
        assert!(
            e.contains("garbage.pem: certificate 1 of 1 cannot be used as a CA")
                || e.contains("garbage.pem: not a valid PEM"),
            "{e}"
        );
        let ca = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/tls/ca.pem");
        let p = plan(&["--ssl-ca-cert", ca, "--insecure-skip-tls-verify"]).unwrap();
        assert_eq!(p.target.tls.ca_certs.len(), 1);
        assert!(p.target.tls.insecure);
        assert_eq!(p.cli_config()["insecure_skip_tls_verify"], true);
    }

    #[test]
    fn a_run_plan_never_takes_a_list() {
        assert!(err(&["--concurrency", "1,2"]).contains("--concurrency has 2 values"));
    }
}
