//! Transform synthesis: AIPerf 0.13.0's prefix synthesizer, row for row, seed-compatible.
//!
//! Each row's leading run of shared ids (ids occurring at least twice in the trace) is its prefix;
//! the prefix is stretched or cut by `prefix_len_multiplier`, the rest of the prompt is scaled by
//! `prompt_len_multiplier` and gets fresh ids, prefix trees are replicated by
//! `prefix_root_multiplier` (one CPython `randint` per row), and timestamps and output lengths are
//! scaled. [`transform`] wraps this the way `aiperf profile` loads a trace; [`synthesize_direct`]
//! is the synthesizer alone.

use super::error::{SynthesisError, room_for, to_i64, to_u64};
use super::params::TransformParams;
use super::settings::SynthesisSettings;
use crate::analysis::Interner;
use crate::rng::{PyRandom, SYNTHESIZER_COMPONENT, derive_seed};
use crate::trace::{Input, Number, Row, Trace};

impl TransformParams {
    /// Rejects parameters outside their range ([`super::Param`]), naming the first one at fault.
    pub fn validate(&self) -> Result<(), SynthesisError> {
        SynthesisSettings::from(self).validate()
    }

    /// Whether any synthesis option differs from its default. AIPerf's loader only runs the
    /// synthesizer then; `max_isl`/`max_osl` alone just filter and cap.
    pub fn synthesizes(&self) -> bool {
        self.speedup_ratio != 1.0
            || self.prefix_len_multiplier != 1.0
            || self.prefix_root_multiplier != 1
            || self.prompt_len_multiplier != 1.0
            || self.output_len_multiplier != 1.0
    }
}

/// Transforms a trace as `aiperf profile` would replay it: rows with `input_length > max_isl` are
/// dropped, the synthesizer runs if any synthesis option is set, output lengths are capped.
pub fn transform(trace: &Trace, params: &TransformParams) -> Result<Trace, SynthesisError> {
    params.validate()?;
    let keep = |row: &Row| match (params.max_isl, row.input_length()) {
        (Some(max), Some(isl)) => isl <= 0 || (isl as u64) <= max,
        _ => true,
    };
    let filtered;
    let kept = if trace.rows().iter().all(keep) {
        trace
    } else {
        let mut t = Trace::with_capacity(trace.len(), trace.total_hash_ids());
        for (row, ids) in trace.iter().filter(|(row, _)| keep(row)) {
            t.push(row.clone(), ids.iter().copied());
        }
        filtered = t;
        &filtered
    };
    if params.synthesizes() {
        return synthesize_direct(kept, params);
    }
    if let Some(max_osl) = params.max_osl {
        let mut capped = Trace::with_capacity(kept.len(), kept.total_hash_ids());
        for (row, ids) in kept.iter() {
            let mut row = row.clone();
            row.output_length = row.output_length.map(|o| o.min(max_osl));
            capped.push(row, ids.iter().copied());
        }
        return Ok(capped);
    }
    Ok(kept.clone())
}

