//! Each production format's real sample (and the constructed Bailian and Azure 2024 fixtures)
//! converted and checked against an independent reading written here: row counts, timestamps,
//! lengths, conversations and the prefix structure of the re-blocked ids.
//!
//! The expectations are computed from the raw files with `serde_json::Value` and string splitting,
//! not with the adapters' helpers: times from the text, the test's own stable sort, and "equal
//! 512-token ids ⇔ equal source-id prefixes" checked pairwise on the source ids.

#![allow(clippy::unwrap_used)] // test code: a panic is the failure report

use std::collections::HashMap;
use std::path::PathBuf;

use aiperf_core::analysis::analyze;
use aiperf_core::formats::{Arrivals, ConvertOptions, Converted, Converter, FileOptions, Format, detect};
use aiperf_core::trace::{Number, Trace};
use serde_json::Value;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/traces/formats")
}

fn read(rel: &str) -> String {
    let path = dir().join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn convert_files(files: &[(&str, u64)], format: Format, opts: ConvertOptions) -> Converted {
    let mut c = Converter::new(opts).unwrap();
    for (k, (rel, offset)) in files.iter().enumerate() {
        let prefix = if files.len() > 1 { format!("f{k}/") } else { String::new() };
        c.start_file(FileOptions {
            source: (*rel).into(),
            format,
            start_offset_ms: *offset,
            conversation_prefix: prefix,
        })
        .unwrap();
        for line in read(rel).split('\n') {
            c.push_line(line).unwrap();
        }
        c.end_file().unwrap();
    }
    c.finish().unwrap()
}

fn convert(rel: &str, format: Format) -> Converted {
    assert_eq!(detect(read(rel).as_bytes()).unwrap().format, format, "{rel}");
    convert_files(&[(rel, 0)], format, ConvertOptions::default())
}

/// What the test expects of one converted row.
#[derive(Clone, Debug)]
struct Want {
    /// Source time in nanoseconds (any origin; the test rebases).
    ns: i64,
    input: u64,
    output: Option<u64>,
    conversation: Option<String>,
    /// Source ids, tokens per source id, whether the last id covers a partial block (ceil rule),
    /// and the id namespace (file).
    src: Option<(Vec<u64>, u64, bool, usize)>,
}

/// Sorts the expectations by ms (stable), then compares everything, prefix structure pairwise.
fn check(trace: &Trace, mut want: Vec<Want>) {
    assert_eq!(trace.len(), want.len(), "row count");
    let min = want.iter().map(|w| w.ns).min().unwrap_or(0);
    let ms = |w: &Want| (w.ns - min + 500_000) / 1_000_000;
    want.sort_by_key(ms);
    let mut all_ids: HashMap<u64, u32> = HashMap::new();
    for id in trace.all_hash_ids() {
        *all_ids.entry(*id).or_default() += 1;
    }
    let rows: Vec<_> = trace.iter().collect();
    for (i, ((row, ids), w)) in rows.iter().zip(&want).enumerate() {
        assert_eq!(row.timestamp, Some(Number::Int(ms(w))), "row {i} timestamp");
        assert_eq!(row.input_length(), Some(w.input as i64), "row {i} input");
        assert_eq!(row.output_length, w.output, "row {i} output");
        assert_eq!(row.conversation_id(), w.conversation.as_deref(), "row {i} conversation");
        assert_eq!(row.session_id, None);
        match &w.src {
            None => assert!(ids.is_empty(), "row {i}: a source without hashes got ids"),
            Some(_) => assert_eq!(ids.len() as u64, w.input.div_ceil(512), "row {i}: ceil(input/512) ids"),
        }
    }
    // Block k of a row is "whole" when its source ids are all present and complete blocks.
    let whole = |w: &Want, k: usize| -> Option<Vec<u64>> {
        let (src, block, partial_last, _) = w.src.as_ref()?;
        let per = (512 / block) as usize;
        let complete = if *partial_last && !w.input.is_multiple_of(*block) { src.len() - 1 } else { src.len() };
        ((k + 1) * per <= complete).then(|| src[..(k + 1) * per].to_vec())
    };
    for (i, wi) in want.iter().enumerate() {
        let ids_i = rows[i].1;
        for (k, id) in ids_i.iter().enumerate() {
            let Some(prefix_i) = whole(wi, k) else {
                assert_eq!(all_ids[id], 1, "row {i} block {k}: a partial block's id must be fresh");
                continue;
            };
            for (j, wj) in want.iter().enumerate() {
                let Some(other) = rows[j].1.get(k) else { continue };
                let Some(prefix_j) = whole(wj, k) else { continue };
                let same_file = wi.src.as_ref().unwrap().3 == wj.src.as_ref().unwrap().3;
                assert_eq!(id == other, same_file && prefix_i == prefix_j, "rows {i}, {j} block {k}");
            }
        }
    }
}

fn int(v: &Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}"))
}

