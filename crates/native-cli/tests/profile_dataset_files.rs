//! AIPerf's own dataset files (`--custom-dataset-type single_turn | multi_turn | random_pool`)
//! replayed against the mock server: what is sent, in which order, with which text, and their
//! delays (a trace's too) under `--inter-turn-delay-cap-seconds`.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::time::Duration;

use aiperf_core::replay::sampling::{Sampler, Sampling};
use aiperf_core::trace::Input;
use aiperf_core::trace::random_pool::{Pool, sample};
use common::stderr;
use serde_json::{Value, json};

const LIMIT: Duration = Duration::from_secs(120);

/// Runs `profile` on `file` against a mock logging bodies; the bodies in arrival order.
fn run(file: &Path, art: &Path, extra: &[&str]) -> (std::process::Output, Vec<Value>) {
    let mock = common::Mock::start(&["--log-bodies"]);
    let out = common::profile_on(&mock.url, file, art, &[&["--ui-type", "none"][..], extra].concat(), LIMIT);
    let mut arrivals = mock.arrivals();
    arrivals.sort_by_key(|a| a["arrival_ns"].as_str().unwrap().parse::<u128>().unwrap());
    (out, arrivals.into_iter().map(|a| a["body"].clone()).collect())
}

fn write(dir: &Path, name: &str, lines: &[&str]) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    p
}

