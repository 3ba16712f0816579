//! Exact token counts without the full `tokenizers` pipeline, for GPT-2-style byte-level BPE.
//!
//! Counting an answer's tokens (the records thread does it for every streamed answer) through
//! `Tokenizer::encode_fast` costs ~45 µs for 64 tokens: the GPT-2 split regex runs on
//! fancy-regex, and every piece, token and offset is allocated. For the tokenizers most servers
//! use — no normalizer, a `ByteLevel` pre-tokenizer with the GPT-2 regex and no prefix space, a
//! BPE model, no truncation or padding — the count of an ASCII text that holds no added token is
//! the sum over the regex's pieces of the BPE model's token count for the piece. This module
//! splits ASCII text with a hand-written matcher of that regex and remembers each piece's count.
//!
//! Anything else goes to `encode_fast`: a tokenizer of another shape, non-ASCII text, and text
//! that contains an added token's content (added tokens are cut out before pre-tokenization).
//! The fast path gives the same count as `encode_fast(text, false).len()`; the tests check it on
//! random and real texts.

use std::collections::HashMap;
use std::sync::Mutex;

use anyhow::{Result, anyhow};
use tokenizers::{Model, ModelWrapper, PostProcessorWrapper, PreTokenizerWrapper, Tokenizer};

/// Pieces longer than this (in bytes) are counted but not remembered.
const MAX_CACHED_PIECE: usize = 32;
/// The piece cache holds at most this many entries (about 5 MB); when full it is emptied.
const CACHE_CAPACITY: usize = 1 << 16;

/// Counts tokens of texts exactly as `encode_fast(text, false).len()` does, faster when it can.
pub struct TokenCounter {
    tokenizer: Tokenizer,
    /// Present when the tokenizer has the GPT-2 byte-level BPE shape.
    fast: Option<Fast>,
}

struct Fast {
    /// `first_byte[b]`: some added token's content starts with byte `b`.
    first_byte: [bool; 256],
    added: Vec<Box<str>>,
    /// Token count of each piece of the split, bounded by `CACHE_CAPACITY`.
    cache: Mutex<HashMap<Box<str>, u32>>,
}

impl TokenCounter {
    pub fn new(tokenizer: Tokenizer) -> TokenCounter {
        let fast = gpt2_byte_level(&tokenizer).then(|| {
            let mut first_byte = [false; 256];
            let mut added = Vec::new();
            for token in tokenizer.get_added_tokens_decoder().into_values() {
                if let Some(&b) = token.content.as_bytes().first() {
                    first_byte[usize::from(b)] = true;
                    added.push(token.content.into_boxed_str());
                }
            }
            Fast { first_byte, added, cache: Mutex::new(HashMap::new()) }
        });
        TokenCounter { tokenizer, fast }
    }

    /// Whether ASCII texts are counted without `encode_fast`.
    #[cfg(test)]
    fn has_fast_path(&self) -> bool {
        self.fast.is_some()
    }

    /// Number of tokens of `text`, without special tokens.
    pub fn count(&self, text: &str) -> Result<u64> {
        if let Some(fast) = &self.fast
            && let Some(n) = self.count_fast(fast, text)?
        {
            return Ok(n);
        }
        self.count_slow(text)
    }

    fn count_slow(&self, text: &str) -> Result<u64> {
        let enc = self.tokenizer.encode_fast(text, false).map_err(|e| anyhow!("tokenizer: {e}"))?;
        Ok(enc.len() as u64)
    }

    /// The count through the hand-written split, or `None` where it does not apply to `text`.
    fn count_fast(&self, fast: &Fast, text: &str) -> Result<Option<u64>> {
        let bytes = text.as_bytes();
        if !text.is_ascii() {
            return Ok(None);
        }
        if bytes.iter().any(|&b| fast.first_byte[usize::from(b)]) && fast.added.iter().any(|t| text.contains(&**t)) {
            return Ok(None);
        }
        let model = self.tokenizer.get_model();
        let mut cache = fast.cache.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut mapped = String::new();
        let mut total = 0u64;
        let mut result = Ok(());
        split_gpt2(bytes, |piece| {
            if result.is_err() {
                return;
            }
            // Pieces of ASCII text are ASCII, so always valid UTF-8.
            let key = std::str::from_utf8(piece).unwrap_or_default();
            if let Some(&n) = cache.get(key) {
                total += u64::from(n);
                return;
            }
            mapped.clear();
            mapped.extend(piece.iter().map(|&b| byte_char(b)));
            match model.tokenize(&mapped) {
                Ok(tokens) => {
                    let n = u32::try_from(tokens.len()).unwrap_or(u32::MAX);
                    total += u64::from(n);
                    if piece.len() <= MAX_CACHED_PIECE {
                        if cache.len() >= CACHE_CAPACITY {
                            cache.clear();
                        }
                        cache.insert(key.into(), n);
                    }
                }
                Err(e) => result = Err(anyhow!("tokenizer: {e}")),
            }
        });
        result.map(|()| Some(total))
    }
}

