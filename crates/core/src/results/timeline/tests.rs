use super::steps::{Summer, event_order};
use super::weighted::Weighted;
use super::*;
use crate::results::metrics::RequestMetrics;
use crate::results::record::RequestRecord;

fn get(m: &[(TimelineMetric, TimeWeighted)], t: TimelineMetric) -> TimeWeighted {
    m.iter().find(|x| x.0 == t).unwrap().1
}

#[test]
fn two_overlapping_requests_weigh_each_level_by_its_time() {
    let mut tl = Timeline::default();
    // 0–10 ms and 5–20 ms: one request, then two for 5 ms, then one.
    for (start, first, end) in [(0, 4_000_000, 10_000_000), (5_000_000, 8_000_000, 20_000_000)] {
        let r = streamed(start, vec![first, end], end, 40, 3);
        let m = RequestMetrics::of(&r, false);
        tl.add(&r, Some(&m));
    }
    let m = tl.metrics(0, 20_000_000);
    let c = get(&m, TimelineMetric::EffectiveConcurrency);
    assert_eq!((c.avg, c.min, c.max, c.p50, c.p99), (1.25, 1.0, 2.0, 1.0, 2.0));
    // Prefill: 40 tokens in 4 ms, then 40 in 3 ms.
    let p = get(&m, TimelineMetric::ActivePrefillThroughput);
    assert!((p.max - 40.0 / 0.003).abs() < 1e-6, "{p:?}");
    // Just before the first request ends: its 40 + 3 tokens and the second's 40 + 1.
    let k = get(&m, TimelineMetric::TokensInFlight);
    assert_eq!(k.max, 40.0 + 3.0 + 40.0 + 1.0);
    // Nothing in the run: no metric.
    assert!(Timeline::default().metrics(0, 1).is_empty());
}

#[test]
fn many_windows_at_once_weigh_as_each_alone() {
    let mut tl = Timeline::default();
    for i in 0..30u64 {
        let start = i * 7_000_000 % 90_000_000;
        let r = streamed(
            start,
            vec![start + 3_000_000, start + 5_000_000 + i * 100_000, start + 9_000_000],
            start + 9_500_000,
            20 + i,
            1 + i % 4,
        );
        let m = RequestMetrics::of(&r, false);
        tl.add(&r, (i % 11 != 5).then_some(&m));
    }
    let windows = [(0, 10_000_000), (50_000_000, 20_000_000), (5_000_000, 95_000_000), (40_000_000, 40_000_001)];
    let together = tl.metrics_over(&windows);
    assert_eq!(together.len(), windows.len());
    for (w, m) in windows.iter().zip(&together) {
        assert_eq!(*m, tl.metrics(w.0, w.1), "{w:?}");
        assert_eq!(m.len(), 14);
    }
    assert_ne!(together[0], together[2]);
    assert_eq!(Timeline::default().metrics_over(&windows), vec![Vec::new(); 4]);
}

#[test]
fn parts_run_in_any_order_give_the_same_metrics_in_aiperfs_order() {
    let mut tl = Timeline::default();
    for i in 0..40u64 {
        let start = i * 3_000_000;
        let r = streamed(start, vec![start + 2_000_000, start + 4_000_000 + i * 50_000], start + 6_000_000, 30 + i, 2);
        let m = RequestMetrics::of(&r, false);
        tl.add(&r, Some(&m));
    }
    let windows = [(0, 60_000_000), (10_000_000, 130_000_000)];
    let in_turn = tl.metrics_over(&windows);
    assert_eq!(tl.metrics_over_on(&windows, &crate::fork::LastFirst { at_once: false }), in_turn);
    let names: Vec<TimelineMetric> = in_turn[0].iter().map(|(m, _)| *m).collect();
    assert_eq!(names[0], TimelineMetric::EffectiveConcurrency);
    assert_eq!(names[13], TimelineMetric::ActiveTotalThroughput);
    assert_eq!(names.len(), 14);
}

#[test]
fn merged_timelines_give_the_whole_runs_metrics() {
    let recs: Vec<RequestRecord> = (0..6u64)
        .map(|i| {
            streamed(
                i * 3_000_000,
                vec![i * 3_000_000 + 2_000_000, i * 3_000_000 + 4_000_000, i * 3_000_000 + 7_000_000],
                i * 3_000_000 + 7_500_000,
                10 + i,
                5,
            )
        })
        .collect();
    let (mut whole, mut a, mut b) = (Timeline::default(), Timeline::default(), Timeline::default());
    for (i, r) in recs.iter().enumerate() {
        let m = RequestMetrics::of(r, false);
        whole.add(r, Some(&m));
        if i < 2 { a.add(r, Some(&m)) } else { b.add(r, Some(&m)) }
    }
    a.merge(&b);
    let (from, to) = whole.window().unwrap();
    assert_eq!(whole.metrics(from, to), a.metrics(from, to));
}

