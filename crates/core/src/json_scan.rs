//! The one hand-written JSON reader of the fast paths: a [`Cursor`] over the bytes of a JSON text
//! and one SWAR reader of digits ([`eight_digits`]).
//!
//! The fast paths (Mooncake rows in `trace`, the flat records of `formats`, the lines of
//! `profile_export.jsonl` in `results::record`) read the common shapes of their input with it and
//! give way to serde at anything else, so every method returns `None` where it is not sure to read
//! what serde reads: strings with escapes, numbers that are not plain unsigned integers where one
//! is asked for, nesting deeper than [`MAX_DEPTH`]. What a method accepts, serde accepts with the
//! same value; [`Cursor::skip_value`] checks a skipped value as strictly as serde checks a value
//! it ignores. Whitespace is JSON's (space, tab, line feed, carriage return).

/// Deepest nesting [`Cursor::skip_value`] follows (serde_json stops at 128).
pub const MAX_DEPTH: usize = 100;

/// A position in a JSON text.
#[derive(Clone, Copy, Debug)]
pub struct Cursor<'a> {
    b: &'a [u8],
    /// The index of the next byte.
    pub i: usize,
}

impl<'a> Cursor<'a> {
    /// At the start of `b`.
    #[inline]
    pub fn new(b: &'a [u8]) -> Self {
        Cursor { b, i: 0 }
    }

    /// At `b[i]`.
    #[inline]
    pub fn at(b: &'a [u8], i: usize) -> Self {
        Cursor { b, i }
    }

    /// The next byte, not taken.
    #[inline(always)]
    pub fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// The next byte, taken.
    #[inline(always)]
    pub fn bump(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.i += 1;
        Some(c)
    }

    /// Takes `c` if it is next.
    #[inline(always)]
    pub fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    /// Skips whitespace.
    #[inline(always)]
    pub fn ws(&mut self) {
        // One comparison where there is none (every whitespace byte is at most a space).
        if self.peek().is_some_and(|c| c <= b' ') {
            self.skip_ws();
        }
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    /// Whether only whitespace is left.
    #[inline(always)]
    pub fn at_end(&mut self) -> bool {
        self.ws();
        self.i == self.b.len()
    }

    /// Takes `word` if it is next.
    #[inline]
    pub fn lit(&mut self, word: &[u8]) -> bool {
        let hit = self.b.get(self.i..).is_some_and(|r| r.starts_with(word));
        if hit {
            self.i += word.len();
        }
        hit
    }

    /// After a member of an object or list, whitespace around: `true` at `,` (another follows,
    /// the cursor at it), `false` at `close` (taken), `None` at anything else.
    #[inline(always)]
    pub fn more(&mut self, close: u8) -> Option<bool> {
        let mut c = self.bump()?;
        if c <= b' ' {
            self.i -= 1;
            self.skip_ws();
            c = self.bump()?;
        }
        if c == b',' {
            self.ws();
            Some(true)
        } else if c == close {
            Some(false)
        } else {
            None
        }
    }

    /// Opens an object or a list (`open`, whitespace after it): `false` when it is empty (its
    /// `close` taken too).
    #[inline(always)]
    pub fn open(&mut self, open: u8, close: u8) -> Option<bool> {
        self.eat(open)?;
        self.ws();
        if self.peek()? == close {
            self.i += 1;
            return Some(false);
        }
        Some(true)
    }

    /// A string without escapes or control characters: its bytes, the cursor after its quote.
    #[inline(always)]
    pub fn plain_str(&mut self) -> Option<&'a [u8]> {
        self.eat(b'"')?;
        let rest = self.b.get(self.i..)?;
        let len = string_stop(rest)?;
        if rest[len] != b'"' {
            return None;
        }
        self.i += len + 1;
        Some(&rest[..len])
    }