/// AIPerf's synthesizer alone (no loader filtering), with its three defects fixed:
/// partial last blocks of all-shared rows, untrimmed ids under `max_isl`, and the phantom block of
/// `prefix_len_multiplier < 1` on rows without a shared prefix.
pub fn synthesize_direct(trace: &Trace, params: &TransformParams) -> Result<Trace, SynthesisError> {
    params.validate()?;
    let bs = i64::from(params.block_size);
    let shared = SharedIds::of(trace);
    let p = params.prefix_len_multiplier;
    let m: u64 = if p > 1.0 { p.floor() as u64 } else { 1 };
    let overflow = |row: &Row, id: u64| SynthesisError::IdOverflow { line: row.line, id };
    let mut next = shared.max.map_or(Some(1), |s| s.checked_add(1)).and_then(|n| n.checked_mul(m));
    let mut fresh = || -> Option<u64> {
        let n = next?.checked_add(1)?;
        next = Some(n);
        Some(n)
    };

    // Pass 1: new ids and input lengths; ids go to one arena, rows remember their range.
    let mut arena: Vec<u64> = Vec::with_capacity(trace.total_hash_ids());
    let mut rows: Vec<(Row, usize, usize)> = Vec::with_capacity(trace.len());
    for (row, ids) in trace.iter() {
        let mut out = row.clone();
        let start = arena.len();
        if let (Input::Length(isl), false) = (&row.input, ids.is_empty()) {
            let range = trace.hash_ids_range(row);
            let pre_len = range.clone().take_while(|&i| shared.contains(i)).count();
            let pre = &ids[..pre_len];
            let prefix_len = pre_len as i64 * bs;
            // Defect 1: AIPerf aborts when a fully shared row ends in a partial block. We keep
            // the partial block: no prompt, and the deficit comes off the new prefix.
            let (prompt_len, deficit) =
                if *isl >= prefix_len { (*isl - prefix_len, 0) } else { (0, prefix_len - *isl) };
            let new_prefix_len = if p > 1.0 {
                let target = (pre_len as f64 * p).ceil() as usize;
                room_for(arena.len(), target as u64)?;
                for &h in pre {
                    let scaled = h.checked_mul(m).ok_or_else(|| overflow(row, h))?;
                    arena.extend((0..m).map(|j| scaled + j));
                }
                for _ in pre_len * m as usize..target {
                    arena.push(fresh().ok_or_else(|| overflow(row, u64::MAX))?);
                }
                (arena.len() - start) as i64 * bs
            } else if p < 1.0 {
                // Defect 3: AIPerf keeps max(1, ·) blocks even without a shared prefix.
                let k = if pre_len == 0 { 0 } else { ((pre_len as f64 * p) as usize).max(1) };
                arena.extend_from_slice(&pre[..k]);
                k as i64 * bs
            } else {
                arena.extend_from_slice(pre);
                prefix_len
            };
            let new_prompt = (prompt_len as f64 * params.prompt_len_multiplier) as i64;
            let prompt_blocks = (new_prompt as u64).div_ceil(bs as u64);
            room_for(arena.len(), prompt_blocks)?;
            for _ in 0..prompt_blocks {
                arena.push(fresh().ok_or_else(|| overflow(row, u64::MAX))?);
            }
            let new_isl = new_prefix_len + new_prompt - deficit;
            out.input = Input::Length(if deficit > 0 { new_isl.max(1) } else { new_isl });
        }
        rows.push((out, start, arena.len() - start));
    }

    // Pass 2: spread rows over prefix-root copies, scale time and output, cap lengths.
    let r = u64::from(params.prefix_root_multiplier);
    let base = next.and_then(|n| n.checked_add(1));
    let mut rng = (r > 1).then(|| PyRandom::new(derive_seed(params.seed, SYNTHESIZER_COMPONENT)));
    let mut result = Trace::with_capacity(rows.len(), arena.len());
    for (mut row, start, len) in rows {
        let ids = &mut arena[start..start + len];
        if let (Some(rng), false) = (rng.as_mut(), ids.is_empty()) {
            let k = rng.randint(0, r - 1);
            let offset = base.and_then(|b| b.checked_mul(k)).ok_or_else(|| overflow(&row, u64::MAX))?;
            for id in ids.iter_mut() {
                *id = id.checked_add(offset).ok_or_else(|| overflow(&row, *id))?;
            }
        }
        let too_big = |field, value: String| SynthesisError::ValueOverflow { line: row.line, field, value };
        if let Some(t) = row.timestamp {
            let scaled = to_i64(t.as_f64() / params.speedup_ratio)
                .ok_or_else(|| too_big("timestamp", t.as_f64().to_string()))?;
            row.timestamp = Some(Number::Int(scaled));
        }
        if let Some(o) = row.output_length {
            let scaled = to_u64((o as f64 * params.output_len_multiplier).round_ties_even())
                .ok_or_else(|| too_big("output_length", o.to_string()))?
                .max(1);
            row.output_length = Some(params.max_osl.map_or(scaled, |cap| scaled.min(cap)));
        }
        let mut keep_ids = len;
        if let Input::Length(isl) = &mut row.input {
            if let Some(max) = params.max_isl.filter(|&max| *isl > 0 && *isl as u64 > max) {
                *isl = max as i64;
            }
            // Defect 2: AIPerf caps input_length under max_isl but keeps every id. We keep
            // ceil(input_length / bs) ids, so the row can be replayed.
            if len > 0 {
                keep_ids = len.min(((*isl).max(1) + bs - 1) as usize / bs as usize);
            }
        }
        result.push(row, ids[..keep_ids].iter().copied());
    }
    Ok(result)
}

