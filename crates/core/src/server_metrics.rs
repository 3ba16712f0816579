//! A server's Prometheus metrics over a run: the scrapes of each endpoint as a compact time
//! series ([`EndpointSeries`]), their summary over the profiling window ([`ServerMetrics`],
//! AIPerf's `server_metrics_export.json`/`.csv` semantics), and the few numbers compared with the
//! client's view ([`ServerView`]: prefix-cache hit rate, KV-cache usage, queue depth).
//!
//! Times are data: every scrape carries the Unix time (ns) the caller read. Memory is bounded:
//! at most [`SeriesLimits::max_columns`] values per scrape (a histogram bucket is one), and at most
//! [`SeriesLimits::max_kept_scrapes`] scrapes kept per endpoint: past it every second unpinned
//! scrape is dropped (the baseline, the time-zero reference and the latest are pinned), so a
//! long run keeps an evenly thinned series and exact counter deltas.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use serde_json::{Map, Value, json};

use crate::prometheus::{self, Kind, Labels, ParseError};
use crate::stats::{Distribution, REPORT_PERCENTILES};

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
enum Part {
    Value,
    /// A histogram bucket, by its `le` as written.
    Bucket(String),
    Sum,
    Count,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct ColumnKey {
    family: usize,
    labels: Labels,
    part: Part,
}

#[derive(Clone, Debug, PartialEq)]
struct FamilyInfo {
    name: String,
    kind: Kind,
    help: String,
}

#[derive(Clone, Debug, PartialEq)]
struct Scrape {
    t_ns: u64,
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
    families: Vec<FamilyInfo>,
    family_index: HashMap<String, usize>,
    columns: Vec<ColumnKey>,
    column_index: HashMap<ColumnKey, usize>,
    scrapes: Vec<Scrape>,
    /// Scrapes fetched and parsed.
    pub fetches: u64,
    /// Scrapes that failed (fetch or parse).
    pub failures: u64,
    /// Values dropped because of [`SeriesLimits::max_columns`].
    pub dropped_values: u64,
    /// The first failure's message.
    pub first_error: Option<String>,
    latency_total_ns: u64,
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

    fn value(&self, scrape: usize, col: usize) -> Option<f64> {
        self.scrapes.get(scrape)?.values.get(col).copied().filter(|v| !v.is_nan())
    }
}

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

/// Which inference server a set of metric names comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerKind {
    Vllm,
    Sglang,
    Llamacpp,
    Dynamo,
}

impl ServerKind {
    pub fn name(self) -> &'static str {
        match self {
            ServerKind::Vllm => "vllm",
            ServerKind::Sglang => "sglang",
            ServerKind::Llamacpp => "llamacpp",
            ServerKind::Dynamo => "dynamo",
        }
    }

    /// The kind whose metric prefix (`vllm:`, `sglang:`/`sglang_`, `llamacpp:`, `dynamo_`) most
    /// names carry.
    pub fn detect<'a>(names: impl IntoIterator<Item = &'a str>) -> Option<ServerKind> {
        let mut counts = [0usize; 4];
        for n in names {
            let k = if n.starts_with("vllm:") {
                0
            } else if n.starts_with("sglang:") || n.starts_with("sglang_") {
                1
            } else if n.starts_with("llamacpp:") {
                2
            } else if n.starts_with("dynamo_") {
                3
            } else {
                continue;
            };
            counts[k] += 1;
        }
        let (i, &n) = counts.iter().enumerate().max_by_key(|&(i, n)| (*n, std::cmp::Reverse(i)))?;
        (n > 0).then_some([ServerKind::Vllm, ServerKind::Sglang, ServerKind::Llamacpp, ServerKind::Dynamo][i])
    }
}

/// A number read from the server's metrics and where it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Sourced<T> {
    pub value: T,
    /// The metric(s) it was computed from.
    pub source: String,
}

