//! One request answered, in phases: routed (health, models, the admin endpoints, a 404 for
//! unknown paths), its body read within `--max-request-bytes`, admitted (counted, logged to
//! `--arrivals-file`, refused over `--max-output-tokens` or `--max-model-len`, failed on purpose
//! by `--error-rate`), its answer planned (tokens, cache hit, usage), a slot waited for
//! (`--slots`), then answered whole or streamed.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response, StatusCode};
use serde_json::{Value, json};
use tokio::sync::{OwnedSemaphorePermit, mpsc};

use super::State;
use super::answer::{WORDS, answer_word, words_in, words_of};
use super::kv::{Model, Prompt, Tokens};
use super::metrics::InLine;
use super::steps::Stepping;

/// A stream's bytes are handed to the connection in pieces of about this size.
pub const STREAM_PIECE_BYTES: usize = 64 << 10;

/// An answer given before the last phase: a phase that answers returns it as its `Err`.
type Early = Box<Response<Body>>;

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

/// What the request's head shows, read before its body.
struct Seen {
    path: String,
    auth: bool,
    /// The ids and the user agent it carries, as logged.
    ids: Value,
}

impl Seen {
    fn of(req: &Request<Incoming>) -> Seen {
        let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
        Seen {
            path: req.uri().path().to_owned(),
            auth: req.headers().contains_key("authorization"),
            ids: json!({"request_id": header("x-request-id"), "correlation_id": header("x-correlation-id"),
                "affinity": header("x-session-affinity"), "user_agent": header("user-agent")}),
        }
    }
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

/// What a completion request asks for.
struct Ask {
    /// Its number, from 0 in arrival order (faults are chosen from it).
    n: u64,
    chat: bool,
    max_tokens: Option<u64>,
    ignore_eos: bool,
    stream: bool,
    include_usage: bool,
    /// `stream_options.continuous_usage_stats`: usage on every content chunk.
    continuous_usage: bool,
    prompt_tokens: u64,
    /// The prompt's block hashes (the KV model).
    hashes: Option<Vec<u64>>,
}

/// The prompt: the messages of a chat request, the prompt string of a completion one.
fn prompt_of(body: &Value, chat: bool) -> &Value {
    body.get(if chat { "messages" } else { "prompt" }).unwrap_or(&Value::Null)
}

/// The prompt as the KV model sees it (none without the model), tokenized on a blocking thread:
/// a burst of long prompts does not hold up the timers of the requests already streaming.
async fn kv_prompt(state: &Arc<State>, body: Value, chat: bool) -> Result<(Value, Option<Prompt>), Early> {
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
fn admit(
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

/// The answer planned for a request.
struct Planned {
    tokens: u64,
    finish: &'static str,
    prompt_tokens: u64,
    /// Prompt tokens found in the prefix cache (the KV model's are known once the request starts).
    cached: u64,
    /// The request's time to first token once started (ms).
    ttft_ms: f64,
    /// Ends the request's `running` count when dropped.
    done: Finish,
}

impl Planned {
    fn usage(&self) -> Value {
        let (p, t) = (self.prompt_tokens, self.tokens);
        json!({"prompt_tokens": p, "completion_tokens": t, "total_tokens": p + t,
            "prompt_tokens_details": {"cached_tokens": self.cached}})
    }

    /// `--ttft-ms`, plus `--prefill-per-token-ms` for each uncached prompt token.
    fn set_ttft(&mut self, a: &super::Args) {
        self.ttft_ms = if a.prefill_per_token_ms > 0.0 {
            a.ttft_ms + a.prefill_per_token_ms * self.prompt_tokens.saturating_sub(self.cached) as f64
        } else {
            a.ttft_ms
        };
    }
}

/// How many tokens the answer has and why it ends; the prompt looked up in the prefix cache; the
/// request counted as running.
fn plan(state: &Arc<State>, ask: &Ask, body: &Value) -> Planned {
    let a = &state.args;
    let mut tokens = ask.max_tokens.unwrap_or(a.default_output_tokens);
    if !ask.ignore_eos
        && let Some(e) = a.eos_after
    {
        tokens = tokens.min(e);
    }
    if hits(ask.n, a.ignore_max_tokens_rate, 4 * 7919) {
        tokens += 5;
    }
    let finish = if Some(tokens) == ask.max_tokens { "length" } else { "stop" };
    let cached = if state.kv.is_some() {
        0
    } else {
        let mut words = Vec::new();
        words_of(prompt_of(body, ask.chat), &mut words);
        state.cache.lock().map(|mut c| c.query(&words)).unwrap_or(0)
    };
    let m = &state.metrics;
    m.running.fetch_add(1, Ordering::Relaxed);
    let done = Finish { state: state.clone(), started: std::time::Instant::now() };
    let prompt_tokens = ask.prompt_tokens;
    m.prompt_tokens.fetch_add(prompt_tokens, Ordering::Relaxed);
    m.generation_tokens.fetch_add(tokens, Ordering::Relaxed);
    m.queries.fetch_add(prompt_tokens, Ordering::Relaxed);
    m.hits.fetch_add(cached, Ordering::Relaxed);
    let mut planned = Planned { tokens, finish, prompt_tokens, cached, ttft_ms: 0.0, done };
    planned.set_ttft(a);
    planned
}

/// What a started request holds until its last token: a `--slots` slot, or its place in the KV
/// model (a running slot and its pinned blocks), or in its engine steps (which make its tokens).
enum Slot {
    Permit(#[allow(dead_code)] OwnedSemaphorePermit),
    Kv(#[allow(dead_code)] super::kv::Running),
    Steps(Stepping),
}

/// The load model: waits in line for a slot, held until the last token. With the KV model the
/// request's cache hit is known once it starts.
async fn take_slot(state: &State, planned: &mut Planned, hashes: Option<Vec<u64>>) -> Option<Slot> {
    if let Some(Model::Step(kv)) = &state.kv {
        let mut stepping = kv.start(hashes.unwrap_or_default(), planned.prompt_tokens, planned.tokens);
        let hit = {
            let _in_line = InLine::new(&state.metrics);
            stepping.started().await?
        };
        planned.cached = aiperf_core::simulate::engine_cached_tokens(hit, planned.prompt_tokens, kv.block_size());
        state.metrics.hits.fetch_add(planned.cached, Ordering::Relaxed);
        return Some(Slot::Steps(stepping));
    }
    if let Some(Model::Request(kv)) = &state.kv {
        let hashes = hashes.unwrap_or_default();
        let running = {
            let _in_line = InLine::new(&state.metrics);
            kv.start(hashes, planned.prompt_tokens, planned.tokens).await?
        };
        planned.cached =
            aiperf_core::simulate::engine_cached_tokens(running.hit_blocks, planned.prompt_tokens, kv.block_size());
        state.metrics.hits.fetch_add(planned.cached, Ordering::Relaxed);
        planned.set_ttft(&state.args);
        let (ttft, itl) = pacing(state, planned.ttft_ms);
        running.decode(tokio::time::Instant::now() + ttft, itl);
        return Some(Slot::Kv(running));
    }
    match &state.slots {
        Some(s) => {
            let _in_line = InLine::new(&state.metrics);
            s.take().await.map(Slot::Permit)
        }
        None => None,
    }
}

/// Time to first token (`ttft_ms`) and between tokens.
fn pacing(state: &State, ttft_ms: f64) -> (Duration, Duration) {
    let a = &state.args;
    (Duration::from_secs_f64(ttft_ms.max(0.0) / 1e3), Duration::from_secs_f64(a.itl_ms.max(0.0) / 1e3))
}

/// When a request's tokens come: on the clock (the first after `ttft`, then one every `itl`),
/// or as its engine steps make them.
enum Pace {
    Clock { ttft: Duration, itl: Duration, first: Option<tokio::time::Instant> },
    Steps(Stepping),
}

impl Pace {
    /// The request's pace, and what it holds until its last token (`None` when its steps hold
    /// its place).
    fn of(state: &State, ttft_ms: f64, slot: Option<Slot>) -> (Pace, Option<Slot>) {
        match slot {
            Some(Slot::Steps(s)) => (Pace::Steps(s), None),
            slot => {
                let (ttft, itl) = pacing(state, ttft_ms);
                (Pace::Clock { ttft, itl, first: None }, slot)
            }
        }
    }

    /// Waits until content chunk `chunk` (from 0), which carries the output tokens up to
    /// `token` (from 0), is due; false when it never will be.
    async fn until(&mut self, chunk: u64, token: u64) -> bool {
        match self {
            Pace::Clock { ttft, itl, first } => {
                match first {
                    None => {
                        tokio::time::sleep(*ttft).await;
                        *first = Some(tokio::time::Instant::now());
                    }
                    // Deadlines from the first token, so timer rounding does not add up.
                    Some(f) if !itl.is_zero() => {
                        tokio::time::sleep_until(*f + *itl * u32::try_from(chunk).unwrap_or(u32::MAX)).await;
                    }
                    Some(_) => {}
                }
                true
            }
            Pace::Steps(s) => s.made(token.saturating_add(1)).await,
        }
    }

    /// Whether the chunks leave one by one as they are due (otherwise all at once).
    fn spaced(&self) -> bool {
        match self {
            Pace::Clock { itl, .. } => !itl.is_zero(),
            Pace::Steps(_) => true,
        }
    }

    /// Waits until all `tokens` are made.
    async fn finished(&mut self, tokens: u64) {
        match self {
            Pace::Clock { ttft, itl, .. } => {
                tokio::time::sleep(*ttft + *itl * (tokens.saturating_sub(1) as u32)).await;
            }
            Pace::Steps(s) => {
                s.made(tokens.max(1)).await;
            }
        }
    }
}

/// The whole answer, after the time its tokens take.
async fn whole(state: &State, ask: &Ask, planned: Planned, slot: Option<Slot>) -> Response<Body> {
    let (mut pace, slot) = Pace::of(state, planned.ttft_ms, slot);
    let usage = planned.usage();
    let Planned { tokens, finish, ttft_ms, done: _done, .. } = planned;
    let chat = ask.chat;
    pace.finished(tokens).await;
    drop(slot);
    drop(pace);
    let text: String = (0..tokens).map(|i| WORDS[i as usize % WORDS.len()]).collect();
    let choice = if chat {
        json!({"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish})
    } else {
        json!({"index": 0, "text": text, "finish_reason": finish})
    };
    // AIPerf's completions parser takes only `text_completion` (or `completion`) objects.
    let object = if chat { "chat.completion" } else { "text_completion" };
    let id = format!("mock-{}", ask.n);
    let mut r = full(StatusCode::OK, json!({"id": id, "object": object, "choices": [choice], "usage": usage}));
    // Engine steps have no programmed TTFT.
    if state.args.steps().is_none() {
        r.headers_mut().insert("x-aiperf-mock-ttft-ms", hyper::header::HeaderValue::from(ttft_ms.round() as u64));
    }
    r
}

/// The streamed answer: its chunks are written by a task of their own as the client reads them.
fn stream(state: &State, ask: &Ask, planned: Planned, slot: Option<Slot>) -> Response<Body> {
    let a = &state.args;
    let n = ask.n;
    let (pace, slot) = Pace::of(state, planned.ttft_ms, slot);
    let ttft_ms = planned.ttft_ms;
    let (tx, rx) = mpsc::channel(16);
    let s = Streamed {
        id: format!("mock-{n}"),
        chat: ask.chat,
        n,
        tokens: planned.tokens,
        finish: planned.finish,
        usage: planned.usage(),
        include_usage: ask.include_usage,
        continuous_usage: ask.chat && ask.continuous_usage,
        first_chunk_tokens: a.first_chunk_tokens,
        pace,
        varied: a.varied_text,
        disconnect: hits(n, a.disconnect_rate, 7919),
        malformed: hits(n, a.malformed_rate, 2 * 7919),
        stall: hits(n, a.stall_rate, 3 * 7919),
    };
    let done = planned.done;
    tokio::spawn(async move {
        let _slot = slot;
        let _done = done;
        write_stream(tx, s).await;
    });
    let mut r = Response::new(ChannelBody(rx).boxed());
    let h = r.headers_mut();
    h.insert("content-type", hyper::header::HeaderValue::from_static("text/event-stream"));
    h.insert("cache-control", hyper::header::HeaderValue::from_static("no-cache"));
    // Engine steps have no programmed TTFT.
    if state.args.steps().is_none() {
        h.insert(
            "x-aiperf-mock-ttft-ms",
            hyper::header::HeaderValue::from_str(&ttft_ms.to_string())
                .unwrap_or(hyper::header::HeaderValue::from_static("0")),
        );
    }
    r
}

/// What a streamed answer is made of.
struct Streamed {
    id: String,
    chat: bool,
    n: u64,
    tokens: u64,
    finish: &'static str,
    usage: Value,
    include_usage: bool,
    /// Usage, cumulative, on every content chunk.
    continuous_usage: bool,
    /// Tokens of the first content chunk.
    first_chunk_tokens: u64,
    pace: Pace,
    varied: bool,
    /// The faults picked for it: cut halfway, a malformed chunk halfway, a stall after the first
    /// token.
    disconnect: bool,
    malformed: bool,
    stall: bool,
}

/// Writes the stream's chunks into `tx` as their pace says; stops when the client goes away.
async fn write_stream(tx: mpsc::Sender<std::result::Result<Bytes, std::io::Error>>, s: Streamed) {
    let Streamed {
        id,
        chat,
        n,
        tokens,
        finish,
        usage,
        include_usage,
        continuous_usage,
        first_chunk_tokens,
        mut pace,
        varied,
        disconnect,
        malformed,
        stall,
    } = s;
    // Chunk `i` carries the tokens up to `i + bundled` (the first `bundled + 1`).
    let bundled = first_chunk_tokens.min(tokens).saturating_sub(1);
    let chunks = tokens - bundled;
    let usage_after = |i: u64| {
        let mut u = usage.clone();
        let p = u["prompt_tokens"].as_u64().unwrap_or(0);
        u["completion_tokens"] = json!(i + 1 + bundled);
        u["total_tokens"] = json!(p + i + 1 + bundled);
        u
    };
    let ev = |v: Value| format!("data: {v}\n\n");
    let chunk = |delta: Value, finish: Value| {
        if chat {
            json!({"id": id, "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        } else {
            json!({"id": id, "object": "text_completion", "choices": [{"index": 0, "text": delta.get("content").cloned().unwrap_or(json!("")), "finish_reason": finish}]})
        }
    };
    let send = |s: String| {
        let tx = tx.clone();
        async move { tx.send(Ok(Bytes::from(s))).await.is_ok() }
    };
    if chat && !send(ev(chunk(json!({"role": "assistant", "content": null}), Value::Null))).await {
        return;
    }
    if !pace.until(0, bundled).await {
        return;
    }
    let mut batch = String::new();
    for i in 0..chunks {
        if i > 0 && (pace.spaced() || batch.len() >= STREAM_PIECE_BYTES) {
            if !send(std::mem::take(&mut batch)).await {
                return;
            }
            if !pace.until(i, i + bundled).await {
                return;
            }
        }
        if i == chunks / 2 && i > 0 {
            if disconnect {
                let _ = send(std::mem::take(&mut batch)).await;
                let _ = tx
                    .send(Err(std::io::Error::new(std::io::ErrorKind::ConnectionReset, "mock: injected disconnect")))
                    .await;
                return;
            }
            if malformed {
                batch.push_str("data: {\"choices\": [{\"delta\": {\"content\": \"x\"\n\n");
            }
            if stall {
                let _ = send(std::mem::take(&mut batch)).await;
                tx.closed().await;
                return;
            }
        }
        let word = if i == 0 && bundled > 0 {
            (0..=bundled).map(|k| answer_word(varied, n, k)).collect::<String>()
        } else {
            answer_word(varied, n, i + bundled).to_string()
        };
        if i + 1 < chunks && (continuous_usage || (i == 0 && bundled > 0)) {
            let mut c = chunk(json!({"content": word}), Value::Null);
            if continuous_usage {
                c["usage"] = usage_after(i);
            }
            batch.push_str(&ev(c));
            continue;
        }
        if i + 1 < chunks {
            // The common chunk, written directly: the mock must outpace the client it measures.
            if chat {
                batch.push_str(&format!(
                    "data: {{\"id\":\"{id}\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{word}\"}},\"finish_reason\":null}}]}}\n\n"
                ));
            } else {
                batch.push_str(&format!(
                    "data: {{\"id\":\"{id}\",\"object\":\"text_completion\",\"choices\":[{{\"index\":0,\"text\":\"{word}\",\"finish_reason\":null}}]}}\n\n"
                ));
            }
            continue;
        }
        let mut c = chunk(json!({"content": word}), json!(finish));
        if !chat || continuous_usage {
            c["usage"] = usage.clone();
        }
        batch.push_str(&ev(c));
    }
    if tokens == 0 {
        batch.push_str(&ev(chunk(json!({}), json!(finish))));
    }
    if chat && include_usage {
        batch.push_str(&ev(json!({"id": id, "object": "chat.completion.chunk", "choices": [], "usage": usage})));
    }
    batch.push_str("data: [DONE]\n\n");
    let _ = send(batch).await;
}

/// `/metrics`, the cache resets and `/slots`; `None` for other paths.
fn admin(state: &State, method: &hyper::Method, path: &str, query: Option<&str>) -> Option<Response<Body>> {
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

/// Whether request `n` gets a fault of this rate (`salt` decorrelates faults).
fn hits(n: u64, rate: f64, salt: u64) -> bool {
    if rate <= 0.0 {
        return false;
    }
    let m = n + salt;
    ((m + 1) as f64 * rate).floor() > (m as f64 * rate).floor()
}

/// Ends a request's `running` count and records its latency when dropped (a stream may end early).
struct Finish {
    state: Arc<State>,
    started: std::time::Instant,
}

impl Drop for Finish {
    fn drop(&mut self) {
        self.state.metrics.finished(self.started.elapsed());
    }
}

pub type Body = BoxBody<Bytes, std::io::Error>;

/// A response body fed from a channel; an `Err` item aborts the connection mid-stream.
struct ChannelBody(mpsc::Receiver<std::result::Result<Bytes, std::io::Error>>);

impl hyper::body::Body for ChannelBody {
    type Data = Bytes;
    type Error = std::io::Error;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<std::result::Result<Frame<Bytes>, std::io::Error>>> {
        self.0.poll_recv(cx).map(|o| o.map(|r| r.map(Frame::data)))
    }
}

/// A JSON answer with `status`.
fn full(status: StatusCode, body: Value) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from(body.to_string())).map_err(|e: Infallible| match e {}).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert("content-type", hyper::header::HeaderValue::from_static("application/json"));
    r
}