    /// An object's key and its colon, whitespace around the colon.
    #[inline(always)]
    pub fn key(&mut self) -> Option<&'a [u8]> {
        let k = self.plain_str()?;
        self.colon()?;
        Some(k)
    }

    /// The colon after a key, whitespace around it.
    #[inline(always)]
    fn colon(&mut self) -> Option<()> {
        let mut c = self.bump()?;
        if c <= b' ' {
            self.i -= 1;
            self.skip_ws();
            c = self.bump()?;
        }
        if c != b':' {
            return None;
        }
        self.ws();
        Some(())
    }

    /// A JSON unsigned integer (no sign, fraction, exponent or leading zero) that fits in a
    /// `u64`, read eight digits at a time.
    #[inline(always)]
    pub fn uint(&mut self) -> Option<u64> {
        let (b, start) = (self.b, self.i);
        let (n, mut v) = match b.get(start..).and_then(<[u8]>::first_chunk::<8>) {
            Some(word) => eight_digits(u64::from_le_bytes(*word)),
            None => (0, 0),
        };
        let mut i = start + n;
        if n == 8 || n == 0 {
            // More digits may follow, or fewer than eight bytes were left: one at a time, checked
            // from the 20th (19 digits always fit).
            while let Some(&c) = b.get(i) {
                let d = c.wrapping_sub(b'0');
                if d > 9 {
                    break;
                }
                v = if i - start < 19 {
                    v * 10 + u64::from(d)
                } else {
                    v.checked_mul(10)?.checked_add(u64::from(d))?
                };
                i += 1;
            }
        }
        let digits = i - start;
        if digits == 0 || (digits > 1 && b[start] == b'0') {
            return None;
        }
        // A fraction or an exponent makes a float.
        if let Some(b'.' | b'e' | b'E') = b.get(i) {
            return None;
        }
        self.i = i;
        Some(v)
    }

    /// A JSON integer that fits in an `i64` (`-0` is a float to serde_json, so not one).
    #[inline(always)]
    pub fn int(&mut self) -> Option<i64> {
        let neg = self.peek()? == b'-';
        if neg {
            self.i += 1;
        }
        let v = i64::try_from(self.uint()?).ok()?;
        if neg && v == 0 {
            return None;
        }
        Some(if neg { -v } else { v })
    }

    /// A JSON number (by JSON's grammar, as [`Cursor::skip_number`] checks it) as the nearest
    /// `f64`, which is what serde_json reads with `float_roundtrip`; `None` where it is no JSON
    /// number or too large for a finite `f64`.
    #[inline]
    pub fn float(&mut self) -> Option<f64> {
        let from = self.i;
        self.skip_number()?;
        let text = std::str::from_utf8(self.b.get(from..self.i)?).ok()?;
        text.parse::<f64>().ok().filter(|v| v.is_finite())
    }

    /// A number token as written (any of `-+.eE0-9`, at least one), not checked: the caller reads
    /// it with its own rules.
    #[inline(always)]
    pub fn number_token(&mut self) -> Option<&'a [u8]> {
        let rest = self.b.get(self.i..)?;
        let len = rest
            .iter()
            .position(|c| !matches!(c, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
            .unwrap_or(rest.len());
        (len > 0).then(|| {
            self.i += len;
            &rest[..len]
        })
    }

    /// A number by JSON's grammar, `-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?`, skipped.
    #[inline]
    pub fn skip_number(&mut self) -> Option<()> {
        let digits = |c: &mut Cursor| {
            let from = c.i;
            while c.peek().is_some_and(|b| b.is_ascii_digit()) {
                c.i += 1;
            }
            (c.i > from).then_some(c.i - from)
        };
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        let lead = self.peek()?;
        if digits(self)? > 1 && lead == b'0' {
            return None;
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            digits(self)?;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.i += 1;
            }
            digits(self)?;
        }
        Some(())
    }

    /// A string, escapes and all, skipped (escapes checked as serde_json checks them in a string
    /// it ignores).
    #[inline]
    pub fn skip_str(&mut self) -> Option<()> {
        self.eat(b'"')?;
        loop {
            self.i += string_stop(self.b.get(self.i..)?)?;
            match self.bump()? {
                b'"' => return Some(()),
                b'\\' => {}
                _ => return None,
            }
            match self.bump()? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                b'u' => {
                    let hex = self.b.get(self.i..self.i + 4)?;
                    if !hex.iter().all(u8::is_ascii_hexdigit) {
                        return None;
                    }
                    self.i += 4;
                }
                _ => return None,
            }
        }
    }

    /// Any JSON value, skipped and checked as serde_json checks a value it ignores (the number
    /// grammar, string escapes and control characters, literals); `depth` is its nesting.
    pub fn skip_value(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'"' => self.skip_str(),
            b'{' | b'[' if depth >= MAX_DEPTH => None,
            b'{' => {
                if self.open(b'{', b'}')? {
                    loop {
                        if self.peek()? != b'"' {
                            return None;
                        }
                        self.skip_str()?;
                        self.colon()?;
                        self.skip_value(depth + 1)?;
                        if !self.more(b'}')? {
                            break;
                        }
                    }
                }
                Some(())
            }
            b'[' => {
                if self.open(b'[', b']')? {
                    loop {
                        self.skip_value(depth + 1)?;
                        if !self.more(b']')? {
                            break;
                        }
                    }
                }
                Some(())
            }
            b't' => self.lit(b"true").then_some(()),
            b'f' => self.lit(b"false").then_some(()),
            b'n' => self.lit(b"null").then_some(()),
            _ => self.skip_number(),
        }
    }
}

