//! What a replay reads: the trace file, AIPerf's own dataset files, a config file's inline
//! records or AIPerf's synthetic workload; the trace format `--custom-dataset-type` names; the
//! in-memory synthesis; `--cache-bust` checked against the input.

use aiperf_core::formats::Format;
use aiperf_core::replay::cache_bust::Target as BustTarget;
use aiperf_core::synthesis::TransformParams;
use aiperf_core::trace::Trace;
use aiperf_core::trace::dataset_file::Kind as DatasetKind;
use anyhow::{Context, Result, anyhow, bail, ensure};
use serde_json::Value;

use super::limits::in_range;
use super::model::*;
use crate::io::trace_format::{FormatChoice, TraceFormatArgs};
use crate::profile::body::EndpointType;
use crate::profile::options::Args;

/// `--cache-bust` checked as AIPerf checks it (chat only; `warmup_isolation_system` on a
/// synthetic workload only with a system message to carry it); returns whether a session's
/// first prompt gives up the marker's tokens, as AIPerf's synthetic workload's first turn does
/// (unless the marker goes on a `--system-prompt` given verbatim with no
/// `--shared-system-prompt-length` to shorten; a trace's markers add tokens).
pub(super) fn cache_bust(a: &Args, input: &Input, has_system_prompt: bool) -> Result<bool> {
    let target = a.cache_bust;
    if target == BustTarget::None {
        return Ok(false);
    }
    ensure!(
        a.endpoint_type == EndpointType::Chat,
        "--cache-bust {}: not supported by --endpoint-type completions (AIPerf marks chat conversations \
         only); accepted: --endpoint-type chat, or --cache-bust none",
        target.name()
    );
    let Input::Synthetic(w) = input else { return Ok(false) };
    ensure!(
        target != BustTarget::WarmupIsolationSystem || has_system_prompt || w.shared_system_length.is_some(),
        "--cache-bust warmup_isolation_system needs a system message on the synthetic workload: give \
         --shared-system-prompt-length or --system-prompt/--system-prompt-file, or use --cache-bust \
         warmup_isolation_first_turn"
    );
    let verbatim_system_only = target.wants_system() && has_system_prompt && w.shared_system_length.is_none();
    Ok(!(target.isolates_warmup() || verbatim_system_only))
}

/// The trace file, or AIPerf's synthetic workload when no file is given (as AIPerf: its
/// `--request-count` sizes the dataset when no count of entries or conversations is given).
pub(super) fn input(a: &Args, block_size: u64) -> Result<Input> {
    // A config file's inline records are single_turn records.
    if let Some(kind) = dataset_kind(a)
        && !(kind == DatasetKind::SingleTurn && a.input_file.is_none() && a.inline_records.is_some())
    {
        return dataset_file(a, kind).map(|d| Input::Dataset(Box::new(d)));
    }
    let mut given = a.synthetic.clone();
    if a.input_file.is_some() || a.inline_records.is_some() {
        given.osl = None;
        given.osl_stddev = None;
    }
    if let Some(json) = &a.inline_records {
        ensure!(
            !given.any(),
            "AIPerf's synthetic workload options (--isl, --num-dataset-entries, turns, prefix prompts, …) \
             generate the rows: drop them or the config file's {INLINE_RECORDS}"
        );
        let mut trace = inline_records(json)?;
        if let Some((mean, stddev)) = file_osl(a)? {
            aiperf_core::synthesis::synthetic::fill_output_lengths(&mut trace, a.random_seed, mean, stddev);
        }
        return Ok(Input::Records(Box::new(trace)));
    }
    if a.input_file.is_some() {
        ensure!(
            a.custom_dataset_type != DAG_JSONL || a.synthetic.osl.is_none(),
            "--osl with --custom-dataset-type {DAG_JSONL}: not supported (its turns are sent with their own output lengths); drop --osl"
        );
    }
    if let Some(f) = &a.input_file {
        ensure!(
            !given.any(),
            "AIPerf's synthetic workload options (--isl, --num-dataset-entries, turns, prefix prompts, …) \
             generate the rows: drop --input-file {} or those options (--osl/--osl-stddev set the output \
             length of the rows without one)",
            f.display()
        );
        return Ok(Input::File(f.clone()));
    }
    let mut w = given.workload()?.unwrap_or_default();
    w.block_size = u32::try_from(block_size).context("--isl-block-size is too large")?;
    if a.synthetic.num_dataset_entries.is_none()
        && a.synthetic.conversation_num.is_none()
        && let Some(n) = a.request_count
    {
        w.entries = n;
    }
    w.validate().context("invalid synthetic workload")?;
    Ok(Input::Synthetic(Box::new(w)))
}

