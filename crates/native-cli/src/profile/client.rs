//! The HTTP transport: one pooled HTTP/1.1 client (rustls for `https://`), sending a prepared
//! body and timing every byte of the answer, streaming (SSE) or not.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aiperf_core::replay::sse::{ChunkError, SseEvent, SseParser, StreamItem, interpret_chunk, interpret_response};
use aiperf_core::results::raw::{Responses, SseMessage};
use aiperf_core::results::record::{HttpTiming, RecordError, ServerUsage};
use anyhow::{Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, USER_AGENT};
use hyper::{Method, Request, Uri};

use super::plan::secrets::is_credential_header;
use super::transport::{Clock, Exchange, OnFirstToken, Outgoing, RawCapture, Transport};
use crate::io::http::trace::ConnHandle;
use crate::io::http::{Connector, HttpClient, chain, client_on, tls};

/// Where and how requests go.
#[derive(Clone, Debug)]
pub struct Endpoint {
    pub uri: Uri,
    pub headers: HeaderMap,
    pub timeout: Duration,
    /// Largest body, SSE event or streamed text accepted for one response.
    pub max_response_bytes: usize,
    /// The header carrying the session's correlation id (`--session-header`).
    pub session_header: HeaderName,
    /// Whether the first content chunk's usage counts its tokens (`--per-chunk-usage`).
    pub per_chunk_usage: bool,
}

impl Endpoint {
    /// `url` + `path`, JSON content type, the API key as a bearer token, and user headers.
    pub fn new(
        url: &str,
        path: &str,
        api_key: Option<&str>,
        headers: &[(String, String)],
        timeout: Duration,
    ) -> Result<Endpoint> {
        let full = join_url(url, path);
        let uri: Uri = full.parse().with_context(|| format!("invalid URL {full}"))?;
        anyhow::ensure!(
            matches!(uri.scheme_str(), Some("http" | "https")),
            "URL {full} must start with http:// or https://"
        );
        let mut map = HeaderMap::new();
        map.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        map.insert(USER_AGENT, HeaderValue::from_static(concat!("aiperf-cli/", env!("CARGO_PKG_VERSION"))));
        if let Some(key) = api_key {
            let mut v =
                HeaderValue::from_str(&format!("Bearer {key}")).context("the API key is not a valid header value")?;
            v.set_sensitive(true);
            map.insert(AUTHORIZATION, v);
        }
        for (k, v) in headers {
            let name =
                HeaderName::from_bytes(k.trim().as_bytes()).with_context(|| format!("invalid header name '{k}'"))?;
            let mut value =
                HeaderValue::from_str(v.trim()).with_context(|| format!("invalid value for header '{k}'"))?;
            value.set_sensitive(true);
            map.insert(name, value);
        }
        Ok(Endpoint {
            uri,
            headers: map,
            timeout,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            session_header: HeaderName::from_static("x-correlation-id"),
            per_chunk_usage: false,
        })
    }

    /// The same endpoint reading the first content chunk's usage as its token count.
    pub fn per_chunk_usage(self, per_chunk_usage: bool) -> Endpoint {
        Endpoint { per_chunk_usage, ..self }
    }

    /// The same endpoint sending the correlation id in header `name`.
    pub fn session_header(self, name: &str) -> Result<Endpoint> {
        let session_header = HeaderName::from_bytes(name.trim().as_bytes())
            .with_context(|| format!("--session-header '{name}' is not a valid header name"))?;
        Ok(Endpoint { session_header, ..self })
    }

    /// The same endpoint with another response size limit.
    pub fn max_response_bytes(self, max_response_bytes: usize) -> Endpoint {
        Endpoint { max_response_bytes, ..self }
    }
}

/// Default response size limit (`--max-response-bytes`): 64 MiB.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 64 << 20;

fn too_large(limit: usize, what: &str) -> Option<RecordError> {
    err("response_too_large", format!("{what} exceeded {limit} bytes (--max-response-bytes raises the limit)"))
}

fn err(kind: &str, message: impl Into<String>) -> Option<RecordError> {
    Some(RecordError { kind: kind.into(), message: message.into() })
}

/// Requests over HTTP to one endpoint, or to several (`--url` repeated): a request goes to
/// `endpoints[url_index]`.
#[derive(Clone, Debug)]
pub struct HttpTransport {
    pub client: HttpClient,
    pub endpoints: Vec<Endpoint>,
    /// `--export-level raw`: each exchange keeps its body, headers and responses.
    pub raw: bool,
    /// `--connection-reuse-strategy sticky-user-sessions`: a connection per session.
    pub sticky: Option<Sticky>,
}

/// AIPerf's `sticky-user-sessions`: each session (its correlation id) sends through a client of
/// its own, so all its turns go over one connection that no other session uses. The client is
/// made at the session's first request and dropped, closing the connection, after its last
/// turn, or after a turn that failed or was cancelled (the connection may be unusable).
#[derive(Clone)]
pub struct Sticky {
    connector: Connector,
    leases: Arc<Mutex<HashMap<String, HttpClient>>>,
}