/// Which ids occur at least twice in the whole trace (repeats inside one row count).
struct SharedIds {
    /// The number of each id of the arena (first-seen order).
    numbers: Vec<u32>,
    count: Vec<u8>,
    max: Option<u64>,
}

impl SharedIds {
    fn of(trace: &Trace) -> Self {
        let all = trace.all_hash_ids();
        let mut interner = Interner::new();
        let numbers: Vec<u32> = all.iter().map(|&id| interner.intern(id)).collect();
        let mut count = vec![0u8; interner.size()];
        let mut max = None;
        for (&n, &id) in numbers.iter().zip(all) {
            let c = &mut count[n as usize];
            *c = c.saturating_add(1);
            if *c >= 2 && max.is_none_or(|m| id > m) {
                max = Some(id);
            }
        }
        SharedIds { numbers, count, max }
    }

    /// Whether the id at arena position `i` is shared.
    fn contains(&self, i: usize) -> bool {
        self.count[self.numbers[i] as usize] >= 2
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn trace(rows: &[(i64, &[u64])]) -> Trace {
        rows.iter()
            .map(|&(isl, ids)| {
                let mut row = Row::new(Input::Length(isl));
                row.output_length = Some(10);
                (row, ids.to_vec())
            })
            .collect()
    }

    fn out(t: &Trace) -> Vec<(i64, Vec<u64>)> {
        t.iter().map(|(r, ids)| (r.input_length().unwrap_or(-1), ids.to_vec())).collect()
    }

    fn params() -> TransformParams {
        TransformParams { block_size: 4, ..TransformParams::default() }
    }

    #[test]
    fn identity_renumbers_unshared_ids_after_the_shared_ones() {
        let t = trace(&[(10, &[1, 2, 3]), (7, &[1, 5])]);
        let got = synthesize_direct(&t, &params()).unwrap();
        // shared = {1}; fresh ids start at (1 + 1) * 1 + 1 = 3.
        assert_eq!(out(&got), vec![(10, vec![1, 3, 4]), (7, vec![1, 5])]);
    }

    #[test]
    fn prefix_multiplier_two_doubles_the_shared_blocks() {
        let t = trace(&[(10, &[1, 2, 3]), (6, &[1, 2])]);
        let p = TransformParams { prefix_len_multiplier: 2.0, ..params() };
        let got = synthesize_direct(&t, &p).unwrap();
        // shared = {1, 2}; m = 2; next = 3 * 2 = 6. Row 2 is all shared with a partial block.
        assert_eq!(out(&got), vec![(18, vec![2, 3, 4, 5, 7]), (14, vec![2, 3, 4, 5])]);
    }

    #[test]
    fn fully_shared_row_with_partial_block_keeps_its_deficit() {
        let t = trace(&[(7, &[1, 2]), (7, &[1, 2])]);
        let p = TransformParams { prompt_len_multiplier: 3.0, ..params() };
        let got = synthesize_direct(&t, &p).unwrap();
        assert_eq!(out(&got), vec![(7, vec![1, 2]), (7, vec![1, 2])]);
    }

    #[test]
    fn short_prefix_multiplier_adds_no_phantom_block() {
        let t = trace(&[(6, &[7, 8])]);
        let p = TransformParams { prefix_len_multiplier: 0.5, ..params() };
        let got = synthesize_direct(&t, &p).unwrap();
        // No shared ids: fresh ids start at (0 + 1) * 1 + 1 = 2.
        assert_eq!(out(&got), vec![(6, vec![2, 3])]);
    }

    #[test]
    fn max_isl_trims_ids() {
        let t = trace(&[(16, &[1, 2, 3, 4])]);
        let p = TransformParams { max_isl: Some(5), prompt_len_multiplier: 2.0, ..params() };
        let got = synthesize_direct(&t, &p).unwrap();
        assert_eq!(out(&got), vec![(5, vec![2, 3])]);
    }

    #[test]
    fn time_and_output_are_scaled() {
        let mut row = Row::new(Input::Length(3));
        row.timestamp = Some(Number::Int(7));
        row.output_length = Some(5);
        let t: Trace = [(row, vec![1])].into_iter().collect();
        let p = TransformParams { speedup_ratio: 2.0, output_len_multiplier: 0.5, max_osl: Some(100), ..params() };
        let got = synthesize_direct(&t, &p).unwrap();
        let r = &got.rows()[0];
        // int(7 / 2) = 3; round_half_even(2.5) = 2.
        assert_eq!((r.timestamp, r.output_length), (Some(Number::Int(3)), Some(2)));
    }

    #[test]
    fn invalid_parameters_are_named() {
        let cases = [
            TransformParams { speedup_ratio: 0.0, ..params() },
            TransformParams { prefix_len_multiplier: -1.0, ..params() },
            TransformParams { prefix_root_multiplier: 0, ..params() },
            TransformParams { prompt_len_multiplier: f64::NAN, ..params() },
            TransformParams { output_len_multiplier: -0.5, ..params() },
            TransformParams { max_isl: Some(0), ..params() },
            TransformParams { block_size: 0, ..params() },
        ];
        let names: Vec<_> = cases.iter().map(|p| p.validate().unwrap_err().param()).collect();
        assert_eq!(
            names,
            [
                Some("speedup_ratio"),
                Some("prefix_len_multiplier"),
                Some("prefix_root_multiplier"),
                Some("prompt_len_multiplier"),
                Some("output_len_multiplier"),
                Some("max_isl"),
                Some("block_size"),
            ]
        );
    }

    #[test]
    fn absurd_values_are_refused_and_huge_outputs_fail_instead_of_exhausting_memory() {
        let t = trace(&[(10, &[1, 2, 3]), (6, &[1, 2])]);
        for (p, param) in [
            (TransformParams { prefix_len_multiplier: 1e12, ..params() }, "prefix_len_multiplier"),
            (TransformParams { prompt_len_multiplier: 1e300, ..params() }, "prompt_len_multiplier"),
            (TransformParams { output_len_multiplier: 1e30, ..params() }, "output_len_multiplier"),
            (TransformParams { speedup_ratio: 1e-300, ..params() }, "speedup_ratio"),
        ] {
            assert_eq!(synthesize_direct(&t, &p).unwrap_err().param(), Some(param));
        }
        // Within range, but a 300,000-block shared prefix scaled 1000 times is too large.
        let ids: Vec<u64> = (0..300_000).collect();
        let long = trace(&[(1_200_000, &ids), (1_200_000, &ids)]);
        let p = TransformParams { prefix_len_multiplier: 1000.0, ..params() };
        assert_eq!(synthesize_direct(&long, &p), Err(SynthesisError::TooLarge { limit: super::super::MAX_OUTPUT_IDS }));
    }

    #[test]
    fn scaled_values_beyond_the_largest_integer_are_errors_not_saturated() {
        let mut row = Row::new(Input::Length(3));
        row.timestamp = Some(Number::Int(i64::MAX / 2));
        row.output_length = Some(u64::MAX / 2);
        row.line = 7;
        let t: Trace = [(row, vec![1])].into_iter().collect();
        let slow = TransformParams { speedup_ratio: 0.5, ..params() };
        assert_eq!(
            synthesize_direct(&t, &slow).unwrap_err().to_string(),
            format!(
                "line 7: timestamp {} scaled by the synthesis options exceeds the largest integer",
                (i64::MAX / 2) as f64
            )
        );
        let long = TransformParams { output_len_multiplier: 2.0, ..params() };
        assert!(matches!(
            synthesize_direct(&t, &long),
            Err(SynthesisError::ValueOverflow { line: 7, field: "output_length", .. })
        ));
    }

    #[test]
    fn params_round_trip_through_json_with_defaults() {
        let p: TransformParams = serde_json::from_str(r#"{"speedup_ratio": 2.0, "seed": 7}"#).unwrap();
        assert_eq!(p, TransformParams { speedup_ratio: 2.0, seed: 7, ..TransformParams::default() });
        let back: TransformParams = serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
        assert_eq!(back, p);
    }
}
