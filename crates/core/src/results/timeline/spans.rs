//! The run's requests as spans: each request's send, first token, end, token counts and later
//! chunks, packed in 32 bytes where they fit, collected as the requests end; mergeable.

use super::settled::Settling;
use crate::results::metrics::{Metric, RequestMetrics};
use crate::results::record::{ChunkTimes, RequestRecord};
use serde::{Deserialize, Serialize};

/// No time (a request without a first token).
pub(super) const NO_TIME: u64 = u64::MAX;

/// One request's phases and token counts.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(super) struct Span {
    pub(super) start: u64,
    /// First token ([`NO_TIME`] without one).
    pub(super) first: u64,
    pub(super) end: u64,
    /// NaN when the request has no such count (failed requests have neither).
    pub(super) isl: f64,
    pub(super) osl: f64,
    /// Chunks after the first, kept in [`Timeline::chunks`] in order of the spans, each time,
    /// unless (with [`EVENLY`]) they follow the first evenly: then kept as `stride`.
    pub(super) later_chunks: u32,
    /// With [`EVENLY`], the time between two chunks (0 otherwise).
    pub(super) stride: u64,
}

/// The flag of [`Span::later_chunks`] saying that the span's later chunks are `first + k ×
/// stride` for k = 1, 2, …, kept as [`Span::stride`] with no entry in [`Timeline::chunks`].
pub(super) const EVENLY: u32 = 1 << 31;

impl Span {
    /// The number of chunks after the first.
    pub(super) fn later_count(&self) -> usize {
        (self.later_chunks & !EVENLY) as usize
    }

    /// The entries a span with these `later_chunks` holds in [`Timeline::chunks`].
    pub(super) fn kept_of(later_chunks: u32) -> usize {
        if later_chunks & EVENLY != 0 { 0 } else { (later_chunks & !EVENLY) as usize }
    }

    /// The span's chunks after the first, from its `kept` entries of [`Timeline::chunks`]
    /// (written into `buf` when kept as a stride).
    pub(super) fn later<'a>(&self, kept: &'a [u64], buf: &'a mut Vec<u64>) -> &'a [u64] {
        if self.later_chunks & EVENLY == 0 {
            return kept;
        }
        let stride = self.stride;
        buf.clear();
        let mut t = self.first;
        buf.extend((0..self.later_count()).map(|_| {
            t += stride;
            t
        }));
        buf
    }
}

/// The stride of `later` when they follow `first` evenly (two or more of them), their time
/// made exact by adding it.
fn even_stride(first: u64, later: &[u64]) -> Option<u64> {
    if later.len() < 2 || later.len() >= EVENLY as usize {
        return None;
    }
    let stride = later[0].checked_sub(first)?;
    let mut t = first;
    later
        .iter()
        .all(|&c| {
            t.checked_add(stride).is_some_and(|next| {
                t = next;
                next == c
            })
        })
        .then_some(stride)
}

/// A [`Span`] in 32 bytes: its first token and end as offsets from its send, its counts and
/// stride as whole numbers; a span that does not fit is kept whole in [`Timeline::wide`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(super) struct Packed {
    /// The send, or (with `first` = [`WIDE`]) the index in [`Timeline::wide`].
    pub(super) start: u64,
    /// After the send (ns); [`NO_FIRST`] without a first token.
    pub(super) first: u32,
    pub(super) end: u32,
    /// [`NO_COUNT`] for NaN.
    pub(super) isl: u32,
    pub(super) osl: u32,
    pub(super) later_chunks: u32,
    pub(super) stride: u32,
}

const NO_FIRST: u32 = u32::MAX;
const WIDE: u32 = u32::MAX - 1;
const NO_COUNT: u32 = u32::MAX;

/// A count as kept in a [`Packed`] span, when it is one exactly.
fn pack_count(x: f64) -> Option<u32> {
    if x.is_nan() {
        return Some(NO_COUNT);
    }
    let n = x as u32;
    (n != NO_COUNT && f64::from(n).to_bits() == x.to_bits()).then_some(n)
}

fn unpack_count(n: u32) -> f64 {
    if n == NO_COUNT { f64::NAN } else { f64::from(n) }
}

impl Packed {
    fn of(s: &Span) -> Option<Packed> {
        let first = if s.first == NO_TIME {
            NO_FIRST
        } else {
            u32::try_from(s.first.checked_sub(s.start)?).ok().filter(|&f| f < WIDE)?
        };
        Some(Packed {
            start: s.start,
            first,
            end: u32::try_from(s.end.checked_sub(s.start)?).ok()?,
            isl: pack_count(s.isl)?,
            osl: pack_count(s.osl)?,
            later_chunks: s.later_chunks,
            stride: u32::try_from(s.stride).ok()?,
        })
    }
}