/// The server's side of the comparison with the client's numbers.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServerView {
    /// Prefix-cache hit rate (0–1) over the window.
    pub prefix_cache_hit_rate: Option<Sourced<f64>>,
    /// KV-cache usage (0–1): (mean, max) over the scrapes.
    pub kv_cache_usage: Option<Sourced<(f64, f64)>>,
    /// Most requests waiting in the server's queue at a scrape.
    pub queue_depth_max: Option<Sourced<f64>>,
    /// Most requests running at a scrape.
    pub running_max: Option<Sourced<f64>>,
}

/// Ratio gauges some servers report in percent: values above 1 are taken as percentages
/// (AIPerf's rule).
fn as_ratio((mean, max): (f64, f64)) -> (f64, f64) {
    if max > 1.0 { (mean / 100.0, max / 100.0) } else { (mean, max) }
}

impl ServerView {
    /// The comparison numbers from `m`. `prompt_tokens_sent` (the run's input tokens) turns
    /// llama.cpp's `prompt_tokens` counter, which counts only the tokens it evaluated, into a hit
    /// rate: `1 − evaluated / sent`.
    pub fn of(m: &ServerMetrics, prompt_tokens_sent: Option<u64>) -> ServerView {
        let ratio = |hits: &str, queries: &str| -> Option<Sourced<f64>> {
            let (h, q) = (m.counter_total(hits)?, m.counter_total(queries)?);
            (q > 0.0).then(|| Sourced { value: h / q, source: format!("{hits} / {queries}") })
        };
        let gauge_mean = |name: &str| -> Option<Sourced<f64>> {
            m.gauge_mean_max(name).map(|mm| Sourced { value: as_ratio(mm).0, source: format!("{name} (mean)") })
        };
        let llamacpp = || -> Option<Sourced<f64>> {
            let evaluated = m.counter_total("llamacpp:prompt_tokens")?;
            let sent = prompt_tokens_sent.filter(|&s| s > 0)? as f64;
            Some(Sourced {
                value: (1.0 - evaluated / sent).clamp(0.0, 1.0),
                source: "1 − llamacpp:prompt_tokens (evaluated) / prompt tokens sent".into(),
            })
        };
        let prefix_cache_hit_rate = ratio("vllm:prefix_cache_hits", "vllm:prefix_cache_queries")
            .or_else(|| ratio("vllm:gpu_prefix_cache_hits", "vllm:gpu_prefix_cache_queries"))
            .or_else(|| ratio("sglang:cached_tokens", "sglang:prompt_tokens"))
            .or_else(|| ratio("sglang_cached_tokens", "sglang_prompt_tokens"))
            .or_else(|| gauge_mean("sglang:cache_hit_rate"))
            .or_else(|| gauge_mean("sglang_cache_hit_rate"))
            .or_else(|| gauge_mean("vllm:gpu_prefix_cache_hit_rate"))
            .or_else(|| gauge_mean("dynamo_component_kvstats_gpu_prefix_cache_hit_rate"))
            .or_else(llamacpp);
        let first_gauge = |names: &[&str]| {
            names.iter().find_map(|n| m.gauge_mean_max(n).map(|v| Sourced { value: v, source: (*n).to_owned() }))
        };
        let kv_cache_usage = first_gauge(&[
            "vllm:kv_cache_usage_perc",
            "vllm:gpu_cache_usage_perc",
            "sglang:token_usage",
            "sglang_token_usage",
            "llamacpp:kv_cache_usage_ratio",
            "dynamo_component_kvstats_gpu_cache_usage_percent",
        ])
        .map(|s| Sourced { value: as_ratio(s.value), source: s.source });
        let max_of = |names: &[&str]| first_gauge(names).map(|s| Sourced { value: s.value.1, source: s.source });
        ServerView {
            prefix_cache_hit_rate,
            kv_cache_usage,
            queue_depth_max: max_of(&[
                "vllm:num_requests_waiting",
                "sglang:num_queue_reqs",
                "sglang_num_queue_reqs",
                "llamacpp:requests_deferred",
                "dynamo_frontend_queued_requests",
            ]),
            running_max: max_of(&[
                "vllm:num_requests_running",
                "sglang:num_running_reqs",
                "sglang_num_running_reqs",
                "llamacpp:requests_processing",
                "dynamo_frontend_inflight_requests",
            ]),
        }
    }

