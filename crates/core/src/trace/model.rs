//! The trace model: a [`Row`] and the [`Trace`] that holds rows with their `hash_ids` in one arena.

use std::sync::Arc;

use serde_json::{Map, Value};

/// A JSON number as written in the trace; integers stay integers when the row is written back.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Number {
    Int(i64),
    Float(f64),
}

impl Number {
    /// The value as `f64` (exact for integers below 2^53).
    pub fn as_f64(self) -> f64 {
        match self {
            Number::Int(i) => i as f64,
            Number::Float(f) => f,
        }
    }
}

/// What a row asks the server to process: exactly one of the four input modes.
#[derive(Clone, Debug, PartialEq)]
pub enum Input {
    /// `input_length` tokens, described by the row's `hash_ids` blocks (may be empty).
    Length(i64),
    /// `text_input`: a literal prompt.
    Text(Box<str>),
    /// `messages`: OpenAI chat messages, sent verbatim; each is an object with a `role`.
    Messages(Box<[Value]>),
    /// `payload`: a complete request body, sent verbatim.
    Payload(Box<Map<String, Value>>),
}

/// Fields that few rows carry, kept out of line so common rows stay small.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RareFields {
    /// OpenAI tool definitions (only with `messages`).
    pub tools: Option<Vec<Value>>,
    /// Merged into the request body.
    pub extra: Option<Map<String, Value>>,
    /// Fields this format does not know, in the order they appeared; written back unchanged.
    pub unknown: Vec<(String, Value)>,
    /// Sub-agent sessions this turn starts when it completes (AIPerf's DAG `spawns`/`forks`).
    pub branches: Vec<Branch>,
}

/// Sessions a turn starts when it completes (AIPerf's DAG branches), and the turn of its own
/// session that waits for them to end (a join), if any.
#[derive(Clone, Debug, PartialEq)]
pub struct Branch {
    /// The children's `session_id`s, started in this order.
    pub children: Vec<Box<str>>,
    /// 0-based turn of the spawning session that waits until every child's last turn ended;
    /// `None`: nothing waits for them.
    pub join_at: Option<u32>,
    /// How long after the turn ended each child's first turn is due, in milliseconds (AIPerf's
    /// recorded dispatch offsets of a WEKA sub-agent); empty: every child at once.
    pub offsets_ms: Vec<f64>,
}

/// One request of a trace. Its `hash_ids` live in the owning [`Trace`]'s arena.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub input: Input,
    pub output_length: Option<u64>,
    /// Arrival time in milliseconds, relative to an arbitrary origin.
    pub timestamp: Option<Number>,
    /// Milliseconds to wait after the previous turn of the same session completed.
    pub delay: Option<Number>,
    pub session_id: Option<Box<str>>,
    /// `conversation_id`: the conversation a converted production row belongs to (Bailian root
    /// chat, BurstGPT session, WEKA file). Unlike `session_id`, the row already carries its whole
    /// history in `input_length` and keeps its own `timestamp`: replay sends it as is and uses the
    /// id only for affinity (same URL, same correlation header), never to re-send earlier turns.
    /// Shared by the rows of one conversation (no copy per row).
    pub conversation: Option<Arc<str>>,
    pub rare: Option<Box<RareFields>>,
    /// 1-based line of the source file this row came from (0 for rows built in code).
    pub line: u32,
    pub(super) ids_start: u64,
    pub(super) ids_len: u32,
}

impl Row {
    /// Where the row's hash ids sit in its trace's arena ([`Trace::all_hash_ids`]).
    pub fn ids_range(&self) -> std::ops::Range<usize> {
        let start = self.ids_start as usize;
        start..start + self.ids_len as usize
    }

    /// A row with the given input and nothing else.
    pub fn new(input: Input) -> Self {
        Row {
            input,
            output_length: None,
            timestamp: None,
            delay: None,
            session_id: None,
            conversation: None,
            rare: None,
            line: 0,
            ids_start: 0,
            ids_len: 0,
        }
    }