/// The phases of every request, collected as they end; mergeable; serialized whole (to have its
/// curves computed in another worker).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Timeline {
    /// Every request's span in the order added.
    pub(super) spans: Vec<Packed>,
    /// The spans that do not fit in 32 bytes.
    pub(super) wide: Vec<Span>,
    /// Arrival of every chunk after the first, span after span, but those kept as a stride.
    pub(super) chunks: Vec<u64>,
    /// The earliest scheduled (or sent) time: where the run's window starts.
    pub(super) origin: Option<u64>,
    /// The curves swept as the spans come ([`Timeline::settle`]).
    #[serde(skip)]
    pub(super) settling: Settling,
}

impl Timeline {
    /// Makes room for `requests` more requests' spans.
    pub fn reserve(&mut self, requests: usize) {
        self.spans.reserve(requests);
    }

    /// Adds one request (`m`: its metrics when it succeeded).
    pub fn add(&mut self, r: &RequestRecord, m: Option<&RequestMetrics>) {
        self.add_chunks(r, r.chunks(), m);
    }

    /// [`Timeline::add`] of a record whose chunks are `chunks` (its `chunk_ns` not read).
    pub fn add_chunks(&mut self, r: &RequestRecord, chunks: ChunkTimes<'_>, m: Option<&RequestMetrics>) {
        let get = |k: Metric| m.and_then(|m| m.get(k)).unwrap_or(f64::NAN);
        let mut span = Span {
            start: r.sent_ns,
            first: NO_TIME,
            end: r.end_ns,
            isl: get(Metric::InputSequenceLength),
            osl: get(Metric::OutputSequenceLength),
            later_chunks: 0,
            stride: 0,
        };
        if m.is_some()
            && r.streaming
            && let Some(first) = chunks.first()
        {
            span.first = first;
            let later_count = chunks.len() - 1;
            if let Some(gap) = chunks.even_gap() {
                if (2..u64::from(EVENLY)).contains(&later_count) {
                    span.later_chunks = later_count as u32 | EVENLY;
                    span.stride = gap;
                } else {
                    span.later_chunks = later_count as u32;
                    self.chunks.extend((1..=later_count).filter_map(|k| chunks.get(k)));
                }
            } else if let ChunkTimes::Listed(listed) = chunks {
                self.add_listed(&mut span, listed);
            } else {
                self.add_listed(&mut span, &chunks.to_vec());
            }
        }
        self.push(span);
        let origin = r.scheduled_ns.min(r.sent_ns);
        self.origin = Some(self.origin.map_or(origin, |o| o.min(origin)));
    }

    /// Keeps the later chunks of `listed` (all the chunks, the first one's time in `span`) for
    /// `span`: as a stride when they follow the first evenly.
    fn add_listed(&mut self, span: &mut Span, listed: &[u64]) {
        if let Some((&first, later)) = listed.split_first() {
            if let Some(stride) = even_stride(first, later) {
                span.later_chunks = later.len() as u32 | EVENLY;
                span.stride = stride;
            } else {
                span.later_chunks = later.len() as u32;
                self.chunks.extend_from_slice(later);
            }
        }
    }

    fn push(&mut self, span: Span) {
        let packed = Packed::of(&span).unwrap_or_else(|| {
            self.wide.push(span);
            Packed {
                start: (self.wide.len() - 1) as u64,
                first: WIDE,
                end: 0,
                isl: 0,
                osl: 0,
                later_chunks: span.later_chunks,
                stride: 0,
            }
        });
        self.spans.push(packed);
    }

    /// The span at `i` (in the order added).
    pub(super) fn span(&self, i: usize) -> Span {
        let p = self.spans[i];
        if p.first == WIDE {
            return self.wide[p.start as usize];
        }
        Span {
            start: p.start,
            first: if p.first == NO_FIRST { NO_TIME } else { p.start + u64::from(p.first) },
            end: p.start + u64::from(p.end),
            isl: unpack_count(p.isl),
            osl: unpack_count(p.osl),
            later_chunks: p.later_chunks,
            stride: u64::from(p.stride),
        }
    }

    /// Adds another timeline's requests.
    pub fn merge(&mut self, other: &Timeline) {
        for i in 0..other.spans.len() {
            self.push(other.span(i));
        }
        self.chunks.extend_from_slice(&other.chunks);
        self.origin = match (self.origin, other.origin) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }

    /// The run's window as its records tell it: from the earliest scheduled (or sent) time, the
    /// start of the run's schedule, to the latest end.
    pub fn window(&self) -> Option<(u64, u64)> {
        Some((self.origin?, (0..self.spans.len()).map(|i| self.span(i).end).max()?))
    }

    /// Calls `f` with every span and its entries of [`Timeline::chunks`], in the order added.
    pub(super) fn each_span(&self, mut f: impl FnMut(&Span, &[u64])) {
        let mut at = 0;
        for i in 0..self.spans.len() {
            let n = Span::kept_of(self.spans[i].later_chunks);
            let kept = if self.chunks.is_empty() { &[][..] } else { self.chunks.get(at..at + n).unwrap_or(&[]) };
            at += n;
            f(&self.span(i), kept);
        }
    }
}
