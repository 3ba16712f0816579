//! What the worker computes, as pure functions of a parsed trace (tested natively).

use std::rc::Rc;

use aiperf_core::analysis::{Analysis, RowMetrics, analyze_for_comparison, analyze_with_rows};
use aiperf_core::synthesis::{Mode, Param, PrefixModel, SynthesisError, SynthesisSettings, transform};
use aiperf_core::trace::Trace;

use crate::chart_data::{Dist, Series};
use crate::protocol::{AnalysisView, BadRow, Charts, SynthView};

/// Points of the arrivals chart at most.
const ARRIVAL_POINTS: usize = 240;
/// The core's arrival series has 1-second windows up to this many, coarser beyond.
const CORE_MAX_SERIES: usize = 100_000;

/// The analysis as the CLI writes it with `--output-file`.
pub fn analysis_json(a: &Analysis) -> String {
    match serde_json::to_string_pretty(a) {
        Ok(s) => s + "\n",
        Err(e) => format!("{{\"error\": \"cannot serialize the analysis: {e}\"}}\n"),
    }
}

/// Analysis and chart data of a trace.
pub fn analysis_view(trace: &Trace, block_size: u32) -> AnalysisView {
    let (a, rows) = analyze_with_rows(trace, block_size);
    let charts = charts(&a, &rows);
    AnalysisView { block_size, analysis: Rc::new(a), charts, compute_ms: 0.0 }
}

/// The charted distributions.
pub fn charts(a: &Analysis, m: &RowMetrics) -> Charts {
    let arrivals = a.arrivals.as_ref().map_or_else(Series::default, |arr| {
        let seconds = arr.duration_s.floor() as usize + 1;
        let window = if seconds > CORE_MAX_SERIES { seconds.div_ceil(CORE_MAX_SERIES) } else { 1 };
        Series::rates(&arr.requests_per_second, window as f64, ARRIVAL_POINTS)
    });
    Charts {
        isl: Rc::new(Dist::lengths(&m.isl)),
        osl: Rc::new(Dist::lengths(&m.osl)),
        context_length: Rc::new(Dist::lengths(&m.context_length)),
        hit_rate: Rc::new(Dist::fractions(&m.hit_rate)),
        arrivals: Rc::new(arrivals),
    }
}

/// The generative model learned from a trace, reused while only sampling knobs change.
#[derive(Default)]
pub struct ModelCache {
    model: Option<(u32, PrefixModel)>,
}

/// Synthesizes a trace: the same core calls as `aiperf-cli synthesize-trace`.
pub fn synthesize(trace: &Trace, s: &SynthesisSettings, cache: &mut ModelCache) -> Result<Trace, String> {
    s.validate().map_err(explain)?;
    let bs = s.params.block_size;
    match s.mode {
        Mode::Transform => transform(trace, &s.transform_params()).map_err(explain),
        Mode::Generate => {
            if cache.model.as_ref().is_none_or(|(b, _)| *b != bs) {
                cache.model = Some((bs, PrefixModel::learn(trace, bs).map_err(explain)?));
            }
            match &cache.model {
                Some((_, model)) => model.sample(&s.params).map_err(explain),
                None => Err("no model".into()),
            }
        }
    }
}

/// A core error in the page's words (parameters named by their label on the page).
fn explain(e: SynthesisError) -> String {
    match e.param().and_then(Param::from_key) {
        Some(p) => format!("{}: {e}", p.label()),
        None => e.to_string(),
    }
}

/// Name of the synthesized file, from the input's name and the seed.
pub fn synth_file_name(input: &str, seed: &str) -> String {
    let stem = input.trim_end_matches(".gz").trim_end_matches(".jsonl");
    let seed: String = seed.chars().filter(char::is_ascii_alphanumeric).collect();
    format!("{stem}.synth-seed{seed}.jsonl")
}

