//! `--network-latency-automatic`: AIPerf's TCP-handshake probes of the network round trip, one
//! thread per target (each `--url`'s host and port once), off the replay's runtime and threads.
//!
//! A probe opens a fresh TCP connection to the target's address (resolved once, so that the
//! probe times the handshake and not the name lookup; TLS is never started, as AIPerf's) and
//! times it to the end of the handshake. Probes run from time zero every interval (on absolute
//! deadlines; one that outlasts an interval skips the deadlines it missed) until the run has
//! drained; then a target short of [`MIN_SUCCESSES`] successful probes is probed back to back,
//! within [`TOP_UP_BUDGET`] for all targets, as AIPerf's top-up does.

use std::io;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use aiperf_core::results::network::{ProbeError, ProbeSample, TCP_CONNECT};

use super::clock::unix_now_ns;

/// Successful probes each target has at least, when the top-up can make them (AIPerf's
/// `AIPERF_NETWORK_LATENCY_MIN_SAMPLES` default).
pub const MIN_SUCCESSES: usize = 5;
/// Longest handshake a probe waits for (AIPerf's `CONNECT_TIMEOUT` default).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the top-up after the run may take, all targets together (AIPerf's
/// `COMPLETE_TOPUP_TIMEOUT` default).
pub const TOP_UP_BUDGET: Duration = Duration::from_secs(3);

/// One host and port probed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// The URL it comes from, as it may be shown (credentials redacted).
    pub shown_url: String,
    pub host: String,
    pub port: u16,
}

/// The targets of `urls` (given with their shown forms): each host and port once, in order.
/// A URL without a host gives none.
pub fn targets(urls: &[String], shown: &[String]) -> Vec<Target> {
    let mut out: Vec<Target> = Vec::new();
    for (i, url) in urls.iter().enumerate() {
        let Some((host, port)) = host_port(url) else { continue };
        if out.iter().any(|t| t.host == host && t.port == port) {
            continue;
        }
        out.push(Target { shown_url: shown.get(i).cloned().unwrap_or_else(|| url.clone()), host, port });
    }
    out
}

/// A URL's host and port, the scheme's default port (http 80, https 443) when it names none; a
/// URL without a scheme is taken as http.
fn host_port(url: &str) -> Option<(String, u16)> {
    let (scheme, rest) = url.split_once("://").unwrap_or(("http", url));
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let default = if scheme.eq_ignore_ascii_case("https") { 443 } else { 80 };
    let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
        let (h, after) = v6.split_once(']')?;
        (h, after.strip_prefix(':'))
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (hostport, None),
        }
    };
    if host.is_empty() {
        return None;
    }
    let port = match port {
        None | Some("") => default,
        Some(p) => p.parse().ok().filter(|&p| p > 0)?,
    };
    Some((host.to_owned(), port))
}

/// The probes of one target.
struct Collector {
    target: Target,
    /// The address resolved at the start; `None` resolves at each probe.
    addr: Option<SocketAddr>,
    samples: Vec<ProbeSample>,
    successes: usize,
}

impl Collector {
    fn new(target: Target) -> Collector {
        let addr = (target.host.as_str(), target.port).to_socket_addrs().ok().and_then(|mut a| a.next());
        Collector { target, addr, samples: Vec::new(), successes: 0 }
    }

    /// One probe, recorded whatever its outcome.
    fn probe(&mut self) {
        let timestamp_ns = u64::try_from(unix_now_ns()).unwrap_or(u64::MAX);
        let started = Instant::now();
        let connected = match self.addr {
            Some(a) => TcpStream::connect_timeout(&a, CONNECT_TIMEOUT),
            None => (self.target.host.as_str(), self.target.port)
                .to_socket_addrs()
                .and_then(|mut a| a.next().ok_or_else(|| io::Error::other("the host resolved to no address")))
                .and_then(|a| TcpStream::connect_timeout(&a, CONNECT_TIMEOUT)),
        };
        let (rtt_ns, error) = match connected {
            Ok(stream) => {
                let rtt = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
                drop(stream);
                (Some(rtt), None)
            }
            Err(e) => (None, Some(probe_error(&e))),
        };
        if rtt_ns.is_some() {
            self.successes += 1;
        }
        self.samples.push(ProbeSample {
            timestamp_ns,
            target_url: self.target.shown_url.clone(),
            target_host: self.target.host.clone(),
            target_port: self.target.port,
            probe_type: TCP_CONNECT,
            rtt_ns,
            success: rtt_ns.is_some(),
            error,
        });
    }

    /// Probes every `interval` until `stop` is dropped.
    fn run(mut self, interval: Duration, stop: &mpsc::Receiver<()>) -> Collector {
        let start = Instant::now();
        let mut ticks: u32 = 0;
        loop {
            self.probe();
            // The next deadline still ahead (one the probe outlasted is skipped).
            let elapsed = start.elapsed();
            let next = loop {
                ticks = ticks.saturating_add(1);
                let at = interval.saturating_mul(ticks);
                if at > elapsed || ticks == u32::MAX {
                    break at;
                }
            };
            match stop.recv_timeout(next.saturating_sub(start.elapsed())) {
                Err(RecvTimeoutError::Timeout) => {}
                Ok(()) | Err(RecvTimeoutError::Disconnected) => return self,
            }
        }
    }
}

