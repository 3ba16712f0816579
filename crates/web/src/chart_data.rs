//! Chart data computed in the worker from per-row values: histograms with a CDF, and the
//! arrival-rate series. Only these small summaries cross to the page, never the million-row vectors.

use aiperf_core::stats::{percentile_sorted, sorted};
use aiperf_core::view::charts::nice_step;
use serde::{Deserialize, Serialize};

/// Bars of a histogram plus the cumulative distribution over the same x range.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Dist {
    /// Left edge of the first bin.
    pub lo: f64,
    /// Width of every bin.
    pub step: f64,
    pub counts: Vec<u64>,
    /// Values at or above the right edge (shown as a note, not as a bar).
    pub overflow: u64,
    /// Number of values.
    pub total: u64,
    /// `(x, fraction of values ≤ x)`, x increasing, within the bins' range.
    pub cdf: Vec<(f64, f64)>,
}

impl Dist {
    /// Right edge of the last bin.
    pub fn hi(&self) -> f64 {
        self.lo + self.step * self.counts.len() as f64
    }

    /// Histogram of non-negative lengths, cut at a round number above the 99th percentile.
    pub fn lengths(values: &[f64]) -> Dist {
        let s = sorted(values);
        let (Some(&max), Some(p99)) = (s.last(), percentile_sorted(&s, 99.0)) else {
            return Dist::default();
        };
        let top = if max <= p99 * 1.25 { max } else { p99 };
        let step = nice_step(top.max(1.0) / 50.0).max(1.0);
        let bins = ((top / step).floor() as usize + 1).clamp(1, 200);
        Self::binned(&s, 0.0, step, bins)
    }

    /// Histogram of fractions in 0..=1 (1.0 falls in the last bin).
    pub fn fractions(values: &[f64]) -> Dist {
        let s = sorted(values);
        let mut d = Self::binned(&s, 0.0, 0.05, 20);
        for &v in s.iter().rev().take_while(|&&v| v >= 1.0) {
            if v == 1.0 {
                d.overflow -= 1;
                if let Some(last) = d.counts.last_mut() {
                    *last += 1;
                }
            }
        }
        d
    }

    fn binned(s: &[f64], lo: f64, step: f64, bins: usize) -> Dist {
        let mut counts = vec![0u64; bins];
        let mut overflow = 0;
        for &v in s {
            let k = ((v - lo) / step).floor();
            if k >= 0.0 && (k as usize) < bins {
                counts[k as usize] += 1;
            } else if k >= 0.0 {
                overflow += 1;
            }
        }
        let hi = lo + step * bins as f64;
        let n = s.len();
        // 201 quantiles (every half percent) draw a smooth CDF whatever the number of rows.
        let mut cdf: Vec<(f64, f64)> = (0..=200)
            .filter_map(|i| percentile_sorted(s, f64::from(i) / 2.0).map(|x| (x, f64::from(i) / 200.0)))
            .filter(|&(x, _)| x <= hi)
            .collect();
        // Equal x (repeated values): keep one point, at the highest fraction.
        cdf.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                kept.1 = later.1;
            }
            same
        });
        Dist { lo, step, counts, overflow, total: n as u64, cdf }
    }
}

/// A series of `(x, y)` points.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// Width of one point's window, in seconds.
    pub window_s: f64,
    /// `(start of window in seconds, mean requests per second in the window)`.
    pub points: Vec<(f64, f64)>,
}

impl Series {
    /// Merges per-window counts (windows of `window_s` seconds) into at most `max_points` points
    /// of mean rate.
    pub fn rates(counts: &[u32], window_s: f64, max_points: usize) -> Series {
        if counts.is_empty() || max_points == 0 {
            return Series { window_s, points: Vec::new() };
        }
        let k = counts.len().div_ceil(max_points);
        let width = window_s * k as f64;
        let points = counts
            .chunks(k)
            .enumerate()
            .map(|(i, c)| {
                let sum: f64 = c.iter().map(|&v| f64::from(v)).sum();
                (i as f64 * width, sum / (c.len() as f64 * window_s))
            })
            .collect();
        Series { window_s: width, points }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn length_histogram_counts_every_value_once() {
        let v: Vec<f64> = (0..1000).map(f64::from).chain([1e6]).collect();
        let d = Dist::lengths(&v);
        assert_eq!(d.counts.iter().sum::<u64>() + d.overflow, 1001);
        assert_eq!(d.overflow, 1);
        assert!(d.hi() >= 990.0 && d.hi() < 1100.0, "{}", d.hi());
        assert_eq!(d.step, 20.0);
        assert!(d.cdf.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1));
        assert!(d.cdf.last().is_some_and(|p| p.1 >= 0.99));
    }

    #[test]
    fn fraction_histogram_keeps_ones_in_the_last_bin() {
        let d = Dist::fractions(&[0.0, 0.5, 1.0, 1.0]);
        assert_eq!(d.counts.len(), 20);
        assert_eq!((d.counts[0], d.counts[10], d.counts[19], d.overflow), (1, 1, 2, 0));
        assert!(Dist::fractions(&[]).counts.iter().all(|&c| c == 0));
        assert_eq!(Dist::lengths(&[]), Dist::default());
    }

    #[test]
    fn rates_merge_windows() {
        let s = Series::rates(&[1, 3, 2, 2, 5], 1.0, 2);
        assert_eq!(s.window_s, 3.0);
        assert_eq!(s.points, [(0.0, 2.0), (3.0, 3.5)]);
    }
}
