//! A fast path for flat JSON records (Bailian and ServeGen lines, WEKA requests): an object
//! whose values are numbers, strings without escapes, or lists of those, `hash_ids` read straight
//! into a reused buffer. Anything else (escapes, nesting, nulls, bad syntax) returns `None`, and
//! the caller parses the record with serde, which also writes the exact error; values of keys the
//! caller does not read may be skipped whatever they are ([`object`]), checked as strictly as
//! serde checks them. Tests check that both paths agree on the records the fast path accepts.

/// A scalar value's raw text.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Val<'a> {
    /// A number token as written.
    Num(&'a str),
    /// A string's contents (no escapes).
    Str(&'a str),
    /// A list (its contents are in the id buffer when the key is `hash_ids`, else skipped).
    List,
}

/// Calls `field` for each key and value of a flat object that is the whole of `text`;
/// `hash_ids` lists of non-negative integers are appended to `ids`. `None`: not a flat record
/// (or `field` refused a value).
pub(crate) fn scan<'a>(
    text: &'a str,
    ids: &mut Vec<u64>,
    field: impl FnMut(&'a str, Val<'a>) -> Option<()>,
) -> Option<()> {
    let b = text.as_bytes();
    let end = object(text, skip_ws(b, 0), ids, |_| true, field)?;
    (skip_ws(b, end) == b.len()).then_some(())
}

/// [`scan`] of the object starting at `text[start]`, which may be followed by anything: the
/// index after its `}`. Values of keys that `reads` refuses are skipped ([`skip_value`]) without
/// calling `field`.
pub(crate) fn object<'a>(
    text: &'a str,
    start: usize,
    ids: &mut Vec<u64>,
    reads: impl Fn(&str) -> bool,
    mut field: impl FnMut(&'a str, Val<'a>) -> Option<()>,
) -> Option<usize> {
    let b = text.as_bytes();
    let mut i = start;
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i = skip_ws(b, i + 1);
    if b.get(i) == Some(&b'}') {
        return Some(i + 1);
    }
    loop {
        let (key, next) = string(text, i)?;
        i = skip_ws(b, next);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(b, i + 1);
        if reads(key) {
            let val;
            match *b.get(i)? {
                b'"' => {
                    let (s, next) = string(text, i)?;
                    val = Val::Str(s);
                    i = next;
                }
                b'[' => {
                    i = skip_ws(b, i + 1);
                    let into_ids = key == "hash_ids";
                    if b.get(i) != Some(&b']') {
                        loop {
                            if into_ids {
                                let start = i;
                                // Up to 8 digits at once, then digit by digit past them or near the end
                                // of the text (no overflow check per digit: 19 digits fit in a u64).
                                let (mut v, n) = eight_digits(b, i);
                                i += n;
                                while (n == 8 || n == 0)
                                    && let Some(&c) = b.get(i)
                                {
                                    let d = c.wrapping_sub(b'0');
                                    if d > 9 {
                                        break;
                                    }
                                    v = v.wrapping_mul(10).wrapping_add(u64::from(d));
                                    i += 1;
                                }
                                let digits = i - start;
                                // Like JSON: at least one digit, no leading zeros.
                                if digits == 0 || (b[start] == b'0' && digits > 1) {
                                    return None;
                                }
                                if digits > 19 {
                                    v = text.get(start..i)?.parse().ok()?;
                                }
                                ids.push(v);
                            } else if b.get(i) == Some(&b'"') {
                                i = string(text, i)?.1;
                            } else {
                                i = number(b, i)?;
                            }
                            i = skip_ws(b, i);
                            match *b.get(i)? {
                                b',' => i = skip_ws(b, i + 1),
                                b']' => break,
                                _ => return None,
                            }
                        }
                    }
                    i += 1;
                    val = Val::List;
                }
                _ => {
                    let end = number(b, i)?;
                    val = Val::Num(&text[i..end]);
                    i = end;
                }
            }
            field(key, val)?;
        } else {
            i = skip_value(b, i, 0)?;
        }
        i = skip_ws(b, i);
        match *b.get(i)? {
            b',' => i = skip_ws(b, i + 1),
            b'}' => return Some(i + 1),
            _ => return None,
        }
    }
}