/// A streamed request's record: sent at `sent_ns`, its chunks, its end, `isl` prompt and `osl`
/// output tokens.
fn streamed(sent_ns: u64, chunk_ns: Vec<u64>, end_ns: u64, isl: u64, osl: u64) -> RequestRecord {
    RequestRecord {
        sent_ns,
        chunk_ns,
        end_ns,
        streaming: true,
        input_tokens: Some(isl),
        output_tokens: Some(osl),
        ..Default::default()
    }
}

/// What makes one span's events (given its later chunks).
type Curve<'a> = &'a dyn Fn(&Span, &[u64], &mut Vec<Event>);

/// Each curve's events of a span: requests in flight, prefill and even decode rates, decode rate
/// by chunks, prefill rate alone, tokens in flight counted per chunk and all at the first token.
const CURVES: [Curve<'static>; 6] = [
    &|s, _, e| in_flight(s, e),
    &|s, _, e| {
        prefill_rate(s, e);
        even_decode_rate(s, e);
    },
    &chunk_decode,
    &|s, _, e| prefill_rate(s, e),
    &|s, later, e| tokens_in_flight(s, later, true, e),
    &|s, later, e| tokens_in_flight(s, later, false, e),
];

/// The curves of at most four events a span, which read no chunk: requests in flight, decode
/// and prefill concurrency, prefill and even decode rates, prefill rate alone.
const SPLIT: [Curve<'static>; 5] =
    [&|s, _, e| in_flight(s, e), &|s, _, e| decoding(s, e), &|s, _, e| prefilling(s, e), CURVES[1], CURVES[3]];

/// The sweep by sorting every event at once.
fn sorted_sweep(mut events: Vec<Event>) -> Steps {
    events.sort_unstable_by(event_order);
    let mut sum = Summer::new();
    for e in events {
        sum.add(e);
    }
    sum.finish()
}

fn bits(steps: &Steps) -> Vec<(u64, u64)> {
    steps.iter().map(|&(t, v)| (t, v.to_bits())).collect()
}

/// The statistics of a copy of the pairs sorted by value: what the passes must give.
fn sorted_copy(mut held: Vec<(u64, f64)>, total: f64) -> TimeWeighted {
    held.retain(|h| h.0 > 0);
    if held.is_empty() || total <= 0.0 {
        return TimeWeighted::default();
    }
    let avg = held.iter().map(|&(d, v)| v * d as f64).sum::<f64>() / total;
    let var = held.iter().map(|&(d, v)| d as f64 * (v - avg) * (v - avg)).sum::<f64>() / total;
    held.sort_unstable_by(|a, b| a.1.total_cmp(&b.1));
    let whole: f64 = held.iter().map(|h| h.0 as f64).sum();
    let fractions = [0.50, 0.90, 0.95, 0.99];
    let mut q = [held[held.len() - 1].1; 4];
    let (mut next, mut c) = (0, 0.0);
    for h in &held {
        c += h.0 as f64;
        while next < fractions.len() && c / whole >= fractions[next] {
            q[next] = h.1;
            next += 1;
        }
    }
    TimeWeighted {
        avg,
        min: held[0].1,
        max: held[held.len() - 1].1,
        p50: q[0],
        p90: q[1],
        p95: q[2],
        p99: q[3],
        std: var.sqrt(),
    }
}

fn stat_bits(w: TimeWeighted) -> [u64; 8] {
    w.stats().map(|(_, v)| v.to_bits())
}

/// NaN-free values: small, huge, tiny, signed zeros and a few repeated ones (ties).
fn any_value() -> impl proptest::strategy::Strategy<Value = f64> {
    use proptest::prelude::*;
    prop_oneof![
        -5.0f64..5.0,
        proptest::num::f64::NORMAL
            | proptest::num::f64::SUBNORMAL
            | proptest::num::f64::ZERO
            | proptest::num::f64::INFINITE,
        prop::sample::select(vec![0.0, -0.0, 1.0, 2.5, -3.0, 1e300, f64::MIN_POSITIVE]),
    ]
}

proptest::proptest! {
    /// Statistics taken in passes (histograms of the values' bits down to every level, or
    /// the one bucket kept) equal those of a sorted copy, to the bit.
    #[test]
    fn passes_give_the_statistics_of_a_sorted_copy(
        held in proptest::collection::vec((proptest::prop_oneof![0u64..4, 0u64..1_000_000, proptest::strategy::Just(1u64 << 52)], any_value()), 0..60),
        window in proptest::option::of(1u64..3_000_000),
        keep in proptest::sample::select(vec![0u64, 1, 3, 1 << 20]),
    ) {
        let active: u64 = held.iter().map(|h| h.0).sum();
        let total = window.map(|w| w as f64);
        let want = sorted_copy(held.clone(), total.unwrap_or(active as f64));
        for upto in [held.len() as u64, u64::MAX] {
            let mut w = weighted::Weighted::with_keep(total, upto, keep);
            let mut passes = 0;
            while !w.done() {
                for &(d, v) in &held {
                    w.add(d, v);
                }
                w.end_pass();
                passes += 1;
                proptest::prop_assert!(passes <= 6);
            }
            proptest::prop_assert_eq!(stat_bits(w.result()), stat_bits(want), "upto {} keep {}", upto, keep);
            // The same passes, each pair taken in one loop over the list.
            let mut w = weighted::Weighted::with_keep(total, upto, keep);
            while !w.done() {
                w.pass_over(&held[..]);
                w.end_pass();
            }
            proptest::prop_assert_eq!(stat_bits(w.result()), stat_bits(want), "one loop: upto {} keep {}", upto, keep);
        }
    }
}

#[test]
fn durations_past_2_pow_53_are_sorted_whole() {
    let held = vec![(1u64 << 60, 1.0), (3, 2.0), ((1 << 60) + 1, 0.5), (7, -1.0), (1 << 54, 2.0)];
    let total: u64 = held.iter().map(|h| h.0).sum();
    let want = sorted_copy(held.clone(), total as f64);
    let got = Weighted::of_pairs(&held[..], None, u64::MAX);
    assert_eq!(stat_bits(got), stat_bits(want));
}

proptest::proptest! {
    /// Over one window, the metrics with the per-chunk curves taken in passes over their
    /// sweep equal those over the kept curves, to the bit, whatever the window.
    #[test]
    fn streamed_curves_give_the_kept_curves_metrics(
        reqs in proptest::collection::vec(
            (0u64..40, 0u64..30, proptest::collection::vec(0u64..40, 0..6), proptest::prop_oneof![0u64..20, proptest::strategy::Just(5_000_000_000u64)], 0u64..300, 0u64..9, proptest::bool::ANY, proptest::bool::ANY, proptest::bool::ANY),
            1..30,
        ),
        from in 0u64..80,
        len in 0u64..120,
    ) {
        let mut tl = Timeline::default();
        for (start, ttft, mut gaps, tail, isl, osl, ok, even, streaming) in reqs {
            let first = start + ttft;
            if even && let Some(&g) = gaps.first() {
                gaps = (1..=gaps.len() as u64).map(|k| k * g).collect();
            }
            let mut chunks = vec![first];
            chunks.extend(gaps.iter().map(|g| first + g));
            let r = RequestRecord {
                sent_ns: start,
                chunk_ns: chunks,
                end_ns: first + gaps.iter().max().copied().unwrap_or(0) + tail,
                streaming,
                input_tokens: Some(isl),
                output_tokens: Some(osl),
                ..Default::default()
            };
            let m = RequestMetrics::of(&r, false);
            tl.add(&r, ok.then_some(&m));
        }
        let w = [(from, from + len)];
        let kept = tl.metrics_over_with(&w, u64::MAX, u64::MAX);
        let streamed = tl.metrics_over_with(&w, 0, u64::MAX);
        let bits = |m: &[Vec<(TimelineMetric, TimeWeighted)>]| -> Vec<(TimelineMetric, [u64; 8])> {
            m[0].iter().map(|&(t, v)| (t, stat_bits(v))).collect()
        };
        proptest::prop_assert_eq!(bits(&streamed), bits(&kept));
    }
}

proptest::proptest! {
    /// Requests in any order, overlapping, with chunks in any order (some at or after the
    /// end) or evenly spaced (kept as a stride), some failed: every curve's merged sweep
    /// equals the sort of all its events, made from the chunks as recorded.
    #[test]
    fn the_merged_sweep_equals_the_sorted_one(
        reqs in proptest::collection::vec(
            (0u64..40, 0u64..30, proptest::collection::vec(0u64..40, 0..5), proptest::prop_oneof![0u64..20, proptest::strategy::Just(5_000_000_000u64)], 0u64..300, 0u64..9, proptest::bool::ANY, proptest::bool::ANY),
            1..40,
        )
    ) {
        let mut tl = Timeline::default();
        // Each request's span (from a timeline of its own) and its later chunks as recorded.
        let mut recorded: Vec<(Span, Vec<u64>)> = Vec::new();
        for (start, ttft, mut gaps, tail, isl, osl, ok, even) in reqs {
            let first = start + ttft;
            if even && let Some(&g) = gaps.first() {
                gaps = (1..=gaps.len() as u64).map(|k| k * g).collect();
            }
            let mut chunks = vec![first];
            chunks.extend(gaps.iter().map(|g| first + g));
            let end = first + gaps.iter().max().copied().unwrap_or(0) + tail;
            let r = streamed(start, chunks, end, isl, osl);
            let m = RequestMetrics::of(&r, false);
            tl.add(&r, ok.then_some(&m));
            let mut one = Timeline::default();
            one.add(&r, ok.then_some(&m));
            let span = one.span(0);
            proptest::prop_assert_eq!((span.start, span.end, one.wide.len()), (start, end, usize::from(tail > u64::from(u32::MAX))));
            recorded.push((span, if ok { gaps.iter().map(|g| first + g).collect() } else { Vec::new() }));
        }
        let all = |each: Curve| {
            let mut e = Vec::new();
            for (s, later) in &recorded {
                each(s, later, &mut e);
            }
            sorted_sweep(e)
        };
        for each in CURVES {
            proptest::prop_assert_eq!(bits(&tl.sweep_with(each, false)), bits(&all(each)));
        }
        // The curves of a few events a span, their events split into lists: one list for all
        // (the whole sort), two (the last holding more than one event of a span), four.
        for each in SPLIT {
            proptest::prop_assert_eq!(bits(&tl.sweep_split::<1>(each)), bits(&all(each)));
            proptest::prop_assert_eq!(bits(&tl.sweep_split::<2>(each)), bits(&all(each)));
            proptest::prop_assert_eq!(bits(&tl.sweep_split::<4>(each)), bits(&all(each)));
        }
        // Two curves swept at once, their events at the same times sharing points (prefilling
        // and the prefill rate), some not (decoding and the prefill and even decode rates, four
        // events a span; requests in flight and decoding), in one list, two or three.
        for (a, b) in [(SPLIT[2], SPLIT[4]), (SPLIT[1], SPLIT[3]), (SPLIT[0], SPLIT[1])] {
            for [x, y] in [tl.sweep_two::<1>(a, b), tl.sweep_two::<2>(a, b), tl.sweep_two::<3>(a, b)] {
                proptest::prop_assert_eq!(bits(&x), bits(&all(a)));
                proptest::prop_assert_eq!(bits(&y), bits(&all(b)));
            }
        }
        // The decode concurrency with the closed-form decode rate, chunks as kept: the rate of
        // the merged sweep (its chunks as kept, the evenly spaced ones by their stride).
        let rate = tl.sweep_with(closed_decode, true);
        for [x, y] in [tl.sweep_two::<2>(SPLIT[1], &closed_decode), tl.sweep_two::<3>(SPLIT[1], &closed_decode)] {
            proptest::prop_assert_eq!(bits(&x), bits(&all(SPLIT[1])));
            proptest::prop_assert_eq!(bits(&y), bits(&rate));
        }
    }
}

/// Draws below a bound, the same from the same seed.
fn draws(mut seed: u64) -> impl FnMut(u64) -> u64 {
    move |n| {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) % n
    }
}

