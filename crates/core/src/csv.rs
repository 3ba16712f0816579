//! The one CSV dialect of the project, read and written: fields separated by commas, one record
//! per line, a field holding a comma, a quote or a line break written inside `"…"` with its quotes
//! doubled. [`split`] reads the trace formats' lines; [`field`], [`quoted`] and [`push_cell`] write
//! the exports.

use std::borrow::Cow;
use std::fmt::{Display, Write as _};

/// Splits one line into fields (`"…"` quoting, `""` inside for a quote); `None` for an
/// unterminated quote.
pub fn split(line: &str) -> Option<Vec<Cow<'_, str>>> {
    if !line.contains('"') {
        return Some(line.split(',').map(Cow::Borrowed).collect());
    }
    let mut out = Vec::new();
    let mut rest = line;
    loop {
        if let Some(quoted) = rest.strip_prefix('"') {
            let mut value = String::new();
            let mut chars = quoted.char_indices();
            let end = loop {
                match chars.next() {
                    None => return None,
                    Some((i, '"')) => {
                        if quoted[i + 1..].starts_with('"') {
                            value.push('"');
                            chars.next();
                        } else {
                            break i + 1;
                        }
                    }
                    Some((_, c)) => value.push(c),
                }
            };
            out.push(Cow::Owned(value));
            rest = &quoted[end..];
            match rest.strip_prefix(',') {
                Some(r) => rest = r,
                None if rest.is_empty() => return Some(out),
                None => return None,
            }
        } else {
            match rest.find(',') {
                Some(i) => {
                    out.push(Cow::Borrowed(&rest[..i]));
                    rest = &rest[i + 1..];
                }
                None => {
                    out.push(Cow::Borrowed(rest));
                    return Some(out);
                }
            }
        }
    }
}

/// A field as written: quoted when it holds a comma, a quote or a line break.
pub fn field(v: &str) -> String {
    if v.contains([',', '"', '\n', '\r']) { quoted(v) } else { v.to_owned() }
}

/// A field always quoted, its quotes doubled.
pub fn quoted(v: &str) -> String {
    format!("\"{}\"", v.replace('"', "\"\""))
}

/// Appends a comma and the value: a cell left empty where there is no value.
pub fn push_cell(out: &mut String, v: Option<impl Display>) {
    out.push(',');
    if let Some(v) = v {
        let _ = write!(out, "{v}");
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_split_and_quoted_alike() {
        assert_eq!(split("a,,b").unwrap(), ["a", "", "b"]);
        assert_eq!(split("\"x,y\",\"say \"\"hi\"\"\",z").unwrap(), ["x,y", "say \"hi\"", "z"]);
        assert_eq!(split("\"open,b"), None);
        assert_eq!(split("\"a\"b,c"), None);
        for v in ["plain", "a,b", "say \"hi\"", "two\nlines", ""] {
            assert_eq!(split(&field(v)).unwrap(), [v]);
        }
        assert_eq!(field("x"), "x");
        assert_eq!(quoted("x"), "\"x\"");
        let mut row = String::from("a");
        push_cell(&mut row, Some(1.5));
        push_cell(&mut row, None::<f64>);
        push_cell(&mut row, Some(2));
        assert_eq!(row, "a,1.5,,2");
    }
}