fn ids(v: &Value) -> Vec<u64> {
    v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect()
}

fn secs_to_ns(text: &str) -> i64 {
    // Decimal text to ns without floats: integer part and up to 9 fraction digits.
    let (int, frac) = text.split_once('.').unwrap_or((text, ""));
    let frac = format!("{frac:0<9}");
    int.parse::<i64>().unwrap() * 1_000_000_000 + frac[..9].parse::<i64>().unwrap()
}

#[test]
fn servegen_a_and_c_reblock_sixteen_token_ids_and_invent_arrivals() {
    for (rel, n) in [("servegen-offline/trace_a.jsonl.head180", 180), ("servegen-offline/trace_c.jsonl.head49", 49)] {
        let opts = ConvertOptions { arrivals: Arrivals::Rate { per_second: 4.0 }, ..ConvertOptions::default() };
        assert_eq!(detect(read(rel).as_bytes()).unwrap().format, Format::ServeGen);
        let c = convert_files(&[(rel, 0)], Format::ServeGen, opts);
        let want: Vec<Want> = read(rel)
            .lines()
            .enumerate()
            .map(|(k, l)| {
                let v: Value = serde_json::from_str(l).unwrap();
                let input = int(&v, "input_length");
                Want {
                    ns: k as i64 * 250_000_000,
                    input,
                    output: None,
                    conversation: None,
                    src: Some((ids(&v["hash_ids"]), 16, true, 0)),
                }
            })
            .collect();
        assert_eq!(want.len(), n);
        check(&c.trace, want);
        assert!(c.has_prefix_info);
        assert!(c.notes.iter().any(|n| n.contains("invented at a constant 4 requests/s")), "{:?}", c.notes);
        assert!(c.notes.iter().any(|n| n.contains("no output lengths")), "{:?}", c.notes);
        // Every trace_a row starts with source ids 0–9 (160 tokens < 512): no 512-block is shared
        // by construction unless 32 ids agree; the analysis must still see prefix information.
        assert!(analyze(&c.trace, 512).prefix_information);
    }
}

#[test]
fn servegen_d_has_lengths_but_no_hashes() {
    let rel = "servegen-offline/trace_d.jsonl.head165";
    let c = convert(rel, Format::ServeGen);
    let want: Vec<Want> = read(rel)
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            Want {
                ns: 0,
                input: int(&v, "input_length"),
                output: Some(int(&v, "output_length")),
                conversation: None,
                src: None,
            }
        })
        .collect();
    assert_eq!(want.len(), 165);
    check(&c.trace, want);
    assert!(!c.has_prefix_info);
    let a = analyze(&c.trace, 512);
    assert!(!a.prefix_information);
    assert!(aiperf_core::analysis::report::analysis_report(&a).contains("no prefix information"));
}

