//! AIPerf 0.13.0's `dag_jsonl` datasets (`--custom-dataset-type dag_jsonl`): one conversation a
//! line, whose turns start sub-agent conversations (`forks`, `spawns`) that later turns wait for.
//!
//! A line is AIPerf's `DagConversation`: `session_id` and `turns`, each turn a `DagTurn` with
//! `messages` (sent as the request's messages), `max_tokens` (the row's `output_length`), `model`
//! and `extra` (merged into the body), `tools`, `delay` (milliseconds after the session's previous
//! turn ended) and the branches:
//!
//! - `spawns`: a list of session ids (one group joined by the next turn, none when this is the
//!   last turn) or `{"children": [...], "join_at": K}` objects (joined by turn `K`);
//! - `forks`: session ids (the session ends with this turn, so it must be the last one) or
//!   `{"child": id, "background": true}` (the session goes on, nothing joins it).
//!
//! Every turn becomes a row of its session ([`crate::trace::Row::branches`] holding its branches);
//! the replay ([`crate::replay::schedule::sessions`]) turns each root conversation (one no turn
//! starts) and its sub-agents into one session run. The checks are AIPerf's, with its wording where
//! it has one: unknown keys, empty `messages`, a message without `role`, a `max_tokens` below 1 or
//! given as a boolean, a negative `delay`, duplicate session ids or children, a branch to an
//! unknown session, a session forked by two parents, a foreground fork before the last turn,
//! a `join_at` outside the session, a `system` message after a root's first turn, and cycles.
//! AIPerf's request-less orchestrator conversations (`orchestrator`, `rounds`, `think_time_*`,
//! conversation-level `spawns`) and `pre_session_spawns` are refused by name.
//!
//! Each turn's `messages` are sent as written: AIPerf's default `context_mode`
//! (`deltas_without_responses`) sends the session's earlier turns and the server's replies
//! before them, which a replay here does not (its `message_array_with_responses` mode is what is
//! sent).

use serde_json::{Map, Value};

use crate::hashing::{FastMap, FastSet};
use crate::trace::{Branch, Input, Number, Row, Trace};

/// A `dag_jsonl` file that cannot be replayed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DagError {
    #[error("line {line}: invalid JSON: {message}")]
    Json { line: u32, message: String },
    /// A key of a line: its path (`turns.0.max_tokens`), what is accepted and the value given.
    #[error("line {line}: {field}: {expected}, got {value}")]
    Field { line: u32, field: String, expected: String, value: String },
    /// The conversations do not form a graph AIPerf replays.
    #[error("line {line}: {message}")]
    Graph { line: u32, message: String },
    #[error("the file holds no conversation; supply at least one conversation line")]
    Empty,
}

/// The keys of AIPerf's `DagConversation`.
const CONVERSATION_KEYS: &[&str] = &[
    "session_id",
    "turns",
    "orchestrator",
    "spawns",
    "think_time_ms",
    "think_time_sigma",
    "think_time_min_ms",
    "think_time_max_ms",
    "rounds",
    "context_mode",
    "pre_session_spawns",
];

/// The keys of AIPerf's `DagTurn`.
const TURN_KEYS: &[&str] = &["messages", "model", "max_tokens", "tools", "extra", "forks", "spawns", "delay"];

/// AIPerf's `context_mode` values.
const CONTEXT_MODES: &[&str] = &[
    "deltas_without_responses",
    "deltas_with_responses",
    "message_array_with_responses",
    "message_array_without_responses",
];

/// One conversation as read, before the graph checks.
struct Conversation {
    line: u32,
    id: String,
    isolated: bool,
    turns: Vec<DagTurn>,
}

struct DagTurn {
    row: Row,
    /// (child, background)
    forks: Vec<(String, bool)>,
    /// (children, join_at as written)
    spawns: Vec<(Vec<String>, Option<u32>)>,
}

/// Reads a `dag_jsonl` file line by line ([`DagReader::push_line`]) into a trace
/// ([`DagReader::finish`]).
#[derive(Default)]
pub struct DagReader {
    conversations: Vec<Conversation>,
    ids: FastMap<String, usize>,
}

