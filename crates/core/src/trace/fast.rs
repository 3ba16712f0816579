//! A fast path for the common shape of a Mooncake row.
//!
//! Real traces are millions of lines like `{"timestamp": 27, "input_length": 6755,
//! "output_length": 500, "hash_ids": [0, 1, 2]}`. Going through serde costs ~280 instructions per
//! hash id; this scanner reads such rows directly. It accepts only a flat object whose keys are
//! `timestamp`, `input_length`, `output_length`, `hash_ids`, `delay`, `session_id` and
//! `conversation_id`, with plain integers (and plain strings for the two ids), `input_length` present, no key twice. For
//! anything else — floats, escapes, nulls, other fields, any error — it returns `None` and the
//! caller parses the line with the full serde path, which also writes the error messages. A
//! property test checks that both paths agree on every row the fast path accepts.

use super::{Input, Number, Row};

/// Parses `text` as a plain Mooncake row, pushing its ids onto `ids`. On `None`, `ids` may hold
/// a partial tail that the caller must truncate.
pub(super) fn parse(text: &str, ids: &mut Vec<u64>, line: u64) -> Option<Row> {
    let mut s = Scanner { b: text.as_bytes(), i: 0 };
    s.ws();
    s.eat(b'{')?;
    let mut row = Row::new(Input::Length(0));
    let mut seen = 0u8;
    let mut has_input = false;
    s.ws();
    if s.peek()? == b'}' {
        return None;
    }
    loop {
        s.ws();
        let key = s.plain_string()?;
        s.ws();
        s.eat(b':')?;
        s.ws();
        let bit = match key {
            b"timestamp" => {
                row.timestamp = Some(Number::Int(s.int()?));
                1
            }
            b"input_length" => {
                row.input = Input::Length(s.int()?);
                has_input = true;
                2
            }
            b"output_length" => {
                row.output_length = Some(u64::try_from(s.int()?).ok()?);
                4
            }
            b"hash_ids" => {
                s.ids(ids)?;
                8
            }
            b"delay" => {
                let d = s.int()?;
                if d < 0 {
                    return None;
                }
                row.delay = Some(Number::Int(d));
                16
            }
            b"session_id" => {
                let v = s.plain_string()?;
                row.session_id = Some(std::str::from_utf8(v).ok()?.into());
                32
            }
            b"conversation_id" => {
                let v = s.plain_string()?;
                row.conversation = Some(std::str::from_utf8(v).ok()?.into());
                64
            }
            _ => return None,
        };
        if seen & bit != 0 {
            return None;
        }
        seen |= bit;
        s.ws();
        match s.next()? {
            b',' => continue,
            b'}' => break,
            _ => return None,
        }
    }
    s.ws();
    if s.i != s.b.len() || !has_input {
        return None;
    }
    row.line = u32::try_from(line).unwrap_or(u32::MAX);
    Some(row)
}

