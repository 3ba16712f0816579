//! `aiperf-cli hash-prompts`: turn real prompts into a Mooncake trace.
//!
//! Each JSONL row's `prompt` (or `text_input`, or the text of its `messages`) is tokenized with a
//! `tokenizer.json` or a Hugging Face model's (no special tokens added), and its blocks are hashed
//! with the core's AIPerf-compatible chained block hasher. `timestamp`, `output_length` and `session_id` are kept.
//!
//! Memory is bounded: lines are read through a length cap (`--max-line-bytes`), a prompt may hold
//! at most `--max-prompt-bytes` of text, prompts are read and tokenized a batch at a time (about
//! [`BATCH_BYTES`] of text) rather than all at once, and a long prompt is tokenized in pieces of
//! [`PIECE_BYTES`] cut at spaces between words when that gives the same ids (byte-level BPE
//! tokenizers): tokenizing a text at once costs about 125 bytes of memory per byte of it, in the
//! tokenizer's per-byte and per-token bookkeeping.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use aiperf_core::analysis::DEFAULT_BLOCK_SIZE;
use aiperf_core::trace::prompt_hash::BlockHasher;
use aiperf_core::trace::{DEFAULT_MAX_LINE_BYTES, Input, LineRead, Number, Row, Trace, read_line_capped};
use anyhow::{Context, Result, anyhow, bail, ensure};
use serde_json::Value;
use tokenizers::Tokenizer;

use crate::io::input::open;
use crate::io::output::{refuse_same_files, report_stream, write_trace_file};
use crate::io::tokenizer::load_named;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Prompts, one JSON object a line with `prompt`, `text_input` or `messages` (optionally gzip;
    /// `-`: standard input).
    pub file: PathBuf,
    /// Where to write the Mooncake trace (JSONL; `-`: standard output).
    #[arg(long)]
    pub output_file: PathBuf,
    /// Longest input line accepted (bytes); a longer one stops with a `file:line` error.
    #[arg(long, default_value_t = DEFAULT_MAX_LINE_BYTES)]
    pub max_line_bytes: usize,
    /// Longest prompt text accepted (bytes, UTF-8); a longer one stops with a `file:line` error.
    /// A prompt that cannot be tokenized in pieces takes about 125 times its size in memory.
    #[arg(long, default_value_t = DEFAULT_MAX_PROMPT_BYTES)]
    pub max_prompt_bytes: usize,
    /// Tokens per hash id block.
    #[arg(long, default_value_t = DEFAULT_BLOCK_SIZE)]
    pub block_size: u32,
    /// A Hugging Face `tokenizer.json`, a folder containing one, or a Hugging Face model name
    /// (`org/name`: from the local cache, else fetched into it).
    #[arg(long)]
    pub tokenizer: String,
}

/// Default of `--max-prompt-bytes`: 4 MiB, about a million tokens (as long as the longest contexts).
pub const DEFAULT_MAX_PROMPT_BYTES: usize = 4 << 20;

/// A batch of prompts tokenized in parallel ends once it holds this much text (or 1024 prompts).
pub const BATCH_BYTES: usize = 1 << 20;

/// One prompt row before tokenization.
struct Prompt {
    text: String,
    row: Row,
}

