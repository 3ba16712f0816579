use super::engine::Slots;
use super::*;
use crate::analysis::analyze;
use crate::replay::schedule::{Timing, build};
use crate::results::record::RequestRecord;
use crate::trace::{Input, Number, Row, Trace};
use proptest::prelude::*;

const BS: u32 = 16;

/// Rows far enough apart (1,000 s) that each ends before the next arrives.
fn sequential(rows: &[Vec<u64>]) -> Trace {
    rows.iter()
        .enumerate()
        .map(|(i, ids)| {
            let mut row = Row::new(Input::Length(ids.len() as i64 * i64::from(BS)));
            row.timestamp = Some(Number::Int(i as i64 * 1_000_000));
            row.output_length = Some(4);
            (row, ids.clone())
        })
        .collect()
}

/// The requests handed over, checked against the earliest arrival last told.
#[derive(Default)]
struct Handed {
    requests: Vec<(usize, SimRequest)>,
    arrivals_from: u64,
    /// Whether the simulation keeps none of its requests.
    keeps_none: bool,
}

impl Observer for Handed {
    fn keep_requests(&self) -> bool {
        !self.keeps_none
    }

    fn ended(&mut self, i: usize, r: &SimRequest) {
        assert!(
            r.arrival_ns >= self.arrivals_from,
            "request {i} arrived at {} ns, before {} ns told",
            r.arrival_ns,
            self.arrivals_from
        );
        self.requests.push((i, *r));
    }

    fn arrivals_from(&mut self, ns: u64) {
        self.arrivals_from = ns;
    }
}

/// The simulation of `trace` on `cluster`, checking the requests it hands over as they end:
/// each one once, as its final record, in the order of their ends, then of their starts, none
/// arrived before the earliest arrival told before it; every request in once told so.
fn run(trace: &Trace, cluster: &Cluster) -> Simulation {
    let timing = Timing::Fixed { start_offset_ms: None, end_offset_ms: None, auto_offset: true };
    let schedule = Arc::new(build(trace, timing, None).unwrap());
    let mut ids = BlockIds::of(trace).unwrap();
    ids.mark_once(&schedule);
    let mut observer = Handed::default();
    let sim = simulate_numbered(trace.rows(), Arc::clone(&schedule), &ids, cluster, &mut observer).unwrap();
    assert_eq!(observer.arrivals_from, u64::MAX, "every request in, and told so");
    let observed = simulate_observed(trace, Arc::clone(&schedule), cluster, &mut |_, _| {}).unwrap();
    assert_eq!(observed, sim);
    // Keeping none of its requests, the simulation hands over the same ones in the same order.
    let mut keeping_none = Handed { keeps_none: true, ..Handed::default() };
    let lean = simulate_numbered(trace.rows(), schedule, &ids, cluster, &mut keeping_none).unwrap();
    assert_eq!(keeping_none.requests, observer.requests);
    assert_eq!(lean, Simulation { requests: Vec::new(), ..sim.clone() });
    let handed = observer.requests;
    let mut by_end: Vec<(u64, usize)> = sim.requests.iter().enumerate().map(|(i, r)| (r.end_ns, i)).collect();
    by_end.sort_unstable();
    let order: Vec<usize> = handed.iter().map(|&(i, _)| i).collect();
    assert_eq!(order, by_end.iter().map(|&(_, i)| i).collect::<Vec<_>>());
    for (i, r) in &handed {
        assert_eq!(r, &sim.requests[*i]);
    }
    sim
}

fn one(kv_blocks: Option<u64>) -> Cluster {
    Cluster { block_size: BS, kv_blocks, ..Cluster::default() }
}

/// Rows of 1..8 ids drawn from a small alphabet, chained like Mooncake ids (a row continues a
/// shared prefix or starts its own).
fn rows() -> impl Strategy<Value = Vec<Vec<u64>>> {
    proptest::collection::vec(proptest::collection::vec(0u64..12, 1..8), 1..60)
}

/// Each of the trace's `rows` rows is one request, and every request's times are in order.
fn each_row_once_in_order(sim: &Simulation, rows: usize) -> Result<(), TestCaseError> {
    prop_assert_eq!(sim.requests.len(), rows);
    let mut seen: Vec<u32> = sim.requests.iter().map(|r| r.row).collect();
    seen.sort_unstable();
    prop_assert_eq!(seen, (0..rows as u32).collect::<Vec<_>>());
    for r in &sim.requests {
        prop_assert!(
            r.arrival_ns <= r.start_ns && r.start_ns < r.first_token_ns && r.first_token_ns <= r.end_ns,
            "{:?}",
            r
        );
    }
    Ok(())
}

