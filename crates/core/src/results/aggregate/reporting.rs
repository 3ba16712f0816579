//! How an [`Aggregate`] gives its [`Report`]: each metric's values (its own list, a twin's, or
//! made from others' lists) and their distributions, computed once per list of the same values,
//! the run's scalars and the per-URL figures.

use std::borrow::Cow;

use super::{Adjusted, Aggregate, Outcomes, Report, TokenCountCheck, UrlReport};
use crate::fork::{Fork, InTurn, Part};
use crate::results::metrics::Metric;
use crate::results::timeline::{Metrics, Timeline};
use crate::stats::{Distribution, Runs};

impl Aggregate {
    /// The values collected for a metric that is stored as such (see [`Aggregate::metric_values`]
    /// for every metric); the chunk gaps are kept as runs ([`Aggregate::inter_chunk_ms`]).
    pub fn values(&self, metric: Metric) -> &[f64] {
        self.values.slice(metric)
    }

    /// The metric whose stored list is `metric`'s values unchanged (itself, or the twin AIPerf's
    /// copy of our metric equals: copies are not stored twice); `None` when its values are made
    /// from others'.
    fn served_by(&self, metric: Metric) -> Option<Metric> {
        match metric {
            Metric::TimeToFirstOutputToken => Some(Metric::TimeToFirstToken),
            Metric::UsagePromptTokens => Some(Metric::ServerInputSequenceLength),
            Metric::UsagePromptCacheReadTokens => Some(Metric::CachedTokens),
            Metric::CreditToStartLatency => Some(Metric::SendLateness),
            Metric::OutputTokenCount | Metric::OutputTokenThroughputPerUser => None,
            // Without failed requests the "all requests" metric is the successful ones' list.
            Metric::TimeToFirstTokenAllRequests => self.failed_ttft_ms.is_empty().then_some(Metric::TimeToFirstToken),
            Metric::InterChunkLatencyAllRequests => self.failed_icl_ms.is_empty().then_some(Metric::InterChunkLatency),
            m => Some(m),
        }
    }

    /// The chunk gaps (ms) of the successful requests, in order.
    pub fn inter_chunk_ms(&self) -> &Runs {
        &self.inter_chunk_ms
    }

