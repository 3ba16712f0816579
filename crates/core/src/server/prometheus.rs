//! A strict parser of the Prometheus text exposition format (0.0.4, and the OpenMetrics subset
//! servers send: `# EOF`, `# UNIT`), as served at `/metrics` by vLLM, SGLang, llama.cpp, Dynamo.
//!
//! Families follow `prometheus_client`'s parser, which AIPerf uses: a counter family's name loses
//! its `_total` suffix (`vllm:prefix_cache_hits_total` → `vllm:prefix_cache_hits`); histogram and
//! summary samples (`_bucket`, `_sum`, `_count`) join their family; a sample without `# TYPE` is
//! an `untyped` family of its own. Anything that is not the format (an HTML page, JSON, a
//! truncated label) is an error naming the line, so that a scraper can warn once and stop.
//! Sizes are bounded by [`Limits`]; a breach is an error, never growth.

use std::collections::BTreeMap;

/// What a family measures (`# TYPE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
    Summary,
    Untyped,
}

impl Kind {
    /// The name written in `# TYPE` and in the exports (`untyped` is AIPerf's `unknown`).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
            Kind::Summary => "summary",
            Kind::Untyped => "unknown",
        }
    }

    fn parse(s: &str) -> Option<Kind> {
        Some(match s {
            "counter" => Kind::Counter,
            "gauge" => Kind::Gauge,
            "histogram" | "gaugehistogram" => Kind::Histogram,
            "summary" => Kind::Summary,
            "untyped" | "unknown" | "info" | "stateset" => Kind::Untyped,
            _ => return None,
        })
    }
}

/// Label pairs in the order the server wrote them.
pub type Labels = Vec<(String, String)>;

/// One sample line.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// The sample's own name (`x_bucket`, `x_total`, …).
    pub name: String,
    pub labels: Labels,
    pub value: f64,
}

/// A metric family: its samples in the order they came.
#[derive(Clone, Debug, PartialEq)]
pub struct Family {
    /// The family name (a counter's without `_total`).
    pub name: String,
    pub kind: Kind,
    pub help: String,
    pub samples: Vec<Sample>,
}

/// Limits of one exposition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most samples (lines with a value).
    pub max_samples: usize,
    /// Longest line (bytes).
    pub max_line_bytes: usize,
}

/// Default [`Limits`]: 20,000 samples (vLLM with a few models serves about 1,500), lines of 64 KiB.
pub const DEFAULT_LIMITS: Limits = Limits { max_samples: 20_000, max_line_bytes: 64 << 10 };

/// Why a text is not a Prometheus exposition.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    #[error("line {line}: {what}")]
    Syntax { line: usize, what: String },
    #[error("more than {limit} samples (limit of one scrape)")]
    TooManySamples { limit: usize },
    #[error("line {line}: longer than {limit} bytes")]
    LineTooLong { line: usize, limit: usize },
    #[error("no metric at all")]
    Empty,
}

fn syntax(line: usize, what: impl Into<String>) -> ParseError {
    ParseError::Syntax { line, what: what.into() }
}

fn is_name_start(c: u8, colon: bool) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || (colon && c == b':')
}

fn is_name_char(c: u8, colon: bool) -> bool {
    is_name_start(c, colon) || c.is_ascii_digit()
}

/// Reads a metric (`colon`) or label name at the start of `s`; returns it and the rest.
fn name(s: &str, colon: bool) -> Option<(&str, &str)> {
    let b = s.as_bytes();
    if !b.first().is_some_and(|&c| is_name_start(c, colon)) {
        return None;
    }
    let end = b.iter().position(|&c| !is_name_char(c, colon)).unwrap_or(b.len());
    Some((&s[..end], &s[end..]))
}

/// A sample value as the format writes it (Go's `ParseFloat` forms and `±Inf`, `NaN`).
pub fn parse_value(s: &str) -> Option<f64> {
    match s {
        "+Inf" | "Inf" | "inf" | "+inf" => Some(f64::INFINITY),
        "-Inf" | "-inf" => Some(f64::NEG_INFINITY),
        "NaN" | "nan" => Some(f64::NAN),
        _ if s.bytes().all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-')) => s.parse().ok(),
        _ => None,
    }
}

