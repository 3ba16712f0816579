//! The config file's keys as AIPerf 0.13 `profile` option spellings (`benchmark.phases[1].rate`
//! → `--request-rate 10`), each with the key path it came from. Keys that have no option
//! spelling and that `profile` does not honour are refused here, with the reason.

use anyhow::Result;
use serde_yaml_ng::{Mapping, Value};

use super::model::*;

/// One option the file gives: the key path it came from, the value as written, and the
/// option's words (`["--request-rate", "10"]`).
#[derive(Clone, Debug, PartialEq)]
pub struct Given {
    pub key: String,
    pub value: String,
    pub args: Vec<String>,
}

impl Given {
    /// The option's spelling (its first word).
    pub fn spelling(&self) -> &str {
        let first = self.args.first().map(String::as_str).unwrap_or("");
        first.split('=').next().unwrap_or(first)
    }
}

/// The options of `file`, in the order of its keys.
pub fn options(file: &ConfigFile) -> Result<Vec<Given>> {
    let mut out = Out::default();
    if let Some(v) = &file.schema_version
        && !matches!(v.to_string().as_str(), "2.0" | "2")
    {
        bail_key!(
            format!("schemaVersion"),
            "key `schemaVersion` = {v}: accepted is \"2.0\" (AIPerf 0.13's config schema)"
        );
    }
    out.opt("randomSeed", "--random-seed", &file.random_seed);
    if let Some(m) = &file.multi_run {
        multi_run(&mut out, m)?;
    }
    if let Some(v) = &file.plot {
        out.raw("plot", v, "--auto-plot");
    }
    out.switch("noSweepTable", &file.no_sweep_table, "--no-sweep-table", None)?;
    let Some(b) = &file.benchmark else {
        bail_key!(
            format!("benchmark"),
            "key `benchmark` is missing: an AIPerf 0.13 config file gives its run under `benchmark:` (schemaVersion \"2.0\")"
        );
    };
    benchmark(&mut out, b)?;
    if let Some(v) = &file.sweep {
        sweep(&mut out, v)?;
    }
    Ok(out.given)
}

/// A grid sweep of the profiling phase's concurrency or rate: the option's comma-separated list
/// (one sub-run per value), in place of the phase's value.
fn sweep(out: &mut Out, v: &Value) -> Result<()> {
    let instead = "sweep one parameter, concurrency or rate, with `type: grid` (or give a comma-separated --concurrency or --request-rate list)";
    let Value::Mapping(m) = v else {
        bail_key!(format!("sweep"), "key `sweep` = {}: accepted is a section (type, parameters)", show(v));
    };
    for (k, val) in m {
        match k.as_str() {
            Some("type") if val.as_str() == Some("grid") => {}
            Some("type") => {
                return Err(refused(
                    "sweep.type",
                    &show(val),
                    "AIPerf's scenario, zip and sampled sweeps and its adaptive search are not supported",
                    instead,
                ));
            }
            Some("parameters") => {}
            Some("cooldownSeconds" | "cooldown_seconds") => {
                out.push("sweep.cooldownSeconds", show(val), vec![kv("--parameter-sweep-cooldown-seconds", show(val))])
            }
            Some(other) => {
                let instead = "drop the key";
                return Err(refused(
                    &format!("sweep.{other}"),
                    &show(val),
                    "not yet supported: this sweep setting",
                    instead,
                ));
            }
            None => bail_key!(
                format!("sweep.{}", show(k)),
                "key `sweep.{}`: accepted keys are type, parameters, cooldownSeconds",
                show(k)
            ),
        }
    }
    let Some(Value::Mapping(params)) = m.get("parameters") else {
        bail_key!(
            format!("sweep.parameters"),
            "key `sweep.parameters` is missing: accepted is {{concurrency: [..]}} or {{rate: [..]}}"
        );
    };
    let mut params = params.iter();
    let (Some((name, values)), None) = (params.next(), params.next()) else {
        return Err(refused(
            "sweep.parameters",
            "several parameters",
            "a sweep of several parameters is not supported",
            instead,
        ));
    };
    let name = show(name);
    let key = format!("sweep.parameters.{name}");
    let short = name.trim_start_matches("benchmark.").trim_start_matches("phases.profiling.");
    let flag = match short {
        "concurrency" => "--concurrency",
        "rate" => "--request-rate",
        _ => return Err(refused(&key, &show(values), "only concurrency and rate are swept", instead)),
    };
    let Value::Sequence(items) = values else {
        bail_key!(format!("{key}"), "key `{key}` = {}: accepted is a list of values", show(values));
    };
    let list: Vec<String> = items.iter().map(show).collect();
    out.given.retain(|g| g.spelling() != flag);
    out.push(&key, list.join(", "), vec![kv(flag, list.join(","))]);
    Ok(())
}

#[derive(Default)]
struct Out {
    given: Vec<Given>,
}

impl Out {
    fn push(&mut self, key: &str, value: String, args: Vec<String>) {
        self.given.push(Given { key: key.to_string(), value, args });
    }

    fn opt(&mut self, key: &str, flag: &str, v: &Option<Scalar>) {
        if let Some(v) = v {
            self.push(key, v.to_string(), vec![kv(flag, v)]);
        }
    }

    /// A key whose option is a switch: `true` gives `on`, `false` gives `off` (or nothing).
    fn switch(&mut self, key: &str, v: &Option<Scalar>, on: &str, off: Option<&str>) -> Result<()> {
        match v {
            None => {}
            Some(Scalar::Bool(true)) => self.push(key, "true".into(), vec![on.to_string()]),
            Some(Scalar::Bool(false)) => {
                if let Some(off) = off {
                    self.push(key, "false".into(), vec![off.to_string()]);
                }
            }
            Some(other) => bail_key!(format!("{key}"), "key `{key}` = {other}: accepted is true or false"),
        }
        Ok(())
    }

    /// A key given as a whole section or list, whose option `flag` is refused by the option table
    /// (the spelling carries no value of ours).
    fn raw(&mut self, key: &str, v: &Value, flag: &str) {
        self.push(key, show(v), vec![flag.to_string()]);
    }

    /// A duration (`30`, `30s`, `5m`, `2h`, `inf`) as seconds.
    fn duration(&mut self, key: &str, flag: &str, v: &Option<Scalar>) -> Result<()> {
        if let Some(v) = v {
            let secs = seconds(key, v)?;
            self.push(key, v.to_string(), vec![kv(flag, &secs)]);
        }
        Ok(())
    }