proptest! {
    #[test]
    fn unbounded_single_replica_matches_the_theoretical_hit_rate(rows in rows()) {
        let trace = sequential(&rows);
        let a = analyze(&trace, BS);
        let sim = run(&trace, &one(None));
        let total = sim.total();
        prop_assert!((total.row_hit_rate() - a.cache_hit_rate).abs() < 1e-12, "{} vs {}", total.row_hit_rate(), a.cache_hit_rate);
        let unbounded = a.lru_hit_rate_curve.last().map_or(0.0, |p| p.hit_rate);
        prop_assert!((total.row_hit_rate() - unbounded).abs() < 1e-12);
    }

    #[test]
    fn lru_at_capacity_matches_the_what_if_curve(rows in rows()) {
        let trace = sequential(&rows);
        let a = analyze(&trace, BS);
        let longest = rows.iter().map(Vec::len).max().unwrap_or(0) as u64;
        for point in &a.lru_hit_rate_curve {
            // The curve lets a row longer than the cache evict its own blocks; the simulator
            // pins a running request's blocks, so the two agree for capacities ≥ the longest row.
            let Some(c) = point.capacity_blocks.filter(|&c| c >= longest) else { continue };
            // The curve counts prompt blocks only.
            let sim = run(&trace, &Cluster { output_blocks: false, ..one(Some(c)) });
            prop_assert!((sim.total().row_hit_rate() - point.hit_rate).abs() < 1e-12, "capacity {}: {} vs {}", c, sim.total().row_hit_rate(), point.hit_rate);
        }
    }

    #[test]
    fn every_request_ends_once_and_capacity_holds(rows in rows(), replicas in 1u32..4, cap in 8u64..20, router in 0usize..5, lfu: bool, no_decode_time: bool) {
        // Overlapping arrivals: 10 ms apart.
        let mut trace = sequential(&rows);
        let mut t2 = Trace::new();
        for (i, (row, ids)) in trace.iter().enumerate() {
            let mut r = row.clone();
            r.timestamp = Some(Number::Int(i as i64 * 10));
            t2.push(r, ids.iter().copied());
        }
        trace = t2;
        let routers = [Router::RoundRobin, Router::Random, Router::SessionAffinity, Router::LeastLoaded, Router::KvAware];
        let cluster = Cluster {
            replicas, kv_blocks: Some(cap), router: routers[router], max_running: Some(3),
            policy: if lfu { Policy::Lfu } else { Policy::Lru }, sample_every_ns: 5_000_000, ..one(None)
        };
        let cluster = match no_decode_time {
            true => Cluster { engine: Engine { decode_fixed_us: 0.0, decode_per_running_us: 0.0, ..Engine::default() }, ..cluster },
            false => cluster,
        };
        let sim = run(&trace, &cluster);
        each_row_once_in_order(&sim, rows.len())?;
        for s in &sim.samples {
            prop_assert!(s.blocks <= cap && s.running <= 3);
        }
    }
}

#[test]
fn session_turns_wait_for_the_previous_turn_plus_its_delay() {
    let mut trace = Trace::new();
    for (turn, ids) in [vec![1u64, 2], vec![1, 2, 3]].into_iter().enumerate() {
        let mut row = Row::new(Input::Length(ids.len() as i64 * i64::from(BS)));
        row.session_id = Some("s".into());
        row.output_length = Some(3);
        if turn == 0 {
            row.timestamp = Some(Number::Int(0));
        } else {
            row.delay = Some(Number::Int(100));
        }
        trace.push(row, ids);
    }
    let sim = run(&trace, &one(None));
    let [first, second] = sim.requests[..] else { panic!("two requests") };
    assert_eq!(second.arrival_ns, first.end_ns + 100_000_000);
    // Default engine: 10 ms + 50 µs × 32 tokens to the first token, then 2 × (15 + 0.5) ms.
    assert_eq!(first.first_token_ns, 11_600_000);
    assert_eq!(first.end_ns, 11_600_000 + 2 * 15_500_000);
    assert_eq!((second.hit_blocks, second.cached_tokens), (2, 32));
    assert_eq!(second.first_token_ns - second.start_ns, 10_800_000);
}

#[test]
fn kv_aware_routes_to_the_replica_holding_the_prefix() {
    // Two prompts with different prefixes, then the first again: it goes where its prefix is.
    let trace: Trace = [(0, vec![1u64, 2, 3, 4]), (1, vec![7, 8, 9, 10]), (1000, vec![1, 2, 3, 4, 5])]
        .into_iter()
        .map(|(ts, ids)| {
            let mut row = Row::new(Input::Length(ids.len() as i64 * i64::from(BS)));
            row.timestamp = Some(Number::Int(ts));
            row.output_length = Some(1);
            (row, ids)
        })
        .collect();
    let cluster = Cluster { replicas: 2, ..one(None) };
    let sim = run(&trace, &cluster);
    let replica_of = |row: u32| sim.requests.iter().find(|r| r.row == row).map(|r| r.replica);
    assert_ne!(replica_of(0), replica_of(1));
    assert_eq!(replica_of(2), replica_of(0));
    assert_eq!(sim.requests.iter().find(|r| r.row == 2).map(|r| r.hit_blocks), Some(4));
    // Round robin sends the third to the first replica too, but least-loaded (both idle) too.
    let rr = run(&trace, &Cluster { router: Router::RoundRobin, ..cluster });
    assert_eq!(rr.requests.iter().map(|r| r.replica).collect::<Vec<_>>(), vec![0, 1, 0]);
}

