//! The WEKA reader's tests: the scanner against serde, and every way of pushing a document.

#![allow(clippy::unwrap_used)]

use crate::formats::{ConvertOptions, Converted, Converter, FileOptions, Format, FormatError};
use crate::trace::write_trace;

fn convert(text: &str) -> Result<Converted, FormatError> {
    let mut c = Converter::new(ConvertOptions::default())?;
    c.start_file(FileOptions {
        source: "w.json".into(),
        format: Format::Weka,
        start_offset_ms: 0,
        conversation_prefix: String::new(),
    })?;
    for line in text.split('\n') {
        c.push_line(line)?;
    }
    c.end_file()?;
    c.finish()
}

const REQUESTS: &str = r#""requests": [
    {"t": 0.0, "model": "m", "in": 130, "out": 5, "hash_ids": [1, 2]},
    {"t": 1.5, "type": "subagent", "agent_id": "a", "requests": [{"t": 0.5, "in": 64, "out": 1, "hash_ids": [1]}]},
    {"t": 2.0, "model": "m", "in": 200, "out": 7, "hash_ids": [1, 2, 3]}
]"#;

#[test]
fn requests_before_or_after_the_header_convert_alike() {
    let streamed = convert(&format!("{{\"id\": \"c\", \"block_size\": 64, {REQUESTS}}}")).unwrap();
    let buffered = convert(&format!("{{{REQUESTS}, \"block_size\": 64, \"id\": \"c\"}}")).unwrap();
    assert_eq!(streamed.trace.len(), 3);
    assert_eq!(write_trace(&streamed.trace), write_trace(&buffered.trace));
    assert_eq!(streamed.notes, buffered.notes);
}

#[test]
fn errors_name_the_request_and_the_document_must_be_one() {
    let bad = REQUESTS.replace(r#""in": 200, "out": 7, "hash_ids": [1, 2, 3]"#, r#""in": 200, "hash_ids": [1]"#);
    let e = convert(&format!("{{\"id\": \"c\", \"block_size\": 64, {bad}}}")).unwrap_err().to_string();
    assert!(e.contains("requests[2].hash_ids") && e.contains("1 ids"), "{e}");
    let e = convert("{\"id\": \"c\", \"block_size\": 64}").unwrap_err().to_string();
    assert!(e.contains("missing field `requests`"), "{e}");
    let e = convert(&format!("{{\"id\": \"c\", \"block_size\": 0, {REQUESTS}}}")).unwrap_err().to_string();
    assert!(e.contains("block_size") && e.contains("positive"), "{e}");
    let e = convert(&format!("{{\"id\": \"c\", \"block_size\": 64, {REQUESTS}}} x")).unwrap_err().to_string();
    assert!(e.contains("not a WEKA trace object"), "{e}");
}

/// How a test hands a document to the converter.
#[derive(Clone, Copy, Debug)]
enum Push {
    Lines,
    Document,
    /// Parts of at most this many requests.
    Parts(usize),
}

/// Converts `text` pushed as `how` says: the trace and notes, or the error's text.
fn convert_with(text: &str, opts: &ConvertOptions, how: Push) -> String {
    let run = || -> Result<Converted, FormatError> {
        let mut c = Converter::new(opts.clone())?;
        c.start_file(FileOptions {
            source: "w.json".into(),
            format: Format::Weka,
            start_offset_ms: 0,
            conversation_prefix: "p:".into(),
        })?;
        match how {
            Push::Document => c.push_document(text)?,
            Push::Lines if text.is_empty() => {}
            Push::Lines => {
                for line in text.strip_suffix('\n').unwrap_or(text).split('\n') {
                    c.push_line(line)?;
                }
            }
            Push::Parts(n) => {
                let mut reader = crate::formats::DocumentReader::new(Format::Weka, &"w.json".into(), text)?;
                while let Some(part) = reader.next_part(n) {
                    c.push_parsed_document(part)?;
                }
            }
        }
        c.end_file()?;
        c.finish()
    };
    match run() {
        Ok(done) => format!("{}{:?}{:?}", write_trace(&done.trace), done.notes, done.stats),
        Err(e) => format!("error: {e}"),
    }
}

/// Reads `text` in parts of `n` requests: the parts, and whether serde read any of it.
fn parts(text: &str, n: usize) -> (Vec<super::Parsed>, bool) {
    let mut reader = super::scan::Reader::new(&"w.json".into(), text);
    let parts = std::iter::from_fn(|| reader.next_part(n)).collect();
    (parts, reader.serde_read)
}

#[test]
fn real_files_take_the_fast_path_and_convert_as_line_by_line() {
    let source: std::sync::Arc<str> = "w.json".into();
    for text in [
        include_str!("../../../../../tests/fixtures/traces/formats/weka-kv-cache-tester/trace_0291.json"),
        include_str!("../../../../../tests/fixtures/traces/formats/weka-kv-cache-tester/trace_0504.json"),
    ] {
        // trace_0291 has sub-agents: read by serde, each within the fast reading.
        let (whole, serde_read) = parts(text, usize::MAX);
        assert!(!serde_read, "read by the fast path");
        assert_eq!(whole, vec![super::serde_read::parse_serde(&source, &super::model::as_lines(text))]);
        let (some, _) = parts(text, 3);
        let (last, before) = some.split_last().unwrap();
        assert!(last.is_last() && before.iter().all(|p| p.reqs.len() >= 3 && !p.is_last()));
        assert_eq!(some.iter().map(|p| p.reqs.len()).sum::<usize>(), whole[0].reqs.len());
        let opts = ConvertOptions::default();
        let lines = convert_with(text, &opts, Push::Lines);
        assert_eq!(convert_with(text, &opts, Push::Document), lines);
        assert_eq!(convert_with(text, &opts, Push::Parts(3)), lines);
    }
}

#[test]
fn sub_agent_times_before_the_entry_are_read_from_it() {
    let doc = r#"{"id": "c", "block_size": 64, "requests": [
        {"t": 0.0, "in": 10, "out": 1, "hash_ids": []},
        {"t": 5.0, "type": "subagent", "agent_id": "a", "duration_ms": 2000, "requests": [
            {"t": 0.5, "in": 10, "out": 1, "hash_ids": []}, {"t": 6.0, "in": 10, "out": 1, "hash_ids": []}]}]}"#;
    let (parts, _) = parts(doc, usize::MAX);
    let at: Vec<i64> = parts[0].reqs.iter().map(|r| r.at_ns).collect();
    assert_eq!(at, vec![0, 5_500_000_000, 6_000_000_000]);
    let spawn = parts[0].convs[1].spawn.clone().unwrap();
    assert_eq!((spawn.parent, spawn.outer, spawn.at_ns, spawn.duration_ms), (0, 1, 5_000_000_000, Some(2000.0)));
}

