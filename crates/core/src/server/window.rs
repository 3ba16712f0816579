//! [`ServerMetrics`]: the scrapes of every endpoint summarised over the profiling window (AIPerf's
//! `server_metrics_export` semantics): counters as deltas and rates, gauges as distributions,
//! histograms as bucket deltas with estimated percentiles.

use std::collections::BTreeMap;

use crate::server::prometheus::{self, Kind, Labels};
use crate::server::series::{EndpointSeries, Part};
use crate::stats::{Distribution, REPORT_PERCENTILES};

/// Increase of a counter over `values` (in time order), counting a drop as a restart from zero,
/// as Prometheus' `increase()` does.
fn increase(values: &[f64]) -> f64 {
    let mut total = 0.0;
    for w in values.windows(2) {
        total += if w[1] >= w[0] { w[1] - w[0] } else { w[1] };
    }
    total
}

/// Statistics of one series over the window.
#[derive(Clone, Debug, PartialEq)]
pub enum SeriesStats {
    Gauge(Distribution),
    Counter {
        total: f64,
        rate: f64,
    },
    Histogram {
        count: f64,
        sum: f64,
        /// Cumulative bucket counts gained over the window, by `le`, in `le` order.
        buckets: Vec<(String, f64)>,
        /// Estimated values at [`REPORT_PERCENTILES`] (`None` without observations).
        percentiles: Option<[f64; 9]>,
        duration_s: f64,
    },
}

/// One labelled series of a metric over the window.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesSummary {
    pub endpoint_url: String,
    pub labels: Labels,
    pub stats: SeriesStats,
    /// The value at each in-window scrape of its endpoint (gauges: as read; counters and
    /// histograms: gained since the reference scrape, histograms by their count); NaN = absent.
    pub timeline: Vec<f64>,
}

/// One metric family over every endpoint.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricSummary {
    pub name: String,
    pub kind: Kind,
    pub help: String,
    pub series: Vec<SeriesSummary>,
}

/// One endpoint's scraping over the run.
#[derive(Clone, Debug, PartialEq)]
pub struct EndpointSummary {
    pub url: String,
    pub fetches: u64,
    pub failures: u64,
    pub avg_fetch_latency_ms: Option<f64>,
    pub dropped_values: u64,
    pub first_error: Option<String>,
    /// Offsets (s) from the window start of the in-window scrapes (the timeline's x axis).
    pub scrape_offsets_s: Vec<f64>,
    /// Unix ns of the first and last kept scrape (`None` without one).
    pub first_fetch_ns: Option<u64>,
    pub last_fetch_ns: Option<u64>,
    /// The kept scrapes whose values differ from the scrape before (the first one counts): the
    /// server's own refreshes, as AIPerf counts them, and when they came (Unix ns).
    pub update_ns: Vec<u64>,
}

impl EndpointSummary {
    /// Milliseconds between consecutive updates.
    pub fn update_intervals_ms(&self) -> Vec<f64> {
        self.update_ns.windows(2).map(|w| w[1].saturating_sub(w[0]) as f64 / 1e6).collect()
    }
}

/// The server metrics of a run over its profiling window: what `server_metrics_export.*` hold.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerMetrics {
    pub window_start_ns: u64,
    pub window_end_ns: u64,
    pub endpoints: Vec<EndpointSummary>,
    /// By name.
    pub metrics: Vec<MetricSummary>,
}

/// Estimates percentile `q` (0–100) of a cumulative histogram as Prometheus' `histogram_quantile`
/// does: linear within the bucket holding the rank, the lower edge of the first bucket at 0 (or
/// its own bound when negative); a rank in the `+Inf` bucket gives the highest finite bound.
pub fn histogram_quantile(buckets: &[(f64, f64)], q: f64) -> Option<f64> {
    let total = buckets.last()?.1;
    if total <= 0.0 {
        return None;
    }
    let rank = q / 100.0 * total;
    let mut prev = (0.0f64, 0.0f64);
    for (i, &(le, c)) in buckets.iter().enumerate() {
        if c >= rank && c > prev.1 {
            if le.is_infinite() {
                return Some(if i == 0 { 0.0 } else { prev.0 });
            }
            let lo = if i == 0 { le.min(0.0) } else { prev.0 };
            return Some(lo + (le - lo) * (rank - prev.1) / (c - prev.1));
        }
        prev = (le, c);
    }
    buckets.iter().rev().find(|b| b.0.is_finite()).map(|b| b.0)
}