/// Requests whose chunks after the first are evenly spaced or none, many at the same times
/// (sends in bursts, first tokens and ends on shared steps): the decode concurrency and the
/// closed-form decode rate swept at once are each the sort of its own events.
#[test]
fn decoding_and_its_closed_rate_swept_at_once_are_each_their_own_sort() {
    let mut next = draws(0x2545_f491_4f6c_dd1d);
    let mut tl = Timeline::default();
    let mut spans = Vec::new();
    for i in 0..4_000u64 {
        let start = next(200) * 1_000_000;
        let first = start + (1 + next(5)) * 1_000_000;
        let n = if next(4) == 0 { 0 } else { 2 + next(6) };
        let stride = (1 + next(3)) * 1_000_000;
        let mut chunk_ns = vec![first];
        chunk_ns.extend((1..=n).map(|k| first + k * stride));
        let last = first + n * stride;
        let end = if next(3) == 0 { last + next(2) * 1_000_000 } else { last };
        let r = streamed(start, chunk_ns, end, 10 + i % 90, 1 + n + next(3));
        let m = RequestMetrics::of(&r, false);
        tl.add(&r, Some(&m));
        let mut one = Timeline::default();
        one.add(&r, Some(&m));
        let span = one.span(0);
        assert!(n == 0 || span.later_chunks & EVENLY != 0, "request {i}: chunks kept evenly");
        spans.push(span);
    }
    let sorted = |each: &dyn Fn(&Span, &mut Vec<Event>)| {
        let mut e = Vec::new();
        for s in &spans {
            each(s, &mut e);
        }
        sorted_sweep(e)
    };
    let closed = |s: &Span, e: &mut Vec<Event>| closed_decode(s, &[], e);
    let [conc, rate] = tl.sweep_two::<3>(|s, _, e| decoding(s, e), closed_decode);
    assert_eq!(bits(&conc), bits(&sorted(&decoding)));
    assert_eq!(bits(&rate), bits(&sorted(&closed)));
    assert_eq!(bits(&rate), bits(&tl.sweep_with(closed_decode, true)));
}