    fn ramp(&mut self, key: &str, flag: &str, v: &Option<ScalarOr<Ramp>>) -> Result<()> {
        match v {
            None => Ok(()),
            Some(ScalarOr::Scalar(s)) => self.duration(key, flag, &Some(s.clone())),
            Some(ScalarOr::Section(r)) => {
                if r.strategy.is_some() {
                    return Err(refused(
                        &format!("{key}.strategy"),
                        "a section",
                        "ramp strategies other than AIPerf's default are not supported",
                        "give the ramp as a duration",
                    ));
                }
                self.duration(&format!("{key}.duration"), flag, &r.duration)
            }
        }
    }
}

/// An option with its value attached (`--request-rate=10`), so that a value starting with `-`
/// stays a value.
fn kv(flag: &str, value: impl std::fmt::Display) -> String {
    format!("{flag}={value}")
}

/// A refusal of a key that has no option spelling.
fn refused(key: &str, value: &str, why: &str, instead: &str) -> anyhow::Error {
    super::KeyError::error(
        key,
        format!("key `{key}` = {value} is not supported by `aiperf-cli profile`: {why}; instead: {instead}"),
    )
}

/// A value as one line for messages (at most 80 characters).
pub fn show(v: &Value) -> String {
    let text = show_whole(v);
    match text.char_indices().nth(80) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

fn show_whole(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Mapping(_) | Value::Sequence(_) => serde_json::to_string(v).unwrap_or_else(|_| "a section".to_string()),
        other => serde_yaml_ng::to_string(other).unwrap_or_default().trim_end().to_string(),
    }
}

/// AIPerf's duration forms in seconds.
fn seconds(key: &str, v: &Scalar) -> Result<String> {
    let text = match v {
        Scalar::Int(_) | Scalar::Float(_) => return Ok(v.to_string()),
        Scalar::Str(s) => s.trim().to_ascii_lowercase(),
        Scalar::Bool(_) => {
            bail_key!(format!("{key}"), "key `{key}` = {v}: accepted is a duration: seconds, or 30s, 5m, 2h, inf")
        }
    };
    if text == "inf" || text == "infinity" {
        return Ok("inf".to_string());
    }
    let digits = text.trim_end_matches(|c: char| c.is_ascii_alphabetic()).trim_end();
    let unit = text[digits.len()..].trim();
    let factor = match unit {
        "" | "s" | "sec" => 1.0,
        "m" | "min" => 60.0,
        "h" | "hr" | "hour" => 3600.0,
        _ => 0.0,
    };
    match digits.parse::<f64>() {
        Ok(x) if factor > 0.0 && x.is_finite() && x >= 0.0 && !digits.starts_with('+') => {
            Ok(Scalar::Float(x * factor).to_string())
        }
        _ => bail_key!(format!("{key}"), "key `{key}` = {v}: accepted is a duration: seconds, or 30s, 5m, 2h, inf"),
    }
}

/// `benchmark.networkLatency`, as AIPerf reads it: off unless `enabled`; enabled with `meanMs`
/// subtracts that mean without probing (`pingInterval` is then unused); enabled without it
/// probes every `pingInterval` seconds.
fn network_latency(out: &mut Out, n: &NetworkLatency) -> Result<()> {
    let enabled = match &n.enabled {
        None | Some(Scalar::Bool(false)) => false,
        Some(Scalar::Bool(true)) => true,
        Some(other) => {
            bail_key!(
                format!("benchmark.networkLatency.enabled"),
                "key `benchmark.networkLatency.enabled` = {other}: accepted is true or false"
            )
        }
    };
    if !enabled {
        return Ok(());
    }
    if n.mean_ms.is_some() {
        out.opt("benchmark.networkLatency.meanMs", "--network-latency-mean", &n.mean_ms);
    } else {
        out.push("benchmark.networkLatency.enabled", "true".into(), vec!["--network-latency-automatic".into()]);
        out.opt("benchmark.networkLatency.pingInterval", "--network-latency-ping-interval", &n.ping_interval);
    }
    Ok(())
}

fn multi_run(out: &mut Out, m: &MultiRun) -> Result<()> {
    out.opt("multiRun.numRuns", "--num-profile-runs", &m.num_runs);
    out.opt("multiRun.cooldownSeconds", "--profile-run-cooldown-seconds", &m.cooldown_seconds);
    out.opt("multiRun.confidenceLevel", "--confidence-level", &m.confidence_level);
    out.switch(
        "multiRun.setConsistentSeed",
        &m.set_consistent_seed,
        "--set-consistent-seed",
        Some("--no-set-consistent-seed"),
    )?;
    out.switch(
        "multiRun.varySeedPerTrial",
        &m.vary_seed_per_trial,
        "--vary-seed-per-trial",
        Some("--no-vary-seed-per-trial"),
    )?;
    out.switch(
        "multiRun.disableWarmupAfterFirst",
        &m.disable_warmup_after_first,
        "--profile-run-disable-warmup-after-first",
        Some("--no-profile-run-disable-warmup-after-first"),
    )?;
    if let Some(v) = &m.convergence {
        out.raw("multiRun.convergence", v, "--convergence-metric");
    }
    Ok(())
}