impl std::fmt::Debug for Sticky {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sticky")
    }
}

impl Sticky {
    pub fn new(connector: Connector) -> Sticky {
        Sticky { connector, leases: Arc::default() }
    }

    /// The session's client, made on its first request.
    fn lease(&self, session: &str) -> HttpClient {
        let mut leases = self.leases.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        leases.entry(session.to_owned()).or_insert_with(|| client_on(self.connector.clone(), true)).clone()
    }
}

/// Gives a session's client back when dropped, unless the session goes on with it.
struct Release {
    leases: Arc<Mutex<HashMap<String, HttpClient>>>,
    session: String,
    keep: bool,
}

impl Drop for Release {
    fn drop(&mut self) {
        if !self.keep {
            self.leases.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&self.session);
        }
    }
}

impl Transport for HttpTransport {
    async fn send(&self, req: Outgoing, clock: Clock) -> Exchange {
        let n = self.endpoints.len().max(1);
        match self.endpoints.get(req.url_index as usize % n) {
            Some(ep) => match &self.sticky {
                Some(sticky) => {
                    let client = sticky.lease(&req.correlation_id);
                    let mut release =
                        Release { leases: sticky.leases.clone(), session: req.correlation_id.clone(), keep: false };
                    let last = req.last_turn;
                    let ex = send(&client, ep, req, &clock, self.raw).await;
                    release.keep = !last && ex.error.is_none();
                    ex
                }
                None => send(&self.client, ep, req, &clock, self.raw).await,
            },
            None => Exchange {
                error: err("invalid_request", "no endpoint to send to"),
                sent_ns: clock.now_ns(),
                end_ns: clock.now_ns(),
                ..Exchange::default()
            },
        }
    }

    /// Sends `connections` concurrent `GET /v1/models` (spread over the endpoints like the
    /// sessions: at least one each) and reads each answer whole, so that the pool keeps that many
    /// open, kept-alive connections, TCP and TLS handshakes done (any status will do). The first
    /// failure of each endpoint is printed, with a hint when TLS refused it.
    async fn warm(&self, connections: usize) -> Option<Vec<(usize, usize)>> {
        let per = connections.div_ceil(self.endpoints.len().max(1)).max(1);
        let mut set = tokio::task::JoinSet::new();
        for (i, ep) in self.endpoints.iter().enumerate() {
            let (client, ep) = (self.client.clone(), ep.clone());
            set.spawn(async move { (i, warm_endpoint(&client, &ep, per).await) });
        }
        let mut per_url = vec![(0, 0); self.endpoints.len()];
        while let Some(r) = set.join_next().await {
            if let Ok((i, w)) = r
                && let Some(slot) = per_url.get_mut(i)
            {
                *slot = (w.ready, w.reached);
            }
        }
        Some(per_url)
    }

    /// The `Date` header of a `GET /v1/models` (any status will do).
    async fn server_date(&self) -> Option<u64> {
        let ep = self.endpoints.first()?;
        let headers = get_headers(&self.client, models_uri(ep)?, ep.headers.clone()).await?;
        let date = httpdate::parse_http_date(headers.get(hyper::header::DATE)?.to_str().ok()?).ok()?;
        date.duration_since(std::time::UNIX_EPOCH).ok().map(|d| d.as_secs())
    }
}

/// The URL of an endpoint: `path` joined to the base URL's path with one `/`, as AIPerf joins
/// them (`aiohttp_transport._dedup_path_overlap`): a base that already ends with the whole path
/// is kept (the full endpoint URL given as `--url`), and a base ending in `/v1` takes a path
/// starting with `v1/` without doubling it (`-u http://h:8000/v1` → `http://h:8000/v1/chat/completions`).
/// A query or fragment of the base stays at the end.
pub fn join_url(base: &str, path: &str) -> String {
    let (base, tail) = match base.find(['?', '#']) {
        Some(i) => base.split_at(i),
        None => (base, ""),
    };
    let base = base.trim_end_matches('/');
    let mut sub = path.trim_start_matches('/');
    // The path part of the base: what follows `scheme://authority`.
    let base_path = base.split_once("://").map_or(base, |(_, rest)| rest.find('/').map_or("", |i| &rest[i..]));
    let joined = if sub.is_empty() || base_path.ends_with(&format!("/{sub}")) {
        base.to_owned()
    } else {
        if base_path.ends_with("/v1") && sub.starts_with("v1/") {
            sub = &sub[3..];
        }
        format!("{base}/{sub}")
    };
    format!("{joined}{tail}")
}

/// `GET /v1/models` on the endpoint's server.
fn models_uri(ep: &Endpoint) -> Option<Uri> {
    let authority = ep.uri.authority()?;
    let scheme = ep.uri.scheme_str().unwrap_or("http");
    format!("{scheme}://{authority}/v1/models").parse::<Uri>().ok()
}

