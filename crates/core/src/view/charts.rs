//! The data of every chart of a run, as pure functions of its [`Point`]s: percentile bands and
//! rates per time slice, CDFs and histograms, and scatter plots sampled to at most
//! [`MAX_SCATTER`] points. Whatever the number of records, each chart is a few thousand numbers.

use crate::stats::{percentile_sorted, sorted};

use super::run::{NONE, Point, Run};

/// Most points drawn in a scatter plot (a deterministic, evenly spaced sample).
pub const MAX_SCATTER: usize = 1500;
/// Most time slices of a time series.
pub const MAX_SLICES: usize = 150;
/// Quantiles of a CDF (0, 0.5, …, 100th percentile).
pub const CDF_POINTS: usize = 201;
/// Bars of a histogram.
pub const HIST_BINS: usize = 40;

/// A per-request quantity charted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quantity {
    Ttft,
    Itl,
    Latency,
    Osl,
    Isl,
    Lateness,
}

impl Quantity {
    pub const DISTRIBUTIONS: [Quantity; 5] =
        [Quantity::Ttft, Quantity::Itl, Quantity::Latency, Quantity::Osl, Quantity::Isl];

    pub fn name(self) -> &'static str {
        match self {
            Quantity::Ttft => "TTFT",
            Quantity::Itl => "ITL",
            Quantity::Latency => "Request latency",
            Quantity::Osl => "OSL",
            Quantity::Isl => "ISL",
            Quantity::Lateness => "Send lateness",
        }
    }

    pub fn unit(self) -> &'static str {
        match self {
            Quantity::Osl | Quantity::Isl => "tokens",
            _ => "ms",
        }
    }

    /// The value for one request, if it has one.
    pub fn of(self, p: &Point) -> Option<f64> {
        let f = |v: f32| (!v.is_nan()).then_some(f64::from(v));
        let n = |v: u32| (v != NONE).then_some(f64::from(v));
        match self {
            Quantity::Ttft => f(p.ttft_ms),
            Quantity::Itl => f(p.itl_ms),
            Quantity::Latency => f(p.latency_ms),
            Quantity::Osl => p.ok().then(|| n(p.osl)).flatten(),
            Quantity::Isl => p.ok().then(|| n(p.isl)).flatten(),
            Quantity::Lateness => Some(p.lateness_ms()),
        }
    }

    /// Every value of a run, sorted.
    pub fn sorted_values(self, run: &Run) -> Vec<f64> {
        let v: Vec<f64> = run.points.iter().filter_map(|p| self.of(p)).collect();
        sorted(&v)
    }
}

/// A round step (1, 2 or 5 × 10^k) at least `raw`.
pub fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * mag).find(|&s| s >= raw).unwrap_or(10.0 * mag)
}

/// The time axis of a run: slices from the first send.
#[derive(Clone, Debug, PartialEq)]
pub struct Slices {
    pub t0_ns: u64,
    /// Width of a slice (s).
    pub width_s: f64,
    pub count: usize,
    /// The run's own `--slice-duration` slices (from time zero, as in
    /// `profile_export_aiperf_timeslices.*`), not a width chosen for the chart.
    pub from_run: bool,
}