impl ServerMetrics {
    /// Summarizes the scrapes over the window starting at `start_ns` (Unix ns): the reference of
    /// counters and histograms is the last scrape at or before it, the window holds every later
    /// scrape (the final one closes it).
    pub fn of(endpoints: &[EndpointSeries], start_ns: u64) -> ServerMetrics {
        let mut by_name: BTreeMap<String, MetricSummary> = BTreeMap::new();
        let mut summaries = Vec::new();
        let mut end_ns = start_ns;
        for ep in endpoints {
            let reference = ep.scrapes.iter().rposition(|s| s.t_ns <= start_ns);
            let first_in = reference.map_or(0, |r| r + 1);
            let window: Vec<usize> = (first_in..ep.scrapes.len()).collect();
            // Counters start from the reference, or from the first scrape when none came before.
            let from = reference.unwrap_or(0);
            let span: Vec<usize> = (from..ep.scrapes.len()).collect();
            let t = |i: usize| ep.scrapes[i].t_ns;
            if let Some(&l) = span.last() {
                end_ns = end_ns.max(t(l));
            }
            let duration_s = match (span.first(), span.last()) {
                (Some(&a), Some(&b)) if t(b) > t(a) => (t(b) - t(a)) as f64 / 1e9,
                _ => 0.0,
            };
            summaries.push(EndpointSummary {
                url: ep.url.clone(),
                fetches: ep.fetches,
                failures: ep.failures,
                avg_fetch_latency_ms: (ep.fetches > 0).then(|| ep.latency_total_ns as f64 / ep.fetches as f64 / 1e6),
                dropped_values: ep.dropped_values,
                first_error: ep.first_error.clone(),
                scrape_offsets_s: window.iter().map(|&i| (t(i) as f64 - start_ns as f64) / 1e9).collect(),
                first_fetch_ns: ep.scrapes.first().map(|s| s.t_ns),
                last_fetch_ns: ep.scrapes.last().map(|s| s.t_ns),
                update_ns: (0..ep.scrapes.len()).filter(|&i| i == 0 || !ep.same_values(i - 1, i)).map(t).collect(),
            });
            if span.is_empty() {
                continue;
            }
            // Columns grouped into series: (family, labels) → parts.
            let mut groups: BTreeMap<(usize, &Labels), Vec<(&Part, usize)>> = BTreeMap::new();
            for (c, key) in ep.columns.iter().enumerate() {
                groups.entry((key.family, &key.labels)).or_default().push((&key.part, c));
            }
            for ((fi, labels), parts) in groups {
                let fam = &ep.families[fi];
                let series_of = |col: usize, over: &[usize]| -> Vec<f64> {
                    over.iter().filter_map(|&i| ep.value(i, col)).collect()
                };
                let timeline_of = |col: usize, base: f64| -> Vec<f64> {
                    window.iter().map(|&i| ep.value(i, col).map_or(f64::NAN, |v| v - base)).collect()
                };
                let (stats, timeline) = match fam.kind {
                    Kind::Histogram => {
                        let find = |p: &Part| parts.iter().find(|(q, _)| *q == p).map(|&(_, c)| c);
                        let delta = |col: usize| increase(&series_of(col, &span));
                        let mut buckets: Vec<(f64, String, f64)> = parts
                            .iter()
                            .filter_map(|(p, c)| match p {
                                Part::Bucket(le) => prometheus::parse_value(le).map(|v| (v, le.clone(), delta(*c))),
                                _ => None,
                            })
                            .collect();
                        buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
                        let numeric: Vec<(f64, f64)> = buckets.iter().map(|b| (b.0, b.2)).collect();
                        let mut percentiles = [0.0; 9];
                        let mut any = true;
                        for (slot, p) in percentiles.iter_mut().zip(REPORT_PERCENTILES) {
                            match histogram_quantile(&numeric, p) {
                                Some(v) => *slot = v,
                                None => any = false,
                            }
                        }
                        let count_col = find(&Part::Count);
                        let base = count_col.and_then(|c| ep.value(from, c)).unwrap_or(0.0);
                        let timeline = count_col.map_or_else(Vec::new, |c| timeline_of(c, base));
                        let stats = SeriesStats::Histogram {
                            count: count_col.map_or(0.0, delta),
                            sum: find(&Part::Sum).map_or(0.0, delta),
                            buckets: buckets.into_iter().map(|b| (b.1, b.2)).collect(),
                            percentiles: any.then_some(percentiles),
                            duration_s,
                        };
                        (stats, timeline)
                    }
                    Kind::Counter => {
                        let Some(&(_, c)) = parts.first() else { continue };
                        let values = series_of(c, &span);
                        if values.is_empty() {
                            continue;
                        }
                        let total = increase(&values);
                        let base = ep.value(from, c).unwrap_or(values[0]);
                        let rate = if duration_s > 0.0 { total / duration_s } else { 0.0 };
                        (SeriesStats::Counter { total, rate }, timeline_of(c, base))
                    }
                    _ => {
                        let Some(&(_, c)) = parts.first() else { continue };
                        let mut values = series_of(c, &window);
                        if values.is_empty() {
                            values = series_of(c, &span);
                        }
                        let Some(d) = Distribution::of(&values) else { continue };
                        (SeriesStats::Gauge(d), timeline_of(c, 0.0))
                    }
                };
                by_name
                    .entry(fam.name.clone())
                    .or_insert_with(|| MetricSummary {
                        name: fam.name.clone(),
                        kind: fam.kind,
                        help: fam.help.clone(),
                        series: Vec::new(),
                    })
                    .series
                    .push(SeriesSummary { endpoint_url: ep.url.clone(), labels: labels.clone(), stats, timeline });
            }
        }
        ServerMetrics {
            window_start_ns: start_ns,
            window_end_ns: end_ns,
            endpoints: summaries,
            metrics: by_name.into_values().collect(),
        }
    }

