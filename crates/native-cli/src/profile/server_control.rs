//! Before time zero: waiting for the server to come up (`--wait-for-server`) and emptying its
//! prefix cache (`--reset-prefix-cache`) so that repeated runs start cold.

use std::time::{Duration, Instant};

use aiperf_core::server::kinds::ServerKind;
use anyhow::{Context, Result, bail};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::{AUTHORIZATION, HeaderValue};
use hyper::{Method, Request, StatusCode};

use crate::io::http::{HttpClient, chain};

/// Time between two readiness probes.
const POLL: Duration = Duration::from_millis(250);
/// Time limit of one probe or reset call.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest answer read from a probe or reset call.
const MAX_ANSWER_BYTES: usize = 1 << 20;

/// A base URL (no credentials) and the headers every call carries.
pub struct Server<'a> {
    pub client: &'a HttpClient,
    /// The base URL, without a trailing `/`.
    pub base: String,
    /// Shown in messages (credentials redacted).
    pub shown: String,
    pub authorization: Option<String>,
}

impl Server<'_> {
    /// One call: (status, body text) or why it got no answer.
    async fn call(&self, method: Method, path: &str) -> std::result::Result<(StatusCode, String), String> {
        let url = format!("{}{path}", self.base);
        let mut req = Request::builder().method(method).uri(&url);
        if let Some(a) = &self.authorization
            && let Ok(mut v) = HeaderValue::from_str(a)
        {
            v.set_sensitive(true);
            req = req.header(AUTHORIZATION, v);
        }
        let req = req.body(Full::new(Bytes::new())).map_err(|e| format!("invalid URL {url}: {e}"))?;
        let work = async {
            let resp = self.client.request(req).await.map_err(|e| chain(&e))?;
            let status = resp.status();
            let body = Limited::new(resp.into_body(), MAX_ANSWER_BYTES).collect().await.map_err(|e| e.to_string())?;
            Ok((status, String::from_utf8_lossy(&body.to_bytes()).into_owned()))
        };
        tokio::time::timeout(CALL_TIMEOUT, work).await.map_err(|_| "no answer within 10 s".to_owned())?
    }

    /// Polls `/v1/models`, then `/health`, until one answers with a success status, for at most
    /// `limit` (asked for by the option `flag`, which the error names).
    pub async fn wait_until_ready(&self, limit: Duration, flag: &str) -> Result<Duration> {
        let t0 = Instant::now();
        let mut last = String::from("not tried");
        loop {
            for path in ["/v1/models", "/health"] {
                match self.call(Method::GET, path).await {
                    Ok((s, _)) if s.is_success() => return Ok(t0.elapsed()),
                    Ok((s, _)) => last = format!("{path}: HTTP {s}"),
                    Err(e) => last = format!("{path}: {e}"),
                }
            }
            if t0.elapsed() + POLL > limit {
                bail!(
                    "the server at {} did not come up within {flag} {} s (GET /v1/models and /health; last: {last})",
                    self.shown,
                    limit.as_secs_f64()
                );
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Empties the prefix cache of a server of `kind`; returns the calls made.
    pub async fn reset_prefix_cache(&self, kind: ServerKind) -> Result<Vec<String>> {
        let paths: Vec<String> = match kind {
            ServerKind::Vllm => vec!["/reset_prefix_cache".into()],
            ServerKind::Sglang => vec!["/flush_cache".into()],
            ServerKind::Llamacpp => {
                let (status, body) = self
                    .call(Method::GET, "/slots")
                    .await
                    .map_err(|e| anyhow::anyhow!("GET {}/slots: {e}", self.shown))?;
                if !status.is_success() {
                    bail!(
                        "GET {}/slots answered HTTP {status}: llama.cpp lists its slots only when started with --slots (the default of recent builds)",
                        self.shown
                    );
                }
                slot_ids(&body)
                    .with_context(|| format!("GET {}/slots", self.shown))?
                    .into_iter()
                    .map(|id| format!("/slots/{id}?action=erase"))
                    .collect()
            }
            ServerKind::Dynamo => bail!(
                "--reset-prefix-cache: Dynamo has no cache-reset endpoint of its own; reset its workers (vLLM or SGLang) directly, or restart it"
            ),
        };
        for p in &paths {
            match self.call(Method::POST, p).await {
                Ok((s, _)) if s.is_success() => {}
                Ok((s, _)) if kind == ServerKind::Llamacpp && s == StatusCode::NOT_IMPLEMENTED => bail!(
                    "--reset-prefix-cache: POST {}{p} answered HTTP {s}: llama.cpp erases slots only when started with --slot-save-path DIR",
                    self.shown
                ),
                Ok((s, body)) => bail!(
                    "--reset-prefix-cache: POST {}{p} answered HTTP {s}: {}",
                    self.shown,
                    body.chars().take(200).collect::<String>()
                ),
                Err(e) => bail!("--reset-prefix-cache: POST {}{p}: {e}", self.shown),
            }
        }
        Ok(paths)
    }
}

/// The `id` of every slot in llama.cpp's `GET /slots` answer.
fn slot_ids(body: &str) -> Result<Vec<u64>> {
    let v: serde_json::Value = serde_json::from_str(body).context("the answer is not JSON")?;
    let slots = v.as_array().context("the answer is not a JSON array of slots")?;
    slots
        .iter()
        .enumerate()
        .map(|(i, s)| {
            s.get("id").and_then(serde_json::Value::as_u64).with_context(|| format!("slot {i} has no numeric id"))
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn slot_ids_are_read_or_the_error_says_why() {
        assert_eq!(slot_ids(r#"[{"id":0,"n_ctx":4096},{"id":3}]"#).unwrap(), vec![0, 3]);
        assert!(format!("{:#}", slot_ids("{}").unwrap_err()).contains("not a JSON array"));
        assert!(format!("{:#}", slot_ids(r#"[{"x":1}]"#).unwrap_err()).contains("slot 0 has no numeric id"));
    }
}
