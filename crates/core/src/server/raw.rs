//! The raw time series of every scrape over the profiling window, as the rows of AIPerf 0.13's
//! `server_metrics_export.parquet`: one row per scrape of a gauge or counter, one row per bucket
//! per scrape of a histogram. Gauges are as read; counters and histograms are what they gained
//! since the reference (the last scrape before the window, else the window's first), never below
//! zero. The label columns are every label name seen, sorted, less AIPerf's own column names.

use std::collections::{BTreeMap, BTreeSet};

use crate::server::prometheus::{self, Kind, Labels};
use crate::server::series::{EndpointSeries, Part};
use crate::server::units::infer_unit;

/// AIPerf's columns ahead of the label columns, in its order: the series and the scrape's time.
pub const HEAD_COLUMNS: [&str; 6] =
    ["endpoint_url", "metric_name", "metric_type", "unit", "description", "timestamp_ns"];
/// AIPerf's columns after the label columns, in its order: the values.
pub const VALUE_COLUMNS: [&str; 5] = ["value", "sum", "count", "bucket_le", "bucket_count"];

/// Whether `name` is one of AIPerf's own columns, which a label of the same name does not take.
fn reserved(name: &str) -> bool {
    HEAD_COLUMNS.contains(&name) || VALUE_COLUMNS.contains(&name)
}

/// One row of the raw export.
#[derive(Clone, Debug, PartialEq)]
pub struct RawRow {
    pub endpoint_url: String,
    pub metric_name: String,
    /// `gauge`, `counter`, `histogram` or `unknown`.
    pub metric_type: &'static str,
    pub unit: Option<&'static str>,
    pub description: Option<String>,
    /// When the scrape was read (Unix ns).
    pub timestamp_ns: i64,
    /// The value of each of [`RawTable::label_keys`].
    pub labels: Vec<Option<String>>,
    pub value: Option<f64>,
    pub sum: Option<f64>,
    pub count: Option<f64>,
    pub bucket_le: Option<String>,
    pub bucket_count: Option<f64>,
}

/// The rows, and the label columns between `timestamp_ns` and `value`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RawTable {
    pub label_keys: Vec<String>,
    pub rows: Vec<RawRow>,
}