/// Thousands of requests, out of order, mostly short, a few far longer than the buckets held
/// ahead, some bursts at one time, many ending on the same nanoseconds: every curve's sweep
/// equals the sort of all its events.
#[test]
fn the_bucketed_sweep_equals_the_sorted_one_over_many_buckets() {
    let mut next = draws(0x9e37_79b9_7f4a_7c15);
    let mut tl = Timeline::default();
    let mut recorded: Vec<(Span, Vec<u64>)> = Vec::new();
    for i in 0..6_000u64 {
        // Mostly spread over a second, one in ten in a burst at one instant.
        let start = if next(10) == 0 { 400_000_000 } else { next(1_000_000_000) };
        let first = start + next(4) * 1_000_000 + next(3);
        let n = next(6);
        let even = next(2) == 0;
        let later: Vec<u64> = (1..=n).map(|k| first + if even { k * 2_000_000 } else { next(9_000_000) }).collect();
        let last = later.iter().copied().max().unwrap_or(first);
        let end = match next(50) {
            0 => last + 20_000_000_000,
            1 => last.saturating_sub(1_000_000),
            _ => last + next(2) * 1_000,
        };
        let mut chunk_ns = vec![first];
        chunk_ns.extend(&later);
        let r = streamed(start, chunk_ns, end, 100 + i % 300, 1 + n);
        let ok = i % 13 != 7;
        let m = RequestMetrics::of(&r, false);
        tl.add(&r, ok.then_some(&m));
        let mut one = Timeline::default();
        one.add(&r, ok.then_some(&m));
        recorded.push((one.span(0), if ok { later } else { Vec::new() }));
    }
    for each in CURVES {
        let mut e = Vec::new();
        for (s, later) in &recorded {
            each(s, later, &mut e);
        }
        assert_eq!(bits(&tl.sweep_with(each, false)), bits(&sorted_sweep(e)));
    }
    for each in SPLIT {
        let mut e = Vec::new();
        for (s, later) in &recorded {
            each(s, later, &mut e);
        }
        assert_eq!(bits(&tl.sweep_split::<2>(each)), bits(&sorted_sweep(e)));
    }
    // Closed-form decode rates: the stride alone for evenly spaced chunks.
    let mut e = Vec::new();
    for (s, later) in &recorded {
        closed_decode(s, later, &mut e);
    }
    assert_eq!(bits(&tl.sweep_with(closed_decode, true)), bits(&sorted_sweep(e)));
}