/// Where a string's plain part ends in `rest`: the index of its first quote, backslash or control
/// character, eight bytes at a time; `None` when there is none.
#[inline(always)]
fn string_stop(rest: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut k = 0;
    while let Some(word) = rest.get(k..).and_then(<[u8]>::first_chunk::<8>) {
        let w = u64::from_le_bytes(*word);
        // A byte below `n` (n ≤ 0x80) sets its high bit in `(w − n·ONES) & !w`; borrows only reach
        // later bytes, so the lowest flagged byte is exactly the first match.
        let below = |w: u64, n: u64| w.wrapping_sub(n * ONES) & !w & HIGH;
        let stops = below(w ^ (u64::from(b'"') * ONES), 1) | below(w ^ (u64::from(b'\\') * ONES), 1) | below(w, 0x20);
        if stops != 0 {
            return Some(k + (stops.trailing_zeros() / 8) as usize);
        }
        k += 8;
    }
    rest.get(k..)?.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20).map(|p| k + p)
}

/// The leading ASCII digits among the eight bytes of `word` (the first byte lowest, as
/// `u64::from_le_bytes` reads them): how many and their value (`(0, 0)` at a non-digit).
#[inline(always)]
pub fn eight_digits(word: u64) -> (usize, u64) {
    const ZEROS: u64 = 0x3030_3030_3030_3030;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // A byte's high bit is set if it is not a digit: below '0' the subtraction wraps, above '9'
    // adding 0x76 reaches 0x80. A borrow or carry only reaches later bytes, so the first flagged
    // byte is exactly the first non-digit, whatever the bytes.
    let sub = word.wrapping_sub(ZEROS);
    let flags = (sub | sub.wrapping_add(0x7676_7676_7676_7676)) & HIGH;
    let n = (flags.trailing_zeros() / 8) as usize;
    if n == 0 {
        return (0, 0);
    }
    // The n digits to the top bytes (leading zeros below), then pairs, fours, eights.
    let mut v = (sub << (8 * (8 - n))) & 0x0F0F_0F0F_0F0F_0F0F;
    v = v.wrapping_mul(2561) >> 8;
    v = (v & 0x00FF_00FF_00FF_00FF).wrapping_mul(6_553_601) >> 16;
    v = (v & 0x0000_FFFF_0000_FFFF).wrapping_mul(42_949_672_960_001) >> 32;
    (n, v)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Eight bytes of anything: the count of leading digits and their value.
        #[test]
        fn eight_digits_reads_the_leading_digits(bytes in prop::array::uniform8(prop_oneof![b'0'..=b'9', Just(b','), Just(b']'), Just(b' '), any::<u8>()])) {
            let n = bytes.iter().position(|c| !c.is_ascii_digit()).unwrap_or(8);
            let value = bytes[..n].iter().fold(0u64, |v, &c| v * 10 + u64::from(c - b'0'));
            prop_assert_eq!(eight_digits(u64::from_le_bytes(bytes)), (n, value));
        }

        /// Unsigned integers of any length read as `str::parse` reads them, whatever follows; a
        /// leading zero refused.
        #[test]
        fn uint_agrees_with_parse(n in prop_oneof![0u64..10, 0u64..100_000_000, any::<u64>()], zero in any::<bool>(), tail in "[ ,\\]}a]{0,9}") {
            let text = format!("{}{n}{tail}", if zero { "0" } else { "" });
            prop_assert_eq!(Cursor::new(text.as_bytes()).uint(), (!zero).then_some(n));
        }
    }

    #[test]
    fn numbers_at_the_edges() {
        let uint = |t: &str| Cursor::new(t.as_bytes()).uint();
        for (t, want) in [
            ("0", Some(0)),
            ("0]", Some(0)),
            ("01", None),
            ("7", Some(7)),
            ("12345678", Some(12_345_678)),
            ("123456789]", Some(123_456_789)),
            ("18446744073709551615", Some(u64::MAX)),
            ("18446744073709551616", None),
            ("99999999999999999999", None),
            ("100000000000000000000", None),
            ("1.5", None),
            ("1e3", None),
            ("-1", None),
            ("", None),
        ] {
            assert_eq!(uint(t), want, "{t}");
        }
        let int = |t: &str| Cursor::new(t.as_bytes()).int();
        assert_eq!(int("-12,"), Some(-12));
        assert_eq!(int("-0"), None);
        assert_eq!(int("9223372036854775808"), None);
    }

    #[test]
    fn values_are_skipped_as_serde_checks_them() {
        let skip = |t: &str| {
            let mut c = Cursor::new(t.as_bytes());
            c.skip_value(0).map(|()| c.i)
        };
        let ok = ["{}", "[ ]", "{\"a\": [1, -2.5e+3, \"x\\u00e9\\n\", true, null, {\"b\": false}]}", "-0", "0.5"];
        for t in ok {
            assert_eq!(skip(t), Some(t.len()), "{t}");
            assert!(serde_json::from_str::<serde::de::IgnoredAny>(t).is_ok());
        }
        for t in
            ["01", "1.", "-", "1e", "\"\\x\"", "\"\\u12g4\"", "\"a\u{1}\"", "[1,]", "{\"a\" 1}", "{1: 2}", "nul", "tru"]
        {
            assert_eq!(skip(t), None, "{t}");
        }
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert_eq!(skip(&deep), None);
        let fine = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert_eq!(skip(&fine), Some(fine.len()));
    }

    proptest! {
        /// The end of a string's plain part, eight bytes at a time, is the first stop byte.
        #[test]
        fn string_stop_finds_the_first_quote_backslash_or_control(bytes in proptest::collection::vec(prop_oneof![Just(b'"'), Just(b'\\'), 0u8..0x20, 0x20u8..0x7f, 0x80u8..=0xff, b'a'..=b'z'], 0..40)) {
            let want = bytes.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20);
            prop_assert_eq!(string_stop(&bytes), want);
        }
    }

    #[test]
    fn strings_without_escapes_only() {
        let s = |t: &str| Cursor::new(t.as_bytes()).plain_str().map(|b| String::from_utf8(b.to_vec()).unwrap());
        assert_eq!(s("\"ab\" x").as_deref(), Some("ab"));
        assert_eq!(s("\"a\\\"b\""), None);
        assert_eq!(s("\"a\nb\""), None);
        assert_eq!(s("\"open"), None);
    }
}