    /// `input_length` for rows in that mode.
    pub fn input_length(&self) -> Option<i64> {
        match self.input {
            Input::Length(n) => Some(n),
            _ => None,
        }
    }

    /// Number of hash ids of this row.
    pub fn hash_id_count(&self) -> usize {
        self.ids_len as usize
    }

    pub fn tools(&self) -> Option<&[Value]> {
        self.rare.as_ref().and_then(|r| r.tools.as_deref())
    }

    pub fn extra(&self) -> Option<&Map<String, Value>> {
        self.rare.as_ref().and_then(|r| r.extra.as_ref())
    }

    /// The sessions this turn starts when it completes ([`Branch`]).
    pub fn branches(&self) -> &[Branch] {
        self.rare.as_ref().map_or(&[], |r| r.branches.as_slice())
    }

    pub fn unknown_fields(&self) -> &[(String, Value)] {
        self.rare.as_ref().map_or(&[], |r| r.unknown.as_slice())
    }

    /// The conversation this row belongs to, for affinity only (see [`Row::conversation`]).
    pub fn conversation_id(&self) -> Option<&str> {
        self.conversation.as_deref()
    }

    /// Mutable access to the rare fields, creating them if needed.
    pub fn rare_mut(&mut self) -> &mut RareFields {
        self.rare.get_or_insert_with(Default::default)
    }
}

/// A whole trace: rows in file order plus the shared `hash_ids` arena.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trace {
    rows: Vec<Row>,
    ids: Vec<u64>,
}

impl Trace {
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty trace with room for `rows` rows and `ids` hash ids.
    pub fn with_capacity(rows: usize, ids: usize) -> Self {
        Trace { rows: Vec::with_capacity(rows), ids: Vec::with_capacity(ids) }
    }

    /// Appends a row with the given hash ids (any ids already attached to `row` are replaced).
    pub fn push(&mut self, mut row: Row, hash_ids: impl IntoIterator<Item = u64>) {
        let start = self.ids.len();
        self.ids.extend(hash_ids);
        row.ids_start = start as u64;
        row.ids_len = (self.ids.len() - start) as u32;
        self.rows.push(row);
    }

    /// Appends a row whose ids were already pushed with [`Trace::arena_mut`] from `start` on.
    pub(crate) fn push_with_arena_tail(&mut self, mut row: Row, start: usize) {
        row.ids_start = start as u64;
        row.ids_len = (self.ids.len() - start) as u32;
        self.rows.push(row);
    }

    /// Moves `other`'s rows, with their ids, after this trace's (`other` is left empty).
    pub fn append(&mut self, other: &mut Trace) {
        if self.rows.is_empty() && self.ids.is_empty() {
            std::mem::swap(self, other);
            return;
        }
        let shift = self.ids.len() as u64;
        self.ids.append(&mut other.ids);
        self.rows.extend(other.rows.drain(..).map(|mut row| {
            row.ids_start += shift;
            row
        }));
    }

    /// Removes every row and id, keeping the allocations.
    pub fn clear(&mut self) {
        self.rows.clear();
        self.ids.clear();
    }

    pub(crate) fn rows_mut(&mut self) -> &mut [Row] {
        &mut self.rows
    }

    /// The rows at positions `order`, in that order (moved, not cloned), with their ids; positions
    /// past the end are skipped, and a position given twice gives its row once. Without an
    /// order, the trace as it is.
    pub fn reordered(mut self, order: Option<&[usize]>) -> Trace {
        let Some(order) = order else { return self };
        let mut out = Trace::with_capacity(order.len().min(self.rows.len()), self.ids.len());
        let mut taken = vec![false; self.rows.len()];
        for &k in order {
            let (Some(row), Some(t)) = (self.rows.get_mut(k), taken.get_mut(k)) else { continue };
            if std::mem::replace(t, true) {
                continue;
            }
            let row = std::mem::replace(row, Row::new(Input::Length(0)));
            let ids = self.ids.get(self.hash_ids_range(&row)).unwrap_or_default();
            out.push(row, ids.iter().copied());
        }
        out
    }