/// Parses a label set `{a="x",b="y"}` at the start of `s` (after the `{`); returns the labels and
/// the rest after `}`.
fn labels(s: &str, line: usize) -> Result<(Labels, &str), ParseError> {
    let mut out = Labels::new();
    let mut rest = s.trim_start();
    loop {
        if let Some(r) = rest.strip_prefix('}') {
            return Ok((out, r));
        }
        let (key, r) = name(rest, false).ok_or_else(|| syntax(line, "expected a label name or '}'"))?;
        let r =
            r.trim_start().strip_prefix('=').ok_or_else(|| syntax(line, format!("expected '=' after label {key}")))?;
        let r = r.trim_start().strip_prefix('"').ok_or_else(|| syntax(line, format!("label {key}: expected '\"'")))?;
        let mut value = String::new();
        let mut chars = r.char_indices();
        let end = loop {
            match chars.next() {
                None => return Err(syntax(line, format!("label {key}: unterminated value"))),
                Some((i, '"')) => break i + 1,
                Some((_, '\\')) => match chars.next() {
                    Some((_, '\\')) => value.push('\\'),
                    Some((_, '"')) => value.push('"'),
                    Some((_, 'n')) => value.push('\n'),
                    _ => return Err(syntax(line, format!("label {key}: invalid escape"))),
                },
                Some((_, c)) => value.push(c),
            }
        };
        out.push((key.to_owned(), value));
        rest = r[end..].trim_start();
        if let Some(r) = rest.strip_prefix(',') {
            rest = r.trim_start();
        } else if !rest.starts_with('}') {
            return Err(syntax(line, "expected ',' or '}' after a label"));
        }
    }
}

