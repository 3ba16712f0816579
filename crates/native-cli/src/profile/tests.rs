//! The replay engine (dispatcher, preparer, request tasks, records stage, phases) run against an
//! in-memory transport: sessions, the concurrency ceiling, cancellation at every phase, error
//! paths and token counting, without a network. Exact pacing in virtual time is tested on the
//! state machine itself (`aiperf_core::replay::dispatch`).
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aiperf_core::replay::schedule::Starts;
use aiperf_core::results::record::{RecordError, ServerUsage};
use aiperf_core::trace::{ParseOptions, read};
use serde_json::Value;

use super::control::Control;
use super::phases::Inputs;
use super::phases::replay;
use super::plan::ReplayPlan;
use super::prompt::PromptBuilder;
use super::transport::{Clock, Exchange, Outgoing, Transport};
use crate::exit;
use crate::io::tokenizer::load_tokenizer;

/// An in-memory server: answers after `ttft` with `tokens` chunks `itl` apart, fails or
/// over-produces on demand, and logs what it received.
#[derive(Clone, Default)]
struct Mem {
    ttft: Duration,
    itl: Duration,
    tokens: u64,
    /// Report this many completion tokens in usage instead of `tokens`.
    usage_tokens: Option<u64>,
    fail: bool,
    in_flight: Arc<AtomicUsize>,
    max_in_flight: Arc<AtomicUsize>,
    /// (sent at, body) of every request.
    log: Arc<Mutex<Vec<(u64, Value)>>>,
    /// Called with the number of requests sent so far, after each one is logged.
    on_send: Arc<Mutex<Option<OnSend>>>,
}

type OnSend = Box<dyn Fn(usize) + Send>;

impl Transport for Mem {
    async fn send(&self, req: Outgoing, clock: Clock) -> Exchange {
        let sent_ns = clock.now_ns();
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_in_flight.fetch_max(now, Ordering::SeqCst);
        let mut logged: Value = serde_json::from_slice(&req.body).unwrap();
        logged["x-request-id"] = Value::String(req.request_id);
        logged["x-correlation-id"] = Value::String(req.correlation_id);
        logged["before_zero_ns"] = Value::from(u64::try_from(clock.until(0).as_nanos()).unwrap_or(u64::MAX));
        let sent = {
            let mut log = self.log.lock().unwrap();
            log.push((sent_ns, logged));
            log.len()
        };
        if let Some(f) = self.on_send.lock().unwrap().as_ref() {
            f(sent);
        }
        let mut ex = Exchange { sent_ns, streaming: true, ..Default::default() };
        tokio::time::sleep(self.ttft).await;
        ex.first_byte_ns = Some(clock.now_ns());
        if self.fail {
            ex.error = Some(RecordError { kind: "http_status".into(), message: "HTTP 500: key sk-abcdef1234".into() });
        } else {
            for i in 0..self.tokens {
                if i > 0 {
                    tokio::time::sleep(self.itl).await;
                }
                ex.chunk_ns.push(clock.now_ns());
                ex.text.push_str(" hello");
            }
            ex.usage =
                ServerUsage { completion_tokens: Some(self.usage_tokens.unwrap_or(self.tokens)), ..Default::default() };
        }
        ex.end_ns = clock.now_ns();
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        ex
    }
}

struct Run {
    code: u8,
    records: Vec<Value>,
    summary: Value,
    _dir: tempfile::TempDir,
}

fn prompts() -> Arc<PromptBuilder> {
    static P: std::sync::OnceLock<Arc<PromptBuilder>> = std::sync::OnceLock::new();
    P.get_or_init(|| {
        let (tok, _) = load_tokenizer(None, "tiny-random", crate::io::tokenizer::MAIN).unwrap();
        Arc::new(PromptBuilder::new(tok, 512, 0).unwrap())
    })
    .clone()
}

/// The plan of a streaming replay of `t.jsonl` with `flags`.
fn plan_of(flags: &[&str]) -> ReplayPlan {
    let argv = [&["x", "-m", "m", "--streaming", "--input-file", "t.jsonl"], flags].concat();
    ReplayPlan::from_args(super::options::parse(argv).unwrap()).unwrap()
}

fn parse(trace: &str) -> aiperf_core::trace::Trace {
    read(trace.as_bytes(), ParseOptions::new("t.jsonl")).unwrap().trace
}

/// When a test stops or aborts a run.
#[derive(Clone, Copy)]
enum When {
    /// As the transport sends the n-th request (before it answers).
    Sent(usize),
    /// This long after the run starts.
    After(Duration),
}