impl Slices {
    /// The run's `--slice-duration` slices when it had them (and they are at most
    /// 4 × [`MAX_SLICES`]), else slices from the first send of the narrowest round width
    /// (1, 2 or 5 × 10^k s, at least 1 ms, and at most [`MAX_SLICES`] slices over the run) at
    /// which at least half of the slices from the first to the last send hold a send. A steady
    /// run gets about [`MAX_SLICES`] slices; a short bursty one gets slices wide enough that its
    /// per-slice values are neighbours joined by the lines, not isolated points.
    pub fn of(run: &Run) -> Slices {
        let end_all = run.points.iter().map(|p| p.end_ns.max(p.sent_ns)).max().unwrap_or(0);
        if let Some(w) = run.settings.slice_duration_s() {
            let count = (end_all as f64 / 1e9 / w).floor() as usize + 1;
            if count <= 4 * MAX_SLICES {
                return Slices { t0_ns: 0, width_s: w, count, from_run: true };
            }
        }
        let t0_ns = run.t0_ns();
        let end = end_all.max(t0_ns);
        let dur = (end - t0_ns) as f64 / 1e9;
        let mut sends: Vec<f64> = run.points.iter().map(|p| p.sent_ns.saturating_sub(t0_ns) as f64 / 1e9).collect();
        sends.sort_unstable_by(f64::total_cmp);
        let mut width_s = nice_step(dur / MAX_SLICES as f64).max(0.001);
        while width_s < dur && 2 * filled_slices(&sends, width_s) < spanned_slices(&sends, width_s) {
            width_s = nice_step(width_s * 1.5);
        }
        let count = ((dur / width_s).floor() as usize + 1).clamp(1, MAX_SLICES + 1);
        Slices { t0_ns, width_s, count, from_run: false }
    }

    /// Seconds from the first send.
    pub fn secs(&self, ns: u64) -> f64 {
        ns.saturating_sub(self.t0_ns) as f64 / 1e9
    }

    fn index(&self, ns: u64) -> usize {
        ((self.secs(ns) / self.width_s) as usize).min(self.count - 1)
    }

    /// Start of each slice (s).
    pub fn starts(&self) -> Vec<f64> {
        (0..self.count).map(|i| i as f64 * self.width_s).collect()
    }
}

/// Slices of `width_s` from the first to the last of the sorted `sends` (s from the first send).
fn spanned_slices(sends: &[f64], width_s: f64) -> usize {
    sends.last().map_or(0, |&t| (t / width_s) as usize + 1)
}

/// Slices of `width_s` that hold at least one of the sorted `sends`.
fn filled_slices(sends: &[f64], width_s: f64) -> usize {
    let mut last = None;
    sends
        .iter()
        .filter(|&&t| {
            let k = (t / width_s) as usize;
            last.replace(k) != Some(k)
        })
        .count()
}

/// p50/p90/p99 of a quantity per time slice (by send time); NaN where a slice has no value.
#[derive(Clone, Debug, PartialEq)]
pub struct Band {
    pub quantity: Quantity,
    pub t: Vec<f64>,
    pub p50: Vec<f64>,
    pub p90: Vec<f64>,
    pub p99: Vec<f64>,
}

pub fn band(run: &Run, s: &Slices, q: Quantity) -> Band {
    let mut per: Vec<Vec<f64>> = vec![Vec::new(); s.count];
    for p in &run.points {
        if let Some(v) = q.of(p) {
            per[s.index(p.sent_ns)].push(v);
        }
    }
    let mut b = Band { quantity: q, t: s.starts(), p50: Vec::new(), p90: Vec::new(), p99: Vec::new() };
    for v in per {
        let v = sorted(&v);
        let at = |p| percentile_sorted(&v, p).unwrap_or(f64::NAN);
        b.p50.push(at(50.0));
        b.p90.push(at(90.0));
        b.p99.push(at(99.0));
    }
    b
}

/// A value per time slice.
#[derive(Clone, Debug, PartialEq)]
pub struct Rate {
    pub name: &'static str,
    pub unit: &'static str,
    pub t: Vec<f64>,
    pub y: Vec<f64>,
}

