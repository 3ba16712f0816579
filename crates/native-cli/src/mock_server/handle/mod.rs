//! One request answered, in phases: routed (health, models, the admin endpoints, a 404 for
//! unknown paths), its body read within `--max-request-bytes`, admitted (counted, logged to
//! `--arrivals-file`, refused over `--max-output-tokens` or `--max-model-len`, failed on purpose
//! by `--error-rate`), its answer planned (tokens, cache hit, usage), a slot waited for
//! (`--slots`), then answered whole or streamed.
//!
//! [`answer`] calls the phases in order. The request is routed and its body read here; the other
//! phases are a file each: [`admit`], [`plan`], [`slot`] (the slot waited for and the pace of the
//! tokens), [`reply`]. The admin endpoints are in [`admin`], the answers' types in [`response`].

mod admin;
mod admit;
mod plan;
mod reply;
mod response;
mod slot;

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use serde_json::{Value, json};

use super::state::State;
use admin::admin;
use admit::{Seen, admit, kv_prompt};
use plan::plan;
use reply::{stream, whole};
use response::{Body, Early, full};
use slot::take_slot;

/// Answers one request (see the module's phases).
pub async fn handle(state: Arc<State>, req: Request<Incoming>) -> std::result::Result<Response<Body>, Infallible> {
    let arrival_ns = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    // Let the other connections whose requests arrived at the same moment take their arrival
    // times before this one reads and parses its body: a burst of large bodies is otherwise
    // stamped one parse after another, and the stamps measure the mock, not the client.
    tokio::task::yield_now().await;
    Ok(answer(state, req, arrival_ns).await.unwrap_or_else(|early| *early))
}

/// The phases of a completion request.
async fn answer(state: Arc<State>, req: Request<Incoming>, arrival_ns: u128) -> Result<Response<Body>, Early> {
    let seen = Seen::of(&req);
    let chat = route(&state, &req, &seen.path)?;
    let body = read_body(req, state.args.max_request_bytes).await?;
    let (body, kv_prompt) = kv_prompt(&state, body, chat).await?;
    let mut ask = admit(&state, &body, chat, arrival_ns, seen, kv_prompt)?;
    let mut planned = plan(&state, &ask, &body);
    let slot = take_slot(&state, &mut planned, ask.hashes.take()).await;
    Ok(if ask.stream { stream(&state, &ask, planned, slot) } else { whole(&state, &ask, planned, slot).await })
}

/// Health, models and the admin endpoints are answered here; a completion path gives whether it
/// is the chat one.
fn route(state: &State, req: &Request<Incoming>, path: &str) -> Result<bool, Early> {
    if path == "/health" || path == "/v1/models" {
        return Err(Box::new(full(
            StatusCode::OK,
            json!({"status": "ok", "data": [{"id": "mock", "object": "model"}]}),
        )));
    }
    if let Some(r) = admin(state, req.method(), path, req.uri().query()) {
        return Err(Box::new(r));
    }
    // Only the paths a real OpenAI-compatible server (vLLM, SGLang, llama.cpp) serves, so that a
    // client joining its URL wrongly sees the 404 it would see there.
    match path {
        "/v1/chat/completions" => Ok(true),
        "/v1/completions" => Ok(false),
        _ => {
            let message = format!(
                "no route {path}: this server answers POST /v1/chat/completions and /v1/completions, \
                 GET /v1/models, /health and /metrics"
            );
            Err(Box::new(full(
                StatusCode::NOT_FOUND,
                json!({"error": {"message": message, "type": "not_found", "code": 404}}),
            )))
        }
    }
}

/// The body as JSON, read up to `limit` bytes.
async fn read_body(req: Request<Incoming>, limit: usize) -> Result<Value, Early> {
    let body = match Limited::new(req.into_body(), limit).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            let message = format!("request body larger than {limit} bytes (mock-server --max-request-bytes)");
            return Err(Box::new(full(StatusCode::PAYLOAD_TOO_LARGE, json!({"error": {"message": message}}))));
        }
        Err(_) => {
            return Err(Box::new(full(StatusCode::BAD_REQUEST, json!({"error": {"message": "cannot read body"}}))));
        }
    };
    serde_json::from_slice::<Value>(&body)
        .map_err(|_| Box::new(full(StatusCode::BAD_REQUEST, json!({"error": {"message": "body is not JSON"}}))))
}
