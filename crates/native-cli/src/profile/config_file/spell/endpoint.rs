//! The model and endpoint sections (`benchmark.models`, `benchmark.endpoint`) as option
//! spellings.

use anyhow::Result;
use serde_yaml_ng::Value;

use super::super::model::*;
use super::out::{Out, kv, refused, show};

pub(super) fn models(out: &mut Out, key: &str, v: &Value) -> Result<()> {
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

pub(super) fn endpoint(out: &mut Out, e: &Endpoint) -> Result<()> {
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
