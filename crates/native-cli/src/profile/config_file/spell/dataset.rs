//! The dataset section (`benchmark.dataset`) as option spellings: prompts, lengths and their
//! distributions, files and synthetic workloads.

use aiperf_core::synthesis::synthetic::LengthDist;
use anyhow::Result;
use serde_yaml_ng::Value;

use super::super::model::*;
use super::out::{Out, kv, refused, show};

/// AIPerf's `cacheBust: {target: NAME}` as `--cache-bust NAME`.
fn cache_bust(out: &mut Out, key: &str, v: &Value) -> Result<()> {
    let Value::Mapping(m) = v else {
        bail_key!(format!("{key}"), "key `{key}` = {}: accepted is {{target: NAME}}", show(v));
    };
    if let Some((k, _)) = m.iter().find(|(k, _)| show(k) != "target") {
        bail_key!(format!("{key}.{}", show(k)), "key `{key}.{}`: accepted key is target", show(k));
    }
    let Some(target) = m.get("target") else {
        bail_key!(format!("{key}.target"), "key `{key}.target` is missing: accepted is {{target: NAME}}");
    };
    let name = show(target);
    out.push(&format!("{key}.target"), name.clone(), vec![kv("--cache-bust", name)]);
    Ok(())
}

fn dist(out: &mut Out, key: &str, v: &Option<ScalarOr<Dist>>, mean_flag: &str, stddev_flag: &str) -> Result<()> {
    // The lengths take AIPerf's other shapes as a distribution option of ours.
    let dist_flag = match mean_flag {
        "--isl" => Some("--isl-distribution"),
        "--osl" => Some("--osl-distribution"),
        _ => None,
    };
    match v {
        None => {}
        Some(ScalarOr::Scalar(s)) => out.opt(key, mean_flag, &Some(s.clone())),
        Some(ScalarOr::Section(d)) if dist_flag.is_some() && !is_normal(d) => {
            let json = dist_json(d);
            if let Err(e) = LengthDist::parse(&json, key) {
                let value = lookup_json(&json, e.at.strip_prefix(key).unwrap_or(&e.at));
                bail_key!(e.at.clone(), "key `{}` = {value}: accepted is {}", e.at, e.expected);
            }
            let flag = dist_flag.unwrap_or(mean_flag);
            out.push(key, json.to_string(), vec![kv(flag, json)]);
        }
        Some(ScalarOr::Section(d)) => {
            let other = [
                ("median", d.median.is_some()),
                ("peaks", d.peaks.is_some()),
                ("points", d.points.is_some()),
                ("min", d.min.is_some()),
                ("max", d.max.is_some()),
            ]
            .into_iter()
            .find(|(_, set)| *set);
            if let Some((name, _)) = other {
                return Err(refused(
                    &format!("{key}.{name}"),
                    "a distribution",
                    "not yet supported: log-normal (median), multimodal (peaks), empirical (points) and clipped (min/max) length distributions",
                    "give {mean, stddev} (a normal distribution) or a fixed number",
                ));
            }
            if let Some(t) = &d.kind
                && !matches!(t.to_string().as_str(), "normal" | "fixed")
            {
                return Err(refused(
                    &format!("{key}.type"),
                    &t.to_string(),
                    "not yet supported: length distributions other than fixed and normal",
                    "give {mean, stddev} or a fixed number",
                ));
            }
            out.opt(&format!("{key}.mean"), mean_flag, &d.mean);
            out.opt(&format!("{key}.stddev"), stddev_flag, &d.stddev);
        }
    }
    Ok(())
}

/// Whether `d` is a normal (or fixed) distribution without bounds, which `--isl`/`--isl-stddev`
/// give.
fn is_normal(d: &Dist) -> bool {
    let plain = [&d.median, &d.min, &d.max].iter().all(|v| v.is_none()) && d.peaks.is_none() && d.points.is_none();
    plain && d.kind.as_ref().is_none_or(|t| matches!(t.to_string().as_str(), "normal" | "fixed"))
}

/// A distribution section as JSON (numbers written as strings, by `${VAR}` or Jinja2, as numbers).
fn dist_json(d: &Dist) -> serde_json::Value {
    let mut m = serde_json::Map::new();
    let scalars = [("mean", &d.mean), ("stddev", &d.stddev), ("median", &d.median), ("min", &d.min), ("max", &d.max)];
    for (k, v) in scalars.into_iter().chain([("type", &d.kind)]) {
        if let Some(v) = v {
            m.insert(k.into(), scalar_json(v));
        }
    }
    for (k, v) in [("peaks", &d.peaks), ("points", &d.points)] {
        if let Some(v) = v {
            m.insert(k.into(), yaml_json(v, true));
        }
    }
    serde_json::Value::Object(m)
}