pub fn run(args: Args) -> Result<()> {
    ensure!(args.block_size >= 1, "--block-size must be at least 1");
    refuse_same_files(&[&args.output_file], &[&args.file, Path::new(&args.tokenizer)])?;
    let (tokenizer, _) = load_named(&args.tokenizer)?;
    let mut prompts = Prompts::open(&args)?;
    let mut hasher = BlockHasher::new(args.block_size);
    let mut trace = Trace::new();
    let mut tokens_total = 0u64;
    let cut = cuts_at_spaces(&tokenizer);
    // Tokenize in batches (in parallel), hash in input order (ids are first-seen order).
    while let Some(batch) = prompts.next_batch()? {
        for (prompt, tokens) in batch.iter().zip(token_ids(&tokenizer, &batch, cut)?) {
            tokens_total += tokens.len() as u64;
            let mut row = prompt.row.clone();
            row.input = Input::Length(tokens.len() as i64);
            trace.push(row, hasher.hash_ids(&tokens));
        }
    }
    write_trace_file(&args.output_file, &trace)?;
    let mut out = report_stream(&[&args.output_file]);
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

/// Prompts longer than this are tokenized a piece at a time (cut at spaces between words) when
/// the tokenizer allows it: tokenizing costs about 125 bytes of memory per byte of text at once.
pub const PIECE_BYTES: usize = 256 << 10;

/// The token ids of each prompt of a batch: short prompts tokenized together in parallel, long
/// ones piece by piece when `cut` (see [`cuts_at_spaces`]).
fn token_ids(tokenizer: &Tokenizer, batch: &[Prompt], cut: bool) -> Result<Vec<Vec<u32>>> {
    let fail = |e| anyhow!("tokenizer failed: {e}");
    let long = |p: &Prompt| cut && p.text.len() > PIECE_BYTES;
    let short: Vec<&str> = batch.iter().filter(|p| !long(p)).map(|p| p.text.as_str()).collect();
    let mut short_ids = tokenizer.encode_batch_fast(short, false).map_err(fail)?.into_iter();
    let mut all = Vec::with_capacity(batch.len());
    for prompt in batch {
        if long(prompt) {
            let mut ids = Vec::new();
            for piece in pieces(&prompt.text, PIECE_BYTES) {
                ids.extend_from_slice(tokenizer.encode_fast(piece, false).map_err(fail)?.get_ids());
            }
            all.push(ids);
        } else {
            let encoding = short_ids.next().context("the tokenizer returned fewer encodings than prompts")?;
            all.push(encoding.get_ids().to_vec());
        }
    }
    Ok(all)
}

/// Whether tokenizing a text cut at a space between two words (`a b` as `a` then ` b`) gives the
/// same ids as tokenizing it whole. True for byte-level BPE tokenizers (GPT-2, Llama 3, SmolLM:
/// their pre-tokenizers never join a word to the space before it); false, for instance, for
/// SentencePiece-style tokenizers that prepend `▁` to every text, or any tokenizer that truncates
/// or pads, which are then not cut.
fn cuts_at_spaces(tokenizer: &Tokenizer) -> bool {
    // Truncation or padding set in tokenizer.json would apply to every piece.
    if tokenizer.get_truncation().is_some() || tokenizer.get_padding().is_some() {
        return false;
    }
    const PROBES: [&str; 3] = ["hello world", "the cat sat on the mat", "lorem ipsum dolor sit amet, consectetur"];
    let ids = |text: &str| tokenizer.encode_fast(text, false).ok().map(|e| e.get_ids().to_vec());
    PROBES.iter().all(|probe| {
        let whole = ids(probe);
        cut_points(probe.as_bytes(), 1, probe.len()).all(|i| {
            let (a, b) = (ids(&probe[..i]), ids(&probe[i..]));
            a.zip(b).map(|(mut a, b)| {
                a.extend(b);
                a
            }) == whole
        })
    })
}

/// Positions in `lo..hi` of a space between two lowercase ASCII letters: where a text is cut.
fn cut_points(bytes: &[u8], lo: usize, hi: usize) -> impl DoubleEndedIterator<Item = usize> + '_ {
    (lo.max(1)..hi.min(bytes.len().saturating_sub(1)))
        .filter(move |&i| bytes[i] == b' ' && bytes[i - 1].is_ascii_lowercase() && bytes[i + 1].is_ascii_lowercase())
}

/// `text` cut into pieces of at most about `size` bytes, each cut at a space between two words
/// (the last cut point in the second half of the window); text with no such space stays whole.
fn pieces(text: &str, size: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    while text.len() - start > size {
        match cut_points(text.as_bytes(), start + size / 2, start + size).next_back() {
            Some(cut) => {
                out.push(&text[start..cut]);
                start = cut;
            }
            None => break,
        }
    }
    out.push(&text[start..]);
    out
}

/// The prompts file, read a batch at a time through a line-length cap.
struct Prompts<'a> {
    args: &'a Args,
    reader: Box<dyn BufRead>,
    line: u64,
    buf: Vec<u8>,
}

