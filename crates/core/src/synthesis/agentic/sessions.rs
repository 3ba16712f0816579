//! The session state machine (AIPerf's `SessionSynthesizer`): a session starts with the shared
//! prefix plus a sampled session context, then each turn waits a mixture delay, adds new tokens
//! and the previous answer to the context, and ends the session at the context limit (forced
//! retirement), by a reset whose chance grows with the context, or at an explicit turn count.

use super::config::{AgenticConfig, Lognormal, MAX_SESSION_BLOCKS};
use crate::rng::PyRandom;

/// Smallest generation length (or the configured maximum when that is smaller).
const OUTPUT_MIN: u64 = 30;
/// Sessions past this fraction of the run never split into a restart continuation.
const RESTART_CUTOFF: f64 = 0.75;

/// Why a session ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndReason {
    ForcedRetire,
    ProbabilisticReset,
    RestartSplit,
    TargetTurnCount,
}

/// One turn: `input_length` is the whole context sent, `new_tokens` what it adds to the last one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Turn {
    pub input_length: u64,
    pub new_tokens: u64,
    pub output_length: u64,
    /// Milliseconds after the previous turn (0 for the first).
    pub delay_ms: f64,
}

/// One session: its turns are `Sessions::turns[turns]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Session {
    /// `sess-` and 12 hex digits.
    pub id: String,
    pub group: u64,
    /// Where its session-specific hash ids start (shared by a restart's two halves).
    pub index: u64,
    pub turns: std::ops::Range<usize>,
    pub end: EndReason,
    /// The second half of a restart split: its first turn carries the first half's context.
    pub continuation: bool,
}

/// Generated sessions in output order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sessions {
    pub sessions: Vec<Session>,
    pub turns: Vec<Turn>,
}

impl Sessions {
    /// The turns of `s`.
    pub fn turns_of(&self, s: &Session) -> &[Turn] {
        &self.turns[s.turns.clone()]
    }
}

/// Why generation stopped.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum GenerateError {
    #[error(
        "a context of {input_length} tokens needs {blocks} session blocks, more than {MAX_SESSION_BLOCKS} (lower max_prompt_tokens or raise block_size)"
    )]
    SessionBlocks { input_length: u64, blocks: u64 },
    #[error("no session of {target} turns fits max_prompt_tokens ({limit}) after {attempts} attempts")]
    TurnsUnreachable { target: u64, limit: u64, attempts: u64 },
    #[error("the dataset would exceed {limit} rows (turns): generate fewer sessions")]
    TooLarge { limit: u64 },
}

/// The random draws: uniforms from CPython's generator, normals by Box–Muller.
struct Draw {
    rng: PyRandom,
    spare: Option<f64>,
}

impl Draw {
    fn uniform(&mut self) -> f64 {
        self.rng.random()
    }

    fn normal(&mut self) -> f64 {
        if let Some(z) = self.spare.take() {
            return z;
        }
        let u1 = 1.0 - self.rng.random();
        let u2 = self.rng.random();
        let r = (-2.0 * u1.ln()).sqrt();
        let (s, c) = (std::f64::consts::TAU * u2).sin_cos();
        self.spare = Some(r * s);
        r * c
    }

    /// A lognormal draw, redrawn (up to 100 times) while outside `[min, max]`, then clamped.
    fn lognormal(&mut self, p: &Lognormal) -> f64 {
        let (mu, sigma) = (p.mu(), p.sigma());
        let mut x = (mu + sigma * self.normal()).exp();
        if p.min.is_some() || p.max.is_some() {
            let out = |x: f64| p.min.is_some_and(|lo| x < lo) || p.max.is_some_and(|hi| x > hi);
            for _ in 0..100 {
                if !out(x) {
                    break;
                }
                x = (mu + sigma * self.normal()).exp();
            }
            if let Some(lo) = p.min {
                x = x.max(lo);
            }
            if let Some(hi) = p.max {
                x = x.min(hi);
            }
        }
        x
    }

    /// A uniform integer in `lo..hi`.
    fn integer(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.rng.below(hi - lo)
    }
}

struct Synth<'a> {
    cfg: &'a AgenticConfig,
    draw: Draw,
    new_tokens: Lognormal,
    /// Cumulative Zipf weights of the groups.
    group_cdf: Vec<f64>,
    output_min: f64,
    next_index: u64,
    out: Sessions,
}

