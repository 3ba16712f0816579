//! `aiperf-cli hash-prompts`: turn real prompts into a Mooncake trace.
//!
//! Each JSONL row's `prompt` (or `text_input`, or the text of its `messages`) is tokenized with a
//! `tokenizer.json` or a Hugging Face model's (no special tokens added), and its blocks are hashed
//! with the core's AIPerf-compatible chained block hasher. `timestamp`, `output_length` and `session_id` are kept.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use aiperf_core::analysis::DEFAULT_BLOCK_SIZE;
use aiperf_core::prompt_hash::BlockHasher;
use aiperf_core::trace::{Input, Number, Row, Trace, write_trace};
use anyhow::{Context, Result, anyhow, bail, ensure};
use serde_json::Value;

use crate::input::{open, write_atomically};
use crate::tokenizer::load_named;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Prompts, one JSON object a line with `prompt`, `text_input` or `messages` (optionally gzip).
    pub file: PathBuf,
    /// Where to write the Mooncake trace (JSONL).
    #[arg(long)]
    pub output_file: PathBuf,
    /// Tokens per hash id block.
    #[arg(long, default_value_t = DEFAULT_BLOCK_SIZE)]
    pub block_size: u32,
    /// A Hugging Face `tokenizer.json`, a folder containing one, or a Hugging Face model name
    /// (`org/name`: from the local cache, else fetched into it).
    #[arg(long)]
    pub tokenizer: String,
}

/// One prompt row before tokenization.
struct Prompt {
    text: String,
    row: Row,
}

pub fn run(args: Args) -> Result<()> {
    ensure!(args.block_size >= 1, "--block-size must be at least 1");
    let (tokenizer, _) = load_named(&args.tokenizer)?;
    let prompts = read_prompts(&args.file)?;
    let mut hasher = BlockHasher::new(args.block_size);
    let mut trace = Trace::with_capacity(prompts.len(), 0);
    let mut tokens_total = 0u64;
    // Tokenize in batches (in parallel), hash in input order (ids are first-seen order).
    for batch in prompts.chunks(1024) {
        let texts: Vec<&str> = batch.iter().map(|p| p.text.as_str()).collect();
        let encodings = tokenizer.encode_batch_fast(texts, false).map_err(|e| anyhow!("tokenizer failed: {e}"))?;
        for (prompt, enc) in batch.iter().zip(encodings) {
            let tokens = enc.get_ids();
            tokens_total += tokens.len() as u64;
            let mut row = prompt.row.clone();
            row.input = Input::Length(tokens.len() as i64);
            trace.push(row, hasher.hash_ids(tokens));
        }
    }
    write_atomically(&args.output_file, write_trace(&trace).as_bytes())?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "Hashed {} prompts ({} tokens) into {} distinct blocks of {} tokens; wrote {}",
        trace.len(),
        tokens_total,
        hasher.distinct_blocks(),
        args.block_size,
        args.output_file.display()
    )?;
    Ok(())
}

fn read_prompts(path: &Path) -> Result<Vec<Prompt>> {
    let mut prompts = Vec::new();
    for (i, line) in open(path)?.lines().enumerate() {
        let line = line.with_context(|| format!("cannot read {}", path.display()))?;
        if line.trim().is_empty() {
            continue;
        }
        let at = || format!("{}:{}", path.display(), i + 1);
        let value: Value = serde_json::from_str(&line).with_context(|| format!("{}: not valid JSON", at()))?;
        prompts.push(prompt_of(&value).with_context(at)?);
    }
    Ok(prompts)
}

/// The text and pass-through fields of one prompt row.
fn prompt_of(v: &Value) -> Result<Prompt> {
    let Value::Object(obj) = v else { bail!("expected a JSON object") };
    let text = if let Some(p) = obj.get("prompt").or_else(|| obj.get("text_input")) {
        p.as_str().context("field 'prompt'/'text_input': expected a string")?.to_string()
    } else if let Some(m) = obj.get("messages") {
        messages_text(m)?
    } else {
        bail!("no 'prompt', 'text_input' or 'messages' field");
    };
    let mut row = Row::new(Input::Length(0));
    if let Some(t) = obj.get("timestamp") {
        row.timestamp = Some(match (t.as_i64(), t.as_f64()) {
            (Some(i), _) => Number::Int(i),
            (None, Some(f)) if f.is_finite() && f >= 0.0 => Number::Float(f),
            _ => bail!("field 'timestamp': expected a non-negative number"),
        });
    }
    if let Some(o) = obj.get("output_length") {
        row.output_length = Some(o.as_u64().context("field 'output_length': expected a non-negative integer")?);
    }
    if let Some(s) = obj.get("session_id") {
        row.session_id = Some(s.as_str().context("field 'session_id': expected a string")?.into());
    }
    Ok(Prompt { text, row })
}

/// The text of chat messages: each message's content (a string, or its text parts), one per line.
fn messages_text(m: &Value) -> Result<String> {
    let list = m.as_array().context("field 'messages': expected an array")?;
    let mut parts = Vec::with_capacity(list.len());
    for (i, msg) in list.iter().enumerate() {
        match msg.get("content") {
            Some(Value::String(s)) => parts.push(s.clone()),
            Some(Value::Array(items)) => {
                for item in items {
                    if let Some(t) = item.get("text").and_then(Value::as_str) {
                        parts.push(t.to_string());
                    }
                }
            }
            Some(Value::Null) | None => {}
            Some(_) => bail!("field 'messages[{i}].content': expected a string or a list of parts"),
        }
    }
    Ok(parts.join("\n"))
}
