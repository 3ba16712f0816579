//! The run's options in AIPerf 0.13's configuration shape (its `BenchmarkConfig`: `models`,
//! `endpoint`, `datasets`, `phases`, `artifacts`, `tokenizer`, `server_metrics`, `slos`): the
//! `input_config` of the exports, which AIPerf's own models validate (extra keys refused). Only
//! options that were given or differ from AIPerf's defaults are written, as AIPerf writes only the
//! options it was given. Options AIPerf has no key for stay in our own `aiperf_cli_config`.

use aiperf_core::formats::Format;
use aiperf_core::replay::schedule::ArrivalPattern;
use serde_json::{Map, Value, json};

use super::model::{Input, ReplayPlan};
use super::secrets::redact_url;
use crate::io::trace_format::FormatChoice;
use crate::profile::options::{Args, UiType};

/// AIPerf's `--request-timeout-seconds` default (6 hours).
const AIPERF_TIMEOUT_S: f64 = 21_600.0;
/// AIPerf's `--benchmark-grace-period` default.
const AIPERF_GRACE_S: f64 = 30.0;
/// The session header both AIPerf and we send when `--session-header` is not given.
const DEFAULT_SESSION_HEADER: &str = "X-Correlation-ID";
/// `--isl-block-size` default (ours and AIPerf's).
const DEFAULT_BLOCK_SIZE: u64 = 512;

/// AIPerf's dataset format name of a trace format (`None`: AIPerf reads no such format).
fn aiperf_format(f: Format) -> Option<&'static str> {
    match f {
        Format::Mooncake => Some("mooncake_trace"),
        Format::Bailian => Some("bailian_trace"),
        Format::BurstGpt => Some("burst_gpt_trace"),
        Format::Weka => Some("weka_trace"),
        Format::Baseten => Some("baseten_trace"),
        Format::ServeGen | Format::Azure => None,
    }
}

/// Inserts `v` under `k` unless it is `null`.
fn put(m: &mut Map<String, Value>, k: &str, v: Value) {
    if !v.is_null() {
        m.insert(k.into(), v);
    }
}