/// Before/after view of a synthesized trace (its analysis without the LRU curve, which the
/// comparison does not show).
pub fn synth_view(synthesized: &Trace, settings: &SynthesisSettings) -> SynthView {
    let (a, m) = analyze_for_comparison(synthesized, settings.params.block_size);
    SynthView {
        settings: settings.clone(),
        rows: synthesized.len() as u64,
        analysis: Rc::new(a),
        isl: Rc::new(Dist::lengths(&m.isl)),
        osl: Rc::new(Dist::lengths(&m.osl)),
        arrivals: Vec::new(),
        compute_ms: 0.0,
    }
}

/// The core's row errors as plain data.
pub fn bad_rows(errors: &[aiperf_core::trace::RowError]) -> Vec<BadRow> {
    errors.iter().map(|e| BadRow { line: e.line, field: e.field.clone(), reason: e.reason.clone() }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use aiperf_core::trace::{ParseOptions, parse_str};

    fn fixture(name: &str) -> String {
        let p = format!("{}/../../tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
    }

    #[test]
    fn analysis_json_is_the_cli_output_and_matches_the_golden_numbers() {
        let trace = parse_str(&fixture("traces/synthetic_trace.jsonl"), ParseOptions::default()).unwrap().trace;
        let view = analysis_view(&trace, 512);
        let a = aiperf_core::analysis::analyze(&trace, 512);
        let json = analysis_json(&view.analysis);
        assert_eq!(json, serde_json::to_string_pretty(&a).unwrap() + "\n");
        let golden: serde_json::Value =
            serde_json::from_str(&fixture("golden/aiperf-0.13.0/analyze/synthetic_trace_bs512.json")).unwrap();
        let ours: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(ours["total_requests"], golden["total_requests"]);
        assert_eq!(ours["unique_prefixes"], golden["unique_prefixes"]);
        let rel = |k: &str| (ours[k].as_f64().unwrap() - golden[k].as_f64().unwrap()).abs();
        assert!(rel("cache_hit_rate") < 1e-12 && rel("avg_isl") < 1e-9);
        // Every row is in a histogram bar or the overflow.
        let isl = &view.charts.isl;
        assert_eq!(isl.counts.iter().sum::<u64>() + isl.overflow, 3993);
        assert!(!view.charts.arrivals.points.is_empty());
    }

    #[test]
    fn synthesis_uses_the_core_like_the_cli() {
        let trace = parse_str(&fixture("traces/conversation_head500.jsonl"), ParseOptions::default()).unwrap().trace;
        let (mut form, _) = crate::params::Form::from_query("?speedup_ratio=2&prefix_root_multiplier=2&seed=7");
        let s = form.synth().unwrap();
        let mut cache = ModelCache::default();
        let ours = synthesize(&trace, &s, &mut cache).unwrap();
        let cli = transform(&trace, &s.transform_params()).unwrap();
        assert_eq!(aiperf_core::trace::write_trace(&ours), aiperf_core::trace::write_trace(&cli));
        assert_eq!(synth_view(&ours, &s).rows, 500);
        form.mode = Mode::Generate;
        form.set(Param::NumRequests, "50");
        let g = form.synth().unwrap();
        let a = synthesize(&trace, &g, &mut cache).unwrap();
        let b = aiperf_core::synthesis::generate(&trace, &g.params).unwrap();
        assert_eq!(a.len(), 50);
        assert_eq!(aiperf_core::trace::write_trace(&a), aiperf_core::trace::write_trace(&b));
    }

    #[test]
    fn errors_name_the_field_by_its_label() {
        let trace = parse_str("{\"input_length\":10,\"hash_ids\":[1]}\n", ParseOptions::default()).unwrap().trace;
        let (mut form, _) = crate::params::Form::from_query("?min_isl=9&max_isl=5&mode=generate");
        let err = synthesize(&trace, &form.synth().unwrap(), &mut ModelCache::default()).unwrap_err();
        assert_eq!(err, "Max input length: max_isl must be at least min_isl (9), got 5");
        form.mode = Mode::Transform;
        assert!(synthesize(&trace, &form.synth().unwrap(), &mut ModelCache::default()).is_ok());
        assert_eq!(synth_file_name("a/b.jsonl.gz", "4 2"), "a/b.synth-seed42.jsonl");
    }
}
