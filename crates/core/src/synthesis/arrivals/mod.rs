//! Arrivals of generative synthesis: a trace's request rate over time, learned and reproduced.
//!
//! The model is a doubly stochastic (Cox) process. The source's span is cut into `K` equal
//! windows, wide enough to hold about [`BURSTS_PER_WINDOW`] distinct timestamps each on average
//! (so a window's count says more about the rate than about chance), at most [`MAX_WINDOWS`].
//! Per window it keeps:
//!
//! - the *curve*: requests per window, smoothed by a centred moving average over about a twelfth
//!   of the windows (at least 3);
//! - the *residual*: how far each window strays from the curve, as a factor with a variance and a
//!   lag-1 correlation from one window to the next. The chance variation that the generator adds
//!   by itself (bursts and gaps, below) is subtracted from the observed variance first, so it is
//!   not counted twice. Generation draws the factor as a lognormal AR(1) with that mean (1),
//!   variance and correlation;
//! - within windows: gaps between distinct timestamps measured in *operational time* (the
//!   window's burst count spread linearly over it, so a gap is a fraction of the local mean gap)
//!   and the number of requests sharing a timestamp (same-millisecond bursts).
//!
//! Generation walks the windows (the curve repeats past the source's span), draws each window's
//! factor, and places bursts by resampled operational gaps, stretched by the window's rate: a
//! busy window gets short gaps, a quiet one long gaps, while the shape of the gaps and the burst
//! sizes stay the source's. Everything is drawn from one generator seeded by the synthesis seed.
//!
//! Traces with conversations (`conversation_id`: BurstGPT sessions, Bailian chats) are modelled
//! as sessions: the process above places session starts (a conversation's first turn, or a row
//! outside any conversation), each session draws its number of turns and the gaps between its
//! turns from the source's, and the generated rows carry their session as `conversation_id`.
//! Mooncake traces with `session_id` are modelled the same way: a session starts at its first
//! turn's timestamp, and the gap before a later turn is its `delay` where the source gives one
//! (else the difference of timestamps); the generated rows carry `session_id`, and their later
//! turns a `delay` instead of a timestamp when the source's did.

mod clock;
mod model;

pub use clock::Clock;
pub use model::{Arrival, ArrivalModel, ArrivalOptions, SessionStyle};

use crate::trace::{Number, Trace};

/// Distinct timestamps a model window holds on average (at least).
pub const BURSTS_PER_WINDOW: f64 = 20.0;
/// Most model windows.
pub const MAX_WINDOWS: usize = 100_000;
impl ArrivalModel {
    /// Learns from the rows of `trace` that have a timestamp; `None` when none has.
    pub fn learn(trace: &Trace) -> Option<ArrivalModel> {
        if trace.rows().iter().any(|r| r.conversation.is_none() && r.session_id.is_some()) {
            return Self::learn_session_ids(trace);
        }
        // Session starts: rows outside conversations, and each conversation's first turn.
        let mut starts: Vec<f64> = Vec::new();
        let mut conversations: crate::hashing::FastMap<&str, Vec<f64>> = crate::hashing::FastMap::default();
        for r in trace.rows() {
            let Some(t) = r.timestamp.map(Number::as_f64) else { continue };
            match r.conversation.as_deref() {
                Some(c) => conversations.entry(c).or_default().push(t),
                None => starts.push(t),
            }
        }
        if conversations.is_empty() {
            starts.sort_by(f64::total_cmp);
            return ArrivalModel::learn_sorted(&starts);
        }
        // Sorted by first turn, so that the draws below do not depend on the map's order.
        let mut sessions: Vec<Vec<f64>> = conversations.into_values().collect();
        for s in &mut sessions {
            s.sort_by(f64::total_cmp);
        }
        sessions.sort_by(|a, b| a[0].total_cmp(&b[0]));
        let sessions = sessions.iter().map(|s| (s[0], s.len(), s.windows(2).map(|w| w[1] - w[0])));
        Self::learn_sessions(starts, sessions, SessionStyle::Conversation)
    }

