//! The conversations of a `dag_jsonl` file as one graph: AIPerf's checks of its branches, then
//! every turn a row holding the branches it starts.

use serde_json::Value;

use super::error::DagError;
use super::line::Conversation;
use crate::hashing::FastMap;
use crate::trace::{Branch, Input, Trace};

/// The trace of the conversations read (`ids`: where each session id stands among them), after
/// AIPerf's checks of the graph.
pub(super) fn rows(conversations: Vec<Conversation>, ids: &FastMap<String, usize>) -> Result<Trace, DagError> {
    let graph_err = |line: u32, message: String| DagError::Graph { line, message };
    // Branch targets exist; a forked session has one parent.
    let mut fork_parent: FastMap<&str, (&str, usize)> = FastMap::default();
    for c in &conversations {
        for (k, t) in c.turns.iter().enumerate() {
            let children = t
                .forks
                .iter()
                .map(|f| (&f.0, true))
                .chain(t.spawns.iter().flat_map(|s| s.0.iter().map(|x| (x, false))));
            for (child, fork) in children {
                if !ids.contains_key(child) {
                    let mut known: Vec<&str> = ids.keys().map(String::as_str).collect();
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
    for c in &conversations {
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
    for c in &conversations {
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
    for c in &conversations {
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
    check_cycles(&conversations, ids)?;
    let mut trace = Trace::new();
    for c in conversations {
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
fn check_cycles(conversations: &[Conversation], ids: &FastMap<String, usize>) -> Result<(), DagError> {
    let children = |c: &Conversation| -> Vec<usize> {
        c.turns
            .iter()
            .flat_map(|t| t.forks.iter().map(|f| &f.0).chain(t.spawns.iter().flat_map(|s| s.0.iter())))
            .filter_map(|id| ids.get(id).copied())
            .collect()
    };
    // 0: not seen, 1: on the path, 2: done; an explicit stack bounds the recursion.
    let mut state = vec![0u8; conversations.len()];
    for root in 0..conversations.len() {
        if state[root] != 0 {
            continue;
        }
        let mut stack: Vec<(usize, Vec<usize>)> = vec![(root, children(&conversations[root]))];
        state[root] = 1;
        while let Some((node, next)) = stack.last_mut() {
            let node = *node;
            match next.pop() {
                Some(c) if state[c] == 1 => {
                    let mut path: Vec<&str> = stack.iter().map(|(s, _)| conversations[*s].id.as_str()).collect();
                    let from = path.iter().position(|p| *p == conversations[c].id).unwrap_or(0);
                    path.drain(..from);
                    path.push(&conversations[c].id);
                    return Err(DagError::Graph {
                        line: conversations[node].line,
                        message: format!("cycle detected: {}", path.join(" -> ")),
                    });
                }
                Some(c) if state[c] == 0 => {
                    state[c] = 1;
                    stack.push((c, children(&conversations[c])));
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