/// Whether `encode_fast(text, false)` of an ASCII text without added tokens is the BPE model run
/// on each piece of the GPT-2 split, byte-level mapped.
fn gpt2_byte_level(tokenizer: &Tokenizer) -> bool {
    let pre = matches!(tokenizer.get_pre_tokenizer(),
        Some(PreTokenizerWrapper::ByteLevel(b)) if b.use_regex && !b.add_prefix_space);
    let model = matches!(tokenizer.get_model(),
        ModelWrapper::BPE(bpe) if bpe.dropout.is_none_or(|p| p == 0.0));
    // Without special tokens these post-processors add nothing and keep every token.
    let post = matches!(
        tokenizer.get_post_processor(),
        None | Some(PostProcessorWrapper::ByteLevel(_) | PostProcessorWrapper::Template(_))
    );
    tokenizer.get_normalizer().is_none()
        && pre
        && model
        && post
        && tokenizer.get_truncation().is_none()
        && tokenizer.get_padding().is_none()
}

/// GPT-2's byte-to-character map for ASCII bytes: printable characters other than the space are
/// themselves, bytes 0–32 are U+0100–U+0120 and DEL is U+0121.
fn byte_char(b: u8) -> char {
    match b {
        b'!'..=b'~' => char::from(b),
        0..=32 => char::from_u32(0x100 + u32::from(b)).unwrap_or(' '),
        _ => '\u{121}',
    }
}

