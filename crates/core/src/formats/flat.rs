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
                            let start = i;
                            let mut v: u64 = 0;
                            // No overflow check per digit: 19 digits always fit in a u64.
                            while let Some(&c) = b.get(i) {
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
        i = skip_ws(b, i);
        match *b.get(i)? {
            b',' => i = skip_ws(b, i + 1),
            b'}' => return (skip_ws(b, i + 1) == b.len()).then_some(()),
            _ => return None,
        }
    }
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