/// The kind of AIPerf's own dataset file the run reads: the one `--custom-dataset-type` names,
/// or, with its default and `--trace-format auto`, the one the file's first line tells (as AIPerf
/// infers it; said on stderr). A file that cannot be read is left to the trace reader.
pub(super) fn dataset_kind(a: &Args) -> Option<DatasetKind> {
    if let Some(kind) = DatasetKind::from_name(&a.custom_dataset_type) {
        return Some(kind);
    }
    let path = a.input_file.as_ref()?;
    if a.custom_dataset_type != "mooncake_trace"
        || a.trace_format.trace_format != FormatChoice::Auto
        || a.inline_records.is_some()
        || path.is_dir()
    {
        return None;
    }
    let head = crate::io::input::head(path, 64 << 10).ok()?;
    aiperf_core::trace::dataset_file::infer(&head).map(|(kind, _)| kind)
}

/// One of AIPerf's own dataset files, read: `--input-file` of `kind`; a random_pool draws as many
/// conversations as `--num-dataset-entries`, `--conversation-num` or `--request-count` give, in
/// that order (AIPerf's), or 100.
fn dataset_file(a: &Args, kind: DatasetKind) -> Result<DatasetFile> {
    let Some(path) = &a.input_file else {
        if a.inline_records.is_some() {
            bail!(
                "--custom-dataset-type {kind}: the config file's {INLINE_RECORDS} are single_turn records; a {kind} dataset is read from a file (--input-file)"
            );
        }
        bail!("--custom-dataset-type {kind} reads one of AIPerf's {kind} files: give it with --input-file")
    };
    ensure!(
        a.inline_records.is_none(),
        "--custom-dataset-type {kind} reads --input-file {}: drop the config file's {INLINE_RECORDS}",
        path.display()
    );
    ensure!(
        !(kind == DatasetKind::RandomPool && a.fixed_schedule),
        "--fixed-schedule with --custom-dataset-type random_pool: its entries carry no timestamps (AIPerf's random_pool has none); accepted is --request-rate or --concurrency"
    );
    let mut other = a.synthetic.clone();
    other.osl = None;
    other.osl_stddev = None;
    if kind == DatasetKind::RandomPool {
        other.num_dataset_entries = None;
        other.conversation_num = None;
    }
    ensure!(
        !other.any(),
        "AIPerf's synthetic workload options (--isl, turns, prefix prompts, …{}) generate rows: drop them or --input-file {} (the {kind} file's rows are replayed as they are; --osl/--osl-stddev set the output length of turns without one)",
        if kind == DatasetKind::RandomPool { "" } else { ", --num-dataset-entries" },
        path.display()
    );
    let s = &a.synthetic;
    let (n, option) = [
        (s.num_dataset_entries, "--num-dataset-entries"),
        (s.conversation_num, "--conversation-num"),
        (a.request_count, "--request-count"),
    ]
    .into_iter()
    .find_map(|(n, o)| n.map(|n| (n, o)))
    .unwrap_or((super::dataset_file::POOL_CONVERSATIONS, "the random_pool conversations"));
    let conversations = if kind == DatasetKind::RandomPool {
        in_range(n, option, 1, super::dataset_file::MAX_POOL_CONVERSATIONS).with_context(|| {
            format!("{option} is the number of conversations a random_pool draws, as in AIPerf (--num-dataset-entries sets it apart)")
        })? as usize
    } else {
        0
    };
    if DatasetKind::from_name(&a.custom_dataset_type).is_none() {
        say!("detected format: AIPerf's {kind} file (its first line) in {}", path.display());
    }
    let max_line_bytes = in_range(a.max_line_bytes, "--max-line-bytes", 1, 1 << 40)?;
    let (mut trace, system) = super::dataset_file::read(path, kind, conversations, a.random_seed, max_line_bytes)?;
    if let Some((mean, stddev)) = file_osl(a)? {
        aiperf_core::synthesis::synthetic::fill_output_lengths(&mut trace, a.random_seed, mean, stddev);
    }
    Ok(DatasetFile { path: path.clone(), kind, trace, system })
}

/// `--osl`/`--osl-stddev` with an input file (AIPerf's dataset `osl`): the mean and standard
/// deviation the output length of a turn without one is drawn from.
pub(super) fn file_osl(a: &Args) -> Result<Option<(u64, f64)>> {
    let Some(mean) = a.synthetic.osl else { return Ok(None) };
    let stddev = a.synthetic.osl_stddev.unwrap_or(0.0);
    ensure!(stddev.is_finite() && stddev >= 0.0, "--osl-stddev {stddev}: accepted is a number of tokens, 0 or more");
    Ok(Some((mean, stddev)))
}