/// Replays `trace` (JSONL text) over `mem` with `flags`; `stop`/`abort` cancel the run's tokens
/// then, as a first and second signal would.
fn run(trace: &str, mem: &Mem, flags: &[&str], stop: Option<When>, abort: Option<When>) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let art = dir.path().join("art");
    let plan = plan_of(&[&["--artifact-dir", art.to_str().unwrap()], flags].concat());
    std::fs::create_dir_all(&art).unwrap();
    let trace = parse(trace);
    let schedule = plan.schedule(&trace).unwrap();
    let inputs = Inputs {
        trace: Arc::new(trace),
        schedule: Arc::new(schedule),
        prompts: prompts(),
        tokenizer: "embedded".into(),
    };
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let control = Control::default();
    let signal = |c: &Control, abort: bool| {
        c.interrupted.store(true, Ordering::SeqCst);
        c.stop.cancel();
        if abort {
            c.abort.cancel();
        }
    };
    let mut at_send = Vec::new();
    for (when, abort) in [(stop, false), (abort, true)] {
        match when {
            Some(When::After(d)) => {
                let c = control.clone();
                rt.spawn(async move {
                    tokio::time::sleep(d).await;
                    signal(&c, abort);
                });
            }
            Some(When::Sent(n)) => at_send.push((n, abort)),
            None => {}
        }
    }
    if !at_send.is_empty() {
        let c = control.clone();
        *mem.on_send.lock().unwrap() = Some(Box::new(move |sent| {
            for &(n, abort) in &at_send {
                if sent == n {
                    signal(&c, abort);
                }
            }
        }));
    }
    let code = replay(&rt, &plan, inputs, mem.clone(), &control, Instant::now(), None).unwrap().status;
    let records = std::fs::read_to_string(art.join("profile_export.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            let mut rec = aiperf_core::results::record::RequestRecord::default();
            assert!(aiperf_core::results::line::read_line(l.as_bytes(), &mut rec).unwrap());
            // The times the line leaves to its reader, as the reader rebuilds them.
            v["metadata"]["scheduled_ns"] = rec.scheduled_ns.into();
            v["metadata"]["end_ns"] = rec.end_ns.into();
            v
        })
        .collect();
    let summary =
        serde_json::from_str(&std::fs::read_to_string(art.join("profile_export_aiperf.json")).unwrap()).unwrap();
    Run { code, records, summary, _dir: dir }
}

fn rows(n: usize, f: impl Fn(usize) -> String) -> String {
    (0..n).map(|i| f(i) + "\n").collect()
}

fn kinds(r: &Run) -> Vec<String> {
    r.records.iter().filter_map(|x| x["error"]["type"].as_str().map(str::to_owned)).collect()
}

#[test]
fn sessions_keep_turn_order_and_delays_and_expected_cache_is_per_request() {
    let trace = concat!(
        r#"{"session_id":"a","timestamp":0,"input_length":600,"output_length":2,"hash_ids":[1,2]}"#,
        "\n",
        r#"{"session_id":"a","delay":40,"input_length":700,"output_length":2,"hash_ids":[1,2,3]}"#,
        "\n",
        r#"{"session_id":"b","timestamp":10,"input_length":600,"output_length":2,"hash_ids":[1,9]}"#,
        "\n",
    );
    let mem = Mem { ttft: Duration::from_millis(5), tokens: 2, ..Default::default() };
    let r = run(trace, &mem, &[], None, None);
    assert_eq!(r.code, exit::SUCCESS);
    assert_eq!(r.records.len(), 3);
    let log = mem.log.lock().unwrap().clone();
    assert_eq!(log.len(), 3);
    let by_line =
        |line: u64| r.records.iter().find(|x| x["metadata"]["trace_line"] == line).unwrap()["metadata"].clone();
    let (a0, a1, b0) = (by_line(1), by_line(2), by_line(3));
    assert_eq!((a0["turn_index"].as_u64(), a1["turn_index"].as_u64()), (Some(0), Some(1)));
    // Turn 1 waits for turn 0 to complete, then its 40 ms delay.
    let gap_ms = (a1["scheduled_ns"].as_u64().unwrap() - a0["end_ns"].as_u64().unwrap()) as f64 / 1e6;
    assert!((gap_ms - 40.0).abs() < 0.01, "{gap_ms}");
    assert!(a1["sent_ns"].as_u64().unwrap() >= a1["scheduled_ns"].as_u64().unwrap());
    // Expected cached tokens on the cache state of each send: b shares block 1 with a.
    assert_eq!(a0["expected_cached_tokens"], 0);
    assert_eq!(b0["expected_cached_tokens"], 512);
    assert_eq!(a1["expected_cached_tokens"], 700);
    assert_eq!(r.summary["was_cancelled"], false);
    assert_eq!(r.summary["aiperf_cli_config"]["fixed_schedule"], true);
    // AIPerf's session naming in a fixed schedule; request ids are unique.
    let corr: Vec<&str> = log.iter().map(|(_, b)| b["x-correlation-id"].as_str().unwrap()).collect();
    assert_eq!(corr.iter().filter(|c| **c == "fixed-schedule-a").count(), 2);
    assert_eq!(corr.iter().filter(|c| **c == "fixed-schedule-b").count(), 1);
    let mut ids: Vec<&str> = log.iter().map(|(_, b)| b["x-request-id"].as_str().unwrap()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 3);
}

