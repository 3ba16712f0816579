//! The per-chunk curves' statistics over one window taken in passes over their sweep, made again
//! for each pass, instead of over a kept curve.

use super::metric::{PER_SECOND, TimeWeighted, TimelineMetric};
use super::spans::{Span, Timeline};
use super::steps::{Event, Feed, Steps};
use super::weighted::Weighted;

/// One pass of [`Timeline::decode_streamed`]: the statistics and where each stands in the window.
struct DecodePass {
    /// The rate over the window (on its own steps).
    rate: Weighted,
    /// The rate while the concurrency is above 0.
    active: Weighted,
    /// The rate per request while the concurrency is above 0.
    per_user: Weighted,
    /// The rate per request over the window.
    per_user_window: Weighted,
    /// The rate's own steps.
    own: Feed<f64>,
    /// The steps of the rate and the concurrency merged: (rate, concurrency).
    both: Feed<(f64, f64)>,
    with_conc: bool,
}

impl DecodePass {
    fn done(&self) -> bool {
        self.rate.done()
            && (!self.with_conc || (self.active.done() && self.per_user.done() && self.per_user_window.done()))
    }

    fn own(&mut self, t: u64, r: f64) {
        let w = &mut self.rate;
        self.own.step(t, r, |d, r| w.add(d, r * PER_SECOND));
    }

    fn both(&mut self, t: u64, r: f64, c: f64) {
        if !self.with_conc {
            return;
        }
        let (active, per_user, per_user_window) = (&mut self.active, &mut self.per_user, &mut self.per_user_window);
        self.both.step(t, (r, c), |d, (r, c)| Self::held(active, per_user, per_user_window, d, r, c));
    }

    fn held(active: &mut Weighted, per_user: &mut Weighted, per_user_window: &mut Weighted, d: u64, r: f64, c: f64) {
        let u = if c > 0.0 { r / c } else { 0.0 };
        if c > 0.0 {
            active.add(d, r * PER_SECOND);
            per_user.add(d, u * PER_SECOND);
        }
        per_user_window.add(d, u * PER_SECOND);
    }

    fn end_pass(&mut self) {
        let w = &mut self.rate;
        self.own.finish(|d, r| w.add(d, r * PER_SECOND));
        w.end_pass();
        if self.with_conc {
            let (active, per_user, per_user_window) = (&mut self.active, &mut self.per_user, &mut self.per_user_window);
            self.both.finish(|d, (r, c)| Self::held(active, per_user, per_user_window, d, r, c));
            active.end_pass();
            per_user.end_pass();
            per_user_window.end_pass();
        }
    }
}

impl Timeline {
    /// The sweep's rounding floor and whether it has any step.
    pub(super) fn floor(&self, each: impl Fn(&Span, &[u64], &mut Vec<Event>), raw: bool) -> (f64, bool) {
        let mut any = false;
        let largest = self.sweep_steps(each, raw, 0.0, |_, _| any = true);
        (1e-9 * largest, any)
    }

    /// [`over_window`] of the sweep of `each`, in passes over the sweep made again for each.
    pub(super) fn streamed(
        &self,
        each: impl Fn(&Span, &[u64], &mut Vec<Event>) + Copy,
        from: u64,
        to: u64,
    ) -> TimeWeighted {
        let (floor, any) = self.floor(each, false);
        if !any || to <= from {
            return TimeWeighted::default();
        }
        let mut w = Weighted::new(Some((to - from) as f64), u64::MAX);
        while !w.done() {
            let mut feed = Feed::new(from, to, 0.0);
            self.sweep_steps(each, false, floor, |t, v| feed.step(t, v, |d, v| w.add(d, v)));
            feed.finish(|d, v| w.add(d, v));
            w.end_pass();
        }
        w.result()
    }

    /// The four decode-rate metrics over `[from, to)` in passes over the decode rate's sweep
    /// (made again for each) merged with the decode concurrency `conc`: the rate over the
    /// window, while `conc` is above 0, and the rate per request (divided by `conc`) both ways.
    pub(super) fn decode_streamed(
        &self,
        rate: impl Fn(&Span, &[u64], &mut Vec<Event>) + Copy,
        raw: bool,
        conc: &Steps,
        from: u64,
        to: u64,
    ) -> [(TimelineMetric, TimeWeighted); 4] {
        use TimelineMetric as T;
        let (floor, any) = self.floor(rate, raw);
        let tags = [
            T::EffectiveDecodeThroughput,
            T::ActiveDecodeThroughput,
            T::ActiveDecodeThroughputPerUser,
            T::EffectiveDecodeThroughputPerUser,
        ];
        if !any || to <= from {
            return tags.map(|t| (t, TimeWeighted::default()));
        }
        let window = Some((to - from) as f64);
        let mut pass = DecodePass {
            rate: Weighted::new(window, u64::MAX),
            active: Weighted::new(None, u64::MAX),
            per_user: Weighted::new(None, u64::MAX),
            per_user_window: Weighted::new(window, u64::MAX),
            own: Feed::new(from, to, 0.0),
            both: Feed::new(from, to, (0.0, 0.0)),
            with_conc: !conc.is_empty(),
        };
        while !pass.done() {
            pass.own = Feed::new(from, to, 0.0);
            pass.both = Feed::new(from, to, (0.0, 0.0));
            let (mut j, mut r, mut c) = (0, 0.0, 0.0);
            self.sweep_steps(rate, raw, floor, |t, v| {
                while let Some(&(tc, vc)) = conc.get(j)
                    && tc < t
                {
                    c = vc;
                    j += 1;
                    pass.both(tc, r, c);
                }
                if let Some(&(tc, vc)) = conc.get(j)
                    && tc == t
                {
                    c = vc;
                    j += 1;
                }
                r = v;
                pass.own(t, r);
                pass.both(t, r, c);
            });
            for &(tc, vc) in conc.get(j..).unwrap_or(&[]) {
                c = vc;
                pass.both(tc, r, c);
            }
            pass.end_pass();
        }
        let results = [&pass.rate, &pass.active, &pass.per_user, &pass.per_user_window];
        let mut i = 0;
        tags.map(|t| {
            let r = results[i];
            i += 1;
            (t, if r.done() && (i == 1 || pass.with_conc) { r.result() } else { TimeWeighted::default() })
        })
    }
}
