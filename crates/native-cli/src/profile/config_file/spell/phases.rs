//! The phase sections (`benchmark.phases`, `warmup`, `profiling`) as option spellings: each
//! phase's role and its load, duration and ramps.

use anyhow::Result;

use super::super::model::*;
use super::out::{Out, kv, refused};

/// The role of a phase, as AIPerf infers it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Warmup,
    Profiling,
}

pub(super) fn phases(out: &mut Out, b: &Benchmark) -> Result<()> {
    if b.phases.is_some() && (b.warmup.is_some() || b.profiling.is_some()) {
        bail_key!(
            format!("benchmark.phases"),
            "keys `benchmark.phases` and `benchmark.warmup`/`profiling` are both given: accepted is `warmup`/`profiling` or a `phases` list"
        );
    }
    if b.warmup.is_some() && b.profiling.is_none() {
        bail_key!(
            format!("benchmark.warmup"),
            "key `benchmark.warmup` is given without `benchmark.profiling`: a run needs a profiling phase"
        );
    }
    let mut list: Vec<(String, &Phase, Option<Role>)> = Vec::new();
    if let Some(w) = &b.warmup {
        list.push(("benchmark.warmup".into(), w, Some(Role::Warmup)));
    }
    if let Some(p) = &b.profiling {
        list.push(("benchmark.profiling".into(), p, Some(Role::Profiling)));
    }
    match &b.phases {
        None => {}
        Some(OneOrMany::One(p)) => list.push(("benchmark.phases".into(), p, Some(Role::Profiling))),
        Some(OneOrMany::Many(ps)) => {
            list.extend(ps.iter().enumerate().map(|(i, p)| (format!("benchmark.phases[{i}]"), p, None)))
        }
    }
    let mut warmup = None;
    let mut profiling = None;
    for (key, p, implied) in list {
        let role = role(&key, p, implied)?;
        let slot = if role == Role::Warmup { &mut warmup } else { &mut profiling };
        if let Some(first) = slot.replace(key.clone()) {
            let what = if role == Role::Warmup { "warm-up" } else { "profiling" };
            return Err(refused(
                &key,
                &format!("a second {what} phase (after {first})"),
                "one warm-up phase and one profiling phase a run",
                "run once per profiling phase, or sweep with a comma-separated --concurrency or --request-rate list",
            ));
        }
        phase(out, &key, p, role)?;
    }
    Ok(())
}

fn role(key: &str, p: &Phase, implied: Option<Role>) -> Result<Role> {
    let name = p.name.as_ref().map(Scalar::to_string);
    let kind = p.kind.as_ref().map(Scalar::to_string);
    let role = match (kind.as_deref(), name.as_deref(), implied) {
        (Some("warmup"), _, _) => Role::Warmup,
        (Some("profiling"), _, _) => Role::Profiling,
        (Some(other), _, _) => {
            bail_key!(format!("{key}.kind"), "key `{key}.kind` = {other}: accepted is warmup or profiling")
        }
        (None, _, Some(r)) => r,
        (None, Some("warmup"), None) => Role::Warmup,
        (None, Some("profiling"), None) => Role::Profiling,
        (None, n, None) => bail_key!(
            format!("{key}.kind"),
            "key `{key}.kind` is missing: a phase named {} needs `kind: warmup` or `kind: profiling`",
            n.unwrap_or("(no name)")
        ),
    };
    let wanted = role == Role::Warmup;
    if let Some(x) = &p.exclude_from_results
        && *x != Scalar::Bool(wanted)
    {
        bail_key!(
            format!("{key}.excludeFromResults"),
            "key `{key}.excludeFromResults` = {x}: accepted is {wanted} for a {} phase (warm-up is always excluded, profiling always included)",
            if wanted { "warm-up" } else { "profiling" }
        );
    }
    Ok(role)
}

/// The AIPerf option spellings of one phase's keys: `(profiling, warm-up)`.
const PHASE_FLAGS: [(&str, &str, &str); 11] = [
    ("requests", "--request-count", "--warmup-request-count"),
    ("duration", "--benchmark-duration", "--warmup-duration"),
    ("sessions", "--conversation-num", "--num-warmup-sessions"),
    ("concurrency", "--concurrency", "--warmup-concurrency"),
    ("concurrencyRamp", "--concurrency-ramp-duration", "--warmup-concurrency-ramp-duration"),
    ("prefillConcurrency", "--prefill-concurrency", "--warmup-prefill-concurrency"),
    ("prefillRamp", "--prefill-concurrency-ramp-duration", "--warmup-prefill-concurrency-ramp-duration"),
    ("gracePeriod", "--benchmark-grace-period", "--warmup-grace-period"),
    ("rate", "--request-rate", "--warmup-request-rate"),
    ("rateRamp", "--request-rate-ramp-duration", "--warmup-request-rate-ramp-duration"),
    ("type", "--arrival-pattern", "--warmup-arrival-pattern"),
];

fn flag(name: &str, role: Role) -> &'static str {
    PHASE_FLAGS
        .iter()
        .find(|(n, ..)| *n == name)
        .map(|(_, p, w)| if role == Role::Warmup { *w } else { *p })
        .unwrap_or("")
}