/// The options as AIPerf's `BenchmarkConfig`, secrets redacted. The profiling phase's `requests`
/// is the `--request-count` when given; [`with_requests`] fills it in for a run that was not
/// bounded by a count or a duration.
pub fn aiperf_input_config(a: &Args, plan: &ReplayPlan) -> Value {
    let target = &plan.target;
    let mut endpoint = Map::new();
    put(&mut endpoint, "urls", json!(target.urls.iter().map(|u| redact_url(u)).collect::<Vec<_>>()));
    if target.urls.len() > 1 {
        put(&mut endpoint, "url_strategy", json!("round_robin"));
    }
    put(&mut endpoint, "type", json!(format!("{:?}", a.endpoint_type).to_lowercase()));
    put(&mut endpoint, "path", json!(a.custom_endpoint));
    if target.api_key.is_some() {
        put(&mut endpoint, "api_key", json!("<redacted>"));
    }
    if a.request_timeout_seconds != AIPERF_TIMEOUT_S {
        put(&mut endpoint, "timeout", json!(a.request_timeout_seconds));
    }
    if a.streaming {
        put(&mut endpoint, "streaming", json!(true));
    }
    if a.use_legacy_max_tokens {
        put(&mut endpoint, "use_legacy_max_tokens", json!(true));
    }
    if a.use_server_token_count {
        put(&mut endpoint, "use_server_token_count", json!(true));
    }
    if a.per_chunk_usage {
        put(&mut endpoint, "per_chunk_usage", json!(true));
    }
    if let Some(c) = a.connection_reuse_strategy {
        put(&mut endpoint, "connection_reuse", json!(super::model::connection_reuse_name(c)));
    }
    if !target.headers.is_empty() {
        let headers: Map<String, Value> =
            target.headers.iter().map(|(k, _)| (k.clone(), json!("<redacted>"))).collect();
        put(&mut endpoint, "headers", Value::Object(headers));
    }
    if !target.body.extra_inputs.is_empty() {
        put(&mut endpoint, "extra", json!(target.body.extra_inputs));
    }
    if a.session_header != DEFAULT_SESSION_HEADER {
        put(&mut endpoint, "session_header", json!(a.session_header));
    }
    if let Some(w) = a.wait_for_server {
        put(&mut endpoint, "wait_for_model_timeout", json!(w));
    }
    if a.reset_prefix_cache {
        put(&mut endpoint, "reset_kv_cache", json!({}));
    }

    let mut phase = Map::new();
    phase.insert("name".into(), json!("profiling"));
    phase.insert("kind".into(), json!("profiling"));
    let rate = plan.source.arrivals.rate;
    let kind = match (plan.source.arrivals.fixed, rate) {
        (Some(true), _) => "fixed_schedule",
        (_, Some((_, ArrivalPattern::Constant))) => "constant",
        (_, Some((_, ArrivalPattern::Poisson))) => "poisson",
        (_, Some((_, ArrivalPattern::Gamma))) => "gamma",
        // A trace with timestamps and no rate is replayed on them (known once the trace is read:
        // `with_requests` corrects it).
        (_, None) => "concurrency",
    };
    let kind = if plan.limits.users.is_some() { "user_centric" } else { kind };
    phase.insert("type".into(), json!(kind));
    put(&mut phase, "users", json!(plan.limits.users));
    put(&mut phase, "requests", json!(plan.limits.request_count));
    put(&mut phase, "duration", json!(plan.limits.duration.map(|d| d.as_secs_f64())));
    if plan.limits.duration.is_some() || a.benchmark_grace_period != AIPERF_GRACE_S {
        put(&mut phase, "grace_period", json!(a.benchmark_grace_period));
    }
    if let Some(c) = plan.limits.concurrency {
        put(&mut phase, "concurrency", json!(c));
    }
    if let Some((r, _)) = rate {
        put(&mut phase, "rate", json!(r));
    }
    if kind == "fixed_schedule" {
        fixed_schedule_offsets(a, &mut phase);
    }
    if kind == "gamma" {
        put(&mut phase, "smoothness", json!(a.shape.arrival_smoothness.unwrap_or(1.0)));
    }
    put(&mut phase, "concurrency_ramp", ramp(a.shape.concurrency_ramp_duration));
    put(&mut phase, "rate_ramp", ramp(a.shape.request_rate_ramp_duration));
    put(&mut phase, "prefill_concurrency", json!(a.shape.prefill_concurrency));
    put(&mut phase, "prefill_ramp", ramp(a.shape.prefill_concurrency_ramp_duration));
    if let Some(rate) = a.shape.request_cancellation_rate {
        let delay = a.shape.request_cancellation_delay.unwrap_or(0.0);
        phase.insert("cancellation".into(), json!({"rate": rate, "delay": delay}));
    }
    let mut phases = Vec::new();
    if let Some(w) = &plan.limits.warmup {
        phases.push(Value::Object(warmup_phase(w)));
    }
    phases.push(Value::Object(phase));

    let mut artifacts = Map::new();
    put(&mut artifacts, "dir", json!(plan.exports.artifact_dir.display().to_string()));
    put(&mut artifacts, "slice_duration", json!(a.slice_duration));
    put(&mut artifacts, "prefix", json!(plan.exports.names.base()));
    if plan.exports.http_trace {
        artifacts.insert("trace".into(), json!(true));
    }
    if plan.exports.show_trace_timing {
        artifacts.insert("show_trace_timing".into(), json!(true));
    }
    if !plan.exports.records {
        artifacts.insert("records".into(), json!(false));
    }
    artifacts.insert("auto_plot".into(), json!(false));
    artifacts.insert("plot_required".into(), json!(false));

    let mut config = Map::new();
    config.insert("models".into(), json!({"items": [{"name": a.model}]}));
    config.insert("endpoint".into(), Value::Object(endpoint));
    config.insert("datasets".into(), json!([dataset(a, plan)]));
    config.insert("phases".into(), Value::Array(phases));
    config.insert("artifacts".into(), Value::Object(artifacts));
    if !plan.exports.slos.is_empty() {
        let slos: Map<String, Value> =
            plan.exports.slos.iter().map(|s| (s.metric.tag().to_owned(), json!(s.threshold))).collect();
        config.insert("slos".into(), Value::Object(slos));
    }
    if let Some(t) = &a.tokenizer {
        let mut tokenizer = json!({"name": t});
        if a.tokenizer_revision != crate::io::tokenizer::MAIN {
            tokenizer["revision"] = json!(a.tokenizer_revision);
        }
        config.insert("tokenizer".into(), tokenizer);
    }
    let gpus: Vec<String> = plan.server.gpu_urls.iter().map(|u| redact_url(u)).collect();
    config.insert("gpu_telemetry".into(), json!({"enabled": !gpus.is_empty(), "urls": gpus}));
    let metrics: Vec<String> = plan.server.metrics_urls.iter().map(|u| redact_url(u)).collect();
    let (json_file, csv_file, parquet_file) = plan.server.metrics_formats;
    let formats: Vec<&str> = [("json", json_file), ("csv", csv_file), ("parquet", parquet_file)]
        .into_iter()
        .filter(|f| f.1)
        .map(|f| f.0)
        .collect();
    config
        .insert("server_metrics".into(), json!({"enabled": !metrics.is_empty(), "urls": metrics, "formats": formats}));
    if let Some(n) = plan.server.network.input_config() {
        config.insert("network_latency".into(), n);
    }
    match a.ui_type {
        UiType::Simple => {}
        UiType::Dashboard => {
            config.insert("runtime".into(), json!({"ui": "dashboard"}));
        }
        UiType::None => {
            config.insert("runtime".into(), json!({"ui": "none"}));
        }
    }
    Value::Object(config)
}

