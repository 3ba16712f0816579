//! [`EndpointSeries`]: every scrape of one endpoint's metrics, kept as columns of values within
//! [`SeriesLimits`].

use std::collections::HashMap;

use crate::server::prometheus::{self, Kind, Labels, ParseError};

/// Bounds of one endpoint's series.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeriesLimits {
    /// Most distinct values tracked (label sets × histogram buckets); more are dropped and counted.
    pub max_columns: usize,
    /// Most scrapes kept; past it the series is thinned by half.
    pub max_kept_scrapes: usize,
    /// Limits of parsing one scrape.
    pub parse: prometheus::Limits,
}

/// Default [`SeriesLimits`]: 10,000 values × 512 scrapes = at most about 40 MB per endpoint.
pub const DEFAULT_SERIES_LIMITS: SeriesLimits =
    SeriesLimits { max_columns: 10_000, max_kept_scrapes: 512, parse: prometheus::DEFAULT_LIMITS };

/// Which value of a series a column holds.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum Part {
    Value,
    /// A histogram bucket, by its `le` as written.
    Bucket(String),
    Sum,
    Count,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct ColumnKey {
    pub(super) family: usize,
    pub(super) labels: Labels,
    pub(super) part: Part,
}

#[derive(Clone, Debug, PartialEq)]
pub(super) struct FamilyInfo {
    pub(super) name: String,
    pub(super) kind: Kind,
    pub(super) help: String,
}

#[derive(Clone, Debug, PartialEq)]
pub(super) struct Scrape {
    pub(super) t_ns: u64,
    latency_ns: u64,
    pinned: bool,
    /// One value per column (shorter when columns were added later; NaN = absent).
    values: Vec<f64>,
}

/// Every scrape of one endpoint, as columns of values.
#[derive(Clone, Debug, PartialEq)]
pub struct EndpointSeries {
    pub url: String,
    limits: SeriesLimits,
    pub(super) families: Vec<FamilyInfo>,
    family_index: HashMap<String, usize>,
    pub(super) columns: Vec<ColumnKey>,
    column_index: HashMap<ColumnKey, usize>,
    pub(super) scrapes: Vec<Scrape>,
    /// Scrapes fetched and parsed.
    pub fetches: u64,
    /// Scrapes that failed (fetch or parse).
    pub failures: u64,
    /// Values dropped because of [`SeriesLimits::max_columns`].
    pub dropped_values: u64,
    /// The first failure's message.
    pub first_error: Option<String>,
    pub(super) latency_total_ns: u64,
}

/// Families AIPerf skips: process uptime and creation timestamps are not measurements.
fn skipped(name: &str) -> bool {
    name.ends_with("_created") || name.ends_with("_uptime") || name.contains("_uptime_")
}

impl EndpointSeries {
    pub fn new(url: impl Into<String>, limits: SeriesLimits) -> EndpointSeries {
        EndpointSeries {
            url: url.into(),
            limits,
            families: Vec::new(),
            family_index: HashMap::new(),
            columns: Vec::new(),
            column_index: HashMap::new(),
            scrapes: Vec::new(),
            fetches: 0,
            failures: 0,
            dropped_values: 0,
            first_error: None,
            latency_total_ns: 0,
        }
    }

    /// Records a failed scrape.
    pub fn failed(&mut self, message: impl Into<String>) {
        self.failures += 1;
        self.first_error.get_or_insert_with(|| message.into());
    }