fn scalar_json(v: &Scalar) -> serde_json::Value {
    match v {
        Scalar::Bool(b) => (*b).into(),
        Scalar::Int(i) => (*i).into(),
        Scalar::Float(x) => serde_json::Number::from_f64(*x).map_or(serde_json::Value::Null, Into::into),
        Scalar::Str(s) => match s.trim().parse::<f64>().ok().and_then(serde_json::Number::from_f64) {
            Some(n) => n.into(),
            None => s.clone().into(),
        },
    }
}

/// A YAML value as JSON; with `numbers`, a string that reads as a number becomes one.
fn yaml_json(v: &Value, numbers: bool) -> serde_json::Value {
    match v {
        Value::Mapping(m) => {
            serde_json::Value::Object(m.iter().map(|(k, v)| (show(k), yaml_json(v, numbers))).collect())
        }
        Value::Sequence(items) => serde_json::Value::Array(items.iter().map(|v| yaml_json(v, numbers)).collect()),
        Value::Bool(b) => (*b).into(),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => i.into(),
            (None, Some(x)) => serde_json::Number::from_f64(x).map_or(serde_json::Value::Null, Into::into),
            _ => serde_json::Value::Null,
        },
        Value::String(s) if numbers => scalar_json(&Scalar::Str(s.clone())),
        Value::String(s) => s.clone().into(),
        Value::Null => serde_json::Value::Null,
        Value::Tagged(t) => yaml_json(&t.value, numbers),
    }
}

/// The value at `.a.b[2]` inside `v`, for messages.
fn lookup_json(v: &serde_json::Value, path: &str) -> String {
    let mut cur = Some(v);
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let (name, index) = match part.split_once('[') {
            Some((n, i)) => (n, i.trim_end_matches(']').parse::<usize>().ok()),
            None => (part, None),
        };
        cur = cur.and_then(|c| if name.is_empty() { Some(c) } else { c.get(name) });
        if let Some(i) = index {
            cur = cur.and_then(|c| c.get(i));
        }
    }
    cur.map_or_else(|| "nothing".to_string(), serde_json::Value::to_string)
}

