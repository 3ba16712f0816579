//! The events one request makes on each curve.

use super::ramps::Bend;
use super::spans::{EVENLY, NO_TIME, Span};
use super::steps::Event;

/// A span's request in flight, from its send to its end.
pub(super) fn in_flight(s: &Span, e: &mut Vec<Event>) {
    e.extend([(s.start, 1.0), (s.end, -1.0)]);
}

/// A span's request decoding, from its first token to its end.
pub(super) fn decoding(s: &Span, e: &mut Vec<Event>) {
    if s.first != NO_TIME {
        e.extend([(s.first, 1.0), (s.end, -1.0)]);
    }
}

/// A span's request in prefill, from its send to its first token.
pub(super) fn prefilling(s: &Span, e: &mut Vec<Event>) {
    if s.first != NO_TIME {
        e.extend([(s.start, 1.0), (s.first, -1.0)]);
    }
}

/// A span's input tokens spread evenly from its send to its first token.
pub(super) fn prefill_rate(s: &Span, e: &mut Vec<Event>) {
    if s.first != NO_TIME && !s.isl.is_nan() && s.first > s.start {
        let rate = s.isl / (s.first - s.start) as f64;
        e.extend([(s.start, rate), (s.first, -rate)]);
    }
}

/// A span's output tokens after the first spread evenly from its first token to its end.
pub(super) fn even_decode_rate(s: &Span, e: &mut Vec<Event>) {
    if s.first != NO_TIME && s.osl >= 1.0 && s.end > s.first {
        let rate = (s.osl - 1.0) / (s.end - s.first) as f64;
        e.extend([(s.first, rate), (s.end, -rate)]);
    }
}

/// A span's decode rate chunk by chunk: each gap above zero carries `(osl − 1) / gaps` tokens.
pub(super) fn chunk_decode(s: &Span, later: &[u64], e: &mut Vec<Event>) {
    if later.is_empty() || s.osl.is_nan() || s.osl < 1.0 {
        return;
    }
    let mut prev = s.first;
    let gaps = later
        .iter()
        .filter(|&&t| {
            let g = t > prev;
            prev = prev.max(t);
            g
        })
        .count();
    if gaps == 0 {
        return;
    }
    let tokens = (s.osl - 1.0) / gaps as f64;
    let mut prev = s.first;
    for &t in later {
        if t > prev {
            let rate = tokens / (t - prev) as f64;
            e.extend([(prev, rate), (t, -rate)]);
        }
        prev = prev.max(t);
    }
}

/// [`chunk_decode`] with the stride of a span whose later chunks follow its first evenly: the
/// one rate every gap carries, from its first token to its last chunk.
pub(super) fn closed_decode(s: &Span, later: &[u64], e: &mut Vec<Event>) {
    if s.later_chunks & EVENLY == 0 {
        return chunk_decode(s, later, e);
    }
    let (n, stride) = (s.later_count() as u64, s.stride);
    if n == 0 || stride == 0 || s.osl.is_nan() || s.osl < 1.0 {
        return;
    }
    let rate = (s.osl - 1.0) / n as f64 / stride as f64;
    e.extend([(s.first, rate), (s.first.saturating_add(n.saturating_mul(stride)), -rate)]);
}

/// The tokens in flight of a span whose later chunks follow its first evenly, its output as a
/// ramp: one token at the first chunk, then rising by a chunk's share each stride to the last
/// chunk, all freed at the end. The steps of [`tokens_in_flight`] lie within one chunk's share
/// below the ramp (above it only where chunks at or after the end are counted just before it,
/// for the last nanosecond). `None`, with nothing pushed, where the span is none such.
pub(super) fn ramp_in_flight(s: &Span, stride: u64, e: &mut Vec<Bend>) -> Option<()> {
    let n = s.later_count() as u64;
    let even = s.later_chunks & EVENLY != 0 && n > 0 && stride > 0 && s.first != NO_TIME && s.first < s.end;
    if !even || s.osl.is_nan() || s.osl < 1.0 {
        return None;
    }
    let prefilled = !s.isl.is_nan() && s.first > s.start;
    let held = if prefilled {
        e.push((s.start, s.isl, 0.0));
        s.isl
    } else {
        0.0
    };
    let each = (s.osl - 1.0) / n as f64;
    let slope = each / stride as f64;
    e.push((s.first, 1.0, slope));
    let last = s.first.saturating_add(n.saturating_mul(stride));
    if last < s.end {
        e.push((last, 0.0, -slope));
        e.push((s.end, -(held + s.osl), 0.0));
    } else {
        e.push((s.end, -(held + 1.0 + slope * (s.end - s.first) as f64), -slope));
    }
    Some(())
}

/// Tokens a span holds: its input from the send, its output from the first token (one token
/// then, the rest spread over its later chunks when the run has chunks), freed at its end.
pub(super) fn tokens_in_flight(s: &Span, later: &[u64], per_chunk: bool, e: &mut Vec<Event>) {
    let has_first = s.first != NO_TIME;
    let prefilled = !s.isl.is_nan() && has_first && s.first > s.start;
    if prefilled {
        e.push((s.start, s.isl));
    }
    let output = if per_chunk {
        let has = has_first && !later.is_empty() && s.osl >= 1.0;
        if has {
            e.push((s.first, 1.0));
            let each = (s.osl - 1.0) / later.len() as f64;
            // A chunk stamped at or after the end is counted just before it.
            e.extend(later.iter().map(|&t| (t.min(s.end.saturating_sub(1)), each)));
        }
        has
    } else {
        let has = has_first && !s.osl.is_nan() && s.end > s.first;
        if has {
            e.push((s.first, s.osl));
        }
        has
    };
    let freed = if prefilled { s.isl } else { 0.0 } + if output { s.osl } else { 0.0 };
    if prefilled || output {
        e.push((s.end, -freed));
    }
}

/// What a span adds to the tokens in flight in closed form, a bend at a time of it.
#[derive(Default)]
pub(super) struct SpanBends {
    one: Vec<Bend>,
    steps: Vec<Event>,
    buf: Vec<u64>,
}

impl SpanBends {
    /// Puts the bends of `s` (`kept`: its entries of the chunks) in `lists`, its j-th in list j,
    /// the last list taking the rest: a ramp ([`ramp_in_flight`]) when it is evenly spaced, else
    /// the steps of [`tokens_in_flight`].
    pub(super) fn put(&mut self, s: &Span, kept: &[u64], per_chunk: bool, lists: &mut [Vec<Bend>; 4]) {
        let Self { one, steps, buf } = self;
        one.clear();
        if s.later_chunks & EVENLY == 0 || ramp_in_flight(s, s.stride, one).is_none() {
            steps.clear();
            tokens_in_flight(s, s.later(kept, buf), per_chunk, steps);
            one.extend(steps.iter().map(|&(t, d)| (t, d, 0.0)));
        }
        for (j, &b) in one.iter().enumerate() {
            lists[j.min(3)].push(b);
        }
    }

    /// The bends [`put`](Self::put) last.
    pub(super) fn last(&self) -> &[Bend] {
        &self.one
    }
}
