//! Prompts of exact token length from `input_length` + `hash_ids`, with a real tokenizer.
//!
//! The builder picks a vocabulary of words that encode to exactly one token each and never merge
//! with a neighbour (a space followed by lowercase letters, checked against the tokenizer). A hash
//! id's block is a deterministic sequence of such words drawn from a generator seeded by the run
//! seed and the id, so equal ids give equal text and a row's prompt is the concatenation of its
//! blocks: exactly `input_length` tokens, sharing a textual prefix wherever the trace shares ids.
//! Text is generated on demand, per request, so a 100,000-row trace is ready at once.

use std::path::{Path, PathBuf};

use aiperf_core::schedule::Rng;
use anyhow::{Context, Result, bail};
use tokenizers::Tokenizer;

/// SmolLM2-135M's tokenizer, used when no other tokenizer is available.
static EMBEDDED_TOKENIZER: &[u8] = include_bytes!("../../../../tests/fixtures/tokenizers/smollm2-135m/tokenizer.json");

/// Where the tokenizer came from, for the run report.
#[derive(Clone, Debug)]
pub struct TokenizerSource {
    pub description: String,
    /// True when the embedded fallback is used: counts are approximate for other models.
    pub approximate: bool,
}

/// Loads the tokenizer named by `--tokenizer` (a `tokenizer.json`, a folder holding one, or a
/// Hugging Face model name), else the model's tokenizer from the local Hugging Face cache, else the
/// embedded one.
pub fn load_tokenizer(arg: Option<&str>, model: &str) -> Result<(Tokenizer, TokenizerSource)> {
    let from_file = |p: &Path| {
        Tokenizer::from_file(p)
            .map_err(|e| anyhow::anyhow!("{e}"))
            .with_context(|| format!("cannot load tokenizer {}", p.display()))
    };
    if let Some(arg) = arg {
        let path = Path::new(arg);
        if path.is_file() {
            return Ok((
                from_file(path)?,
                TokenizerSource { description: path.display().to_string(), approximate: false },
            ));
        }
        if path.is_dir() {
            let file = path.join("tokenizer.json");
            if !file.is_file() {
                bail!("{} has no tokenizer.json", path.display());
            }
            return Ok((
                from_file(&file)?,
                TokenizerSource { description: file.display().to_string(), approximate: false },
            ));
        }
        if let Some(file) = hf_cached(arg) {
            return Ok((
                from_file(&file)?,
                TokenizerSource { description: format!("{arg} ({})", file.display()), approximate: false },
            ));
        }
        let file = hf_download(arg).with_context(|| {
            format!("tokenizer '{arg}' is neither a file, a folder, nor in the Hugging Face cache, and fetching it failed (offline?); pass a path to a tokenizer.json")
        })?;
        return Ok((
            from_file(&file)?,
            TokenizerSource { description: format!("{arg} (downloaded)"), approximate: false },
        ));
    }
    if let Some(file) = hf_cached(model) {
        return Ok((
            from_file(&file)?,
            TokenizerSource { description: format!("{model} ({})", file.display()), approximate: false },
        ));
    }
    let tok = Tokenizer::from_bytes(EMBEDDED_TOKENIZER).map_err(|e| anyhow::anyhow!("embedded tokenizer: {e}"))?;
    Ok((
        tok,
        TokenizerSource {
            description: "embedded SmolLM2-135M tokenizer".into(),
            approximate: model != "tiny-random" && !model.to_lowercase().contains("smollm2"),
        },
    ))
}

fn hf_hub_dir() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("HF_HUB_CACHE") {
        return Some(PathBuf::from(p));
    }
    if let Some(p) = std::env::var_os("HF_HOME") {
        return Some(PathBuf::from(p).join("hub"));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("huggingface").join("hub"))
}

/// `tokenizer.json` of a model in the Hugging Face cache (`models--org--name/snapshots/*/`).
fn hf_cached(name: &str) -> Option<PathBuf> {
    if name.is_empty() || name.contains("..") {
        return None;
    }
    let repo = hf_hub_dir()?.join(format!("models--{}", name.replace('/', "--")));
    let main = std::fs::read_to_string(repo.join("refs").join("main")).ok();
    if let Some(rev) = main {
        let f = repo.join("snapshots").join(rev.trim()).join("tokenizer.json");
        if f.is_file() {
            return Some(f);
        }
    }
    let mut snaps: Vec<PathBuf> = std::fs::read_dir(repo.join("snapshots")).ok()?.flatten().map(|e| e.path()).collect();
    snaps.sort();
    snaps.into_iter().map(|s| s.join("tokenizer.json")).find(|f| f.is_file())
}

/// Fetches `tokenizer.json` of a Hugging Face model into the cache layout.
fn hf_download(name: &str) -> Result<PathBuf> {
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c)) || name.contains("..") {
        bail!("'{name}' is not a Hugging Face model name");
    }
    let url = format!("https://huggingface.co/{name}/resolve/main/tokenizer.json");
    let bytes = super::client::fetch_bytes(&url, std::time::Duration::from_secs(20))?;
    let dir =
        hf_hub_dir().context("no cache folder (HOME unset)")?.join(format!("models--{}", name.replace('/', "--")));
    let snap = dir.join("snapshots").join("main");
    std::fs::create_dir_all(&snap).with_context(|| format!("cannot create {}", snap.display()))?;
    std::fs::create_dir_all(dir.join("refs"))?;
    let file = snap.join("tokenizer.json");
    crate::input::write_atomically(&file, &bytes)?;
    crate::input::write_atomically(&dir.join("refs").join("main"), b"main")?;
    Ok(file)
}

