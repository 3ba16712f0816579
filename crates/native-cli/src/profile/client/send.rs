//! One request sent and its answer timed, byte by byte: streaming (SSE) or not, with the raw
//! exchange kept for `--export-level raw`.

use aiperf_core::replay::sse::{ChunkError, SseEvent, SseParser, StreamItem, interpret_chunk, interpret_response};
use aiperf_core::results::raw::{Responses, SseMessage};
use aiperf_core::results::record::{HttpTiming, RecordError, ServerUsage};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, Request};

use super::endpoint::Endpoint;
use super::errors::{describe, err, too_large};
use crate::io::http::is_credential_header;
use crate::io::http::trace::ConnHandle;
use crate::io::http::{HttpClient, chain, tls};
use crate::profile::transport::{Clock, Exchange, OnFirstToken, Outgoing, RawCapture};

/// Sends one request and measures the answer; never fails, errors land in [`Exchange::error`].
/// With `raw`, the exchange also keeps what was sent and what came back ([`RawCapture`]).
pub async fn send(client: &HttpClient, ep: &Endpoint, out: Outgoing, clock: &Clock, raw: bool) -> Exchange {
    let mut ex = Exchange::default();
    let payload = raw.then(|| out.body.clone());
    ex.chunk_ns.reserve(64);
    ex.text.reserve(512);
    let body_bytes = out.body.len() as u64;
    let mut req = Request::new(Full::new(out.body));
    *req.method_mut() = Method::POST;
    *req.uri_mut() = ep.uri.clone();
    let mut headers = ep.headers.clone();
    // Ids are built from ASCII digits, hex and trace ids; one that is no valid header value
    // (a session id with a newline) is left out rather than failing the request.
    if let Ok(v) = HeaderValue::from_str(&out.request_id) {
        headers.insert(HeaderName::from_static("x-request-id"), v);
    }
    if let Ok(v) = HeaderValue::from_str(&out.correlation_id) {
        headers.insert(ep.session_header.clone(), v.clone());
        headers.insert(HeaderName::from_static("x-session-affinity"), v);
    }
    if let Some(payload) = payload {
        ex.raw = Some(Box::new(RawCapture { payload, headers: shown_headers(&headers), ..RawCapture::default() }));
    }
    *req.headers_mut() = headers;
    let timeout = ep.timeout;
    let mut first = out.first_token;
    let res =
        tokio::time::timeout(timeout, exchange(client, req, clock, ep.max_response_bytes, &mut ex, &mut first)).await;
    ex.end_ns = clock.now_ns();
    // A server may volunteer usage on content chunks: it counts only when it was asked for.
    if !ep.per_chunk_usage {
        ex.usage.first_chunk_tokens = None;
    }
    if res.is_err() && ex.error.is_none() {
        ex.error = err("timeout", format!("no complete answer within {:.3} s", timeout.as_secs_f64()));
    }
    if let Some(h) = &mut ex.http {
        h.bytes_sent = body_bytes;
    }
    ex
}