/// A ramp's duration as AIPerf's `RampConfig` (linear, its default).
fn ramp(seconds: Option<f64>) -> Value {
    seconds.map_or(Value::Null, |d| json!({"duration": d}))
}

/// The warm-up phase as AIPerf's phase: its bounds, and its load (a rate with its pattern, else
/// a concurrency).
fn warmup_phase(w: &super::shaping::WarmupPlan) -> Map<String, Value> {
    let s = &w.shape;
    let mut phase = Map::new();
    phase.insert("name".into(), json!("warmup"));
    phase.insert("kind".into(), json!("warmup"));
    phase.insert("exclude_from_results".into(), json!(true));
    let kind = match s.rate.map(|r| r.1) {
        Some(_) if s.users.is_some() => "user_centric",
        None => "concurrency",
        Some(ArrivalPattern::Constant) => "constant",
        Some(ArrivalPattern::Poisson) => "poisson",
        Some(ArrivalPattern::Gamma) => "gamma",
    };
    phase.insert("type".into(), json!(kind));
    put(&mut phase, "requests", json!(s.requests));
    put(&mut phase, "sessions", json!(s.sessions));
    put(&mut phase, "duration", json!(s.duration_ns.map(|ns| ns as f64 / 1e9)));
    put(&mut phase, "grace_period", json!(w.grace.map(|g| g.as_secs_f64())));
    put(&mut phase, "concurrency", json!(s.concurrency.or((kind == "concurrency").then_some(1))));
    put(&mut phase, "rate", json!(s.rate.map(|r| r.0)));
    put(&mut phase, "users", json!(s.users));
    if kind == "gamma" {
        put(&mut phase, "smoothness", json!(s.smoothness.unwrap_or(1.0)));
    }
    put(&mut phase, "concurrency_ramp", ramp(s.concurrency_ramp_ns.map(|ns| ns as f64 / 1e9)));
    put(&mut phase, "rate_ramp", ramp(s.rate_ramp_us.map(|us| us as f64 / 1e6)));
    phase
}

