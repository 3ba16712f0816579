//! What the worker computes, as pure functions of a parsed trace (tested natively).

use aiperf_core::analysis::{Analysis, RowMetrics, analyze_with_rows};
use aiperf_core::trace::Trace;

use crate::chart_data::{Dist, Series};
use crate::protocol::{AnalysisView, BadRow, Charts};

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
}