#[test]
fn a_full_replica_queues_requests_in_order() {
    let trace: Trace = (0..3)
        .map(|i| {
            let mut row = Row::new(Input::Length(64));
            row.timestamp = Some(Number::Int(0));
            row.output_length = Some(2);
            (row, vec![i * 10, i * 10 + 1, i * 10 + 2, i * 10 + 3])
        })
        .collect();
    let sim = run(&trace, &Cluster { kv_blocks: Some(8), max_running: Some(4), ..one(None) });
    // Two fit beside each other; the third waits for the first to end.
    let third = sim.requests.iter().find(|r| r.row == 2).copied().unwrap();
    let first_end = sim.requests.iter().filter(|r| r.row < 2).map(|r| r.end_ns).min().unwrap();
    assert_eq!(third.start_ns, first_end);
    assert_eq!(sim.replicas[0].peak_waiting, 1);
    // The third evicts the first's 4 blocks for its prompt, and one of the second's for the
    // block its output needs; the first two found no room for theirs (all 8 pinned).
    assert_eq!(sim.replicas[0].evictions, 5);
}

#[test]
fn output_blocks_follow_vllm_slots() {
    // A prompt of whole blocks: the first output token fed takes a new block at once.
    assert_eq!(OutputBlocks::new(128, 1, 4, 128), OutputBlocks { count: 1, first_token: 1, last_partial: true });
    // One output token is never fed: nothing more.
    assert_eq!(OutputBlocks::new(128, 1, 1, 128), OutputBlocks { count: 0, first_token: 1, last_partial: false });
    // A partial last block is filled first: 28 output tokens fed after a 228-token prompt end
    // at position 256, and the 29th (position 256) needs a block.
    assert_eq!(OutputBlocks::new(228, 2, 28, 128), OutputBlocks { count: 0, first_token: 29, last_partial: true });
    assert_eq!(OutputBlocks::new(228, 2, 29, 128), OutputBlocks { count: 0, first_token: 29, last_partial: false });
    assert_eq!(OutputBlocks::new(228, 2, 30, 128), OutputBlocks { count: 1, first_token: 29, last_partial: true });
    assert_eq!(OutputBlocks::new(100, 1, 29, 128), OutputBlocks { count: 0, first_token: 29, last_partial: false });
    assert_eq!(OutputBlocks::new(0, 0, 300, 128), OutputBlocks { count: 3, first_token: 1, last_partial: true });
    // More hash blocks than the prompt's tokens need: their room comes first.
    assert_eq!(OutputBlocks::new(100, 3, 300, 128).count, 1);
}

#[test]
fn an_output_block_takes_room_and_goes_first_when_partial() {
    // Capacity 3: [1, 2] and its output block fill it. Released tail first, the partial output
    // block goes first, then 2, then 1: [7] takes the output block's room for its prompt and
    // 2's for its own output, so [1, 2, 3] finds 1 alone. Counting prompts only, [7] evicts
    // nothing and 1 and 2 both hit.
    let trace = sequential(&[vec![1, 2], vec![7], vec![1, 2, 3]]);
    let sim = run(&trace, &one(Some(3)));
    assert_eq!(sim.requests.iter().map(|r| r.hit_blocks).collect::<Vec<_>>(), vec![0, 0, 1]);
    assert_eq!(sim.replicas[0].peak_blocks, 3);
    let prompts_only = run(&trace, &Cluster { output_blocks: false, ..one(Some(3)) });
    assert_eq!(prompts_only.requests.iter().map(|r| r.hit_blocks).collect::<Vec<_>>(), vec![0, 0, 2]);
}

#[test]
fn gigabytes_become_blocks() {
    // 128 KiB per token (an 8B model in fp16), 16-token blocks: 2 MiB a block.
    assert_eq!(blocks_for_gb(2.097152, 131_072, 16), 1000);
}

#[test]
fn replicas_are_bounded() {
    let trace = sequential(&[vec![1, 2]]);
    let timing = Timing::Fixed { start_offset_ms: None, end_offset_ms: None, auto_offset: true };
    let schedule = Arc::new(build(&trace, timing, None).unwrap());
    for replicas in [0, MAX_REPLICAS + 1] {
        let err = simulate(&trace, schedule.clone(), &Cluster { replicas, ..one(None) }).unwrap_err();
        assert_eq!(err.to_string(), format!("replicas must be 1 to 4096, got {replicas}"));
    }
    assert!(simulate(&trace, schedule, &Cluster { replicas: MAX_REPLICAS, ..one(None) }).is_ok());
}