/// `--fixed-schedule-*` as AIPerf's fixed-schedule phase fields (milliseconds).
fn fixed_schedule_offsets(a: &Args, phase: &mut Map<String, Value>) {
    if a.fixed_schedule_auto_offset {
        phase.insert("auto_offset".into(), json!(true));
    }
    put(phase, "start_offset", json!(a.fixed_schedule_start_offset));
    put(phase, "end_offset", json!(a.fixed_schedule_end_offset));
}

/// The dataset: the trace file, AIPerf's own dataset file, or AIPerf's synthetic workload.
fn dataset(a: &Args, plan: &ReplayPlan) -> Value {
    let mut d = Map::new();
    d.insert("name".into(), json!("main"));
    match &plan.source.input {
        Input::File(path) => {
            d.insert("type".into(), json!("file"));
            d.insert("path".into(), json!(path.display().to_string()));
            if plan.source.dag {
                d.insert("format".into(), json!(super::replay::DAG_JSONL));
            } else if let FormatChoice::Is(f) = plan.source.format.trace_format {
                put(&mut d, "format", json!(aiperf_format(f)));
            }
            if let Some(s) = &plan.source.synthesis {
                let mut syn = Map::new();
                for (k, v, default) in [
                    ("speedup_ratio", s.speedup_ratio, 1.0),
                    ("prefix_len_multiplier", s.prefix_len_multiplier, 1.0),
                    ("prompt_len_multiplier", s.prompt_len_multiplier, 1.0),
                    ("output_len_multiplier", s.output_len_multiplier, 1.0),
                ] {
                    if v != default {
                        syn.insert(k.into(), json!(v));
                    }
                }
                if s.prefix_root_multiplier != 1 {
                    syn.insert("prefix_root_multiplier".into(), json!(s.prefix_root_multiplier));
                }
                put(&mut syn, "max_isl", json!(s.max_isl));
                put(&mut syn, "max_osl", json!(s.max_osl));
                d.insert("synthesis".into(), Value::Object(syn));
            }
            if a.allow_dataset_wrap || a.no_allow_dataset_wrap {
                let syn = d.entry("synthesis").or_insert_with(|| json!({}));
                syn["allow_dataset_wrap"] = json!(a.allow_dataset_wrap);
            }
            // AIPerf's FileDataset keys of its weka_trace replay options.
            if let Some(w) = &plan.source.weka {
                if w.ignore_delays {
                    d.insert("ignore_trace_delays".into(), json!(true));
                }
                if w.think_time_only {
                    d.insert("use_think_time_only".into(), json!(true));
                }
                put(&mut d, "max_context_length", json!(w.max_context_length));
                put(&mut d, "trace_idle_gap_cap_seconds", json!(w.idle_gap_cap_s));
            }
            put(&mut d, "inter_turn_delay_cap_seconds", json!(plan.source.delay_cap_s));
            // AIPerf's FileDataset keys of its baseten_trace replay options, as given.
            let b = &plan.source.baseten.replay;
            put(&mut d, "trace_session_sample_ratio", json!(b.session_sample_ratio));
            put(&mut d, "max_idle_gap_cap_seconds", json!(b.idle_gap_cap_s));
            if a.replay_speedup.is_some() {
                d.insert("replay_speedup".into(), json!(b.speedup));
            }
            if a.open_loop_replay || a.no_open_loop_replay {
                d.insert("open_loop_replay".into(), json!(b.open_loop));
            }
            if b.strict {
                d.insert("open_loop_strict".into(), json!(true));
            }
            if b.omit_kv_hints {
                d.insert("omit_kv_hints".into(), json!(true));
            }
            if a.force_min_tokens || a.no_force_min_tokens {
                d.insert("force_min_tokens".into(), json!(b.force_min_tokens));
            }
        }
        Input::Dataset(f) => {
            d.insert("type".into(), json!("file"));
            d.insert("path".into(), json!(f.path.display().to_string()));
            d.insert("format".into(), json!(f.kind.name()));
            if f.kind == aiperf_core::trace::dataset_file::Kind::RandomPool {
                d.insert("entries".into(), json!(f.trace.len()));
            }
        }
        Input::Records(_) => {
            d.insert("type".into(), json!("file"));
            d.insert("format".into(), json!("single_turn"));
            let records = a.inline_records.as_deref().and_then(|t| serde_json::from_str::<Value>(t).ok());
            put(&mut d, "records", json!(records));
        }
        Input::Synthetic(w) => {
            d.insert("type".into(), json!("synthetic"));
            d.insert("entries".into(), json!(w.entries));
            let mut prompts = Map::new();
            let dist = |mean: Option<u64>, stddev: f64| {
                let mut m = Map::new();
                put(&mut m, "mean", json!(mean.map(|v| v as f64)));
                if stddev > 0.0 {
                    m.insert("stddev".into(), json!(stddev));
                }
                m
            };
            let isl = dist(w.isl_mean, w.isl_stddev);
            if !isl.is_empty() {
                prompts.insert("isl".into(), Value::Object(isl));
            }
            let osl = dist(w.osl_mean, w.osl_stddev);
            if !osl.is_empty() {
                prompts.insert("osl".into(), Value::Object(osl));
            }
            // A config-file distribution as given (it was read from this JSON).
            for (key, given) in [("isl", &a.synthetic.isl_dist), ("osl", &a.synthetic.osl_dist)] {
                if let Some(v) = given.as_deref().and_then(|t| serde_json::from_str::<Value>(t).ok()) {
                    prompts.insert(key.into(), v);
                }
            }
            if !prompts.is_empty() {
                d.insert("prompts".into(), Value::Object(prompts));
            }
            if w.turn_mean > 1.0 || w.turn_stddev > 0.0 {
                d.insert("turns".into(), json!({"mean": w.turn_mean, "stddev": w.turn_stddev}));
            }
        }
    }
    // AIPerf's `cache_bust`: under a synthetic dataset's `prompts`, at a file dataset's top.
    if a.cache_bust != aiperf_core::replay::cache_bust::Target::None {
        let bust = json!({"target": a.cache_bust.name()});
        let synthetic = d.get("type") == Some(&json!("synthetic"));
        match d.get_mut("prompts") {
            Some(Value::Object(p)) => {
                p.insert("cache_bust".into(), bust);
            }
            _ if synthetic => {
                d.insert("prompts".into(), json!({"cache_bust": bust}));
            }
            _ => {
                d.insert("cache_bust".into(), bust);
            }
        }
    }
    if let Some(s) = a.dataset_sampling_strategy {
        d.insert("sampling".into(), json!(s.name()));
    }
    d.insert("random_seed".into(), json!(a.random_seed));
    if a.isl_block_size != DEFAULT_BLOCK_SIZE {
        d.insert("block_size".into(), json!(a.isl_block_size));
    }
    Value::Object(d)
}

/// The config once the run is known: the phase type when the trace's timestamps were replayed,
/// and the profiling phase's `requests` (AIPerf's stop condition) when no count or duration bounded
/// the run: the requests the run sent (at least 1).
pub fn with_requests(mut config: Value, fixed_schedule: bool, sent: u64) -> Value {
    let Some(phases) = config.get_mut("phases").and_then(Value::as_array_mut) else { return config };
    let Some(Value::Object(p)) = phases.last_mut() else { return config };
    if fixed_schedule && p.get("type").and_then(Value::as_str) != Some("fixed_schedule") {
        p.insert("type".into(), json!("fixed_schedule"));
        p.remove("rate");
    }
    if !p.contains_key("requests") && !p.contains_key("duration") {
        p.insert("requests".into(), json!(sent.max(1)));
    }
    config
}