/// A value as a message shows it (at most 80 characters).
fn show(v: &Value) -> String {
    let text = v.to_string();
    match text.char_indices().nth(80) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

impl DagReader {
    pub fn new() -> DagReader {
        DagReader::default()
    }

    /// Reads line `line` (1-based) of the file; blank lines are skipped, a UTF-8 byte order mark
    /// on the first is dropped.
    pub fn push_line(&mut self, text: &str, line: u32) -> Result<(), DagError> {
        let text = if line == 1 { text.trim_start_matches('\u{feff}') } else { text };
        let text = text.trim();
        if text.is_empty() {
            return Ok(());
        }
        let value: Value = serde_json::from_str(text).map_err(|e| DagError::Json { line, message: e.to_string() })?;
        let conv = conversation(&value, line)?;
        if self.ids.contains_key(&conv.id) {
            return Err(DagError::Graph { line, message: format!("duplicate session_id '{}'", conv.id) });
        }
        self.ids.insert(conv.id.clone(), self.conversations.len());
        self.conversations.push(conv);
        Ok(())
    }

    /// The trace: every conversation's turns as rows of its `session_id`, in file order, each
    /// holding the branches it starts; after AIPerf's checks of the graph.
    pub fn finish(self) -> Result<Trace, DagError> {
        if self.conversations.is_empty() {
            return Err(DagError::Empty);
        }
        let graph_err = |line: u32, message: String| DagError::Graph { line, message };
        // Branch targets exist; a forked session has one parent.
        let mut fork_parent: FastMap<&str, (&str, usize)> = FastMap::default();
        for c in &self.conversations {
            for (k, t) in c.turns.iter().enumerate() {
                let children = t
                    .forks
                    .iter()
                    .map(|f| (&f.0, true))
                    .chain(t.spawns.iter().flat_map(|s| s.0.iter().map(|x| (x, false))));
                for (child, fork) in children {
                    if !self.ids.contains_key(child) {
                        let mut known: Vec<&str> = self.ids.keys().map(String::as_str).collect();
                        known.sort_unstable();
                        known.truncate(10);
                        return Err(graph_err(
                            c.line,
                            format!(
                                "session '{}' turn {k}: branch target '{child}' not declared. Known sessions: {known:?}",
                                c.id
                            ),
                        ));
                    }
                    if fork {
                        if let Some((p, pk)) = fork_parent.get(child.as_str()) {
                            return Err(graph_err(
                                c.line,
                                format!(
                                    "session '{child}' forked by both '{p}' turn {pk} and '{}' turn {k}; FORK-mode children require a single parent",
                                    c.id
                                ),
                            ));
                        }
                        fork_parent.insert(child, (&c.id, k));
                    }
                }
            }
        }
        // A foreground fork ends its session.
        for c in &self.conversations {
            for (k, t) in c.turns.iter().enumerate() {
                if k + 1 < c.turns.len() && t.forks.iter().any(|f| !f.1) {
                    return Err(graph_err(
                        c.line,
                        format!(
                            "session '{}' turn {k} has foreground FORK branches but is not the last turn and no join is declared (use \"background\": true on the fork entry to keep the parent running, or move the forks to the final turn)",
                            c.id
                        ),
                    ));
                }
            }
        }
        // One system prompt, at the root's first message.
        for c in &self.conversations {
            let fork_child = fork_parent.contains_key(c.id.as_str());
            for (k, t) in c.turns.iter().enumerate() {
                let Input::Messages(m) = &t.row.input else { continue };
                for (i, msg) in m.iter().enumerate() {
                    if msg.get("role").and_then(Value::as_str) != Some("system") {
                        continue;
                    }
                    if c.isolated && i != 0 {
                        return Err(graph_err(
                            c.line,
                            format!(
                                "session '{}' turn {k}: a 'system' message must be the first message of an isolated turn's array; later positions are dropped by chat templates (e.g. Qwen3-VL).",
                                c.id
                            ),
                        ));
                    }
                    if !c.isolated && (k > 0 || fork_child) {
                        return Err(graph_err(
                            c.line,
                            format!(
                                "session '{}' turn {k}: non-root turns may not contain a 'system' message. Place the single system prompt at the root turn only; popular chat templates (e.g. Qwen3-VL) ignore system messages after index 0.",
                                c.id
                            ),
                        ));
                    }
                }
            }
        }
        // A fork target inherits its parent's context, so it cannot be isolated.
        for c in &self.conversations {
            if c.isolated && fork_parent.contains_key(c.id.as_str()) {
                return Err(graph_err(
                    c.line,
                    format!(
                        "session '{}' is a FORK target with context_mode 'message_array_with_responses'; payload isolation drops the inherited parent context and is only valid on fresh-context SPAWN branches",
                        c.id
                    ),
                ));
            }
        }
        self.check_cycles()?;
        let mut trace = Trace::new();
        for c in self.conversations {
            let n = c.turns.len();
            for (k, t) in c.turns.into_iter().enumerate() {
                let mut row = t.row;
                let mut branches: Vec<Branch> = Vec::new();
                let (fg, bg): (Vec<_>, Vec<_>) = t.forks.into_iter().partition(|f| !f.1);
                for forks in [fg, bg] {
                    if !forks.is_empty() {
                        branches.push(Branch {
                            children: forks.into_iter().map(|f| f.0.into()).collect(),
                            join_at: None,
                            offsets_ms: Vec::new(),
                        });
                    }
                }
                for (children, join_at) in t.spawns {
                    // A bare group joins on the next turn, or on none after the last turn.
                    let join_at = join_at.or_else(|| u32::try_from(k + 1).ok().filter(|&j| (j as usize) < n));
                    branches.push(Branch {
                        children: children.into_iter().map(Into::into).collect(),
                        join_at,
                        offsets_ms: Vec::new(),
                    });
                }
                if !branches.is_empty() {
                    row.rare_mut().branches = branches;
                }
                trace.push(row, []);
            }
        }
        Ok(trace)
    }

    /// AIPerf's cycle check: a session reachable from itself through branches.
    fn check_cycles(&self) -> Result<(), DagError> {
        let children = |c: &Conversation| -> Vec<usize> {
            c.turns
                .iter()
                .flat_map(|t| t.forks.iter().map(|f| &f.0).chain(t.spawns.iter().flat_map(|s| s.0.iter())))
                .filter_map(|id| self.ids.get(id).copied())
                .collect()
        };
        // 0: not seen, 1: on the path, 2: done; an explicit stack bounds the recursion.
        let mut state = vec![0u8; self.conversations.len()];
        for root in 0..self.conversations.len() {
            if state[root] != 0 {
                continue;
            }
            let mut stack: Vec<(usize, Vec<usize>)> = vec![(root, children(&self.conversations[root]))];
            state[root] = 1;
            while let Some((node, next)) = stack.last_mut() {
                let node = *node;
                match next.pop() {
                    Some(c) if state[c] == 1 => {
                        let mut path: Vec<&str> =
                            stack.iter().map(|(s, _)| self.conversations[*s].id.as_str()).collect();
                        let from = path.iter().position(|p| *p == self.conversations[c].id).unwrap_or(0);
                        path.drain(..from);
                        path.push(&self.conversations[c].id);
                        return Err(DagError::Graph {
                            line: self.conversations[node].line,
                            message: format!("cycle detected: {}", path.join(" -> ")),
                        });
                    }
                    Some(c) if state[c] == 0 => {
                        state[c] = 1;
                        stack.push((c, children(&self.conversations[c])));
                    }
                    Some(_) => {}
                    None => {
                        state[node] = 2;
                        stack.pop();
                    }
                }
            }
        }
        Ok(())
    }
}

/// Reads a whole `dag_jsonl` text.
pub fn parse(text: &str) -> Result<Trace, DagError> {
    let mut r = DagReader::new();
    for (i, line) in text.lines().enumerate() {
        r.push_line(line, u32::try_from(i + 1).unwrap_or(u32::MAX))?;
    }
    r.finish()
}

fn field_err(line: u32, field: &str, expected: &str, value: &Value) -> DagError {
    DagError::Field { line, field: field.to_string(), expected: expected.to_string(), value: show(value) }
}

/// A key AIPerf reads that is not replayed here.
fn unsupported(line: u32, field: &str, why: &str, value: &Value) -> DagError {
    field_err(line, field, &format!("not supported here ({why})"), value)
}

fn object<'a>(
    v: &'a Value,
    line: u32,
    field: &str,
    keys: &[&str],
    what: &str,
) -> Result<&'a Map<String, Value>, DagError> {
    let Value::Object(m) = v else { return Err(field_err(line, field, &format!("an object ({what})"), v)) };
    if let Some(k) = m.keys().find(|k| !keys.contains(&k.as_str())) {
        let path = if field.is_empty() { k.clone() } else { format!("{field}.{k}") };
        return Err(field_err(line, &path, &format!("a key of AIPerf's {what} ({})", keys.join(", ")), &m[k.as_str()]));
    }
    Ok(m)
}

