//! The options as given, written to the exports' `aiperf_cli_config`, every secret redacted.

use serde_json::{Value, json};

use super::model::{ReplayPlan, connection_reuse_name};
use super::secrets::redact_url;
use crate::profile::options::Args;

/// The options as written to the exports' `aiperf_cli_config`: as given, every secret redacted.
pub(super) fn cli_config(a: &Args, plan: &ReplayPlan) -> Value {
    let (target, server) = (&plan.target, &plan.server);
    let mut config = json!({
        "model": a.model,
        "url": redact_url(&target.url),
        "endpoint_type": format!("{:?}", a.endpoint_type).to_lowercase(),
        "custom_endpoint": a.custom_endpoint,
        "streaming": a.streaming,
        "api_key": a.api_key.as_ref().map(|_| "<redacted>"),
        "headers": target.headers.iter().map(|(k, _)| format!("{k}:<redacted>")).collect::<Vec<_>>(),
        "session_header": a.session_header,
        "extra_inputs": target.body.extra_inputs,
        "request_timeout_seconds": a.request_timeout_seconds,
        "use_legacy_max_tokens": a.use_legacy_max_tokens,
        "turn_history": plan.target.body.turn_history.name(),
        "max_prompt_tokens": a.max_prompt_tokens,
        "use_server_token_count": a.use_server_token_count,
        // Whether ISL/OSL are the client's counts (the default), as the run resolved it.
        "client_token_count": !a.use_server_token_count,
        "input_file": a.input_file.as_ref().map(|f| f.display().to_string()),
        "trace_format": format!("{:?}", a.trace_format.trace_format),
        "random_seed": a.random_seed,
        "isl_block_size": a.isl_block_size,
        "synthesis": plan.source.synthesis,
        "fixed_schedule": a.fixed_schedule,
        "fixed_schedule_start_offset": a.fixed_schedule_start_offset,
        "fixed_schedule_end_offset": a.fixed_schedule_end_offset,
        "fixed_schedule_auto_offset": a.fixed_schedule_auto_offset,
        "request_rate": a.request_rate.first(),
        "arrival_pattern": format!("{:?}", a.arrival_pattern).to_lowercase(),
        "concurrency": a.concurrency.first(),
        "request_count": a.request_count,
        "warmup_request_count": a.warmup_request_count,
        "benchmark_duration": a.benchmark_duration,
        "benchmark_grace_period": a.benchmark_grace_period,
        "tokenizer": a.tokenizer,
        "goodput": a.goodput,
        "slice_duration": a.slice_duration,
        "export_level": format!("{:?}", a.export_level).to_lowercase(),
        "shard": a.shard.as_ref().map(|_| plan.coordination.shard.to_string()),
        "start_at": a.start_at,
        "clock_offset_warn_ms": a.clock_offset_warn_ms,
    });
    // The server's side (a second literal: one would pass serde_json's macro recursion limit).
    for (k, v) in [
        ("server_metrics", json!(server.metrics_urls.iter().map(|u| redact_url(u)).collect::<Vec<_>>())),
        ("server_metrics_interval", json!(a.server_metrics_interval)),
        ("wait_for_server", json!(a.wait_for_server)),
        ("reset_prefix_cache", json!(a.reset_prefix_cache)),
        ("server_kind", json!(server.kind.map(|k| k.name()))),
    ] {
        config[k] = v;
    }
    for (k, v) in super::shaping::input_config(&a.shape) {
        config[k] = v;
    }
    // AIPerf's server options, when given.
    for (k, v) in [
        ("wait_for_model_mode", a.wait_for_model_mode.map(|m| json!(format!("{m:?}").to_lowercase()))),
        ("wait_for_model_interval", a.wait_for_model_interval.map(|v| json!(v))),
        ("reset_kv_cache_path", server.reset.as_ref().and_then(|r| r.path.as_ref()).map(|p| json!(p))),
        ("reset_kv_cache_timeout_seconds", a.reset_kv_cache_timeout_seconds.map(|v| json!(v))),
        ("server_metrics_formats", (!a.server_metrics_formats.is_empty()).then(|| json!(a.server_metrics_formats))),
        (
            "gpu_telemetry",
            (!server.gpu_urls.is_empty())
                .then(|| json!(server.gpu_urls.iter().map(|u| redact_url(u)).collect::<Vec<_>>())),
        ),
        ("profile_export_prefix", a.profile_export_prefix.as_ref().map(|p| json!(p))),
        ("export_http_trace", a.export_http_trace.then_some(json!(true))),
        ("show_trace_timing", a.show_trace_timing.then_some(json!(true))),
        // As given, or a dataset's own default (random_pool's shuffle).
        (
            "dataset_sampling_strategy",
            (a.dataset_sampling_strategy.is_some() || plan.source.sampling != Default::default())
                .then(|| json!(plan.source.sampling.name())),
        ),
        ("allow_dataset_wrap", a.allow_dataset_wrap.then_some(json!(true))),
        ("connection_reuse_strategy", a.connection_reuse_strategy.map(|c| json!(connection_reuse_name(c)))),
        ("per_chunk_usage", a.per_chunk_usage.then_some(json!(true))),
        ("ignore_trace_delays", a.ignore_trace_delays.then_some(json!(true))),
        ("use_think_time_only", a.use_think_time_only.then_some(json!(true))),
        ("max_context_length", a.max_context_length.map(|n| json!(n))),
        ("trace_idle_gap_cap_seconds", a.trace_idle_gap_cap_seconds.map(|s| json!(s))),
        ("inter_turn_delay_cap_seconds", a.inter_turn_delay_cap_seconds.map(|s| json!(s))),
        ("ttft_sla_ms", a.ttft_sla_ms.map(|v| json!(v))),
        ("itl_sla_ms", a.itl_sla_ms.map(|v| json!(v))),
        ("tpot_sla_ms", a.tpot_sla_ms.map(|v| json!(v))),
        ("e2e_sla_ms", a.e2e_sla_ms.map(|v| json!(v))),
        ("error_rate_sla", a.error_rate_sla.map(|v| json!(v))),
        ("slo_attainment_fraction", a.slo_attainment_fraction.map(|v| json!(v))),
        ("system_prompt", a.system_prompt.as_ref().map(|v| json!(v))),
        (
            "cache_bust",
            (a.cache_bust != aiperf_core::replay::cache_bust::Target::None).then(|| json!(a.cache_bust.name())),
        ),
        ("system_idle_gap_cap_seconds", a.system_idle_gap_cap_seconds.map(|v| json!(v))),
        ("system_prompt_file", a.system_prompt_file.as_ref().map(|f| json!(f.display().to_string()))),
    ] {
        if let Some(v) = v {
            config[k] = v;
        }
    }
    if let Some((k, v)) = server.network.cli_config() {
        config[k] = v;
    }
    if target.urls.len() > 1 {
        config["urls"] = json!(target.urls.iter().map(|u| redact_url(u)).collect::<Vec<_>>());
        config["url_strategy"] = json!("round_robin");
    }
    if let Some(f) = &target.tls.ca_file {
        config["ssl_ca_cert"] = json!(f.display().to_string());
    }
    if target.tls.insecure {
        config["insecure_skip_tls_verify"] = json!(true);
    }
    config
}