async fn exchange(
    client: &HttpClient,
    req: Request<Full<Bytes>>,
    clock: &Clock,
    limit: usize,
    ex: &mut Exchange,
    first: &mut OnFirstToken,
) {
    ex.sent_ns = clock.now_ns();
    let resp = match client.request(req).await {
        Ok(r) => r,
        Err(e) => {
            let tls = tls::hint(&e).is_some();
            let kind = if tls {
                "tls_error"
            } else if e.is_connect() {
                "connection_error"
            } else {
                "request_error"
            };
            ex.error = err(kind, describe(&e));
            return;
        }
    };
    ex.first_byte_ns = Some(clock.now_ns());
    ex.http = resp.extensions().get::<ConnHandle>().map(|c| {
        let t = c.take();
        HttpTiming {
            reused: t.reused,
            connect_ns: t.connect_ns,
            dns_lookup_ns: t.lookup_ns,
            send_end_ns: t.last_write.map_or(ex.sent_ns, |w| clock.ns_of(w).max(ex.sent_ns)),
            ..HttpTiming::default()
        }
    });
    let status = resp.status();
    if let Some(h) = &mut ex.http {
        h.status = Some(status.as_u16());
    }
    let mut raw_content_type = None;
    if let Some(r) = ex.raw.as_deref_mut() {
        r.status = Some(status.as_u16());
        raw_content_type = resp.headers().get(CONTENT_TYPE).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    }
    ex.mock_ttft_ms = resp.headers().get("x-aiperf-mock-ttft-ms").and_then(|v| v.to_str().ok()?.parse().ok());
    let is_sse = resp
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let mut body = resp.into_body();
    if !status.is_success() {
        let mut text = Vec::new();
        while let Some(Ok(frame)) = body.frame().await {
            if let Some(d) = frame.data_ref() {
                text.extend_from_slice(d);
            }
            if text.len() > 2048 {
                break;
            }
        }
        if let Some(r) = ex.raw.as_deref_mut() {
            r.responses = Responses::Body {
                perf_ns: clock.now_ns(),
                text: String::from_utf8_lossy(&text).into_owned(),
                content_type: raw_content_type,
            };
        }
        let snippet: String = String::from_utf8_lossy(&text).chars().take(500).collect();
        ex.error = err("http_status", format!("HTTP {}: {}", status.as_u16(), snippet.trim()));
        return;
    }
    ex.streaming = is_sse;
    let mut parser = SseParser::with_limit(limit);
    let mut failed = false;
    let mut whole = Vec::new();
    let mut done = false;
    // Bytes of the body read, which `--export-level raw` keeps until the record is written.
    let mut kept = 0usize;
    loop {
        let frame = match body.frame().await {
            None => break,
            Some(Ok(f)) => f,
            Some(Err(e)) => {
                ex.error = err("stream_error", format!("connection broken mid-response: {}", chain(&e)));
                return;
            }
        };
        let Some(data) = frame.data_ref() else { continue };
        let now = clock.now_ns();
        if let Some(h) = &mut ex.http {
            h.body_first_ns.get_or_insert(now);
            h.body_last_ns = Some(now);
            h.bytes_received += data.len() as u64;
            h.chunks_received += 1;
        }
        if ex.raw.is_some() {
            kept = kept.saturating_add(data.len());
            if kept > limit {
                ex.error = too_large(limit, "the response kept for --export-level raw");
                return;
            }
        }
        if !is_sse {
            if whole.len().saturating_add(data.len()) > limit {
                ex.error = too_large(limit, "the response body");
                return;
            }
            whole.extend_from_slice(data);
            continue;
        }
        parser.feed_with(data, &mut |ev| on_event(ev, now, ex, &mut done, &mut failed, first));
        if failed {
            return;
        }
        if parser.overflowed() {
            ex.error = too_large(limit, "an SSE line or event");
            return;
        }
        if ex.text.len() > limit {
            ex.error = too_large(limit, "the streamed text");
            return;
        }
    }
    if is_sse {
        let now = clock.now_ns();
        parser.finish_with(&mut |ev| on_event(ev, now, ex, &mut done, &mut failed, first));
        if failed {
            return;
        }
        if !done && ex.finish_reason.is_none() {
            ex.error = err("incomplete_stream", "the stream ended without a finish_reason or [DONE]");
        }
    } else {
        let text = String::from_utf8_lossy(&whole);
        if let Some(r) = ex.raw.as_deref_mut() {
            let perf_ns = ex.http.and_then(|h| h.body_last_ns).unwrap_or_else(|| clock.now_ns());
            r.responses = Responses::Body { perf_ns, text: text.clone().into_owned(), content_type: raw_content_type };
        }
        match interpret_response(&text) {
            Ok(c) => {
                ex.text = c.text.into_owned();
                ex.finish_reason = c.finish_reason;
                if let Some(u) = c.usage {
                    merge_usage(&mut ex.usage, u);
                }
            }
            Err(e) => ex.error = Some(chunk_error(e)),
        }
    }
}

/// The request's headers as the raw records file shows them: a credential's value (by the
/// header's name: authorization, API keys, tokens, cookies, …) is `<redacted>`.
fn shown_headers(headers: &HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(k, v)| {
            let value = if is_credential_header(k.as_str()) {
                "<redacted>".to_owned()
            } else {
                String::from_utf8_lossy(v.as_bytes()).into_owned()
            };
            (k.as_str().to_owned(), value)
        })
        .collect()
}

fn chunk_error(e: ChunkError) -> RecordError {
    let kind = match e {
        ChunkError::Json(_) => "malformed_response",
        _ => "server_error",
    };
    RecordError { kind: kind.into(), message: e.to_string() }
}

fn merge_usage(into: &mut ServerUsage, u: aiperf_core::replay::sse::Usage) {
    into.prompt_tokens = u.prompt_tokens.or(into.prompt_tokens);
    into.completion_tokens = u.completion_tokens.or(into.completion_tokens);
    into.cached_tokens = u.cached_tokens.or(into.cached_tokens);
}

/// Applies one parsed event; sets `failed` when the exchange failed; tells `first` of the first
/// generated text.
fn on_event(ev: &SseEvent, now: u64, ex: &mut Exchange, done: &mut bool, failed: &mut bool, first: &mut OnFirstToken) {
    if let Some(r) = ex.raw.as_deref_mut() {
        let message = SseMessage { perf_ns: now, event: ev.event.clone(), data: ev.data.clone() };
        match &mut r.responses {
            Responses::Sse(messages) => messages.push(message),
            other => *other = Responses::Sse(vec![message]),
        }
    }
    if *done || *failed {
        return;
    }
    match interpret_chunk(&ev.data) {
        Ok(StreamItem::Done) => *done = true,
        Ok(StreamItem::Chunk(c)) => {
            if !c.text.is_empty() {
                if ex.chunk_ns.is_empty() {
                    first.fire();
                }
                ex.chunk_ns.push(now);
                ex.text.push_str(&c.text);
            }
            if c.finish_reason.is_some() {
                ex.finish_reason = c.finish_reason;
            }
            if let Some(u) = c.usage {
                // AIPerf's first content chunk's count: the first chunk with text and usage.
                if !c.text.is_empty() && ex.usage.first_chunk_tokens.is_none() {
                    ex.usage.first_chunk_tokens = u.completion_tokens;
                }
                merge_usage(&mut ex.usage, u);
            }
        }
        Err(e) => {
            ex.error = Some(chunk_error(e));
            *failed = true;
        }
    }
}
