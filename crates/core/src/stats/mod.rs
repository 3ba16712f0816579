//! The one statistics module: mean, population standard deviation, and percentiles.
//!
//! Percentile definition (numpy's default, "linear"): for `n` sorted values and `p` in [0, 100],
//! `k = (n − 1)·p/100`; the result interpolates linearly between `values[floor(k)]` and
//! `values[ceil(k)]`. Every percentile in the project goes through [`percentile_sorted`].
//!
//! Summation follows the reference bit for bit: the mean is `sum / n` with the values added in
//! order (numpy's pairwise summation differs only past 8 values per block, which we replicate in
//! [`sum`]), and the standard deviation is `sqrt(mean((x − mean)²))`.
//!
//! One file a job: `moments` (sum, mean, standard deviation), `percentile` (percentiles and the
//! Kolmogorov–Smirnov distance), `select` (the values at ranks of a list, by their bits), `sort`, `student_t` (confidence intervals of repeated runs), `summary`
//! ([`Summary`], [`Distribution`]) and `runs` ([`Runs`]).

mod moments;
mod percentile;
mod runs;
mod select;
mod sort;
mod student_t;
mod summary;

pub use moments::{mean, std_dev, sum};
pub use percentile::{ks_distance_sorted, nearest_rank, percentile_sorted};
pub use runs::Runs;
pub(crate) use select::{keys_at_weighted_ranks, of_order_key, order_key};
pub use sort::sorted;
pub use student_t::{sample_std_dev, t_interval_half_width, t_quantile};
pub use summary::{Distribution, REPORT_PERCENTILES, Summary};

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn a_distribution_of_sorted_values_is_the_same_bits(
            v in proptest::collection::vec(prop_oneof![-1e6..1e6f64, Just(0.0), Just(-0.0), Just(7.0)], 0..300)
        ) {
            let bits = |d: Option<Distribution>| d.map(|d| {
                let mut b = vec![d.count as u64, d.sum.to_bits(), d.avg.to_bits(), d.std.to_bits()];
                b.extend([d.min, d.max].iter().chain(&d.percentiles).map(|x| x.to_bits()));
                b
            });
            prop_assert_eq!(bits(Distribution::of_sorted(&v, &sorted(&v))), bits(Distribution::of(&v)));
        }
    }

    #[test]
    fn empty_lists_have_no_statistics() {
        assert_eq!(mean(&[]), None);
        assert_eq!(std_dev(&[]), None);
        assert_eq!(percentile_sorted(&[], 50.0), None);
        assert_eq!(Summary::of(&[]), None);
        assert_eq!(Distribution::of(&[]), None);
    }

    #[test]
    fn summary_of_known_values() {
        let s = Summary::of(&[5.0, 1.0, 3.0]).unwrap();
        assert_eq!((s.min, s.p25, s.median, s.p75, s.max, s.mean), (1.0, 2.0, 3.0, 4.0, 5.0, 3.0));
    }
}
