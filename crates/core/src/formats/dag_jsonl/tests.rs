#![allow(clippy::unwrap_used)]

use super::*;
use crate::trace::{Branch, Number};

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
    assert_eq!(t.rows()[2].branches(), [Branch { children: vec!["z".into()], join_at: None, offsets_ms: Vec::new() }]);
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