fn azure_want(text: &str) -> Vec<Want> {
    text.lines()
        .skip(1)
        .filter(|l| !l.is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            // The samples and fixture stay within 2023-11-16 / 2024-05-10..11: day, then clock.
            let (date, clock) = f[0].split_once(' ').unwrap();
            let day: i64 = date[8..10].parse().unwrap();
            let (clock, offset_h) = match clock.split_once('+') {
                Some((c, off)) => (c, off[..2].parse::<i64>().unwrap()),
                None => (clock, 0),
            };
            let h: i64 = clock[..2].parse().unwrap();
            let m: i64 = clock[3..5].parse().unwrap();
            let s = secs_to_ns(&clock[6..]);
            let ns = ((day * 24 + h - offset_h) * 60 + m) * 60 * 1_000_000_000 + s;
            Want {
                ns,
                input: f[1].parse().unwrap(),
                output: Some(f[2].parse().unwrap()),
                conversation: None,
                src: None,
            }
        })
        .collect()
}

#[test]
fn azure_2023_samples() {
    for rel in [
        "azure-llm-2023/AzureLLMInferenceTrace_code.csv.head2000",
        "azure-llm-2023/AzureLLMInferenceTrace_conv.csv.head2000",
    ] {
        let c = convert(rel, Format::Azure);
        let want = azure_want(&read(rel));
        assert_eq!(want.len(), 2000);
        check(&c.trace, want);
        assert!(c.notes[0].contains("2023 style"), "{:?}", c.notes);
        assert!(!c.has_prefix_info);
    }
}

#[test]
fn azure_2024_constructed() {
    let rel = "constructed/azure2024_constructed.csv";
    let c = convert(rel, Format::Azure);
    let want = azure_want(&read(rel));
    check(&c.trace, want);
    let ts: Vec<_> = c.trace.rows().iter().map(|r| r.timestamp.unwrap().as_f64()).collect();
    // 00:00:00.009930 is 0; the +02:00 row is 00:00:00.5 UTC; the last row crosses midnight.
    assert_eq!(ts[..5], [0.0, 7.0, 12.0, 490.0, 990.0]);
    assert_eq!(ts[6], 86_399_990.0);
    assert!(c.notes[0].contains("2024 style"), "{:?}", c.notes);
}

fn burst_want(text: &str, drop_failed: bool, model: Option<&str>) -> (Vec<Want>, u64) {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name);
    let (t, req, resp, mdl, sess) = (
        col("Timestamp").unwrap(),
        col("Request tokens").unwrap(),
        col("Response tokens").unwrap(),
        col("Model").unwrap(),
        col("Session ID"),
    );
    let mut failed = 0;
    let mut want = Vec::new();
    for l in lines {
        let f: Vec<&str> = l.split(',').collect();
        if model.is_some_and(|m| f[mdl] != m) {
            continue;
        }
        let output: u64 = f[resp].parse().unwrap();
        if output == 0 {
            failed += 1;
            if drop_failed {
                continue;
            }
        }
        let conversation = sess.map(|s| f[s]).filter(|s| !s.is_empty()).map(str::to_string);
        want.push(Want {
            ns: secs_to_ns(f[t]),
            input: f[req].parse().unwrap(),
            output: Some(output),
            conversation,
            src: None,
        });
    }
    (want, failed)
}

#[test]
fn burstgpt_v1_and_v2_by_header_names() {
    for (rel, failed_in_sample) in [("burstgpt/BurstGPT_1.csv.head400", 17), ("burstgpt/BurstGPT_3.csv.head400", 1)] {
        let c = convert(rel, Format::BurstGpt);
        let (want, failed) = burst_want(&read(rel), false, None);
        assert_eq!((want.len(), failed), (400, failed_in_sample));
        check(&c.trace, want);
        assert_eq!((c.stats.failed_kept, c.stats.failed_dropped), (failed, 0));

        let opts = ConvertOptions { drop_failed: true, models: vec!["GPT-4".into()], ..ConvertOptions::default() };
        let c = convert_files(&[(rel, 0)], Format::BurstGpt, opts);
        let (want, failed) = burst_want(&read(rel), true, Some("GPT-4"));
        assert!(!want.is_empty());
        assert_eq!(c.stats.failed_dropped, failed);
        assert_eq!(c.stats.other_models + c.stats.failed_dropped + want.len() as u64, 400);
        check(&c.trace, want);
    }
    // v2 conversations: the same session id on several rows, history included in the input.
    let c = convert("burstgpt/BurstGPT_3.csv.head400", Format::BurstGpt);
    let mut turns: HashMap<&str, u32> = HashMap::new();
    for r in c.trace.rows() {
        if let Some(id) = r.conversation_id() {
            *turns.entry(id).or_default() += 1;
        }
    }
    assert!(turns.values().any(|&n| n >= 2));
}

