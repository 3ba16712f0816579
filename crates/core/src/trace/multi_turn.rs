//! AIPerf 0.13.0's `multi_turn` lines (its `MultiTurn` model): a conversation per line,
//! `{"session_id": "…", "turns": [{"text": "…", "delay": 1000}, …]}`, as trace rows.
//!
//! Each turn is one of AIPerf's single_turn records, read by [`super::single_turn::record_row`]
//! (its text, `output_length`, `timestamp`/`delay` in milliseconds, `extra`), and becomes a row
//! of the line's session. AIPerf sends a conversation's turns with the earlier turns and the
//! server's replies before them (its `deltas_without_responses` mode), so a turn's text is the
//! row's `text_input`, which `profile` threads the same way. A leading `system` turn of text alone
//! is AIPerf's conversation system prompt (hoisted out of the turns, sent first in every request
//! of the conversation): it is returned apart ([`Conversation::system`]). A turn of another role
//! than `user` elsewhere is refused: AIPerf puts it into the conversation's history under that
//! role, which a row does not carry. A turn's own `session_id` is refused (the line's names the
//! conversation).

use serde_json::Value;

use super::model::{Input, Row};
use super::single_turn::{RecordError, err, record_row, show};

/// The keys of AIPerf's `MultiTurn` model.
pub const KEYS: &[&str] = &["type", "session_id", "turns"];

/// One line's conversation: its `session_id` when given (lines of one id are one conversation,
/// as in AIPerf), its leading system turn's text when it has one that AIPerf hoists into the
/// conversation's system prompt, and its other turns as rows, in order, without a session id yet.
#[derive(Clone, Debug, PartialEq)]
pub struct Conversation {
    pub session_id: Option<String>,
    pub system: Option<String>,
    pub rows: Vec<Row>,
}

/// Whether `turns[0]` is a system turn AIPerf hoists into the conversation's system prompt: of
/// role `system`, text alone (no timestamp, delay, output_length or extra), and followed by a
/// turn of another role.
fn hoisted(turns: &[Value]) -> bool {
    let role = |t: &Value| t.get("role").and_then(Value::as_str).map(str::to_owned);
    let [first, second, ..] = turns else { return false };
    role(first).as_deref() == Some("system")
        && role(second).as_deref() != Some("system")
        && ["timestamp", "delay", "output_length", "extra"].iter().all(|k| first.get(*k).is_none_or(Value::is_null))
}

