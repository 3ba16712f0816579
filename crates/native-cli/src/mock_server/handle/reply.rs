//! The last phase: the answer whole, or streamed in chunks by a task of its own, with the faults
//! picked for it.

use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Frame;
use hyper::{Response, StatusCode};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::admit::{Ask, hits};
use super::plan::Planned;
use super::response::{Body, full};
use super::slot::{Pace, Slot};
use crate::mock_server::answer::{WORDS, answer_word};
use crate::mock_server::state::State;

/// A stream's bytes are handed to the connection in pieces of about this size.
pub const STREAM_PIECE_BYTES: usize = 64 << 10;

/// The whole answer, after the time its tokens take.
pub(super) async fn whole(state: &State, ask: &Ask, planned: Planned, slot: Option<Slot>) -> Response<Body> {
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
pub(super) fn stream(state: &State, ask: &Ask, planned: Planned, slot: Option<Slot>) -> Response<Body> {
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