#[test]
fn an_evenly_chunked_requests_tokens_in_flight_ramp_through_its_chunks() {
    // Sent at 0, first token at 10 ns, 3 more chunks every 10 ns, the last at its end: 6
    // input tokens from 0, then its 4 output tokens rising from 1 at 10 ns to 4 at 40 ns.
    let r = streamed(0, vec![10, 20, 30, 40], 40, 6, 4);
    let mut tl = Timeline::default();
    tl.add(&r, Some(&RequestMetrics::of(&r, false)));
    let closed = &tl.metrics_over_with(&[(0, 40)], u64::MAX, 0)[0];
    let k = get(closed, TimelineMetric::TokensInFlight);
    let avg: f64 = (10.0 * 6.0 + 30.0 * (7.0 + 10.0) / 2.0) / 40.0;
    let (a, b) = (7.0 - avg, 10.0 - avg);
    let var = (10.0 * (6.0 - avg) * (6.0 - avg) + 30.0 * (a * a + a * b + b * b) / 3.0) / 40.0;
    // 10 ns at 6, then 10 ns per token from 7 to 10: half the time by 8, 90% by 9.6.
    let want = [avg, 6.0, 10.0, 8.0, 9.6, 9.8, 9.96, var.sqrt()];
    let got = [k.avg, k.min, k.max, k.p50, k.p90, k.p95, k.p99, k.std];
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() < 1e-9, "{got:?} against {want:?}");
    }
    // One rate from the first token to the last chunk: 3 tokens in 30 ns.
    let d = get(closed, TimelineMetric::EffectiveDecodeThroughput);
    assert_eq!((d.max, d.p50), (0.1 * PER_SECOND, 0.1 * PER_SECOND));
    // The steps: 7, 8, 9 for 10, 10, 9 ns, 10 for the last nanosecond.
    let steps = get(&tl.metrics_over_with(&[(0, 40)], u64::MAX, u64::MAX)[0], TimelineMetric::TokensInFlight);
    assert_eq!((steps.p50, steps.max, steps.avg), (7.0, 10.0, (60.0 + 70.0 + 80.0 + 81.0 + 10.0) / 40.0));
}