/// AIPerf's `ErrorDetails` of a failed probe: the class Python raises for the same failure.
fn probe_error(e: &io::Error) -> ProbeError {
    let kind = match e.kind() {
        io::ErrorKind::ConnectionRefused => "ConnectionRefusedError",
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => "TimeoutError",
        io::ErrorKind::ConnectionReset => "ConnectionResetError",
        io::ErrorKind::ConnectionAborted => "ConnectionAbortedError",
        io::ErrorKind::PermissionDenied => "PermissionError",
        _ => "OSError",
    };
    ProbeError { kind: kind.to_owned(), message: e.to_string(), cause_chain: vec![kind.to_owned()] }
}

/// The probe threads of a run; dropping it stops them.
pub struct Prober {
    /// One per thread: dropped, it stops the thread.
    stops: Vec<mpsc::Sender<()>>,
    threads: Vec<JoinHandle<Collector>>,
    /// Targets whose thread did not start, probed only by the top-up.
    idle: Vec<Collector>,
}

impl Prober {
    /// Starts probing each target every `interval`.
    pub fn start(targets: Vec<Target>, interval: Duration) -> Prober {
        let mut prober = Prober { stops: Vec::new(), threads: Vec::new(), idle: Vec::new() };
        for target in targets {
            let (tx, rx) = mpsc::channel();
            let name = format!("rtt-probe {}:{}", target.host, target.port);
            let kept = target.clone();
            let spawned =
                std::thread::Builder::new().name(name).spawn(move || Collector::new(target).run(interval, &rx));
            match spawned {
                Ok(handle) => {
                    prober.stops.push(tx);
                    prober.threads.push(handle);
                }
                Err(e) => {
                    say!("warning: cannot start a network latency probe thread ({e}); probing after the run only");
                    prober.idle.push(Collector::new(kept));
                }
            }
        }
        prober
    }

    /// Stops the probes, tops up the targets short of [`MIN_SUCCESSES`] (unless the run was
    /// stopped: AIPerf's cancel skips the top-up) and returns every probe, in time order.
    pub fn finish(self, top_up: bool) -> Vec<ProbeSample> {
        let Prober { stops, threads, mut idle } = self;
        drop(stops);
        let mut collectors: Vec<Collector> = threads.into_iter().filter_map(|t| t.join().ok()).collect();
        collectors.append(&mut idle);
        let deadline = Instant::now() + TOP_UP_BUDGET;
        for c in collectors.iter_mut().filter(|_| top_up) {
            let mut attempts = 0;
            while c.successes < MIN_SUCCESSES && attempts < 2 * MIN_SUCCESSES && Instant::now() < deadline {
                attempts += 1;
                c.probe();
            }
        }
        let mut samples: Vec<ProbeSample> = collectors.into_iter().flat_map(|c| c.samples).collect();
        samples.sort_by_key(|s| s.timestamp_ns);
        samples
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_url_gives_its_host_and_port_or_the_schemes() {
        assert_eq!(host_port("http://127.0.0.1:8000"), Some(("127.0.0.1".into(), 8000)));
        assert_eq!(host_port("https://user:pw@api.example.com/v1"), Some(("api.example.com".into(), 443)));
        assert_eq!(host_port("http://[::1]:9/x"), Some(("::1".into(), 9)));
        assert_eq!(host_port("localhost:8000"), Some(("localhost".into(), 8000)));
        assert_eq!(host_port("http://host"), Some(("host".into(), 80)));
        assert_eq!(host_port("http://:80"), None);
        assert_eq!(host_port("http://h:0"), None);
        assert_eq!(host_port("http://h:99999"), None);
    }

    #[test]
    fn each_host_and_port_is_one_target() {
        let urls: Vec<String> =
            ["http://a:1", "http://u:p@a:1/v1", "http://a:2"].iter().map(|s| s.to_string()).collect();
        let shown: Vec<String> =
            ["http://a:1", "http://<redacted>@a:1/v1", "http://a:2"].iter().map(|s| s.to_string()).collect();
        let t = targets(&urls, &shown);
        assert_eq!(t.iter().map(|t| (t.host.as_str(), t.port)).collect::<Vec<_>>(), [("a", 1), ("a", 2)]);
    }

    #[test]
    fn probes_time_a_listener_and_record_a_refusal() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let target = Target { shown_url: format!("http://127.0.0.1:{port}"), host: "127.0.0.1".into(), port };
        let samples = Prober::start(vec![target], Duration::from_millis(20)).finish(true);
        assert!(samples.iter().filter(|s| s.success).count() >= MIN_SUCCESSES);
        assert!(samples.iter().all(|s| s.rtt_ns.is_some() && s.error.is_none() && s.probe_type == "tcp_connect"));
        assert!(samples.windows(2).all(|w| w[0].timestamp_ns <= w[1].timestamp_ns));
        drop(listener);
        // Nothing listens there any more: refused, a failed sample each, topped up 10 times.
        let gone = Target { shown_url: "x".into(), host: "127.0.0.1".into(), port };
        let failed = Prober::start(vec![gone.clone()], Duration::from_secs(60)).finish(true);
        assert_eq!(failed.len(), 1 + 2 * MIN_SUCCESSES);
        let e = failed[0].error.as_ref().unwrap();
        assert_eq!((e.kind.as_str(), failed[0].success, failed[0].rtt_ns), ("ConnectionRefusedError", false, None));
        // A stopped run is not topped up.
        assert_eq!(Prober::start(vec![gone], Duration::from_secs(60)).finish(false).len(), 1);
    }
}