    /// [`ArrivalModel::learn`] for a trace whose sessions are Mooncake `session_id`s: turns in
    /// file order, a session starting at its first turn's timestamp (a session without one is
    /// left out), the gap before a later turn its `delay`, else the difference of timestamps.
    fn learn_session_ids(trace: &Trace) -> Option<ArrivalModel> {
        /// A turn's timestamp and delay.
        type Turn = (Option<f64>, Option<f64>);
        let mut starts: Vec<f64> = Vec::new();
        let mut by_id: crate::hashing::FastMap<&str, Vec<Turn>> = crate::hashing::FastMap::default();
        let mut delays = false;
        for r in trace.rows() {
            let turn = (r.timestamp.map(Number::as_f64), r.delay.map(Number::as_f64));
            match r.session_id.as_deref().or(r.conversation.as_deref()) {
                Some(id) => {
                    let turns = by_id.entry(id).or_default();
                    delays |= !turns.is_empty() && turn.1.is_some();
                    turns.push(turn);
                }
                None => starts.extend(turn.0),
            }
        }
        let mut sessions: Vec<(f64, Vec<Turn>)> =
            by_id.into_values().filter_map(|turns| Some((turns.first()?.0?, turns))).collect();
        sessions.sort_by(|a, b| a.0.total_cmp(&b.0));
        let gaps = |turns: &[Turn]| -> Vec<f64> {
            turns.windows(2).filter_map(|w| w[1].1.or_else(|| Some(w[1].0? - w[0].0?))).collect()
        };
        let style = if delays { SessionStyle::SessionDelays } else { SessionStyle::SessionTimestamps };
        let sessions: Vec<(f64, usize, Vec<f64>)> =
            sessions.iter().map(|(t, turns)| (*t, turns.len(), gaps(turns))).collect();
        Self::learn_sessions(starts, sessions.into_iter().map(|(t, n, g)| (t, n, g.into_iter())), style)
    }

    /// The model of session starts (`starts`: single-turn rows; `sessions`: each session's
    /// start, turn count and gaps, in order of their starts).
    fn learn_sessions<G: Iterator<Item = f64>>(
        mut starts: Vec<f64>,
        sessions: impl Iterator<Item = (f64, usize, G)>,
        style: SessionStyle,
    ) -> Option<ArrivalModel> {
        let mut turns = vec![1u32; starts.len()];
        let mut turn_gaps = Vec::new();
        for (start, count, gaps) in sessions {
            starts.push(start);
            turns.push(u32::try_from(count).unwrap_or(u32::MAX));
            turn_gaps.extend(gaps);
        }
        starts.sort_by(f64::total_cmp);
        let mut model = ArrivalModel::learn_sorted(&starts)?;
        if turn_gaps.is_empty() {
            turn_gaps.push(0.0);
        }
        (model.turns, model.turn_gaps, model.sessions) = (turns, turn_gaps, style);
        Some(model)
    }

    /// How the source marks its sessions, when the model has sessions.
    pub fn session_style(&self) -> Option<SessionStyle> {
        (!self.turns.is_empty()).then_some(self.sessions)
    }

