//! The "What if" panel's model: its form (the `aiperf-cli simulate` options as typed), the cluster
//! it describes, and the simulation's summary for the page. Every call into the core's simulator
//! is in this file ([`simulate_view`]), with the same schedule, engine and sampling as the CLI's
//! `simulate`, so the page's numbers are the command's.

use std::rc::Rc;
use std::sync::Arc;

use aiperf_core::replay::schedule::Schedule;
use aiperf_core::simulate::engine::{DEFAULT_MAX_BATCH_TOKENS, EngineMode};
use aiperf_core::simulate::{
    Cluster, Engine, MAX_REPLICAS, Policy, ReplicaStats, Router, sample_every_ns, simulate, trace_schedule,
};
use aiperf_core::stats::percentile_sorted;
use aiperf_core::trace::Trace;
use serde::{Deserialize, Serialize};

use crate::chart_data::Dist;

/// The routers offered, in the order of the select.
pub const ROUTERS: [Router; 5] =
    [Router::RoundRobin, Router::Random, Router::SessionAffinity, Router::LeastLoaded, Router::KvAware];
/// The eviction policies offered.
pub const POLICIES: [Policy; 2] = [Policy::Lru, Policy::Lfu];
/// Points of the sampled series over the trace's span (the CLI's `--samples` default).
pub const SAMPLES: u64 = 200;
/// Replicas drawn one line each in the KV usage chart; beyond, the mean and the fullest.
const KV_LINES: usize = 8;
/// Largest block size the field accepts (the analysis form's bound).
const MAX_BLOCK_SIZE: u32 = 1 << 24;

/// A field of the form, with its `simulate` flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Field {
    Replicas,
    KvBlocks,
    BlockSize,
    Router,
    Policy,
    OverlapWeight,
    MaxRunning,
    Engine,
    MaxBatchTokens,
    PrefillFixedMs,
    PrefillPerTokenMs,
    DecodeFixedMs,
    DecodePerRunningMs,
    Seed,
}

impl Field {
    pub const ALL: [Field; 14] = [
        Field::Replicas,
        Field::KvBlocks,
        Field::BlockSize,
        Field::Router,
        Field::Policy,
        Field::OverlapWeight,
        Field::MaxRunning,
        Field::Engine,
        Field::MaxBatchTokens,
        Field::PrefillFixedMs,
        Field::PrefillPerTokenMs,
        Field::DecodeFixedMs,
        Field::DecodePerRunningMs,
        Field::Seed,
    ];

