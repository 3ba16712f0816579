//! Text layout of the reports: numbers with thousands separators, aligned tables.

/// Formats a number with thousands separators and `decimals` decimals (`12,813.10`).
pub fn group_thousands(value: f64, decimals: usize) -> String {
    if !value.is_finite() {
        return value.to_string();
    }
    let s = format!("{:.*}", decimals, value.abs());
    let (int, frac) = s.split_once('.').map_or((s.as_str(), None), |(i, f)| (i, Some(f)));
    let mut out = String::with_capacity(s.len() + s.len() / 3 + 1);
    if value < 0.0 && s.bytes().any(|b| b.is_ascii_digit() && b != b'0') {
        out.push('-');
    }
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if let Some(f) = frac {
        out.push('.');
        out.push_str(f);
    }
    out
}

/// A plain aligned table: the first column left-aligned, the others right-aligned.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let cols = header.len();
    let mut width: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (w, cell) in width.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let line = |out: &mut String, cells: &[String]| {
        for (i, cell) in cells.iter().enumerate().take(cols) {
            let pad = width[i] - cell.chars().count();
            if i == 0 {
                out.push_str(cell);
                out.push_str(&" ".repeat(pad));
            } else {
                out.push_str("  ");
                out.push_str(&" ".repeat(pad));
                out.push_str(cell);
            }
        }
        out.push('\n');
    };
    line(&mut out, &header.iter().map(|h| h.to_string()).collect::<Vec<_>>());
    let total: usize = width.iter().sum::<usize>() + 2 * (cols.saturating_sub(1));
    out.push_str(&"─".repeat(total));
    out.push('\n');
    for r in rows {
        line(&mut out, r);
    }
    out
}
