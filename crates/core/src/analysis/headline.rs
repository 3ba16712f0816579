//! [`Headline`]: the few numbers of a one-line summary of a trace, without the rest of the
//! analysis.

use super::ids::{Interner, leading_hits};
use crate::trace::Trace;

/// The few numbers a one-line summary of a trace shows, as [`analyze`] computes them (the same
/// values, bit for bit), in one pass over the rows without the rest of the analysis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Headline {
    pub rows: u64,
    /// Mean input length over every row (0 for a row without one), as [`Analysis::avg_isl`].
    pub avg_isl: f64,
    /// Mean output length, as [`Analysis::avg_osl`].
    pub avg_osl: f64,
    /// The infinite-cache hit rate, as [`Analysis::cache_hit_rate`].
    pub cache_hit_rate: f64,
}

/// [`Headline`] of a trace.
pub fn headline(trace: &Trace) -> Headline {
    let rows = trace.rows();
    let isl: Vec<f64> = rows.iter().map(|r| r.input_length().unwrap_or(0) as f64).collect();
    let osl: Vec<f64> = rows.iter().map(|r| r.output_length.unwrap_or(0) as f64).collect();
    let mut interner = Interner::new();
    let (mut numbered, mut seen, mut hit_rate) = (Vec::new(), 0u32, Vec::with_capacity(rows.len()));
    for row in rows {
        let ids = trace.hash_ids(row);
        if ids.is_empty() {
            continue;
        }
        numbered.clear();
        numbered.extend(ids.iter().take(u32::MAX as usize).map(|&id| interner.intern(id)));
        hit_rate.push(leading_hits(&numbered, &mut seen) as f64 / numbered.len() as f64);
    }
    let mean_or_zero = |v: &[f64]| crate::stats::mean(v).unwrap_or(0.0);
    Headline {
        rows: rows.len() as u64,
        avg_isl: mean_or_zero(&isl),
        avg_osl: mean_or_zero(&osl),
        cache_hit_rate: mean_or_zero(&hit_rate),
    }
}
