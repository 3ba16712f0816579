//! The HTTP client every command that reaches the network builds: pooled HTTP/1.1 with rustls
//! for `https://`, the TLS trust of [`tls`] and the environment's proxies ([`proxy`]); a
//! blocking GET that follows redirects; and which headers carry credentials.

pub mod proxy;
pub mod tls;
pub mod trace;
pub mod watched;

use std::time::Duration;

use anyhow::{Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Uri};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use proxy::{Proxies, ProxyConnector};
use tls::Trust;
use trace::{TimedResolver, Traced};

/// The pooled client: connections are kept alive and reused, with no cap on their number, so the
/// pool grows to the load instead of queueing requests silently. Every connection carries its
/// timings ([`trace`]).
pub type HttpClient = Client<Traced<hyper_rustls::HttpsConnector<ProxyConnector>>, Full<Bytes>>;

/// Builds the client with the default trust (bundled and system roots) and the environment's
/// proxies.
pub fn http_client() -> Result<HttpClient> {
    http_client_with(&Trust { system_roots: true, ..Trust::default() }, Proxies::from_env())
}

/// Builds the client: TLS trust as given, proxies as given.
pub fn http_client_with(trust: &Trust, proxies: Proxies) -> Result<HttpClient> {
    http_client_reusing(trust, proxies, true)
}

/// [`http_client_with`], keeping connections for later requests only when `reuse` is set:
/// without it every request opens a connection of its own, closed after its response.
pub fn http_client_reusing(trust: &Trust, proxies: Proxies, reuse: bool) -> Result<HttpClient> {
    Ok(client_on(connector(trust, proxies)?, reuse))
}

/// What opens the connections of a client: TLS trust and proxies as given, every connection
/// timed ([`trace`]). Cheap to clone: clients built on clones share its TLS configuration.
pub type Connector = Traced<hyper_rustls::HttpsConnector<ProxyConnector>>;

/// The connector of [`http_client_reusing`].
pub fn connector(trust: &Trust, proxies: Proxies) -> Result<Connector> {
    let mut http = HttpConnector::new_with_resolver(TimedResolver::default());
    http.set_nodelay(true);
    http.enforce_http(false);
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls::client_config(trust)?)
        .https_or_http()
        .enable_http1()
        .wrap_connector(ProxyConnector { http, proxies });
    Ok(Traced(https))
}

/// A client with a pool of its own over `connector`; `reuse` as in [`http_client_reusing`].
pub fn client_on(connector: Connector, reuse: bool) -> HttpClient {
    let mut builder = Client::builder(TokioExecutor::new());
    builder.pool_idle_timeout(Duration::from_secs(90));
    if !reuse {
        builder.pool_max_idle_per_host(0);
    }
    builder.build(connector)
}

/// A blocking GET that follows up to five redirects (a tokenizer download).
pub fn fetch_bytes(url: &str, timeout: Duration) -> Result<Vec<u8>> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    rt.block_on(async {
        let client = http_client()?;
        let mut uri: Uri = url.parse()?;
        for _ in 0..5 {
            let req = Request::get(uri.clone()).body(Full::new(Bytes::new()))?;
            let resp = tokio::time::timeout(timeout, client.request(req)).await.context("timed out")??;
            if resp.status().is_redirection() {
                let loc = resp
                    .headers()
                    .get("location")
                    .and_then(|v| v.to_str().ok())
                    .context("redirect without location")?;
                uri = if loc.starts_with('/') {
                    format!(
                        "{}://{}{}",
                        uri.scheme_str().unwrap_or("https"),
                        uri.authority().map(|a| a.as_str()).unwrap_or(""),
                        loc
                    )
                    .parse()?
                } else {
                    loc.parse()?
                };
                continue;
            }
            anyhow::ensure!(resp.status().is_success(), "HTTP {}", resp.status());
            let body = tokio::time::timeout(timeout, resp.into_body().collect()).await.context("timed out")??;
            return Ok(body.to_bytes().to_vec());
        }
        anyhow::bail!("too many redirects")
    })
}

/// An error and its causes, on one line.
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

/// Whether a header carries a credential (its value is never shown or written): its name, in
/// any case, contains one of these. Every name AIPerf 0.13 hides contains one (its list of
/// provider headers and its fragments: `auth`, `session`, `signature`, `passwd`, …); `key`
/// hides more than AIPerf's `api-key`, `sas-key`, `access-key` and `private-key`.
pub fn is_credential_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    ["auth", "cookie", "key", "token", "secret", "password", "passwd", "credential", "session", "signature"]
        .iter()
        .any(|w| n.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_header_aiperf_hides_is_hidden() {
        // AIPerf 0.13's provider names, then names with each of its fragments (the list the
        // integration test `header_redaction` sends), and the session-affinity header the client
        // sends itself.
        let listed = include_str!("../../../../../tests/fixtures/aiperf-hidden-headers.txt").lines();
        for name in listed.chain(["X-Session-Affinity"]) {
            assert!(is_credential_header(name), "{name}");
        }
        for name in ["Content-Type", "X-Request-ID", "X-Correlation-ID", "Accept", "X-Tenant", "User-Agent"] {
            assert!(!is_credential_header(name), "{name}");
        }
    }
}
