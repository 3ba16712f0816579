//! Alibaba Bailian/Qwen usage traces: JSONL with `chat_id`, `parent_chat_id` (-1 = root),
//! `timestamp` in seconds, `input_length`, `output_length`, `turn`, `type` and 16-token `hash_ids`
//! (`len == ceil(input_length / 16)`).
//!
//! A conversation is the tree under a root request: each row's `conversation_id` is its root's
//! `chat_id`, found by walking `parent_chat_id` once the whole file is read (a parent missing from
//! the slice makes its child a root). Every row already holds its history in `input_length`.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

use serde::Deserialize;

use super::error::{FormatError, Line};
use super::flat::{Val, scan};
use super::json::{Kind, flat_record};
use super::sink::{Record, Sink, SourceIds, check_id_count, seconds_to_ns};

const BLOCK: u32 = 16;

#[derive(Debug, Deserialize)]
pub(super) struct Raw {
    chat_id: i64,
    #[serde(default = "root")]
    parent_chat_id: i64,
    timestamp: f64,
    input_length: u64,
    output_length: Option<u64>,
    #[serde(default)]
    hash_ids: Vec<u64>,
}

fn root() -> i64 {
    -1
}

const SPEC: &[(&str, Kind, bool)] = &[
    ("chat_id", Kind::Int, true),
    ("parent_chat_id", Kind::Int, false),
    ("timestamp", Kind::Seconds, true),
    ("input_length", Kind::Count, true),
    ("output_length", Kind::Count, false),
    ("hash_ids", Kind::IdList, false),
];

/// The fast path ([`scan`]): the same fields as [`Raw`], its ids in `ids`; `None` → serde.
fn fast(text: &str, ids: &mut Vec<u64>) -> Option<Raw> {
    let (mut chat, mut parent, mut ts, mut input, mut output) = (None, None, None, None, None);
    let mut has_ids = false;
    scan(text, ids, |key, val| {
        let slot = match key {
            "chat_id" => &mut chat,
            "parent_chat_id" => &mut parent,
            "input_length" => &mut input,
            "output_length" => &mut output,
            "timestamp" => {
                let Val::Num(n) = val else { return None };
                return ts.replace(n.parse::<f64>().ok()?).is_none().then_some(());
            }
            "hash_ids" => {
                return (val == Val::List && !std::mem::replace(&mut has_ids, true)).then_some(());
            }
            _ => return Some(()),
        };
        let Val::Num(n) = val else { return None };
        slot.replace(n.parse::<i64>().ok()?).is_none().then_some(())
    })?;
    Some(Raw {
        chat_id: chat?,
        parent_chat_id: parent.unwrap_or(-1),
        timestamp: ts?,
        input_length: u64::try_from(input?).ok()?,
        output_length: match output {
            Some(o) => Some(u64::try_from(o).ok()?),
            None => None,
        },
        hash_ids: Vec::new(),
    })
}

/// One line read on its own: its fields, its ids appended to `ids`.
pub(super) fn parse(file: &Arc<str>, line: u64, text: &str, ids: &mut Vec<u64>) -> Result<Raw, FormatError> {
    flat_record((file, line, text), ids, SPEC, fast, |r| &r.hash_ids)
}

/// The conversations of one file's rows.
///
/// A row's conversation is settled as it comes when its parent came before it (the parent's
/// conversation) or is a root (`-1`, its own); a row whose parent has not come yet is taken for an
/// orphan (its own conversation, as a parent missing from the file makes it). That is the
/// whole-file answer unless a chat id repeats or a parent comes after its child: then, at the end,
/// every row is settled again by walking the whole file's parent links.
#[derive(Debug, Default)]
pub(super) struct State {
    /// `(chat_id, parent_chat_id)` of each row, in row order.
    links: Vec<(i64, i64)>,
    /// The conversation of each chat id seen so far.
    conversation: Map<i64, Arc<str>>,
    /// Parents not seen when their child came (children taken for orphans).
    unseen_parents: Vec<i64>,
    /// A chat id came twice.
    repeated: bool,
    roots: u64,
    /// Reused for the text of a new conversation's id.
    name: String,
}

type Map<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<super::reblock::FxHasher>>;