/// The rows of inline single_turn records (a JSON list), each checked as AIPerf's `SingleTurn`.
fn inline_records(json: &str) -> Result<Trace> {
    let records: Vec<Value> = serde_json::from_str(json)
        .map_err(|e| anyhow!("--inline-records: accepted is a JSON list of records ({e})"))?;
    ensure!(!records.is_empty(), "{INLINE_RECORDS}: accepted is at least one record, got none");
    let mut trace = Trace::with_capacity(records.len(), 0);
    for (i, r) in records.iter().enumerate() {
        let row = aiperf_core::trace::single_turn::record_row(r, i as u64 + 1).map_err(|e| {
            let at = if e.field.is_empty() { String::new() } else { format!(".{}", e.field) };
            anyhow!("{INLINE_RECORDS}[{i}]{at}: accepted is {}, got {}", e.expected, e.value)
        })?;
        trace.push(row, []);
    }
    Ok(trace)
}

/// The in-memory synthesis the `--synthesis-*` options ask for, checked; `None` when they ask
/// for none.
pub(super) fn synthesis(a: &Args, block_size: u64) -> Result<Option<TransformParams>> {
    let block_u32 = u32::try_from(block_size).context("--isl-block-size is too large")?;
    let params = a.synthesis.transform_params(block_u32, a.random_seed);
    if let Err(e) = params.validate() {
        match e.param() {
            Some(p) => bail!("invalid {}: {e}", crate::synthesis_flags::option_name(p)),
            None => return Err(e.into()),
        }
    }
    Ok((params.synthesizes() || params.max_isl.is_some() || params.max_osl.is_some()).then_some(params))
}

/// AIPerf's `--custom-dataset-type` names of the formats read here. `mooncake_trace`, AIPerf's
/// default, leaves `--trace-format` as given (auto detects Mooncake, and the other formats too).
const DATASET_TYPES: [(&str, Format); 4] = [
    ("bailian_trace", Format::Bailian),
    ("burst_gpt_trace", Format::BurstGpt),
    ("weka_trace", Format::Weka),
    ("baseten_trace", Format::Baseten),
];

/// The requests of a run on one of AIPerf's own dataset files when no request count, duration
/// or session count is given (AIPerf's default bound of such a run).
pub(super) const DATASET_FILE_REQUESTS: u64 = 10;

/// `--custom-dataset-type dag_jsonl` reads the file as AIPerf's DAG conversations, no trace format.
pub(super) fn dag_format(given: &TraceFormatArgs) -> Result<TraceFormatArgs> {
    if let FormatChoice::Is(f) = given.trace_format {
        bail!(
            "--custom-dataset-type {DAG_JSONL} reads AIPerf's DAG conversations, but --trace-format names {}",
            f.name()
        );
    }
    Ok(given.clone())
}

/// The trace format of `--custom-dataset-type` with `--trace-format`: AIPerf's name of a format
/// reads the file as that format; naming another one with `--trace-format` is an error.
pub(super) fn dataset_format(name: &str, given: &TraceFormatArgs) -> Result<TraceFormatArgs> {
    if name == "mooncake_trace" {
        return Ok(given.clone());
    }
    if let Some(kind) = DatasetKind::from_name(name) {
        if let FormatChoice::Is(f) = given.trace_format {
            bail!("--custom-dataset-type {kind} reads AIPerf's {kind} files, but --trace-format names {}", f.name());
        }
        return Ok(given.clone());
    }
    let Some(&(_, format)) = DATASET_TYPES.iter().find(|(n, _)| *n == name) else {
        let names: Vec<&str> = DATASET_TYPES.iter().map(|(n, _)| *n).collect();
        bail!(
            "--custom-dataset-type {name}: accepted is mooncake_trace, {}, {DAG_JSONL}, or AIPerf's own files {} (AIPerf's names of the formats read here; --trace-format also reads servegen and azure)",
            names.join(", "),
            DatasetKind::ALL.map(DatasetKind::name).join(", ")
        );
    };
    match given.trace_format {
        FormatChoice::Is(f) if f != format => {
            bail!("--custom-dataset-type {name} reads {format} traces, but --trace-format names {}", f.name())
        }
        _ => Ok(TraceFormatArgs { trace_format: FormatChoice::Is(format) }),
    }
}