fn weka_want(v: &Value, base_ns: i64, conv: &str, ns_index: usize, out: &mut Vec<Want>) {
    for e in v.as_array().unwrap() {
        let t = secs_to_ns(&e["t"].to_string()) + base_ns;
        if e["type"] == "subagent" {
            weka_want(&e["requests"], t, &format!("{conv}/{}", e["agent_id"].as_str().unwrap()), ns_index, out);
            continue;
        }
        let input = int(e, "in");
        out.push(Want {
            ns: t,
            input,
            output: Some(int(e, "out")),
            conversation: Some(conv.to_string()),
            src: Some((ids(&e["hash_ids"]), 64, false, ns_index)),
        });
    }
}

#[test]
fn weka_files_merge_with_offsets_and_never_share_ids_across_files() {
    let files = [("weka-kv-cache-tester/trace_0291.json", 0u64), ("weka-kv-cache-tester/trace_0504.json", 30_000u64)];
    for (rel, _) in files {
        assert_eq!(detect(read(rel).as_bytes()).unwrap().format, Format::Weka);
    }
    let c = convert_files(&files, Format::Weka, ConvertOptions::default());
    let mut want = Vec::new();
    for (k, (rel, offset)) in files.iter().enumerate() {
        let doc: Value = serde_json::from_str(&read(rel)).unwrap();
        let mut w = Vec::new();
        weka_want(&doc["requests"], 0, &format!("f{k}/{}", doc["id"].as_str().unwrap()), k, &mut w);
        let first = w.iter().map(|x| x.ns).min().unwrap();
        for x in &mut w {
            x.ns = x.ns - first + *offset as i64 * 1_000_000;
        }
        want.extend(w);
    }
    assert_eq!(want.len(), 32 + 3);
    check(&c.trace, want);
    // Both files' ids start at 1 in the source; converted, no id is shared across files.
    let conv_of = |r: &aiperf_core::trace::Row| r.conversation_id().unwrap().split('/').next().unwrap().to_string();
    let mut owner: HashMap<u64, String> = HashMap::new();
    for (row, ids) in c.trace.iter() {
        for id in ids {
            let f = owner.entry(*id).or_insert_with(|| conv_of(row));
            assert_eq!(*f, conv_of(row));
        }
    }
    // The sub-agents share the parent's tool/system prefix (ids 1584, 1585, … in both).
    let a = analyze(&c.trace, 512);
    assert!(a.cache_hit_rate > 0.5, "{}", a.cache_hit_rate);
}

#[test]
fn bailian_constructed_chains_missing_parents_seconds_and_reblocking() {
    let rel = "constructed/bailian_constructed.jsonl";
    let c = convert(rel, Format::Bailian);
    // Conversation roots, walked here by hand: 0 → 1 → 8; 3 is missing so 5 is a root with child 6.
    let parents: HashMap<u64, i64> = read(rel)
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (int(&v, "chat_id"), v["parent_chat_id"].as_i64().unwrap())
        })
        .collect();
    let root = |mut c: u64| loop {
        match parents[&c] {
            p if p >= 0 && parents.contains_key(&(p as u64)) => c = p as u64,
            _ => return c,
        }
    };
    let want: Vec<Want> = read(rel)
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            Want {
                ns: secs_to_ns(&v["timestamp"].to_string()),
                input: int(&v, "input_length"),
                output: Some(int(&v, "output_length")),
                conversation: Some(root(int(&v, "chat_id")).to_string()),
                src: Some((ids(&v["hash_ids"]), 16, true, 0)),
            }
        })
        .collect();
    check(&c.trace, want);
    let ts: Vec<f64> = c.trace.rows().iter().map(|r| r.timestamp.unwrap().as_f64()).collect();
    assert_eq!(ts, [0.0, 500.0, 61_114.0, 62_250.0, 62_250.0, 90_000.0, 120_001.0, 130_000.0]);
    let conv: Vec<&str> = c.trace.rows().iter().map(|r| r.conversation_id().unwrap()).collect();
    assert_eq!(conv, ["0", "7", "0", "5", "9", "0", "5", "10"]);
    // 16 → 512: chat 0 (1100 tokens) and its follow-ups share two whole 512-blocks; chat 7 shares
    // the first only; chat 5 (exactly 1024 tokens, the same 64 ids) shares both.
    let ids: Vec<&[u64]> = c.trace.iter().map(|(_, ids)| ids).collect();
    assert_eq!(ids[0].len(), 3);
    assert_eq!(ids[0][..2], ids[2][..2]);
    assert_eq!(ids[0][0], ids[1][0]);
    assert_ne!(ids[0][1], ids[1][1]);
    assert_eq!(ids[3], &ids[0][..2]);
    // Chat 10: chat 0's second block of source ids after another first block: a different id.
    assert_ne!(ids[7][1], ids[0][1]);
    assert!(c.notes[0].contains("1 rows whose parent is not in the file"), "{:?}", c.notes);
}