impl State {
    pub(super) fn row(&mut self, sink: &mut Sink<'_>, line: u64, raw: Raw, ids: &[u64]) -> Result<(), FormatError> {
        let at = Line(Some(line));
        let at_ns = seconds_to_ns(Some(raw.timestamp)).ok_or_else(|| FormatError::Field {
            file: sink.file().clone(),
            line: at,
            field: "timestamp".into(),
            value: raw.timestamp.to_string(),
            expected: "a non-negative number of seconds".into(),
        })?;
        check_id_count(sink.file(), at, "hash_ids", ids.len(), raw.input_length, BLOCK, true)?;
        sink.count_record();
        let (chat, parent) = (raw.chat_id, raw.parent_chat_id);
        let known = if parent == -1 {
            self.roots += 1;
            None
        } else {
            let known = self.conversation.get(&parent).cloned();
            if known.is_none() {
                self.unseen_parents.push(parent);
            }
            known
        };
        let conversation = known.unwrap_or_else(|| {
            self.name.clear();
            self.name.push_str(sink.prefix());
            let _ = write!(self.name, "{chat}");
            Arc::from(self.name.as_str())
        });
        let complete = (raw.input_length / u64::from(BLOCK)) as usize;
        sink.push(Record {
            at_ns,
            input: raw.input_length,
            output: raw.output_length,
            conversation: Some(conversation.clone()),
            ids: Some(SourceIds { ids, block: BLOCK, complete }),
            line,
            turn: None,
        })?;
        self.repeated |= self.conversation.insert(chat, conversation).is_some();
        self.links.push((chat, parent));
        Ok(())
    }

    /// Reads the conversation entries that the rows `raws` will look up and add, all before any
    /// is needed, so that their cache misses overlap (a hint: [`State::row`] gives the same).
    pub(super) fn touch<'r>(&self, raws: impl Iterator<Item = &'r Raw>) {
        let mut sum = 0usize;
        for raw in raws {
            if let Some(c) = self.conversation.get(&raw.parent_chat_id) {
                sum ^= usize::from(c.as_bytes().first().copied().unwrap_or(0));
            }
            sum ^= usize::from(self.conversation.contains_key(&raw.chat_id));
        }
        std::hint::black_box(sum);
    }

    pub(super) fn end(self, sink: &mut Sink<'_>, first_row: usize) -> Result<String, FormatError> {
        let late_parent = self.unseen_parents.iter().any(|p| self.conversation.contains_key(p));
        let orphans = if self.repeated || late_parent {
            drop(self.conversation);
            settle_by_walking(sink, &self.links, first_row)
        } else {
            self.unseen_parents.len() as u64
        };
        Ok(format!(
            "Bailian/Qwen trace, {} rows, {} root requests, {orphans} rows whose parent is not in the file \
             (treated as roots); timestamps in seconds, 16-token hash ids re-blocked to {}",
            self.links.len(),
            self.roots,
            sink.opts.block_size
        ))
    }
}

/// Sets every row's conversation from the whole file's parent links (the last row of a repeated
/// chat id names its parent); returns how many rows have a parent missing from the file.
fn settle_by_walking(sink: &mut Sink<'_>, links: &[(i64, i64)], first_row: usize) -> u64 {
    let mut parent: Map<i64, i64> = HashMap::with_capacity_and_hasher(links.len(), Default::default());
    parent.extend(links.iter().copied());
    let mut root_of: Map<i64, i64> = HashMap::with_capacity_and_hasher(parent.len(), Default::default());
    let mut names: Map<i64, Arc<str>> = HashMap::default();
    let mut path = Vec::new();
    let mut orphans = 0;
    for (i, &(chat, p)) in links.iter().enumerate() {
        if p != -1 && !parent.contains_key(&p) {
            orphans += 1;
        }
        let root = find_root(chat, &parent, &mut root_of, &mut path);
        let name = names.entry(root).or_insert_with(|| Arc::from(format!("{}{root}", sink.prefix()))).clone();
        sink.set_conversation(first_row + i, name);
    }
    orphans
}

