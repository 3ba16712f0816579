//! One line of a `dag_jsonl` file read: a conversation and its turns, each key checked as AIPerf
//! checks it, each turn a row of its session with the branches it starts.

use serde_json::{Map, Value};

use super::error::DagError;
use crate::hashing::FastSet;
use crate::trace::{Input, Number, Row};

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
pub(super) struct Conversation {
    pub line: u32,
    pub id: String,
    pub isolated: bool,
    pub turns: Vec<DagTurn>,
}

pub(super) struct DagTurn {
    pub row: Row,
    /// (child, background)
    pub forks: Vec<(String, bool)>,
    /// (children, join_at as written)
    pub spawns: Vec<(Vec<String>, Option<u32>)>,
}

/// A value as a message shows it (at most 80 characters).
fn show(v: &Value) -> String {
    let text = v.to_string();
    match text.char_indices().nth(80) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
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

pub(super) fn conversation(v: &Value, line: u32) -> Result<Conversation, DagError> {
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