    /// Learns from sorted timestamps (ms).
    pub fn learn_sorted(ts: &[f64]) -> Option<ArrivalModel> {
        let (&first, &last) = (ts.first()?, ts.last()?);
        // Distinct timestamps and their sizes.
        let mut bursts: Vec<(f64, u32)> = Vec::new();
        for &t in ts {
            match bursts.last_mut() {
                Some((at, n)) if *at == t => *n += 1,
                _ => bursts.push((t, 1)),
            }
        }
        let burst_sizes: Vec<u32> = bursts.iter().map(|&(_, n)| n).collect();
        let mean_burst = ts.len() as f64 / bursts.len() as f64;
        let span = last - first;
        let k = if span > 0.0 && span.is_finite() {
            ((bursts.len() as f64 / BURSTS_PER_WINDOW).round() as usize).clamp(1, MAX_WINDOWS)
        } else {
            1
        };
        let window_ms = if span > 0.0 && span.is_finite() { span / k as f64 } else { 1000.0 };
        let index = |t: f64| (((t - first) / window_ms) as usize).min(k - 1);
        let (mut counts, mut burst_counts) = (vec![0.0f64; k], vec![0.0f64; k]);
        for &(t, n) in &bursts {
            counts[index(t)] += f64::from(n);
            burst_counts[index(t)] += 1.0;
        }
        // Operational time: each window's bursts spread linearly over it.
        let mut before = Vec::with_capacity(k + 1);
        let mut acc = 0.0;
        for &n in &burst_counts {
            before.push(acc);
            acc += n;
        }
        let op = |t: f64| {
            let i = index(t);
            let frac = ((t - first) / window_ms - i as f64).clamp(0.0, 1.0);
            before[i] + burst_counts[i] * frac
        };
        let unit_gaps: Vec<f64> = bursts.windows(2).map(|w| op(w[1].0) - op(w[0].0)).collect();
        let curve = moving_average(&counts, (k / 12) | 1);
        // The variation that bursts and gaps add by themselves, per request of the window: a
        // renewal process with gap CV c and bursts B has count variance ≈ (Var B + E[B]² c²)/E[B]
        // times the mean count.
        let var_b = variance(burst_sizes.iter().map(|&b| f64::from(b)));
        let cv2 = mean(&unit_gaps).filter(|&m| m > 0.0).map_or(0.0, |m| variance(unit_gaps.iter().copied()) / (m * m));
        let noise = (var_b + mean_burst * mean_burst * cv2) / mean_burst;
        let (mut dev2, mut lag, mut norm0, mut norm1) = (0.0, 0.0, 0.0, 0.0);
        for i in 0..k {
            let d = counts[i] - curve[i];
            dev2 += d * d - noise * curve[i];
            norm0 += curve[i] * curve[i];
            if i + 1 < k {
                lag += d * (counts[i + 1] - curve[i + 1]);
                norm1 += curve[i] * curve[i + 1];
            }
        }
        let var = if norm0 > 0.0 { (dev2 / norm0).max(0.0) } else { 0.0 };
        let rho = if var > 0.0 && norm1 > 0.0 { (lag / norm1 / var).clamp(-0.9, 0.95) } else { 0.0 };
        // The lognormal whose mean is 1, variance `var` and lag-1 correlation `rho`.
        let log_var = (1.0 + var).ln();
        let log_phi = if log_var > 0.0 {
            let inner = 1.0 + rho * (log_var.exp() - 1.0);
            if inner > 0.0 { (inner.ln() / log_var).clamp(-0.95, 0.95) } else { -0.95 }
        } else {
            0.0
        };
        Some(ArrivalModel {
            start_ms: first,
            window_ms,
            curve,
            log_var,
            log_phi,
            burst_sizes,
            mean_burst,
            unit_gaps,
            turns: Vec::new(),
            turn_gaps: Vec::new(),
            sessions: SessionStyle::Conversation,
        })
    }

    /// Width of a model window (ms).
    pub fn window_ms(&self) -> f64 {
        self.window_ms
    }

    /// The learned curve: requests per model window.
    pub fn curve(&self) -> &[f64] {
        &self.curve
    }

    /// The residual's variance (of the factor, mean 1) and lag-1 correlation.
    pub fn residual(&self) -> (f64, f64) {
        let v = self.log_var.exp() - 1.0;
        let rho = if v > 0.0 { ((self.log_phi * self.log_var).exp() - 1.0) / v } else { 0.0 };
        (v, rho)
    }

    /// The same model with a constant rate (the curve's mean, no residual): what a generator that
    /// ignores the shape over time produces.
    #[cfg(test)]
    pub(crate) fn constant_rate(&self) -> ArrivalModel {
        let m = self.curve.iter().sum::<f64>() / self.curve.len() as f64;
        ArrivalModel { curve: vec![m; self.curve.len()], log_var: 0.0, log_phi: 0.0, ..self.clone() }
    }
}

/// Centred moving average over `width` (odd) values, truncated at the ends.
fn moving_average(x: &[f64], width: usize) -> Vec<f64> {
    let half = width.max(3) / 2;
    let half = if x.len() < 3 { 0 } else { half };
    let mut prefix = Vec::with_capacity(x.len() + 1);
    prefix.push(0.0);
    for &v in x {
        prefix.push(prefix[prefix.len() - 1] + v);
    }
    (0..x.len())
        .map(|i| {
            let (lo, hi) = (i.saturating_sub(half), (i + half + 1).min(x.len()));
            (prefix[hi] - prefix[lo]) / (hi - lo) as f64
        })
        .collect()
}