    pub fn is_empty(&self) -> bool {
        *self == ServerView::default()
    }
}

/// The name of the JSON export.
pub const JSON_FILE: &str = "server_metrics_export.json";
/// The name of the CSV export.
pub const CSV_FILE: &str = "server_metrics_export.csv";

fn labels_json(l: &Labels) -> Value {
    Value::Object(l.iter().map(|(k, v)| (k.clone(), json!(v))).collect())
}

fn finite(v: f64) -> Value {
    if v.is_finite() { json!(v) } else { Value::Null }
}

fn stat_pairs(s: &SeriesStats) -> Vec<(String, f64)> {
    let pct = |prefix: &str, suffix: &str, values: &[f64; 9]| -> Vec<(String, f64)> {
        REPORT_PERCENTILES.iter().zip(values).map(|(p, v)| (format!("{prefix}p{p}{suffix}"), *v)).collect()
    };
    match s {
        SeriesStats::Gauge(d) => {
            let mut v =
                vec![("avg".into(), d.avg), ("min".into(), d.min), ("max".into(), d.max), ("std".into(), d.std)];
            v.extend(pct("", "", &d.percentiles));
            v
        }
        SeriesStats::Counter { total, rate } => vec![("total".into(), *total), ("rate".into(), *rate)],
        SeriesStats::Histogram { count, sum, percentiles, duration_s, .. } => {
            let per_s = |x: f64| if *duration_s > 0.0 { x / duration_s } else { 0.0 };
            let mut v = vec![
                ("count".into(), *count),
                ("sum".into(), *sum),
                ("avg".into(), if *count > 0.0 { sum / count } else { 0.0 }),
                ("count_rate".into(), per_s(*count)),
                ("sum_rate".into(), per_s(*sum)),
            ];
            if let Some(p) = percentiles {
                v.extend(pct("", "_estimate", p));
            }
            v
        }
    }
}

/// `server_metrics_export.json`: AIPerf's layout (`summary`, `metrics[name].series[]` with
/// `endpoint_url`, `labels`, `stats`, `buckets`), plus each series' `timeline` over the scrapes
/// whose times are `summary.endpoint_info[url].scrape_offsets_s`.
pub fn export_json(m: &ServerMetrics, input_config: &Value) -> String {
    let mut info = Map::new();
    for e in &m.endpoints {
        info.insert(
            e.url.clone(),
            json!({
                "total_fetches": e.fetches + e.failures,
                "successful_fetches": e.fetches,
                "failed_fetches": e.failures,
                "avg_fetch_latency_ms": e.avg_fetch_latency_ms,
                "dropped_values": e.dropped_values,
                "error": e.first_error,
                "scrape_offsets_s": e.scrape_offsets_s,
            }),
        );
    }
    let mut metrics = Map::new();
    for metric in &m.metrics {
        let series: Vec<Value> = metric
            .series
            .iter()
            .map(|s| {
                let stats: Map<String, Value> = stat_pairs(&s.stats).into_iter().map(|(k, v)| (k, finite(v))).collect();
                let mut o = json!({
                    "endpoint_url": s.endpoint_url,
                    "labels": labels_json(&s.labels),
                    "stats": stats,
                    "timeline": s.timeline.iter().map(|v| finite(*v)).collect::<Vec<_>>(),
                });
                if let SeriesStats::Histogram { buckets, .. } = &s.stats {
                    o["buckets"] = Value::Object(buckets.iter().map(|(le, c)| (le.clone(), finite(*c))).collect());
                }
                o
            })
            .collect();
        metrics.insert(
            metric.name.clone(),
            json!({"type": metric.kind.name(), "description": metric.help, "series": series}),
        );
    }
    let doc = json!({
        "schema_version": "1.1",
        "summary": {
            "endpoints_configured": m.endpoints.len(),
            "endpoints_successful": m.endpoints.iter().filter(|e| e.fetches > 0).count(),
            "start_time": crate::results::iso8601(u128::from(m.window_start_ns)),
            "end_time": crate::results::iso8601(u128::from(m.window_end_ns)),
            "endpoint_info": info,
        },
        "metrics_phase": "profiling",
        "metrics": metrics,
        "input_config": input_config,
    });
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    text.push('\n');
    text
}

