//! What a connection tells about each request it carries, for AIPerf's `http_req_*` metrics:
//! how long it took to open (name lookup, TCP, TLS, a proxy's tunnel), how long the name lookup
//! took, whether a request found it already open (reused), and when the last request byte was
//! handed to it. [`Traced`] wraps the client's connector; every connection it makes carries a
//! [`ConnTrace`] that the client finds in each response's extensions.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use hyper::Uri;
use hyper_util::client::legacy::connect::Connected;
use hyper_util::client::legacy::connect::dns::{GaiResolver, Name};
use tower_service::Service;

use super::watched::{Watch, Watched};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

tokio::task_local! {
    /// Where the name lookup of the connection being opened records its duration (ns).
    static LOOKUP_NS: Arc<AtomicU64>;
}

/// One connection's timings, shared by the connection and the responses it carries.
#[derive(Debug)]
pub struct ConnTrace {
    /// From the connector's call to an open connection (lookup, TCP, proxy tunnel, TLS).
    connect_ns: u64,
    /// The name lookup's share of it (0: the host was an IP address, nothing was looked up).
    lookup_ns: u64,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Requests that have taken this connection so far.
    taken: u64,
    /// When a byte was last written to it.
    last_write: Option<Instant>,
}

/// What one request learned from its connection, once its response arrived.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Taken {
    /// The connection carried an earlier request.
    pub reused: bool,
    /// Opening the connection (0 when reused).
    pub connect_ns: u64,
    /// The name lookup while opening it (0 when reused or none was needed).
    pub lookup_ns: u64,
    /// When the request's last byte was written (`None`: nothing was written through the trace).
    pub last_write: Option<Instant>,
}

/// The handle a response carries in its extensions.
#[derive(Clone, Debug)]
pub struct ConnHandle(Arc<ConnTrace>);

impl ConnHandle {
    /// Called once per request when its response arrived: whether the connection was reused,
    /// its opening cost when it was not, and when the request was last written to it.
    pub fn take(&self) -> Taken {
        let mut s = self.0.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let reused = s.taken > 0;
        s.taken += 1;
        let (connect_ns, lookup_ns) = if reused { (0, 0) } else { (self.0.connect_ns, self.0.lookup_ns) };
        Taken { reused, connect_ns, lookup_ns, last_write: s.last_write }
    }
}

/// A connector whose connections carry a [`ConnTrace`].
#[derive(Clone, Debug)]
pub struct Traced<C>(pub C);

impl<C> Service<Uri> for Traced<C>
where
    C: Service<Uri> + Send + 'static,
    C::Response: Send + 'static,
    C::Error: Into<BoxError>,
    C::Future: Send + 'static,
{
    type Response = TracedStream<C::Response>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.0.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, dst: Uri) -> Self::Future {
        let start = Instant::now();
        let lookup = Arc::new(AtomicU64::new(0));
        let connecting = LOOKUP_NS.scope(lookup.clone(), self.0.call(dst));
        Box::pin(async move {
            let io = connecting.await.map_err(Into::into)?;
            let trace = ConnTrace {
                connect_ns: u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX),
                lookup_ns: lookup.load(Ordering::Relaxed),
                state: Mutex::new(State::default()),
            };
            Ok(Watched::new(io, ConnHandle(Arc::new(trace))))
        })
    }
}

/// A connection made by [`Traced`]: notes when bytes are written to it.
pub type TracedStream<T> = Watched<T, ConnHandle>;

impl Watch for ConnHandle {
    fn connected(&self, under: Connected) -> Connected {
        under.extra(self.clone())
    }

    fn wrote(&self, n: usize) {
        if n > 0 {
            let mut s = self.0.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            s.last_write = Some(Instant::now());
        }
    }
}

/// The system's name lookup (`getaddrinfo`), timed into the connection being opened.
#[derive(Clone, Debug)]
pub struct TimedResolver(GaiResolver);

impl Default for TimedResolver {
    fn default() -> Self {
        TimedResolver(GaiResolver::new())
    }
}

impl Service<Name> for TimedResolver {
    type Response = <GaiResolver as Service<Name>>::Response;
    type Error = <GaiResolver as Service<Name>>::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let start = Instant::now();
        let lookup = self.0.call(name);
        Box::pin(async move {
            let addrs = lookup.await;
            let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
            // Outside a traced connect (a proxy's own lookup) there is nowhere to record it.
            let _ = LOOKUP_NS.try_with(|l| l.fetch_add(ns, Ordering::Relaxed));
            addrs
        })
    }
}