    pub(crate) fn arena_mut(&mut self) -> &mut Vec<u64> {
        &mut self.ids
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn rows(&self) -> &[Row] {
        &self.rows
    }

    /// The hash ids of a row of this trace.
    pub fn hash_ids(&self, row: &Row) -> &[u64] {
        &self.ids[self.hash_ids_range(row)]
    }

    /// Where a row's ids sit in [`Trace::all_hash_ids`].
    pub fn hash_ids_range(&self, row: &Row) -> std::ops::Range<usize> {
        row.ids_range()
    }

    /// The rows and, apart, the hash ids' values (a trace's largest part, to let go of on their
    /// own): each row still says where its ids sit in them ([`Row::ids_range`]), and in any form
    /// laid out alike (the block numbers of [`crate::simulate::BlockIds`]).
    pub fn into_parts(self) -> (Vec<Row>, Vec<u64>) {
        (self.rows, self.ids)
    }

    /// Moves the rows after `rows`, each row's ids placed `base` further on, and forgets the
    /// ids: for a caller keeping the ids ([`Trace::all_hash_ids`], read before) in a form of its
    /// own after `base` others. The trace is left empty, its allocations kept.
    pub fn move_rows_onto(&mut self, rows: &mut Vec<Row>, base: u64) {
        rows.extend(self.rows.drain(..).map(|mut row| {
            row.ids_start += base;
            row
        }));
        self.ids.clear();
    }

    /// Rows with their hash ids, in file order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&Row, &[u64])> + '_ {
        self.rows.iter().map(move |r| (r, self.hash_ids(r)))
    }

    /// All hash ids of all rows, concatenated in row order.
    pub fn all_hash_ids(&self) -> &[u64] {
        &self.ids
    }

    /// Total number of hash ids over all rows.
    pub fn total_hash_ids(&self) -> usize {
        self.ids.len()
    }
}

impl FromIterator<(Row, Vec<u64>)> for Trace {
    fn from_iter<T: IntoIterator<Item = (Row, Vec<u64>)>>(iter: T) -> Self {
        let mut trace = Trace::new();
        for (row, ids) in iter {
            trace.push(row, ids);
        }
        trace
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_keep_their_ids_in_the_arena() {
        let mut t = Trace::new();
        t.push(Row::new(Input::Length(600)), [1, 2]);
        t.push(Row::new(Input::Text("hi".into())), []);
        t.push(Row::new(Input::Length(10)), [7]);
        let ids: Vec<&[u64]> = t.iter().map(|(_, ids)| ids).collect();
        assert_eq!(ids, vec![&[1, 2][..], &[][..], &[7][..]]);
        assert_eq!(t.total_hash_ids(), 3);
    }

    #[test]
    fn reordered_moves_rows_with_their_ids_once_each() {
        let mut t = Trace::new();
        for (n, ids) in [(1, vec![1, 2]), (2, vec![]), (3, vec![3])] {
            t.push(Row::new(Input::Length(n)), ids);
        }
        assert_eq!(t.clone().reordered(None), t);
        let r = t.reordered(Some(&[2, 0, 7, 2]));
        let got: Vec<(Option<i64>, &[u64])> = r.iter().map(|(row, ids)| (row.input_length(), ids)).collect();
        assert_eq!(got, vec![(Some(3), &[3][..]), (Some(1), &[1, 2][..])]);
        assert_eq!(r.total_hash_ids(), 3);
    }

    #[test]
    fn row_stays_small() {
        // A million rows must fit comfortably in memory; keep the row compact.
        assert!(std::mem::size_of::<Row>() <= 128, "Row is {} bytes", std::mem::size_of::<Row>());
    }
}