fn benchmark(out: &mut Out, b: &Benchmark) -> Result<()> {
    const B: &str = "benchmark";
    if b.model.is_some() && b.models.is_some() {
        bail_key!(
            format!("benchmark.model"),
            "keys `benchmark.model` and `benchmark.models` are both given: accepted is one of them"
        );
    }
    for (key, v) in [("model", &b.model), ("models", &b.models)] {
        if let Some(v) = v {
            models(out, &format!("{B}.{key}"), v)?;
        }
    }
    if let Some(e) = &b.endpoint {
        endpoint(out, e)?;
    }
    match (&b.dataset, &b.datasets) {
        (Some(_), Some(_)) => {
            bail_key!(
                format!("benchmark.dataset"),
                "keys `benchmark.dataset` and `benchmark.datasets` are both given: accepted is one of them"
            )
        }
        (Some(d), None) => dataset(out, "benchmark.dataset", d)?,
        (None, Some(list)) => match list.as_slice() {
            [] => {}
            [d] => dataset(out, "benchmark.datasets[0]", d)?,
            [_, ..] => {
                return Err(refused(
                    "benchmark.datasets[1]",
                    "a second dataset",
                    "one dataset a run",
                    "run once per dataset",
                ));
            }
        },
        (None, None) => {}
    }
    phases(out, b)?;
    if let Some(a) = &b.artifacts {
        artifacts(out, a)?;
    }
    if let Some(slos) = &b.slos {
        goodput(out, slos)?;
    }
    match &b.tokenizer {
        None => {}
        Some(ScalarOr::Scalar(s)) => out.opt("benchmark.tokenizer", "--tokenizer", &Some(s.clone())),
        Some(ScalarOr::Section(t)) => {
            out.opt("benchmark.tokenizer.name", "--tokenizer", &t.name);
            out.opt("benchmark.tokenizer.revision", "--tokenizer-revision", &t.revision);
            out.switch(
                "benchmark.tokenizer.trustRemoteCode",
                &t.trust_remote_code,
                "--tokenizer-trust-remote-code",
                None,
            )?;
            out.switch("benchmark.tokenizer.applyChatTemplate", &t.apply_chat_template, "--apply-chat-template", None)?;
        }
    }
    if let Some(t) = &b.server_metrics {
        telemetry(out, "benchmark.serverMetrics", t, "--server-metrics", "--no-server-metrics")?;
    }
    if let Some(t) = &b.gpu_telemetry {
        telemetry(out, "benchmark.gpuTelemetry", t, "--gpu-telemetry", "--no-gpu-telemetry")?;
    }
    if let Some(n) = &b.network_latency {
        network_latency(out, n)?;
    }
    for (key, v, flag) in [
        ("otel", &b.otel, "--otel-url"),
        ("mlflow", &b.mlflow, "--mlflow-tracking-uri"),
        ("wandb", &b.wandb, "--wandb-project"),
        ("accuracy", &b.accuracy, "--accuracy-benchmark"),
        ("scenario", &b.scenario, "--scenario"),
        ("unsafeOverride", &b.unsafe_override, "--unsafe-override"),
    ] {
        if let Some(v) = v {
            out.raw(&format!("{B}.{key}"), v, flag);
        }
    }
    if let Some(Value::Mapping(m)) = &b.metrics
        && let Some((k, _)) = m.iter().next()
    {
        bail_key!(
            format!("benchmark.metrics.{}", show(k)),
            "key `benchmark.metrics.{}`: AIPerf 0.13's metrics section has no keys",
            show(k)
        );
    }
    if let Some(r) = &b.runtime {
        out.opt("benchmark.runtime.ui", "--ui-type", &r.ui);
        for (key, v, flag) in [
            ("workers", &r.workers, "--workers-max"),
            ("recordProcessors", &r.record_processors, "--record-processors"),
            ("serviceRunType", &r.service_run_type, "--record-processors"),
            ("communication", &r.communication, "--zmq-host"),
            ("apiPort", &r.api_port, "--api-port"),
            ("apiHost", &r.api_host, "--api-host"),
            ("datasetApiBaseUrl", &r.dataset_api_base_url, "--api-host"),
            ("workersPerPod", &r.workers_per_pod, "--workers-max"),
            ("recordProcessorsPerPod", &r.record_processors_per_pod, "--record-processors"),
            ("workersMin", &r.workers_min, "--workers-max"),
            ("statsInterval", &r.stats_interval, "--stats-interval"),
        ] {
            if let Some(v) = v {
                out.raw(&format!("{B}.runtime.{key}"), v, flag);
            }
        }
    }
    if let Some(l) = &b.logging {
        out.opt("benchmark.logging.level", "--log-level", &l.level);
    }
    Ok(())
}

fn models(out: &mut Out, key: &str, v: &Value) -> Result<()> {
    match v {
        Value::String(s) => out.opt(key, "--model", &Some(Scalar::Str(s.clone()))),
        Value::Sequence(items) => match items.as_slice() {
            [Value::String(s)] => out.opt(&format!("{key}[0]"), "--model", &Some(Scalar::Str(s.clone()))),
            [_, _, ..] => out.raw(key, v, "--model-selection-strategy"),
            _ => bail_key!(format!("{key}"), "key `{key}` = {}: accepted is a model name or a list of names", show(v)),
        },
        Value::Mapping(m) => match m.get("items") {
            Some(Value::Sequence(items)) if items.len() == 1 => match &items[0] {
                Value::Mapping(item) => {
                    let item_key = format!("{key}.items[0]");
                    for (k, val) in item {
                        match (k.as_str(), val) {
                            (Some("name"), Value::String(s)) => {
                                out.opt(&format!("{item_key}.name"), "--model", &Some(Scalar::Str(s.clone())))
                            }
                            (Some("tokenizer"), Value::String(s)) => {
                                out.opt(&format!("{item_key}.tokenizer"), "--tokenizer", &Some(Scalar::Str(s.clone())))
                            }
                            _ => bail_key!(
                                format!("{item_key}.{}", show(k)),
                                "key `{item_key}.{}` = {}: accepted keys of a model are name and tokenizer",
                                show(k),
                                show(val)
                            ),
                        }
                    }
                }
                other => bail_key!(
                    format!("{key}.items[0]"),
                    "key `{key}.items[0]` = {}: accepted is {{name: MODEL}}",
                    show(other)
                ),
            },
            _ => out.raw(key, v, "--model-selection-strategy"),
        },
        other => {
            bail_key!(format!("{key}"), "key `{key}` = {}: accepted is a model name or a list of names", show(other))
        }
    }
    Ok(())
}

