//! Messages between the page and the worker. They cross as bincode ([`crate::codec`]: files
//! beside it), so they hold only plain data (no `serde_json::Value`, no skipped fields);
//! analyses travel as the core's typed [`Analysis`], behind `Rc` so the page shares them instead
//! of copying them.

use std::rc::Rc;

use serde::{Deserialize, Serialize};

use crate::agentic::{AgenticRequest, AgenticView};
use crate::chart_data::{Dist, Series};
pub use crate::codec::FileRef;
use crate::what_if::SimView;
use aiperf_core::analysis::Analysis;
use aiperf_core::formats::settings::ConversionSettings;
use aiperf_core::simulate::Cluster;
use aiperf_core::synthesis::SynthesisSettings;
use aiperf_core::synthesis::fidelity::ArrivalCheck;

/// Page → worker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ToWorker {
    /// Read the file, then analyse it.
    /// `format`: a `Format` name chosen by the user; `None` detects it from the content.
    /// `more`: `(file, name)` of files merged after this one (several WEKA files).
    Load {
        file: FileRef,
        name: String,
        size: u64,
        block_size: u32,
        format: Option<String>,
        conversion: Box<ConversionSettings>,
        more: Vec<(FileRef, String)>,
    },
    /// Analyse the loaded trace again with another block size.
    Analyze { block_size: u32 },
    /// Synthesize from the loaded trace and compare with the original.
    Synthesize { settings: SynthesisSettings },
    /// Send back the synthesized trace as JSONL.
    Export { settings: SynthesisSettings },
    /// Read finished runs (`profile_export.jsonl`, optionally with `profile_export_aiperf.json`
    /// and `server_metrics_export.json`) and sweep or search summaries (`(file, name)`).
    LoadRuns { runs: Vec<RunFiles>, curves: Vec<(FileRef, String)> },
    /// Show the loaded runs again with these labels and this baseline (0-based).
    ShowRuns { labels: Vec<String>, baseline: usize },
    /// The record of request `index` of run `run`.
    Describe { run: usize, index: u32 },
    /// Send back the loaded (converted) trace as Mooncake JSONL: `convert-trace`'s bytes.
    ExportConverted,
    /// Simulate the loaded trace on this cluster ("What if"); a newer request replaces one not
    /// yet started.
    Simulate { cluster: Cluster },
    /// Generate AIPerf's agentic-code sessions.
    Agentic { request: AgenticRequest },
    /// Send back a file of the last agentic dataset (`dataset.jsonl`, `manifest.json`, …).
    AgenticFile { name: String },
}

/// The files of one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunFiles {
    pub label: String,
    pub records: FileRef,
    pub records_name: String,
    /// `(file, name)` of the summary file, when one was dropped with it.
    pub config: Option<(FileRef, String)>,
    /// `(file, name)` of its `server_metrics_export.json`, when one was dropped with it.
    pub server: Option<(FileRef, String)>,
}

/// Runs ready to show: the HTML of the run view (the CLI report's, from the same core code).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunsView {
    pub labels: Vec<String>,
    pub baseline: usize,
    /// Requests per run.
    pub records: Vec<u64>,
    pub html: String,
    pub compute_ms: f64,
    /// Where `compute_ms` went.
    pub stages: RunStages,
}

/// The worker's time (ms) per stage of a run view, summed over its runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunStages {
    /// Waiting for the files' bytes and copying them into the worker's memory.
    pub read_ms: f64,
    /// Records parsed and added to the aggregate and the points.
    pub parse_ms: f64,
    /// The summary of the aggregate (percentiles and time-weighted metrics).
    pub summary_ms: f64,
    /// The run view's HTML (chart data and SVG).
    pub html_ms: f64,
    /// Chunks the records' bytes arrived in.
    pub chunks: u64,
    /// Runs whose time-weighted curves were computed in part by the helper.
    pub curves_apart: u64,
    /// Records the helper read.
    pub records_apart: u64,
}