proptest::proptest! {
    /// Evenly spaced chunks in closed form: the decode-rate metrics are those of the
    /// per-chunk sweep (the same function, summed in other additions: within rounding);
    /// the tokens in flight within the sum over evenly spaced requests of a chunk's share
    /// times one more than its chunks at or after its end.
    #[test]
    fn closed_form_stays_within_a_chunk_of_the_steps(
        reqs in proptest::collection::vec(
            (0u64..4000, 0u64..300, 2u64..40, 0u64..200, 0u64..3, 0u64..5000, 1u64..600, proptest::bool::ANY, proptest::bool::ANY),
            1..25,
        ),
        from in 0u64..2000,
        len in 1u64..20000,
    ) {
        let mut tl = Timeline::default();
        let mut bound = 0.0;
        for (start, ttft, n, stride, before_end, isl, osl, ok, even) in reqs {
            let r = chunked(start, ttft, n, stride, before_end, isl, osl, even);
            let (chunks, end) = (&r.chunk_ns, r.end_ns);
            let m = RequestMetrics::of(&r, false);
            tl.add(&r, ok.then_some(&m));
            if ok && even {
                let clipped = chunks[1..].iter().filter(|&&t| t >= end).count();
                bound += (osl as f64 - 1.0) / n as f64 * (1 + clipped) as f64;
            }
        }
        let w = [(from, from + len)];
        let steps = &tl.metrics_over_with(&w, u64::MAX, u64::MAX)[0];
        let closed = &tl.metrics_over_with(&w, u64::MAX, 0)[0];
        for (&(t, a), &(u, b)) in steps.iter().zip(closed) {
            proptest::prop_assert_eq!(t, u);
            let (a, b) = (a.stats(), b.stats());
            let scale = a.iter().chain(&b).map(|x| x.1.abs()).fold(1.0, f64::max);
            let allowed = if t == TimelineMetric::TokensInFlight { bound + 1e-6 * scale } else { 1e-6 * scale };
            for (x, y) in a.iter().zip(&b) {
                proptest::prop_assert!((x.1 - y.1).abs() <= allowed, "{:?} {}: {} against {} (bound {})", t, x.0, x.1, y.1, allowed);
            }
        }
    }
}

proptest::proptest! {
    /// A rate while its concurrency is above 0, and the rate per request while it is and over
    /// the window, taken together over the segments of the two curves, equal the curves made on
    /// their own (a step at every time of either) and each weighed alone.
    #[test]
    fn per_user_statistics_equal_the_divided_curve_weighed_alone(
        rate in proptest::collection::vec((0u64..50, -5.0f64..5.0), 0..20),
        conc in proptest::collection::vec((0u64..50, 0u32..4), 0..20),
        from in 0u64..30,
        len in 0u64..60,
    ) {
        let curve = |mut s: Vec<(u64, f64)>| {
            s.sort_by_key(|x| x.0);
            s.dedup_by_key(|x| x.0);
            s
        };
        let rate = curve(rate);
        let conc = curve(conc.into_iter().map(|(t, c)| (t, f64::from(c))).collect());
        let to = from + len;
        let got = steps::per_user(&rate, &conc, from, to, PER_SECOND);
        let value = |s: &[(u64, f64)], t: u64| s.iter().take_while(|x| x.0 <= t).last().map_or(0.0, |x| x.1);
        let mut cuts: Vec<u64> = rate.iter().chain(&conc).map(|x| x.0).filter(|&t| t > from && t < to).collect();
        cuts.sort_unstable();
        cuts.dedup();
        let (mut active, mut active_per_user, mut window_per_user) = (Vec::new(), Vec::new(), Vec::new());
        let mut t = from;
        for next in cuts.into_iter().chain([to]) {
            let (r, c) = (value(&rate, t), value(&conc, t));
            let u = if c > 0.0 { r / c } else { 0.0 };
            if c > 0.0 {
                active.push((next - t, r * PER_SECOND));
                active_per_user.push((next - t, u * PER_SECOND));
            }
            window_per_user.push((next - t, u * PER_SECOND));
            t = next;
        }
        let held = |h: &[(u64, f64)]| h.iter().map(|x| x.0).sum::<u64>() as f64;
        let want = if rate.is_empty() || conc.is_empty() || to <= from {
            [TimeWeighted::default(); 3]
        } else {
            [
                sorted_copy(active.clone(), held(&active)),
                sorted_copy(active_per_user.clone(), held(&active_per_user)),
                sorted_copy(window_per_user, len as f64),
            ]
        };
        proptest::prop_assert_eq!(got.map(stat_bits), want.map(stat_bits));
    }
}