#[test]
fn the_engine_computes_the_last_prompt_token_again() {
    // vLLM's rule: a fully cached prompt of whole blocks hits one block less; a partial last
    // block never hits; an empty prompt hits nothing.
    assert_eq!(engine_cached_tokens(4, 64, 16), 48);
    assert_eq!(engine_cached_tokens(4, 65, 16), 64);
    assert_eq!(engine_cached_tokens(5, 70, 16), 64);
    assert_eq!(engine_cached_tokens(2, 64, 16), 32);
    assert_eq!(engine_cached_tokens(1, 1, 1), 0);
    assert_eq!(engine_cached_tokens(3, 0, 16), 0);
    // The same row twice: the second finds every block but prefills the last one.
    let trace = sequential(&[vec![1, 2, 3], vec![1, 2, 3]]);
    let sim = run(&trace, &one(None));
    let second = sim.requests.iter().find(|r| r.row == 1).unwrap();
    assert_eq!((second.hit_blocks, second.cached_tokens), (3, 2 * u64::from(BS)));
    assert_eq!(sim.total().row_hit_rate(), 0.5);
}

#[test]
fn output_blocks_without_time_between_tokens_are_taken_before_the_end() {
    // No decoding time: every output block is due at the request's end, and is taken before the
    // end frees the request's blocks and its place (2 prompt blocks of 16 tokens and 100 output
    // tokens: 131 tokens fed, 9 blocks). Requests that do not overlap then hit and evict as with
    // a nanosecond between tokens.
    let rows: Trace = sequential(&[vec![1, 2], vec![3, 4], vec![1, 2], vec![3, 4]])
        .iter()
        .map(|(r, ids)| {
            let mut r = r.clone();
            r.output_length = Some(100);
            (r, ids.to_vec())
        })
        .collect();
    let at = |decode_fixed_us: f64| {
        let engine = Engine { decode_fixed_us, decode_per_running_us: 0.0, ..Engine::default() };
        run(&rows, &Cluster { engine, kv_blocks: Some(10), ..one(None) })
    };
    let (none, nanosecond) = (at(0.0), at(0.001));
    assert!(none.requests.iter().all(|r| r.first_token_ns == r.end_ns));
    let hits = |s: &Simulation| s.requests.iter().map(|r| r.hit_blocks).collect::<Vec<_>>();
    assert_eq!(hits(&none), hits(&nanosecond));
    assert_eq!(none.replicas[0].evictions, nanosecond.replicas[0].evictions);
    assert_eq!(none.replicas[0].peak_blocks, 10);
}

/// A step engine of round numbers: 1 ms a step, 10 µs a prompt token, 100 µs a decode token.
fn stepped(max_batch_tokens: u32) -> Cluster {
    let steps = Steps {
        max_batch_tokens,
        fixed_us: 1000.0,
        per_prefill_token_us: 10.0,
        per_decode_token_us: 100.0,
        order: StepOrder::Vllm,
    };
    Cluster { steps: Some(steps), ..one(None) }
}

/// Rows arriving at `at_us` with their hash ids, prompt tokens and output tokens.
fn arrivals(rows: &[(i64, Vec<u64>, i64, u64)]) -> Trace {
    let mut trace = Trace::new();
    for (at_us, ids, input, output) in rows {
        let mut row = Row::new(Input::Length(*input));
        row.timestamp = Some(Number::Float(*at_us as f64 / 1000.0));
        row.output_length = Some(*output);
        trace.push(row, ids.iter().copied());
    }
    trace
}

#[test]
fn a_step_computes_the_prompt_then_one_token_a_step() {
    let trace = arrivals(&[(0, vec![1, 2], 32, 3)]);
    let sim = run(&trace, &stepped(2048));
    let r = sim.requests[0];
    // 1 ms + 32 × 10 µs to the first token, then two decode steps of 1.1 ms.
    assert_eq!((r.start_ns, r.first_token_ns, r.end_ns, r.itl_ns), (0, 1_320_000, 3_520_000, 1_100_000));
    // A budget of 16 tokens computes the prompt in two steps.
    let sim = run(&trace, &stepped(16));
    assert_eq!(sim.requests[0].first_token_ns, 2 * 1_160_000);
}

#[test]
fn prefills_share_steps_with_decoding_requests() {
    // The second arrives during the first's prefill step, waits for it, then computes its prompt
    // in the step that decodes the first's second token.
    let trace = arrivals(&[(0, vec![1, 2], 32, 3), (500, vec![3, 4], 32, 2)]);
    let sim = run(&trace, &stepped(2048));
    let [a, b] = sim.requests[..] else { panic!("two requests") };
    assert_eq!(a.first_token_ns, 1_320_000);
    assert_eq!((b.start_ns, b.first_token_ns), (1_320_000, 1_320_000 + 1_420_000));
    // The first's second token comes out of the same step; its third beside the second's.
    assert_eq!(a.end_ns, 2_740_000 + 1_200_000);
    assert_eq!(b.end_ns, a.end_ns);
    // A budget of 20 tokens: the first's prompt in two steps; the second starts in the first's
    // second prefill step (8 tokens), then computes 19 and 5 beside the first's decode tokens.
    let sim = run(&trace, &stepped(20));
    let b = sim.requests[1];
    assert_eq!((b.start_ns, b.first_token_ns), (1_200_000, 1_200_000 + 1_200_000 + 1_290_000 + 1_150_000));
}