/// A CSV field, quoted when it holds a comma, quote or line break.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.to_owned() }
}

/// `server_metrics_export.csv`: `#` comment lines, then one section per type (gauge, counter,
/// histogram, unknown), each with the header `Endpoint,Type,Metric,Unit,<stats>,<labels>,Description`.
/// Histogram rows end with `buckets` as `le=count;…`.
pub fn export_csv(m: &ServerMetrics) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# aiperf-cli server metrics over the profiling window");
    let _ = writeln!(
        out,
        "# window: {} to {}",
        crate::results::iso8601(u128::from(m.window_start_ns)),
        crate::results::iso8601(u128::from(m.window_end_ns))
    );
    for e in &m.endpoints {
        let _ = writeln!(out, "# endpoint {}: {} scrape(s), {} failed", e.url, e.fetches, e.failures);
    }
    for kind in [Kind::Gauge, Kind::Counter, Kind::Histogram, Kind::Untyped] {
        let rows: Vec<(&MetricSummary, &SeriesSummary)> =
            m.metrics.iter().filter(|x| x.kind == kind).flat_map(|x| x.series.iter().map(move |s| (x, s))).collect();
        let Some((_, first)) = rows.first() else { continue };
        let stat_keys: Vec<String> = stat_pairs(&first.stats).into_iter().map(|(k, _)| k).collect();
        let mut label_keys: Vec<&str> =
            rows.iter().flat_map(|(_, s)| s.labels.iter().map(|(k, _)| k.as_str())).collect();
        label_keys.sort_unstable();
        label_keys.dedup();
        out.push('\n');
        let mut header = vec!["Endpoint".to_owned(), "Type".into(), "Metric".into(), "Unit".into()];
        header.extend(stat_keys.iter().cloned());
        header.extend(label_keys.iter().map(|k| csv_field(k)));
        if kind == Kind::Histogram {
            header.push("buckets".into());
        }
        header.push("Description".into());
        let _ = writeln!(out, "{}", header.join(","));
        for (metric, s) in rows {
            let stats: BTreeMap<String, f64> = stat_pairs(&s.stats).into_iter().collect();
            let mut row =
                vec![csv_field(&s.endpoint_url), kind.name().into(), csv_field(&metric.name), unit_of(&metric.name)];
            row.extend(stat_keys.iter().map(|k| stats.get(k).map_or_else(String::new, |v| v.to_string())));
            row.extend(
                label_keys
                    .iter()
                    .map(|k| s.labels.iter().find(|(n, _)| n == k).map_or_else(String::new, |(_, v)| csv_field(v))),
            );
            if let SeriesStats::Histogram { buckets, .. } = &s.stats {
                let b: Vec<String> = buckets.iter().map(|(le, c)| format!("{le}={c}")).collect();
                row.push(csv_field(&b.join(";")));
            }
            row.push(csv_field(&metric.help));
            let _ = writeln!(out, "{}", row.join(","));
        }
    }
    out
}