/// Nine requests (two evenly chunked) whose tokens in flight in closed form spend exactly 90 %
/// of the window at or below 5,666.60 tokens, at the end of a one-nanosecond ramp, then jump
/// to a level of 5,790.38: p90 is the first level (a bisection over the curve's pieces gives
/// 5,666.5955), not the next one that the rounding of the time below would reach.
#[test]
fn a_fraction_reached_exactly_at_a_ramps_end_is_its_percentile() {
    let reqs = [
        (3683, 45, 31, 16, 0, 4061, 1, false),
        (3342, 154, 3, 26, 0, 532, 1, false),
        (3827, 280, 2, 58, 1, 1260, 1, false),
        (1490, 116, 12, 101, 0, 810, 316, true),
        (280, 287, 19, 105, 0, 2993, 437, true),
        (3151, 56, 5, 73, 0, 2182, 365, false),
        (1506, 31, 21, 110, 0, 1233, 453, false),
        (933, 298, 4, 152, 0, 185, 61, false),
        (2181, 1, 15, 136, 0, 1228, 367, false),
    ];
    let mut tl = Timeline::default();
    for (start, ttft, n, stride, before_end, isl, osl, even) in reqs {
        let r = chunked(start, ttft, n, stride, before_end, isl, osl, even);
        tl.add(&r, Some(&RequestMetrics::of(&r, false)));
    }
    let closed = get(&tl.metrics_over_with(&[(0, 11_500)], u64::MAX, 0)[0], TimelineMetric::TokensInFlight);
    assert!((closed.p90 - 5_666.595_527_184_297).abs() < 1e-6, "{closed:?}");
    let steps = get(&tl.metrics_over_with(&[(0, 11_500)], u64::MAX, u64::MAX)[0], TimelineMetric::TokensInFlight);
    assert!((closed.p90 - steps.p90).abs() < 98.5, "{closed:?} against {steps:?}");
}

/// A streamed request sent at `start`, its first token `ttft` later, then `n` chunks `stride`
/// apart (the second one nanosecond late unless `even`), ending `before_end` before its last
/// chunk (not before its first token).
#[allow(clippy::too_many_arguments)]
fn chunked(
    start: u64,
    ttft: u64,
    n: u64,
    stride: u64,
    before_end: u64,
    isl: u64,
    osl: u64,
    even: bool,
) -> RequestRecord {
    let first = start + ttft;
    let mut chunks: Vec<u64> = (0..=n).map(|k| first + k * stride).collect();
    if !even {
        chunks[1] += 1;
        chunks.sort_unstable();
    }
    let end = chunks[chunks.len() - 1].saturating_sub(before_end).max(first);
    streamed(start, chunks, end, isl, osl)
}

