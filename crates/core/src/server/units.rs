//! The unit of a server metric, as AIPerf 0.13 infers it for its raw exports: a 0–1 or 0–100
//! range in the description first, then a unit the description names ("(in MiB)", "in
//! seconds", "(tokens/s)"), then the name's suffix (`_seconds`, `_total`, …). Returns AIPerf's
//! display names ("seconds", "count", "ratio", …).

/// Name suffixes, longest first (ties in AIPerf's table order), and their units.
const SUFFIXES: [(&str, &str); 35] = [
    ("_error_count_total", "errors"),
    ("_requests_total", "requests"),
    ("request_success", "requests"),
    ("_seconds_total", "seconds"),
    ("_milliseconds", "milliseconds"),
    ("_tokens_total", "tokens"),
    ("_errors_total", "errors"),
    ("_blocks_total", "blocks"),
    ("_nanoseconds", "nanoseconds"),
    ("_bytes_total", "bytes"),
    ("_error_count", "errors"),
    ("_block_count", "blocks"),
    ("_kilobytes", "kilobytes"),
    ("_megabytes", "megabytes"),
    ("_gigabytes", "gigabytes"),
    ("_ms_total", "milliseconds"),
    ("_ns_total", "nanoseconds"),
    ("_requests", "requests"),
    ("_seconds", "seconds"),
    ("_percent", "percent"),
    ("_celsius", "celsius"),
    ("_tokens", "tokens"),
    ("_errors", "errors"),
    ("_blocks", "blocks"),
    ("_joules", "joule"),
    ("_bytes", "bytes"),
    ("_total", "count"),
    ("_count", "count"),
    ("_ratio", "ratio"),
    ("_watts", "watt"),
    ("_reqs", "requests"),
    ("_gb_s", "gb/s"),
    ("_perc", "percent"),
    ("_ms", "milliseconds"),
    ("_ns", "nanoseconds"),
];

/// The unit tags of "(in TAG)" (case as written).
const TAGS: [(&str, &str); 31] = [
    ("MiB", "megabytes"),
    ("GiB", "gigabytes"),
    ("KiB", "kilobytes"),
    ("B", "bytes"),
    ("MB", "megabytes"),
    ("GB", "gigabytes"),
    ("KB", "kilobytes"),
    ("TB", "terabytes"),
    ("C", "celsius"),
    ("°C", "celsius"),
    ("F", "fahrenheit"),
    ("°F", "fahrenheit"),
    ("K", "kelvin"),
    ("Hz", "hertz"),
    ("MHz", "megahertz"),
    ("GHz", "gigahertz"),
    ("W", "watt"),
    ("mW", "milliwatt"),
    ("J", "joule"),
    ("mJ", "millijoule"),
    ("MJ", "megajoule"),
    ("s", "seconds"),
    ("sec", "seconds"),
    ("ms", "milliseconds"),
    ("ns", "nanoseconds"),
    ("us", "microseconds"),
    ("µs", "microseconds"),
    ("GB/s", "gb/s"),
    ("MB/s", "mb/s"),
    ("%", "percent"),
    ("percent", "percent"),
];

/// Units the description names after "in " or "(", in the order they are tried: the unit's
/// spellings (longest first) and its name.
const NAMED: [(&[&str], &str); 8] = [
    (&["seconds", "second"], "seconds"),
    (&["milliseconds", "millisecond", "ms"], "milliseconds"),
    (&["nanoseconds", "nanosecond", "ns"], "nanoseconds"),
    (&["bytes", "byte"], "bytes"),
    (&["gb/s"], "gb/s"),
    (&["mb/s"], "mb/s"),
    (&["tokens/second", "tokens/sec", "tokens/s", "token/second", "token/sec", "token/s"], "tokens/s"),
    (&["requests/second", "requests/sec", "requests/s", "request/second", "request/sec", "request/s"], "requests/s"),
];

/// AIPerf's unit of the metric `name` with the `# HELP` text `help` (`None`: none inferred).
pub fn infer_unit(name: &str, help: &str) -> Option<&'static str> {
    scale(help).or_else(|| named_in_help(help)).or_else(|| from_name(name))
}

