//! Before time zero: waiting for the server to come up (`--wait-for-server`, or AIPerf's
//! `--wait-for-model-timeout` with its `--wait-for-model-mode` probes) and emptying its prefix
//! cache (`--reset-prefix-cache`, AIPerf's `--reset-kv-cache`) so that repeated runs start cold.

use std::time::{Duration, Instant};

use aiperf_core::server::kinds::ServerKind;
use anyhow::{Context, Result, bail};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::{AUTHORIZATION, HeaderValue};
use hyper::{Method, Request, StatusCode};

use super::options::WaitMode;
use super::plan::server::{CacheReset, ServerWait};
use crate::io::http::{HttpClient, chain};

/// Time limit of one probe call.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// The prompt of AIPerf's inference probe (one token asked for).
const PROBE_PROMPT: &str = "Lo";
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

/// The inference probe's request: the endpoint's path and its one-token body.
pub struct InferenceProbe {
    pub path: String,
    pub body: String,
}

impl InferenceProbe {
    /// AIPerf's canned one-token request of an endpoint type, for `model`.
    pub fn of(endpoint: super::body::EndpointType, path: &str, model: &str) -> InferenceProbe {
        use super::body::EndpointType;
        let body = match endpoint {
            EndpointType::Completions => {
                serde_json::json!({"prompt": PROBE_PROMPT, "max_tokens": 1, "model": model})
            }
            EndpointType::Chat => serde_json::json!({
                "messages": [{"role": "user", "content": PROBE_PROMPT}],
                "max_tokens": 1,
                "model": model
            }),
        };
        InferenceProbe { path: path.to_owned(), body: body.to_string() }
    }
}