fn endpoint(out: &mut Out, e: &Endpoint) -> Result<()> {
    const E: &str = "benchmark.endpoint";
    if e.url.is_some() && e.urls.is_some() {
        bail_key!(format!("{E}.url"), "keys `{E}.url` and `{E}.urls` are both given: accepted is one of them");
    }
    out.opt(&format!("{E}.url"), "--url", &e.url);
    if let Some(urls) = &e.urls {
        for (i, u) in urls.0.iter().enumerate() {
            out.opt(&format!("{E}.urls[{i}]"), "--url", &Some(u.clone()));
        }
    }
    out.opt(&format!("{E}.urlStrategy"), "--url-strategy", &e.url_strategy);
    out.opt(&format!("{E}.type"), "--endpoint-type", &e.kind);
    out.opt(&format!("{E}.path"), "--custom-endpoint", &e.path);
    out.opt(&format!("{E}.apiKey"), "--api-key", &e.api_key);
    out.duration(&format!("{E}.timeout"), "--request-timeout-seconds", &e.timeout)?;
    out.switch(&format!("{E}.streaming"), &e.streaming, "--streaming", None)?;
    out.opt(&format!("{E}.transport"), "--transport", &e.transport);
    out.opt(&format!("{E}.connectionReuse"), "--connection-reuse-strategy", &e.connection_reuse);
    out.switch(&format!("{E}.useLegacyMaxTokens"), &e.use_legacy_max_tokens, "--use-legacy-max-tokens", None)?;
    out.switch(&format!("{E}.useServerTokenCount"), &e.use_server_token_count, "--use-server-token-count", None)?;
    out.switch(&format!("{E}.perChunkUsage"), &e.per_chunk_usage, "--per-chunk-usage", None)?;
    if let Some(v) = &e.template {
        out.raw(&format!("{E}.template"), v, "--request-content-type");
    }
    if let Some(h) = &e.headers {
        for (k, v) in h {
            let key = format!("{E}.headers.{}", show(k));
            out.push(&key, show(v), vec![kv("--header", format!("{}:{}", show(k), show(v)))]);
        }
    }
    if let Some(x) = &e.extra {
        for (k, v) in x {
            let key = format!("{E}.extra.{}", show(k));
            let value = match v {
                Value::String(s) => s.clone(),
                other => serde_json::to_string(other).unwrap_or_else(|_| show(other)),
            };
            out.push(&key, show(v), vec![kv("--extra-inputs", format!("{}:{value}", show(k)))]);
        }
    }
    out.switch(&format!("{E}.downloadVideoContent"), &e.download_video_content, "--download-video-content", None)?;
    out.opt(&format!("{E}.requestContentType"), "--request-content-type", &e.request_content_type);
    out.opt(&format!("{E}.sessionHeader"), "--session-header", &e.session_header);
    if let Some(v) = &e.uuid_and_strip {
        out.raw(&format!("{E}.uuidAndStrip"), v, "--uuid-and-strip");
    }
    out.duration(&format!("{E}.waitForModelTimeout"), "--wait-for-model-timeout", &e.wait_for_model_timeout)?;
    out.opt(&format!("{E}.waitForModelInterval"), "--wait-for-model-interval", &e.wait_for_model_interval);
    out.opt(&format!("{E}.waitForModelMode"), "--wait-for-model-mode", &e.wait_for_model_mode);
    match &e.reset_kv_cache {
        None => {}
        Some(ScalarOr::Scalar(s)) => {
            out.switch(&format!("{E}.resetKvCache"), &Some(s.clone()), "--reset-kv-cache", None)?
        }
        Some(ScalarOr::Section(r)) => {
            out.push(&format!("{E}.resetKvCache"), "a section".into(), vec!["--reset-kv-cache".into()]);
            let key = format!("{E}.resetKvCache");
            out.opt(&format!("{key}.timeoutSeconds"), "--reset-kv-cache-timeout-seconds", &r.timeout_seconds);
            out.opt(&format!("{key}.path"), "--reset-kv-cache-path", &r.path);
            if let Some(v) = &r.max_retry_seconds {
                return Err(refused(
                    &format!("{key}.maxRetrySeconds"),
                    &v.to_string(),
                    "not yet supported: retrying the cache reset",
                    "drop the key",
                ));
            }
        }
    }
    if let Some(v) = &e.server_profiler {
        out.raw(&format!("{E}.serverProfiler"), v, "--server-profiler");
    }
    Ok(())
}

fn dist(out: &mut Out, key: &str, v: &Option<ScalarOr<Dist>>, mean_flag: &str, stddev_flag: &str) -> Result<()> {
    match v {
        None => {}
        Some(ScalarOr::Scalar(s)) => out.opt(key, mean_flag, &Some(s.clone())),
        Some(ScalarOr::Section(d)) => {
            let other = [
                ("median", d.median.is_some()),
                ("peaks", d.peaks.is_some()),
                ("points", d.points.is_some()),
                ("min", d.min.is_some()),
                ("max", d.max.is_some()),
            ]
            .into_iter()
            .find(|(_, set)| *set);
            if let Some((name, _)) = other {
                return Err(refused(
                    &format!("{key}.{name}"),
                    "a distribution",
                    "not yet supported: log-normal (median), multimodal (peaks), empirical (points) and clipped (min/max) length distributions",
                    "give {mean, stddev} (a normal distribution) or a fixed number",
                ));
            }
            if let Some(t) = &d.kind
                && !matches!(t.to_string().as_str(), "normal" | "fixed")
            {
                return Err(refused(
                    &format!("{key}.type"),
                    &t.to_string(),
                    "not yet supported: length distributions other than fixed and normal",
                    "give {mean, stddev} or a fixed number",
                ));
            }
            out.opt(&format!("{key}.mean"), mean_flag, &d.mean);
            out.opt(&format!("{key}.stddev"), stddev_flag, &d.stddev);
        }
    }
    Ok(())
}