fn from_name(name: &str) -> Option<&'static str> {
    let lower = name.to_lowercase();
    SUFFIXES
        .iter()
        .find(|(s, _)| lower.ends_with(s))
        .map(|(_, u)| *u)
        .or_else(|| lower.contains("num_requests_").then_some("requests"))
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The text is lowercased char by char (so that positions stay those of `help`'s chars).
fn chars_lower(s: &str) -> Vec<char> {
    s.chars().map(|c| c.to_lowercase().next().unwrap_or(c)).collect()
}

/// Whether a word boundary precedes position `i`.
fn boundary_before(t: &[char], i: usize) -> bool {
    i == 0 || !is_word(t[i - 1])
}

/// Whether position `i` (just past a word char) is a word boundary.
fn boundary_at(t: &[char], i: usize) -> bool {
    t.get(i).is_none_or(|&c| !is_word(c))
}

fn skip_spaces(t: &[char], mut i: usize) -> usize {
    while t.get(i).is_some_and(|c| c.is_whitespace()) {
        i += 1;
    }
    i
}

/// `lit` at `i`: the position after it.
fn lit(t: &[char], i: usize, lit: &str) -> Option<usize> {
    let mut j = i;
    for c in lit.chars() {
        if t.get(j) != Some(&c) {
            return None;
        }
        j += 1;
    }
    Some(j)
}

/// `0`, `0.0` at `i` when `dot_zero`, then spaces, a run of dashes or `to`, spaces: the position
/// of the upper bound.
fn range_start(t: &[char], i: usize, dot_zero: bool) -> Vec<usize> {
    let Some(after0) = lit(t, i, "0") else { return Vec::new() };
    let mut starts = vec![after0];
    if dot_zero && let Some(j) = lit(t, after0, ".0") {
        starts.push(j);
    }
    let mut out = Vec::new();
    for s in starts {
        let j = skip_spaces(t, s);
        let mut k = j;
        while t.get(k).is_some_and(|c| matches!(c, '-' | '–' | '—')) {
            k += 1;
        }
        if k > j {
            out.push(skip_spaces(t, k));
        }
        if let Some(k) = lit(t, j, "to") {
            out.push(skip_spaces(t, k));
        }
    }
    out
}

/// A 0–1 range ("(0-1)", "0.0 to 1.0", "range 0-1", "1 means 100 percent") → ratio; a 0–100
/// range ("(0-100)", "range 0-100", "0-100%") → percent.
fn scale(help: &str) -> Option<&'static str> {
    let t = chars_lower(help);
    let ratio = (0..t.len()).any(|i| {
        if !boundary_before(&t, i) {
            return false;
        }
        let upper_is_one = range_start(&t, i, true)
            .into_iter()
            .any(|j| [lit(&t, j, "1.0"), lit(&t, j, "1")].into_iter().flatten().any(|e| boundary_at(&t, e)));
        upper_is_one || one_is_hundred(&t, i)
    });
    if ratio {
        return Some("ratio");
    }
    let percent = (0..t.len()).any(|i| {
        // "(0-100)", "(0.0 to 100.0)".
        let in_parens = i > 0
            && t[i - 1] == '('
            && range_start(&t, i, true).into_iter().any(|j| {
                lit(&t, j, "100").is_some_and(|e| {
                    let e = lit(&t, e, ".0").filter(|&d| t.get(d) == Some(&')')).unwrap_or(e);
                    t.get(e) == Some(&')')
                })
            });
        let named_range = lit(&t, i, "range").is_some_and(|e| {
            boundary_before(&t, i) && t.get(e).is_some_and(|c| c.is_whitespace()) && {
                let j = skip_spaces(&t, e);
                range_start(&t, j, false).into_iter().any(|k| lit(&t, k, "100").is_some_and(|e| boundary_at(&t, e)))
            }
        });
        let with_sign = boundary_before(&t, i)
            && range_start(&t, i, false)
                .into_iter()
                .any(|k| lit(&t, k, "100").is_some_and(|e| t.get(skip_spaces(&t, e)) == Some(&'%')));
        in_parens || named_range || with_sign
    });
    percent.then_some("percent")
}