fn phase(out: &mut Out, key: &str, p: &Phase, role: Role) -> Result<()> {
    let k = |name: &str| format!("{key}.{name}");
    let Some(kind) = p.kind_of_load.as_ref().map(Scalar::to_string) else {
        bail_key!(
            format!("{key}.type"),
            "key `{key}.type` is missing: accepted is concurrency, poisson, gamma, constant, user_centric or fixed_schedule"
        );
    };
    let rated = matches!(kind.as_str(), "poisson" | "gamma" | "constant" | "user_centric");
    let only = |name: &str, set: bool, ok: bool, types: &str| -> Result<()> {
        if set && !ok {
            bail_key!(
                format!("{key}.{name}"),
                "key `{key}.{name}`: a {kind} phase has no {name} (accepted for {types})"
            );
        }
        Ok(())
    };
    only("rate", p.rate.is_some(), rated, "poisson, gamma, constant and user_centric phases")?;
    only("rateRamp", p.rate_ramp.is_some(), rated, "poisson, gamma, constant and user_centric phases")?;
    only("rateSeries", p.rate_series.is_some(), rated && kind != "user_centric", "poisson, gamma and constant phases")?;
    only("smoothness", p.smoothness.is_some(), kind == "gamma", "gamma phases")?;
    only("users", p.users.is_some(), kind == "user_centric", "user_centric phases")?;
    for (name, set) in [
        ("autoOffset", p.auto_offset.is_some()),
        ("startOffset", p.start_offset.is_some()),
        ("endOffset", p.end_offset.is_some()),
    ] {
        only(name, set, kind == "fixed_schedule", "fixed_schedule phases")?;
    }
    let warm = role == Role::Warmup;
    match kind.as_str() {
        "concurrency" => {}
        "poisson" | "gamma" | "constant" => {
            if kind == "gamma" && p.smoothness.is_some() {
                if warm {
                    return Err(refused(
                        &k("smoothness"),
                        &p.smoothness.as_ref().map(Scalar::to_string).unwrap_or_default(),
                        "AIPerf's command line has no warm-up smoothness",
                        "drop the key",
                    ));
                }
                out.opt(&k("smoothness"), "--arrival-smoothness", &p.smoothness);
            }
            out.push(&k("type"), kind.clone(), vec![kv(flag("type", role), kind.clone())]);
            out.opt(&k("rate"), flag("rate", role), &p.rate);
        }
        "user_centric" => {
            // AIPerf's command line has no user-centric warm-up: the file's is ours.
            let (rate, users) = if warm {
                ("--warmup-user-centric-rate", "--warmup-num-users")
            } else {
                ("--user-centric-rate", "--num-users")
            };
            out.opt(&k("rate"), rate, &p.rate);
            out.opt(&k("users"), users, &p.users);
        }
        "fixed_schedule" => {
            if warm {
                return Err(refused(
                    &k("type"),
                    "fixed_schedule",
                    "a fixed-schedule warm-up is not supported",
                    "warm up with type concurrency",
                ));
            }
            out.push(&k("type"), kind.clone(), vec!["--fixed-schedule".into()]);
            out.switch(&k("autoOffset"), &p.auto_offset, "--fixed-schedule-auto-offset", None)?;
            out.opt(&k("startOffset"), "--fixed-schedule-start-offset", &p.start_offset);
            out.opt(&k("endOffset"), "--fixed-schedule-end-offset", &p.end_offset);
        }
        other => bail_key!(
            format!("{key}.type"),
            "key `{key}.type` = {other}: accepted is concurrency, poisson, gamma, constant, user_centric or fixed_schedule"
        ),
    }
    out.opt(&k("requests"), flag("requests", role), &p.requests);
    out.duration(&k("duration"), flag("duration", role), &p.duration)?;
    out.opt(&k("sessions"), flag("sessions", role), &p.sessions);
    out.opt(&k("concurrency"), flag("concurrency", role), &p.concurrency);
    out.ramp(&k("concurrencyRamp"), flag("concurrencyRamp", role), &p.concurrency_ramp)?;
    out.opt(&k("prefillConcurrency"), flag("prefillConcurrency", role), &p.prefill_concurrency);
    out.ramp(&k("prefillRamp"), flag("prefillRamp", role), &p.prefill_ramp)?;
    out.ramp(&k("rateRamp"), flag("rateRamp", role), &p.rate_ramp)?;
    out.duration(&k("gracePeriod"), flag("gracePeriod", role), &p.grace_period)?;
    if let Some(c) = &p.cancellation {
        if warm {
            return Err(refused(
                &k("cancellation"),
                "a section",
                "AIPerf's command line has no warm-up cancellation",
                "drop the key",
            ));
        }
        out.opt(&k("cancellation.rate"), "--request-cancellation-rate", &c.rate);
        out.opt(&k("cancellation.delay"), "--request-cancellation-delay", &c.delay);
    }
    if let Some(v) = &p.rate_series {
        out.raw(&k("rateSeries"), v, "--request-rate-series");
    }
    out.opt(&k("failedRequestThreshold"), "--failed-request-threshold", &p.failed_request_threshold);
    out.opt(&k("trajectoryStartMinRatio"), "--trajectory-start-min-ratio", &p.trajectory_start_min_ratio);
    out.opt(&k("trajectoryStartMaxRatio"), "--trajectory-start-max-ratio", &p.trajectory_start_max_ratio);
    if let Some(v) = &p.burst_phase_starts {
        out.raw(&k("burstPhaseStarts"), v, "--burst-phase-starts");
    }
    out.opt(&k("systemIdleGapCapSeconds"), "--system-idle-gap-cap-seconds", &p.system_idle_gap_cap_seconds);
    out.opt(&k("agenticCacheWarmupDuration"), "--agentic-cache-warmup-duration", &p.agentic_cache_warmup_duration);
    out.opt(&k("agenticWarmupGracePeriod"), "--agentic-warmup-grace-period", &p.agentic_warmup_grace_period);
    if let Some(name) = p.unsupported_key() {
        return Err(refused(
            &k(name),
            "a value",
            "AIPerf's adaptive scaling, phase SLAs, seamless phases and timing modes are not supported",
            "drop the key; --search-max with --goodput finds the highest load that meets SLOs",
        ));
    }
    Ok(())
}