/// Follows `parent_chat_id` to the root, memoizing; a missing parent or a cycle ends the walk.
fn find_root(chat: i64, parent: &Map<i64, i64>, root_of: &mut Map<i64, i64>, path: &mut Vec<i64>) -> i64 {
    path.clear();
    let mut cur = chat;
    let root = loop {
        if let Some(&r) = root_of.get(&cur) {
            break r;
        }
        path.push(cur);
        match parent.get(&cur) {
            Some(&p) if p != -1 => {
                // A parent resolved before is in `parent` and not on this path: its root at once.
                if let Some(&r) = root_of.get(&p) {
                    break r;
                }
                if parent.contains_key(&p) && path.len() <= parent.len() && !path.contains(&p) {
                    cur = p;
                } else {
                    break cur;
                }
            }
            _ => break cur,
        }
    };
    for &c in path.iter() {
        root_of.insert(c, root);
    }
    root
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Map, Value, json};

    use super::*;

    /// Each row's conversation and the note, converting `links` as Bailian lines.
    fn conversations(links: &[(i64, i64)]) -> (Vec<String>, String) {
        use crate::formats::{ConvertOptions, Converter, FileOptions, Format};
        let mut c = Converter::new(ConvertOptions::default()).unwrap();
        let file = FileOptions {
            source: "b.jsonl".into(),
            format: Format::Bailian,
            start_offset_ms: 0,
            conversation_prefix: "p:".into(),
        };
        c.start_file(file).unwrap();
        for (i, (chat, parent)) in links.iter().enumerate() {
            let line = format!(
                "{{\"chat_id\":{chat},\"parent_chat_id\":{parent},\"timestamp\":{i},\"input_length\":16,\"output_length\":1,\"hash_ids\":[7]}}"
            );
            c.push_line(&line).unwrap();
        }
        let done = c.finish().unwrap();
        let conv = done.trace.rows().iter().map(|r| r.conversation_id().unwrap().to_string()).collect();
        (conv, done.notes.join("\n"))
    }

    /// The whole-file walk on its own: every row's root from the final parent links.
    fn walked(links: &[(i64, i64)]) -> Vec<String> {
        let parent: super::Map<i64, i64> = links.iter().copied().collect();
        let (mut root_of, mut path) = (super::Map::default(), Vec::new());
        links.iter().map(|&(chat, _)| format!("p:{}", find_root(chat, &parent, &mut root_of, &mut path))).collect()
    }

    #[test]
    fn parents_before_children_settle_as_rows_come_and_late_parents_repeats_and_cycles_by_walking() {
        // Root 1, its child 2 and grandchild 3; an orphan 5 (parent 99 absent) and its child 6.
        let (conv, note) = conversations(&[(1, -1), (2, 1), (5, 99), (3, 2), (6, 5)]);
        assert_eq!(conv, ["p:1", "p:1", "p:5", "p:1", "p:5"]);
        assert!(note.contains("1 root requests, 1 rows whose parent is not in the file"), "{note}");
        // A child before its parent: the parent's root, not the child's own.
        let late = [(3, 2), (2, 1), (1, -1)];
        assert_eq!(conversations(&late).0, ["p:1", "p:1", "p:1"]);
        // A repeated chat id (the last row names its parent) and a cycle.
        for links in [&[(1, -1), (2, 1), (7, -1), (2, 7), (3, 2)][..], &[(1, 2), (2, 1), (3, 1)]] {
            assert_eq!(conversations(links).0, walked(links), "{links:?}");
        }
    }

    proptest! {
        /// Conversations settled as rows come equal the whole-file walk, whatever the order,
        /// repeats, missing parents and cycles.
        #[test]
        fn conversations_equal_the_whole_file_walk(links in prop::collection::vec((0i64..12, -1i64..15), 0..30)) {
            let (conv, _) = conversations(&links);
            prop_assert_eq!(conv, walked(&links));
        }

        /// Whatever the fast path accepts, it reads exactly as serde does.
        #[test]
        fn fast_path_agrees_with_serde(
            chat in any::<i64>(),
            parent in prop::option::of(-1i64..1000),
            ms in 0u64..10_000_000,
            input in 0u64..100_000,
            output in prop::option::of(0u64..10_000),
            ids in prop::collection::vec(0u64..u64::MAX, 0..40),
            shuffle in any::<u64>(),
        ) {
            let mut fields: Vec<(&str, Value)> = vec![
                ("chat_id", json!(chat)),
                ("timestamp", json!(ms as f64 / 1000.0)),
                ("input_length", json!(input)),
                ("type", json!("text")),
                ("turn", json!(1)),
                ("hash_ids", json!(ids)),
            ];
            if let Some(p) = parent { fields.push(("parent_chat_id", json!(p))); }
            if let Some(o) = output { fields.push(("output_length", json!(o))); }
            let n = fields.len();
            fields.rotate_left((shuffle % n as u64) as usize);
            let obj: Map<String, Value> = fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
            let text = serde_json::to_string(&obj).unwrap();
            let mut buf = Vec::new();
            let fast = fast(&text, &mut buf).unwrap();
            let slow: Raw = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(
                (fast.chat_id, fast.parent_chat_id, fast.timestamp.to_bits(), fast.input_length, fast.output_length, buf),
                (slow.chat_id, slow.parent_chat_id, slow.timestamp.to_bits(), slow.input_length, slow.output_length, slow.hash_ids)
            );
        }
    }
}
