//! Request bodies: a trace row turned into an OpenAI chat or completions request.

use aiperf_core::trace::{Input, Row};
use anyhow::{Context, Result};
use bytes::Bytes;
use serde_json::{Map, Value, json};

use super::prompt::PromptBuilder;

/// The OpenAI API a run talks to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum EndpointType {
    Chat,
    Completions,
}

impl EndpointType {
    /// The default path of the endpoint.
    pub fn path(self) -> &'static str {
        match self {
            EndpointType::Chat => "/v1/chat/completions",
            EndpointType::Completions => "/v1/completions",
        }
    }
}

/// What every request body shares.
#[derive(Clone, Debug)]
pub struct BodyTemplate {
    pub endpoint: EndpointType,
    pub model: String,
    pub streaming: bool,
    /// Send `max_tokens` instead of `max_completion_tokens` (chat).
    pub legacy_max_tokens: bool,
    /// `--extra-inputs`, merged last.
    pub extra_inputs: Map<String, Value>,
}

/// A body ready to send and what the client knows about it.
#[derive(Clone, Debug)]
pub struct Prepared {
    pub body: Bytes,
    /// Prompt tokens by the client's tokenizer (exact for `input_length` rows).
    pub input_tokens: Option<u64>,
    pub max_tokens: Option<u64>,
}

/// Builds the body of a row.
pub fn prepare(
    tpl: &BodyTemplate,
    prompts: &PromptBuilder,
    row: &Row,
    hash_ids: &[u64],
    row_key: u64,
) -> Result<Prepared> {
    let mut body = Map::new();
    let input_tokens;
    match &row.input {
        Input::Payload(p) => {
            let bytes = serde_json::to_vec(p.as_ref()).context("cannot serialize payload")?;
            return Ok(Prepared { body: Bytes::from(bytes), input_tokens: None, max_tokens: row.output_length });
        }
        Input::Length(n) => {
            let text = prompts.prompt((*n).max(0) as u64, hash_ids, row_key);
            input_tokens = Some((*n).max(0) as u64);
            put_prompt(tpl, &mut body, Value::String(text));
        }
        Input::Text(t) => {
            input_tokens = prompts.count(t).ok();
            put_prompt(tpl, &mut body, Value::String(t.to_string()));
        }
        Input::Messages(msgs) => {
            let mut n = 0;
            let mut joined = String::new();
            for m in msgs.iter() {
                if let Some(c) = m.get("content").and_then(Value::as_str) {
                    n += prompts.count(c).unwrap_or(0);
                    if !joined.is_empty() {
                        joined.push('\n');
                    }
                    joined.push_str(c);
                }
            }
            input_tokens = Some(n);
            match tpl.endpoint {
                EndpointType::Chat => {
                    body.insert("model".into(), Value::String(tpl.model.clone()));
                    body.insert("messages".into(), Value::Array(msgs.to_vec()));
                }
                EndpointType::Completions => put_prompt(tpl, &mut body, Value::String(joined)),
            }
            if let Some(tools) = row.tools() {
                body.insert("tools".into(), Value::Array(tools.to_vec()));
            }
        }
    }
    body.insert("stream".into(), Value::Bool(tpl.streaming));
    if tpl.streaming {
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    if let Some(osl) = row.output_length {
        let key = if tpl.legacy_max_tokens || tpl.endpoint == EndpointType::Completions {
            "max_tokens"
        } else {
            "max_completion_tokens"
        };
        body.insert(key.into(), Value::from(osl));
    }
    if let Some(extra) = row.extra() {
        for (k, v) in extra {
            body.insert(k.clone(), v.clone());
        }
    }
    for (k, v) in &tpl.extra_inputs {
        body.insert(k.clone(), v.clone());
    }
    let bytes = serde_json::to_vec(&body).context("cannot serialize request")?;
    Ok(Prepared { body: Bytes::from(bytes), input_tokens, max_tokens: row.output_length })
}

fn put_prompt(tpl: &BodyTemplate, body: &mut Map<String, Value>, text: Value) {
    body.insert("model".into(), Value::String(tpl.model.clone()));
    match tpl.endpoint {
        EndpointType::Chat => {
            body.insert("messages".into(), json!([{"role": "user", "content": text}]));
        }
        EndpointType::Completions => {
            body.insert("prompt".into(), text);
        }
    }
}