/// `# HELP` text with `\\` and `\n` unescaped.
fn unescape_help(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match (c, chars.clone().next()) {
            ('\\', Some('\\')) => {
                out.push('\\');
                chars.next();
            }
            ('\\', Some('n')) => {
                out.push('\n');
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}

/// Declared families while parsing: name → (kind, help).
#[derive(Default)]
struct Declared {
    kind: BTreeMap<String, Kind>,
    help: BTreeMap<String, String>,
}

impl Declared {
    /// The family a sample name belongs to: itself if declared, else the declared histogram,
    /// summary or counter it is a `_bucket`/`_sum`/`_count`/`_total`/`_created` sample of.
    fn family_of(&self, sample: &str) -> (String, Kind) {
        if let Some(&k) = self.kind.get(sample) {
            return (sample.to_owned(), k);
        }
        for (suffix, kinds) in [
            ("_bucket", &[Kind::Histogram][..]),
            ("_sum", &[Kind::Histogram, Kind::Summary]),
            ("_count", &[Kind::Histogram, Kind::Summary]),
            ("_total", &[Kind::Counter]),
            ("_created", &[Kind::Counter, Kind::Histogram, Kind::Summary]),
        ] {
            if let Some(base) = sample.strip_suffix(suffix)
                && let Some(&k) = self.kind.get(base)
                && kinds.contains(&k)
            {
                return (base.to_owned(), k);
            }
        }
        (sample.to_owned(), Kind::Untyped)
    }
}

/// Parses one exposition into its families, in the order they first appear.
pub fn parse(text: &str, limits: Limits) -> Result<Vec<Family>, ParseError> {
    let mut declared = Declared::default();
    let mut families: Vec<Family> = Vec::new();
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    let mut samples = 0usize;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        if raw.len() > limits.max_line_bytes {
            return Err(ParseError::LineTooLong { line, limit: limits.max_line_bytes });
        }
        let l = raw.trim();
        if l.is_empty() {
            continue;
        }
        if let Some(comment) = l.strip_prefix('#') {
            let comment = comment.trim_start();
            if comment == "EOF" {
                break;
            }
            let (word, rest) = comment.split_once([' ', '\t']).unwrap_or((comment, ""));
            if word != "HELP" && word != "TYPE" {
                continue; // a plain comment, or OpenMetrics `# UNIT`
            }
            let rest = rest.trim_start();
            let (fam, rest) =
                name(rest, true).ok_or_else(|| syntax(line, format!("# {word} without a metric name")))?;
            if !rest.is_empty() && !rest.starts_with([' ', '\t']) {
                return Err(syntax(line, format!("# {word}: invalid metric name")));
            }
            let rest = rest.trim();
            if word == "HELP" {
                declared.help.insert(fam.to_owned(), unescape_help(rest));
            } else {
                let kind = Kind::parse(rest).ok_or_else(|| syntax(line, format!("unknown type '{rest}' of {fam}")))?;
                declared.kind.insert(fam.to_owned(), kind);
            }
            continue;
        }
        let (sample_name, rest) =
            name(l, true).ok_or_else(|| syntax(line, "expected a metric name, '#' or an empty line"))?;
        let (labels, rest) = match rest.trim_start().strip_prefix('{') {
            Some(r) => labels(r, line)?,
            None => (Labels::new(), rest),
        };
        if !rest.starts_with([' ', '\t']) {
            return Err(syntax(line, format!("{sample_name}: expected a space before the value")));
        }
        // An OpenMetrics exemplar (` # {trace_id="…"} 1`) after the value is not a measurement.
        let rest = rest.split_once(" # ").map_or(rest, |(v, _)| v);
        let mut fields = rest.split_whitespace();
        let v = fields.next().ok_or_else(|| syntax(line, format!("{sample_name}: no value")))?;
        let value = parse_value(v).ok_or_else(|| syntax(line, format!("{sample_name}: invalid value '{v}'")))?;
        if let Some(ts) = fields.next()
            && parse_value(ts).is_none_or(f64::is_nan)
        {
            return Err(syntax(line, format!("{sample_name}: invalid timestamp '{ts}'")));
        }
        if fields.next().is_some() {
            return Err(syntax(line, format!("{sample_name}: unexpected text after the value")));
        }
        samples += 1;
        if samples > limits.max_samples {
            return Err(ParseError::TooManySamples { limit: limits.max_samples });
        }
        let (fam, kind) = declared.family_of(sample_name);
        let at = match index.get(&fam) {
            Some(&at) => at,
            None => {
                let help = declared.help.get(&fam).cloned().unwrap_or_default();
                families.push(Family { name: fam.clone(), kind, help, samples: Vec::new() });
                index.insert(fam, families.len() - 1);
                families.len() - 1
            }
        };
        families[at].samples.push(Sample { name: sample_name.to_owned(), labels, value });
    }
    if families.is_empty() {
        return Err(ParseError::Empty);
    }
    for f in &mut families {
        if f.kind == Kind::Counter
            && let Some(base) = f.name.strip_suffix("_total")
        {
            f.name = base.to_owned();
        }
    }
    Ok(families)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const VLLM: &str = r#"# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 1200.0
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3.0
# HELP vllm:e2e_request_latency_seconds Histogram of e2e request latency in seconds.
# TYPE vllm:e2e_request_latency_seconds histogram
vllm:e2e_request_latency_seconds_bucket{le="0.3",model_name="m"} 1.0
vllm:e2e_request_latency_seconds_bucket{le="+Inf",model_name="m"} 4.0
vllm:e2e_request_latency_seconds_count{model_name="m"} 4.0
vllm:e2e_request_latency_seconds_sum{model_name="m"} 2.5
# TYPE rpc_duration summary
rpc_duration{quantile="0.5"} 0.1
rpc_duration_sum 10
rpc_duration_count 100
loose_metric 7 1700000000000
"#;

    #[test]
    fn families_kinds_labels_and_total_stripped() {
        let f = parse(VLLM, DEFAULT_LIMITS).unwrap();
        let names: Vec<(&str, Kind)> = f.iter().map(|f| (f.name.as_str(), f.kind)).collect();
        assert_eq!(
            names,
            [
                ("vllm:prefix_cache_queries", Kind::Counter),
                ("vllm:num_requests_running", Kind::Gauge),
                ("vllm:e2e_request_latency_seconds", Kind::Histogram),
                ("rpc_duration", Kind::Summary),
                ("loose_metric", Kind::Untyped),
            ]
        );
        assert_eq!(f[0].help, "Prefix cache queries, in terms of number of queried tokens.");
        assert_eq!(f[0].samples[0].labels, vec![("engine".into(), "0".into()), ("model_name".into(), "m".into())]);
        assert_eq!(f[0].samples[0].value, 1200.0);
        assert_eq!(f[2].samples.len(), 4);
        assert_eq!(f[2].samples[1].value, 4.0);
        assert_eq!(f[2].samples[1].labels[0], ("le".into(), "+Inf".into()));
        assert_eq!(f[3].samples.len(), 3);
        assert_eq!(f[4].samples[0].value, 7.0);
    }

    #[test]
    fn escapes_in_labels_and_help() {
        let t = "# HELP a Line one\\nback\\\\slash\n# TYPE a gauge\na{path=\"C:\\\\x\",q=\"say \\\"hi\\\"\",n=\"a\\nb\",} 1\n";
        let f = parse(t, DEFAULT_LIMITS).unwrap();
        assert_eq!(f[0].help, "Line one\nback\\slash");
        let l = &f[0].samples[0].labels;
        assert_eq!(l[0].1, "C:\\x");
        assert_eq!(l[1].1, "say \"hi\"");
        assert_eq!(l[2].1, "a\nb");
    }

    #[test]
    fn special_values_and_eof() {
        let f =
            parse("a NaN\nb +Inf\nc -Inf\nd 1e3 # {trace_id=\"x\"} 1\n# EOF\ngarbage here\n", DEFAULT_LIMITS).unwrap();
        assert!(f[0].samples[0].value.is_nan());
        assert_eq!(f[1].samples[0].value, f64::INFINITY);
        assert_eq!(f[2].samples[0].value, f64::NEG_INFINITY);
        assert_eq!(f[3].samples[0].value, 1000.0);
    }

    #[test]
    fn garbage_is_an_error_naming_the_line() {
        for (text, needle) in [
            ("<html><body>Not Found</body></html>", "line 1"),
            ("[{\"gpu\": 1}]", "line 1"),
            ("ok 1\nbad{le=\"1\" 2\n", "line 2"),
            ("x{a=\"1\"} one\n", "invalid value 'one'"),
            ("x{a=\"\\q\"} 1\n", "invalid escape"),
            ("# TYPE x widget\nx 1\n", "unknown type 'widget'"),
            ("x 1 2 3\n", "unexpected text"),
            ("", "no metric"),
            ("# just a comment\n", "no metric"),
        ] {
            let e = parse(text, DEFAULT_LIMITS).unwrap_err().to_string();
            assert!(e.contains(needle), "{text:?}: {e}");
        }
    }

    #[test]
    fn limits_are_errors() {
        let many: String = (0..11).map(|i| format!("m{i} 1\n")).collect();
        let l = Limits { max_samples: 10, max_line_bytes: 100 };
        assert_eq!(parse(&many, l), Err(ParseError::TooManySamples { limit: 10 }));
        let long = format!("m{} 1\n", "x".repeat(200));
        assert_eq!(parse(&long, l), Err(ParseError::LineTooLong { line: 1, limit: 100 }));
    }

    /// (name, value, labels) of one gauge.
    type Gauge = (String, f64, Labels);

    fn render(families: &[Gauge]) -> String {
        let mut s = String::new();
        for (n, v, labels) in families {
            s.push_str(&format!("# TYPE {n} gauge\n{n}"));
            if !labels.is_empty() {
                let l: Vec<String> = labels
                    .iter()
                    .map(|(k, v)| {
                        format!("{k}=\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n"))
                    })
                    .collect();
                s.push_str(&format!("{{{}}}", l.join(",")));
            }
            s.push_str(&format!(" {v:?}\n"));
        }
        s
    }

    proptest! {
        #[test]
        fn rendered_gauges_parse_back(
            fams in proptest::collection::btree_map(
                "[a-z_:][a-z0-9_:]{0,12}",
                (-1e12f64..1e12, proptest::collection::btree_map("[a-z_][a-z0-9_]{0,6}", "[ -~\n]{0,10}", 0..4)),
                1..8,
            )
        ) {
            let list: Vec<Gauge> =
                fams.iter().map(|(n, (v, l))| (n.clone(), *v, l.clone().into_iter().collect())).collect();
            let parsed = parse(&render(&list), DEFAULT_LIMITS).unwrap();
            prop_assert_eq!(parsed.len(), list.len());
            for (p, (n, v, l)) in parsed.iter().zip(&list) {
                prop_assert_eq!(&p.name, n);
                prop_assert_eq!(p.kind, Kind::Gauge);
                prop_assert_eq!(p.samples[0].value, *v);
                prop_assert_eq!(&p.samples[0].labels, l);
            }
        }

        #[test]
        fn any_text_parses_or_errors_without_panicking(s in "\\PC{0,200}") {
            let _ = parse(&s, DEFAULT_LIMITS);
        }
    }
}