/// "1 means 100 percent", "1 = 100%", "1.0 is 100 %" at `i`.
fn one_is_hundred(t: &[char], i: usize) -> bool {
    if !boundary_before(t, i) {
        return false;
    }
    let Some(e) = lit(t, i, "1") else { return false };
    [Some(e), lit(t, e, ".0")].into_iter().flatten().any(|e| {
        let j = skip_spaces(t, e);
        ["means", "is", "equals", "equal", "==", "="].iter().filter_map(|w| lit(t, j, w)).any(|k| {
            let k = skip_spaces(t, k);
            lit(t, k, "100").is_some_and(|e| {
                let e = skip_spaces(t, e);
                lit(t, e, "%").is_some() || lit(t, e, "percent").is_some()
            })
        })
    })
}

/// A unit the description names: "(in TAG)" first, then "in UNIT" or "(UNIT", then "in tokens".
fn named_in_help(help: &str) -> Option<&'static str> {
    if let Some(start) = help.find("(in")
        && let Some(tag) = parenthetical_tag(help, start)
        && let Some((_, unit)) = TAGS.iter().find(|(t, _)| *t == tag)
    {
        return Some(unit);
    }
    let t = chars_lower(help);
    // Positions just after "in" + spaces (with a boundary before "in") or after "(".
    let openings: Vec<usize> = (0..t.len())
        .filter_map(|i| {
            if t[i] == '(' {
                return Some(i + 1);
            }
            let e = lit(&t, i, "in")?;
            (boundary_before(&t, i) && t.get(e).is_some_and(|c| c.is_whitespace())).then(|| skip_spaces(&t, e))
        })
        .collect();
    for (spellings, unit) in NAMED {
        let found = openings.iter().any(|&j| {
            spellings.iter().any(|s| lit(&t, j, s).is_some_and(|e| boundary_at(&t, e) || t.get(e) == Some(&')')))
        });
        if found {
            return Some(unit);
        }
    }
    (0..t.len())
        .any(|i| {
            boundary_before(&t, i)
                && lit(&t, i, "in").is_some_and(|e| {
                    t.get(e).is_some_and(|c| c.is_whitespace()) && {
                        let j = skip_spaces(&t, e);
                        [lit(&t, j, "tokens"), lit(&t, j, "token")].into_iter().flatten().any(|e| boundary_at(&t, e))
                    }
                })
        })
        .then_some("tokens")
}

/// The first "(in TAG)" of the text (case as written): TAG, or `None` when the first "(in"
/// opens no such group. Later groups are not looked at, as AIPerf's search stops at the first.
fn parenthetical_tag(help: &str, mut from: usize) -> Option<&str> {
    loop {
        let rest = &help[from..];
        let at = rest.find("(in")?;
        let after = &rest[at + 3..];
        let trimmed = after.trim_start();
        if trimmed.len() < after.len() {
            let end = trimmed.find(|c: char| c.is_whitespace() || c == ')').unwrap_or(trimmed.len());
            if end > 0 && trimmed[end..].starts_with(')') {
                return Some(&trimmed[..end]);
            }
        }
        from += at + 3;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_as_aiperf_infers_them() {
        for (name, help, unit) in [
            ("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", Some("ratio")),
            ("vllm:num_requests_running", "Number of requests in model execution batches.", Some("requests")),
            ("vllm:prefix_cache_hits_total", "x", Some("count")),
            ("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", Some("seconds")),
            ("x", "(in MiB)", Some("megabytes")),
            ("x", "rate (tokens/s)", Some("tokens/s")),
            ("x", "in tokens", Some("tokens")),
            ("cache_hit_percent", "Hit rate (0.0-1.0)", Some("ratio")),
            ("gpu_util", "Utilization (0-100)", Some("percent")),
            ("gpu_util", "Utilization 0 to 100%", Some("percent")),
            ("latency", "Request latency in milliseconds", Some("milliseconds")),
            ("gpu_power", "Power consumption (in W)", Some("watt")),
            ("unknown_metric", "", None),
            ("vllm:request_success_total", "Count of successfully processed requests.", Some("count")),
            ("vllm:request_success", "Count of successfully processed requests.", Some("requests")),
            ("q", "Requests waiting.", None),
            ("x_ms", "took 0-10 ms", Some("milliseconds")),
        ] {
            assert_eq!(infer_unit(name, help), unit, "{name}: {help}");
        }
    }
}