/// Sends a GET and reads the answer to its end (bounded to 1 MiB, 10 s) so that the connection
/// is reusable; returns the answer's headers.
async fn get_headers(client: &HttpClient, uri: Uri, mut headers: HeaderMap) -> Option<HeaderMap> {
    headers.remove(CONTENT_TYPE);
    let mut req = Request::new(Full::new(Bytes::new()));
    *req.uri_mut() = uri;
    *req.headers_mut() = headers;
    let answer = async {
        let resp = client.request(req).await.ok()?;
        taken(&resp);
        let (parts, mut body) = resp.into_parts();
        let mut read = 0usize;
        while let Some(Ok(f)) = body.frame().await {
            read += f.data_ref().map_or(0, Bytes::len);
            if read > 1 << 20 {
                return None;
            }
        }
        Some(parts.headers)
    };
    tokio::time::timeout(Duration::from_secs(10), answer).await.ok().flatten()
}

/// Marks the response's connection as having carried a request, so that the next one on it
/// counts as reused.
fn taken<B>(resp: &hyper::Response<B>) {
    if let Some(c) = resp.extensions().get::<ConnHandle>() {
        c.take();
    }
}

/// [`HttpTransport::warm`] for one endpoint.
async fn warm_endpoint(client: &HttpClient, ep: &Endpoint, connections: usize) -> Warmed {
    let Some(uri) = models_uri(ep) else { return Warmed::default() };
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..connections {
        let (client, uri, mut headers) = (client.clone(), uri.clone(), ep.headers.clone());
        headers.remove(CONTENT_TYPE);
        set.spawn(async move {
            let mut req = Request::new(Full::new(Bytes::new()));
            *req.uri_mut() = uri;
            *req.headers_mut() = headers;
            // An error carries whether a server was reached: only a failed connection (refused,
            // unreachable, no such host) means nothing is there; a TLS refusal or a bad answer
            // come from a server.
            let answer = async {
                let resp = client.request(req).await.map_err(|e| {
                    let reached = !e.is_connect() || tls::hint(&e).is_some();
                    (describe(&e), reached)
                })?;
                taken(&resp);
                let mut body = resp.into_body();
                let mut read = 0usize;
                // Read the answer to its end (bounded) so that the connection is reusable.
                while let Some(Ok(f)) = body.frame().await {
                    read += f.data_ref().map_or(0, Bytes::len);
                    if read > 1 << 20 {
                        return Err(("the answer to GET /v1/models is larger than 1 MiB".to_owned(), true));
                    }
                }
                Ok(())
            };
            tokio::time::timeout(Duration::from_secs(10), answer)
                .await
                .unwrap_or_else(|_| Err(("no answer within 10 s".to_owned(), true)))
        });
    }
    let (mut w, mut first_error) = (Warmed::default(), None);
    while let Some(r) = set.join_next().await {
        match r {
            Ok(Ok(())) => {
                w.ready += 1;
                w.reached += 1;
            }
            Ok(Err((e, reached))) => {
                w.reached += usize::from(reached);
                first_error.get_or_insert(e);
            }
            Err(_) => {}
        }
    }
    if let Some(e) = first_error {
        let (scheme, authority) =
            (ep.uri.scheme_str().unwrap_or("http"), ep.uri.authority().map_or("", |a| a.as_str()));
        say!("warning: cannot open a connection to {scheme}://{authority} before time zero: {e}");
    }
    w
}

/// What warming one endpoint's connections gave.
#[derive(Clone, Copy, Debug, Default)]
struct Warmed {
    /// Connections ready for the run (answered).
    ready: usize,
    /// Attempts that reached a server (answered, refused TLS, or answered badly).
    reached: usize,
}

/// An error of the client, its whole chain, with the TLS hint first when TLS caused it.
fn describe(e: &hyper_util::client::legacy::Error) -> String {
    match tls::hint(e) {
        Some(h) => format!("{h} [{}]", chain(e)),
        None => chain(e),
    }
}

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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::join_url;

    #[test]
    fn urls_join_like_aiperf() {
        let chat = "/v1/chat/completions";
        assert_eq!(join_url("http://h:8000", chat), "http://h:8000/v1/chat/completions");
        assert_eq!(join_url("http://h:8000/", "v1/chat/completions"), "http://h:8000/v1/chat/completions");
        assert_eq!(join_url("http://h:8000/v1", chat), "http://h:8000/v1/chat/completions");
        assert_eq!(join_url("http://h:8000/v1/", chat), "http://h:8000/v1/chat/completions");
        assert_eq!(join_url("http://h:8000/v1/chat/completions", chat), "http://h:8000/v1/chat/completions");
        assert_eq!(join_url("https://h/proxy/openai", chat), "https://h/proxy/openai/v1/chat/completions");
        assert_eq!(join_url("http://h:8000/v1?key=1", "/v1/completions"), "http://h:8000/v1/completions?key=1");
        assert_eq!(join_url("http://h:8000/v1", "/v1"), "http://h:8000/v1");
        assert_eq!(join_url("http://h:8000/x", ""), "http://h:8000/x");
    }
}