/// The unit a metric's name ends with, AIPerf-style (`_seconds` → seconds, `_tokens` → tokens).
fn unit_of(name: &str) -> String {
    for (suffix, unit) in [
        ("_seconds", "seconds"),
        ("_tokens", "tokens"),
        ("_bytes", "bytes"),
        ("_perc", "ratio"),
        ("_ratio", "ratio"),
        ("_percent", "percent"),
        ("_requests", "requests"),
    ] {
        if name.ends_with(suffix) {
            return unit.to_owned();
        }
    }
    String::new()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn vllm(hits: f64, queries: f64, running: f64, waiting: f64, kv: f64, lat: [f64; 3]) -> String {
        format!(
            "# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{{model_name=\"m\"}} {hits}
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{{model_name=\"m\"}} {queries}
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{{model_name=\"m\"}} {running}
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{{model_name=\"m\"}} {waiting}
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{{model_name=\"m\"}} {kv}
# TYPE process_start_time_seconds gauge
process_uptime_seconds 12
# TYPE vllm:e2e_request_latency_seconds histogram
vllm:e2e_request_latency_seconds_bucket{{le=\"0.1\",model_name=\"m\"}} {}
vllm:e2e_request_latency_seconds_bucket{{le=\"1.0\",model_name=\"m\"}} {}
vllm:e2e_request_latency_seconds_bucket{{le=\"+Inf\",model_name=\"m\"}} {}
vllm:e2e_request_latency_seconds_count{{model_name=\"m\"}} {}
vllm:e2e_request_latency_seconds_sum{{model_name=\"m\"}} {}
",
            lat[0],
            lat[1],
            lat[2],
            lat[2],
            lat[2] * 0.5
        )
    }

    const S: u64 = 1_000_000_000;

    fn run() -> ServerMetrics {
        let mut ep = EndpointSeries::new("http://h/metrics", DEFAULT_SERIES_LIMITS);
        // Baseline before time zero (10 s), then three scrapes in the window, the last final.
        ep.add(9 * S, 1_000_000, &vllm(100.0, 1000.0, 0.0, 0.0, 0.0, [1.0, 2.0, 2.0]), true).unwrap();
        ep.add(11 * S, 3_000_000, &vllm(400.0, 2000.0, 4.0, 2.0, 0.25, [3.0, 10.0, 12.0]), false).unwrap();
        ep.add(12 * S, 1_000_000, &vllm(700.0, 3000.0, 2.0, 6.0, 0.5, [5.0, 20.0, 22.0]), false).unwrap();
        ep.add(13 * S, 1_000_000, &vllm(1100.0, 4000.0, 0.0, 0.0, 0.25, [5.0, 20.0, 22.0]), true).unwrap();
        ServerMetrics::of(&[ep], 10 * S)
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

    #[test]
    fn kinds_are_detected_from_prefixes() {
        assert_eq!(ServerKind::detect(["vllm:a", "vllm:b", "python_gc"]), Some(ServerKind::Vllm));
        assert_eq!(ServerKind::detect(["sglang_cache_hit_rate"]), Some(ServerKind::Sglang));
        assert_eq!(ServerKind::detect(["llamacpp:prompt_tokens"]), Some(ServerKind::Llamacpp));
        assert_eq!(ServerKind::detect(["dynamo_frontend_requests"]), Some(ServerKind::Dynamo));
        assert_eq!(ServerKind::detect(["go_goroutines"]), None);
    }

    #[test]
    fn llamacpp_hit_rate_is_one_minus_evaluated_over_sent() {
        let mut ep = EndpointSeries::new("u", DEFAULT_SERIES_LIMITS);
        ep.add(0, 0, "# TYPE llamacpp:prompt_tokens_total counter\nllamacpp:prompt_tokens_total 10\n", true).unwrap();
        ep.add(S, 0, "# TYPE llamacpp:prompt_tokens_total counter\nllamacpp:prompt_tokens_total 70\n", true).unwrap();
        let m = ServerMetrics::of(&[ep], 0);
        assert_eq!(ServerView::of(&m, Some(100)).prefix_cache_hit_rate.unwrap().value, 0.4);
        assert!(ServerView::of(&m, None).prefix_cache_hit_rate.is_none());
    }

    #[test]
    fn json_export_snapshot() {
        insta::assert_snapshot!(export_json(&run(), &json!({"model": "m"})));
    }

    #[test]
    fn csv_export_snapshot() {
        insta::assert_snapshot!(export_csv(&run()));
    }
}
