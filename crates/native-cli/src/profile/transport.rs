//! The boundary between deciding and moving bytes: a [`Transport`] sends one prepared body and
//! reports what came back, timed on the run's [`Clock`]. HTTP is one implementation
//! ([`super::client::HttpTransport`]); the tests use an in-memory one.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aiperf_core::results::record::{RecordError, ServerUsage};
use bytes::Bytes;

/// Nanoseconds since the benchmark start.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    pub base: Instant,
}

impl Clock {
    /// A clock whose zero is now.
    pub fn start() -> Clock {
        Clock { base: Instant::now() }
    }

    /// Nanoseconds since time zero; 0 before it.
    pub fn now_ns(&self) -> u64 {
        u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// An instant as nanoseconds since time zero; 0 before it.
    pub fn ns_of(&self, t: Instant) -> u64 {
        u64::try_from(t.saturating_duration_since(self.base).as_nanos()).unwrap_or(u64::MAX)
    }

    /// How long until `deadline_ns` (zero once it is reached): exact before time zero too, where
    /// [`Clock::now_ns`] reads 0.
    pub fn until(&self, deadline_ns: u64) -> Duration {
        self.base
            .checked_add(Duration::from_nanos(deadline_ns))
            .map_or(Duration::MAX, |at| at.saturating_duration_since(Instant::now()))
    }
}

/// What came back for one request.
#[derive(Clone, Debug, Default)]
pub struct Exchange {
    pub sent_ns: u64,
    pub first_byte_ns: Option<u64>,
    /// Arrival of every chunk that carried generated text.
    pub chunk_ns: Vec<u64>,
    pub text: String,
    pub usage: ServerUsage,
    pub finish_reason: Option<String>,
    pub streaming: bool,
    pub end_ns: u64,
    pub error: Option<RecordError>,
    /// The TTFT a mock server says it was programmed with (`x-aiperf-mock-ttft-ms`).
    pub mock_ttft_ms: Option<f64>,
    /// The exchange as the connection saw it, once a response arrived.
    pub http: Option<aiperf_core::results::record::HttpTiming>,
    /// `--export-level raw` only: what was sent and what came back, for the raw records file.
    pub raw: Option<Box<RawCapture>>,
}

/// What `--export-level raw` keeps of one exchange until its record is written: the body sent
/// (the prepared body itself, not a copy), the headers (credentials masked), the status and
/// the responses.
#[derive(Clone, Debug, Default)]
pub struct RawCapture {
    pub payload: Bytes,
    pub headers: Vec<(String, String)>,
    pub status: Option<u16>,
    pub responses: aiperf_core::results::raw::Responses,
}

/// One request to send: its body and its identity.
#[derive(Clone, Debug)]
pub struct Outgoing {
    pub body: Bytes,
    /// Unique per request (`X-Request-ID`).
    pub request_id: String,
    /// The same for every request of a session or conversation (AIPerf's `X-Correlation-ID`,
    /// also sent as `X-Session-Affinity`), so a router keeps the session on one replica.
    pub correlation_id: String,
    /// Which `--url` it goes to (its session's: sessions are spread round robin).
    pub url_index: u32,
    /// Whether it is the last turn its session run sends.
    pub last_turn: bool,
    /// Told when the first generated text arrives (`--prefill-concurrency`).
    pub first_token: OnFirstToken,
}

/// Called once, when the first chunk with generated text arrives: the end of the request's
/// prefill, which frees its `--prefill-concurrency` slot. Empty when prefill is not limited.
#[derive(Clone, Default)]
pub struct OnFirstToken(Option<Arc<dyn Fn() + Send + Sync>>);

impl OnFirstToken {
    pub fn new(f: impl Fn() + Send + Sync + 'static) -> OnFirstToken {
        OnFirstToken(Some(Arc::new(f)))
    }

    /// Calls it the first time only.
    pub fn fire(&mut self) {
        if let Some(f) = self.0.take() {
            f();
        }
    }
}

impl std::fmt::Debug for OnFirstToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "OnFirstToken(set)" } else { "OnFirstToken(none)" })
    }
}

/// Sends requests somewhere and times the answers.
pub trait Transport: Send + Sync + 'static {
    /// Sends one request; never fails: errors land in [`Exchange::error`].
    fn send(&self, req: Outgoing, clock: Clock) -> impl Future<Output = Exchange> + Send;

    /// Opens up to `connections` connections before time zero (TCP and TLS handshakes off the
    /// clock), spread over the URLs; returns per URL (by index) how many are ready and how many
    /// attempts reached a server at all. Transports without connections have nothing to do and
    /// return `None`.
    fn warm(&self, connections: usize) -> impl Future<Output = Option<Vec<(usize, usize)>>> + Send {
        let _ = connections;
        std::future::ready(None)
    }

    /// The target's clock: its HTTP `Date` header in whole seconds since the Unix epoch, when
    /// it sends one (for the clock offset of a shard).
    fn server_date(&self) -> impl Future<Output = Option<u64>> + Send {
        std::future::ready(None)
    }
}
