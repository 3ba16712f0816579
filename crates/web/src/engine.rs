//! What the worker computes, as pure functions of a parsed trace (tested natively).

use aiperf_core::analysis::{Analysis, RowMetrics, analyze_with_rows};
use aiperf_core::synthesis::{GenerateParams, PrefixModel, SynthesisError, TransformParams, transform};
use aiperf_core::trace::Trace;

use crate::chart_data::{Dist, Series};
use crate::params::{Field, Mode, SynthSettings};
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

/// Analysis JSON and chart data of a trace.
pub fn analysis_view(trace: &Trace, block_size: u32) -> AnalysisView {
    let (a, rows) = analyze_with_rows(trace, block_size);
    AnalysisView { block_size, json: analysis_json(&a), charts: charts(&a, &rows), compute_ms: 0.0 }
}

/// The charted distributions.
pub fn charts(a: &Analysis, m: &RowMetrics) -> Charts {
    let arrivals = a.arrivals.as_ref().map_or_else(Series::default, |arr| {
        let seconds = arr.duration_s.floor() as usize + 1;
        let window = if seconds > CORE_MAX_SERIES { seconds.div_ceil(CORE_MAX_SERIES) } else { 1 };
        Series::rates(&arr.requests_per_second, window as f64, ARRIVAL_POINTS)
    });
    Charts {
        isl: Dist::lengths(&m.isl),
        osl: Dist::lengths(&m.osl),
        context_length: Dist::lengths(&m.context_length),
        hit_rate: Dist::fractions(&m.hit_rate),
        arrivals,
    }
}

/// The core's transform parameters for these settings.
pub fn transform_params(s: &SynthSettings) -> TransformParams {
    TransformParams {
        speedup_ratio: s.speedup_ratio,
        prefix_len_multiplier: s.prefix_len_multiplier,
        prefix_root_multiplier: s.prefix_root_multiplier,
        prompt_len_multiplier: s.prompt_len_multiplier,
        output_len_multiplier: s.output_len_multiplier,
        max_isl: s.max_isl,
        max_osl: s.max_osl,
        block_size: s.block_size,
        seed: s.seed,
    }
}

/// The core's generation parameters for these settings.
pub fn generate_params(s: &SynthSettings) -> GenerateParams {
    GenerateParams {
        num_requests: usize::try_from(s.num_requests).unwrap_or(usize::MAX),
        speedup_ratio: s.speedup_ratio,
        prefix_len_multiplier: s.prefix_len_multiplier,
        prefix_root_multiplier: s.prefix_root_multiplier,
        prompt_len_multiplier: s.prompt_len_multiplier,
        output_len_multiplier: s.output_len_multiplier,
        min_isl: s.min_isl,
        max_isl: s.max_isl,
        min_osl: s.min_osl,
        max_osl: s.max_osl,
        block_size: s.block_size,
        seed: s.seed,
    }
}

/// The generative model learned from a trace, reused while only sampling knobs change.
#[derive(Default)]
pub struct ModelCache {
    model: Option<(u32, PrefixModel)>,
}

/// Synthesizes a trace: the same core calls as `aiperf-cli synthesize-trace`.
pub fn synthesize(trace: &Trace, s: &SynthSettings, cache: &mut ModelCache) -> Result<Trace, String> {
    match s.mode {
        Mode::Transform => {
            let p = transform_params(s);
            p.validate().map_err(explain)?;
            transform(trace, &p).map_err(explain)
        }
        Mode::Generate => {
            let p = generate_params(s);
            p.validate().map_err(explain)?;
            if cache.model.as_ref().is_none_or(|(bs, _)| *bs != s.block_size) {
                cache.model = Some((s.block_size, PrefixModel::learn(trace, s.block_size).map_err(explain)?));
            }
            match &cache.model {
                Some((_, model)) => model.sample(&p).map_err(explain),
                None => Err("no model".into()),
            }
        }
    }
}

/// A core error in the page's words (parameter names as labelled on the page).
fn explain(e: SynthesisError) -> String {
    let label = e.param().and_then(|p| Field::ALL.iter().find(|f| f.key() == p)).map(|f| f.label());
    match label {
        Some(l) => format!("{l}: {e}"),
        None => e.to_string(),
    }
}

/// Before/after view of a synthesized trace.
pub fn synth_view(synthesized: &Trace, settings: &SynthSettings) -> SynthView {
    let (a, m) = analyze_with_rows(synthesized, settings.block_size);
    SynthView {
        settings: settings.clone(),
        rows: synthesized.len() as u64,
        json: analysis_json(&a),
        isl: Dist::lengths(&m.isl),
        osl: Dist::lengths(&m.osl),
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
        assert_eq!(view.json, serde_json::to_string_pretty(&a).unwrap() + "\n");
        let golden: serde_json::Value =
            serde_json::from_str(&fixture("golden/aiperf-0.13.0/analyze/synthetic_trace_bs512.json")).unwrap();
        let ours: serde_json::Value = serde_json::from_str(&view.json).unwrap();
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
        let cli = transform(&trace, &transform_params(&s)).unwrap();
        assert_eq!(aiperf_core::trace::write_trace(&ours), aiperf_core::trace::write_trace(&cli));
        assert_eq!(synth_view(&ours, &s).rows, 500);
        form.mode = Mode::Generate;
        form.set(Field::NumRequests, "50");
        let g = form.synth().unwrap();
        let a = synthesize(&trace, &g, &mut cache).unwrap();
        let b = aiperf_core::synthesis::generate(&trace, &generate_params(&g)).unwrap();
        assert_eq!(a.len(), 50);
        assert_eq!(aiperf_core::trace::write_trace(&a), aiperf_core::trace::write_trace(&b));
    }
}