/// The settled curves of [`Timeline::settle`] with their events as [`CURVES`] and [`SPLIT`] make them.
const SETTLED_CURVES: [(SettledCurve, Curve<'static>); 6] = [
    (SettledCurve::Concurrency, CURVES[0]),
    (SettledCurve::Total, CURVES[1]),
    (SettledCurve::PrefillConcurrency, SPLIT[2]),
    (SettledCurve::PrefillRate, CURVES[3]),
    (SettledCurve::DecodeConcurrency, SPLIT[1]),
    (SettledCurve::ClosedDecodeRate, &closed_decode),
];

fn metric_bits(m: &[(TimelineMetric, TimeWeighted)]) -> Vec<(TimelineMetric, [u64; 8])> {
    m.iter().map(|&(k, w)| (k, stat_bits(w))).collect()
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(128))]

    /// Requests handed over about as a simulation does (by end, in batches), many sharing
    /// times (sends at their first token, first tokens at their end, sends at their end), some
    /// failed, their chunks evenly spaced or not: settled after each batch before the earliest
    /// send still to come, each settled curve is the sort of all its events (the closed-form
    /// decode rate only while no span's takes more than two steps), the tokens in flight in
    /// closed form are those made at the report, and the report's metrics are
    /// those of the curves swept at the report, with chunks in closed form or not. A time settled
    /// too late, or a span added once every span was said to be in, leaves the curves to the
    /// report, with the same metrics.
    #[test]
    fn curves_settled_as_requests_end_are_the_sorted_ones(
        reqs in proptest::collection::vec(
            (0u64..60, 0u64..3, 0u64..4, proptest::collection::vec(1u64..6, 0..4), 0u64..300, 0u64..9, proptest::bool::weighted(0.9)),
            1..60,
        ),
        batches in proptest::collection::vec(1usize..8, 1..20),
        early in 0u64..3,
        late in proptest::bool::weighted(0.2),
        after in proptest::bool::weighted(0.2),
    ) {
        let mut records: Vec<(RequestRecord, Option<RequestMetrics>)> = reqs
            .into_iter()
            .map(|(start, ttft, tail, gaps, isl, osl, ok)| {
                let first = start + ttft;
                let mut chunks = vec![first];
                let mut t = first;
                chunks.extend(gaps.iter().map(|g| {
                    t += g;
                    t
                }));
                let r = streamed(start, chunks, t + tail, isl, osl);
                let m = ok.then(|| RequestMetrics::of(&r, false));
                (r, m)
            })
            .collect();
        records.sort_by_key(|(r, _)| r.end_ns);
        let (mut tl, mut plain) = (Timeline::default(), Timeline::default());
        let mut spans = Vec::new();
        let mut rest = &records[..];
        let mut dropped = false;
        for &n in batches.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let (batch, later) = rest.split_at(n.min(rest.len()));
            for (r, m) in batch {
                tl.add(r, m.as_ref());
                plain.add(r, m.as_ref());
                spans.push(plain.span(plain.spans.len() - 1));
            }
            rest = later;
            let next_send = rest.iter().map(|(r, _)| r.sent_ns).min().unwrap_or(u64::MAX);
            if late && !rest.is_empty() && batch.iter().any(|(r, _)| r.sent_ns < next_send) {
                // Settled past a send still to come: the curves are dropped once it comes.
                tl.settle(next_send + 1);
                dropped = true;
            } else {
                tl.settle(next_send.saturating_sub(early));
            }
        }
        tl.settle(u64::MAX);
        let mut kept_chunks = Vec::new();
        plain.each_span(|_, kept| kept_chunks.push(kept.to_vec()));
        let sorted = |each: Curve| {
            let mut e = Vec::new();
            for (s, kept) in spans.iter().zip(&kept_chunks) {
                each(s, kept, &mut e);
            }
            sorted_sweep(e)
        };
        // Whether some span's closed-form decode rate takes more than a step up and one down.
        let uneven = spans.iter().zip(&kept_chunks).any(|(s, kept)| {
            let mut e = Vec::new();
            closed_decode(s, kept, &mut e);
            e.len() > 2
        });
        if dropped {
            proptest::prop_assert!(tl.swept(SettledCurve::Concurrency).is_none(), "settled too late, yet swept");
        } else {
            for (curve, each) in SETTLED_CURVES {
                let swept = tl.swept(curve);
                if matches!(curve, SettledCurve::ClosedDecodeRate) && uneven {
                    proptest::prop_assert!(swept.is_none(), "uneven chunks, yet the closed decode rate swept");
                    continue;
                }
                proptest::prop_assert!(swept.is_some(), "{curve:?} not swept");
                proptest::prop_assert_eq!(bits(swept.unwrap()), bits(&sorted(each)));
            }
            proptest::prop_assert_eq!(tl.swept_ramps(), Some(&plain.in_flight_ramps(true)));
        }
        let windows = plain.window().map(|w| vec![w]).unwrap_or_default();
        for closed_above in [0, u64::MAX] {
            let (got, want) =
                (tl.metrics_over_with(&windows, u64::MAX, closed_above), plain.metrics_over_with(&windows, u64::MAX, closed_above));
            proptest::prop_assert_eq!(got.iter().map(|m| metric_bits(m)).collect::<Vec<_>>(), want.iter().map(|m| metric_bits(m)).collect::<Vec<_>>());
        }
        if after {
            let r = streamed(0, vec![1, 2, 3], 4, 5, 3);
            let m = RequestMetrics::of(&r, false);
            tl.add(&r, Some(&m));
            plain.add(&r, Some(&m));
            proptest::prop_assert!(tl.swept(SettledCurve::Concurrency).is_none(), "a span added after every span was in");
        }
        proptest::prop_assert_eq!(metric_bits(&tl.window_metrics(None)), metric_bits(&plain.window_metrics(None)));
    }
}