/// The conversation of one line (`line`: its 1-based position, kept as every row's line).
pub fn conversation(record: &Value, line: u64) -> Result<Conversation, RecordError> {
    let Value::Object(m) = record else {
        return Err(err("", "a conversation: an object with `turns` (and session_id)", show(record)));
    };
    let get = |k: &str| m.get(k).filter(|v| !v.is_null());
    if let Some(k) = m.keys().find(|k| !KEYS.contains(&k.as_str())) {
        let expected = format!("a key of AIPerf's multi_turn conversation ({})", KEYS.join(", "));
        return Err(err(k, expected, show(&m[k.as_str()])));
    }
    if let Some(t) = get("type")
        && t.as_str() != Some("multi_turn")
    {
        return Err(err("type", "multi_turn", show(t)));
    }
    let session_id = match get("session_id") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => return Err(err("session_id", "a string", show(other))),
    };
    let turns = match get("turns") {
        Some(Value::Array(turns)) if !turns.is_empty() => turns,
        Some(other) => {
            return Err(err("turns", "a list of at least one turn (AIPerf's single_turn records)", show(other)));
        }
        None => return Err(err("turns", "a list of at least one turn (AIPerf's single_turn records)", "nothing")),
    };
    let mut rows = Vec::with_capacity(turns.len());
    let mut system = None;
    for (i, turn) in turns.iter().enumerate() {
        let at = |field: &str| if field.is_empty() { format!("turns[{i}]") } else { format!("turns[{i}].{field}") };
        if let Some(id) = turn.get("session_id").filter(|v| !v.is_null()) {
            let expected = "no session_id in a turn (the conversation's `session_id` names it)";
            return Err(err(&at("session_id"), expected, show(id)));
        }
        if i == 0 && hoisted(turns) {
            let Value::Object(t) = turn else { return Err(err(&at(""), "a turn: an object", show(turn))) };
            // Its text, then the record's other checks (keys, media) as for any turn.
            let texts = super::single_turn::texts(t).map_err(|e| RecordError { field: at(&e.field), ..e })?;
            let text = texts.join("\n");
            let mut probe = t.clone();
            probe.remove("role");
            probe.remove("texts");
            probe.insert("text".into(), Value::String(text.clone()));
            record_row(&Value::Object(probe), line).map_err(|e| RecordError { field: at(&e.field), ..e })?;
            system = Some(text);
            continue;
        }
        if let Some(role) = turn.get("role").filter(|v| !v.is_null())
            && role.as_str() != Some("user")
        {
            let expected = "user, or a leading system turn of text alone (AIPerf puts a turn of another role into \
                            the conversation's history; not replayed here)";
            return Err(err(&at("role"), expected, show(role)));
        }
        let mut row = record_row(turn, line).map_err(|e| RecordError { field: at(&e.field), ..e })?;
        // A `user` turn is a prompt like one without a role: it joins the conversation's history.
        let user_text = match &row.input {
            Input::Messages(messages) => match &messages[..] {
                [message] => message.get("content").and_then(Value::as_str).map(Box::<str>::from),
                _ => None,
            },
            _ => None,
        };
        if let Some(text) = user_text {
            row.input = Input::Text(text);
        }
        rows.push(row);
    }
    Ok(Conversation { session_id, system, rows })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::super::Number;
    use super::*;

    #[test]
    fn a_line_is_a_conversation_of_its_turns() {
        let c = conversation(
            &json!({"session_id": "s1", "turns": [
                {"text": "Hello", "delay": 0, "output_length": 4},
                {"texts": ["Hi there"], "delay": 1000, "role": "user", "extra": {"temperature": 0}},
                {"text": "Bye", "timestamp": 2500}
            ]}),
            7,
        )
        .unwrap();
        assert_eq!(c.session_id.as_deref(), Some("s1"));
        let inputs: Vec<&Input> = c.rows.iter().map(|r| &r.input).collect();
        assert_eq!(inputs, [&Input::Text("Hello".into()), &Input::Text("Hi there".into()), &Input::Text("Bye".into())]);
        assert_eq!(c.rows[0].output_length, Some(4));
        assert_eq!(c.rows[1].delay, Some(Number::Int(1000)));
        assert_eq!(c.rows[1].extra().unwrap()["temperature"], 0);
        assert_eq!(c.rows[2].timestamp, Some(Number::Int(2500)));
        assert!(c.rows.iter().all(|r| r.line == 7 && r.session_id.is_none()));
        assert_eq!(c.system, None);
        let c = conversation(&json!({"turns": [{"text": "x"}], "type": "multi_turn"}), 1).unwrap();
        assert_eq!((c.session_id, c.rows.len()), (None, 1));
        // AIPerf's persistent system prompt: a leading system turn of text alone.
        let c = conversation(
            &json!({"turns": [{"role": "system", "texts": ["Be brief.", "Be kind."]}, {"text": "Hi"}]}),
            1,
        )
        .unwrap();
        assert_eq!(c.system.as_deref(), Some("Be brief.\nBe kind."));
        assert_eq!(c.rows.iter().map(|r| &r.input).collect::<Vec<_>>(), [&Input::Text("Hi".into())]);
    }

    #[test]
    fn a_bad_conversation_names_its_field() {
        let e = |v: Value| conversation(&v, 1).unwrap_err().to_string();
        assert_eq!(
            e(json!({"session_id": "a"})),
            "`turns`: a list of at least one turn (AIPerf's single_turn records), got nothing"
        );
        assert!(e(json!({"turns": []})).starts_with("`turns`: a list of at least one turn"));
        assert_eq!(e(json!({"turns": [{"text": "a"}, {"text": 5}]})), "`turns[1].text`: a string (the prompt), got 5");
        assert!(
            e(json!({"turns": [{"text": "a", "role": "system"}]})).starts_with("`turns[0].role`: user, or a leading")
        );
        let two = json!({"turns": [{"text": "a", "role": "system"}, {"text": "b", "role": "system"}, {"text": "c"}]});
        assert!(e(two).starts_with("`turns[0].role`: user, or a leading"));
        let timed = json!({"turns": [{"text": "a", "role": "system", "delay": 5}, {"text": "c"}]});
        assert!(e(timed).starts_with("`turns[0].role`: user, or a leading"));
        let later = json!({"turns": [{"text": "c"}, {"text": "a", "role": "assistant"}]});
        assert!(e(later).starts_with("`turns[1].role`: user, or a leading"));
        assert!(
            e(json!({"turns": [{"text": "a", "role": "system", "image": "x"}, {"text": "c"}]}))
                .starts_with("`turns[0].image`: no images")
        );
        assert!(
            e(json!({"turns": [{"text": "a", "session_id": "x"}]})).starts_with("`turns[0].session_id`: no session_id")
        );
        assert!(e(json!({"turns": [{"text": "a"}], "turn": 1})).starts_with("`turn`: a key of AIPerf's multi_turn"));
        assert!(e(json!({"turns": [{"text": "a"}], "session_id": 3})).starts_with("`session_id`: a string, got 3"));
        assert!(e(json!({"turns": [{"text": "a"}], "type": "single_turn"})).starts_with("`type`: multi_turn"));
        assert!(e(json!({"turns": ["a"]})).starts_with("`turns[0]`: a record: an object"));
        assert!(e(json!([1])).starts_with("a conversation: an object with `turns`"));
    }
}