    /// The chunk gaps of `metric`: the successful requests' ([`Metric::InterChunkLatency`]), or
    /// theirs then the failed ones' ([`Metric::InterChunkLatencyAllRequests`]).
    fn inter_chunk_ms_all_or_ok(&self, metric: Metric) -> Cow<'_, Runs> {
        if metric == Metric::InterChunkLatency {
            return Cow::Borrowed(&self.inter_chunk_ms);
        }
        if self.failed_icl_ms.is_empty() {
            return Cow::Borrowed(&self.inter_chunk_ms);
        }
        let mut all = self.inter_chunk_ms.clone();
        all.extend_from_slice(&self.failed_icl_ms);
        Cow::Owned(all)
    }

    /// The values of any metric: a stored list (see `served_by`), or one made from others.
    pub fn metric_values(&self, metric: Metric) -> Cow<'_, [f64]> {
        if matches!(metric, Metric::InterChunkLatency | Metric::InterChunkLatencyAllRequests) {
            return Cow::Owned(self.inter_chunk_ms_all_or_ok(metric).expanded());
        }
        if let Some(source) = self.served_by(metric) {
            return self.values.get(source);
        }
        let join = |a: &[f64], b: &[f64]| Cow::Owned([a, b].concat());
        match metric {
            Metric::TimeToFirstTokenAllRequests => {
                join(&self.values.get(Metric::TimeToFirstToken), &self.failed_ttft_ms)
            }
            Metric::OutputTokenCount => {
                Cow::Owned(self.values.get(Metric::OutputSequenceLength).iter().copied().filter(|&n| n > 0.0).collect())
            }
            // `RequestMetrics::of`'s: one per inter-token latency above zero.
            Metric::OutputTokenThroughputPerUser => Cow::Owned(
                self.values
                    .get(Metric::InterTokenLatency)
                    .iter()
                    .filter(|&&itl| itl > 0.0)
                    .map(|&itl| 1000.0 / itl)
                    .collect(),
            ),
            m => self.values.get(m),
        }
    }

    /// The final report; `with_goodput` adds the goodput scalars.
    pub fn report(&self, with_goodput: bool) -> Report {
        self.report_over(with_goodput, None)
    }

    /// The final report with the time-weighted metrics weighed over `window` (ns on the
    /// records' clock) instead of the records' own window.
    pub fn report_over(&self, with_goodput: bool, window: Option<(u64, u64)>) -> Report {
        self.report_over_on(with_goodput, window, &InTurn)
    }

    /// [`Aggregate::report_over`] with the lists' statistics and each group of time-weighted
    /// curves given to `fork` as parts: the same report.
    pub fn report_over_on(&self, with_goodput: bool, window: Option<(u64, u64)>, fork: &impl Fork) -> Report {
        let windows: Vec<(u64, u64)> = window.or_else(|| self.timeline.window()).into_iter().collect();
        let lists = if fork.at_once() {
            Lists::Split(self, with_goodput)
        } else {
            Lists::Whole(Box::new(|| self.report_of_lists(with_goodput)))
        };
        let (mut report, groups, _) = with_timeline(lists, None, &self.timeline, &windows, fork, &[]);
        report.timeline = Timeline::in_order(&windows, groups).pop().unwrap_or_default();
        report
    }

    /// [`Aggregate::report_over`] of an aggregate no longer needed: its lists are dropped once
    /// their statistics are taken, before the time-weighted metrics are swept.
    pub fn into_report_over(self, with_goodput: bool, window: Option<(u64, u64)>) -> Report {
        self.into_report_over_on(with_goodput, window, &InTurn)
    }

    /// [`Aggregate::into_report_over`] with its parts given to `fork`
    /// ([`Aggregate::report_over_on`]); the lists are dropped once their statistics are taken.
    pub fn into_report_over_on(self, with_goodput: bool, window: Option<(u64, u64)>, fork: &impl Fork) -> Report {
        let (mut report, pending) = self.into_report_apart(with_goodput, window, fork, &[]);
        pending.complete(&mut report, None);
        report
    }

    /// [`Aggregate::into_report_over_on`] but for the groups of curves `apart` (indices below
    /// [`CURVE_GROUPS`](crate::results::timeline::CURVE_GROUPS)), which another thread or worker
    /// computes meanwhile ([`Timeline::groups_over`] over `window`, else the timeline's own): the
    /// report but its time-weighted metrics, which [`Pending::complete`] puts in.
    pub fn into_report_apart(
        mut self,
        with_goodput: bool,
        window: Option<(u64, u64)>,
        fork: &impl Fork,
        apart: &[usize],
    ) -> (Report, Pending) {
        let timeline = std::mem::take(&mut self.timeline);
        let windows: Vec<(u64, u64)> = window.or_else(|| timeline.window()).into_iter().collect();
        // Run at once, the chunk gaps' distribution is a part of its own (the longest of the
        // lists'), where no failed request's gaps join them.
        let runs_apart = fork.at_once() && self.failed_icl_ms.is_empty() && self.error_count() == 0;
        let served_by_runs: Vec<Metric> = Metric::ALL
            .into_iter()
            .filter(|&m| runs_apart && self.served_by(m) == Some(Metric::InterChunkLatency))
            .collect();
        let runs_part = runs_apart.then(|| {
            let runs = std::mem::take(&mut self.inter_chunk_ms);
            Box::new(move || Distribution::of_runs(&runs)) as Part<'_, Option<Distribution>>
        });
        // Run at once, the lists' distributions are parts of their own, the last ones; in turn,
        // the aggregate goes with its part, so that what its lists hold is let go before the
        // curves are made.
        let (mut report, groups, runs) = if fork.at_once() {
            with_timeline(Lists::Split(&self, with_goodput), runs_part, &timeline, &windows, fork, apart)
        } else {
            let lists = Lists::Whole(Box::new(move || self.report_of_lists(with_goodput)));
            with_timeline(lists, runs_part, &timeline, &windows, fork, apart)
        };
        if let Some(d) = runs {
            put_in_order(&mut report.metrics, &served_by_runs, &d);
        }
        (report, Pending { timeline, windows, groups, apart: apart.to_vec() })
    }

    /// The report but its time-weighted metrics (left empty): for a part of a run whose
    /// time-weighted metrics are the run's curves over its window ([`crate::results::timeslices`]).
    pub fn report_of_lists(&self, with_goodput: bool) -> Report {
        let plan = self.list_plan();
        let distributions = plan.jobs.iter().map(|&job| self.distribution(job)).collect();
        self.report_with(with_goodput, &plan, distributions)
    }

    /// The distributions the report's lists need, each list of the same values once: metrics
    /// served by the same stored list, or by lists of the same values, share one.
    fn list_plan(&self) -> ListPlan {
        let mut jobs: Vec<ListJob> = Vec::new();
        let mut metrics = Vec::with_capacity(Metric::ALL.len());
        // The first job of a stored list `found` accepts.
        let stored = |jobs: &[ListJob], found: &dyn Fn(Metric) -> bool| {
            jobs.iter().position(|j| matches!(*j, ListJob::Stored(s) if found(s)))
        };
        let icl = Metric::InterChunkLatency;
        for m in Metric::ALL {
            let source = self.served_by(m);
            let shared = source.and_then(|source| {
                stored(&jobs, &|s| s == source)
                    .or_else(|| (source != icl).then(|| stored(&jobs, &|s| s != icl && self.values.same(s, source)))?)
            });
            let job = shared.unwrap_or_else(|| {
                jobs.push(source.map_or(ListJob::Made(m), ListJob::Stored));
                jobs.len() - 1
            });
            metrics.push((m, job));
        }
        let urls = jobs.len();
        for &index in self.per_url.keys() {
            jobs.extend([ListJob::Url { index, ttft: false }, ListJob::Url { index, ttft: true }]);
        }
        ListPlan { metrics, jobs, urls }
    }

    /// The distribution of one list of the report ([`Aggregate::list_plan`]).
    fn distribution(&self, job: ListJob) -> Option<Distribution> {
        match job {
            ListJob::Made(m) if m == Metric::InterChunkLatencyAllRequests => {
                Distribution::of_runs(&self.inter_chunk_ms_all_or_ok(m))
            }
            ListJob::Made(m) => Distribution::of_cow(self.metric_values(m)),
            ListJob::Stored(Metric::InterChunkLatency) => Distribution::of_runs(&self.inter_chunk_ms),
            ListJob::Stored(source) => Distribution::of_cow(self.values.get(source)),
            ListJob::Url { index, ttft } => {
                let u = self.per_url.get(&index)?;
                Distribution::of(if ttft { &u.ttft_ms } else { &u.request_latency_ms })
            }
        }
    }

    /// The report of the lists' distributions (`distributions`, those of `plan`'s jobs in their
    /// order) but its time-weighted metrics.
    fn report_with(&self, with_goodput: bool, plan: &ListPlan, mut distributions: Vec<Option<Distribution>>) -> Report {
        let metrics: Vec<(Metric, Distribution)> = plan
            .metrics
            .iter()
            .filter_map(|&(m, job)| distributions.get(job).cloned().flatten().map(|d| (m, d)))
            .collect();
        let mut urls = distributions.drain(plan.urls.min(distributions.len())..);
        let errors = self.error_count();
        let adjusted = if errors == 0 {
            Vec::new()
        } else {
            metrics
                .iter()
                .filter(|(m, _)| m.adjusted_for_failures())
                .map(|(m, _)| (*m, Adjusted::of(&self.metric_values(*m), errors)))
                .collect()
        };
        let seconds = |w: Option<(u64, u64)>| match w {
            Some((a, b)) if b > a => (b - a) as f64 / 1e9,
            _ => 0.0,
        };
        let duration_s = seconds(self.ok_window_ns);
        let per_s = |x: f64| if duration_s > 0.0 { x / duration_s } else { 0.0 };
        let total = |i: usize| (self.usage_totals[i].0 > 0).then_some(self.usage_totals[i].1);
        let error_isl = self.values.get(Metric::ErrorInputSequenceLength);
        let attempted = self.ok + errors;
        Report {
            metrics,
            adjusted,
            benchmark_duration_s: duration_s,
            run_duration_s: seconds(self.first_sent_ns.zip(self.last_end_ns)),
            request_count: self.ok,
            error_request_count: errors,
            context_overflow_count: self.context_overflows,
            request_throughput: per_s(self.ok as f64),
            output_token_throughput: per_s(self.total_output_tokens as f64),
            input_token_throughput: per_s(self.total_input_tokens as f64),
            total_token_throughput: per_s((self.total_input_tokens + self.total_output_tokens) as f64),
            total_input_tokens: self.total_input_tokens,
            total_output_tokens: self.total_output_tokens,
            total_error_input_tokens: (!error_isl.is_empty()).then(|| error_isl.iter().sum::<f64>() as u64),
            usage_prompt_tokens: total(0),
            usage_completion_tokens: total(1),
            usage_total_tokens: total(2),
            usage_cache_read_tokens: total(3),
            usage_discrepancy_count: (self.usage_discrepancies.0 > 0).then_some(self.usage_discrepancies.1),
            osl_mismatch_count: (self.osl_mismatches.0 > 0).then_some(self.osl_mismatches.1),
            goodput: with_goodput.then(|| per_s(self.good as f64)),
            good_request_count: with_goodput.then_some(self.good),
            good_request_fraction: with_goodput
                .then(|| if attempted > 0 { self.good as f64 / attempted as f64 } else { 0.0 }),
            cache_hit_rate: (self.cached_reported > 0 && self.total_input_tokens > 0)
                .then(|| self.total_cached_tokens as f64 / self.total_input_tokens as f64),
            expected_cache_hit_rate: (self.total_input_tokens > 0)
                .then(|| self.total_expected_cached_tokens as f64 / self.total_input_tokens as f64),
            error_summary: self.errors.clone(),
            error_examples: self.error_examples.clone(),
            token_count_check: (self.counted_both.0 > 0).then_some(TokenCountCheck {
                requests: self.counted_both.0,
                client_output_tokens: self.counted_both.1,
                server_output_tokens: self.counted_both.2,
            }),
            per_url: self
                .per_url
                .iter()
                .map(|(&index, u)| UrlReport {
                    index,
                    request_count: u.ok,
                    error_request_count: u.errors,
                    request_latency: urls.next().flatten(),
                    time_to_first_token: urls.next().flatten(),
                })
                .collect(),
            timeline: Vec::new(),
            outcomes: Outcomes {
                completed: self.ok,
                cancelled: self.errors.get("cancelled").copied().unwrap_or(0),
                timed_out: self.errors.get("timeout").copied().unwrap_or(0),
                failed: self
                    .errors
                    .iter()
                    .filter(|(k, _)| !matches!(k.as_str(), "cancelled" | "timeout"))
                    .map(|(_, n)| n)
                    .sum(),
            },
        }
    }
}

