//! A fast path for flat JSON records (Bailian and ServeGen lines, WEKA requests): an object
//! whose values are numbers, strings without escapes, or lists of those, `hash_ids` read straight
//! into a reused buffer, all with [`crate::json_scan`]. Anything else (escapes, nesting, nulls,
//! bad syntax) returns `None`, and the caller parses the record with serde, which also writes the
//! exact error; values of keys the caller does not read may be skipped whatever they are
//! ([`object`]), checked as strictly as serde checks them. Tests check that both paths agree on
//! the records the fast path accepts.

use crate::json_scan::Cursor;

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
    let mut c = Cursor::new(text.as_bytes());
    c.ws();
    object(text, c, ids, |_| true, field)?.at_end().then_some(())
}

/// [`scan`] of the object at the cursor, which may be followed by anything: the cursor after
/// it. Values of keys that `reads` refuses are skipped
/// ([`Cursor::skip_value`]) without calling `field`.
pub(crate) fn object<'a>(
    text: &'a str,
    mut c: Cursor<'a>,
    ids: &mut Vec<u64>,
    reads: impl Fn(&str) -> bool,
    mut field: impl FnMut(&'a str, Val<'a>) -> Option<()>,
) -> Option<Cursor<'a>> {
    if !c.open(b'{', b'}')? {
        return Some(c);
    }
    loop {
        let at = c.i + 1;
        let key = text.get(at..at + c.key()?.len())?;
        if reads(key) {
            let val = match c.peek()? {
                b'"' => Val::Str(plain_str(text, &mut c)?),
                b'[' => {
                    if c.open(b'[', b']')? {
                        let into_ids = key == "hash_ids";
                        loop {
                            if into_ids {
                                ids.push(c.uint()?);
                            } else if c.peek() == Some(b'"') {
                                c.plain_str()?;
                            } else {
                                c.number_token()?;
                            }
                            if !c.more(b']')? {
                                break;
                            }
                        }
                    }
                    Val::List
                }
                _ => {
                    let at = c.i;
                    Val::Num(text.get(at..at + c.number_token()?.len())?)
                }
            };
            field(key, val)?;
        } else {
            c.skip_value(0)?;
        }
        if !c.more(b'}')? {
            return Some(c);
        }
    }
}

/// A string without escapes at the cursor, as a part of `text`.
pub(crate) fn plain_str<'a>(text: &'a str, c: &mut Cursor<'a>) -> Option<&'a str> {
    let at = c.i + 1;
    text.get(at..at + c.plain_str()?.len())
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
