//! Alibaba Bailian/Qwen usage traces: JSONL with `chat_id`, `parent_chat_id` (-1 = root),
//! `timestamp` in seconds, `input_length`, `output_length`, `turn`, `type` and 16-token `hash_ids`
//! (`len == ceil(input_length / 16)`).
//!
//! A conversation is the tree under a root request: each row's `conversation_id` is its root's
//! `chat_id`, found by walking `parent_chat_id` once the whole file is read (a parent missing from
//! the slice makes its child a root). Every row already holds its history in `input_length`.

use std::collections::HashMap;

use serde::Deserialize;

use super::error::{FormatError, Line};
use super::json::{Kind, diagnose};
use super::{Record, Sink, SourceIds, check_id_count, seconds_to_ns};

const BLOCK: u32 = 16;

#[derive(Deserialize)]
struct Raw {
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

/// `(chat_id, parent_chat_id)` of each row of the file, in row order.
#[derive(Debug, Default)]
pub(super) struct State {
    links: Vec<(i64, i64)>,
}

impl State {
    pub(super) fn line(&mut self, sink: &mut Sink<'_>, line: u64, text: &str) -> Result<(), FormatError> {
        let raw: Raw = serde_json::from_str(text).map_err(|e| diagnose(sink.file(), line, text, SPEC, &e))?;
        let at = Line(Some(line));
        let at_ns = seconds_to_ns(Some(raw.timestamp)).ok_or_else(|| FormatError::Field {
            file: sink.file().clone(),
            line: at,
            field: "timestamp".into(),
            value: raw.timestamp.to_string(),
            expected: "a non-negative number of seconds".into(),
        })?;
        check_id_count(sink.file(), at, "hash_ids", raw.hash_ids.len(), raw.input_length, BLOCK, true)?;
        sink.out.stats.records += 1;
        let complete = (raw.input_length / u64::from(BLOCK)) as usize;
        sink.push(Record {
            at_ns,
            input: raw.input_length,
            output: raw.output_length,
            conversation: None,
            ids: Some(SourceIds { ids: &raw.hash_ids, block: BLOCK, complete }),
            line,
        })?;
        self.links.push((raw.chat_id, raw.parent_chat_id));
        Ok(())
    }

    pub(super) fn end(self, sink: &mut Sink<'_>, first_row: usize) -> Result<String, FormatError> {
        let parent: HashMap<i64, i64> = self.links.iter().copied().collect();
        let mut root_of: HashMap<i64, i64> = HashMap::with_capacity(parent.len());
        let (mut roots, mut orphans) = (0u64, 0u64);
        for (i, &(chat, p)) in self.links.iter().enumerate() {
            if p == -1 {
                roots += 1;
            } else if !parent.contains_key(&p) {
                orphans += 1;
            }
            let root = find_root(chat, &parent, &mut root_of);
            sink.set_conversation(first_row + i, format!("{}{root}", sink.prefix()));
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
fn find_root(chat: i64, parent: &HashMap<i64, i64>, root_of: &mut HashMap<i64, i64>) -> i64 {
    let mut path = Vec::new();
    let mut cur = chat;
    let root = loop {
        if let Some(&r) = root_of.get(&cur) {
            break r;
        }
        path.push(cur);
        match parent.get(&cur) {
            Some(&p) if p != -1 && parent.contains_key(&p) && path.len() <= parent.len() && !path.contains(&p) => {
                cur = p
            }
            _ => break cur,
        }
    };
    for c in path {
        root_of.insert(c, root);
    }
    root
}