impl<'a> Prompts<'a> {
    fn open(args: &'a Args) -> Result<Self> {
        Ok(Prompts { args, reader: open(&args.file)?, line: 0, buf: Vec::new() })
    }

    /// The next prompts, up to 1024 of them or [`BATCH_BYTES`] of text; `None` at the end.
    fn next_batch(&mut self) -> Result<Option<Vec<Prompt>>> {
        let mut batch = Vec::new();
        let mut bytes = 0;
        while batch.len() < 1024 && bytes < BATCH_BYTES {
            let Some(prompt) = self.next_prompt()? else { break };
            bytes += prompt.text.len();
            batch.push(prompt);
        }
        Ok((!batch.is_empty()).then_some(batch))
    }

    fn next_prompt(&mut self) -> Result<Option<Prompt>> {
        let path = self.args.file.display();
        loop {
            self.buf.clear();
            let read = read_line_capped(&mut self.reader, &mut self.buf, self.args.max_line_bytes);
            self.line += 1;
            let at = format!("{path}:{}", self.line);
            match read.with_context(|| format!("cannot read {path} after line {}", self.line - 1))? {
                LineRead::End => return Ok(None),
                LineRead::TooLong => bail!(
                    "{at}: the line is longer than {} bytes (raise --max-line-bytes if the file is right)",
                    self.args.max_line_bytes
                ),
                LineRead::Line => {}
            }
            let mut text = std::str::from_utf8(&self.buf).map_err(|e| {
                anyhow!("{at}: not valid UTF-8 (byte {}); prompts must be UTF-8 text", e.valid_up_to() + 1)
            })?;
            text = text.strip_suffix('\r').unwrap_or(text);
            if self.line == 1 {
                text = text.strip_prefix('\u{feff}').unwrap_or(text);
            }
            if text.trim().is_empty() {
                continue;
            }
            let value: Value = serde_json::from_str(text).with_context(|| format!("{at}: not valid JSON"))?;
            let prompt = prompt_of(&value).with_context(|| at.clone())?;
            ensure!(
                prompt.text.len() <= self.args.max_prompt_bytes,
                "{at}: the prompt holds {} bytes, more than --max-prompt-bytes {} (raise the limit if you have the \
                 memory: a prompt that cannot be tokenized in pieces takes about {} MB)",
                prompt.text.len(),
                self.args.max_prompt_bytes,
                prompt.text.len() * 125 / 1_000_000
            );
            return Ok(Some(prompt));
        }
    }
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn fixture_tokenizer() -> Tokenizer {
        Tokenizer::from_bytes(crate::io::tokenizer::EMBEDDED_TOKENIZER).unwrap()
    }

    #[test]
    fn long_prompts_cut_at_spaces_give_the_same_ids() {
        let tokenizer = fixture_tokenizer();
        assert!(cuts_at_spaces(&tokenizer));
        let sentence = "The quick brown fox, aged 42, jumps over the lazy dog's kennel!\n\tIt's 3.14 o'clock  now; \
                        naïve café déjà vu — ünïcödé text follows:   spaced   out words.\n";
        let text = sentence.repeat(700_000 / sentence.len());
        let whole = tokenizer.encode_fast(text.as_str(), false).unwrap().get_ids().to_vec();
        let prompt = Prompt { text, row: Row::new(Input::Length(0)) };
        let cut = token_ids(&tokenizer, std::slice::from_ref(&prompt), true).unwrap();
        assert!(pieces(&prompt.text, PIECE_BYTES).len() > 2);
        assert_eq!(cut[0], whole);
        let mut truncating = tokenizer.clone();
        truncating.with_truncation(Some(tokenizers::TruncationParams::default())).unwrap();
        assert!(!cuts_at_spaces(&truncating));
    }

    #[test]
    fn pieces_cover_the_text_and_text_without_spaces_stays_whole() {
        let text = "ab cd ".repeat(1000);
        let parts = pieces(&text, 100);
        assert!(parts.iter().all(|p| p.len() <= 100) && parts.len() > 50);
        assert_eq!(parts.concat(), text);
        let dense = "x".repeat(1000);
        assert_eq!(pieces(&dense, 100), [dense.as_str()]);
    }
}