    /// The `aiperf-cli simulate` flag (without `--`), also the field's id on the page.
    pub fn flag(self) -> &'static str {
        match self {
            Field::Replicas => "replicas",
            Field::KvBlocks => "kv-blocks",
            Field::BlockSize => "block-size",
            Field::Router => "router",
            Field::Policy => "policy",
            Field::OverlapWeight => "overlap-weight",
            Field::MaxRunning => "max-running",
            Field::Engine => "engine",
            Field::MaxBatchTokens => "max-batch-tokens",
            Field::PrefillFixedMs => "prefill-fixed-ms",
            Field::PrefillPerTokenMs => "prefill-per-token-ms",
            Field::DecodeFixedMs => "decode-fixed-ms",
            Field::DecodePerRunningMs => "decode-per-running-ms",
            Field::Seed => "seed",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Field::Replicas => "Replicas",
            Field::KvBlocks => "KV capacity per replica (blocks)",
            Field::BlockSize => "Block size (tokens)",
            Field::Router => "Router",
            Field::Policy => "Eviction policy",
            Field::OverlapWeight => "KV-aware overlap weight",
            Field::MaxRunning => "Max running per replica",
            Field::Engine => "Engine",
            Field::MaxBatchTokens => "Tokens per engine step",
            Field::PrefillFixedMs => "Prefill, fixed (ms)",
            Field::PrefillPerTokenMs => "Prefill per uncached token (ms)",
            Field::DecodeFixedMs => "Decode per token, fixed (ms)",
            Field::DecodePerRunningMs => "Decode per token per running request (ms)",
            Field::Seed => "Seed (random router)",
        }
    }

    /// What the field accepts.
    pub fn hint(self) -> &'static str {
        match self {
            Field::Replicas => "1 to 4096",
            Field::KvBlocks => "a whole number ≥ 1, or unbounded",
            Field::BlockSize => "tokens per hash id, the trace's block size",
            Field::Router => "kv-aware is NVIDIA Dynamo's KV router cost",
            Field::Policy => "which cached block goes first when the cache is full",
            Field::OverlapWeight => "weight of the blocks to prefill in the kv-aware cost",
            Field::MaxRunning => "a whole number ≥ 1, or empty: no cap",
            Field::Engine => {
                "request: each request timed on its own; step: vLLM's token-budget steps (chunked prefill, \
                 preemption), a step taking the decode fixed time + the prefill time per prompt token + the decode \
                 time per running request per decode token; step-llamacpp: the same steps in llama.cpp's order \
                 (decode tokens first, then prompt tokens; no preemption)"
            }
            Field::MaxBatchTokens => {
                "a whole number ≥ 1 (step engines): vLLM's max_num_batched_tokens, llama.cpp's --batch-size"
            }
            Field::PrefillFixedMs | Field::PrefillPerTokenMs | Field::DecodeFixedMs | Field::DecodePerRunningMs => {
                "a number ≥ 0"
            }
            Field::Seed => "a whole number",
        }
    }

    /// The `simulate` default, as typed.
    fn default_value(self) -> String {
        let e = Engine::default();
        match self {
            Field::Replicas => "4".into(),
            Field::KvBlocks => "unbounded".into(),
            Field::BlockSize => aiperf_core::analysis::DEFAULT_BLOCK_SIZE.to_string(),
            Field::Router => Router::KvAware.name().into(),
            Field::Policy => Policy::Lru.name().into(),
            Field::OverlapWeight => "1".into(),
            Field::MaxRunning => String::new(),
            Field::Engine => EngineMode::default().name().into(),
            Field::MaxBatchTokens => DEFAULT_MAX_BATCH_TOKENS.to_string(),
            Field::PrefillFixedMs => (e.prefill_fixed_us / 1000.0).to_string(),
            Field::PrefillPerTokenMs => (e.prefill_per_token_us / 1000.0).to_string(),
            Field::DecodeFixedMs => (e.decode_fixed_us / 1000.0).to_string(),
            Field::DecodePerRunningMs => (e.decode_per_running_us / 1000.0).to_string(),
            Field::Seed => "0".into(),
        }
    }
}

/// The panel's controls as typed (one string per [`Field`]).
#[derive(Clone, Debug, PartialEq)]
pub struct WhatIfForm {
    values: Vec<String>,
}

impl Default for WhatIfForm {
    fn default() -> Self {
        WhatIfForm { values: Field::ALL.iter().map(|f| f.default_value()).collect() }
    }
}

fn index(f: Field) -> usize {
    Field::ALL.iter().position(|&g| g == f).unwrap_or(0)
}

fn ms(v: &str) -> Result<f64, String> {
    match v.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        _ => Err(format!("'{v}' is not accepted: a number ≥ 0")),
    }
}

impl WhatIfForm {
    pub fn get(&self, f: Field) -> &str {
        &self.values[index(f)]
    }

    pub fn set(&mut self, f: Field, v: String) {
        self.values[index(f)] = v;
    }