fn mean(x: &[f64]) -> Option<f64> {
    (!x.is_empty()).then(|| x.iter().sum::<f64>() / x.len() as f64)
}

fn variance(x: impl Iterator<Item = f64> + Clone) -> f64 {
    let (n, s) = x.clone().fold((0usize, 0.0), |(n, s), v| (n + 1, s + v));
    if n == 0 {
        return 0.0;
    }
    let m = s / n as f64;
    x.map(|v| (v - m) * (v - m)).sum::<f64>() / n as f64
}

/// Requests per window of `width_ms` from the first timestamp (sorted `ts`); a last window that
/// the span covers only partly is left out (unless it is the only one).
pub fn window_counts(ts: &[f64], width_ms: f64) -> Vec<f64> {
    let (Some(&first), Some(&last)) = (ts.first(), ts.last()) else { return Vec::new() };
    if width_ms.is_nan() || width_ms <= 0.0 || !(last - first).is_finite() {
        return Vec::new();
    }
    let full = ((last - first) / width_ms).floor() as usize;
    let n = full.clamp(1, 10_000_000);
    let mut counts = vec![0.0; n];
    for &t in ts {
        let i = ((t - first) / width_ms) as usize;
        if let Some(c) = counts.get_mut(i) {
            *c += 1.0;
        }
    }
    counts
}

/// Variance over mean of counts (1 for a Poisson process); `None` for fewer than two windows.
pub fn dispersion(counts: &[f64]) -> Option<f64> {
    let m = mean(counts).filter(|&m| m > 0.0 && counts.len() >= 2)?;
    Some(variance(counts.iter().copied()) / m)
}