#[test]
fn a_decode_token_without_a_block_preempts_the_latest_started_request() {
    // Room for 4 blocks. The first (24 tokens in 2 blocks) needs an output block at its 9th
    // token; the second (2 whole blocks) at its first. The second starts beside the first and
    // fills the room, so a decode token finds no block: the latest started is preempted, and
    // the second ends after the first.
    let trace = arrivals(&[(0, vec![1, 2], 24, 12), (100, vec![3, 4], 32, 8)]);
    let sim = run(&trace, &Cluster { kv_blocks: Some(4), ..stepped(2048) });
    let [a, b] = sim.requests[..] else { panic!("two requests") };
    assert!(sim.replicas[0].preemptions >= 1, "{:?}", sim.replicas[0]);
    assert!(b.end_ns > a.end_ns, "{a:?} {b:?}");
    assert_eq!((a.output_tokens, b.output_tokens), (12, 8));
    assert_eq!(sim.replicas[0].requests, 2);
    assert!(sim.replicas[0].peak_blocks <= 4);
    // With room for both, nothing is preempted.
    let roomy = run(&trace, &Cluster { kv_blocks: Some(8), ..stepped(2048) });
    assert_eq!(roomy.replicas[0].preemptions, 0);
    // The request engine never preempts.
    let by_request = run(&trace, &Cluster { kv_blocks: Some(4), ..one(None) });
    assert_eq!(by_request.replicas[0].preemptions, 0);
}

#[test]
fn cached_blocks_a_request_would_pin_count_against_the_room() {
    // Room for 4 blocks: [3, 4] cached and unpinned, [1, 2] pinned by a long request. [3, 4, 5]
    // misses one block only, but pinning its two hits as well needs 5: it waits for the room.
    let trace = arrivals(&[(0, vec![3, 4], 32, 1), (100_000, vec![1, 2], 32, 100), (200_000, vec![3, 4, 5], 48, 1)]);
    let cluster = |kv| Cluster { kv_blocks: Some(kv), output_blocks: false, ..one(None) };
    let by_row = |s: &Simulation| {
        let mut r = s.requests.clone();
        r.sort_by_key(|r| r.row);
        r
    };
    let tight = by_row(&run(&trace, &cluster(4)));
    assert!(tight[2].start_ns >= tight[1].end_ns, "{:?}", tight);
    assert_eq!(tight[2].hit_blocks, 2);
    // With room for 5, it starts on arrival beside the long one, hitting the same blocks.
    let roomy = by_row(&run(&trace, &cluster(5)));
    assert_eq!((roomy[2].start_ns, roomy[2].hit_blocks), (200_000_000, 2));
    assert!(roomy[2].start_ns < roomy[1].end_ns);
    // The step engine admits by the same rule.
    let stepped = by_row(&run(&trace, &Cluster { kv_blocks: Some(4), output_blocks: false, ..stepped(2048) }));
    assert!(stepped[2].start_ns >= stepped[1].end_ns, "{:?}", stepped);
}

/// The same steps in llama.cpp's order.
fn llama(max_batch_tokens: u32) -> Cluster {
    let steps = stepped(max_batch_tokens).steps.map(|s| Steps { order: StepOrder::LlamaCpp, ..s });
    Cluster { steps, ..stepped(max_batch_tokens) }
}

/// The simulated requests in row order.
fn by_row(sim: &Simulation) -> Vec<SimRequest> {
    let mut r = sim.requests.clone();
    r.sort_by_key(|r| r.row);
    r
}

#[test]
fn llamacpp_starts_every_request_a_slot_is_free_for_and_computes_prompts_in_slot_order() {
    // A (slot 2 of 3) computes its prompt alone; B and C arrive meanwhile and take slots 1 and 0.
    // Step 2 (at 1.1 ms): A's decode token first, then C's whole prompt (slot 0) and 4 of B's:
    // 1 + 0.19 + 0.1 ms. Steps 3 to 5: A's last decode token beside 19 of B's, then B's 20 and
    // 7 last: C, sent last, has its first token before B.
    let trace = arrivals(&[(0, vec![1], 10, 3), (100, vec![2, 3, 4, 5], 50, 1), (200, vec![6], 15, 1)]);
    let cluster = Cluster { max_running: Some(3), ..llama(20) };
    let [a, b, c] = by_row(&run(&trace, &cluster))[..] else { panic!("three requests") };
    assert_eq!((a.start_ns, a.first_token_ns, a.end_ns), (0, 1_100_000, 3_680_000));
    assert_eq!((b.start_ns, b.first_token_ns), (1_100_000, 5_950_000));
    assert_eq!((c.start_ns, c.first_token_ns), (1_100_000, 2_390_000));
    // vLLM's order: B takes the budget's rest in step 2 and C starts only when B's prompt is
    // done (step 4, beside B's last 12 tokens), so they come first in, first out.
    let [a2, b2, c2] = by_row(&run(&trace, &Cluster { max_running: Some(3), ..stepped(20) }))[..] else {
        panic!("three requests")
    };
    assert_eq!((a2.first_token_ns, a2.end_ns), (a.first_token_ns, a.end_ns));
    assert_eq!((b2.start_ns, b2.first_token_ns), (1_100_000, 4_880_000));
    assert_eq!((c2.start_ns, c2.first_token_ns), (3_680_000, 5_950_000));
}