#[test]
fn single_turn_records_are_sent_alone_a_sessions_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "st.jsonl",
        &[
            r#"{"text": "first of a", "session_id": "a", "output_length": 3}"#,
            r#"{"text": "alone", "extra": {"temperature": 0.5}}"#,
            "",
            r#"{"texts": ["second of a"], "session_id": "a", "delay": 50, "output_length": 4}"#,
            r#"{"text": "a system turn", "role": "system"}"#,
        ],
    );
    // AIPerf's default load for its dataset files: one request at a time, sessions in file order,
    // and its default bound: 10 requests, the file's sessions again from the first.
    let (out, bodies) = run(&file, &dir.path().join("a"), &[]);
    common::ok(&out);
    let messages: Vec<&Value> = bodies.iter().map(|b| &b["messages"]).collect();
    assert_eq!(messages.len(), 10);
    for (i, m) in messages.iter().enumerate() {
        assert_eq!(m, &messages[i % 4], "request {i}");
    }
    assert_eq!(
        messages[..4],
        [
            &json!([{"role": "user", "content": "first of a"}]),
            &json!([{"role": "user", "content": "second of a"}]),
            &json!([{"role": "user", "content": "alone"}]),
            &json!([{"role": "system", "content": "a system turn"}]),
        ]
    );
    assert_eq!(bodies[0]["max_completion_tokens"], 3);
    assert_eq!(bodies[1]["max_completion_tokens"], 4);
    assert_eq!(bodies[2]["temperature"], 0.5);
    let summary = common::summary(&dir.path().join("a"));
    assert_eq!(summary["aiperf_cli_config"]["turn_history"], "none");
    let input = &summary["input_config"]["datasets"][0];
    assert_eq!((input["format"].as_str(), input["type"].as_str()), (Some("single_turn"), Some("file")), "{input}");

    // A bad line: the file, the line, the field, the value and what is accepted.
    let bad = write(dir.path(), "bad.jsonl", &[r#"{"text": "a"}"#, r#"{"text": "b", "image": "cat.png"}"#]);
    let (out, bodies) = run(&bad, &dir.path().join("b"), &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(bodies.is_empty());
    assert!(
        stderr(&out).contains(&format!("{}:2: `image`: no images, audio or video", bad.display())),
        "{}",
        stderr(&out)
    );
}

#[test]
fn single_turn_timestamps_are_replayed_only_with_fixed_schedule() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "ts.jsonl",
        &[r#"{"text": "late", "timestamp": 400}"#, r#"{"text": "early", "timestamp": 0}"#],
    );
    // As AIPerf: without --fixed-schedule the records go in file order, one at a time, and
    // again in turn up to its default bound of 10 requests (a single_turn file is never promoted
    // to a fixed schedule).
    let (out, bodies) = run(&file, &dir.path().join("a"), &[]);
    common::ok(&out);
    let texts: Vec<&Value> = bodies.iter().map(|b| &b["messages"][0]["content"]).collect();
    assert_eq!(texts, ["late", "early"].repeat(5));
    // With it, at their timestamps: the later one 400 ms after the first.
    let mock = common::Mock::start(&["--log-bodies"]);
    let out =
        common::profile_on(&mock.url, &file, &dir.path().join("b"), &["--ui-type", "none", "--fixed-schedule"], LIMIT);
    common::ok(&out);
    let arrivals = mock.arrivals();
    let at = |t: &str| {
        let a = arrivals.iter().find(|a| a["body"]["messages"][0]["content"] == t).unwrap();
        a["arrival_ns"].as_str().unwrap().parse::<f64>().unwrap() / 1e6
    };
    // Arrivals at the server, so the first one's own delay can shorten the gap a little; without
    // the schedule the second would follow the first's answer at once.
    assert!(at("late") - at("early") >= 300.0, "{} ms apart", at("late") - at("early"));
}

#[test]
fn multi_turn_conversations_send_their_history_and_the_servers_replies() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "mt.jsonl",
        &[
            r#"{"session_id": "c1", "turns": [{"text": "Hello", "output_length": 5}, {"text": "Tell me more", "delay": 20, "output_length": 6}]}"#,
            r#"{"turns": [{"text": "Alone", "output_length": 2}]}"#,
        ],
    );
    let (out, bodies) = run(&file, &dir.path().join("a"), &["--streaming", "--request-count", "3"]);
    common::ok(&out);
    assert_eq!(bodies.len(), 3);
    assert_eq!(bodies[0]["messages"], json!([{"role": "user", "content": "Hello"}]));
    let second = bodies[1]["messages"].as_array().unwrap();
    assert_eq!(second.len(), 3, "{second:?}");
    assert_eq!(second[0], json!({"role": "user", "content": "Hello"}));
    assert_eq!(second[1]["role"], "assistant");
    assert!(!second[1]["content"].as_str().unwrap().is_empty());
    assert_eq!(second[2], json!({"role": "user", "content": "Tell me more"}));
    assert_eq!(bodies[1]["max_completion_tokens"], 6);
    assert_eq!(bodies[2]["messages"], json!([{"role": "user", "content": "Alone"}]));
    let records = common::read_jsonl(&dir.path().join("a/profile_export.jsonl"));
    let mut sessions: Vec<&str> = records.iter().map(|r| r["metadata"]["conversation_id"].as_str().unwrap()).collect();
    sessions.sort_unstable();
    assert_eq!(sessions, ["c1", "c1", "line-2"]);

    // A line without turns, and a system turn, are named by line and field.
    for (lines, expected) in [
        (&[r#"{"turns": [{"text": "a"}]}"#, r#"{"session_id": "s"}"#][..], ":2: `turns`: a list of at least one turn"),
        (&[r#"{"turns": [{"text": "a"}, {"text": "be brief", "role": "system"}]}"#], ":1: `turns[1].role`: user"),
        (
            &[r#"{"turns": [{"text": "be brief", "role": "system"}, {"text": "a"}]}"#, r#"{"turns": [{"text": "b"}]}"#],
            ":2: `turns[0]`: the same leading system turn in every conversation",
        ),
    ] {
        let bad = write(dir.path(), "bad.jsonl", lines);
        let (out, bodies) = run(&bad, &dir.path().join("b"), &[]);
        assert_eq!(out.status.code(), Some(2));
        assert!(bodies.is_empty());
        assert!(stderr(&out).contains(&format!("{}{expected}", bad.display())), "{}", stderr(&out));
    }
}

#[test]
fn a_leading_system_turn_is_every_requests_system_message() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "sys.jsonl",
        &[
            r#"{"turns": [{"role": "system", "text": "Be brief."}, {"text": "Hi"}, {"text": "More", "delay": 10}]}"#,
            r#"{"turns": [{"role": "system", "text": "Be brief."}, {"text": "Alone"}]}"#,
        ],
    );
    // AIPerf hoists it into the conversation's system prompt, after --system-prompt's text.
    let (out, bodies) =
        run(&file, &dir.path().join("a"), &["--system-prompt", "You are a test.", "--request-count", "3"]);
    common::ok(&out);
    assert_eq!(bodies.len(), 3);
    for b in &bodies {
        assert_eq!(b["messages"][0], json!({"role": "system", "content": "You are a test.\n\nBe brief."}), "{b}");
    }
    assert_eq!(bodies[0]["messages"][1], json!({"role": "user", "content": "Hi"}));
    assert_eq!(bodies[1]["messages"].as_array().unwrap().len(), 4, "system, Hi, the reply, More");
    // On completions AIPerf sends it as a request of its own: refused.
    let (out, _) = run(&file, &dir.path().join("b"), &["--endpoint-type", "completions"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("a leading system turn with --endpoint-type completions"), "{}", stderr(&out));
}

/// The prompts of a trace's rows, one string per row (text parts joined by `|`).
fn prompts(t: &aiperf_core::trace::Trace) -> Vec<String> {
    t.rows()
        .iter()
        .map(|r| match &r.input {
            Input::Text(t) => t.to_string(),
            Input::Messages(m) => m[0]["content"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["text"].as_str().unwrap())
                .collect::<Vec<_>>()
                .join("|"),
            other => panic!("{other:?}"),
        })
        .collect()
}

#[test]
fn random_pool_draws_with_the_seed_and_sends_in_aiperfs_shuffled_order() {
    let dir = tempfile::tempdir().unwrap();
    let texts = ["p0", "p1", "p2", "p3", "p4"];
    let lines: Vec<String> = texts.iter().map(|t| format!(r#"{{"text": "{t}"}}"#)).collect();
    let file = write(dir.path(), "pool.jsonl", &lines.iter().map(String::as_str).collect::<Vec<_>>());
    // Six conversations drawn (`--request-count` sizes the pool's draw, as in AIPerf), sent once
    // each in the shuffle sampler's order, with the seed given.
    let (out, bodies) = run(
        &file,
        &dir.path().join("a"),
        &["--custom-dataset-type", "random_pool", "--request-count", "6", "--random-seed", "7"],
    );
    common::ok(&out);
    let pool = Pool { name: "pool.jsonl".into(), entries: texts.iter().map(|t| vec![t.to_string()]).collect() };
    let drawn = prompts(&sample(&[pool], 6, 7).unwrap());
    let mut sampler = Sampler::new(Sampling::Shuffle, 7);
    let expected: Vec<&str> = (0..6).map(|_| drawn[sampler.next(6)].as_str()).collect();
    let sent: Vec<&str> = bodies.iter().map(|b| b["messages"][0]["content"].as_str().unwrap()).collect();
    assert_eq!(sent, expected);
    let summary = common::summary(&dir.path().join("a"));
    assert_eq!(
        summary["aiperf_cli_config"]["dataset_sampling_strategy"], "shuffle",
        "{}",
        summary["aiperf_cli_config"]
    );

    // A folder: a pool per file, by name; each request one prompt of every pool, as text parts.
    let folder = dir.path().join("pools");
    std::fs::create_dir(&folder).unwrap();
    write(&folder, "b_passages.jsonl", &[r#"{"text": "I am a cat."}"#, r#"{"text": "I am a dog."}"#]);
    write(&folder, "a_queries.jsonl", &[r#"{"texts": [{"name": "query", "contents": ["Who are you?"]}]}"#]);
    let (out, bodies) = run(
        &folder,
        &dir.path().join("b"),
        &[
            "--custom-dataset-type",
            "random_pool",
            "--num-dataset-entries",
            "3",
            "--dataset-sampling-strategy",
            "sequential",
        ],
    );
    common::ok(&out);
    // Three conversations, and AIPerf's default bound of 10 requests: they are sent again in turn.
    assert_eq!(bodies.len(), 10);
    for b in &bodies {
        let parts = b["messages"][0]["content"].as_array().unwrap();
        assert_eq!(parts[0], json!({"type": "text", "text": "Who are you?"}));
        assert!(parts[1]["text"].as_str().unwrap().starts_with("I am a"), "{parts:?}");
    }
    // AIPerf sends several prompts to a completions endpoint as a batch: refused, with the way out.
    let (out, bodies) = run(
        &folder,
        &dir.path().join("c"),
        &["--custom-dataset-type", "random_pool", "--endpoint-type", "completions"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(bodies.is_empty());
    assert!(stderr(&out).contains("accepted is --endpoint-type chat"), "{}", stderr(&out));
    // Synthetic options other than the pool's size are refused.
    let (out, _) = run(&file, &dir.path().join("d"), &["--custom-dataset-type", "random_pool", "--isl", "100"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("AIPerf's synthetic workload options"), "{}", stderr(&out));
}

#[test]
fn a_config_files_dataset_path_and_format_read_the_file() {
    let mock = common::Mock::start(&["--log-bodies"]);
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "mt.jsonl", &[r#"{"session_id": "s", "turns": [{"text": "Hi"}, {"text": "Again"}]}"#]);
    let config = dir.path().join("c.yaml");
    std::fs::write(
        &config,
        format!(
            "benchmark:\n  model: m\n  endpoint: {{url: \"{}\", type: chat}}\n  dataset:\n    type: file\n    path: {}\n    format: multi_turn\n  profiling: {{type: concurrency, concurrency: 1, requests: 2}}\n",
            mock.url,
            dir.path().join("mt.jsonl").display()
        ),
    )
    .unwrap();
    let tok = common::tokenizer();
    let art = dir.path().join("art");
    let out = common::profile(
        &[
            "-f",
            config.to_str().unwrap(),
            "--tokenizer",
            &tok,
            "--ui-type",
            "none",
            "--artifact-dir",
            art.to_str().unwrap(),
        ],
        LIMIT,
    );
    common::ok(&out);
    let arrivals = mock.arrivals();
    assert_eq!(arrivals.len(), 2);
    let last = arrivals.iter().map(|a| a["body"]["messages"].as_array().unwrap().len()).max();
    assert_eq!(last, Some(3), "the second turn follows the first and its reply");
}

/// (session, turn) → (scheduled, end) in ns of a run's records.
fn turn_times(art: &Path) -> std::collections::BTreeMap<(String, u32), (u64, u64)> {
    let records = common::read_jsonl(&art.join("profile_export.jsonl"));
    common::assert_times_consistent(&records);
    records
        .iter()
        .map(common::record_of)
        .map(|r| ((r.session_id.unwrap_or_default(), r.turn), (r.scheduled_ns, r.end_ns)))
        .collect()
}

#[test]
fn the_inter_turn_delay_cap_shortens_the_delays_of_every_file_and_keeps_the_shorter_ones() {
    const MS: u64 = 1_000_000;
    let dir = tempfile::tempdir().unwrap();
    // Delays of a minute or more (the run would wait them uncapped) and short ones.
    let multi = write(
        dir.path(),
        "mt.jsonl",
        &[
            r#"{"session_id": "c", "turns": [{"text": "one", "output_length": 2}, {"text": "two", "delay": 60000, "output_length": 2}, {"text": "three", "delay": 20, "output_length": 2}]}"#,
        ],
    );
    let single = write(
        dir.path(),
        "st.jsonl",
        &[
            r#"{"text": "one", "session_id": "s", "output_length": 2}"#,
            r#"{"text": "two", "session_id": "s", "delay": 90000.5, "output_length": 2}"#,
        ],
    );
    let trace = write(
        dir.path(),
        "trace.jsonl",
        &[
            r#"{"session_id": "m", "timestamp": 0, "input_length": 10, "output_length": 2}"#,
            r#"{"session_id": "m", "delay": 120000, "input_length": 20, "output_length": 2}"#,
            r#"{"session_id": "m", "delay": 30, "input_length": 30, "output_length": 2}"#,
        ],
    );
    let cases: [(&Path, &[&str], &str, Vec<u64>); 4] = [
        (&multi, &[], "c", vec![50, 20]),
        (&single, &[], "s", vec![50]),
        (&trace, &[], "m", vec![50, 30]),
        // 0: each later turn leaves as the previous one ends.
        (&multi, &["--inter-turn-delay-cap-seconds", "0"], "c", vec![0, 0]),
    ];
    for (i, (file, extra, session, delays_ms)) in cases.into_iter().enumerate() {
        let art = dir.path().join(format!("run{i}"));
        let cap: &[&str] = if extra.is_empty() { &["--inter-turn-delay-cap-seconds", "0.05"] } else { extra };
        let requests = (delays_ms.len() + 1).to_string();
        let (out, _) = run(file, &art, &[cap, &["--streaming", "--request-count", &requests][..]].concat());
        common::ok(&out);
        let times = turn_times(&art);
        let t = |k: u32| times[&(session.to_string(), k)];
        assert_eq!(times.len(), delays_ms.len() + 1, "{times:?}");
        for (k, d) in delays_ms.iter().enumerate() {
            let k = k as u32;
            // Each later turn is due its (capped) delay after the previous one ended.
            assert_eq!(t(k + 1).0, t(k).1 + d * MS, "{file:?} turn {}: {times:?}", k + 1);
        }
        let summary = common::summary(&art);
        let want: f64 = cap[1].parse().unwrap();
        assert_eq!(summary["input_config"]["datasets"][0]["inter_turn_delay_cap_seconds"], want, "{summary}");
        assert_eq!(summary["aiperf_cli_config"]["inter_turn_delay_cap_seconds"], want);
        if cap[1] == "0.05" {
            assert!(stderr(&out).contains("Capped 1 inter-turn delays exceeding 0.05s"), "{}", stderr(&out));
        }
    }
}

/// `--osl`/`--osl-stddev` on a dataset file: turns without an `output_length` get AIPerf's
/// max-tokens draws for the seed, conversation by conversation (seed 42, mean 100, stddev 20:
/// 126, 66, … from `rng.init(42); rng.derive("composer.turn.max_tokens")
/// .sample_positive_normal_integer(100, 20)` in AIPerf 0.13.0's venv); a turn with one keeps it.
#[test]
fn osl_sets_the_output_length_of_turns_without_one_with_aiperfs_draws() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "st.jsonl",
        &[
            r#"{"text": "first of a", "session_id": "a"}"#,
            r#"{"text": "alone"}"#,
            r#"{"text": "second of a", "session_id": "a", "output_length": 4}"#,
        ],
    );
    let osl = ["--osl", "100", "--osl-stddev", "20.5", "--random-seed", "42", "--request-count", "3"];
    let (out, bodies) = run(&file, &dir.path().join("a"), &osl);
    common::ok(&out);
    let sent: Vec<(&Value, &Value)> =
        bodies.iter().map(|b| (&b["messages"][0]["content"], &b["max_completion_tokens"])).collect();
    assert_eq!(
        sent,
        [(&json!("first of a"), &json!(126)), (&json!("second of a"), &json!(4)), (&json!("alone"), &json!(66)),]
    );
    // A multi_turn conversation's turns draw in turn order.
    let mt = write(
        dir.path(),
        "mt.jsonl",
        &[r#"{"session_id": "c", "turns": [{"text": "one"}, {"text": "two", "output_length": 9}, {"text": "three"}]}"#],
    );
    let (out, bodies) = run(&mt, &dir.path().join("b"), &osl);
    common::ok(&out);
    let tokens: Vec<&Value> = bodies.iter().map(|b| &b["max_completion_tokens"]).collect();
    assert_eq!(tokens, [&json!(126), &json!(9), &json!(66)]);
    // A Mooncake trace's rows: those without an output length, each alone or by session.
    let trace = write(
        dir.path(),
        "trace.jsonl",
        &[
            r#"{"input_length": 10}"#,
            r#"{"input_length": 10, "output_length": 5}"#,
            r#"{"session_id": "x", "input_length": 10}"#,
        ],
    );
    let (out, bodies) = run(&trace, &dir.path().join("t"), &[&osl[..], &["--concurrency", "1"]].concat());
    common::ok(&out);
    let tokens: Vec<&Value> = bodies.iter().map(|b| &b["max_completion_tokens"]).collect();
    assert_eq!(tokens, [&json!(126), &json!(5), &json!(66)]);
    // A negative stddev is refused by name.
    let (out, bodies) = run(&file, &dir.path().join("c"), &["--osl", "10", "--osl-stddev=-1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(bodies.is_empty());
    assert!(stderr(&out).contains("--osl-stddev -1"), "{}", stderr(&out));
}