/// Lag-1 autocorrelation of counts; `None` for fewer than three windows or constant counts.
pub fn lag1_autocorrelation(counts: &[f64]) -> Option<f64> {
    let m = mean(counts).filter(|_| counts.len() >= 3)?;
    let den: f64 = counts.iter().map(|c| (c - m) * (c - m)).sum();
    let num: f64 = counts.windows(2).map(|w| (w[0] - m) * (w[1] - m)).sum();
    (den > 0.0).then_some(num / den)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::rng::PyRandom;
    use crate::trace::{Input, ParseOptions, Row, parse_str};

    const PLAIN: ArrivalOptions = ArrivalOptions { speedup: 1.0, intensity: 1.0, duration_ms: None };

    fn times(model: &ArrivalModel, n: usize, seed: u64, options: ArrivalOptions) -> Vec<f64> {
        let mut clock = model.clock(seed, options);
        (0..n).map_while(|_| clock.next_time().map(Number::as_f64)).collect()
    }

    fn conversation() -> Vec<f64> {
        let text = include_str!("../../../../../tests/fixtures/traces/conversation_trace.jsonl");
        let trace = parse_str(text, ParseOptions::default()).unwrap().trace;
        let mut ts: Vec<f64> = trace.rows().iter().filter_map(|r| r.timestamp.map(Number::as_f64)).collect();
        ts.sort_by(f64::total_cmp);
        ts
    }

    /// Mean dispersion and lag-1 autocorrelation at `width_ms` over seeds 0..8.
    fn shape_over_seeds(model: &ArrivalModel, n: usize, width_ms: f64) -> (f64, f64) {
        let (mut d, mut a) = (0.0, 0.0);
        for seed in 0..8 {
            let c = window_counts(&times(model, n, seed, PLAIN), width_ms);
            d += dispersion(&c).unwrap() / 8.0;
            a += lag1_autocorrelation(&c).unwrap() / 8.0;
        }
        (d, a)
    }

    fn correlation(x: &[f64], y: &[f64]) -> f64 {
        let n = x.len().min(y.len());
        let (x, y) = (&x[..n], &y[..n]);
        let (mx, my) = (mean(x).unwrap(), mean(y).unwrap());
        let sxy: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
        let sxx: f64 = x.iter().map(|a| (a - mx) * (a - mx)).sum();
        let syy: f64 = y.iter().map(|b| (b - my) * (b - my)).sum();
        sxy / (sxx * syy).sqrt()
    }

    #[test]
    fn the_conversation_traces_minute_scale_clustering_comes_back() {
        let ts = conversation();
        let src = window_counts(&ts, 60_000.0);
        let (d0, a0) = (dispersion(&src).unwrap(), lag1_autocorrelation(&src).unwrap());
        assert!((2.5..3.2).contains(&d0) && (0.2..0.4).contains(&a0), "{d0} {a0}");
        let model = ArrivalModel::learn_sorted(&ts).unwrap();
        let within = |(d, a): (f64, f64)| (d / d0 - 1.0).abs() <= 0.25 && (a - a0).abs() <= 0.15;
        let shape = shape_over_seeds(&model, ts.len(), 60_000.0);
        assert!(within(shape), "source {d0:.2} {a0:.2}, generated {shape:?}");
        // A constant rate with the same bursts and gaps cannot reach it.
        let flat = shape_over_seeds(&model.constant_rate(), ts.len(), 60_000.0);
        assert!(!within(flat), "a constant rate gives {flat:?}");
    }

    #[test]
    fn a_day_shaped_rate_curve_comes_back() {
        // A Poisson process whose rate follows a day: 0.1/s at night, 1.9/s in the afternoon.
        let mut rng = PyRandom::new(11);
        let day_ms = 86_400_000.0;
        let rate = |t: f64| 1.0 - 0.9 * (std::f64::consts::TAU * t / day_ms).cos();
        let (mut t, mut ts) = (0.0, Vec::new());
        while t < day_ms {
            t += -(1.0 - rng.random()).ln() / 1.9 * 1000.0;
            if rng.random() * 1.9 < rate(t) && t < day_ms {
                ts.push(t.floor());
            }
        }
        let model = ArrivalModel::learn_sorted(&ts).unwrap();
        let src = window_counts(&ts, 600_000.0);
        let out = times(&model, ts.len(), 5, PLAIN);
        let got = window_counts(&out, 600_000.0);
        let r = correlation(&src, &got);
        assert!(r > 0.95, "correlation of 10-minute counts {r}");
        let flat = window_counts(&times(&model.constant_rate(), ts.len(), 5, PLAIN), 600_000.0);
        assert!(correlation(&src, &flat) < 0.5, "a constant rate does not follow the day");
        // Twice the duration repeats the day; twice the intensity doubles the count.
        let two_days = ArrivalOptions { duration_ms: Some(2.0 * day_ms), ..PLAIN };
        let out = times(&model, usize::MAX, 5, two_days);
        let c = window_counts(&out, 600_000.0);
        assert!(correlation(&c[..144], &c[144..]) > 0.9);
        assert!((out.len() as f64 / (2.0 * ts.len() as f64) - 1.0).abs() < 0.05, "{}", out.len());
        let half_day = ArrivalOptions { duration_ms: Some(day_ms / 2.0), intensity: 2.0, ..PLAIN };
        let out = times(&model, usize::MAX, 5, half_day);
        let first_half = ts.iter().filter(|&&t| t < day_ms / 2.0).count() as f64;
        assert!((out.len() as f64 / (2.0 * first_half) - 1.0).abs() < 0.05, "{} vs {first_half}", out.len());
        assert!(out.last().unwrap() - out[0] < day_ms / 2.0);
    }

    #[test]
    fn burstgpt_v2_keeps_its_hourly_drift() {
        let text = include_str!("../../../../../tests/fixtures/traces/formats/burstgpt/BurstGPT_3.csv.head400");
        let mut ts: Vec<f64> =
            text.lines().skip(1).map(|l| l.split(',').next().unwrap().parse::<f64>().unwrap() * 1000.0).collect();
        ts.sort_by(f64::total_cmp);
        let model = ArrivalModel::learn_sorted(&ts).unwrap();
        let width = (ts[ts.len() - 1] - ts[0]) / 30.0;
        let src = window_counts(&ts, width);
        let mean_of = |m: &ArrivalModel| {
            let mut sum = vec![0.0; src.len()];
            for seed in 0..8 {
                for (s, c) in sum.iter_mut().zip(window_counts(&times(m, ts.len(), seed, PLAIN), width)) {
                    *s += c / 8.0;
                }
            }
            correlation(&src, &sum)
        };
        let r = mean_of(&model);
        assert!(r > 0.7, "{r}");
        assert!(mean_of(&model.constant_rate()) < 0.5);

        // Sessions: turns per session and the gaps between turns come back.
        let rows = text.lines().skip(1).map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            let mut row = Row::new(Input::Length(1));
            row.timestamp = Some(Number::Float(f[0].parse::<f64>().unwrap() * 1000.0));
            row.conversation = Some(f[1].into());
            (row, Vec::new())
        });
        let source: Trace = rows.collect();
        let model = ArrivalModel::learn(&source).unwrap();
        let mut clock = model.clock(1, PLAIN);
        let generated: Trace = (0..4000)
            .map(|_| {
                let a = clock.next_arrival().unwrap();
                let mut row = Row::new(Input::Length(1));
                row.timestamp = Some(a.time);
                row.conversation = Some(format!("s{}", a.session.unwrap()).into());
                (row, Vec::new())
            })
            .collect();
        let checks = super::super::fidelity::arrival_checks(&source, &generated);
        for name in ["mean_turns_per_session", "median_inter_turn_delay_ms"] {
            let c = checks.iter().find(|c| c.statistic == name).unwrap();
            assert_eq!(c.pass, Some(true), "{c:?}");
        }
    }

    #[test]
    fn mooncake_sessions_keep_their_turns_and_delays() {
        // 400 sessions of 1–6 turns: first turns timestamped, later ones a delay of 2–40 s.
        let mut rng = PyRandom::new(3);
        let (mut t, mut source) = (0.0, Trace::new());
        for s in 0..400 {
            t += -(1.0 - rng.random()).ln() * 5_000.0;
            for turn in 0..1 + rng.below(6) {
                let mut row = Row::new(Input::Length(1));
                row.session_id = Some(format!("chat-{s}").into());
                if turn == 0 {
                    row.timestamp = Some(Number::Int(t as i64));
                } else {
                    row.delay = Some(Number::Int(2_000 + rng.below(38_000) as i64));
                }
                source.push(row, std::iter::empty());
            }
        }
        let model = ArrivalModel::learn(&source).unwrap();
        assert_eq!(model.session_style(), Some(SessionStyle::SessionDelays));
        let mut clock = model.clock(1, PLAIN);
        assert_eq!(clock.style(), SessionStyle::SessionDelays);
        let generated: Trace = (0..3000)
            .map(|_| {
                let a = clock.next_arrival().unwrap();
                let mut row = Row::new(Input::Length(1));
                row.session_id = Some(format!("s{}", a.session.unwrap()).into());
                match a.gap {
                    Some(gap) => row.delay = Some(gap),
                    None => row.timestamp = Some(a.time),
                }
                (row, Vec::new())
            })
            .collect();
        assert!(generated.rows().iter().any(|r| r.delay.is_some()));
        let checks = super::super::fidelity::arrival_checks(&source, &generated);
        for name in ["mean_turns_per_session", "median_inter_turn_delay_ms"] {
            let c = checks.iter().find(|c| c.statistic == name).unwrap();
            assert_eq!(c.pass, Some(true), "{c:?}");
        }
        // Sessions with timestamps on every turn keep them.
        let stamped: Trace = source
            .rows()
            .iter()
            .map(|r| {
                let mut row = r.clone();
                row.timestamp = row.timestamp.or(Some(Number::Int(0)));
                row.delay = None;
                (row, Vec::new())
            })
            .collect();
        assert_eq!(ArrivalModel::learn(&stamped).unwrap().session_style(), Some(SessionStyle::SessionTimestamps));
    }

    #[test]
    fn same_seed_same_times() {
        let ts = conversation();
        let model = ArrivalModel::learn_sorted(&ts).unwrap();
        assert_eq!(times(&model, 5000, 3, PLAIN), times(&model, 5000, 3, PLAIN));
        assert_ne!(times(&model, 5000, 3, PLAIN), times(&model, 5000, 4, PLAIN));
    }
}