#[test]
fn a_document_pushed_twice_or_after_lines_is_refused_or_joined() {
    let doc = format!("{{\"id\": \"c\", \"block_size\": 64, {REQUESTS}}}\n");
    let (head, tail) = doc.split_once('\n').unwrap();
    let mut c = Converter::new(ConvertOptions::default()).unwrap();
    let file = FileOptions {
        source: "w.json".into(),
        format: Format::Weka,
        start_offset_ms: 0,
        conversation_prefix: String::new(),
    };
    c.start_file(file.clone()).unwrap();
    c.push_line(head).unwrap();
    c.push_document(tail).unwrap();
    c.end_file().unwrap();
    assert_eq!(c.rows(), 3);
    c.start_file(file).unwrap();
    c.push_document(&doc).unwrap();
    let e = c.push_document(&doc).unwrap_err().to_string();
    assert!(e.contains("already read"), "{e}");
    assert!(c.push_line("{}").is_err());
}

use proptest::prelude::*;

/// Some whitespace between tokens.
fn ws() -> impl Strategy<Value = &'static str> {
    prop_oneof![6 => Just(""), 3 => Just(" "), 1 => Just("\n"), 1 => Just("\r\n"), 1 => Just("\t")]
}

/// A value for `t`: plain seconds mostly, and (weight 1 against `k` times the others) what the fast path leaves to
/// serde.
fn seconds(k: u32) -> impl Strategy<Value = String> {
    prop_oneof![
        8 * k => (0u32..100_000, 0u32..4).prop_map(|(ms, form)| match form {
            0 => format!("{}", ms / 1000),
            1 => format!("{}.{:03}", ms / 1000, ms % 1000),
            2 => format!("{}.0", ms / 1000),
            _ => format!("{}.{}", ms / 1000, ms % 10),
        }),
        1 => prop_oneof![
            Just("1e2"), Just("2.5E-1"), Just("-1"), Just("-0.0"), Just("01"), Just("1."), Just(".5"),
            Just("null"), Just("\"1\""), Just("123456789012345678"), Just("1e400"), Just("0.1234567890123456789"),
        ].prop_map(str::to_string),
    ]
}