fn is_space(b: u8) -> bool {
    // Unicode White_Space within ASCII: \t \n \v \f \r and the space.
    matches!(b, b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' ')
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum Class {
    Letter,
    Digit,
    Other,
}

fn class(b: u8) -> Class {
    if b.is_ascii_alphabetic() {
        Class::Letter
    } else if b.is_ascii_digit() {
        Class::Digit
    } else {
        Class::Other
    }
}

/// Length of a contraction (`s t re ve m ll d`, lowercase) at the start of `rest`, after a `'`.
fn contraction(rest: &[u8]) -> Option<usize> {
    match rest {
        [b's' | b't' | b'm' | b'd', ..] => Some(1),
        [b'r', b'e', ..] | [b'v', b'e', ..] | [b'l', b'l', ..] => Some(2),
        _ => None,
    }
}

/// Calls `piece` with each match of
/// `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+` over ASCII `text`,
/// in order (the matches cover the text).
fn split_gpt2(text: &[u8], mut piece: impl FnMut(&[u8])) {
    let n = text.len();
    let mut i = 0;
    while i < n {
        let b = text[i];
        let next_word = i + 1 < n && !is_space(text[i + 1]);
        let end = if b == b'\''
            && let Some(len) = contraction(&text[i + 1..])
        {
            i + 1 + len
        } else if !is_space(b) || (b == b' ' && next_word) {
            // ` ?\p{L}+`, ` ?\p{N}+` or ` ?[^\s\p{L}\p{N}]+`: a run of one class, after an
            // optional space.
            let start = if b == b' ' { i + 1 } else { i };
            let c = class(text[start]);
            let mut j = start + 1;
            while j < n && !is_space(text[j]) && class(text[j]) == c {
                j += 1;
            }
            j
        } else {
            let mut k = i + 1;
            while k < n && is_space(text[k]) {
                k += 1;
            }
            if k == n {
                // `\s+(?!\S)` up to the end of the text.
                n
            } else if k - i >= 2 {
                // `\s+(?!\S)` leaves the last whitespace character to the next piece.
                k - 1
            } else {
                // `\s+`: one whitespace character (not a space) before a word.
                k
            }
        };
        piece(&text[i..end]);
        i = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn counter() -> &'static TokenCounter {
        static C: std::sync::OnceLock<TokenCounter> = std::sync::OnceLock::new();
        C.get_or_init(|| TokenCounter::new(Tokenizer::from_bytes(crate::io::tokenizer::EMBEDDED_TOKENIZER).unwrap()))
    }

    fn slow(text: &str) -> u64 {
        counter().count_slow(text).unwrap()
    }

    fn fast(text: &str) -> Option<u64> {
        let c = counter();
        c.count_fast(c.fast.as_ref().unwrap(), text).unwrap()
    }

    fn pieces(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        split_gpt2(text.as_bytes(), |p| out.push(String::from_utf8(p.to_vec()).unwrap()));
        out
    }

    #[track_caller]
    fn check(text: &str) {
        let added = counter().fast.as_ref().unwrap().added.iter().any(|t| text.contains(&**t));
        assert_eq!(fast(text), (!added).then(|| slow(text)), "{text:?}");
        assert_eq!(counter().count(text).unwrap(), slow(text), "{text:?}");
    }

    #[test]
    fn embedded_tokenizer_takes_the_fast_path() {
        assert!(counter().has_fast_path());
    }

    #[test]
    fn split_follows_each_branch_of_the_pattern() {
        assert_eq!(pieces(" 's"), [" '", "s"]);
        assert_eq!(pieces("it's"), ["it", "'s"]);
        assert_eq!(pieces("'S"), ["'", "S"]);
        assert_eq!(pieces("'ll've"), ["'ll", "'ve"]);
        assert_eq!(pieces("'lx're'r"), ["'", "lx", "'re", "'", "r"]);
        assert_eq!(pieces("!'s"), ["!'", "s"]);
        assert_eq!(pieces("  a"), [" ", " a"]);
        assert_eq!(pieces("a  \n b"), ["a", "  \n", " b"]);
        assert_eq!(pieces("a\nb"), ["a", "\n", "b"]);
        assert_eq!(pieces("a \n\tb"), ["a", " \n", "\t", "b"]);
        assert_eq!(pieces("end  "), ["end", "  "]);
        assert_eq!(pieces("end \n"), ["end", " \n"]);
        assert_eq!(pieces(" 12ab?!"), [" 12", "ab", "?!"]);
        assert_eq!(pieces("x \x01\x7f"), ["x", " \x01\x7f"]);
        assert_eq!(pieces(""), Vec::<String>::new());
    }

    #[test]
    fn edge_cases_count_like_encode_fast() {
        for text in [
            "",
            " ",
            "  ",
            "\n",
            " 's",
            "'s",
            "  a",
            "a  \n b",
            "trailing  ",
            "trailing\n\n",
            "'S",
            "'ll've",
            "don't I'm you'd they'll we've you're",
            "'",
            "''s",
            "\t\tx",
            "a\x0b\x0cb\r\n",
            "1234567890 3.14",
            "x = f(y) + 2 * z; // ok?",
            "\x00\x01\x7f",
            " \u{7f}",
        ] {
            check(text);
        }
    }

    #[test]
    fn fallback_for_non_ascii_and_added_tokens() {
        assert_eq!(fast("café"), None);
        assert_eq!(fast("hello<|im_end|>"), None);
        assert_eq!(fast("<|endoftext|>"), None);
        // A '<' alone is no added token: the fast path counts it.
        assert!(fast("a < b <| c").is_some());
        for text in ["café au lait", "hello<|im_end|>", "<|im_start|>user\nhi<|im_end|>", "日本語 text"] {
            assert_eq!(counter().count(text).unwrap(), slow(text), "{text:?}");
        }
    }

    #[test]
    fn other_tokenizer_shapes_take_encode_fast() {
        let json: serde_json::Value = serde_json::from_slice(crate::io::tokenizer::EMBEDDED_TOKENIZER).unwrap();
        let variants: [(&str, serde_json::Value); 3] = [
            ("/normalizer", serde_json::json!({"type": "NFC"})),
            ("/pre_tokenizer/add_prefix_space", serde_json::json!(true)),
            ("/pre_tokenizer/use_regex", serde_json::json!(false)),
        ];
        for (pointer, value) in variants {
            let mut json = json.clone();
            *json.pointer_mut(pointer).unwrap() = value;
            let tok = Tokenizer::from_bytes(serde_json::to_vec(&json).unwrap()).unwrap();
            let expected = tok.encode_fast("hello  world's\n 12", false).unwrap().len() as u64;
            let c = TokenCounter::new(tok);
            assert!(!c.has_fast_path(), "{pointer}");
            assert_eq!(c.count("hello  world's\n 12").unwrap(), expected, "{pointer}");
        }
    }

    #[test]
    fn real_texts_count_like_encode_fast() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../");
        for file in ["README.md", "ARCHITECTURE.md", "BENCHMARKS.md", "crates/native-cli/src/io/token_count.rs"] {
            let text = std::fs::read_to_string(format!("{root}{file}")).unwrap();
            let ascii: String = text.chars().filter(char::is_ascii).collect();
            for chunk in ascii.as_bytes().chunks(997) {
                check(std::str::from_utf8(chunk).unwrap());
            }
            assert_eq!(counter().count(&text).unwrap(), slow(&text), "{file}");
        }
        for entry in std::fs::read_dir(format!("{root}tests/fixtures/traces")).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "jsonl") {
                let text = std::fs::read_to_string(&path).unwrap();
                for line in text.lines().take(200) {
                    assert_eq!(counter().count(line).unwrap(), slow(line), "{line:?}");
                }
            }
        }
    }

    fn ascii_text() -> impl Strategy<Value = String> {
        let atom = prop_oneof![
            4 => Just(" ".to_string()),
            2 => Just("\n".to_string()),
            1 => Just("\t".to_string()),
            1 => Just("\r\n".to_string()),
            2 => Just("'".to_string()),
            1 => prop::sample::select(vec!["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'LL", "'r", "'v", "'l"]).prop_map(str::to_string),
            3 => "[a-zA-Z]{1,12}",
            2 => "[0-9]{1,6}",
            2 => "[!-/:-@\\[-`{-~]{1,3}",
            1 => "[\\x00-\\x7f]{1,4}",
            1 => Just("<".to_string()),
            1 => Just("<|im_end|>".to_string()),
        ];
        prop::collection::vec(atom, 0..60).prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn random_ascii_counts_like_encode_fast(text in ascii_text()) {
            prop_assert_eq!(counter().count(&text).unwrap(), slow(&text), "{:?}", text);
            if !text.contains("<|im_end|>") {
                prop_assert_eq!(fast(&text), Some(slow(&text)), "{:?}", text);
            }
        }
    }
}