#[test]
fn converted_rows_round_trip_through_mooncake_jsonl() {
    let c = convert("constructed/bailian_constructed.jsonl", Format::Bailian);
    let text = aiperf_core::trace::write_trace(&c.trace);
    assert!(text.lines().next().unwrap().contains("\"conversation_id\":\"0\""), "{text}");
    let back = aiperf_core::trace::parse_str(&text, aiperf_core::trace::ParseOptions::default()).unwrap().trace;
    let a: Vec<_> = c.trace.iter().map(|(r, ids)| (r.timestamp, r.input_length(), r.conversation_id(), ids)).collect();
    let b: Vec<_> = back.iter().map(|(r, ids)| (r.timestamp, r.input_length(), r.conversation_id(), ids)).collect();
    assert_eq!(a, b);
}

#[test]
fn errors_name_file_line_field_value_and_what_is_accepted() {
    let cases: [(Format, &str, &str); 6] = [
        (
            Format::Bailian,
            "{\"chat_id\":1,\"timestamp\":\"soon\",\"input_length\":5,\"hash_ids\":[1]}",
            "x:1: field 'timestamp': found \"\\\"soon\\\"\", expected a non-negative number of seconds",
        ),
        (
            Format::Bailian,
            "{\"chat_id\":1,\"timestamp\":1.0,\"input_length\":40,\"hash_ids\":[1]}",
            "x:1: field 'hash_ids': found 1 ids, expected ceil(input length 40 / 16) = 3 ids",
        ),
        (
            Format::ServeGen,
            "{\"request_id\":1,\"input_length\":-3}",
            "x:1: field 'input_length': found \"-3\", expected a non-negative integer",
        ),
        (
            Format::Azure,
            "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 25:00:00,1,1",
            "x:2: field 'TIMESTAMP': found \"2023-11-16 25:00:00\", expected a date-time",
        ),
        (
            Format::BurstGpt,
            "Timestamp,Model,Request tokens,Response tokens\n5,GPT-4,many,1",
            "x:2: field 'Request tokens': found \"many\", expected a non-negative integer",
        ),
        (
            Format::Weka,
            "{\"id\":\"w\",\"block_size\":64,\"requests\":[{\"t\":0,\"in\":200,\"out\":1,\"hash_ids\":[1,2]}]}",
            "x: field 'requests[0].hash_ids': found 2 ids, expected floor(input length 200 / 64) = 3 ids",
        ),
    ];
    for (format, text, want) in cases {
        let mut c = Converter::new(ConvertOptions::default()).unwrap();
        c.start_file(FileOptions {
            source: "x".into(),
            format,
            start_offset_ms: 0,
            conversation_prefix: String::new(),
        })
        .unwrap();
        let err = text.split('\n').try_for_each(|l| c.push_line(l)).and_then(|()| c.finish().map(drop)).unwrap_err();
        assert!(err.to_string().starts_with(want), "{format}: {err}");
    }
}