fn dataset(out: &mut Out, key: &str, d: &Dataset) -> Result<()> {
    let kind = d.kind.as_ref().map(Scalar::to_string);
    let kind = kind.as_deref().unwrap_or("synthetic");
    match kind {
        "synthetic" | "file" => {}
        "public" => {
            let v = d.dataset.clone().unwrap_or(Scalar::Str(String::new()));
            out.push(&format!("{key}.type"), "public".into(), vec![kv("--public-dataset", v.to_string())]);
        }
        other => bail_key!(format!("{key}.type"), "key `{key}.type` = {other}: accepted is synthetic, file or public"),
    }
    out.opt(&format!("{key}.systemPrompt"), "--system-prompt", &d.system_prompt);
    out.opt(&format!("{key}.systemPromptFile"), "--system-prompt-file", &d.system_prompt_file);
    out.opt(&format!("{key}.entries"), "--num-dataset-entries", &d.entries);
    if let Some(v) = &d.random_seed {
        return Err(refused(
            &format!("{key}.randomSeed"),
            &v.to_string(),
            "not yet supported: a dataset seed apart from the run's",
            "give the top-level randomSeed",
        ));
    }
    if let Some(s) = &d.sampling
        && s.to_string() != "sequential"
    {
        out.opt(&format!("{key}.sampling"), "--dataset-sampling-strategy", &Some(s.clone()));
    }
    if d.prompts.is_some() && (d.isl.is_some() || d.osl.is_some()) {
        bail_key!(
            format!("{key}.isl"),
            "keys `{key}.isl`/`osl` and `{key}.prompts` are both given: accepted is one place for the lengths"
        );
    }
    dist(out, &format!("{key}.isl"), &d.isl, "--isl", "--isl-stddev")?;
    dist(out, &format!("{key}.osl"), &d.osl, "--osl", "--osl-stddev")?;
    if let Some(p) = &d.prompts {
        let k = format!("{key}.prompts");
        dist(out, &format!("{k}.isl"), &p.isl, "--isl", "--isl-stddev")?;
        dist(out, &format!("{k}.osl"), &p.osl, "--osl", "--osl-stddev")?;
        out.opt(&format!("{k}.blockSize"), "--isl-block-size", &p.block_size);
        out.opt(&format!("{k}.batchSize"), "--prompt-batch-size", &p.batch_size);
        if let Some(v) = &p.cache_bust {
            out.raw(&format!("{k}.cacheBust"), v, "--cache-bust");
        }
        if let Some(v) = &p.corpus {
            out.raw(&format!("{k}.corpus"), v, "--prompt-corpus");
        }
        if let Some(v) = &p.sequence_distribution {
            sequence_distribution(out, &format!("{k}.sequenceDistribution"), v)?;
        }
        out.opt(&format!("{k}.randomRangeRatio"), "--random-range-ratio", &p.random_range_ratio);
        out.opt(&format!("{k}.randomCorpusStyle"), "--random-corpus-style", &p.random_corpus_style);
    }
    if let Some(p) = &d.prefix_prompts {
        let k = format!("{key}.prefixPrompts");
        out.opt(&format!("{k}.poolSize"), "--prompt-prefix-pool-size", &p.pool_size);
        out.opt(&format!("{k}.length"), "--prompt-prefix-length", &p.length);
        out.opt(&format!("{k}.sharedSystemLength"), "--shared-system-prompt-length", &p.shared_system_length);
        out.opt(&format!("{k}.userContextLength"), "--user-context-prompt-length", &p.user_context_length);
    }
    dist(out, &format!("{key}.turns"), &d.turns, "--conversation-turn-mean", "--conversation-turn-stddev")?;
    dist(
        out,
        &format!("{key}.turnDelay"),
        &d.turn_delay,
        "--conversation-turn-delay-mean",
        "--conversation-turn-delay-stddev",
    )?;
    out.opt(&format!("{key}.turnDelayRatio"), "--conversation-turn-delay-ratio", &d.turn_delay_ratio);
    for (name, v, flag) in [
        ("images", &d.images, "--image-width-mean"),
        ("audio", &d.audio, "--audio-length-mean"),
        ("video", &d.video, "--video-duration"),
        ("rankings", &d.rankings, "--rankings-passages-mean"),
        ("cacheBust", &d.cache_bust, "--cache-bust"),
        ("filters", &d.filters, "--dataset-filter"),
    ] {
        if let Some(v) = v {
            out.raw(&format!("{key}.{name}"), v, flag);
        }
    }
    // File datasets.
    if d.path.is_some() && d.records.is_some() {
        bail_key!(
            format!("{key}.path"),
            "keys `{key}.path` and `{key}.records` are both given: accepted is one of them"
        );
    }
    out.opt(&format!("{key}.path"), "--input-file", &d.path);
    if let Some(records) = &d.records {
        return Err(refused(
            &format!("{key}.records"),
            &format!("{} records", records.len()),
            "not yet supported: inline records (AIPerf's single_turn and multi_turn text prompts)",
            "put the rows in a Mooncake trace file and give its path",
        ));
    }
    out.opt(&format!("{key}.format"), "--custom-dataset-type", &d.format);
    if let Some(s) = &d.synthesis {
        let k = format!("{key}.synthesis");
        out.opt(&format!("{k}.speedupRatio"), "--synthesis-speedup-ratio", &s.speedup_ratio);
        out.opt(&format!("{k}.prefixLenMultiplier"), "--synthesis-prefix-len-multiplier", &s.prefix_len_multiplier);
        out.opt(&format!("{k}.prefixRootMultiplier"), "--synthesis-prefix-root-multiplier", &s.prefix_root_multiplier);
        out.opt(&format!("{k}.promptLenMultiplier"), "--synthesis-prompt-len-multiplier", &s.prompt_len_multiplier);
        out.opt(&format!("{k}.outputLenMultiplier"), "--synthesis-output-len-multiplier", &s.output_len_multiplier);
        out.opt(&format!("{k}.maxIsl"), "--synthesis-max-isl", &s.max_isl);
        out.opt(&format!("{k}.maxOsl"), "--synthesis-max-osl", &s.max_osl);
        out.switch(
            &format!("{k}.allowDatasetWrap"),
            &s.allow_dataset_wrap,
            "--allow-dataset-wrap",
            Some("--no-allow-dataset-wrap"),
        )?;
    }
    out.opt(&format!("{key}.traceSessionSampleRatio"), "--trace-session-sample-ratio", &d.trace_session_sample_ratio);
    out.opt(
        &format!("{key}.interTurnDelayCapSeconds"),
        "--inter-turn-delay-cap-seconds",
        &d.inter_turn_delay_cap_seconds,
    );
    out.opt(&format!("{key}.maxIdleGapCapSeconds"), "--max-idle-gap-cap-seconds", &d.max_idle_gap_cap_seconds);
    out.opt(&format!("{key}.replaySpeedup"), "--replay-speedup", &d.replay_speedup);
    out.switch(
        &format!("{key}.openLoopReplay"),
        &d.open_loop_replay,
        "--open-loop-replay",
        Some("--no-open-loop-replay"),
    )?;
    out.switch(&format!("{key}.openLoopStrict"), &d.open_loop_strict, "--open-loop-strict", None)?;
    out.switch(&format!("{key}.omitKvHints"), &d.omit_kv_hints, "--omit-kv-hints", None)?;
    out.switch(
        &format!("{key}.forceMinTokens"),
        &d.force_min_tokens,
        "--force-min-tokens",
        Some("--no-force-min-tokens"),
    )?;
    out.opt(&format!("{key}.promptBatchSize"), "--prompt-batch-size", &d.prompt_batch_size);
    out.opt(&format!("{key}.imageBatchSize"), "--image-batch-size", &d.image_batch_size);
    out.opt(&format!("{key}.audioBatchSize"), "--audio-batch-size", &d.audio_batch_size);
    out.opt(&format!("{key}.videoBatchSize"), "--video-batch-size", &d.video_batch_size);
    out.opt(&format!("{key}.blockSize"), "--isl-block-size", &d.block_size);
    out.opt(&format!("{key}.traceIdleGapCapSeconds"), "--trace-idle-gap-cap-seconds", &d.trace_idle_gap_cap_seconds);
    out.switch(&format!("{key}.ignoreTraceDelays"), &d.ignore_trace_delays, "--ignore-trace-delays", None)?;
    out.switch(&format!("{key}.useThinkTimeOnly"), &d.use_think_time_only, "--use-think-time-only", None)?;
    out.opt(&format!("{key}.maxContextLength"), "--max-context-length", &d.max_context_length);
    out.opt(&format!("{key}.hfSubset"), "--hf-subset", &d.hf_subset);
    out.opt(&format!("{key}.hfWekaDataset"), "--hf-weka-dataset", &d.hf_weka_dataset);
    Ok(())
}