    /// The metric called `name`.
    pub fn get(&self, name: &str) -> Option<&MetricSummary> {
        self.metrics.iter().find(|m| m.name == name)
    }

    /// Whether the scrapes of every endpoint that answered reach `end_ns` (Unix ns): a counter's
    /// total then holds everything the server did up to then (not so when scraping stopped
    /// early).
    pub fn covers(&self, end_ns: u64) -> bool {
        self.endpoints.iter().filter(|e| e.fetches > 0).all(|e| e.last_fetch_ns.is_some_and(|l| l >= end_ns))
    }

    /// The sum of a counter's totals over its series, when the server exposes it.
    pub fn counter_total(&self, name: &str) -> Option<f64> {
        let m = self.get(name)?;
        let totals: Vec<f64> = m
            .series
            .iter()
            .filter_map(|s| match s.stats {
                SeriesStats::Counter { total, .. } => Some(total),
                _ => None,
            })
            .collect();
        (!totals.is_empty()).then(|| totals.iter().sum())
    }

    /// A gauge's (mean of the series' means, max of their maxima).
    pub fn gauge_mean_max(&self, name: &str) -> Option<(f64, f64)> {
        let m = self.get(name)?;
        let d: Vec<&Distribution> = m
            .series
            .iter()
            .filter_map(|s| match &s.stats {
                SeriesStats::Gauge(d) => Some(d),
                _ => None,
            })
            .collect();
        let mean = crate::stats::mean(&d.iter().map(|d| d.avg).collect::<Vec<_>>())?;
        Some((mean, d.iter().map(|d| d.max).fold(f64::NEG_INFINITY, f64::max)))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::server::kinds::ServerView;
    use crate::server::tests::{S, run};

    #[test]
    fn the_scrapes_cover_the_run_up_to_the_last_one() {
        let m = run();
        // The last scrape is at 13 s: the run is covered up to then, not past it.
        assert!(m.covers(13 * S) && m.covers(12 * S));
        assert!(!m.covers(13 * S + 1));
        // An endpoint that never answered holds nothing and is left out.
        let mut with_dead = m.clone();
        with_dead.endpoints.push(EndpointSummary {
            url: "http://dead/metrics".into(),
            fetches: 0,
            failures: 3,
            avg_fetch_latency_ms: None,
            dropped_values: 0,
            first_error: Some("no answer within 5 s".into()),
            scrape_offsets_s: Vec::new(),
            first_fetch_ns: None,
            last_fetch_ns: None,
            update_ns: Vec::new(),
        });
        assert!(with_dead.covers(13 * S));
    }

    #[test]
    fn counters_are_deltas_and_rates_over_the_window() {
        let m = run();
        assert_eq!(m.counter_total("vllm:prefix_cache_hits"), Some(1000.0));
        assert_eq!(m.counter_total("vllm:prefix_cache_queries"), Some(3000.0));
        let s = &m.get("vllm:prefix_cache_hits").unwrap().series[0];
        assert_eq!(s.stats, SeriesStats::Counter { total: 1000.0, rate: 250.0 });
        assert_eq!(s.timeline, vec![300.0, 600.0, 1000.0]);
        assert_eq!(m.endpoints[0].scrape_offsets_s, vec![1.0, 2.0, 3.0]);
        assert_eq!(m.endpoints[0].avg_fetch_latency_ms, Some(1.5));
        assert!(m.get("process_uptime_seconds").is_none());
    }

    #[test]
    fn gauges_have_statistics_over_the_in_window_scrapes() {
        let m = run();
        let SeriesStats::Gauge(d) = &m.get("vllm:num_requests_waiting").unwrap().series[0].stats else { panic!() };
        assert_eq!((d.count, d.min, d.max, d.avg), (3, 0.0, 6.0, 8.0 / 3.0));
        let v = ServerView::of(&m, None);
        assert_eq!(v.prefix_cache_hit_rate.as_ref().unwrap().value, 1000.0 / 3000.0);
        assert_eq!(v.kv_cache_usage.as_ref().unwrap().value, (1.0 / 3.0, 0.5));
        assert_eq!(v.queue_depth_max.as_ref().unwrap().value, 6.0);
        assert_eq!(v.running_max.as_ref().unwrap().value, 4.0);
    }

    #[test]
    fn histograms_are_bucket_deltas_with_estimated_percentiles() {
        let m = run();
        let SeriesStats::Histogram { count, sum, buckets, percentiles, .. } =
            &m.get("vllm:e2e_request_latency_seconds").unwrap().series[0].stats
        else {
            panic!()
        };
        assert_eq!((*count, *sum), (20.0, 10.0));
        assert_eq!(buckets, &vec![("0.1".into(), 4.0), ("1.0".into(), 18.0), ("+Inf".into(), 20.0)]);
        let p = percentiles.unwrap();
        // p10: rank 2 of 4 in the first bucket [0, 0.1] → 0.05; p50: rank 10 in (0.1, 1.0].
        assert!((p[2] - 0.05).abs() < 1e-12);
        assert!((p[4] - (0.1 + 0.9 * 6.0 / 14.0)).abs() < 1e-12);
        // p99 falls in +Inf: the highest finite bound.
        assert_eq!(p[8], 1.0);
    }

    #[test]
    fn histogram_quantile_edges() {
        assert_eq!(histogram_quantile(&[], 50.0), None);
        assert_eq!(histogram_quantile(&[(1.0, 0.0), (f64::INFINITY, 0.0)], 50.0), None);
        assert_eq!(histogram_quantile(&[(f64::INFINITY, 5.0)], 50.0), Some(0.0));
        assert_eq!(histogram_quantile(&[(2.0, 4.0), (f64::INFINITY, 4.0)], 100.0), Some(2.0));
    }

    #[test]
    fn counter_resets_count_from_zero() {
        assert_eq!(increase(&[10.0, 15.0, 3.0, 8.0]), 5.0 + 3.0 + 5.0);
    }
}
