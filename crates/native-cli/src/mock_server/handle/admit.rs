//! Admission: what a completion request asks for, its prompt as the KV model sees it, its
//! number, its arrival logged, and the refusals and faults that answer it early.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use hyper::body::Incoming;
use hyper::{Request, StatusCode};
use serde_json::{Value, json};

use super::response::{Early, full};
use crate::mock_server::answer::words_in;
use crate::mock_server::kv::{Prompt, Tokens};
use crate::mock_server::state::State;

/// What the request's head shows, read before its body.
pub(super) struct Seen {
    pub(super) path: String,
    pub(super) auth: bool,
    /// The ids and the user agent it carries, as logged.
    pub(super) ids: Value,
}

impl Seen {
    pub(super) fn of(req: &Request<Incoming>) -> Seen {
        let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
        Seen {
            path: req.uri().path().to_owned(),
            auth: req.headers().contains_key("authorization"),
            ids: json!({"request_id": header("x-request-id"), "correlation_id": header("x-correlation-id"),
                "affinity": header("x-session-affinity"), "user_agent": header("user-agent")}),
        }
    }
}

/// What a completion request asks for.
pub(super) struct Ask {
    /// Its number, from 0 in arrival order (faults are chosen from it).
    pub(super) n: u64,
    pub(super) chat: bool,
    pub(super) max_tokens: Option<u64>,
    pub(super) ignore_eos: bool,
    pub(super) stream: bool,
    pub(super) include_usage: bool,
    /// `stream_options.continuous_usage_stats`: usage on every content chunk.
    pub(super) continuous_usage: bool,
    pub(super) prompt_tokens: u64,
    /// The prompt's block hashes (the KV model).
    pub(super) hashes: Option<Vec<u64>>,
}

/// The prompt: the messages of a chat request, the prompt string of a completion one.
pub(super) fn prompt_of(body: &Value, chat: bool) -> &Value {
    body.get(if chat { "messages" } else { "prompt" }).unwrap_or(&Value::Null)
}

/// The prompt as the KV model sees it (none without the model), tokenized on a blocking thread:
/// a burst of long prompts does not hold up the timers of the requests already streaming.
pub(super) async fn kv_prompt(state: &Arc<State>, body: Value, chat: bool) -> Result<(Value, Option<Prompt>), Early> {
    let Some(kv) = &state.kv else { return Ok((body, None)) };
    let block_size = kv.block_size() as usize;
    if matches!(state.tokens, Tokens::Words) {
        let p = state.tokens.prompt(prompt_of(&body, chat), block_size);
        return Ok((body, Some(p)));
    }
    let st = state.clone();
    tokio::task::spawn_blocking(move || {
        let p = st.tokens.prompt(prompt_of(&body, chat), block_size);
        (body, Some(p))
    })
    .await
    .map_err(|_| {
        Box::new(full(
            StatusCode::INTERNAL_SERVER_ERROR,
            json!({"error": {"message": "mock: the tokenizer failed on this prompt", "type": "server_error", "code": 500}}),
        ))
    })
}

/// Numbers the request, refuses more tokens than `--max-output-tokens`, logs its arrival, refuses
/// a context over `--max-model-len` and fails it when `--error-rate` picks it.
pub(super) fn admit(
    state: &State,
    body: &Value,
    chat: bool,
    arrival_ns: u128,
    seen: Seen,
    kv_prompt: Option<Prompt>,
) -> Result<Ask, Early> {
    let a = &state.args;
    let n = state.counter.fetch_add(1, Ordering::Relaxed);
    let max_tokens = ["max_completion_tokens", "max_tokens"].iter().find_map(|k| body.get(*k).and_then(Value::as_u64));
    if let Some(m) = max_tokens.filter(|m| *m > a.max_output_tokens) {
        let message = format!(
            "max_tokens {m} is more than this server allows ({}, mock-server --max-output-tokens)",
            a.max_output_tokens
        );
        return Err(Box::new(full(
            StatusCode::BAD_REQUEST,
            json!({"error": {"message": message, "type": "invalid_request_error"}}),
        )));
    }
    let ask = Ask {
        n,
        chat,
        max_tokens,
        ignore_eos: body.get("ignore_eos").and_then(Value::as_bool).unwrap_or(false),
        stream: body.get("stream").and_then(Value::as_bool).unwrap_or(false),
        include_usage: body.pointer("/stream_options/include_usage").and_then(Value::as_bool).unwrap_or(false),
        continuous_usage: body
            .pointer("/stream_options/continuous_usage_stats")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        prompt_tokens: kv_prompt.as_ref().map_or_else(|| words_in(prompt_of(body, chat)), |p| p.tokens),
        hashes: kv_prompt.map(|p| p.hashes),
    };
    if state.arrivals.is_some() {
        let line = json!({"n": n, "arrival_ns": arrival_ns.to_string(), "path": seen.path, "auth": seen.auth, "stream": ask.stream,
            "max_tokens": max_tokens, "prompt_tokens": ask.prompt_tokens, "session_hint": body.get("user"),
            "headers": seen.ids});
        let line = match line {
            Value::Object(mut m) if a.log_bodies => {
                m.insert("body".to_owned(), body.clone());
                Value::Object(m)
            }
            line => line,
        };
        state.log(&line);
    }
    if let Some(limit) = a.max_model_len {
        context_fits(limit, ask.prompt_tokens, max_tokens)?;
    }
    if hits(n, a.error_rate, 0) {
        return Err(Box::new(full(
            StatusCode::INTERNAL_SERVER_ERROR,
            json!({"error": {"message": "mock: injected server error", "type": "server_error", "code": 500}}),
        )));
    }
    Ok(ask)
}

/// `--max-model-len` as vLLM applies it: a prompt of the whole context or more, or a prompt and
/// `max_tokens` over it, is answered with HTTP 400 and vLLM's message.
fn context_fits(limit: u64, prompt: u64, max_tokens: Option<u64>) -> Result<(), Early> {
    let message = match max_tokens {
        Some(m) if prompt.saturating_add(m) > limit => format!(
            "This model's maximum context length is {limit} tokens. However, you requested {} tokens \
             ({prompt} in the messages, {m} in the completion). Please reduce the length of the messages or \
             completion.",
            prompt.saturating_add(m)
        ),
        None if prompt >= limit => format!(
            "This model's maximum context length is {limit} tokens. However, you requested {prompt} tokens \
             in the messages, Please reduce the length of the messages."
        ),
        _ => return Ok(()),
    };
    Err(Box::new(full(
        StatusCode::BAD_REQUEST,
        json!({"error": {"message": message, "type": "BadRequestError", "param": null, "code": 400}}),
    )))
}

/// Whether request `n` gets a fault of this rate (`salt` decorrelates faults).
pub(super) fn hits(n: u64, rate: f64, salt: u64) -> bool {
    if rate <= 0.0 {
        return false;
    }
    let m = n + salt;
    ((m + 1) as f64 * rate).floor() > (m as f64 * rate).floor()
}