impl Server<'_> {
    /// One call: (status, body text) or why it got no answer.
    async fn call(&self, method: Method, path: &str) -> std::result::Result<(StatusCode, String), String> {
        self.call_with(method, path, None, CALL_TIMEOUT).await
    }

    /// One call with an optional JSON body, within `timeout`.
    async fn call_with(
        &self,
        method: Method,
        path: &str,
        json: Option<&str>,
        timeout: Duration,
    ) -> std::result::Result<(StatusCode, String), String> {
        let url = format!("{}{path}", self.base);
        let mut req = Request::builder().method(method).uri(&url);
        if json.is_some() {
            req = req.header(hyper::header::CONTENT_TYPE, "application/json");
        }
        if let Some(a) = &self.authorization
            && let Ok(mut v) = HeaderValue::from_str(a)
        {
            v.set_sensitive(true);
            req = req.header(AUTHORIZATION, v);
        }
        let body = json.map_or_else(Bytes::new, |j| Bytes::from(j.to_owned()));
        let req = req.body(Full::new(body)).map_err(|e| format!("invalid URL {url}: {e}"))?;
        let work = async {
            let resp = self.client.request(req).await.map_err(|e| chain(&e))?;
            let status = resp.status();
            let body = Limited::new(resp.into_body(), MAX_ANSWER_BYTES).collect().await.map_err(|e| e.to_string())?;
            Ok((status, String::from_utf8_lossy(&body.to_bytes()).into_owned()))
        };
        tokio::time::timeout(timeout, work)
            .await
            .map_err(|_| format!("no answer within {} s", timeout.as_secs_f64()))?
    }

    /// Probes the server until it is ready, for at most `wait.limit` (asked for by the option
    /// `wait.flag`, which the error names), a probe every `wait.interval`. Without a mode:
    /// `/v1/models`, then `/health`, until one answers with a success status. With AIPerf's
    /// modes: `models` waits for `/v1/models` to list `model` (a 404 there: for the base URL to
    /// answer with a success status), `inference` for the one-token `probe` to get a status
    /// below 500, `both` for the one, then the other.
    pub async fn wait_until_ready(&self, wait: ServerWait, model: &str, probe: &InferenceProbe) -> Result<Duration> {
        let t0 = Instant::now();
        let steps: &[WaitMode] = match wait.mode {
            None => &[],
            Some(WaitMode::Both) => &[WaitMode::Models, WaitMode::Inference],
            Some(WaitMode::Models) => &[WaitMode::Models],
            Some(WaitMode::Inference) => &[WaitMode::Inference],
        };
        if steps.is_empty() {
            self.poll(t0, wait, "GET /v1/models and /health", || self.health()).await?;
        }
        for step in steps {
            match step {
                WaitMode::Models => {
                    let what = format!("GET /v1/models lists {model}");
                    self.poll(t0, wait, &what, || self.models(model)).await?;
                }
                _ => {
                    let what = format!("POST {} of a one-token request answers below HTTP 500", probe.path);
                    self.poll(t0, wait, &what, || self.inference(probe)).await?;
                }
            }
        }
        Ok(t0.elapsed())
    }

    /// Repeats `probe` every `wait.interval` until it is ready (`Ok`), or fails when the next
    /// probe would come after `wait.limit` since `t0`.
    async fn poll<F, Fut>(&self, t0: Instant, wait: ServerWait, what: &str, mut probe: F) -> Result<()>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = std::result::Result<(), String>>,
    {
        loop {
            let last = match probe().await {
                Ok(()) => return Ok(()),
                Err(last) => last,
            };
            if t0.elapsed() + wait.interval > wait.limit {
                bail!(
                    "the server at {} did not come up within {} {} s ({what}; last: {last})",
                    self.shown,
                    wait.flag,
                    wait.limit.as_secs_f64()
                );
            }
            tokio::time::sleep(wait.interval).await;
        }
    }

    /// `/v1/models` or `/health` answers with a success status.
    async fn health(&self) -> std::result::Result<(), String> {
        let mut last = String::new();
        for path in ["/v1/models", "/health"] {
            match self.call(Method::GET, path).await {
                Ok((s, _)) if s.is_success() => return Ok(()),
                Ok((s, _)) => last = format!("{path}: HTTP {s}"),
                Err(e) => last = format!("{path}: {e}"),
            }
        }
        Err(last)
    }

    /// `/v1/models` lists `model` (AIPerf's `models` probe); on a 404 there, the base URL answers
    /// with a success status.
    async fn models(&self, model: &str) -> std::result::Result<(), String> {
        match self.call(Method::GET, "/v1/models").await {
            Ok((s, body)) if s.is_success() => {
                if lists_model(&body, model) {
                    Ok(())
                } else {
                    Err(format!("/v1/models does not list {model}"))
                }
            }
            Ok((StatusCode::NOT_FOUND, _)) => match self.call(Method::GET, "/").await {
                Ok((s, _)) if s.is_success() => Ok(()),
                Ok((s, _)) => Err(format!("/v1/models: HTTP 404, the base URL: HTTP {s}")),
                Err(e) => Err(format!("/v1/models: HTTP 404, the base URL: {e}")),
            },
            Ok((s, _)) => Err(format!("/v1/models: HTTP {s}")),
            Err(e) => Err(format!("/v1/models: {e}")),
        }
    }

    /// The one-token request gets a status below 500 (AIPerf's `inference` probe).
    async fn inference(&self, probe: &InferenceProbe) -> std::result::Result<(), String> {
        match self.call_with(Method::POST, &probe.path, Some(&probe.body), CALL_TIMEOUT).await {
            Ok((s, _)) if s.as_u16() < 500 => Ok(()),
            Ok((s, _)) => Err(format!("{}: HTTP {s}", probe.path)),
            Err(e) => Err(format!("{}: {e}", probe.path)),
        }
    }

    /// Empties the prefix cache: POSTs `reset.path` when given, or the path of a server of
    /// `kind`; returns the calls made.
    pub async fn reset_prefix_cache(&self, kind: Option<ServerKind>, reset: &CacheReset) -> Result<Vec<String>> {
        let paths: Vec<String> = match (&reset.path, kind) {
            (Some(p), _) => vec![p.clone()],
            (None, Some(kind)) => self.reset_paths(kind).await?,
            (None, None) => bail!(
                "--reset-prefix-cache: the server's metrics do not tell its kind (vllm:, sglang:, llamacpp:, dynamo_ names); give --server-kind"
            ),
        };
        for p in &paths {
            match self.call_with(Method::POST, p, None, reset.timeout).await {
                Ok((s, _)) if s.is_success() => {}
                Ok((s, _))
                    if kind == Some(ServerKind::Llamacpp)
                        && reset.path.is_none()
                        && s == StatusCode::NOT_IMPLEMENTED =>
                {
                    bail!(
                        "--reset-prefix-cache: POST {}{p} answered HTTP {s}: llama.cpp erases slots only when started with --slot-save-path DIR",
                        self.shown
                    )
                }
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

    /// The paths that empty the prefix cache of a server of `kind`.
    async fn reset_paths(&self, kind: ServerKind) -> Result<Vec<String>> {
        Ok(match kind {
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
        })
    }
}

/// Whether a `/v1/models` answer lists `model` as one of its `data[].id`.
fn lists_model(body: &str, model: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(body).ok().and_then(|v| v.get("data").cloned()).is_some_and(|d| {
        d.as_array().is_some_and(|a| a.iter().any(|e| e.get("id").and_then(serde_json::Value::as_str) == Some(model)))
    })
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
    fn a_model_list_is_read_as_aiperf_reads_it() {
        assert!(lists_model(r#"{"data":[{"id":"a"},{"id":"m"}]}"#, "m"));
        assert!(!lists_model(r#"{"data":[{"id":"a"}]}"#, "m"));
        assert!(!lists_model("not json", "m"));
        let p = InferenceProbe::of(crate::profile::body::EndpointType::Completions, "/v1/completions", "m");
        assert_eq!(p.body, r#"{"prompt":"Lo","max_tokens":1,"model":"m"}"#);
    }

    #[test]
    fn slot_ids_are_read_or_the_error_says_why() {
        assert_eq!(slot_ids(r#"[{"id":0,"n_ctx":4096},{"id":3}]"#).unwrap(), vec![0, 3]);
        assert!(format!("{:#}", slot_ids("{}").unwrap_err()).contains("not a JSON array"));
        assert!(format!("{:#}", slot_ids(r#"[{"x":1}]"#).unwrap_err()).contains("slot 0 has no numeric id"));
    }
}
