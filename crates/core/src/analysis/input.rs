//! What the analysis reads of a trace, and nothing more: per row its lengths, timestamp, session
//! and line, and its hash ids numbered densely (`u32`, first-seen order).
//!
//! It is built one row at a time ([`InputBuilder::push`]), so `analyze-trace` fills it while the
//! file is read and never holds the trace model with its `u64` ids: about 4 bytes per hash id
//! plus 40 bytes per row, against 8 + 4 bytes per id and ~110 bytes per row for a [`Trace`] and
//! its numbering. [`AnalysisInput::of`] builds it from a [`Trace`] (the browser, synthesis); both
//! go through the same statistics.

use crate::hashing::FastMap;
use std::collections::HashMap;
use std::ops::Range;

use super::ids::Interner;
use crate::trace::{Row, Trace};

/// One row as the analysis sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RowFacts {
    /// `input_length`, for rows in that mode (see [`RowFacts::input_length`]).
    isl: i64,
    /// `output_length`, 0 when absent.
    pub osl: u64,
    /// The timestamp in ms (see [`RowFacts::timestamp`]).
    timestamp: f64,
    /// Number of this row's ids in [`AnalysisInput::ids`], where they follow the previous row's.
    ids_len: u32,
    /// 1-based line of the source file (0 for rows built in code).
    pub line: u32,
    /// Session number ([`NO_SESSION`]: none).
    session: u32,
    flags: u8,
}

const HAS_ISL: u8 = 1;
const HAS_TIMESTAMP: u8 = 2;
const NO_SESSION: u32 = u32::MAX;

impl RowFacts {
    pub fn input_length(&self) -> Option<i64> {
        (self.flags & HAS_ISL != 0).then_some(self.isl)
    }

    pub fn timestamp(&self) -> Option<f64> {
        (self.flags & HAS_TIMESTAMP != 0).then_some(self.timestamp)
    }

    /// The row's session, numbered in first-seen order.
    pub fn session(&self) -> Option<u32> {
        (self.session != NO_SESSION).then_some(self.session)
    }
}

/// A trace reduced to what the analysis needs (see the module documentation).
#[derive(Default)]
pub struct AnalysisInput {
    rows: Vec<RowFacts>,
    ids: Vec<u32>,
    /// Distinct ids (slots of a per-id vector).
    size: usize,
    /// The `u64` id of every number met first at a row's first position (prefix groups' roots).
    roots: HashMap<u32, u64>,
    sessions: usize,
    overflowed: bool,
}

impl AnalysisInput {
    /// The analysis input of a whole trace.
    pub fn of(trace: &Trace) -> Self {
        let mut b = InputBuilder::with_capacity(trace.len(), trace.total_hash_ids());
        for (row, ids) in trace.iter() {
            b.push(row, ids);
        }
        b.finish()
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn rows(&self) -> &[RowFacts] {
        &self.rows
    }

    /// Rows with the ranges of their ids, in file order.
    pub fn iter(&self) -> impl Iterator<Item = (&RowFacts, Range<usize>)> + '_ {
        let mut start = 0usize;
        self.rows.iter().map(move |r| {
            let range = start..start + r.ids_len as usize;
            start = range.end;
            (r, range)
        })
    }

    /// All rows' id numbers, concatenated in row order.
    pub fn ids(&self) -> &[u32] {
        &self.ids
    }

    /// Distinct ids: the length of a vector indexed by id number.
    pub fn id_space(&self) -> usize {
        self.size
    }

    /// The `u64` id a row starting with id number `n` starts with.
    pub fn root_id(&self, n: u32) -> u64 {
        self.roots.get(&n).copied().unwrap_or(u64::from(n))
    }

    /// Distinct sessions.
    pub fn sessions(&self) -> usize {
        self.sessions
    }

    /// See [`Interner::overflowed`].
    pub fn overflowed(&self) -> bool {
        self.overflowed
    }
}