/// Time zero lies a little ahead of the start (so the first burst is handed off early): nothing is
/// sent before it, neither a scheduled burst at zero nor requests due as soon as possible, and a
/// scheduled request never leaves before its deadline.
#[test]
fn nothing_leaves_before_time_zero_or_its_deadline() {
    let burst = rows(12, |i| format!(r#"{{"timestamp": {}, "input_length": 5, "output_length": 1}}"#, (i / 6) * 5));
    let untimed = rows(12, |_| r#"{"input_length": 5, "output_length": 1}"#.to_owned());
    for (trace, flags) in [(&burst, &["--fixed-schedule"][..]), (&untimed, &["--concurrency", "4"][..])] {
        let mem = Mem { tokens: 1, ..Mem::default() };
        let r = run(trace, &mem, flags, None, None);
        assert_eq!(r.records.len(), 12, "{flags:?}");
        for (_, body) in mem.log.lock().unwrap().iter() {
            assert_eq!(body["before_zero_ns"], 0, "{flags:?}: sent before time zero");
        }
        for rec in &r.records {
            let m = &rec["metadata"];
            assert!(m["sent_ns"].as_u64() >= m["scheduled_ns"].as_u64(), "{flags:?}: sent before its deadline: {m}");
        }
    }
}

#[test]
fn the_concurrency_ceiling_holds_for_sessions_and_requests() {
    let trace = rows(24, |i| format!(r#"{{"session_id":"s{}","input_length":10,"output_length":2}}"#, i / 3));
    let mem = Mem { ttft: Duration::from_millis(4), tokens: 2, ..Default::default() };
    let r = run(&trace, &mem, &["--concurrency", "3"], None, None);
    assert_eq!(r.records.len(), 24);
    assert!(mem.max_in_flight.load(Ordering::SeqCst) <= 3);
    assert_eq!(r.summary["request_count"]["avg"], 24.0);
}

#[test]
fn stopping_during_the_measurement_sends_nothing_more_and_records_everything_sent() {
    let trace = rows(400, |i| format!(r#"{{"timestamp":{},"input_length":10,"output_length":2}}"#, i * 10));
    let mem = Mem { ttft: Duration::from_millis(2), tokens: 2, ..Default::default() };
    let r = run(&trace, &mem, &[], Some(When::Sent(10)), None);
    assert_eq!(r.code, exit::INTERRUPTED);
    // Requests already handed over when the stop came still leave; the 4 s schedule does not.
    let sent = mem.log.lock().unwrap().len();
    assert!((10..400).contains(&sent), "{sent} sent");
    assert_eq!(r.records.len(), sent);
    assert_eq!(r.summary["was_cancelled"], true);
}

#[test]
fn stopping_during_the_warmup_measures_nothing() {
    let trace = rows(5, |i| format!(r#"{{"timestamp":{},"input_length":10,"output_length":2}}"#, i * 10));
    let mem = Mem { ttft: Duration::from_millis(100), tokens: 1, ..Default::default() };
    let r = run(
        &trace,
        &mem,
        &["--warmup-request-count", "50", "--concurrency", "1", "--fixed-schedule"],
        Some(When::Sent(2)),
        None,
    );
    assert_eq!(r.code, exit::INTERRUPTED);
    // One at a time: the stop came while the second warm-up request was in flight.
    assert_eq!(mem.log.lock().unwrap().len(), 2);
    assert!(r.records.is_empty());
}

#[test]
fn aborting_during_the_drain_records_in_flight_requests_as_cancelled() {
    // The answers take 60 s and the grace period is longer: only the abort can cancel them
    // (left alone they would succeed).
    let trace = rows(6, |_| r#"{"input_length":10,"output_length":2}"#.to_string());
    let mem = Mem { ttft: Duration::from_secs(60), tokens: 1, ..Default::default() };
    let flags = ["--concurrency", "6", "--benchmark-grace-period", "600"];
    let r = run(&trace, &mem, &flags, Some(When::Sent(6)), Some(When::After(Duration::from_millis(200))));
    assert_eq!(r.records.len(), 6);
    assert_eq!(kinds(&r), vec!["cancelled"; 6]);
}

#[test]
fn the_grace_period_ends_the_drain() {
    let trace = rows(3, |_| r#"{"input_length":10,"output_length":2}"#.to_string());
    let mem = Mem { ttft: Duration::from_secs(60), tokens: 1, ..Default::default() };
    let r = run(&trace, &mem, &["--concurrency", "3", "--benchmark-grace-period", "0.2"], Some(When::Sent(3)), None);
    assert_eq!(kinds(&r), vec!["cancelled"; 3]);
}

#[test]
fn a_run_where_every_request_failed_exits_1_and_secrets_are_masked() {
    let trace = rows(4, |_| r#"{"input_length":10,"output_length":2}"#.to_string());
    let mem = Mem { fail: true, ..Default::default() };
    let r = run(&trace, &mem, &["--concurrency", "2", "--api-key", "sk-abcdef1234"], None, None);
    assert_eq!(r.code, exit::NO_SUCCESS);
    assert_eq!(kinds(&r), vec!["http_status"; 4]);
    for x in &r.records {
        let m = x["error"]["message"].as_str().unwrap();
        assert!(!m.contains("sk-abcdef1234") && m.contains("<redacted>"), "{m}");
    }
}

#[test]
fn server_usage_is_counted_once_and_over_production_is_an_error() {
    let trace = rows(2, |_| r#"{"input_length":10,"output_length":3}"#.to_string());
    // The server says 5 tokens for max_tokens 3, but sent 3 chunks.
    let mem = Mem { ttft: Duration::from_millis(1), tokens: 3, usage_tokens: Some(5), ..Default::default() };
    let r = run(&trace, &mem, &["--concurrency", "1", "--use-server-token-count"], None, None);
    assert_eq!(kinds(&r), vec!["max_tokens_exceeded"; 2]);
    // Counted by the client, the server's own usage still reveals the over-production.
    let r = run(&trace, &mem, &["--concurrency", "1"], None, None);
    assert!(kinds(&r).iter().all(|k| k == "max_tokens_exceeded"));
    let mem = Mem { ttft: Duration::from_millis(1), tokens: 3, usage_tokens: Some(3), ..Default::default() };
    let r = run(&trace, &mem, &["--concurrency", "1", "--use-server-token-count"], None, None);
    assert!(kinds(&r).is_empty());
    for x in &r.records {
        // The server's count is used and the client did not count on top of it.
        assert_eq!(x["metrics"]["output_sequence_length"]["value"], 3.0);
        assert!(x["metadata"].get("output_tokens").is_none());
    }
}

#[test]
fn the_client_count_is_the_metric_by_default_with_the_server_count_beside_it() {
    let trace = rows(4, |_| r#"{"input_length":10,"output_length":9}"#.to_string());
    // 4 chunks of " hello" (4 tokens by the tokenizer); the server says it generated 6.
    let mem = Mem { ttft: Duration::from_millis(1), tokens: 4, usage_tokens: Some(6), ..Default::default() };
    let r = run(&trace, &mem, &["--concurrency", "2"], None, None);
    for x in &r.records {
        assert_eq!(x["metrics"]["output_sequence_length"]["value"], 4.0);
        assert_eq!(x["metrics"]["usage_completion_tokens"]["value"], 6.0);
        assert_eq!(x["metrics"]["usage_completion_tokens_diff_pct"]["value"], 50.0);
        assert_eq!(x["metadata"]["output_tokens"], 4);
        // The usage_* metrics carry the server's counts; the line reader rebuilds the usage.
        assert!(x["metadata"]["usage"].is_null());
        let line = serde_json::to_vec(x).unwrap();
        let rec = aiperf_core::results::line::parse_serde(&line).unwrap().unwrap();
        assert_eq!(rec.usage.completion_tokens, Some(6));
    }
    let check = &r.summary["output_token_count_check"];
    assert_eq!((check["requests"].as_u64(), check["client_output_tokens"].as_u64()), (Some(4), Some(16)));
    assert_eq!(check["server_output_tokens"], 24);
    assert!((check["relative_difference"].as_f64().unwrap() + 1.0 / 3.0).abs() < 1e-12);
    assert_eq!(r.summary["total_osl"]["avg"], 16.0);
    assert_eq!(r.summary["total_usage_completion_tokens"]["avg"], 24.0);
    // --client-token-count is the default said aloud.
    let r = run(&trace, &mem, &["--concurrency", "2", "--client-token-count"], None, None);
    assert!(r.records.iter().all(|x| x["metrics"]["output_sequence_length"]["value"] == 4.0));
}

#[test]
fn a_request_count_past_the_trace_reuses_sessions_lazily() {
    let trace = rows(3, |i| format!(r#"{{"input_length":{},"output_length":1,"hash_ids":[{i}]}}"#, 10 + i));
    let mem = Mem { tokens: 1, ..Default::default() };
    let r = run(&trace, &mem, &["--concurrency", "4", "--request-count", "10"], None, None);
    assert_eq!(r.records.len(), 10);
    let expected: Vec<u64> =
        r.records.iter().filter_map(|x| x["metadata"]["expected_cached_tokens"].as_u64()).collect();
    // The first pass finds nothing cached; reused sessions find their own blocks.
    assert_eq!(expected.iter().filter(|&&e| e == 0).count(), 3);
}

#[test]
fn a_benchmark_duration_with_concurrency_does_not_build_the_schedule_up_front() {
    let trace = rows(2, |_| r#"{"input_length":10,"output_length":1}"#.to_string());
    let flags = ["--concurrency", "4", "--benchmark-duration", "1"];
    // The session runs are generated as they are dispatched, reusing the sessions without end.
    let schedule = plan_of(&flags).schedule(&parse(&trace)).unwrap();
    assert!(matches!(&schedule.starts, Starts::Generated(g) if !g.once), "{:?}", schedule.starts);
    // The duration ends the run, the two rows reused.
    let mem = Mem { ttft: Duration::from_millis(5), tokens: 1, ..Default::default() };
    let r = run(&trace, &mem, &flags, None, None);
    assert_eq!(r.code, exit::SUCCESS);
    assert!(r.records.len() > 2, "{}", r.records.len());
    assert_eq!(r.summary["was_cancelled"], false);
}

#[test]
fn connections_are_sized_for_the_first_burst() {
    use aiperf_core::replay::schedule::{Timing, build};
    let text =
        rows(40, |i| format!(r#"{{"timestamp":{},"input_length":10,"output_length":1}}"#, (i / 8) * 1000 + i % 3));
    let trace = read(text.as_bytes(), ParseOptions::new("t.jsonl")).unwrap().trace;
    let fixed = Timing::Fixed { start_offset_ms: None, end_offset_ms: None, auto_offset: true };
    let schedule = build(&trace, fixed, None).unwrap();
    assert_eq!(super::phases::connections_needed(&schedule, None), 8);
    assert_eq!(super::phases::connections_needed(&schedule, Some(3)), 3);
    let asap = build(&trace, Timing::AsFastAsAllowed, None).unwrap();
    assert_eq!(super::phases::connections_needed(&asap, Some(1000)), 256);
}

/// The chat messages of every logged request, in sending order, as (role, content).
fn messages_of(mem: &Mem) -> Vec<Vec<(String, String)>> {
    let log = mem.log.lock().unwrap().clone();
    log.iter()
        .map(|(_, b)| {
            b["messages"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| (m["role"].as_str().unwrap().to_owned(), m["content"].as_str().unwrap().to_owned()))
                .collect()
        })
        .collect()
}

#[test]
fn later_turns_carry_earlier_prompts_and_the_live_replies() {
    let trace = concat!(
        r#"{"session_id":"a","timestamp":0,"input_length":30,"output_length":3,"hash_ids":[1]}"#,
        "\n",
        r#"{"session_id":"a","delay":0,"input_length":20,"output_length":3,"hash_ids":[2]}"#,
        "\n",
        r#"{"session_id":"a","delay":0,"input_length":10,"output_length":3,"hash_ids":[3]}"#,
        "\n",
    );
    let mem = Mem { ttft: Duration::from_millis(1), tokens: 3, ..Default::default() };
    let r = run(trace, &mem, &[], None, None);
    assert_eq!(r.code, exit::SUCCESS);
    let sent = messages_of(&mem);
    assert_eq!(sent.len(), 3);
    fn roles(m: &[(String, String)]) -> Vec<&str> {
        m.iter().map(|(r, _)| r.as_str()).collect()
    }
    assert_eq!(roles(&sent[0]), ["user"]);
    assert_eq!(roles(&sent[1]), ["user", "assistant", "user"]);
    assert_eq!(roles(&sent[2]), ["user", "assistant", "user", "assistant", "user"]);
    // The earlier prompts are the ones sent, the replies are what the server answered.
    assert_eq!(sent[1][0], sent[0][0]);
    assert_eq!(sent[2][..3], sent[1][..]);
    assert_eq!(sent[1][1].1, " hello hello hello");
    assert_eq!(sent[2][3].1, " hello hello hello");
    // The client's prompt count covers the history: 30 + 3 + 20 tokens for the second turn.
    let isl = |line: u64| {
        r.records.iter().find(|x| x["metadata"]["trace_line"] == line).unwrap()["metadata"]["input_tokens"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(isl(1), 30);
    let reply = prompts().count(" hello hello hello").unwrap();
    assert_eq!(isl(2), 30 + reply + 20);
    assert_eq!(isl(3), 30 + reply + 20 + reply + 10);
    assert_eq!(r.summary["aiperf_cli_config"]["turn_history"], "live");
}

#[test]
fn turn_history_none_sends_each_prompt_alone_and_messages_rows_are_sent_as_written() {
    let trace = concat!(
        r#"{"session_id":"a","timestamp":0,"input_length":30,"output_length":3}"#,
        "\n",
        r#"{"session_id":"a","delay":0,"input_length":20,"output_length":3}"#,
        "\n",
    );
    let mem = Mem { ttft: Duration::from_millis(1), tokens: 3, ..Default::default() };
    let r = run(trace, &mem, &["--turn-history", "none"], None, None);
    assert_eq!(r.code, exit::SUCCESS);
    let sent = messages_of(&mem);
    assert_eq!(sent.iter().map(Vec::len).collect::<Vec<_>>(), [1, 1]);

    let trace = concat!(
        r#"{"session_id":"m","timestamp":0,"messages":[{"role":"user","content":"hi"}],"output_length":3}"#,
        "\n",
        r#"{"session_id":"m","delay":0,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"RECORDED"},{"role":"user","content":"more"}],"output_length":3}"#,
        "\n",
    );
    let mem = Mem { ttft: Duration::from_millis(1), tokens: 3, ..Default::default() };
    let r = run(trace, &mem, &[], None, None);
    assert_eq!(r.code, exit::SUCCESS);
    let sent = messages_of(&mem);
    assert_eq!(sent[1][1], ("assistant".to_owned(), "RECORDED".to_owned()));
    assert_eq!(sent[1].len(), 3);
}

#[test]
fn a_common_start_in_the_past_or_beyond_thirty_days_is_refused() {
    let now = u64::try_from(super::clock::unix_now_ns()).unwrap_or(u64::MAX);
    let day = 86_400_000_000_000u64;
    assert!(super::clock::check_start_ahead(now + day, Instant::now()).is_ok());
    let far = super::clock::check_start_ahead(now + 31 * day, Instant::now()).map_err(|e| e.to_string());
    assert!(far.as_ref().is_err_and(|e| e.contains("days ahead") && e.contains("30 days")), "{far:?}");
    assert!(super::clock::check_start_ahead(now - day, Instant::now()).is_err());
}

#[test]
fn requests_chosen_for_cancellation_are_abandoned_after_the_delay_and_warmup_ones_never() {
    let trace = rows(4, |_| r#"{"input_length":10,"output_length":2}"#.to_string());
    let mem = Mem { ttft: Duration::from_millis(200), tokens: 1, ..Default::default() };
    let flags = [
        "--concurrency",
        "4",
        "--warmup-request-count",
        "2",
        "--request-cancellation-rate",
        "100",
        "--request-cancellation-delay",
        "0.01",
    ];
    let r = run(&trace, &mem, &flags, None, None);
    // The warm-up's two requests ran to their end; every measured one was sent, then abandoned.
    assert_eq!(mem.log.lock().unwrap().len(), 6);
    assert_eq!(kinds(&r), vec!["cancelled"; 4]);
    for rec in &r.records {
        assert_eq!(rec["error"]["message"], "Request cancelled 0.010s after being sent", "{rec}");
        assert_eq!(rec["metadata"]["was_cancelled"], true);
    }
    assert_eq!(r.summary["error_request_count"]["avg"], 4.0);
}