#[test]
fn llamacpp_never_preempts_a_decode_token_without_a_block_goes_on_uncached() {
    // The case vLLM's order preempts (a_decode_token_without_a_block_preempts_the_latest_started
    // _request): in llama.cpp's order the first's decode token that finds no block goes on, and
    // the second, with fewer tokens, ends first.
    let trace = arrivals(&[(0, vec![1, 2], 24, 12), (100, vec![3, 4], 32, 8)]);
    let sim = run(&trace, &Cluster { kv_blocks: Some(4), ..llama(2048) });
    let [a, b] = by_row(&sim)[..] else { panic!("two requests") };
    assert_eq!(sim.replicas[0].preemptions, 0);
    assert_eq!((a.output_tokens, b.output_tokens), (12, 8));
    assert!(b.end_ns < a.end_ns, "{a:?} {b:?}");
    assert!(sim.replicas[0].peak_blocks <= 4);
}

#[test]
fn a_request_alone_larger_than_the_capacity_runs_to_its_end_in_either_order() {
    // 4 prompt blocks and output blocks past them, 2 blocks of room: alone on its replica it
    // keeps what fits and is never preempted. 1 ms + 64 × 10 µs to the first token, then two
    // decode steps of 1.1 ms; with 16 tokens a step, the prompt takes 4 steps of 1.16 ms.
    let trace = arrivals(&[(0, vec![1, 2, 3, 4], 64, 3)]);
    for (cluster, first) in [(stepped(2048), 1_640_000), (llama(2048), 1_640_000), (llama(16), 4_640_000)] {
        let sim = run(&trace, &Cluster { kv_blocks: Some(2), ..cluster });
        let r = sim.requests[0];
        assert_eq!((r.first_token_ns, r.end_ns, r.output_tokens), (first, first + 2_200_000, 3));
        assert_eq!(sim.replicas[0].preemptions, 0);
        assert!(sim.replicas[0].peak_blocks <= 2, "{:?}", sim.replicas[0]);
    }
}

#[test]
fn llamacpp_slots_go_least_recently_used_first() {
    let mut slots = Slots::new(Some(3));
    // Never used first, the highest numbered first.
    assert_eq!((slots.take(), slots.take()), (2, 1));
    slots.release(2);
    assert_eq!(slots.take(), 0);
    slots.release(0);
    slots.release(1);
    // Then the one released longest ago.
    assert_eq!((slots.take(), slots.take(), slots.take()), (2, 0, 1));
    // Without a cap, a slot is added when none is idle.
    let mut open = Slots::new(None);
    assert_eq!((open.take(), open.take()), (0, 1));
    open.release(0);
    assert_eq!((open.take(), open.take()), (0, 2));
}

#[test]
fn a_step_budget_of_zero_is_refused() {
    let trace = arrivals(&[(0, vec![1], 16, 1)]);
    let timing = Timing::Fixed { start_offset_ms: None, end_offset_ms: None, auto_offset: true };
    let schedule = Arc::new(build(&trace, timing, None).unwrap());
    let err = simulate(&trace, schedule, &stepped(0)).unwrap_err();
    assert_eq!(err.to_string(), "the tokens of a step must be at least 1, got 0");
}

proptest! {
    #[test]
    fn steps_keep_the_hits_of_requests_that_do_not_overlap(rows in rows(), budget in 1u32..40) {
        let trace = sequential(&rows);
        let by_request = run(&trace, &one(Some(12)));
        let by_step = run(&trace, &Cluster { kv_blocks: Some(12), ..stepped(budget) });
        let hits = |s: &Simulation| s.requests.iter().map(|r| (r.row, r.hit_blocks)).collect::<Vec<_>>();
        prop_assert_eq!(hits(&by_request), hits(&by_step));
    }

    #[test]
    fn stepped_requests_end_once_and_capacity_holds(rows in rows(), replicas in 1u32..4, cap in 8u64..20, budget in 1u32..64, running in 1u32..5, llamacpp in any::<bool>()) {
        let mut trace = Trace::new();
        for (i, (row, ids)) in sequential(&rows).iter().enumerate() {
            let mut r = row.clone();
            r.timestamp = Some(Number::Int(i as i64));
            r.output_length = Some(1 + (i as u64 * 7) % 40);
            trace.push(r, ids.iter().copied());
        }
        let cluster = Cluster {
            replicas, kv_blocks: Some(cap), max_running: Some(running), sample_every_ns: 100_000,
            ..if llamacpp { llama(budget) } else { stepped(budget) }
        };
        let sim = run(&trace, &cluster);
        each_row_once_in_order(&sim, rows.len())?;
        for s in &sim.samples {
            prop_assert!(s.blocks <= cap && s.running <= running);
        }
    }
}