/// Builds prompt text of exact token counts.
pub struct PromptBuilder {
    tokenizer: Tokenizer,
    words: Vec<Box<str>>,
    block_size: u64,
    seed: u64,
}

impl PromptBuilder {
    /// Chooses the one-token word vocabulary of `tokenizer`.
    pub fn new(tokenizer: Tokenizer, block_size: u64, seed: u64) -> Result<PromptBuilder> {
        let mut vocab: Vec<(String, u32)> = tokenizer.get_vocab(false).into_iter().collect();
        vocab.sort_by_key(|(_, id)| *id);
        let mut words = Vec::new();
        for (_, id) in vocab {
            let Ok(text) = tokenizer.decode(&[id], false) else { continue };
            let Some(rest) = text.strip_prefix(' ') else { continue };
            if !(2..=10).contains(&rest.len()) || !rest.bytes().all(|b| b.is_ascii_lowercase()) {
                continue;
            }
            if tokenizer.encode_fast(text.as_str(), false).map(|e| e.len()).ok() == Some(1) {
                words.push(text.into_boxed_str());
                if words.len() == 4096 {
                    break;
                }
            }
        }
        if words.len() < 64 {
            bail!("the tokenizer has too few single-token words ({}) to build prompts of exact length", words.len());
        }
        let builder = PromptBuilder { tokenizer, words, block_size: block_size.max(1), seed };
        // Words must not merge with their neighbours: check a long random sequence once.
        let mut sample = String::new();
        builder.push_words(&mut sample, u64::MAX, 20_000);
        let n = builder.count(&sample)?;
        if n != 20_000 {
            bail!(
                "this tokenizer merges adjacent words ({n} tokens for 20000 words): exact prompt lengths are not possible"
            );
        }
        Ok(builder)
    }

    /// Number of tokens of a text (no special tokens).
    pub fn count(&self, text: &str) -> Result<u64> {
        let enc = self.tokenizer.encode_fast(text, false).map_err(|e| anyhow::anyhow!("tokenizer: {e}"))?;
        Ok(enc.len() as u64)
    }

    fn push_words(&self, out: &mut String, key: u64, n: u64) {
        let mut rng = Rng::new(self.seed ^ key.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let len = self.words.len() as u64;
        for _ in 0..n {
            out.push_str(&self.words[(rng.next_u64() % len) as usize]);
        }
    }

    /// The prompt of a row: `input_length` tokens from its hash id blocks (or fresh text keyed by
    /// `row_key` when it has none).
    pub fn prompt(&self, input_length: u64, hash_ids: &[u64], row_key: u64) -> String {
        let mut out = String::with_capacity(input_length as usize * 7);
        if hash_ids.is_empty() {
            // Keyed apart from hash ids so fresh text never equals a block.
            self.push_words(&mut out, !row_key ^ 0x5555_0000_0000_0000, input_length);
            return out;
        }
        let mut left = input_length;
        for (i, &id) in hash_ids.iter().enumerate() {
            let n = if i + 1 == hash_ids.len() { left } else { left.min(self.block_size) };
            self.push_words(&mut out, id, n);
            left -= n;
            if left == 0 {
                break;
            }
        }
        out
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn builder() -> PromptBuilder {
        let tok = Tokenizer::from_bytes(EMBEDDED_TOKENIZER).unwrap();
        PromptBuilder::new(tok, 512, 42).unwrap()
    }

    #[test]
    fn exact_lengths_and_shared_prefixes() {
        let b = builder();
        let a = b.prompt(1100, &[1, 2, 3], 0);
        let c = b.prompt(700, &[1, 9], 1);
        assert_eq!(b.count(&a).unwrap(), 1100);
        assert_eq!(b.count(&c).unwrap(), 700);
        let block1 = b.prompt(512, &[1], 5);
        assert!(a.starts_with(&block1) && c.starts_with(&block1));
        assert_ne!(b.prompt(512, &[2], 0), block1);
        let fresh = b.prompt(37, &[], 3);
        assert_eq!(b.count(&fresh).unwrap(), 37);
        assert_ne!(fresh, b.prompt(37, &[], 4));
    }

    #[test]
    fn conversation_trace_prompts_have_exact_token_counts() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/traces/conversation_trace.jsonl");
        let text = std::fs::read_to_string(path).unwrap();
        let trace = aiperf_core::trace::parse_str(&text, aiperf_core::trace::ParseOptions::default()).unwrap().trace;
        let tok = Tokenizer::from_file(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/tokenizers/smollm2-135m/tokenizer.json"
        ))
        .unwrap();
        let b = PromptBuilder::new(tok, 512, 7).unwrap();
        let mut checked = 0;
        for (i, (row, ids)) in trace.iter().enumerate() {
            let n = row.input_length().unwrap() as u64;
            // Every short row, and every 100th row of any length.
            if n > 2048 && i % 100 != 0 {
                continue;
            }
            let p = b.prompt(n, ids, i as u64);
            assert_eq!(b.count(&p).unwrap(), n, "row {i}");
            checked += 1;
        }
        assert!(checked > 2500, "{checked} rows checked");
    }
}