/// `sequenceDistribution: [{isl, islStddev, osl, oslStddev, probability}, …]` as `--seq-dist`
/// (`ISL[|STDDEV],OSL[|STDDEV]:PROBABILITY;…`).
fn sequence_distribution(out: &mut Out, key: &str, v: &Value) -> Result<()> {
    let Value::Sequence(items) = v else {
        bail_key!(format!("{key}"), "key `{key}` = {}: accepted is a list of {{isl, osl, probability}}", show(v));
    };
    let mut parts = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let Value::Mapping(m) = item else {
            bail_key!(
                format!("{key}[{i}]"),
                "key `{key}[{i}]` = {}: accepted is {{isl, osl, probability}}",
                show(item)
            );
        };
        let get = |names: &[&str]| names.iter().find_map(|n| m.get(*n)).map(show);
        for (k, _) in m {
            let k = show(k);
            if !["isl", "islStddev", "isl_stddev", "osl", "oslStddev", "osl_stddev", "probability"]
                .contains(&k.as_str())
            {
                bail_key!(
                    format!("{key}[{i}].{k}"),
                    "key `{key}[{i}].{k}`: accepted keys are isl, islStddev, osl, oslStddev, probability"
                );
            }
        }
        let (Some(isl), Some(osl), Some(p)) = (get(&["isl"]), get(&["osl"]), get(&["probability"])) else {
            bail_key!(
                format!("{key}[{i}]"),
                "key `{key}[{i}]` = {}: accepted is {{isl, osl, probability}} (each required)",
                show(item)
            );
        };
        let side = |mean: String, sd: Option<String>| match sd {
            Some(sd) => format!("{mean}|{sd}"),
            None => mean,
        };
        parts.push(format!(
            "{},{}:{p}",
            side(isl, get(&["islStddev", "isl_stddev"])),
            side(osl, get(&["oslStddev", "osl_stddev"]))
        ));
    }
    out.push(key, show(v), vec![kv("--seq-dist", parts.join(";"))]);
    Ok(())
}

/// The role of a phase, as AIPerf infers it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Warmup,
    Profiling,
}

fn phases(out: &mut Out, b: &Benchmark) -> Result<()> {
    if b.phases.is_some() && (b.warmup.is_some() || b.profiling.is_some()) {
        bail_key!(
            format!("benchmark.phases"),
            "keys `benchmark.phases` and `benchmark.warmup`/`profiling` are both given: accepted is `warmup`/`profiling` or a `phases` list"
        );
    }
    if b.warmup.is_some() && b.profiling.is_none() {
        bail_key!(
            format!("benchmark.warmup"),
            "key `benchmark.warmup` is given without `benchmark.profiling`: a run needs a profiling phase"
        );
    }
    let mut list: Vec<(String, &Phase, Option<Role>)> = Vec::new();
    if let Some(w) = &b.warmup {
        list.push(("benchmark.warmup".into(), w, Some(Role::Warmup)));
    }
    if let Some(p) = &b.profiling {
        list.push(("benchmark.profiling".into(), p, Some(Role::Profiling)));
    }
    match &b.phases {
        None => {}
        Some(OneOrMany::One(p)) => list.push(("benchmark.phases".into(), p, Some(Role::Profiling))),
        Some(OneOrMany::Many(ps)) => {
            list.extend(ps.iter().enumerate().map(|(i, p)| (format!("benchmark.phases[{i}]"), p, None)))
        }
    }
    let mut warmup = None;
    let mut profiling = None;
    for (key, p, implied) in list {
        let role = role(&key, p, implied)?;
        let slot = if role == Role::Warmup { &mut warmup } else { &mut profiling };
        if let Some(first) = slot.replace(key.clone()) {
            let what = if role == Role::Warmup { "warm-up" } else { "profiling" };
            return Err(refused(
                &key,
                &format!("a second {what} phase (after {first})"),
                "one warm-up phase and one profiling phase a run",
                "run once per profiling phase, or sweep with a comma-separated --concurrency or --request-rate list",
            ));
        }
        phase(out, &key, p, role)?;
    }
    Ok(())
}

fn role(key: &str, p: &Phase, implied: Option<Role>) -> Result<Role> {
    let name = p.name.as_ref().map(Scalar::to_string);
    let kind = p.kind.as_ref().map(Scalar::to_string);
    let role = match (kind.as_deref(), name.as_deref(), implied) {
        (Some("warmup"), _, _) => Role::Warmup,
        (Some("profiling"), _, _) => Role::Profiling,
        (Some(other), _, _) => {
            bail_key!(format!("{key}.kind"), "key `{key}.kind` = {other}: accepted is warmup or profiling")
        }
        (None, _, Some(r)) => r,
        (None, Some("warmup"), None) => Role::Warmup,
        (None, Some("profiling"), None) => Role::Profiling,
        (None, n, None) => bail_key!(
            format!("{key}.kind"),
            "key `{key}.kind` is missing: a phase named {} needs `kind: warmup` or `kind: profiling`",
            n.unwrap_or("(no name)")
        ),
    };
    let wanted = role == Role::Warmup;
    if let Some(x) = &p.exclude_from_results
        && *x != Scalar::Bool(wanted)
    {
        bail_key!(
            format!("{key}.excludeFromResults"),
            "key `{key}.excludeFromResults` = {x}: accepted is {wanted} for a {} phase (warm-up is always excluded, profiling always included)",
            if wanted { "warm-up" } else { "profiling" }
        );
    }
    Ok(role)
}

