//! [`Summary`] (the reference's seven numbers) and [`Distribution`] (AIPerf's metric aggregation) of a list.

use super::moments::{mean, mean_of_sum, std_dev, std_dev_about, sum};
use super::percentile::{lerp, percentile_ranks, percentiles_selected};
use serde::{Deserialize, Serialize};

/// The seven-number summary of the reference's trace report.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub mean: f64,
    pub std_dev: f64,
    pub min: f64,
    pub p25: f64,
    pub median: f64,
    pub p75: f64,
    pub max: f64,
}

impl Summary {
    /// Summary of a list, `None` when it is empty.
    pub fn of(values: &[f64]) -> Option<Summary> {
        let (min, [p25, median, p75], max) = percentiles_selected(values, [25.0, 50.0, 75.0])?;
        Some(Summary { mean: mean(values)?, std_dev: std_dev(values)?, min, p25, median, p75, max })
    }
}

/// The percentiles a latency report shows.
pub const REPORT_PERCENTILES: [f64; 9] = [1.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0];

/// Mean, std, min, max and the [`REPORT_PERCENTILES`] of a list (AIPerf's metric aggregation).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Distribution {
    pub count: usize,
    /// The values added up (in [`sum`]'s order).
    pub sum: f64,
    pub avg: f64,
    pub std: f64,
    pub min: f64,
    pub max: f64,
    /// Values at [`REPORT_PERCENTILES`], in order.
    pub percentiles: [f64; 9],
}

impl Distribution {
    pub fn of(values: &[f64]) -> Option<Distribution> {
        let (min, percentiles, max) = percentiles_selected(values, REPORT_PERCENTILES)?;
        let total = sum(values);
        let avg = mean_of_sum(values, total)?;
        Some(Distribution {
            count: values.len(),
            sum: total,
            avg,
            std: std_dev_about(values, avg)?,
            min,
            max,
            percentiles,
        })
    }

    /// [`Distribution::of`] borrowed or owned values.
    pub fn of_cow(values: std::borrow::Cow<'_, [f64]>) -> Option<Distribution> {
        Distribution::of(&values)
    }

    /// [`Distribution::of`] `values`, given them sorted ascending as well (`sorted`, by
    /// `f64::total_cmp`): the same numbers, bit for bit, without selecting the percentiles again.
    pub fn of_sorted(values: &[f64], sorted: &[f64]) -> Option<Distribution> {
        debug_assert_eq!(values.len(), sorted.len());
        let n = sorted.len();
        if n == 0 {
            return None;
        }
        let percentiles = REPORT_PERCENTILES.map(|p| {
            let (lo, hi, t) = percentile_ranks(n, p);
            lerp(sorted[lo], sorted[hi], t)
        });
        Some(Distribution {
            count: n,
            sum: sum(values),
            avg: mean(values)?,
            std: std_dev(values)?,
            min: sorted[0],
            max: sorted[n - 1],
            percentiles,
        })
    }

    /// The value at percentile `p` if it is one of [`REPORT_PERCENTILES`].
    pub fn percentile(&self, p: f64) -> Option<f64> {
        REPORT_PERCENTILES.iter().position(|&q| q == p).map(|i| self.percentiles[i])
    }
}