    /// Adds the scrape read at `t_ns` (Unix ns) that took `latency_ns`; `pinned` scrapes are never
    /// thinned away (the baseline and the time-zero reference). An unparsable body is counted as a
    /// failure and returned.
    pub fn add(&mut self, t_ns: u64, latency_ns: u64, text: &str, pinned: bool) -> Result<(), ParseError> {
        let families = match prometheus::parse(text, self.limits.parse) {
            Ok(f) => f,
            Err(e) => {
                self.failed(e.to_string());
                return Err(e);
            }
        };
        self.fetches += 1;
        self.latency_total_ns = self.latency_total_ns.saturating_add(latency_ns);
        let mut values = vec![f64::NAN; self.columns.len()];
        for fam in families {
            if fam.kind == Kind::Summary || skipped(&fam.name) {
                continue;
            }
            let created_family = fam.name.ends_with("_created");
            let fi = match self.family_index.get(&fam.name) {
                Some(&i) => i,
                None => {
                    self.families.push(FamilyInfo { name: fam.name.clone(), kind: fam.kind, help: fam.help });
                    self.family_index.insert(fam.name, self.families.len() - 1);
                    self.families.len() - 1
                }
            };
            for s in fam.samples {
                // NaN and ±Inf are dropped as AIPerf does (a histogram's `le="+Inf"` is a label);
                // so are creation timestamps (`x_created` beside `x_total`).
                if !s.value.is_finite() || (s.name.ends_with("_created") && !created_family) {
                    continue;
                }
                let mut labels = s.labels;
                let part = if fam.kind == Kind::Histogram {
                    if s.name.ends_with("_bucket") {
                        match labels.iter().position(|(k, _)| k == "le") {
                            Some(p) => Part::Bucket(labels.remove(p).1),
                            None => continue,
                        }
                    } else if s.name.ends_with("_sum") {
                        Part::Sum
                    } else if s.name.ends_with("_count") {
                        Part::Count
                    } else {
                        continue;
                    }
                } else {
                    Part::Value
                };
                let key = ColumnKey { family: fi, labels, part };
                let col = match self.column_index.get(&key) {
                    Some(&c) => c,
                    None if self.columns.len() < self.limits.max_columns => {
                        self.columns.push(key.clone());
                        self.column_index.insert(key, self.columns.len() - 1);
                        values.push(f64::NAN);
                        self.columns.len() - 1
                    }
                    None => {
                        self.dropped_values += 1;
                        continue;
                    }
                };
                values[col] = s.value;
            }
        }
        self.scrapes.push(Scrape { t_ns, latency_ns, pinned, values });
        if self.scrapes.len() > self.limits.max_kept_scrapes {
            self.thin();
        }
        Ok(())
    }

    /// Drops every second unpinned scrape (never the latest).
    fn thin(&mut self) {
        let last = self.scrapes.len() - 1;
        let mut unpinned = 0usize;
        let mut i = 0usize;
        self.scrapes.retain(|s| {
            let keep = s.pinned || i == last || {
                unpinned += 1;
                unpinned.is_multiple_of(2)
            };
            i += 1;
            keep
        });
    }

    /// Number of scrapes kept.
    pub fn kept(&self) -> usize {
        self.scrapes.len()
    }

    /// Metric family names seen.
    pub fn family_names(&self) -> impl Iterator<Item = &str> {
        self.families.iter().map(|f| f.name.as_str())
    }

    pub(super) fn value(&self, scrape: usize, col: usize) -> Option<f64> {
        self.scrapes.get(scrape)?.values.get(col).copied().filter(|v| !v.is_nan())
    }

    /// Whether scrapes `a` and `b` read the same value in every column (absent equals absent).
    pub(super) fn same_values(&self, a: usize, b: usize) -> bool {
        (0..self.columns.len()).all(|c| self.value(a, c) == self.value(b, c))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::server::tests::S;
    use crate::server::window::ServerMetrics;

    #[test]
    fn thinning_keeps_pinned_and_latest_and_exact_counters() {
        let limits = SeriesLimits { max_kept_scrapes: 8, ..DEFAULT_SERIES_LIMITS };
        let mut ep = EndpointSeries::new("u", limits);
        ep.add(0, 0, "# TYPE c counter\nc_total 0\n", true).unwrap();
        for i in 1..=100u64 {
            ep.add(i * S, 0, &format!("# TYPE c counter\nc_total {}\n", i * 2), i == 100).unwrap();
            assert!(ep.kept() <= 8);
        }
        let m = ServerMetrics::of(&[ep], 0);
        assert_eq!(m.counter_total("c"), Some(200.0));
        assert_eq!(*m.endpoints[0].scrape_offsets_s.last().unwrap(), 100.0);
    }

    #[test]
    fn creation_timestamps_do_not_overwrite_counters() {
        let mut ep = EndpointSeries::new("u", DEFAULT_SERIES_LIMITS);
        let text = |v: u32| format!("# TYPE c counter\nc_total {v}\nc_created 1.7e9\n");
        ep.add(0, 0, &text(1), true).unwrap();
        ep.add(S, 0, &text(5), true).unwrap();
        assert_eq!(ServerMetrics::of(&[ep], 0).counter_total("c"), Some(4.0));
    }

    #[test]
    fn column_limit_drops_and_counts() {
        let limits = SeriesLimits { max_columns: 2, ..DEFAULT_SERIES_LIMITS };
        let mut ep = EndpointSeries::new("u", limits);
        ep.add(0, 0, "a 1\nb 2\nc 3\n", false).unwrap();
        assert_eq!(ep.dropped_values, 1);
        assert!(ep.add(1, 0, "<html>", false).is_err());
        assert_eq!((ep.fetches, ep.failures), (1, 1));
    }
}