/// Worker → page.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum FromWorker {
    Progress(Progress),
    /// The file is parsed; the analysis follows.
    Loaded(FileSummary),
    /// The file could not be read (or no row is valid).
    LoadFailed {
        message: String,
        bad_rows: Vec<BadRow>,
        bad_total: u64,
    },
    Analysis(Box<AnalysisView>),
    Synthesis(Box<SynthView>),
    SynthFailed {
        message: String,
    },
    /// Runs read and drawn.
    Runs(Box<RunsView>),
    /// A run could not be read.
    RunsFailed {
        message: String,
    },
    /// A request's record (answer to [`ToWorker::Describe`]).
    Record {
        run: usize,
        index: u32,
        text: String,
    },
    /// The converted trace as Mooncake JSONL, with the file name to save it under.
    Converted {
        name: String,
        jsonl: String,
    },
    /// The loaded trace simulated on a cluster.
    Simulation(Box<SimView>),
    /// The simulation of `cluster` could not run.
    SimFailed {
        cluster: Cluster,
        message: String,
    },
    /// An agentic-code dataset was generated.
    Agentic(Box<AgenticView>),
    AgenticFailed {
        message: String,
    },
    /// A file to save (from the agentic dataset).
    File {
        name: String,
        text: String,
    },
    /// The synthesized trace, with the file name to save it under: a blob URL of its JSONL made
    /// by the worker, so that the text never crosses to the page.
    Export {
        settings: SynthesisSettings,
        name: String,
        url: String,
    },
}

/// How far reading has come.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    pub bytes: u64,
    pub total: u64,
    pub rows: u64,
    pub invalid: u64,
}

/// A rejected line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BadRow {
    pub line: u64,
    pub field: Option<String>,
    pub reason: String,
}

/// What was read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FileSummary {
    pub name: String,
    pub size: u64,
    pub lines: u64,
    pub rows: u64,
    pub bad_rows: Vec<BadRow>,
    pub bad_total: u64,
    pub parse_ms: f64,
    /// The format read (`mooncake`, `azure`, …) and what decided it.
    pub format: String,
    pub evidence: String,
    /// What the conversion invented or lacks, and what it dropped (empty for Mooncake).
    pub notes: Vec<String>,
    /// False when the source had no prefix hashes: hit rates are "no prefix information".
    pub has_prefix_info: bool,
    /// True when the trace was converted or transformed: it can be downloaded as Mooncake JSONL.
    pub downloadable: bool,
}

/// An analysis ready to show.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AnalysisView {
    pub block_size: u32,
    /// Written by [`crate::engine::analysis_json`] into the CLI's `--output-file` bytes.
    pub analysis: Rc<Analysis>,
    pub charts: Charts,
    pub compute_ms: f64,
}

/// The distributions charted on the page.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Charts {
    pub isl: Rc<Dist>,
    pub osl: Rc<Dist>,
    pub context_length: Rc<Dist>,
    pub hit_rate: Rc<Dist>,
    pub arrivals: Rc<Series>,
}

/// Original and synthesized statistics side by side.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SynthView {
    pub settings: SynthesisSettings,
    pub rows: u64,
    /// Analysis of the synthesized trace.
    pub analysis: Rc<Analysis>,
    /// Input and output length distributions of the synthesized trace.
    pub isl: Rc<Dist>,
    pub osl: Rc<Dist>,
    /// Arrivals over time, original against synthesized (generative mode; empty otherwise).
    pub arrivals: Vec<ArrivalCheck>,
    pub compute_ms: f64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{analysis_json, analysis_view, synth_view};
    use aiperf_core::trace::{ParseOptions, parse_str};

    /// What gloo-worker does to every message.
    fn crossed(msg: &FromWorker) -> FromWorker {
        bincode::deserialize(&bincode::serialize(msg).unwrap()).unwrap()
    }

    #[test]
    fn typed_analyses_cross_to_the_page_intact() {
        let trace = parse_str(
            "{\"timestamp\":0,\"input_length\":600,\"output_length\":3,\"hash_ids\":[1,2]}\n\
             {\"timestamp\":7,\"input_length\":10,\"hash_ids\":[1]}\n",
            ParseOptions::default(),
        )
        .unwrap()
        .trace;
        let view = analysis_view(&trace, 512);
        let msg = FromWorker::Analysis(Box::new(view.clone()));
        let FromWorker::Analysis(back) = crossed(&msg) else { panic!("another message") };
        assert_eq!(*back, view);
        // The download is written on the page from what crossed: the worker's bytes exactly.
        assert_eq!(analysis_json(&back.analysis), analysis_json(&view.analysis));
        let synth = synth_view(&trace, &aiperf_core::synthesis::SynthesisSettings::default());
        let msg = FromWorker::Synthesis(Box::new(synth));
        assert_eq!(crossed(&msg), msg);
    }
}