pub(super) fn dataset(out: &mut Out, key: &str, d: &Dataset) -> Result<()> {
    let kind = d.kind.as_ref().map(Scalar::to_string);
    let kind = kind.as_deref().unwrap_or("synthetic");
    match kind {
        "synthetic" | "file" => {}
        "public" => {
            let v = d.dataset.clone().unwrap_or(Scalar::Str(String::new()));
            out.push(&format!("{key}.type"), "public".into(), vec![kv("--public-dataset", v.to_string())]);
        }
        other => bail_key!(format!("{key}.type"), "key `{key}.type` = {other}: accepted is synthetic, file or public"),
    }
    out.opt(&format!("{key}.systemPrompt"), "--system-prompt", &d.system_prompt);
    out.opt(&format!("{key}.systemPromptFile"), "--system-prompt-file", &d.system_prompt_file);
    out.opt(&format!("{key}.entries"), "--num-dataset-entries", &d.entries);
    if let Some(v) = &d.random_seed {
        return Err(refused(
            &format!("{key}.randomSeed"),
            &v.to_string(),
            "not yet supported: a dataset seed apart from the run's",
            "give the top-level randomSeed",
        ));
    }
    if let Some(s) = &d.sampling
        && s.to_string() != "sequential"
    {
        out.opt(&format!("{key}.sampling"), "--dataset-sampling-strategy", &Some(s.clone()));
    }
    if d.prompts.is_some() && (d.isl.is_some() || d.osl.is_some()) {
        bail_key!(
            format!("{key}.isl"),
            "keys `{key}.isl`/`osl` and `{key}.prompts` are both given: accepted is one place for the lengths"
        );
    }
    dist(out, &format!("{key}.isl"), &d.isl, "--isl", "--isl-stddev")?;
    dist(out, &format!("{key}.osl"), &d.osl, "--osl", "--osl-stddev")?;
    if let Some(p) = &d.prompts {
        let k = format!("{key}.prompts");
        dist(out, &format!("{k}.isl"), &p.isl, "--isl", "--isl-stddev")?;
        dist(out, &format!("{k}.osl"), &p.osl, "--osl", "--osl-stddev")?;
        out.opt(&format!("{k}.blockSize"), "--isl-block-size", &p.block_size);
        out.opt(&format!("{k}.batchSize"), "--prompt-batch-size", &p.batch_size);
        if let Some(v) = &p.cache_bust {
            cache_bust(out, &format!("{k}.cacheBust"), v)?;
        }
        if let Some(v) = &p.corpus {
            out.raw(&format!("{k}.corpus"), v, "--prompt-corpus");
        }
        if let Some(v) = &p.sequence_distribution {
            sequence_distribution(out, &format!("{k}.sequenceDistribution"), v)?;
        }
        out.opt(&format!("{k}.randomRangeRatio"), "--random-range-ratio", &p.random_range_ratio);
        out.opt(&format!("{k}.randomCorpusStyle"), "--random-corpus-style", &p.random_corpus_style);
    }
    if let Some(p) = &d.prefix_prompts {
        let k = format!("{key}.prefixPrompts");
        out.opt(&format!("{k}.poolSize"), "--prompt-prefix-pool-size", &p.pool_size);
        out.opt(&format!("{k}.length"), "--prompt-prefix-length", &p.length);
        out.opt(&format!("{k}.sharedSystemLength"), "--shared-system-prompt-length", &p.shared_system_length);
        out.opt(&format!("{k}.userContextLength"), "--user-context-prompt-length", &p.user_context_length);
    }
    dist(out, &format!("{key}.turns"), &d.turns, "--conversation-turn-mean", "--conversation-turn-stddev")?;
    dist(
        out,
        &format!("{key}.turnDelay"),
        &d.turn_delay,
        "--conversation-turn-delay-mean",
        "--conversation-turn-delay-stddev",
    )?;
    out.opt(&format!("{key}.turnDelayRatio"), "--conversation-turn-delay-ratio", &d.turn_delay_ratio);
    for (name, v, flag) in [
        ("images", &d.images, "--image-width-mean"),
        ("audio", &d.audio, "--audio-length-mean"),
        ("video", &d.video, "--video-duration"),
        ("rankings", &d.rankings, "--rankings-passages-mean"),
        ("filters", &d.filters, "--dataset-filter"),
    ] {
        if let Some(v) = v {
            out.raw(&format!("{key}.{name}"), v, flag);
        }
    }
    if let Some(v) = &d.cache_bust {
        cache_bust(out, &format!("{key}.cacheBust"), v)?;
    }
    // File datasets.
    if d.path.is_some() && d.records.is_some() {
        bail_key!(
            format!("{key}.path"),
            "keys `{key}.path` and `{key}.records` are both given: accepted is one of them"
        );
    }
    out.opt(&format!("{key}.path"), "--input-file", &d.path);
    match &d.records {
        Some(records) => inline_records(out, key, records, &d.format)?,
        None => out.opt(&format!("{key}.format"), "--custom-dataset-type", &d.format),
    }
    if let Some(s) = &d.synthesis {
        let k = format!("{key}.synthesis");
        out.opt(&format!("{k}.speedupRatio"), "--synthesis-speedup-ratio", &s.speedup_ratio);
        out.opt(&format!("{k}.prefixLenMultiplier"), "--synthesis-prefix-len-multiplier", &s.prefix_len_multiplier);
        out.opt(&format!("{k}.prefixRootMultiplier"), "--synthesis-prefix-root-multiplier", &s.prefix_root_multiplier);
        out.opt(&format!("{k}.promptLenMultiplier"), "--synthesis-prompt-len-multiplier", &s.prompt_len_multiplier);
        out.opt(&format!("{k}.outputLenMultiplier"), "--synthesis-output-len-multiplier", &s.output_len_multiplier);
        out.opt(&format!("{k}.maxIsl"), "--synthesis-max-isl", &s.max_isl);
        out.opt(&format!("{k}.maxOsl"), "--synthesis-max-osl", &s.max_osl);
        out.switch(
            &format!("{k}.allowDatasetWrap"),
            &s.allow_dataset_wrap,
            "--allow-dataset-wrap",
            Some("--no-allow-dataset-wrap"),
        )?;
    }
    out.opt(&format!("{key}.traceSessionSampleRatio"), "--trace-session-sample-ratio", &d.trace_session_sample_ratio);
    out.opt(
        &format!("{key}.interTurnDelayCapSeconds"),
        "--inter-turn-delay-cap-seconds",
        &d.inter_turn_delay_cap_seconds,
    );
    out.opt(&format!("{key}.maxIdleGapCapSeconds"), "--max-idle-gap-cap-seconds", &d.max_idle_gap_cap_seconds);
    out.opt(&format!("{key}.replaySpeedup"), "--replay-speedup", &d.replay_speedup);
    out.switch(
        &format!("{key}.openLoopReplay"),
        &d.open_loop_replay,
        "--open-loop-replay",
        Some("--no-open-loop-replay"),
    )?;
    out.switch(&format!("{key}.openLoopStrict"), &d.open_loop_strict, "--open-loop-strict", None)?;
    out.switch(&format!("{key}.omitKvHints"), &d.omit_kv_hints, "--omit-kv-hints", None)?;
    out.switch(
        &format!("{key}.forceMinTokens"),
        &d.force_min_tokens,
        "--force-min-tokens",
        Some("--no-force-min-tokens"),
    )?;
    out.opt(&format!("{key}.promptBatchSize"), "--prompt-batch-size", &d.prompt_batch_size);
    out.opt(&format!("{key}.imageBatchSize"), "--image-batch-size", &d.image_batch_size);
    out.opt(&format!("{key}.audioBatchSize"), "--audio-batch-size", &d.audio_batch_size);
    out.opt(&format!("{key}.videoBatchSize"), "--video-batch-size", &d.video_batch_size);
    out.opt(&format!("{key}.blockSize"), "--isl-block-size", &d.block_size);
    out.opt(&format!("{key}.traceIdleGapCapSeconds"), "--trace-idle-gap-cap-seconds", &d.trace_idle_gap_cap_seconds);
    out.switch(&format!("{key}.ignoreTraceDelays"), &d.ignore_trace_delays, "--ignore-trace-delays", None)?;
    out.switch(&format!("{key}.useThinkTimeOnly"), &d.use_think_time_only, "--use-think-time-only", None)?;
    out.opt(&format!("{key}.maxContextLength"), "--max-context-length", &d.max_context_length);
    out.opt(&format!("{key}.hfSubset"), "--hf-subset", &d.hf_subset);
    out.opt(&format!("{key}.hfWekaDataset"), "--hf-weka-dataset", &d.hf_weka_dataset);
    Ok(())
}