/// The number of leading ASCII digits among the eight bytes of `x` (the first byte lowest) and
/// their value. No byte of UTF-8 text is above 0xF4, so adding 6 to a byte never carries.
#[inline]
fn eight_digits(x: u64) -> (usize, u64) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let high = 0xF0 * ONES;
    // A byte is a digit when its high nibble is 3 both as is and after adding 6 (0x30..=0x39).
    let not_digit = ((x & high) ^ (0x30 * ONES)) | (((x + 6 * ONES) & high) ^ (0x30 * ONES));
    let n = (not_digit.trailing_zeros() / 8) as usize;
    if n == 0 {
        return (0, 0);
    }
    // The digits' values moved to the top bytes; the bytes below become leading zeros.
    let mut v = (x ^ (0x30 * ONES)) << (8 * (8 - n));
    // Pairs, then groups of four, then all eight (the first digit, lowest, is the most significant).
    v = ((v & 0x0F00_0F00_0F00_0F00) >> 8) + (v & 0x000F_000F_000F_000F) * 10;
    v = ((v & 0x00FF_0000_00FF_0000) >> 16) + (v & 0x0000_00FF_0000_00FF) * 100;
    v = ((v & 0x0000_FFFF_0000_0000) >> 32) + (v & 0x0000_0000_0000_FFFF) * 10000;
    (n, v)
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Scanner<'a> {
    #[inline]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    #[inline]
    fn next(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.i += 1;
        Some(c)
    }

    #[inline]
    fn eat(&mut self, c: u8) -> Option<()> {
        (self.next()? == c).then_some(())
    }

    #[inline]
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    /// A string without escapes or control characters (its raw bytes).
    fn plain_string(&mut self) -> Option<&'a [u8]> {
        self.eat(b'"')?;
        let start = self.i;
        loop {
            match self.next()? {
                b'"' => return Some(&self.b[start..self.i - 1]),
                b'\\' | 0..0x20 => return None,
                _ => {}
            }
        }
    }

    /// A JSON integer (no fraction, no exponent) that fits in i64.
    #[inline]
    fn int(&mut self) -> Option<i64> {
        let neg = self.peek()? == b'-';
        if neg {
            self.i += 1;
        }
        let v = self.digits()?;
        let v = i64::try_from(v).ok()?;
        // serde_json reads `-0` as the float -0.0; leave that to it.
        if neg && v == 0 {
            return None;
        }
        Some(if neg { -v } else { v })
    }

    /// Unsigned digits with JSON's rules (no leading zero), at most 18 of them so no overflow;
    /// a following `.`, `e` or `E` is a float, left to the full parser.
    #[inline]
    fn digits(&mut self) -> Option<u64> {
        let (b, start) = (self.b, self.i);
        let end = b.len().min(start + 18);
        let (mut i, mut v) = (start, 0u64);
        // Up to eight digits at once when eight bytes are there (most ids).
        if let Some(&eight) = b.get(start..).and_then(|r| r.first_chunk::<8>()) {
            let (n, value) = eight_digits(u64::from_le_bytes(eight));
            (i, v) = (start + n, value);
            if n < 8 {
                i = i.min(end);
                return self.finish_digits(start, i, v);
            }
        }
        while i < end {
            let d = b[i].wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            v = v * 10 + u64::from(d);
            i += 1;
        }
        self.finish_digits(start, i, v)
    }

    /// The checks after the digits `start..i` of value `v`.
    #[inline]
    fn finish_digits(&mut self, start: usize, i: usize, v: u64) -> Option<u64> {
        let b = self.b;
        let n = i - start;
        if n == 0 || (n > 1 && b[start] == b'0') {
            return None;
        }
        // A 19th digit may overflow; a fraction or an exponent makes a float.
        if let Some(b'0'..=b'9' | b'.' | b'e' | b'E') = b.get(i) {
            return None;
        }
        self.i = i;
        Some(v)
    }

    fn ids(&mut self, out: &mut Vec<u64>) -> Option<()> {
        self.eat(b'[')?;
        self.ws();
        if self.peek()? == b']' {
            self.i += 1;
            return Some(());
        }
        loop {
            self.ws();
            out.push(self.digits()?);
            self.ws();
            match self.next()? {
                b',' => {}
                b']' => return Some(()),
                _ => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn eight_bytes_give_their_leading_digits_and_value(bytes in prop::array::uniform8(prop_oneof![b'0'..=b'9', Just(b','), Just(b']'), Just(b' '), 0u8..0xF5])) {
            let n = bytes.iter().position(|c| !c.is_ascii_digit()).unwrap_or(8);
            let value = bytes[..n].iter().fold(0u64, |v, &c| v * 10 + u64::from(c - b'0'));
            prop_assert_eq!(eight_digits(u64::from_le_bytes(bytes)), (n, if n == 0 { 0 } else { value }));
        }
    }

    #[test]
    fn digits_around_eight_bytes() {
        for text in ["0]", "7", "12345678", "123456789]", "99999999,1", "123456789012345678", "1234567890123456789"] {
            let mut s = Scanner { b: text.as_bytes(), i: 0 };
            let want =
                text.split([']', ',']).next().and_then(|d| (d.len() <= 18).then(|| d.parse::<u64>().ok()).flatten());
            assert_eq!(s.digits(), want, "{text}");
        }
    }
}