/// A non-empty string.
fn id(v: &Value, line: u32, field: &str) -> Result<String, DagError> {
    match v.as_str() {
        Some(s) if !s.is_empty() => Ok(s.to_string()),
        _ => Err(field_err(line, field, "a non-empty string (a session_id)", v)),
    }
}

fn conversation(v: &Value, line: u32) -> Result<Conversation, DagError> {
    let m = object(v, line, "", CONVERSATION_KEYS, "DagConversation")?;
    let get = |k: &str| m.get(k).filter(|v| !v.is_null());
    let sid = id(m.get("session_id").unwrap_or(&Value::Null), line, "session_id")?;
    if let Some(o) = get("orchestrator")
        && o != &Value::Bool(false)
    {
        return Err(unsupported(line, "orchestrator", "AIPerf's request-less orchestrator conversations", o));
    }
    for k in ["rounds", "think_time_ms", "think_time_sigma", "think_time_min_ms", "think_time_max_ms"] {
        if let Some(x) = get(k) {
            return Err(unsupported(line, k, "AIPerf's orchestrator rounds; only valid with 'orchestrator': true", x));
        }
    }
    if let Some(s) = get("spawns")
        && s.as_array().is_none_or(|a| !a.is_empty())
    {
        return Err(field_err(
            line,
            "spawns",
            "absent: conversation-level 'spawns' is only valid on an orchestrator conversation; a normal conversation uses per-turn 'spawns'",
            s,
        ));
    }
    if let Some(p) = get("pre_session_spawns")
        && p.as_array().is_none_or(|a| !a.is_empty())
    {
        return Err(unsupported(line, "pre_session_spawns", "children started before the session's first turn", p));
    }
    let isolated = match get("context_mode") {
        None => false,
        Some(c) => match c.as_str().map(str::to_ascii_lowercase) {
            Some(mode) if CONTEXT_MODES.contains(&mode.as_str()) => mode == "message_array_with_responses",
            _ => return Err(field_err(line, "context_mode", &format!("one of {}", CONTEXT_MODES.join(", ")), c)),
        },
    };
    let turns = match get("turns") {
        Some(Value::Array(t)) if !t.is_empty() => t,
        Some(Value::Array(_)) | None => {
            return Err(field_err(
                line,
                "turns",
                "a non-empty list ('turns' must be non-empty unless 'orchestrator' is true)",
                m.get("turns").unwrap_or(&Value::Array(Vec::new())),
            ));
        }
        Some(t) => return Err(field_err(line, "turns", "a list of turns", t)),
    };
    let n = turns.len();
    let mut out = Vec::with_capacity(n);
    for (k, t) in turns.iter().enumerate() {
        out.push(turn(t, line, &sid, k, n)?);
    }
    Ok(Conversation { line, id: sid, isolated, turns: out })
}