/// Inline records (`records:`, AIPerf's single_turn by default), each checked as the same line of
/// a single_turn file would be, as `--inline-records`.
fn inline_records(out: &mut Out, key: &str, records: &[Value], format: &Option<Scalar>) -> Result<()> {
    let k = format!("{key}.records");
    if let Some(f) = format
        && f.to_string() != "single_turn"
    {
        return Err(refused(
            &format!("{key}.format"),
            &f.to_string(),
            "not yet supported: inline records other than single_turn (multi_turn conversations, random_pool pools)",
            "give single_turn records (records of one session_id are the turns of one conversation)",
        ));
    }
    if records.is_empty() {
        bail_key!(k.clone(), "key `{k}` = []: accepted is at least one record");
    }
    let json: Vec<serde_json::Value> = records.iter().map(|r| yaml_json(r, false)).collect();
    for (i, r) in json.iter().enumerate() {
        if let Err(e) = aiperf_core::trace::single_turn::record_row(r, i as u64 + 1) {
            let at = if e.field.is_empty() { format!("{k}[{i}]") } else { format!("{k}[{i}].{}", e.field) };
            bail_key!(at.clone(), "key `{at}` = {}: accepted is {}", e.value, e.expected);
        }
    }
    let n = json.len();
    out.push(&k, format!("{n} records"), vec![kv("--inline-records", serde_json::Value::Array(json))]);
    Ok(())
}

/// `sequenceDistribution: [{isl, islStddev, osl, oslStddev, probability}, …]` as `--seq-dist`
/// (`ISL[|STDDEV],OSL[|STDDEV]:PROBABILITY;…`).
fn sequence_distribution(out: &mut Out, key: &str, v: &Value) -> Result<()> {
    let Value::Sequence(items) = v else {
        bail_key!(format!("{key}"), "key `{key}` = {}: accepted is a list of {{isl, osl, probability}}", show(v));
    };
    let mut parts = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let Value::Mapping(m) = item else {
            bail_key!(
                format!("{key}[{i}]"),
                "key `{key}[{i}]` = {}: accepted is {{isl, osl, probability}}",
                show(item)
            );
        };
        let get = |names: &[&str]| names.iter().find_map(|n| m.get(*n)).map(show);
        for (k, _) in m {
            let k = show(k);
            if !["isl", "islStddev", "isl_stddev", "osl", "oslStddev", "osl_stddev", "probability"]
                .contains(&k.as_str())
            {
                bail_key!(
                    format!("{key}[{i}].{k}"),
                    "key `{key}[{i}].{k}`: accepted keys are isl, islStddev, osl, oslStddev, probability"
                );
            }
        }
        let (Some(isl), Some(osl), Some(p)) = (get(&["isl"]), get(&["osl"]), get(&["probability"])) else {
            bail_key!(
                format!("{key}[{i}]"),
                "key `{key}[{i}]` = {}: accepted is {{isl, osl, probability}} (each required)",
                show(item)
            );
        };
        let side = |mean: String, sd: Option<String>| match sd {
            Some(sd) => format!("{mean}|{sd}"),
            None => mean,
        };
        parts.push(format!(
            "{},{}:{p}",
            side(isl, get(&["islStddev", "isl_stddev"])),
            side(osl, get(&["oslStddev", "osl_stddev"]))
        ));
    }
    out.push(key, show(v), vec![kv("--seq-dist", parts.join(";"))]);
    Ok(())
}