/// The AIPerf option spellings of one phase's keys: `(profiling, warm-up)`.
const PHASE_FLAGS: [(&str, &str, &str); 11] = [
    ("requests", "--request-count", "--warmup-request-count"),
    ("duration", "--benchmark-duration", "--warmup-duration"),
    ("sessions", "--conversation-num", "--num-warmup-sessions"),
    ("concurrency", "--concurrency", "--warmup-concurrency"),
    ("concurrencyRamp", "--concurrency-ramp-duration", "--warmup-concurrency-ramp-duration"),
    ("prefillConcurrency", "--prefill-concurrency", "--warmup-prefill-concurrency"),
    ("prefillRamp", "--prefill-concurrency-ramp-duration", "--warmup-prefill-concurrency-ramp-duration"),
    ("gracePeriod", "--benchmark-grace-period", "--warmup-grace-period"),
    ("rate", "--request-rate", "--warmup-request-rate"),
    ("rateRamp", "--request-rate-ramp-duration", "--warmup-request-rate-ramp-duration"),
    ("type", "--arrival-pattern", "--warmup-arrival-pattern"),
];

fn flag(name: &str, role: Role) -> &'static str {
    PHASE_FLAGS
        .iter()
        .find(|(n, ..)| *n == name)
        .map(|(_, p, w)| if role == Role::Warmup { *w } else { *p })
        .unwrap_or("")
}

fn phase(out: &mut Out, key: &str, p: &Phase, role: Role) -> Result<()> {
    let k = |name: &str| format!("{key}.{name}");
    let Some(kind) = p.kind_of_load.as_ref().map(Scalar::to_string) else {
        bail_key!(
            format!("{key}.type"),
            "key `{key}.type` is missing: accepted is concurrency, poisson, gamma, constant, user_centric or fixed_schedule"
        );
    };
    let rated = matches!(kind.as_str(), "poisson" | "gamma" | "constant" | "user_centric");
    let only = |name: &str, set: bool, ok: bool, types: &str| -> Result<()> {
        if set && !ok {
            bail_key!(
                format!("{key}.{name}"),
                "key `{key}.{name}`: a {kind} phase has no {name} (accepted for {types})"
            );
        }
        Ok(())
    };
    only("rate", p.rate.is_some(), rated, "poisson, gamma, constant and user_centric phases")?;
    only("rateRamp", p.rate_ramp.is_some(), rated, "poisson, gamma, constant and user_centric phases")?;
    only("rateSeries", p.rate_series.is_some(), rated && kind != "user_centric", "poisson, gamma and constant phases")?;
    only("smoothness", p.smoothness.is_some(), kind == "gamma", "gamma phases")?;
    only("users", p.users.is_some(), kind == "user_centric", "user_centric phases")?;
    for (name, set) in [
        ("autoOffset", p.auto_offset.is_some()),
        ("startOffset", p.start_offset.is_some()),
        ("endOffset", p.end_offset.is_some()),
    ] {
        only(name, set, kind == "fixed_schedule", "fixed_schedule phases")?;
    }
    let warm = role == Role::Warmup;
    match kind.as_str() {
        "concurrency" => {}
        "poisson" | "gamma" | "constant" => {
            if kind == "gamma" && p.smoothness.is_some() {
                if warm {
                    return Err(refused(
                        &k("smoothness"),
                        &p.smoothness.as_ref().map(Scalar::to_string).unwrap_or_default(),
                        "AIPerf's command line has no warm-up smoothness",
                        "drop the key",
                    ));
                }
                out.opt(&k("smoothness"), "--arrival-smoothness", &p.smoothness);
            }
            out.push(&k("type"), kind.clone(), vec![kv(flag("type", role), kind.clone())]);
            out.opt(&k("rate"), flag("rate", role), &p.rate);
        }
        "user_centric" => {
            if warm {
                return Err(refused(
                    &k("type"),
                    "user_centric",
                    "AIPerf's command line has no user-centric warm-up",
                    "warm up with type concurrency",
                ));
            }
            out.opt(&k("rate"), "--user-centric-rate", &p.rate);
            out.opt(&k("users"), "--num-users", &p.users);
        }
        "fixed_schedule" => {
            if warm {
                return Err(refused(
                    &k("type"),
                    "fixed_schedule",
                    "a fixed-schedule warm-up is not supported",
                    "warm up with type concurrency",
                ));
            }
            out.push(&k("type"), kind.clone(), vec!["--fixed-schedule".into()]);
            out.switch(&k("autoOffset"), &p.auto_offset, "--fixed-schedule-auto-offset", None)?;
            out.opt(&k("startOffset"), "--fixed-schedule-start-offset", &p.start_offset);
            out.opt(&k("endOffset"), "--fixed-schedule-end-offset", &p.end_offset);
        }
        other => bail_key!(
            format!("{key}.type"),
            "key `{key}.type` = {other}: accepted is concurrency, poisson, gamma, constant, user_centric or fixed_schedule"
        ),
    }
    out.opt(&k("requests"), flag("requests", role), &p.requests);
    out.duration(&k("duration"), flag("duration", role), &p.duration)?;
    out.opt(&k("sessions"), flag("sessions", role), &p.sessions);
    out.opt(&k("concurrency"), flag("concurrency", role), &p.concurrency);
    out.ramp(&k("concurrencyRamp"), flag("concurrencyRamp", role), &p.concurrency_ramp)?;
    out.opt(&k("prefillConcurrency"), flag("prefillConcurrency", role), &p.prefill_concurrency);
    out.ramp(&k("prefillRamp"), flag("prefillRamp", role), &p.prefill_ramp)?;
    out.ramp(&k("rateRamp"), flag("rateRamp", role), &p.rate_ramp)?;
    out.duration(&k("gracePeriod"), flag("gracePeriod", role), &p.grace_period)?;
    if let Some(c) = &p.cancellation {
        if warm {
            return Err(refused(
                &k("cancellation"),
                "a section",
                "AIPerf's command line has no warm-up cancellation",
                "drop the key",
            ));
        }
        out.opt(&k("cancellation.rate"), "--request-cancellation-rate", &c.rate);
        out.opt(&k("cancellation.delay"), "--request-cancellation-delay", &c.delay);
    }
    if let Some(v) = &p.rate_series {
        out.raw(&k("rateSeries"), v, "--request-rate-series");
    }
    out.opt(&k("failedRequestThreshold"), "--failed-request-threshold", &p.failed_request_threshold);
    out.opt(&k("trajectoryStartMinRatio"), "--trajectory-start-min-ratio", &p.trajectory_start_min_ratio);
    out.opt(&k("trajectoryStartMaxRatio"), "--trajectory-start-max-ratio", &p.trajectory_start_max_ratio);
    if let Some(v) = &p.burst_phase_starts {
        out.raw(&k("burstPhaseStarts"), v, "--burst-phase-starts");
    }
    out.opt(&k("systemIdleGapCapSeconds"), "--system-idle-gap-cap-seconds", &p.system_idle_gap_cap_seconds);
    out.opt(&k("agenticCacheWarmupDuration"), "--agentic-cache-warmup-duration", &p.agentic_cache_warmup_duration);
    out.opt(&k("agenticWarmupGracePeriod"), "--agentic-warmup-grace-period", &p.agentic_warmup_grace_period);
    if let Some(name) = p.unsupported_key() {
        return Err(refused(
            &k(name),
            "a value",
            "AIPerf's adaptive scaling, phase SLAs, seamless phases and timing modes are not supported",
            "drop the key; --search-max with --goodput finds the highest load that meets SLOs",
        ));
    }
    Ok(())
}