/// The rows of every endpoint's scrapes read at or after `start_ns` (Unix ns); endpoints, then
/// series in the order they were first scraped, then scrapes in time order. Summaries are left
/// out, as AIPerf leaves them.
pub fn raw_rows(endpoints: &[EndpointSeries], start_ns: u64) -> RawTable {
    let label_keys: Vec<String> = endpoints
        .iter()
        .flat_map(|ep| ep.columns.iter().flat_map(|c| c.labels.iter().map(|(k, _)| k.clone())))
        .filter(|k| !reserved(k))
        .collect::<BTreeSet<String>>()
        .into_iter()
        .collect();
    let mut rows = Vec::new();
    for ep in endpoints {
        // AIPerf's reference: the last scrape strictly before the window.
        let reference = ep.scrapes.iter().rposition(|s| s.t_ns < start_ns);
        let window: Vec<usize> = (reference.map_or(0, |r| r + 1)..ep.scrapes.len()).collect();
        // Series in the order their first column was made, each with its columns by part.
        let mut order: Vec<(usize, &Labels)> = Vec::new();
        let mut parts: BTreeMap<(usize, &Labels), Vec<(&Part, usize)>> = BTreeMap::new();
        for (c, key) in ep.columns.iter().enumerate() {
            let group = parts.entry((key.family, &key.labels)).or_default();
            if group.is_empty() {
                order.push((key.family, &key.labels));
            }
            group.push((&key.part, c));
        }
        for series in order {
            let fam = &ep.families[series.0];
            let labels: Vec<Option<String>> =
                label_keys.iter().map(|k| series.1.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())).collect();
            let row = |t_ns: u64| RawRow {
                endpoint_url: ep.url.clone(),
                metric_name: fam.name.clone(),
                metric_type: fam.kind.name(),
                unit: infer_unit(&fam.name, &fam.help),
                description: (!fam.help.is_empty()).then(|| fam.help.clone()),
                timestamp_ns: i64::try_from(t_ns).unwrap_or(i64::MAX),
                labels: labels.clone(),
                value: None,
                sum: None,
                count: None,
                bucket_le: None,
                bucket_count: None,
            };
            let cols = &parts[&series];
            let col = |p: &Part| cols.iter().find(|(q, _)| *q == p).map(|&(_, c)| c);
            // A cumulative value's gain since the reference (else the window's first reading).
            let gained = |c: usize, i: usize| -> Option<f64> {
                let v = ep.value(i, c)?;
                let base = reference
                    .and_then(|r| ep.value(r, c))
                    .or_else(|| window.iter().find_map(|&w| ep.value(w, c)))
                    .unwrap_or(v);
                Some((v - base).max(0.0))
            };
            match fam.kind {
                Kind::Gauge | Kind::Untyped | Kind::Counter => {
                    let Some(c) = col(&Part::Value) else { continue };
                    for &i in &window {
                        let value = if fam.kind == Kind::Counter { gained(c, i) } else { ep.value(i, c) };
                        if let Some(v) = value {
                            rows.push(RawRow { value: Some(v), ..row(ep.scrapes[i].t_ns) });
                        }
                    }
                }
                Kind::Histogram => {
                    let mut buckets: Vec<(f64, &String, usize)> = cols
                        .iter()
                        .filter_map(|(p, c)| match p {
                            Part::Bucket(le) => Some((prometheus::parse_value(le)?, le, *c)),
                            _ => None,
                        })
                        .collect();
                    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
                    let (Some(sum), Some(count)) = (col(&Part::Sum), col(&Part::Count)) else { continue };
                    for &i in &window {
                        let (Some(s), Some(n)) = (gained(sum, i), gained(count, i)) else { continue };
                        for &(_, le, c) in &buckets {
                            rows.push(RawRow {
                                sum: Some(s),
                                count: Some(n),
                                bucket_le: Some(le.clone()),
                                bucket_count: Some(gained(c, i).unwrap_or(0.0)),
                                ..row(ep.scrapes[i].t_ns)
                            });
                        }
                    }
                }
                Kind::Summary => {}
            }
        }
    }
    RawTable { label_keys, rows }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::server::series::DEFAULT_SERIES_LIMITS;

    const PAGE: &str = "# HELP q Requests waiting.\n# TYPE q gauge\nq{model=\"m\"} VAL\n\
        # HELP c_total Tokens.\n# TYPE c_total counter\nc_total CNT\n\
        # TYPE h_seconds histogram\nh_seconds_bucket{le=\"0.1\"} B1\nh_seconds_bucket{le=\"+Inf\"} B2\n\
        h_seconds_sum SUM\nh_seconds_count B2\n";

    fn page(q: u32, c: u32, b1: u32, b2: u32, sum: f64) -> String {
        PAGE.replace("VAL", &q.to_string())
            .replace("CNT", &c.to_string())
            .replace("B1", &b1.to_string())
            .replace("B2", &b2.to_string())
            .replace("SUM", &sum.to_string())
    }

    #[test]
    fn gauges_as_read_counters_and_buckets_gained_since_the_reference() {
        let mut ep = EndpointSeries::new("http://h/metrics", DEFAULT_SERIES_LIMITS);
        ep.add(100, 0, &page(1, 10, 1, 2, 0.5), true).unwrap();
        ep.add(200, 0, &page(3, 15, 2, 4, 1.0), false).unwrap();
        ep.add(300, 0, &page(2, 12, 3, 7, 2.5), false).unwrap();
        let t = raw_rows(&[ep], 150);
        assert_eq!(t.label_keys, ["model"]);
        let q: Vec<(i64, Option<f64>, Option<String>)> = t
            .rows
            .iter()
            .filter(|r| r.metric_name == "q")
            .map(|r| (r.timestamp_ns, r.value, r.labels[0].clone()))
            .collect();
        assert_eq!(q, [(200, Some(3.0), Some("m".into())), (300, Some(2.0), Some("m".into()))]);
        // A counter (named without `_total`, as AIPerf names it) that went down gained nothing.
        let c: Vec<Option<f64>> = t.rows.iter().filter(|r| r.metric_name == "c").map(|r| r.value).collect();
        assert_eq!(c, [Some(5.0), Some(2.0)]);
        let h: Vec<(i64, &str, f64, f64, f64)> = t
            .rows
            .iter()
            .filter(|r| r.metric_type == "histogram")
            .map(|r| {
                (
                    r.timestamp_ns,
                    r.bucket_le.as_deref().unwrap(),
                    r.bucket_count.unwrap(),
                    r.sum.unwrap(),
                    r.count.unwrap(),
                )
            })
            .collect();
        assert_eq!(
            h,
            [
                (200, "0.1", 1.0, 0.5, 2.0),
                (200, "+Inf", 2.0, 0.5, 2.0),
                (300, "0.1", 2.0, 2.0, 5.0),
                (300, "+Inf", 5.0, 2.0, 5.0)
            ]
        );
        let first = &t.rows[0];
        assert_eq!((first.unit, first.description.as_deref()), (None, Some("Requests waiting.")));
        assert_eq!(t.rows.iter().find(|r| r.metric_name == "h_seconds").unwrap().unit, Some("seconds"));
        // Without a scrape before the window, the window's first is the reference.
        let mut ep = EndpointSeries::new("u", DEFAULT_SERIES_LIMITS);
        ep.add(200, 0, &page(3, 15, 2, 4, 1.0), false).unwrap();
        ep.add(300, 0, &page(2, 18, 3, 7, 2.5), false).unwrap();
        let c: Vec<Option<f64>> =
            raw_rows(&[ep], 0).rows.iter().filter(|r| r.metric_name == "c").map(|r| r.value).collect();
        assert_eq!(c, [Some(0.0), Some(3.0)]);
    }
}