fn turn(v: &Value, line: u32, sid: &str, k: usize, n: usize) -> Result<DagTurn, DagError> {
    let at = |f: &str| format!("turns.{k}.{f}");
    let m = object(v, line, &format!("turns.{k}"), TURN_KEYS, "DagTurn")?;
    let get = |k: &str| m.get(k).filter(|v| !v.is_null());
    let messages = match m.get("messages") {
        Some(Value::Array(a)) if !a.is_empty() => a,
        Some(x @ Value::Array(_)) => return Err(field_err(line, &at("messages"), "a non-empty list", x)),
        Some(x) => return Err(field_err(line, &at("messages"), "a list of messages", x)),
        None => {
            return Err(field_err(line, &at("messages"), "a list of messages (the field is required)", &Value::Null));
        }
    };
    for (i, msg) in messages.iter().enumerate() {
        if msg.get("role").is_none() {
            return Err(field_err(line, &format!("turns.{k}.messages.{i}"), "a message with a 'role' key", msg));
        }
    }
    let mut row = Row::new(Input::Messages(messages.clone().into_boxed_slice()));
    row.line = line;
    row.session_id = Some(sid.into());
    if let Some(x) = get("max_tokens") {
        match x.as_u64() {
            Some(v) if v >= 1 && !x.is_boolean() => row.output_length = Some(v),
            _ => return Err(field_err(line, &at("max_tokens"), "an integer of at least 1", x)),
        }
    }
    if let Some(x) = get("delay") {
        match x.as_f64() {
            Some(d) if d.is_finite() && d >= 0.0 => {
                row.delay = Some(match x.as_i64() {
                    Some(i) => Number::Int(i),
                    None => Number::Float(d),
                })
            }
            _ => return Err(field_err(line, &at("delay"), "a number of milliseconds, at least 0", x)),
        }
    }
    let mut extra = match get("extra") {
        None => None,
        Some(Value::Object(e)) => Some(e.clone()),
        Some(x) => return Err(field_err(line, &at("extra"), "an object (fields merged into the request body)", x)),
    };
    if let Some(x) = get("model") {
        let Some(model) = x.as_str() else { return Err(field_err(line, &at("model"), "a string", x)) };
        extra.get_or_insert_with(Map::new).insert("model".into(), Value::String(model.into()));
    }
    if let Some(e) = extra {
        row.rare_mut().extra = Some(e);
    }
    if let Some(x) = get("tools") {
        match x {
            Value::Array(a) if a.iter().all(Value::is_object) => row.rare_mut().tools = Some(a.clone()),
            _ => return Err(field_err(line, &at("tools"), "a list of tool definitions (objects)", x)),
        }
    }
    let list = |f: &str| -> Result<&[Value], DagError> {
        match get(f) {
            None => Ok(&[]),
            Some(Value::Array(a)) => Ok(a),
            Some(x) => Err(field_err(line, &at(f), "a list", x)),
        }
    };
    let mut forks = Vec::new();
    for (i, f) in list("forks")?.iter().enumerate() {
        let field = format!("turns.{k}.forks.{i}");
        forks.push(match f {
            Value::String(_) => (id(f, line, &field)?, false),
            _ => {
                let o = object(f, line, &field, &["child", "background"], "DagFork")?;
                let child = id(o.get("child").unwrap_or(&Value::Null), line, &format!("{field}.child"))?;
                let background = match o.get("background") {
                    None | Some(Value::Null) => false,
                    Some(Value::Bool(b)) => *b,
                    Some(x) => return Err(field_err(line, &format!("{field}.background"), "true or false", x)),
                };
                (child, background)
            }
        });
    }
    let mut spawns: Vec<(Vec<String>, Option<u32>)> = Vec::new();
    // Consecutive bare ids are one group; each object is a group of its own.
    let mut bare: Vec<String> = Vec::new();
    for (i, s) in list("spawns")?.iter().enumerate() {
        let field = format!("turns.{k}.spawns.{i}");
        if let Value::String(_) = s {
            bare.push(id(s, line, &field)?);
            continue;
        }
        if !bare.is_empty() {
            spawns.push((std::mem::take(&mut bare), None));
        }
        let o = object(s, line, &field, &["children", "join_at"], "DagSpawn")?;
        let children = match o.get("children") {
            Some(Value::Array(c)) if !c.is_empty() => c
                .iter()
                .enumerate()
                .map(|(j, c)| id(c, line, &format!("{field}.children.{j}")))
                .collect::<Result<Vec<_>, _>>()?,
            x => {
                return Err(field_err(
                    line,
                    &format!("{field}.children"),
                    "a non-empty list of session ids",
                    x.unwrap_or(&Value::Null),
                ));
            }
        };
        let join_at = match o.get("join_at") {
            None | Some(Value::Null) => None,
            Some(x) => {
                let j = x.as_u64().filter(|_| !x.is_boolean());
                match j {
                    Some(j) if j as usize > k && (j as usize) < n => Some(j as u32),
                    Some(j) if j as usize <= k => {
                        return Err(DagError::Graph {
                            line,
                            message: format!(
                                "session '{sid}' turn {k}: spawn join_at={j} must be strictly greater than the spawning turn index"
                            ),
                        });
                    }
                    Some(j) => {
                        return Err(DagError::Graph {
                            line,
                            message: format!(
                                "session '{sid}' turn {k}: spawn join_at={j} is out of range (conversation has {n} turns)"
                            ),
                        });
                    }
                    None => return Err(field_err(line, &format!("{field}.join_at"), "a turn index (an integer)", x)),
                }
            }
        };
        spawns.push((children, join_at));
    }
    if !bare.is_empty() {
        spawns.push((bare, None));
    }
    // The same child twice on one turn would be started twice and counted twice by its join.
    let mut seen: FastSet<&str> = FastSet::default();
    for (f, _) in &forks {
        if !seen.insert(f) {
            return Err(DagError::Graph {
                line,
                message: format!("session '{sid}' turn {k}: duplicate child_conversation_id '{f}' in fork entries"),
            });
        }
    }
    let mut across: FastSet<&str> = FastSet::default();
    for (children, _) in &spawns {
        let mut group: FastSet<&str> = FastSet::default();
        for c in children {
            if !group.insert(c) {
                return Err(DagError::Graph {
                    line,
                    message: format!("session '{sid}' turn {k}: duplicate child_conversation_id '{c}' in spawn group"),
                });
            }
            if across.contains(c.as_str()) {
                return Err(DagError::Graph {
                    line,
                    message: format!(
                        "session '{sid}' turn {k}: duplicate child_conversation_id '{c}' across spawn groups"
                    ),
                });
            }
        }
        across.extend(group);
    }
    Ok(DagTurn { row, forks, spawns })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const SMALL: &str = r#"{"session_id": "root", "turns": [{"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "plan"}], "max_tokens": 5, "spawns": ["a", "b"]}, {"messages": [{"role": "user", "content": "merge"}], "delay": 20}]}
{"session_id": "a", "turns": [{"messages": [{"role": "user", "content": "a0"}]}, {"messages": [{"role": "user", "content": "a1"}], "delay": 5.5}]}
{"session_id": "b", "turns": [{"messages": [{"role": "user", "content": "b0"}], "model": "small", "extra": {"temperature": 0}, "forks": [{"child": "c", "background": true}]}, {"messages": [{"role": "user", "content": "b1"}]}]}
{"session_id": "c", "turns": [{"messages": [{"role": "user", "content": "c0"}], "max_tokens": 3}]}
"#;

    #[test]
    fn turns_become_rows_with_their_branches() {
        let t = parse(SMALL).unwrap();
        assert_eq!(t.len(), 7);
        let rows = t.rows();
        let ids: Vec<&str> = rows.iter().map(|r| r.session_id.as_deref().unwrap()).collect();
        assert_eq!(ids, ["root", "root", "a", "a", "b", "b", "c"]);
        assert_eq!(
            rows[0].branches(),
            [Branch { children: vec!["a".into(), "b".into()], join_at: Some(1), offsets_ms: Vec::new() }]
        );
        assert_eq!(rows[0].output_length, Some(5));
        assert_eq!(rows[1].delay, Some(Number::Int(20)));
        assert_eq!(rows[3].delay, Some(Number::Float(5.5)));
        assert_eq!(rows[4].branches(), [Branch { children: vec!["c".into()], join_at: None, offsets_ms: Vec::new() }]);
        let extra = rows[4].extra().unwrap();
        assert_eq!(extra["model"], "small");
        assert_eq!(extra["temperature"], 0);
        assert!(rows[6].branches().is_empty());
        assert_eq!(rows.iter().map(|r| r.line).collect::<Vec<_>>(), [1, 1, 2, 2, 3, 3, 4]);
    }

    #[test]
    fn explicit_joins_and_terminal_spawns() {
        let text = r#"{"session_id": "p", "turns": [{"messages": [{"role": "user", "content": "0"}], "spawns": [{"children": ["x"], "join_at": 2}, "y"]}, {"messages": [{"role": "user", "content": "1"}]}, {"messages": [{"role": "user", "content": "2"}], "spawns": ["z"]}]}
{"session_id": "x", "turns": [{"messages": [{"role": "user", "content": "x"}]}]}
{"session_id": "y", "turns": [{"messages": [{"role": "user", "content": "y"}]}]}
{"session_id": "z", "turns": [{"messages": [{"role": "user", "content": "z"}]}]}"#;
        let t = parse(text).unwrap();
        assert_eq!(
            t.rows()[0].branches(),
            [
                Branch { children: vec!["x".into()], join_at: Some(2), offsets_ms: Vec::new() },
                Branch { children: vec!["y".into()], join_at: Some(1), offsets_ms: Vec::new() }
            ]
        );
        // A bare spawn on the last turn: nothing joins it.
        assert_eq!(
            t.rows()[2].branches(),
            [Branch { children: vec!["z".into()], join_at: None, offsets_ms: Vec::new() }]
        );
    }

    #[test]
    fn bad_files_are_refused_with_line_field_and_reason() {
        let one = |turn: &str| format!(r#"{{"session_id": "s", "turns": [{turn}]}}"#);
        let cases = [
            (one(r#"{"messages": []}"#), "line 1: turns.0.messages: a non-empty list, got []"),
            (one(r#"{"messages": [{"content": "x"}]}"#), "turns.0.messages.0: a message with a 'role' key"),
            (
                one(r#"{"messages": [{"role": "user"}], "max_tokens": true}"#),
                "turns.0.max_tokens: an integer of at least 1, got true",
            ),
            (one(r#"{"messages": [{"role": "user"}], "max_tokens": 0}"#), "an integer of at least 1, got 0"),
            (
                one(r#"{"messages": [{"role": "user"}], "delay": -1}"#),
                "turns.0.delay: a number of milliseconds, at least 0, got -1",
            ),
            (
                one(r#"{"messages": [{"role": "user"}], "temperature": 1}"#),
                "turns.0.temperature: a key of AIPerf's DagTurn",
            ),
            (one(r#"{"messages": [{"role": "user"}], "spawns": ["nope"]}"#), "branch target 'nope' not declared"),
            (
                r#"{"session_id": "s", "turns": [], "orchestrator": true, "spawns": ["a"]}"#.to_string(),
                "line 1: orchestrator: not supported here (AIPerf's request-less orchestrator conversations), got true",
            ),
            (r#"{"session_id": "s", "turns": []}"#.to_string(), "line 1: turns: a non-empty list"),
            ("{".to_string(), "line 1: invalid JSON"),
            (String::new(), "no conversation"),
        ];
        for (text, want) in cases {
            let got = parse(&text).unwrap_err().to_string();
            assert!(got.contains(want), "{text}: {got}");
        }
    }

    #[test]
    fn graph_rules_are_aiperfs() {
        let line = |sid: &str, turns: &[&str]| {
            let t: Vec<String> =
                turns.iter().map(|x| format!(r#"{{"messages": [{{"role": "user", "content": "x"}}]{x}}}"#)).collect();
            format!(r#"{{"session_id": "{sid}", "turns": [{}]}}"#, t.join(", "))
        };
        let cases = [
            (
                vec![line("a", &[r#", "spawns": ["b"]"#]), line("b", &[r#", "spawns": ["a"]"#])],
                "cycle detected: a -> b -> a",
            ),
            (vec![line("a", &[""]), line("a", &[""])], "line 2: duplicate session_id 'a'"),
            (
                vec![line("a", &[r#", "forks": ["c"]"#, ""]), line("c", &[""])],
                "turn 0 has foreground FORK branches but is not the last turn",
            ),
            (
                vec![line("a", &[r#", "forks": ["c"]"#]), line("b", &[r#", "forks": ["c"]"#]), line("c", &[""])],
                "session 'c' forked by both 'a' turn 0 and 'b' turn 0",
            ),
            (
                vec![line("a", &[r#", "spawns": ["c", "c"]"#, ""]), line("c", &[""])],
                "duplicate child_conversation_id 'c' in spawn group",
            ),
            (
                vec![line("a", &[r#", "spawns": [{"children": ["c"], "join_at": 0}]"#, ""]), line("c", &[""])],
                "join_at=0 must be strictly greater",
            ),
            (
                vec![line("a", &[r#", "spawns": [{"children": ["c"], "join_at": 2}]"#, ""]), line("c", &[""])],
                "join_at=2 is out of range (conversation has 2 turns)",
            ),
        ];
        for (lines, want) in cases {
            let text = lines.join("\n");
            let got = parse(&text).unwrap_err().to_string();
            assert!(got.contains(want), "{text}: {got}");
        }
        // A system message after the root's first turn, or on a fork child's first turn.
        let sys = r#"{"session_id": "a", "turns": [{"messages": [{"role": "user", "content": "x"}]}, {"messages": [{"role": "system", "content": "s"}]}]}"#;
        assert!(parse(sys).unwrap_err().to_string().contains("non-root turns may not contain a 'system' message"));
        let isolated = r#"{"session_id": "a", "context_mode": "message_array_with_responses", "turns": [{"messages": [{"role": "user", "content": "x"}]}, {"messages": [{"role": "system", "content": "s"}]}]}"#;
        assert!(parse(isolated).is_ok());
    }
}