    /// What is wrong with a field's value (`None`: it is valid).
    pub fn error(&self, f: Field) -> Option<String> {
        let v = self.get(f);
        let t = v.trim();
        let whole = |min: u64, max: u64| match t.parse::<u64>() {
            Ok(n) if (min..=max).contains(&n) => None,
            _ => Some(format!("'{v}' is not accepted: a whole number from {min} to {max}")),
        };
        match f {
            Field::Replicas => whole(1, u64::from(MAX_REPLICAS)),
            Field::KvBlocks if t == "unbounded" || t == "inf" => None,
            Field::KvBlocks => {
                whole(1, u64::MAX).map(|_| format!("'{v}' is not accepted: a whole number ≥ 1, or unbounded"))
            }
            Field::BlockSize => whole(1, u64::from(MAX_BLOCK_SIZE)),
            Field::Router => (!ROUTERS.iter().any(|r| r.name() == t)).then(|| format!("'{v}' is not a router")),
            Field::Policy => (!POLICIES.iter().any(|p| p.name() == t)).then(|| format!("'{v}' is not a policy")),
            Field::Engine => (!EngineMode::ALL.iter().any(|m| m.name() == t)).then(|| {
                let names: Vec<&str> = EngineMode::ALL.iter().map(|m| m.name()).collect();
                format!("'{v}' is not an engine: {}", names.join(", "))
            }),
            Field::MaxBatchTokens => whole(1, u64::from(u32::MAX)),
            Field::MaxRunning if t.is_empty() => None,
            Field::MaxRunning => {
                whole(1, u64::from(u32::MAX)).map(|_| format!("'{v}' is not accepted: a whole number ≥ 1, or empty"))
            }
            Field::OverlapWeight
            | Field::PrefillFixedMs
            | Field::PrefillPerTokenMs
            | Field::DecodeFixedMs
            | Field::DecodePerRunningMs => ms(v).err(),
            Field::Seed => whole(0, u64::MAX),
        }
    }

    /// The cluster the form describes (without its sampling interval, which depends on the
    /// trace), or `None` while a field is invalid.
    pub fn cluster(&self) -> Option<Cluster> {
        if Field::ALL.iter().any(|&f| self.error(f).is_some()) {
            return None;
        }
        let t = |f: Field| self.get(f).trim();
        let kv = t(Field::KvBlocks);
        // Milliseconds to microseconds as `simulate` converts them.
        let engine = Engine {
            prefill_fixed_us: t(Field::PrefillFixedMs).parse::<f64>().ok()? * 1000.0,
            prefill_per_token_us: t(Field::PrefillPerTokenMs).parse::<f64>().ok()? * 1000.0,
            decode_fixed_us: t(Field::DecodeFixedMs).parse::<f64>().ok()? * 1000.0,
            decode_per_running_us: t(Field::DecodePerRunningMs).parse::<f64>().ok()? * 1000.0,
        };
        Some(Cluster {
            replicas: t(Field::Replicas).parse().ok()?,
            kv_blocks: if kv == "unbounded" || kv == "inf" { None } else { Some(kv.parse().ok()?) },
            block_size: t(Field::BlockSize).parse().ok()?,
            policy: *POLICIES.iter().find(|p| p.name() == t(Field::Policy))?,
            router: *ROUTERS.iter().find(|r| r.name() == t(Field::Router))?,
            overlap_weight: t(Field::OverlapWeight).parse().ok()?,
            max_running: match t(Field::MaxRunning) {
                "" => None,
                m => Some(m.parse().ok()?),
            },
            engine,
            seed: t(Field::Seed).parse().ok()?,
            sample_every_ns: 0,
            // Output tokens take blocks as `simulate` has them by default (vLLM's).
            output_blocks: true,
            steps: EngineMode::ALL
                .into_iter()
                .find(|m| m.name() == t(Field::Engine))?
                .steps(&engine, t(Field::MaxBatchTokens).parse().ok()?),
        })
    }

    /// The `aiperf-cli simulate` command giving the same numbers (options that differ from the
    /// command's defaults only).
    pub fn command(&self, trace: &str) -> String {
        let cli_default = |f: Field| match f {
            Field::Replicas => "1".to_string(),
            Field::MaxRunning => String::new(),
            f => f.default_value(),
        };
        let mut cmd = format!("aiperf-cli simulate {}", crate::params::shell_quote(trace));
        for f in Field::ALL {
            let v = self.get(f).trim();
            if v != cli_default(f) && !v.is_empty() {
                cmd += &format!(" --{} {}", f.flag(), crate::params::shell_quote(v));
            }
        }
        cmd
    }
}

