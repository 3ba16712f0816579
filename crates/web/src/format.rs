//! Number formatting for the page: thousands separators, units, compact axis labels.

use aiperf_core::analysis::report::group_thousands;

/// An integer-valued number with thousands separators (`12,031`).
pub fn int(v: f64) -> String {
    group_thousands(v, 0)
}

/// A number with `decimals` decimals and thousands separators (`15,325.48`).
pub fn num(v: f64, decimals: usize) -> String {
    group_thousands(v, decimals)
}

/// A fraction in 0..=1 as a percentage with one decimal (`42.3 %`).
pub fn pct(v: f64) -> String {
    format!("{} %", group_thousands(v * 100.0, 1))
}

/// A short axis label: `950`, `1.5k`, `20k`, `1.2M`; fractions keep up to two decimals.
pub fn compact(v: f64) -> String {
    let a = v.abs();
    let trim = |s: String| {
        if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s }
    };
    if a >= 1e9 {
        format!("{}G", trim(format!("{:.1}", v / 1e9)))
    } else if a >= 1e6 {
        format!("{}M", trim(format!("{:.1}", v / 1e6)))
    } else if a >= 1e4 {
        format!("{}k", trim(format!("{:.1}", v / 1e3)))
    } else if a >= 1.0 || a == 0.0 {
        trim(format!("{v:.1}"))
    } else {
        trim(format!("{v:.2}"))
    }
}

/// A byte count in B, kB, MB (decimal units, as file managers show them).
pub fn bytes(v: u64) -> String {
    let f = v as f64;
    if f >= 1e9 {
        format!("{:.2} GB", f / 1e9)
    } else if f >= 1e6 {
        format!("{:.1} MB", f / 1e6)
    } else if f >= 1e3 {
        format!("{:.1} kB", f / 1e3)
    } else {
        format!("{v} B")
    }
}

/// Milliseconds, with one decimal below 100 ms.
pub fn millis(ms: f64) -> String {
    if ms < 100.0 { format!("{ms:.1} ms") } else { format!("{} ms", group_thousands(ms, 0)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(int(12031.0), "12,031");
        assert_eq!(num(15325.476, 2), "15,325.48");
        assert_eq!(pct(0.42323), "42.3 %");
        assert_eq!(compact(950.0), "950");
        assert_eq!(compact(1500.0), "1500");
        assert_eq!(compact(20000.0), "20k");
        assert_eq!(compact(25000.0), "25k");
        assert_eq!(compact(1_200_000.0), "1.2M");
        assert_eq!(compact(0.25), "0.25");
        assert_eq!(compact(0.0), "0");
        assert_eq!(bytes(1_136_313), "1.1 MB");
        assert_eq!(millis(12.34), "12.3 ms");
        assert_eq!(millis(1234.0), "1,234 ms");
    }
}
