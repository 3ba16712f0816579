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
use super::{Record, Sink, SourceIds, check_id_count, seconds_to_ns};

const BLOCK: u32 = 16;

type Map = HashMap<i64, i64, std::hash::BuildHasherDefault<super::reblock::FxHasher>>;

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

/// `(chat_id, parent_chat_id)` of each row of the file, in row order.
#[derive(Debug, Default)]
pub(super) struct State {
    links: Vec<(i64, i64)>,
}

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
        sink.out.stats.records += 1;
        let complete = (raw.input_length / u64::from(BLOCK)) as usize;
        sink.push(Record {
            at_ns,
            input: raw.input_length,
            output: raw.output_length,
            conversation: None,
            ids: Some(SourceIds { ids, block: BLOCK, complete }),
            line,
        })?;
        self.links.push((raw.chat_id, raw.parent_chat_id));
        Ok(())
    }

    pub(super) fn end(self, sink: &mut Sink<'_>, first_row: usize) -> Result<String, FormatError> {
        let mut parent: Map = HashMap::with_capacity_and_hasher(self.links.len(), Default::default());
        parent.extend(self.links.iter().copied());
        let mut root_of: Map = HashMap::with_capacity_and_hasher(parent.len(), Default::default());
        let mut path = Vec::new();
        let mut id = String::new();
        let (mut roots, mut orphans) = (0u64, 0u64);
        for (i, &(chat, p)) in self.links.iter().enumerate() {
            if p == -1 {
                roots += 1;
            } else if !parent.contains_key(&p) {
                orphans += 1;
            }
            let root = find_root(chat, &parent, &mut root_of, &mut path);
            // One reused buffer; the row gets an exact-size copy.
            id.clear();
            id.push_str(sink.prefix());
            let _ = write!(id, "{root}");
            sink.set_conversation(first_row + i, &id);
        }
        Ok(format!(
            "Bailian/Qwen trace, {} rows, {roots} root requests, {orphans} rows whose parent is not in the file \
             (treated as roots); timestamps in seconds, 16-token hash ids re-blocked to {}",
            self.links.len(),
            sink.opts.block_size
        ))
    }
}

/// Follows `parent_chat_id` to the root, memoizing; a missing parent or a cycle ends the walk.
fn find_root(chat: i64, parent: &Map, root_of: &mut Map, path: &mut Vec<i64>) -> i64 {
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

    proptest! {
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