/// Completed requests/s, output tokens/s (by end time), errors/s, and the average number of
/// requests in flight in each slice.
pub fn rates(run: &Run, s: &Slices) -> Vec<Rate> {
    let mut done = vec![0.0; s.count];
    let mut tokens = vec![0.0; s.count];
    let mut errors = vec![0.0; s.count];
    let mut busy = vec![0.0; s.count];
    for p in &run.points {
        let k = s.index(p.end_ns);
        if p.ok() {
            done[k] += 1.0;
            if p.osl != NONE {
                tokens[k] += f64::from(p.osl);
            }
        } else {
            errors[k] += 1.0;
        }
        // Time in flight spread over the slices it overlaps.
        let (a, b) = (s.secs(p.sent_ns), s.secs(p.end_ns.max(p.sent_ns)));
        let (first, last) = (s.index(p.sent_ns), s.index(p.end_ns.max(p.sent_ns)));
        for (i, slot) in busy.iter_mut().enumerate().take(last + 1).skip(first) {
            let (lo, hi) = (i as f64 * s.width_s, (i + 1) as f64 * s.width_s);
            *slot += (b.min(hi) - a.max(lo)).max(0.0);
        }
    }
    let per_s = |v: Vec<f64>| v.into_iter().map(|x| x / s.width_s).collect::<Vec<_>>();
    vec![
        Rate { name: "Request throughput", unit: "requests/s", t: s.starts(), y: per_s(done) },
        Rate { name: "Output token throughput", unit: "tokens/s", t: s.starts(), y: per_s(tokens) },
        Rate { name: "Requests in flight", unit: "requests", t: s.starts(), y: per_s(busy) },
        Rate { name: "Errors", unit: "errors/s", t: s.starts(), y: per_s(errors) },
    ]
}

/// `(x, fraction ≤ x)` at every half percentile.
pub fn cdf(sorted_values: &[f64]) -> Vec<(f64, f64)> {
    (0..CDF_POINTS)
        .filter_map(|i| {
            let f = i as f64 / (CDF_POINTS - 1) as f64;
            percentile_sorted(sorted_values, f * 100.0).map(|x| (x, f))
        })
        .collect()
}

/// A histogram from the minimum to the 99.5th percentile (the rest counted as overflow).
#[derive(Clone, Debug, PartialEq)]
pub struct Hist {
    pub lo: f64,
    pub step: f64,
    pub counts: Vec<u64>,
    pub overflow: u64,
}

pub fn hist(sorted_values: &[f64]) -> Hist {
    let (Some(&lo), Some(top)) = (sorted_values.first(), percentile_sorted(sorted_values, 99.5)) else {
        return Hist { lo: 0.0, step: 1.0, counts: Vec::new(), overflow: 0 };
    };
    let step = nice_step((top - lo) / HIST_BINS as f64);
    let lo = (lo / step).floor() * step;
    let bins = (((top - lo) / step).floor() as usize + 1).clamp(1, HIST_BINS + 1);
    let mut counts = vec![0u64; bins];
    let mut overflow = 0;
    for &v in sorted_values {
        let k = ((v - lo) / step).floor() as usize;
        match counts.get_mut(k) {
            Some(c) => *c += 1,
            None => overflow += 1,
        }
    }
    Hist { lo, step, counts, overflow }
}

/// Points of a scatter plot; `index` is the request's position in [`Run::points`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scatter {
    pub x: Vec<f64>,
    pub y: Vec<f64>,
    pub index: Vec<u32>,
    /// Requests that had both values (the plot shows a sample of them).
    pub total: usize,
}

/// A [`Scatter`] being filled: the requests with both values evenly sampled down to
/// [`MAX_SCATTER`]; of the `total` such requests, the 0th, the `every`-th, the 2 × `every`-th, … (a countdown, not a division per request).
struct Sampler {
    every: usize,
    /// Requests with both values to pass over before the next one kept.
    left: usize,
    scatter: Scatter,
}

impl Sampler {
    fn new(total: usize) -> Sampler {
        let every = total.div_ceil(MAX_SCATTER).max(1);
        Sampler { every, left: 0, scatter: Scatter { total, ..Default::default() } }
    }

    /// The request at `i` in [`Run::points`], with its values if it has both.
    #[inline]
    fn offer(&mut self, i: usize, v: Option<(f64, f64)>) {
        if let Some((x, y)) = v {
            if self.left == 0 {
                self.scatter.x.push(x);
                self.scatter.y.push(y);
                self.scatter.index.push(i as u32);
                self.left = self.every;
            }
            self.left -= 1;
        }
    }
}

/// A named scatter plot.
#[derive(Clone, Debug, PartialEq)]
pub struct ScatterChart {
    pub id: &'static str,
    pub title: &'static str,
    pub x_label: &'static str,
    pub y_label: &'static str,
    pub data: Scatter,
}