/// The value of the digits at `b[i..]` among the next 8 bytes (SWAR) and how many they are;
/// `(0, 0)` at a non-digit, and a count of 8 when more digits may follow. Fewer than 8 bytes
/// left: `(0, 0)`, and the caller reads digit by digit.
fn eight_digits(b: &[u8], i: usize) -> (u64, usize) {
    let Some(word) = b.get(i..i + 8) else { return (0, 0) };
    let mut w = [0u8; 8];
    w.copy_from_slice(word);
    let word = u64::from_le_bytes(w);
    const ZEROS: u64 = 0x3030_3030_3030_3030;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // A byte's high bit is set if it is not a digit: below '0' the subtraction wraps, above '9'
    // adding 0x76 reaches 0x80. A borrow or carry only reaches later bytes, so the first flagged
    // byte is exactly the first non-digit.
    let sub = word.wrapping_sub(ZEROS);
    let flags = (sub | sub.wrapping_add(0x7676_7676_7676_7676)) & HIGH;
    let n = (flags.trailing_zeros() / 8) as usize;
    if n == 0 {
        return (0, 0);
    }
    // The n digits to the top bytes (leading zeros below), then pairs, quads, eights.
    let mut v = (sub << (8 * (8 - n))) & 0x0F0F_0F0F_0F0F_0F0F;
    v = v.wrapping_mul(2561) >> 8;
    v = (v & 0x00FF_00FF_00FF_00FF).wrapping_mul(6_553_601) >> 16;
    v = (v & 0x0000_FFFF_0000_FFFF).wrapping_mul(42_949_672_960_001) >> 32;
    (v, n)
}

pub(crate) fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b' ' | b'\t' | b'\r' | b'\n')) {
        i += 1;
    }
    i
}

/// A string without escapes starting at `i` (the quote): its contents and the index after it.
pub(crate) fn string(text: &str, i: usize) -> Option<(&str, usize)> {
    let b = text.as_bytes();
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let len = b[i + 1..].iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20)?;
    let end = i + 1 + len;
    (b[end] == b'"').then(|| (&text[i + 1..end], end + 1))
}

/// How deep [`skip_value`] follows nested lists and objects (serde_json stops at 128).
const MAX_DEPTH: usize = 100;

/// The index after the JSON value starting at `b[i]` (any value, checked as serde_json checks a
/// value it ignores: the number grammar, string escapes and control characters, literals).
/// `None`: not valid JSON there, or nested deeper than [`MAX_DEPTH`].
pub(crate) fn skip_value(b: &[u8], i: usize, depth: usize) -> Option<usize> {
    match *b.get(i)? {
        b'"' => skip_string(b, i),
        b'{' | b'[' if depth >= MAX_DEPTH => None,
        b'{' => {
            let mut i = skip_ws(b, i + 1);
            if b.get(i) == Some(&b'}') {
                return Some(i + 1);
            }
            loop {
                if b.get(i) != Some(&b'"') {
                    return None;
                }
                i = skip_ws(b, skip_string(b, i)?);
                if b.get(i) != Some(&b':') {
                    return None;
                }
                i = skip_ws(b, skip_value(b, skip_ws(b, i + 1), depth + 1)?);
                match *b.get(i)? {
                    b',' => i = skip_ws(b, i + 1),
                    b'}' => return Some(i + 1),
                    _ => return None,
                }
            }
        }
        b'[' => {
            let mut i = skip_ws(b, i + 1);
            if b.get(i) == Some(&b']') {
                return Some(i + 1);
            }
            loop {
                i = skip_ws(b, skip_value(b, i, depth + 1)?);
                match *b.get(i)? {
                    b',' => i = skip_ws(b, i + 1),
                    b']' => return Some(i + 1),
                    _ => return None,
                }
            }
        }
        b't' => b[i..].starts_with(b"true").then_some(i + 4),
        b'f' => b[i..].starts_with(b"false").then_some(i + 5),
        b'n' => b[i..].starts_with(b"null").then_some(i + 4),
        _ => json_number(b, i),
    }
}

/// The index after the string starting at `b[i]` (its quote), escapes and all.
fn skip_string(b: &[u8], i: usize) -> Option<usize> {
    let mut i = i + 1;
    loop {
        let len = b.get(i..)?.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20)?;
        i += len;
        match b[i] {
            b'"' => return Some(i + 1),
            b'\\' => match *b.get(i + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                b'u' => {
                    let hex = b.get(i + 2..i + 6)?;
                    if !hex.iter().all(u8::is_ascii_hexdigit) {
                        return None;
                    }
                    i += 6;
                }
                _ => return None,
            },
            _ => return None,
        }
    }
}