/// Builds an [`AnalysisInput`] one row at a time.
#[derive(Default)]
pub struct InputBuilder {
    input: AnalysisInput,
    interner: Interner,
    sessions: FastMap<Box<str>, u32>,
    /// The previous row's first id: consecutive rows often start alike.
    last_root: Option<u64>,
}

impl InputBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Room for `rows` rows and `ids` hash ids.
    pub fn with_capacity(rows: usize, ids: usize) -> Self {
        let mut b = Self::new();
        b.input.rows.reserve_exact(rows);
        b.input.ids.reserve_exact(ids);
        b
    }

    /// Adds a row with its hash ids (at most `u32::MAX` of them, like a [`Trace`] row: the rest
    /// are ignored).
    pub fn push(&mut self, row: &Row, ids: &[u64]) {
        let ids = &ids[..ids.len().min(u32::MAX as usize)];
        let input = &mut self.input;
        if let Some(&first) = ids.first() {
            let n = self.interner.intern(first);
            if self.last_root != Some(first) {
                input.roots.entry(n).or_insert(first);
                self.last_root = Some(first);
            }
            input.ids.push(n);
            input.ids.extend(ids[1..].iter().map(|&id| self.interner.intern(id)));
        }
        let mut flags = 0;
        let isl = row.input_length().inspect(|_| flags |= HAS_ISL).unwrap_or(0);
        let timestamp = row.timestamp.map(|t| t.as_f64()).inspect(|_| flags |= HAS_TIMESTAMP).unwrap_or(0.0);
        let session = match &row.session_id {
            None => NO_SESSION,
            Some(s) => match self.sessions.get(&**s) {
                Some(&n) => n,
                None => {
                    let n = u32::try_from(self.sessions.len()).unwrap_or(NO_SESSION - 1).min(NO_SESSION - 1);
                    self.sessions.insert(s.clone(), n);
                    n
                }
            },
        };
        input.rows.push(RowFacts {
            isl,
            osl: row.output_length.unwrap_or(0),
            timestamp,
            ids_len: ids.len() as u32,
            line: row.line,
            session,
            flags,
        });
    }

    /// Hash ids added so far.
    pub fn total_hash_ids(&self) -> usize {
        self.input.ids.len()
    }

    pub fn finish(self) -> AnalysisInput {
        let mut input = self.input;
        input.size = self.interner.size();
        input.overflowed = self.interner.overflowed();
        input.sessions = self.sessions.len();
        input.rows.shrink_to_fit();
        input.ids.shrink_to_fit();
        input
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{ParseOptions, parse_str};

    #[test]
    fn rows_keep_their_facts_and_ids_are_numbered() {
        let text = "{\"timestamp\":5,\"input_length\":600,\"output_length\":3,\"hash_ids\":[70,80]}\n\
                    {\"text_input\":\"hi\",\"session_id\":\"s\"}\n\
                    {\"input_length\":9,\"session_id\":\"s\",\"hash_ids\":[80,90]}\n";
        let input = AnalysisInput::of(&parse_str(text, ParseOptions::default()).unwrap().trace);
        assert_eq!(input.ids(), [0, 1, 1, 2]);
        let ranges: Vec<_> = input.iter().map(|(_, r)| r).collect();
        assert_eq!(ranges, [0..2, 2..2, 2..4]);
        let r = input.rows();
        assert_eq!((r[0].input_length(), r[0].osl, r[0].timestamp(), r[0].session()), (Some(600), 3, Some(5.0), None));
        assert_eq!((r[1].input_length(), r[1].timestamp(), r[1].session()), (None, None, Some(0)));
        assert_eq!((r[2].session(), r[2].line), (Some(0), 3));
        assert_eq!((input.root_id(0), input.root_id(1)), (70, 80));
        assert_eq!((input.id_space(), input.sessions(), input.overflowed()), (3, 1, false));
    }
}