/// The scatter plots of a run: TTFT and ITL over time, lateness, and the trace-aware ones.
/// Two passes over the points for all of them: one counts each plot's requests, one samples.
pub fn scatters(run: &Run) -> Vec<ScatterChart> {
    let t0 = run.t0_ns();
    let secs = |ns: u64| ns.saturating_sub(t0) as f64 / 1e9;
    let f = |v: f32| (!v.is_nan()).then_some(f64::from(v));
    let n = |v: u32| (v != NONE).then_some(f64::from(v));
    let ttft_time = |p: &Point| Some((secs(p.sent_ns), f(p.ttft_ms)?));
    let itl_time = |p: &Point| Some((secs(p.sent_ns), f(p.itl_ms)?));
    let lateness = |p: &Point| Some((secs(p.scheduled_ns.max(t0)), p.lateness_ms()));
    let ttft_isl = |p: &Point| Some((n(p.isl)?, f(p.ttft_ms)?));
    let ttft_cached = |p: &Point| Some((n(p.expected_cached)?, f(p.ttft_ms)?));
    let hit = |p: &Point| {
        let isl = n(p.isl).filter(|&i| i > 0.0)?;
        Some((n(p.expected_cached)? / isl, n(p.cached)? / isl))
    };
    let mut totals = [0usize; 6];
    for p in &run.points {
        totals[0] += usize::from(ttft_time(p).is_some());
        totals[1] += usize::from(itl_time(p).is_some());
        totals[2] += usize::from(lateness(p).is_some());
        totals[3] += usize::from(ttft_isl(p).is_some());
        totals[4] += usize::from(ttft_cached(p).is_some());
        totals[5] += usize::from(hit(p).is_some());
    }
    let mut s = totals.map(Sampler::new);
    for (i, p) in run.points.iter().enumerate() {
        s[0].offer(i, ttft_time(p));
        s[1].offer(i, itl_time(p));
        s[2].offer(i, lateness(p));
        s[3].offer(i, ttft_isl(p));
        s[4].offer(i, ttft_cached(p));
        s[5].offer(i, hit(p));
    }
    let [ttft_time, itl_time, lateness, ttft_isl, expected, hits] = s.map(|s| s.scatter);
    let mut out = vec![
        ScatterChart {
            id: "ttft-time",
            title: "TTFT of every request over the run",
            x_label: "sent (s)",
            y_label: "TTFT (ms)",
            data: ttft_time,
        },
        ScatterChart {
            id: "itl-time",
            title: "ITL of every request over the run",
            x_label: "sent (s)",
            y_label: "ITL (ms)",
            data: itl_time,
        },
        ScatterChart {
            id: "lateness",
            title: "Scheduled vs actual send time",
            x_label: "scheduled (s)",
            y_label: "lateness: sent − scheduled (ms)",
            data: lateness,
        },
        ScatterChart {
            id: "ttft-isl",
            title: "TTFT against input length",
            x_label: "ISL (tokens)",
            y_label: "TTFT (ms)",
            data: ttft_isl,
        },
    ];
    if expected.total > 0 {
        out.push(ScatterChart {
            id: "ttft-cached",
            title: "TTFT against the trace's expected cached tokens",
            x_label: "expected cached tokens (trace)",
            y_label: "TTFT (ms)",
            data: expected,
        });
    }
    if hits.total > 0 {
        out.push(ScatterChart {
            id: "cache-hit",
            title: "Server cache hit rate against the trace's theoretical one",
            x_label: "theoretical hit rate (trace)",
            y_label: "server cached_tokens / ISL",
            data: hits,
        });
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::tests::run_of;
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn series_cover_the_run() {
        let run = run_of(200, "a");
        let s = Slices::of(&run);
        assert!(s.count >= 2 && s.count <= MAX_SLICES + 1);
        let b = band(&run, &s, Quantity::Ttft);
        assert_eq!(b.p50.len(), s.count);
        assert!(b.p50.iter().zip(&b.p99).all(|(a, z)| a.is_nan() || a <= z));
        let r = rates(&run, &s);
        let done: f64 = r[0].y.iter().map(|y| y * s.width_s).sum();
        assert!((done - run.report.request_count as f64).abs() < 1e-6);
        let errs: f64 = r[3].y.iter().map(|y| y * s.width_s).sum();
        assert!((errs - run.report.error_request_count as f64).abs() < 1e-6);
        assert!(r[2].y.iter().all(|&y| y >= 0.0));
        let sc = scatters(&run);
        assert_eq!(sc.len(), 6);
        assert_eq!(sc[0].data.total, 200, "failed requests with a first token count for TTFT too");
        let itl = Quantity::Itl.sorted_values(&run);
        assert_eq!(sc[1].data.total, itl.len());
        assert!(sc[1].data.y.iter().all(|y| itl.binary_search_by(|v| v.total_cmp(y)).is_ok()));
        assert!(sc.iter().all(|c| c.data.x.len() <= MAX_SCATTER));
    }

    #[test]
    fn a_run_with_slice_duration_is_drawn_on_its_own_slices() {
        let mut run = run_of(200, "a");
        let end = run.points.iter().map(|p| p.end_ns.max(p.sent_ns)).max().unwrap();
        run.settings.input_config = serde_json::json!({"slice_duration": 0.25});
        let s = Slices::of(&run);
        assert!(s.from_run);
        // As `profile_export_aiperf_timeslices.*`: from time zero, a request in the slice of its send time.
        assert_eq!((s.t0_ns, s.width_s, s.count), (0, 0.25, (end as f64 / 0.25e9).floor() as usize + 1));
        let slicer = crate::results::timeslices::Slicer::new(250_000_000).unwrap();
        for p in &run.points {
            assert_eq!(s.index(p.sent_ns), slicer.index_of(p.sent_ns));
        }
        assert!(crate::view::html::run_section(&run, 0).contains("slice (--slice-duration)"));
        // Slices far too narrow for the run: the chart's own width.
        run.settings.input_config = serde_json::json!({"slice_duration": 0.001});
        assert!(!Slices::of(&run).from_run);
        run.settings.input_config = serde_json::Value::Null;
        assert!(!Slices::of(&run).from_run);
    }

    #[test]
    fn a_bursty_run_gets_slices_its_values_fill() {
        use super::super::RunSettings;
        use super::super::tests::{jsonl, record};
        // Four bursts of five requests, one second apart, each request done in about 30 ms.
        let records: Vec<_> = (0..20u64)
            .map(|i| {
                let mut r = record(i, false);
                let to = 1_000_000 + 1_000_000_000 * (i / 5) + 100_000 * (i % 5);
                let shift = |t: u64| t + to - r.sent_ns;
                (r.scheduled_ns, r.end_ns) = (shift(r.scheduled_ns), shift(r.end_ns));
                r.chunk_ns = r.chunk_ns.iter().map(|&t| shift(t)).collect();
                r.sent_ns = to;
                r
            })
            .collect();
        let run = Run::from_jsonl("bursts", "p.jsonl", &jsonl(&records, true, &[]).0, RunSettings::default()).unwrap();
        let s = Slices::of(&run);
        // 50 ms slices (about 150 over the run) would leave 4 of 61 filled; 0.5 s slices fill 4 of 7.
        assert_eq!((s.width_s, s.count), (0.5, 7));
        let b = band(&run, &s, Quantity::Ttft);
        assert_eq!(b.p50.iter().filter(|v| !v.is_nan()).count(), 4);
        // Each value, alone in its slice, is a marker on each of the p50, p90 and p99 lines.
        let html = crate::view::html::run_section(&run, 0);
        let ttft = &html[html.find(r#"data-chart="band-ttft""#).unwrap()..];
        let ttft = &ttft[..ttft.find("</figure>").unwrap()];
        assert_eq!(ttft.matches("<circle").count(), 12);
        assert!(ttft.contains("TTFT per 0.5 s slice"));
        // A steady run keeps about MAX_SLICES slices.
        let steady = Slices::of(&run_of(2000, "a"));
        assert!(steady.count > MAX_SLICES / 2, "{steady:?}");
    }

    #[test]
    fn big_runs_are_sampled() {
        let run = run_of(4000, "a");
        let sc = scatters(&run);
        assert!(sc[0].data.x.len() <= MAX_SCATTER && sc[0].data.x.len() > MAX_SCATTER / 2);
        assert_eq!(sc[0].data.total, 4000);
    }

    /// Each plot: the requests with both values, every `ceil(total / MAX_SCATTER)`-th of them
    /// from the first, at their index in the run.
    #[test]
    fn scatters_keep_every_nth_request_with_both_values() {
        let mut run = run_of(4000, "a");
        for (i, p) in run.points.iter_mut().enumerate() {
            if i % 7 == 3 {
                p.itl_ms = f32::NAN;
            }
            if i % 5 == 1 {
                p.expected_cached = NONE;
            }
        }
        let t0 = run.t0_ns();
        let secs = |ns: u64| ns.saturating_sub(t0) as f64 / 1e9;
        let sc = scatters(&run);
        assert_eq!(sc.len(), 6);
        for c in &sc {
            let all: Vec<(usize, f64, f64)> = run
                .points
                .iter()
                .enumerate()
                .filter_map(|(i, p)| {
                    let f = |v: f32| (!v.is_nan()).then_some(f64::from(v));
                    let n = |v: u32| (v != NONE).then_some(f64::from(v));
                    let (x, y) = match c.id {
                        "ttft-time" => (secs(p.sent_ns), f(p.ttft_ms)?),
                        "itl-time" => (secs(p.sent_ns), f(p.itl_ms)?),
                        "lateness" => (secs(p.scheduled_ns.max(t0)), p.lateness_ms()),
                        "ttft-isl" => (n(p.isl)?, f(p.ttft_ms)?),
                        "ttft-cached" => (n(p.expected_cached)?, f(p.ttft_ms)?),
                        _ => {
                            let isl = n(p.isl).filter(|&i| i > 0.0)?;
                            (n(p.expected_cached)? / isl, n(p.cached)? / isl)
                        }
                    };
                    Some((i, x, y))
                })
                .collect();
            let every = all.len().div_ceil(MAX_SCATTER).max(1);
            let kept: Vec<_> = all.iter().step_by(every).collect();
            assert_eq!(c.data.total, all.len(), "{}", c.id);
            assert_eq!(c.data.index, kept.iter().map(|k| k.0 as u32).collect::<Vec<_>>(), "{}", c.id);
            assert_eq!(c.data.x, kept.iter().map(|k| k.1).collect::<Vec<_>>(), "{}", c.id);
            assert_eq!(c.data.y, kept.iter().map(|k| k.2).collect::<Vec<_>>(), "{}", c.id);
        }
        // Plots with gaps, each sampled.
        assert!(sc[1].data.total < 4000 && sc[4].data.total < 4000);
        assert!(sc.iter().all(|c| c.data.total > 2 * MAX_SCATTER && c.data.x.len() <= MAX_SCATTER));
    }

    #[test]
    fn nice_steps() {
        assert_eq!(nice_step(0.3), 0.5);
        assert_eq!(nice_step(7.0), 10.0);
        assert_eq!(nice_step(2.0), 2.0);
        assert_eq!(nice_step(120.0), 200.0);
        assert_eq!(nice_step(0.0), 1.0);
    }

    proptest! {
        #[test]
        fn hist_counts_every_value(v in proptest::collection::vec(0.0f64..1e6, 1..500)) {
            let s = sorted(&v);
            let h = hist(&s);
            prop_assert_eq!(h.counts.iter().sum::<u64>() + h.overflow, v.len() as u64);
            prop_assert!(h.counts.len() <= HIST_BINS + 1);
            let c = cdf(&s);
            prop_assert_eq!(c.len(), CDF_POINTS);
            prop_assert!(c.windows(2).all(|w| w[0].0 <= w[1].0));
        }
    }
}