/// The end of the JSON number at `b[i]`: `-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?`.
pub(crate) fn json_number(b: &[u8], mut i: usize) -> Option<usize> {
    let digits = |b: &[u8], i: usize| b.get(i..).map_or(0, |r| r.iter().take_while(|c| c.is_ascii_digit()).count());
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    match digits(b, i) {
        0 => return None,
        n if n > 1 && b[i] == b'0' => return None,
        n => i += n,
    }
    if b.get(i) == Some(&b'.') {
        match digits(b, i + 1) {
            0 => return None,
            n => i += 1 + n,
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        match digits(b, i) {
            0 => return None,
            n => i += n,
        }
    }
    Some(i)
}

/// The end of a number token starting at `i` (at least one character of `-+.eE0-9`).
fn number(b: &[u8], i: usize) -> Option<usize> {
    let len =
        b[i..].iter().position(|c| !matches!(c, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')).unwrap_or(b.len() - i);
    (len > 0).then_some(i + len)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    type Fields<'a> = Vec<(String, Val<'a>)>;

    fn fields(text: &str) -> Option<(Fields<'_>, Vec<u64>)> {
        let mut ids = Vec::new();
        let mut out = Vec::new();
        scan(text, &mut ids, |k, v| {
            out.push((k.to_string(), v));
            Some(())
        })?;
        Some((out, ids))
    }

    proptest::proptest! {
        /// The 8-digit reader agrees with `str::parse` on every prefix of digits.
        #[test]
        fn eight_digits_agrees_with_parse(n in 0u64..100_000_000_000, tail in "[ ,\\]0-9a]{0,9}") {
            let text = format!("{n}{tail}");
            let (v, len) = eight_digits(text.as_bytes(), 0);
            let digits = text.bytes().take_while(u8::is_ascii_digit).count();
            if text.len() < 8 {
                proptest::prop_assert_eq!((v, len), (0, 0));
            } else {
                proptest::prop_assert_eq!(len, digits.min(8));
                proptest::prop_assert_eq!(v, text[..len].parse::<u64>().unwrap());
            }
        }

        /// Ids of any length read as serde reads them.
        #[test]
        fn ids_agree_with_serde(ids in proptest::collection::vec(
            proptest::prop_oneof![0u64..10, 0u64..100_000, 0u64..1_000_000_000, proptest::prelude::any::<u64>()], 0..30,
        )) {
            let text = format!("{{\"hash_ids\": {}}}", serde_json::to_string(&ids).unwrap());
            proptest::prop_assert_eq!(fields(&text).unwrap().1, ids);
        }
    }

    #[test]
    fn reads_flat_records_and_refuses_the_rest() {
        let (f, ids) =
            fields("{\"a\": -1, \"t\": 61.114, \"s\": \"x\", \"hash_ids\": [3, 4], \"img\": [\"i\"]}").unwrap();
        assert_eq!(ids, [3, 4]);
        assert_eq!(f[1], ("t".into(), Val::Num("61.114")));
        assert_eq!(f[2], ("s".into(), Val::Str("x")));
        assert_eq!(f[4], ("img".into(), Val::List));
        assert!(fields("{}").unwrap().0.is_empty());
        let max = "{\"hash_ids\": [18446744073709551615, 9999999999999999999, 0]}";
        assert_eq!(fields(max).unwrap().1, [u64::MAX, 9_999_999_999_999_999_999, 0]);
        for other in [
            "{\"s\": \"a\\\"b\"}",
            "{\"n\": null}",
            "{\"o\": {}}",
            "{\"hash_ids\": [1, -2]}",
            "{\"hash_ids\": [01]}",
            "{\"hash_ids\": [18446744073709551616]}",
            "{\"hash_ids\": [99999999999999999999]}",
            "{\"hash_ids\": [100000000000000000000]}",
            "{\"a\": 1",
            "{\"a\": 1} x",
            "[1]",
            "{\"a\" 1}",
        ] {
            assert!(fields(other).is_none(), "{other}");
        }
    }
}
