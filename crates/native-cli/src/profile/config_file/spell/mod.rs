//! The config file's keys as AIPerf 0.13 `profile` option spellings (`benchmark.phases[1].rate`
//! → `--request-rate 10`), each with the key path it came from. Keys that have no option
//! spelling and that `profile` does not honour are refused here, with the reason.

use anyhow::Result;
use serde_yaml_ng::{Mapping, Value};

use super::model::*;
pub use out::{Given, show};
use out::{Out, kv, refused};

mod dataset;
mod endpoint;
mod out;
mod phases;

use dataset::dataset;
use endpoint::{endpoint, models};
use phases::phases;

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