/// An odd value for `in` or `out`.
fn odd_count() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("null"),
        Just("-5"),
        Just("1.0"),
        Just("007"),
        Just("\"3\""),
        Just("1e3"),
        Just("0"),
        Just("18446744073709551616"),
        Just("9999999999999999999"),
    ]
    .prop_map(str::to_string)
}

/// A value of a key the converter does not read; (weight 1 against `k` times the others) not JSON.
fn other_value(k: u32) -> impl Strategy<Value = String> {
    prop_oneof![
        4 * k => Just("[\"text\", \"tool_use\"]"), 2 * k => Just("\"end_turn\""), k => Just("\"a\\\"b\\\\c\\n\\u00e9\""),
        k => Just("{\"a\": [1, {\"b\": null}], \"c\": true}"), k => Just("-1.5e-3"), k => Just("false"),
        k => Just("[]"), k => Just("{}"), k => Just("0"), k => Just("[[[{\"x\": [\"\\/\"]}]]]"),
        // Not JSON: serde refuses these, and so must the fast path.
        1 => prop_oneof![
            Just("tru"), Just("1.2.3"), Just("\"raw\u{1}control\""), Just("\"bad \\x escape\""), Just("[1,]"),
            Just("{\"a\" 1}"), Just("01"), Just("\"\\u12G4\""), Just("nul"), Just("-"), Just("1e"), Just("[1 2]"),
        ],
    ]
    .prop_map(str::to_string)
}

/// A request object: fields in any order, (weight 1 against `k` times the others) some odd or repeated.
fn request(k: u32) -> impl Strategy<Value = String> {
    let ids = prop::collection::vec(1u64..40, 0..6);
    (
        seconds(k),
        prop_oneof![4 * k => Just(None), 4 * k => Just(Some("\"s\"")), 2 * k => Just(Some("\"n\"")), 1 => Just(Some("null")), 1 => Just(Some("\"\\u0073\""))],
        prop_oneof![6 * k => Just(Some("\"m\"")), 2 * k => Just(Some("\"other\"")), 2 * k => Just(None), 1 => Just(Some("\"m\\u0021\"")), 1 => Just(Some("null"))],
        (ids, 0u64..64, prop_oneof![16 * k => Just(None), 1 => odd_count().prop_map(Some)]),
        prop_oneof![4 * k => Just(None), 4 * k => (0u64..900).prop_map(|o| Some(o.to_string())), 1 => odd_count().prop_map(Some)],
        (prop::collection::vec(("[a-z_]{1,6}", other_value(k)), 0..3), prop::collection::vec(timing_field(k), 0..2)),
        (any::<bool>(), prop_oneof![
            16 * k => Just(None), 1 => Just(Some("null")), 1 => Just(Some("[1, -2]")), 1 => Just(Some("[01]")),
            1 => Just(Some("\"x\"")), 1 => Just(Some("[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]")),
        ]),
        (ws(), ws(), any::<prop::sample::Index>(), prop_oneof![20 * k => Just(false), 1 => Just(true)]),
    )
        .prop_map(|(t, kind, model, (ids, rest, input), out, (extra, timing), (has_ids, odd_ids), (w1, w2, shuffle, dup))| {
            let input = input.unwrap_or_else(|| (ids.len() as u64 * 64 + rest).to_string());
            let mut fields = vec![format!("\"t\":{w1}{t}"), format!("\"in\":{w2}{input}")];
            if let Some(k) = kind {
                fields.push(format!("\"type\": {k}"));
            }
            if let Some(m) = model {
                fields.push(format!("\"model\": {m}"));
            }
            if let Some(o) = out {
                fields.push(format!("\"out\": {o}"));
            }
            if let Some(bad) = odd_ids {
                fields.push(format!("\"hash_ids\": {bad}"));
            } else if has_ids || !ids.is_empty() {
                fields.push(format!("\"hash_ids\":{w1}{ids:?}"));
            }
            for (k, v) in extra {
                fields.push(format!("\"{k}\": {v}"));
            }
            fields.extend(timing);
            if dup {
                fields.push("\"in\": 3".into());
            }
            let k = shuffle.index(fields.len());
            fields.swap(0, k);
            format!("{{{w2}{}{w1}}}", fields.join(&format!(",{w2}")))
        })
}