fn artifacts(out: &mut Out, a: &Artifacts) -> Result<()> {
    const A: &str = "benchmark.artifacts";
    out.opt(&format!("{A}.dir"), "--artifact-dir", &a.dir);
    out.opt(&format!("{A}.prefix"), "--profile-export-prefix", &a.prefix);
    // AIPerf's defaults (`[json]`, `[jsonl]`) are what is written; turning a file off is not.
    for (name, v, default) in [("summary", &a.summary, "json"), ("records", &a.records, "jsonl")] {
        match v {
            None => {}
            Some(Value::Sequence(items)) if items.iter().all(|i| i.as_str() == Some(default)) => {}
            Some(other) => out.raw(&format!("{A}.{name}"), other, "--export-level"),
        }
    }
    match &a.raw {
        None | Some(Value::Bool(false)) => {}
        Some(Value::Bool(true)) => out.push(&format!("{A}.raw"), "true".into(), vec![kv("--export-level", "raw")]),
        Some(other) => bail_key!(format!("{A}.raw"), "key `{A}.raw` = {}: accepted is true or false", show(other)),
    }
    out.switch(&format!("{A}.trace"), &a.trace, "--export-http-trace", None)?;
    out.duration(&format!("{A}.sliceDuration"), "--slice-duration", &a.slice_duration)?;
    out.switch(&format!("{A}.showTraceTiming"), &a.show_trace_timing, "--show-trace-timing", None)?;
    if let Some(v) = &a.user_files {
        return Err(refused(
            &format!("{A}.userFiles"),
            &show(v),
            "not yet supported: files written from templates into the run folder",
            "write them yourself next to the run folder",
        ));
    }
    out.switch(&format!("{A}.autoPlot"), &a.auto_plot, "--auto-plot", Some("--no-auto-plot"))?;
    out.switch(&format!("{A}.plotRequired"), &a.plot_required, "--plot-required", None)?;
    out.switch(&format!("{A}.exportOutputsJson"), &a.export_outputs_json, "--export-outputs-json", None)?;
    Ok(())
}

/// `slos: {metric: value, …}` as one `--goodput "metric:value …"`.
fn goodput(out: &mut Out, slos: &Mapping) -> Result<()> {
    let mut parts = Vec::new();
    for (k, v) in slos {
        if matches!(v, Value::Mapping(_) | Value::Sequence(_)) {
            bail_key!(
                format!("benchmark.slos.{}", show(k)),
                "key `benchmark.slos.{}` = {}: accepted is a number",
                show(k),
                show(v)
            );
        }
        parts.push(format!("{}:{}", show(k), show(v)));
    }
    if !parts.is_empty() {
        out.push("benchmark.slos", show(&Value::Mapping(slos.clone())), vec![kv("--goodput", parts.join(" "))]);
    }
    Ok(())
}

fn telemetry(out: &mut Out, key: &str, t: &ScalarOr<Telemetry>, on: &str, off: &str) -> Result<()> {
    let t = match t {
        ScalarOr::Scalar(Scalar::Bool(false)) => {
            out.push(key, "false".into(), vec![off.into()]);
            return Ok(());
        }
        ScalarOr::Scalar(Scalar::Bool(true)) => {
            out.push(key, "true".into(), vec![on.into()]);
            return Ok(());
        }
        ScalarOr::Scalar(url) => {
            out.push(key, url.to_string(), vec![kv(on, url.to_string())]);
            return Ok(());
        }
        ScalarOr::Section(t) => t,
    };
    if t.enabled == Some(Scalar::Bool(false)) {
        out.push(&format!("{key}.enabled"), "false".into(), vec![off.into()]);
        return Ok(());
    }
    if let Some(v) = &t.enabled
        && !matches!(v, Scalar::Bool(true))
    {
        bail_key!(format!("{key}.enabled"), "key `{key}.enabled` = {v}: accepted is true or false");
    }
    let mut urls: Vec<Scalar> = t.url.iter().cloned().collect();
    if let Some(list) = &t.urls {
        urls.extend(list.0.iter().cloned());
    }
    let url_key = if t.urls.is_some() { format!("{key}.urls") } else { format!("{key}.url") };
    let mut args: Vec<String> = urls.iter().map(|u| kv(on, u)).collect();
    if args.is_empty() {
        args.push(on.to_string());
    }
    let value = urls.iter().map(Scalar::to_string).collect::<Vec<_>>().join(", ");
    out.push(if urls.is_empty() { key } else { &url_key }, value, args);
    if let Some(f) = &t.formats {
        if on != "--server-metrics" {
            bail_key!(
                format!("{key}.formats"),
                "key `{key}.formats`: accepted keys are enabled, url, urls, collector and mode"
            );
        }
        let list: Vec<String> = f.0.iter().map(Scalar::to_string).collect();
        out.push(&format!("{key}.formats"), list.join(", "), vec![kv(&format!("{on}-formats"), list.join(","))]);
    }
    if let Some(v) = &t.discovery {
        return Err(refused(
            &format!("{key}.discovery"),
            &show(v),
            "Kubernetes discovery of metrics endpoints is not supported",
            "list the endpoints under urls",
        ));
    }
    if let Some(c) = &t.collector
        && c.to_string() != "dcgm"
    {
        out.push(&format!("{key}.collector"), c.to_string(), vec![kv(on, c.to_string())]);
    }
    if let Some(m) = &t.mode
        && m.to_string() != "summary"
    {
        return Err(refused(
            &format!("{key}.mode"),
            &m.to_string(),
            "the realtime GPU dashboard is not supported",
            "use mode: summary",
        ));
    }
    Ok(())
}
