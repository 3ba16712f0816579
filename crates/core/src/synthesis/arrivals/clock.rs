//! [`Clock`]: arrival times drawn from a learned [`ArrivalModel`], window by window.

use super::model::{ARRIVALS_COMPONENT, Arrival, ArrivalModel, ArrivalOptions, SessionStyle, micro_ms};
use crate::rng::{PyRandom, derive_seed};
use crate::trace::Number;

impl ArrivalModel {
    /// A generator of arrival times, seeded by `seed`.
    pub fn clock(&self, seed: u64, options: ArrivalOptions) -> Clock<'_> {
        let mut rng = PyRandom::new(derive_seed(seed, ARRIVALS_COMPONENT));
        let y = normal(&mut rng) * self.log_var.sqrt();
        let mut c = Clock {
            model: self,
            options,
            rng,
            window: 0,
            t: 0.0,
            window_end: self.window_ms,
            burst_rate: 0.0,
            y,
            left_in_burst: 0,
            started: false,
            next_start: None,
            sessions: 0,
            later_turns: std::collections::BinaryHeap::new(),
        };
        c.burst_rate = c.rate_of_window();
        c
    }
}

/// Arrival times drawn from an [`ArrivalModel`].
#[derive(Debug)]
pub struct Clock<'a> {
    model: &'a ArrivalModel,
    options: ArrivalOptions,
    rng: PyRandom,
    /// Current window (counting past the source's, which repeat).
    window: u64,
    /// Time since the start in the source's timeline (ms, before the speedup).
    t: f64,
    window_end: f64,
    /// Distinct timestamps per ms in the current window.
    burst_rate: f64,
    /// The residual's logarithm in the current window.
    y: f64,
    left_in_burst: u32,
    started: bool,
    /// The next session start (source timeline, ms), once drawn.
    next_start: Option<f64>,
    sessions: u64,
    /// Later turns waiting: (time's bits, session, turns left after it, the gap's bits),
    /// earliest first. Times are non-negative, whose bits order as the numbers do.
    later_turns: std::collections::BinaryHeap<std::cmp::Reverse<(u64, u64, u32, u64)>>,
}

impl Clock<'_> {
    fn rate_of_window(&self) -> f64 {
        let m = self.model;
        let base = m.curve[(self.window % m.curve.len() as u64) as usize];
        let factor = (self.y - m.log_var / 2.0).exp();
        base * factor * self.options.intensity / m.mean_burst / m.window_ms
    }

    fn next_window(&mut self) {
        self.window += 1;
        self.t = self.window_end;
        self.window_end += self.model.window_ms;
        let m = self.model;
        let phi = m.log_phi;
        self.y = phi * self.y + (1.0 - phi * phi).sqrt() * m.log_var.sqrt() * normal(&mut self.rng);
        self.burst_rate = self.rate_of_window();
    }

    /// The next start of the arrival process (source timeline, ms).
    fn draw_start(&mut self) -> f64 {
        if self.left_in_burst == 0 {
            let m = self.model;
            if self.started && !m.unit_gaps.is_empty() {
                let mut need = m.unit_gaps[self.rng.below(m.unit_gaps.len() as u64) as usize];
                // Consume operational time window by window; a window with no rate is skipped.
                // Windows of zero rate everywhere cannot happen: the curve holds every request.
                loop {
                    let room = self.burst_rate * (self.window_end - self.t);
                    if need <= room && self.burst_rate > 0.0 {
                        self.t += need / self.burst_rate;
                        break;
                    }
                    need -= room;
                    self.next_window();
                }
            }
            self.started = true;
            self.left_in_burst = m.burst_sizes[self.rng.below(m.burst_sizes.len() as u64) as usize];
        }
        self.left_in_burst -= 1;
        self.t
    }

    /// Queues the next turn of `session` after the one at `t`, if `left` turns remain.
    fn follow(&mut self, t: f64, session: u64, left: u32) {
        if left > 0 {
            let m = self.model;
            let gap = m.turn_gaps[self.rng.below(m.turn_gaps.len() as u64) as usize].max(0.0);
            self.later_turns.push(std::cmp::Reverse(((t + gap).to_bits(), session, left - 1, gap.to_bits())));
        }
    }

    /// How the generated rows mark their sessions (the source's way).
    pub fn style(&self) -> SessionStyle {
        self.model.sessions
    }

    /// The next arrival, or `None` once the duration is over.
    pub fn next_arrival(&mut self) -> Option<Arrival> {
        let start = match self.next_start {
            Some(t) => t,
            None => {
                let t = self.draw_start();
                self.next_start = Some(t);
                t
            }
        };
        let (t, session, gap) = match self.later_turns.peek() {
            Some(&std::cmp::Reverse((bits, session, left, gap))) if f64::from_bits(bits) < start => {
                self.later_turns.pop();
                let t = f64::from_bits(bits);
                self.follow(t, session, left);
                (t, Some(session), Some(f64::from_bits(gap)))
            }
            _ => {
                self.next_start = None;
                let m = self.model;
                if m.turns.is_empty() {
                    (start, None, None)
                } else {
                    let session = self.sessions;
                    self.sessions += 1;
                    let turns = m.turns[self.rng.below(m.turns.len() as u64) as usize];
                    self.follow(start, session, turns.saturating_sub(1));
                    (start, Some(session), None)
                }
            }
        };
        if self.options.duration_ms.is_some_and(|d| t / self.options.speedup >= d) {
            return None;
        }
        // Only the written times are rounded (to 1 µs).
        let time = micro_ms(self.model.start_ms + t / self.options.speedup);
        let gap = gap.map(|g| micro_ms(g / self.options.speedup));
        Some(Arrival { time, session, gap })
    }

    /// The next arrival time (ms), or `None` once the duration is over.
    pub fn next_time(&mut self) -> Option<Number> {
        self.next_arrival().map(|a| a.time)
    }
}

/// A standard normal draw (Box–Muller).
fn normal(rng: &mut PyRandom) -> f64 {
    let u1 = 1.0 - rng.random();
    let u2 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}
