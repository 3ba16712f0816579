//! Proxies from the environment, as curl reads them: `HTTPS_PROXY` for `https://` URLs,
//! `HTTP_PROXY` for `http://` ones, `ALL_PROXY` for both, `NO_PROXY` for exceptions (domains and
//! their subdomains, IP addresses and networks, `*`), upper or lower case. `https://` targets go
//! through an HTTP `CONNECT` tunnel (TLS stays end to end); `http://` targets are forwarded (the
//! request carries the absolute URL). Proxy credentials (`http://user:pass@proxy:3128`) are sent
//! as `Proxy-Authorization`. Loopback targets (`localhost`, `127.0.0.0/8`, `::1`) never go
//! through a proxy (as in Go's `net/http`). The proxy itself is spoken to in plain HTTP.

use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper::Uri;
use hyper::header::HeaderValue;
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::legacy::connect::{Connected, HttpConnector};
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tower_service::Service;

use super::watched::{Watch, Watched};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The proxy rules of the environment.
#[derive(Clone)]
pub struct Proxies(Arc<Matcher>);

impl std::fmt::Debug for Proxies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Proxies")
    }
}

/// Where a connection to a URL goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    Direct,
    /// Through an HTTP `CONNECT` tunnel at this proxy (`https://` targets).
    Tunnel(Uri),
    /// To this proxy, which forwards the request (`http://` targets).
    Forward(Uri),
}

impl Proxies {
    /// The rules of the process environment.
    pub fn from_env() -> Proxies {
        Proxies(Arc::new(Matcher::from_env()))
    }

    /// Rules from explicit values (tests).
    #[cfg(test)]
    pub fn from_values(http: &str, https: &str, no: &str) -> Proxies {
        Proxies(Arc::new(Matcher::builder().http(http.to_owned()).https(https.to_owned()).no(no.to_owned()).build()))
    }

    /// The route of a connection to `dst`.
    pub fn route(&self, dst: &Uri) -> Route {
        self.intercept(dst).map_or(Route::Direct, |(i, https)| {
            let proxy = i.uri().clone();
            if https { Route::Tunnel(proxy) } else { Route::Forward(proxy) }
        })
    }

    /// The `Proxy-Authorization` header requests to `dst` carry (forwarded `http://` only; a
    /// tunnel sends it once, in its `CONNECT`).
    pub fn forward_auth(&self, dst: &Uri) -> Option<HeaderValue> {
        match self.intercept(dst) {
            Some((i, false)) => i.basic_auth().cloned(),
            _ => None,
        }
    }

    fn intercept(&self, dst: &Uri) -> Option<(hyper_util::client::proxy::matcher::Intercept, bool)> {
        let host = dst.host()?;
        if is_loopback(host) {
            return None;
        }
        let https = dst.scheme_str() == Some("https");
        self.0.intercept(dst).map(|i| (i, https))
    }
}

fn is_loopback(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare.eq_ignore_ascii_case("localhost")
        || bare.to_ascii_lowercase().ends_with(".localhost")
        || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The TCP connector under TLS: direct, tunnelled or to a forwarding proxy, per [`Proxies`].
#[derive(Clone, Debug)]
pub struct ProxyConnector {
    pub http: HttpConnector<super::trace::TimedResolver>,
    pub proxies: Proxies,
}

/// A connection made by [`ProxyConnector`]; tells the client when requests must carry the
/// absolute URL (a forwarding proxy).
pub type ProxyStream = Watched<TokioIo<TcpStream>, Forwarded>;

/// Whether a connection goes to a forwarding proxy.
#[derive(Debug)]
pub struct Forwarded(bool);

impl Watch for Forwarded {
    fn connected(&self, under: Connected) -> Connected {
        under.proxy(self.0)
    }
}

impl Service<Uri> for ProxyConnector {
    type Response = ProxyStream;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<ProxyStream, BoxError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, dst: Uri) -> Self::Future {
        let mut http = self.http.clone();
        let route = self.proxies.route(&dst);
        let auth = self.proxies.intercept(&dst).and_then(|(i, _)| i.basic_auth().cloned());
        Box::pin(async move {
            match route {
                Route::Direct => Ok(Watched::new(http.call(dst).await?, Forwarded(false))),
                Route::Tunnel(proxy) => {
                    let shown = proxy.to_string();
                    let mut tunnel = Tunnel::new(proxy, http);
                    if let Some(a) = auth {
                        tunnel = tunnel.with_auth(a);
                    }
                    let io = tunnel.call(dst).await.map_err(|e| format!("proxy {shown} (HTTPS_PROXY): {e}"))?;
                    Ok(Watched::new(io, Forwarded(false)))
                }
                Route::Forward(proxy) => {
                    let shown = proxy.to_string();
                    let io = http.call(proxy).await.map_err(|e| format!("proxy {shown} (HTTP_PROXY): {e}"))?;
                    Ok(Watched::new(io, Forwarded(true)))
                }
            }
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn uri(s: &str) -> Uri {
        s.parse().unwrap()
    }

    #[test]
    fn routes_follow_the_variables_and_loopback_stays_direct() {
        let p = Proxies::from_values("http://fwd:3128", "http://user:pw@tun:8080", "internal.test,10.0.0.0/8");
        assert_eq!(p.route(&uri("http://api.example:8000/v1")), Route::Forward(uri("http://fwd:3128/")));
        assert_eq!(p.route(&uri("https://api.example/v1")), Route::Tunnel(uri("http://tun:8080/")));
        for direct in [
            "http://gpu.internal.test:8000",
            "https://internal.test",
            "http://10.1.2.3:8000",
            "http://127.0.0.1:8000",
            "https://localhost:8443",
            "http://[::1]:8000",
        ] {
            assert_eq!(p.route(&uri(direct)), Route::Direct, "{direct}");
        }
        // Credentials of a tunnel go in its CONNECT, not in every request.
        assert!(p.forward_auth(&uri("https://api.example")).is_none());
        let p = Proxies::from_values("http://u:p@fwd:3128", "", "");
        assert_eq!(p.forward_auth(&uri("http://api.example")).unwrap(), "Basic dTpw");
        assert_eq!(p.route(&uri("https://api.example")), Route::Direct);
    }
}