impl Synth<'_> {
    fn session_id(&mut self) -> String {
        format!("sess-{:012x}", self.draw.rng.getrandbits(48))
    }

    fn group(&mut self) -> u64 {
        let u = self.draw.uniform();
        self.group_cdf.partition_point(|&c| c <= u).min(self.group_cdf.len() - 1) as u64
    }

    fn initial_context(&mut self) -> u64 {
        let l2 = (self.draw.lognormal(&self.cfg.cache.layer2) as u64).max(1);
        (self.cfg.prefix_tokens() + l2).min(self.cfg.max_prompt_tokens - 1)
    }

    fn output_length(&mut self) -> u64 {
        self.draw.lognormal(&self.cfg.generation_length).max(self.output_min) as u64
    }

    fn delay_ms(&mut self, prev_input: u64) -> f64 {
        let d = &self.cfg.inter_turn_delay;
        let agentic = self.draw.uniform() < d.agentic_fraction;
        let mut ms = self.draw.lognormal(if agentic { &d.agentic_delay } else { &d.human_delay });
        if let Some(max) = d.max {
            ms = ms.min(max);
        }
        let ratio = prev_input as f64 / self.cfg.max_prompt_tokens as f64;
        ms *= (1.0 - 0.8 * ratio).max(0.2);
        if let Some(max) = d.max {
            ms = ms.min(max);
        }
        ms
    }

    fn new_tokens(&mut self) -> u64 {
        let p = self.new_tokens.clone();
        (self.draw.lognormal(&p) as u64).max(1)
    }

    fn reset(&mut self, input_length: u64) -> bool {
        let Some(r) = &self.cfg.reset else { return false };
        let ratio = input_length as f64 / self.cfg.max_prompt_tokens as f64;
        let p = r.base_probability * (1.0 + (r.context_scaling - 1.0) * ratio);
        self.draw.uniform() < p
    }

    /// AIPerf allocates a session's ids up to its context and fails past its id budget.
    fn fits(&self, input_length: u64) -> Result<(), GenerateError> {
        let blocks = input_length.div_ceil(self.cfg.block_size).saturating_sub(self.cfg.prefix_blocks());
        if blocks > MAX_SESSION_BLOCKS { Err(GenerateError::SessionBlocks { input_length, blocks }) } else { Ok(()) }
    }

    /// Turns after the first until the context limit or a reset; returns why it ended.
    fn grow(&mut self, mut prev: Turn) -> Result<EndReason, GenerateError> {
        loop {
            let delay_ms = self.delay_ms(prev.input_length);
            let new_tokens = self.new_tokens();
            let input_length = prev.input_length + prev.output_length + new_tokens;
            if input_length >= self.cfg.max_prompt_tokens {
                return Ok(EndReason::ForcedRetire);
            }
            if self.reset(input_length) {
                return Ok(EndReason::ProbabilisticReset);
            }
            let output_length = self.output_length();
            self.fits(input_length)?;
            prev = Turn { input_length, new_tokens, output_length, delay_ms };
            self.out.turns.push(prev);
        }
    }

    fn first_turn(&mut self, input_length: u64) -> Result<Turn, GenerateError> {
        let output_length = self.output_length();
        self.fits(input_length)?;
        let t = Turn { input_length, new_tokens: input_length, output_length, delay_ms: 0.0 };
        self.out.turns.push(t);
        Ok(t)
    }

    /// A session, and the continuation it splits into when `restart` (its turn index of the
    /// split) is given.
    fn session(&mut self, restart: bool) -> Result<(Session, Option<Session>), GenerateError> {
        let index = self.next_index;
        self.next_index += 1;
        let id = self.session_id();
        let [lo, hi] = self.cfg.restart_turn_range;
        let split_at = if restart { Some(self.draw.integer(lo, hi) as usize) } else { None };
        let group = self.group();
        let start = self.out.turns.len();
        let initial = self.initial_context();
        let mut prev = self.first_turn(initial)?;
        let mut turn = 1;
        let end = loop {
            if split_at == Some(turn) {
                let first = Session {
                    id,
                    group,
                    index,
                    turns: start..self.out.turns.len(),
                    end: EndReason::RestartSplit,
                    continuation: false,
                };
                let second = self.continuation(index, group, prev)?;
                return Ok((first, Some(second)));
            }
            let delay_ms = self.delay_ms(prev.input_length);
            let new_tokens = self.new_tokens();
            let input_length = prev.input_length + prev.output_length + new_tokens;
            if input_length >= self.cfg.max_prompt_tokens {
                break EndReason::ForcedRetire;
            }
            if self.reset(input_length) {
                break EndReason::ProbabilisticReset;
            }
            let output_length = self.output_length();
            self.fits(input_length)?;
            prev = Turn { input_length, new_tokens, output_length, delay_ms };
            self.out.turns.push(prev);
            turn += 1;
        };
        let s = Session { id, group, index, turns: start..self.out.turns.len(), end, continuation: false };
        Ok((s, None))
    }

    /// The second half of a restart: its first turn sends the whole context of the first half.
    fn continuation(&mut self, index: u64, group: u64, last: Turn) -> Result<Session, GenerateError> {
        let id = self.session_id();
        let start = self.out.turns.len();
        let initial = (last.input_length + last.output_length).min(self.cfg.max_prompt_tokens - 1);
        let first = self.first_turn(initial)?;
        let end = self.grow(first)?;
        Ok(Session { id, group, index, turns: start..self.out.turns.len(), end, continuation: true })
    }

    /// A session of an explicit turn count, redrawn whole while it does not fit the context.
    fn counted_session(&mut self) -> Result<Session, GenerateError> {
        let Some(t) = self.cfg.turns.clone() else { unreachable!("counted sessions need turns") };
        let shape = Lognormal {
            min: Some(t.min as f64),
            max: Some(t.max as f64),
            ..Lognormal::of(t.mean as f64, t.median as f64)
        };
        let target = (self.draw.lognormal(&shape).round_ties_even() as u64).clamp(t.min, t.max);
        let attempts = t.max_session_attempts.unwrap_or(1);
        for _ in 0..attempts {
            let index = self.next_index;
            self.next_index += 1;
            let id = self.session_id();
            let group = self.group();
            let start = self.out.turns.len();
            let initial = self.initial_context();
            let mut prev = self.first_turn(initial)?;
            let mut realized = true;
            for _ in 1..target {
                let delay_ms = self.delay_ms(prev.input_length);
                let new_tokens = self.new_tokens();
                let input_length = prev.input_length + prev.output_length + new_tokens;
                if input_length >= self.cfg.max_prompt_tokens {
                    if t.allow_truncation {
                        let turns = start..self.out.turns.len();
                        return Ok(Session {
                            id,
                            group,
                            index,
                            turns,
                            end: EndReason::ForcedRetire,
                            continuation: false,
                        });
                    }
                    realized = false;
                    break;
                }
                let output_length = self.output_length();
                self.fits(input_length)?;
                prev = Turn { input_length, new_tokens, output_length, delay_ms };
                self.out.turns.push(prev);
            }
            if realized {
                let turns = start..self.out.turns.len();
                return Ok(Session { id, group, index, turns, end: EndReason::TargetTurnCount, continuation: false });
            }
            self.out.turns.truncate(start);
        }
        Err(GenerateError::TurnsUnreachable { target, limit: self.cfg.max_prompt_tokens, attempts })
    }
}

