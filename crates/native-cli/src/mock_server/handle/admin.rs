//! The admin endpoints: `/metrics`, the cache resets of vLLM, SGLang and llama.cpp, `/slots`.

use std::convert::Infallible;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Response, StatusCode};
use serde_json::json;

use super::response::{Body, full};
use crate::mock_server::state::State;

/// `/metrics`, the cache resets and `/slots`; `None` for other paths.
pub(super) fn admin(state: &State, method: &hyper::Method, path: &str, query: Option<&str>) -> Option<Response<Body>> {
    let reset = |state: &State| {
        if let Ok(mut c) = state.cache.lock() {
            c.clear();
        }
        if let Some(kv) = &state.kv {
            kv.reset();
        }
        let ns = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        state.log(&json!({"reset": path, "query": query, "arrival_ns": ns.to_string()}));
    };
    match (method.as_str(), path) {
        ("GET", "/metrics") => {
            let body = if state.args.metrics_garbage {
                "<html><body><h1>Not metrics</h1></body></html>".to_owned()
            } else {
                match &state.kv {
                    Some(kv) => state.metrics.exposition(kv.usage(), kv.preemptions(), "prompt tokens"),
                    None => {
                        let usage = state.cache.lock().map(|c| c.usage()).unwrap_or(0.0);
                        state.metrics.exposition(usage, 0, "prompt words")
                    }
                }
            };
            let mut r = Response::new(Full::new(Bytes::from(body)).map_err(|e: Infallible| match e {}).boxed());
            r.headers_mut()
                .insert("content-type", hyper::header::HeaderValue::from_static("text/plain; version=0.0.4"));
            Some(r)
        }
        ("POST", "/reset_prefix_cache" | "/flush_cache") => {
            reset(state);
            Some(full(StatusCode::OK, json!({"status": "ok"})))
        }
        ("GET", "/slots") => {
            Some(full(StatusCode::OK, json!([{"id": 0, "is_processing": false}, {"id": 1, "is_processing": false}])))
        }
        ("POST", p) if p.starts_with("/slots/") && query == Some("action=erase") => {
            reset(state);
            Some(full(StatusCode::OK, json!({"id_slot": p.trim_start_matches("/slots/"), "n_erased": 0})))
        }
        _ => None,
    }
}
