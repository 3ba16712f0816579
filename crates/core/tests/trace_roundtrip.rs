//! Property tests of the trace format: writing then parsing gives back the same rows.

#![allow(clippy::unwrap_used)] // test code: a panic is the failure report

use aiperf_core::trace::{Input, Number, ParseOptions, RareFields, Row, Trace, parse_str, write_trace};
use proptest::prelude::*;
use serde_json::{Map, Value};

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1e12f64..1e12).prop_map(Value::from),
        "\\PC{0,12}".prop_map(Value::String),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    json_leaf().prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec(("[a-z\"\\\\é]{1,6}", inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<String, Value>>())),
        ]
    })
}

fn number() -> impl Strategy<Value = Number> {
    prop_oneof![(0i64..10_000_000_000).prop_map(Number::Int), (0.0f64..1e9).prop_map(Number::Float)]
}

fn message() -> impl Strategy<Value = Value> {
    ("user|assistant|system", "\\PC{0,20}")
        .prop_map(|(role, content)| serde_json::json!({"role": role, "content": content}))
}

fn input() -> impl Strategy<Value = (Input, Vec<u64>, bool)> {
    prop_oneof![
        4 => (any::<i64>(), prop::collection::vec(any::<u64>(), 0..20)).prop_map(|(n, ids)| (Input::Length(n), ids, false)),
        1 => "\\PC{0,30}".prop_map(|t| (Input::Text(t.into()), vec![], false)),
        1 => (prop::collection::vec(message(), 1..3), any::<bool>()).prop_map(|(m, tools)| (Input::Messages(m.into()), vec![], tools)),
        1 => prop::collection::vec(("[a-z_]{1,8}", json_leaf()), 1..4).prop_map(|kv| {
            (Input::Payload(Box::new(kv.into_iter().collect())), vec![], false)
        }),
    ]
}

fn row() -> impl Strategy<Value = (Row, Vec<u64>)> {
    (
        input(),
        prop::option::of(any::<u64>()),
        prop::option::of(number()),
        prop::option::of(number()),
        prop::option::of("\\PC{1,10}"),
        prop::option::of(prop::collection::vec(("[a-z_]{1,8}", json_value()), 1..3)),
        prop::collection::vec(("x_[a-z]{1,6}", json_value()), 0..3),
        prop::option::of("\\PC{1,10}"),
    )
        .prop_map(|((input, ids, with_tools), output, timestamp, delay, session, extra, unknown, conversation)| {
            let mut row = Row::new(input);
            row.output_length = output;
            row.timestamp = timestamp;
            row.delay = delay;
            row.session_id = session.map(String::into_boxed_str);
            let mut unknown: Vec<(String, Value)> = unknown;
            unknown.sort_by(|a, b| a.0.cmp(&b.0));
            unknown.dedup_by(|a, b| a.0 == b.0);
            let rare = RareFields {
                tools: with_tools.then(|| vec![serde_json::json!({"type": "function", "function": {"name": "f"}})]),
                extra: extra.map(|kv| kv.into_iter().collect()),
                unknown,
                branches: Vec::new(),
            };
            row.conversation = conversation.map(Into::into);
            if rare != RareFields::default() {
                row.rare = Some(Box::new(rare));
            }
            (row, ids)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn parse_of_write_is_identity(rows in prop::collection::vec(row(), 0..12)) {
        let mut trace = Trace::new();
        for (i, (mut row, ids)) in rows.into_iter().enumerate() {
            row.line = i as u32 + 1;
            trace.push(row, ids);
        }
        let text = write_trace(&trace);
        let parsed = parse_str(&text, ParseOptions::new("prop.jsonl")).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&parsed.trace, &trace);
        // And writing again is stable byte for byte.
        prop_assert_eq!(write_trace(&parsed.trace), text);
    }

    #[test]
    fn parser_never_panics_on_arbitrary_lines(lines in prop::collection::vec("\\PC{0,60}", 0..8)) {
        let text = lines.join("\n");
        let _ = parse_str(&text, ParseOptions::default().skip_invalid(true));
    }
}