#[test]
fn the_record_metrics_read_leaves_out_the_rows_session_and_line() {
    use crate::results::aggregate::Aggregate;
    let mut trace = Trace::new();
    for (i, (row, ids)) in sequential(&[vec![1, 2], vec![1, 3], vec![4]]).iter().enumerate() {
        let mut r = row.clone();
        r.session_id = Some(format!("s{i}").into());
        r.line = 10 + i as u32;
        trace.push(r, ids.iter().copied());
    }
    let sim = run(&trace, &one(None));
    let (mut full, mut bare) = (Aggregate::default(), Aggregate::default());
    for r in &sim.requests {
        let (a, b) = (r.record_without_chunks(trace.rows()), r.record_for_metrics());
        assert_eq!(a.session_id, Some(format!("s{}", r.row)));
        assert_eq!((a.trace_line, b.trace_line), (10 + r.row, 1 + r.row));
        assert_eq!(RequestRecord { session_id: a.session_id.clone(), trace_line: a.trace_line, ..b.clone() }, a);
        full.add_chunks(&a, r.chunks(), true, &[]);
        bare.add_chunks(&b, r.chunks(), true, &[]);
    }
    assert_eq!(format!("{:?}", full.report(false)), format!("{:?}", bare.report(false)));
}

#[test]
fn requests_ending_together_are_handed_over_in_the_order_they_started() {
    // Three prompts of distinct blocks arriving together: the same prefill and decoding (its
    // time not growing with the requests running), so requests end together (in steps, the two
    // that wait for the first request's step); `run` checks the order they are handed over in.
    let trace = arrivals(&[(0, vec![1], 16, 3), (0, vec![2], 16, 3), (0, vec![3], 16, 3)]);
    let flat = Cluster { engine: Engine { decode_per_running_us: 0.0, ..Engine::default() }, ..one(None) };
    for (cluster, ends) in [(flat, 1), (stepped(2048), 2)] {
        let sim = run(&trace, &cluster);
        let mut at: Vec<u64> = sim.requests.iter().map(|r| r.end_ns).collect();
        at.dedup();
        assert_eq!((sim.requests.len(), at.len()), (3, ends), "{:?}", sim.requests);
    }
}

/// The blocks numbered beforehand (as `simulate` numbers them beside the schedule) give the
/// simulation of the trace numbering its own, marked for the schedule or not; another trace's
/// numbers are refused.
#[test]
fn blocks_numbered_beforehand_simulate_alike() {
    let rows: Vec<Vec<u64>> = (0..40u64).map(|i| (0..1 + i % 5).map(|k| (i % 3) * 100 + k + i / 7).collect()).collect();
    let trace = sequential(&rows);
    let cluster = Cluster { replicas: 2, router: Router::KvAware, ..one(Some(6)) };
    let timing = Timing::Fixed { start_offset_ms: None, end_offset_ms: None, auto_offset: true };
    let schedule = Arc::new(build(&trace, timing, None).unwrap());
    let whole = run(&trace, &cluster);
    let mut ids = BlockIds::of(&trace).unwrap();
    let unmarked =
        simulate_numbered(trace.rows(), Arc::clone(&schedule), &ids, &cluster, &mut |_: usize, _: &SimRequest| {})
            .unwrap();
    ids.mark_once(&schedule);
    let marked =
        simulate_numbered(trace.rows(), Arc::clone(&schedule), &ids, &cluster, &mut |_: usize, _: &SimRequest| {})
            .unwrap();
    assert_eq!(unmarked, whole);
    assert_eq!(marked, whole);
    let other = sequential(&rows[..10]);
    let err =
        simulate_numbered(other.rows(), Arc::clone(&schedule), &ids, &cluster, &mut |_: usize, _: &SimRequest| {})
            .unwrap_err();
    assert!(matches!(err, SimulateError::BlockIdsOfAnotherTrace { .. }), "{err}");
    // As many rows, but with more blocks than were numbered.
    let wider: Vec<Vec<u64>> = rows.iter().map(|r| r.iter().copied().chain([999]).collect()).collect();
    let wider = sequential(&wider);
    let err =
        simulate_numbered(wider.rows(), Arc::clone(&schedule), &ids, &cluster, &mut |_: usize, _: &SimRequest| {})
            .unwrap_err();
    assert!(matches!(err, SimulateError::BlockIdsOfAnotherTrace { rows: 40, .. }), "{err}");
}

