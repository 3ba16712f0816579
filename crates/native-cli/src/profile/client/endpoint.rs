//! Where and how requests go: the endpoint (URL, headers, limits) and the URL join.

use std::time::Duration;

use anyhow::{Context, Result};
use hyper::Uri;
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, USER_AGENT};

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