/// `num_sessions` sessions drawn from `cfg` with `seed` (plus the restart continuations, placed
/// at least a quarter of the run after the session they continue).
pub fn generate(cfg: &AgenticConfig, num_sessions: usize, seed: u64) -> Result<Sessions, GenerateError> {
    let groups = &cfg.cache.layer1_5_groups;
    let weights: Vec<f64> = (1..=groups.num_groups).map(|k| 1.0 / (k as f64).powf(groups.zipf_alpha)).collect();
    let total: f64 = weights.iter().sum();
    let mut acc = 0.0;
    let group_cdf = weights
        .iter()
        .map(|w| {
            acc += w / total;
            acc
        })
        .collect::<Vec<_>>();
    let last = group_cdf.last().copied().unwrap_or(1.0);
    let group_cdf = group_cdf.into_iter().map(|c| c / last).collect();
    let output_min = cfg.generation_length.max.map_or(OUTPUT_MIN as f64, |m| (m as u64).min(OUTPUT_MIN) as f64);
    let mut s = Synth {
        cfg,
        draw: Draw { rng: PyRandom::new(seed), spare: None },
        new_tokens: cfg.new_tokens_per_turn.biased(),
        group_cdf,
        output_min,
        next_index: 0,
        out: Sessions::default(),
    };
    let limit = crate::synthesis::error::MAX_OUTPUT_ROWS;
    // Every session has a turn: more sessions than rows can never fit.
    if num_sessions as u64 > limit {
        return Err(GenerateError::TooLarge { limit });
    }
    let too_large = |s: &Synth<'_>| (s.out.turns.len() as u64 > limit).then_some(GenerateError::TooLarge { limit });
    s.out.sessions.reserve(num_sessions);
    if cfg.turns.is_some() {
        for _ in 0..num_sessions {
            let one = s.counted_session()?;
            s.out.sessions.push(one);
            if let Some(e) = too_large(&s) {
                return Err(e);
            }
        }
        return Ok(s.out);
    }
    let mut deferred: Vec<(Session, usize)> = Vec::new();
    for i in 0..num_sessions {
        let progress = i as f64 / (num_sessions.saturating_sub(1)).max(1) as f64;
        let p = if progress >= RESTART_CUTOFF {
            0.0
        } else {
            cfg.restart_initial_probability * (1.0 - progress / RESTART_CUTOFF)
        };
        let restart = s.draw.uniform() < p;
        let (first, second) = s.session(restart)?;
        if let Some(e) = too_large(&s) {
            return Err(e);
        }
        let origin = s.out.sessions.len();
        s.out.sessions.push(first);
        if let Some(second) = second {
            deferred.push((second, origin));
        }
    }
    let min_offset = (num_sessions / 4).max(1);
    for (second, origin) in deferred {
        let len = s.out.sessions.len();
        let low = (origin + min_offset).min(len);
        let at = if low >= len { len } else { s.draw.integer(low as u64, len as u64 + 1) as usize };
        s.out.sessions.insert(at, second);
    }
    Ok(s.out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn sessions_grow_to_the_limit_and_are_reproducible() {
        let cfg = AgenticConfig::default();
        let a = generate(&cfg, 200, 7).unwrap();
        assert_eq!(a, generate(&cfg, 200, 7).unwrap());
        assert_ne!(a, generate(&cfg, 200, 8).unwrap());
        assert_eq!(a.sessions.len(), 200);
        for s in &a.sessions {
            let turns = a.turns_of(s);
            assert!(turns[0].input_length > cfg.prefix_tokens());
            assert_eq!(turns[0].delay_ms, 0.0);
            for w in turns.windows(2) {
                assert_eq!(w[1].input_length, w[0].input_length + w[0].output_length + w[1].new_tokens);
                assert!(w[1].input_length < cfg.max_prompt_tokens);
            }
            assert!(turns.iter().all(|t| t.output_length >= OUTPUT_MIN));
        }
        let retired = a.sessions.iter().filter(|s| s.end == EndReason::ForcedRetire).count();
        assert!(retired > 20 && retired < 150, "{retired}");
    }

    #[test]
    fn more_sessions_than_rows_allowed_are_refused_before_any_work() {
        let limit = crate::synthesis::error::MAX_OUTPUT_ROWS;
        let err = generate(&AgenticConfig::default(), limit as usize + 1, 1).unwrap_err();
        assert_eq!(err, GenerateError::TooLarge { limit });
        assert!(err.to_string().contains("67108864 rows"), "{err}");
    }

    #[test]
    fn restarts_continue_a_session_later_in_the_run() {
        let cfg = AgenticConfig { restart_initial_probability: 1.0, ..AgenticConfig::default() };
        let a = generate(&cfg, 100, 3).unwrap();
        let second: Vec<_> = a.sessions.iter().enumerate().filter(|(_, s)| s.continuation).collect();
        assert!(!second.is_empty());
        for (at, s) in second {
            let (origin, first) =
                a.sessions.iter().enumerate().find(|(_, f)| f.index == s.index && !f.continuation).unwrap();
            assert!(at >= origin + 25);
            let last = a.turns_of(first).last().unwrap();
            assert_eq!(a.turns_of(s)[0].input_length, last.input_length + last.output_length);
            assert_eq!(first.end, EndReason::RestartSplit);
        }
    }

    #[test]
    fn explicit_turn_counts_are_met() {
        let cfg = AgenticConfig::from_json(r#"{"turns": {"mean": 6, "median": 5, "min": 2, "max": 9}}"#).unwrap();
        let a = generate(&cfg, 50, 1).unwrap();
        for s in &a.sessions {
            assert_eq!(s.end, EndReason::TargetTurnCount);
            assert!((2..=9).contains(&a.turns_of(s).len()));
        }
    }
}