/// Uses counted as the numbers are given mark them as `mark_once` does for the trace's schedule:
/// for a trace of sessions and single rows, and not for one whose rows start sub-agents; uses
/// counted of other numbers mark nothing.
#[test]
fn uses_counted_as_numbered_mark_as_mark_once() {
    let rows: Vec<Vec<u64>> = (0..30u64).map(|i| (0..1 + i % 4).map(|k| (i % 5) * 10 + k + i).collect()).collect();
    let mut trace = sequential(&rows);
    for (i, row) in trace.rows_mut().iter_mut().enumerate().filter(|(i, _)| i % 3 == 0) {
        row.session_id = Some(format!("s{}", i % 2).into());
    }
    let fixed = Timing::Fixed { start_offset_ms: None, end_offset_ms: None, auto_offset: true };
    let numbered = |trace: &Trace| {
        let mut numbering = Numbering::new();
        numbering.take(&mut trace.clone());
        numbering.finish().unwrap()
    };
    let (taken, ids, uses) = numbered(&trace);
    let mut expected = ids.clone();
    expected.mark_once(&build(&trace, fixed, None).unwrap());
    let mut counted = ids.clone();
    counted.mark_counted(uses, &taken, &crate::fork::LastFirst { at_once: true });
    assert_eq!((&counted.ids, counted.blocks, counted.rows), (&expected.ids, expected.blocks, expected.rows));
    assert_ne!(counted.ids, ids.ids);
    let (_, other, other_uses) = numbered(&sequential(&rows[..20]));
    let mut counted = ids.clone();
    counted.mark_counted(other_uses, &taken, &crate::fork::InTurn);
    assert_eq!((&counted.ids, counted.blocks), (&ids.ids, ids.blocks));
    assert_eq!(other.rows, 20);
    // A row that starts a sub-agent session: nothing marked.
    let mut branched = trace.clone();
    branched.rows_mut()[2].session_id = Some("child".into());
    branched.rows_mut()[1].rare_mut().branches =
        vec![crate::trace::Branch { children: vec!["child".into()], join_at: None, offsets_ms: Vec::new() }];
    let (taken, ids, uses) = numbered(&branched);
    let mut counted = ids.clone();
    counted.mark_counted(uses, &taken, &crate::fork::InTurn);
    assert_eq!((&counted.ids, counted.blocks), (&ids.ids, ids.blocks));
}

/// Blocks occurring once are given `ONCE`; the others are numbered again densely, in the same
/// order, and their count is what the block table is sized by.
#[test]
fn blocks_used_again_are_numbered_densely() {
    let mut ids = vec![0, 1, 0, 2, 3, 3, 4, 5, 5];
    assert_eq!(super::numbered::mark_once(&mut ids, 6, &crate::fork::InTurn), 3);
    let o = cache::ONCE;
    assert_eq!(ids, [0, o, 0, o, 1, 1, o, 2, 2]);
}

proptest::proptest! {
    /// Counted and rewritten a stretch a part, the numbers are those of one pass over them all:
    /// a block's uses spread over several stretches count together.
    #[test]
    fn blocks_marked_in_parts_are_marked_alike(ids in proptest::collection::vec(0u32..12, 0..60)) {
        let blocks = ids.iter().max().map_or(0, |&m| m as usize + 1);
        let (mut whole, mut parts) = (ids.clone(), ids);
        let left = super::numbered::mark_once(&mut whole, blocks, &crate::fork::InTurn);
        proptest::prop_assert_eq!(super::numbered::mark_once(&mut parts, blocks, &crate::fork::LastFirst { at_once: true }), left);
        proptest::prop_assert_eq!(parts, whole);
    }
}

proptest::proptest! {
    /// The rows taken a block at a time, their ids numbered as they come, are the trace's rows
    /// with the numbers of the whole trace: wherever the blocks are cut.
    #[test]
    fn blocks_numbered_as_the_file_is_read_are_the_whole_traces(
        rows in proptest::collection::vec(proptest::collection::vec(0u64..40, 0..6), 0..30),
        cuts in proptest::collection::vec(0usize..30, 0..5),
    ) {
        let trace = sequential(&rows);
        let whole = BlockIds::of(&trace).unwrap();
        let mut cuts: Vec<usize> = cuts.into_iter().filter(|&c| c <= rows.len()).chain([0, rows.len()]).collect();
        cuts.sort_unstable();
        let mut numbering = Numbering::new();
        for w in cuts.windows(2) {
            let mut block = sequential(&rows[w[0]..w[1]]);
            numbering.take(&mut block);
            proptest::prop_assert!(block.is_empty());
        }
        let (taken, ids, uses) = numbering.finish().unwrap();
        proptest::prop_assert_eq!((&ids.ids, ids.blocks, ids.rows), (&whole.ids, whole.blocks, whole.rows));
        // The uses counted as the blocks came mark what the whole trace's schedule marks.
        if let Ok(schedule) = build(&trace, Timing::Fixed { start_offset_ms: None, end_offset_ms: None, auto_offset: true }, None) {
            let (mut marked, mut expected) = (ids.clone(), whole.clone());
            marked.mark_counted(uses, &taken, &crate::fork::InTurn);
            expected.mark_once(&schedule);
            proptest::prop_assert_eq!((&marked.ids, marked.blocks), (&expected.ids, expected.blocks));
        }
        let (rows_whole, _) = trace.clone().into_parts();
        let ranges: Vec<_> = taken.iter().map(Row::ids_range).collect();
        let whole_ranges: Vec<_> = rows_whole.iter().map(Row::ids_range).collect();
        proptest::prop_assert_eq!(ranges, whole_ranges);
        proptest::prop_assert_eq!(taken.iter().map(|r| r.input.clone()).collect::<Vec<_>>(), rows_whole.iter().map(|r| r.input.clone()).collect::<Vec<_>>());
    }
}
