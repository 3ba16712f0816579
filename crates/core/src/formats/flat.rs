//! A fast path for the flat JSONL records of Bailian and ServeGen: an object whose values are
//! numbers, strings without escapes, or lists of those, `hash_ids` read straight into a reused
//! buffer. Anything else (escapes, nesting, nulls, bad syntax) returns `None`, and the caller
//! parses the line with serde, which also writes the exact error. A test checks that both paths
//! agree on the records the fast path accepts.

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

/// Calls `field` for each key and value of a flat object; `hash_ids` lists of non-negative
/// integers are appended to `ids`. `None`: not a flat record (or `field` refused a value).
pub(crate) fn scan<'a>(
    text: &'a str,
    ids: &mut Vec<u64>,
    mut field: impl FnMut(&'a str, Val<'a>) -> Option<()>,
) -> Option<()> {
    let b = text.as_bytes();
    let mut i = skip_ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i = skip_ws(b, i + 1);
    if b.get(i) == Some(&b'}') {
        return (skip_ws(b, i + 1) == b.len()).then_some(());
    }
    loop {
        let (key, next) = string(text, i)?;
        i = skip_ws(b, next);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(b, i + 1);
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
                            let (v, end) = id(b, i)?;
                            i = end;
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
        i = skip_ws(b, i);
        match *b.get(i)? {
            b',' => i = skip_ws(b, i + 1),
            b'}' => return (skip_ws(b, i + 1) == b.len()).then_some(()),
            _ => return None,
        }
    }
}

/// A JSON non-negative integer that fits in u64 starting at `i`, and the index after it: eight
/// digits at a time where eight bytes are there (most ids), then one at a time, checked for
/// overflow only past 19 digits.
#[inline]
fn id(b: &[u8], start: usize) -> Option<(u64, usize)> {
    let (mut v, mut i) = (0u64, start);
    if let Some(&eight) = b.get(start..).and_then(|r| r.first_chunk::<8>()) {
        let (n, value) = crate::trace::fast::eight_digits(u64::from_le_bytes(eight));
        (v, i) = (value, start + n);
        if n < 8 {
            return finish_id(b, start, i, v);
        }
    }
    while let Some(&d @ b'0'..=b'9') = b.get(i) {
        v = if i - start < 19 {
            v * 10 + u64::from(d - b'0')
        } else {
            v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?
        };
        i += 1;
    }
    finish_id(b, start, i, v)
}

/// Like JSON: at least one digit, no leading zeros.
#[inline]
fn finish_id(b: &[u8], start: usize, i: usize, v: u64) -> Option<(u64, usize)> {
    (i > start && !(b[start] == b'0' && i - start > 1)).then_some((v, i))
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b' ' | b'\t' | b'\r' | b'\n')) {
        i += 1;
    }
    i
}

/// A string without escapes starting at `i` (the quote): its contents and the index after it.
fn string(text: &str, i: usize) -> Option<(&str, usize)> {
    let b = text.as_bytes();
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let len = b[i + 1..].iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20)?;
    let end = i + 1 + len;
    (b[end] == b'"').then(|| (&text[i + 1..end], end + 1))
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
        /// The id reader gives what parsing the digits gives, for every length and any bytes after.
        #[test]
        fn ids_read_like_str_parse(text in "[0-9]{0,24}", after in "[ ,\\]a-z0-9]{0,9}") {
            let whole = format!("{text}{after}");
            let digits = whole.bytes().take_while(u8::is_ascii_digit).count();
            let want = whole[..digits].parse::<u64>().ok().filter(|_| !(digits > 1 && whole.starts_with('0')));
            proptest::prop_assert_eq!(id(whole.as_bytes(), 0), want.map(|v| (v, digits)));
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
        for other in [
            "{\"s\": \"a\\\"b\"}",
            "{\"n\": null}",
            "{\"o\": {}}",
            "{\"hash_ids\": [1, -2]}",
            "{\"hash_ids\": [01]}",
            "{\"hash_ids\": [18446744073709551616]}",
            "{\"a\": 1",
            "{\"a\": 1} x",
            "[1]",
            "{\"a\" 1}",
        ] {
            assert!(fields(other).is_none(), "{other}");
        }
    }
}
