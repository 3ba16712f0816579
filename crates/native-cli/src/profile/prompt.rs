//! Prompts of exact token length from `input_length` + `hash_ids`, with a real tokenizer.
//!
//! The builder picks a vocabulary of words that encode to exactly one token each and never merge
//! with a neighbour (a space followed by lowercase letters, checked against the tokenizer). A hash
//! id's block is a deterministic sequence of such words drawn from a generator seeded by the run
//! seed and the id, so equal ids give equal text and a row's prompt is the concatenation of its
//! blocks: exactly `input_length` tokens, sharing a textual prefix wherever the trace shares ids.
//! Text is generated on demand, per request, so a 100,000-row trace is ready at once.

use aiperf_core::replay::schedule::Rng;
use anyhow::{Result, bail};
use tokenizers::Tokenizer;

use crate::io::token_count::TokenCounter;

/// Builds prompt text of exact token counts.
pub struct PromptBuilder {
    counter: TokenCounter,
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
        for (token, id) in vocab {
            // Byte-level BPE marks a leading space with 'Ġ', SentencePiece with '▁'; other
            // vocabularies are decoded. Either way the candidate is verified by encoding it.
            let text = match token.strip_prefix('Ġ').or_else(|| token.strip_prefix('▁')) {
                Some(rest) => format!(" {rest}"),
                None if token.starts_with(|c: char| c.is_ascii_lowercase()) => continue,
                None => match tokenizer.decode(&[id], false) {
                    Ok(t) => t,
                    Err(_) => continue,
                },
            };
            let Some(rest) = text.strip_prefix(' ') else { continue };
            if !(2..=10).contains(&rest.len()) || !rest.bytes().all(|b| b.is_ascii_lowercase()) {
                continue;
            }
            if tokenizer.encode_fast(text.as_str(), false).map(|e| e.len()).ok() == Some(1) {
                words.push(text.into_boxed_str());
                if words.len() == 2048 {
                    break;
                }
            }
        }
        if words.len() < 64 {
            bail!("the tokenizer has too few single-token words ({}) to build prompts of exact length", words.len());
        }
        let builder =
            PromptBuilder { counter: TokenCounter::new(tokenizer), words, block_size: block_size.max(1), seed };
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
        self.counter.count(text)
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
        // The usual ~7 bytes per token, within reason: a longer prompt grows as it is built.
        let mut out = String::with_capacity(usize::try_from(input_length.saturating_mul(7)).unwrap_or(0).min(64 << 20));
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
    use crate::io::tokenizer::EMBEDDED_TOKENIZER;

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