/// How a report's lists are given to a fork: the report of the lists as one part (given in turn:
/// a part owning the aggregate lets its lists go before any curve is made), or, run at once, a
/// part per distribution ([`Aggregate::list_plan`]), listed last: the many short parts even out
/// where the threads end.
enum Lists<'a> {
    Whole(Part<'a, Report>),
    /// The aggregate and whether the report has goodput.
    Split(&'a Aggregate, bool),
}

/// Which distributions a report's lists need ([`Aggregate::list_plan`]).
struct ListPlan {
    /// Each metric, in [`Metric::ALL`]'s order, with the job giving its distribution.
    metrics: Vec<(Metric, usize)>,
    jobs: Vec<ListJob>,
    /// Where the URLs' jobs start: two a URL (request latency, time to first token), in the
    /// URLs' order.
    urls: usize,
}

/// One distribution of a report's lists.
#[derive(Clone, Copy, Debug)]
enum ListJob {
    /// A metric's values made from others' lists, or the chunk gaps of every request.
    Made(Metric),
    /// A stored list (the chunk gaps' runs for [`Metric::InterChunkLatency`]).
    Stored(Metric),
    /// A URL's request latencies or times to first token.
    Url { index: u32, ttft: bool },
}

/// The report of `lists` with `timeline`'s metrics over `window` (else its own), the lists'
/// statistics, the chunk gaps' distribution when apart (`runs`) and each group of curves a part
/// given to `fork`. Given in turn, the lists come first: what they hold is dropped before any
/// curve is made; run at once, the first group of curves (the longest part, the decode rates
/// per chunk) comes first, the chunk gaps after it, and the lists' distributions last.
fn with_timeline<'a>(
    lists: Lists<'a>,
    runs: Option<Part<'a, Option<Distribution>>>,
    timeline: &'a Timeline,
    windows: &'a [(u64, u64)],
    fork: &impl Fork,
    apart: &[usize],
) -> (Report, Vec<Metrics>, Option<Distribution>) {
    enum Done {
        Lists(Box<Report>),
        Runs(Option<Distribution>),
        Curves(Metrics),
        List(Option<Distribution>),
    }
    let mut parts: Vec<Part<'_, Done>> = timeline
        .parts_over(windows)
        .into_iter()
        .enumerate()
        .filter(|(i, _)| !apart.contains(i))
        .map(|(_, p)| Box::new(move || Done::Curves(p())) as Part<'_, Done>)
        .collect();
    let at = usize::from(fork.at_once()).min(parts.len());
    let split = match lists {
        Lists::Whole(lists) => {
            parts.insert(at, Box::new(move || Done::Lists(Box::new(lists()))));
            None
        }
        Lists::Split(aggregate, with_goodput) => Some((aggregate, with_goodput, aggregate.list_plan())),
    };
    if let Some(runs) = runs {
        parts.insert((at + usize::from(split.is_none())).min(parts.len()), Box::new(move || Done::Runs(runs())));
    }
    if let Some((aggregate, _, plan)) = &split {
        let aggregate: &'a Aggregate = aggregate;
        parts.extend(
            plan.jobs.iter().map(|&job| Box::new(move || Done::List(aggregate.distribution(job))) as Part<'_, Done>),
        );
    }
    let (mut report, mut groups, mut gaps, mut distributions) = (None, Vec::new(), None, Vec::new());
    for done in fork.run(parts) {
        match done {
            Done::Lists(r) => report = Some(*r),
            Done::Runs(d) => gaps = d,
            Done::Curves(c) => groups.push(c),
            Done::List(d) => distributions.push(d),
        }
    }
    if let Some((aggregate, with_goodput, plan)) = &split {
        report = Some(aggregate.report_with(*with_goodput, plan, distributions));
    }
    (report.unwrap_or_default(), groups, gaps)
}

/// Puts `d` as the distribution of each of `metrics` into `all` (in [`Metric::ALL`]'s order,
/// which `all` keeps).
fn put_in_order(all: &mut Vec<(Metric, Distribution)>, metrics: &[Metric], d: &Distribution) {
    let place = |m: Metric| Metric::ALL.iter().position(|&x| x == m).unwrap_or(usize::MAX);
    for &m in metrics {
        let at = all.iter().position(|(x, _)| place(*x) > place(m)).unwrap_or(all.len());
        all.insert(at, (m, d.clone()));
    }
}

/// The time-weighted metrics of a report, waiting for groups of curves computed apart
/// ([`Aggregate::into_report_apart`]).
#[derive(Debug)]
pub struct Pending {
    timeline: Timeline,
    windows: Vec<(u64, u64)>,
    groups: Vec<Metrics>,
    apart: Vec<usize>,
}

impl Pending {
    /// Puts the time-weighted metrics in `report`, with `given` as the figures of the groups
    /// apart (in their order, each over the report's windows); `None`, or figures of another
    /// shape, and they are computed here.
    pub fn complete(mut self, report: &mut Report, given: Option<Vec<Metrics>>) {
        let fits = |g: &Vec<Metrics>| g.len() == self.apart.len() && g.iter().all(|m| m.len() == self.windows.len());
        let given = match given {
            Some(g) if fits(&g) => g,
            _ => self.timeline.groups_over(&self.windows, &self.apart),
        };
        self.groups.extend(given);
        report.timeline = Timeline::in_order(&self.windows, self.groups).pop().unwrap_or_default();
    }
}
