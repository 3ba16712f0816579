//! The HTTP transport: one pooled HTTP/1.1 client (rustls for `https://`), sending a prepared
//! body and timing every byte of the answer, streaming (SSE) or not.
//!
//! `endpoint`: where and how requests go ([`Endpoint`]); `errors`: what a failed request records;
//! `send`: one request and its answer ([`send()`]); `mod.rs`: the connection pool
//! ([`HttpTransport`], [`Sticky`]) and the warm-up of its connections.

mod endpoint;
mod errors;
mod send;

pub use endpoint::{DEFAULT_MAX_RESPONSE_BYTES, Endpoint, join_url};
pub use send::send;

use errors::{describe, err};

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{CONTENT_TYPE, HeaderMap};
use hyper::{Request, Uri};

use super::transport::{Clock, Exchange, Outgoing, Transport};
use crate::io::http::trace::ConnHandle;
use crate::io::http::{Connector, HttpClient, client_on, tls};

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