/// The simulation's summary: `simulate`'s sweep-table numbers, per-replica counts and chart data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimView {
    /// The cluster asked for (its sampling interval as asked: 0).
    pub cluster: Cluster,
    pub requests: u64,
    pub token_hit_rate: f64,
    pub row_hit_rate: f64,
    /// Busiest replica's requests over the mean.
    pub imbalance: f64,
    pub evictions: u64,
    /// Running requests preempted (the step engine only).
    pub preemptions: u64,
    /// p50 and p99, in ms.
    pub ttft_ms: [f64; 2],
    pub latency_ms: [f64; 2],
    pub replicas: Vec<ReplicaStats>,
    pub ttft: Rc<Dist>,
    pub latency: Rc<Dist>,
    /// KV blocks held over time (s): one line per replica, or the mean and the fullest.
    pub kv_lines: Vec<(String, Vec<(f64, f64)>)>,
    pub compute_ms: f64,
}

/// The schedule `simulate` replays: the trace's timestamps, shifted to start at zero.
pub fn schedule(trace: &Trace) -> Result<Arc<Schedule>, String> {
    trace_schedule(trace.rows()).map(Arc::new).map_err(|e| e.to_string())
}

/// Simulates `trace` on `cluster` as `aiperf-cli simulate` does (its schedule, its sampling of
/// [`SAMPLES`] points over the span) and summarises it.
pub fn simulate_view(trace: &Trace, schedule: &Arc<Schedule>, cluster: &Cluster) -> Result<SimView, String> {
    let run = Cluster { sample_every_ns: sample_every_ns(schedule, SAMPLES), ..*cluster };
    let sim = simulate(trace, Arc::clone(schedule), &run).map_err(|e| e.to_string())?;
    let (ttft, latency) = (sim.ttft_ms(), sim.latency_ms());
    let p = |v: &[f64]| [50.0, 99.0].map(|q| percentile_sorted(v, q).unwrap_or(0.0));
    let total = sim.total();
    let n = sim.replicas.len();
    let mut per: Vec<Vec<(f64, f64)>> = vec![Vec::new(); n];
    for s in &sim.samples {
        if let Some(line) = per.get_mut(s.replica as usize) {
            line.push((s.t_ns as f64 / 1e9, s.blocks as f64));
        }
    }
    let kv_lines = if n <= KV_LINES {
        per.into_iter().enumerate().map(|(i, l)| (format!("replica {i}"), l)).collect()
    } else {
        let points = per.first().map_or(0, Vec::len);
        let at = |k: usize| per.iter().filter_map(move |l| l.get(k));
        let mean =
            (0..points).filter_map(|k| Some((at(k).next()?.0, at(k).map(|p| p.1).sum::<f64>() / n as f64))).collect();
        let max = (0..points).filter_map(|k| Some((at(k).next()?.0, at(k).map(|p| p.1).fold(0.0, f64::max)))).collect();
        vec![("mean of the replicas".to_string(), mean), ("fullest replica".to_string(), max)]
    };
    Ok(SimView {
        cluster: *cluster,
        requests: total.requests,
        token_hit_rate: total.token_hit_rate(),
        row_hit_rate: total.row_hit_rate(),
        imbalance: sim.imbalance(),
        evictions: total.evictions,
        preemptions: total.preemptions,
        ttft_ms: p(&ttft),
        latency_ms: p(&latency),
        ttft: Rc::new(Dist::lengths(&ttft)),
        latency: Rc::new(Dist::lengths(&latency)),
        replicas: sim.replicas,
        kv_lines,
        compute_ms: 0.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use aiperf_core::simulate::{StepOrder, Steps};
    use aiperf_core::trace::{ParseOptions, parse_str};

    fn fixture(name: &str) -> Trace {
        let p = format!("{}/../../tests/fixtures/traces/{name}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"));
        parse_str(&text, ParseOptions::default()).unwrap().trace
    }

    #[test]
    fn the_view_is_the_cores_simulation_with_the_clis_settings() {
        let trace = fixture("conversation_head500.jsonl");
        let mut form = WhatIfForm::default();
        form.set(Field::Router, "round-robin".into());
        form.set(Field::KvBlocks, "2000".into());
        let cluster = form.cluster().unwrap();
        let sched = schedule(&trace).unwrap();
        let view = simulate_view(&trace, &sched, &cluster).unwrap();
        let run = Cluster { sample_every_ns: sample_every_ns(&sched, 200), ..cluster };
        let sim = simulate(&trace, sched.clone(), &run).unwrap();
        assert_eq!(view.requests, 500);
        assert_eq!(view.token_hit_rate, sim.total().token_hit_rate());
        assert_eq!(view.row_hit_rate, sim.total().row_hit_rate());
        assert_eq!(view.replicas, sim.replicas);
        assert_eq!(view.kv_lines.len(), 4);
        assert_eq!(cluster.engine, Engine::default());
        assert!(view.ttft_ms[0] > 0.0 && view.ttft_ms[1] >= view.ttft_ms[0]);
        assert_eq!(
            form.command("t.jsonl"),
            "aiperf-cli simulate t.jsonl --replicas 4 --kv-blocks 2000 --router round-robin"
        );
    }

    #[test]
    fn the_step_engine_simulates_with_the_clis_reading_of_the_timing_options() {
        let trace = fixture("conversation_head500.jsonl");
        let mut form = WhatIfForm::default();
        form.set(Field::Engine, "step".into());
        form.set(Field::MaxBatchTokens, "512".into());
        form.set(Field::KvBlocks, "40".into());
        form.set(Field::DecodeFixedMs, "3".into());
        let cluster = form.cluster().unwrap();
        let steps = cluster.steps.unwrap();
        assert_eq!(steps, Steps::from_engine(&cluster.engine, 512));
        assert_eq!(steps.fixed_us, 3000.0);
        let sched = schedule(&trace).unwrap();
        let view = simulate_view(&trace, &sched, &cluster).unwrap();
        let run = Cluster { sample_every_ns: sample_every_ns(&sched, SAMPLES), ..cluster };
        let sim = simulate(&trace, sched.clone(), &run).unwrap();
        assert_eq!(view.preemptions, sim.total().preemptions);
        assert_eq!(view.ttft_ms[0], percentile_sorted(&sim.ttft_ms(), 50.0).unwrap());
        assert_eq!(
            form.command("t.jsonl"),
            "aiperf-cli simulate t.jsonl --replicas 4 --kv-blocks 40 --engine step --max-batch-tokens 512 --decode-fixed-ms 3"
        );
        // The per-request engine ignores the step budget.
        form.set(Field::Engine, "request".into());
        assert_eq!(form.cluster().unwrap().steps, None);
        form.set(Field::Engine, "steps".into());
        assert_eq!(form.error(Field::Engine).unwrap(), "'steps' is not an engine: request, step, step-llamacpp");
        // llama.cpp's order: the same steps, taken in its order.
        form.set(Field::Engine, "step-llamacpp".into());
        let llama = form.cluster().unwrap().steps.unwrap();
        assert_eq!(llama, Steps { order: StepOrder::LlamaCpp, ..steps });
        assert_eq!(EngineMode::of(Some(llama)), EngineMode::StepLlamacpp);
        assert!(form.command("t.jsonl").contains(" --engine step-llamacpp "), "{}", form.command("t.jsonl"));
        form.set(Field::Engine, "step".into());
        form.set(Field::MaxBatchTokens, "0".into());
        assert!(form.cluster().is_none());
    }

    #[test]
    fn invalid_fields_say_what_is_accepted() {
        let mut form = WhatIfForm::default();
        form.set(Field::Replicas, "0".into());
        assert_eq!(form.error(Field::Replicas).unwrap(), "'0' is not accepted: a whole number from 1 to 4096");
        assert!(form.cluster().is_none());
        form.set(Field::Replicas, "2".into());
        form.set(Field::DecodeFixedMs, "-1".into());
        assert_eq!(form.error(Field::DecodeFixedMs).unwrap(), "'-1' is not accepted: a number ≥ 0");
        form.set(Field::DecodeFixedMs, "1.5".into());
        form.set(Field::KvBlocks, "x".into());
        assert_eq!(form.error(Field::KvBlocks).unwrap(), "'x' is not accepted: a whole number ≥ 1, or unbounded");
        form.set(Field::KvBlocks, "unbounded".into());
        assert_eq!(form.cluster().unwrap().engine.decode_fixed_us, 1500.0);
    }
}