/// An `api_time` or `think_time` field: seconds mostly, (weight 1 against `k` times the
/// others) what the fast path leaves to serde.
fn timing_field(k: u32) -> impl Strategy<Value = String> {
    (
        prop_oneof![Just("api_time"), Just("think_time")],
        prop_oneof![
            8 * k => (0u32..100_000).prop_map(|ms| format!("{}.{:03}", ms / 1000, ms % 1000)),
            1 => prop_oneof![Just("null"), Just("\"x\""), Just("-1.5"), Just("1e2"), Just("[1]"), Just("{}")].prop_map(str::to_string),
        ],
    )
        .prop_map(|(key, v)| format!("\"{key}\": {v}"))
}

/// A request or, sometimes, a sub-agent with requests of its own.
fn entry(k: u32) -> impl Strategy<Value = String> {
    prop_oneof![
        8 * k => request(k),
        k => (seconds(k), prop::option::of("[a-z]{1,3}"), prop::collection::vec(request(k), 0..3), any::<bool>()).prop_map(
            |(t, agent, reqs, typed)| {
                let agent = agent.map_or(String::new(), |a| format!(", \"agent_id\": \"{a}\""));
                let kind = if typed { ", \"type\": \"subagent\"" } else { "" };
                format!("{{\"t\": {t}{kind}{agent}, \"requests\": [{}]}}", reqs.join(", "))
            }
        ),
    ]
}

/// A document; (weight 1 against `k` times the others) the header after the requests, odd headers, trailing text.
fn document(k: u32) -> impl Strategy<Value = String> {
    (
        prop::collection::vec(entry(k), 0..8),
        prop_oneof![6 * k => Just("\"c\""), 1 => Just("null"), 1 => Just("\"c\\td\""), 1 => Just("5")],
        prop_oneof![
            6 * k => Just(Some("64")), k => Just(Some("32")), k => Just(Some("100")),
            1 => Just(Some("0")), 1 => Just(None), 1 => Just(Some("64.0")),
        ],
        prop_oneof![8 * k => Just(4u8), 1 => 0u8..4],
        prop_oneof![8 * k => Just(""), k => Just("\n"), k => Just("\r\n"), 1 => Just(" x"), k => Just("\n\n")],
        (ws(), other_value(k)),
    )
        .prop_map(|(entries, id, block, order, tail, (w, extra))| {
            let requests = format!("\"requests\":{w}[{w}{}{w}]", entries.join(&format!(",{w}")));
            let block = block.map_or(String::new(), |b| format!("\"block_size\": {b}, "));
            let header = format!("\"id\": {id}, {block}\"models\": {extra}");
            match order {
                0 => format!("{{{requests}, {header}}}{tail}"),
                1 => format!("{{{header}}}{tail}"),
                2 => format!("{{{header}, {requests}, \"id\": \"again\"}}{tail}"),
                3 => format!("[{requests}]{tail}"),
                _ => format!("{{{w}{header},{w}{requests}{w}}}{tail}"),
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]
    /// The fast reading gives what serde's gives (the same requests, the same first error),
    /// and a document pushed whole, or in parts, converts as its lines pushed one by one.
    #[test]
    fn fast_path_reads_as_serde(
        doc in prop_oneof![document(1000), document(1), document(20)],
        block_size in prop_oneof![Just(512u32), Just(128), Just(64)],
        model in prop_oneof![Just(None), Just(Some("m"))],
        part in 1usize..4,
    ) {
        let source: std::sync::Arc<str> = "w.json".into();
        let serde = super::serde_read::parse_serde(&source, &super::model::as_lines(&doc));
        let (whole, serde_read) = parts(&doc, usize::MAX);
        if !serde_read {
            prop_assert!(whole[0].end.as_ref().is_some_and(|e| e.stop.is_none()));
        }
        prop_assert_eq!(whole, vec![serde]);
        let opts = ConvertOptions { block_size, models: model.into_iter().map(str::to_string).collect(), ..ConvertOptions::default() };
        let lines = convert_with(&doc, &opts, Push::Lines);
        prop_assert_eq!(&convert_with(&doc, &opts, Push::Document), &lines);
        prop_assert_eq!(&convert_with(&doc, &opts, Push::Parts(part)), &lines);
        // Re-timed (held until the document ends), the same whichever way it is pushed.
        let timed = ConvertOptions {
            weka: Some(crate::formats::WekaTiming {
                think_time_only: part == 2,
                idle_gap_cap_s: (part == 3).then_some(5.0),
                max_context_length: Some(400),
                ..crate::formats::WekaTiming::default()
            }),
            ..opts
        };
        let lines = convert_with(&doc, &timed, Push::Lines);
        prop_assert_eq!(&convert_with(&doc, &timed, Push::Document), &lines);
        prop_assert_eq!(&convert_with(&doc, &timed, Push::Parts(part)), &lines);
    }
}
