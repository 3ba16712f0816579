//! What a format's adapter writes its records into: the [`Sink`] over the converter's rows, the
//! [`Record`] of one request with its [`SourceIds`], and what the conversion counts.

use std::sync::Arc;

use super::error::{FormatError, Line};
use super::format::Format;
use super::options::ConvertOptions;
use super::reblock::Reblocker;
use crate::trace::{Input, Number, Row, Trace};

/// Where one input file goes in the merged trace.
#[derive(Clone, Debug, PartialEq)]
pub struct FileOptions {
    /// Name used in errors (usually the path).
    pub source: Arc<str>,
    pub format: Format,
    /// This file's first row lands this many ms after the trace start (merging several files).
    pub start_offset_ms: u64,
    /// Prepended to this file's conversation ids so that ids from different files stay apart.
    pub conversation_prefix: String,
}

/// What a conversion counted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConvertStats {
    /// Records read (requests; WEKA sub-agent entries are not requests).
    pub records: u64,
    /// Failed rows dropped (with [`ConvertOptions::drop_failed`]).
    pub failed_dropped: u64,
    /// Failed rows kept.
    pub failed_kept: u64,
    /// Rows of other models dropped by [`ConvertOptions::models`].
    pub other_models: u64,
    /// The models of the dropped rows and how many rows each had (the first
    /// [`MAX_MODELS_NAMED`] models met), to say what the filter could have kept.
    pub other_model_names: std::collections::BTreeMap<String, u64>,
    /// With [`ConvertOptions::weka`]: WEKA documents read, those over `max_context_length`
    /// (dropped), and the smallest peak context met.
    pub weka_documents: u64,
    pub weka_over_context: u64,
    pub weka_smallest_peak: Option<u64>,
}

/// Distinct models of dropped rows counted by name in [`ConvertStats::other_model_names`].
pub const MAX_MODELS_NAMED: usize = 64;

/// What the adapters write: the rows so far and what goes with them.
#[derive(Debug, Default)]
pub(super) struct Output {
    pub reblock: Reblocker,
    pub trace: Trace,
    /// Per row: nanoseconds on the source clock while its file is read, on the merged clock after.
    pub times: Vec<i64>,
    pub stats: ConvertStats,
    pub has_prefix_info: bool,
}

/// Source ids per target block, checked.
pub(super) fn per_block(file: &Arc<str>, source: u32, target: u32) -> Result<usize, FormatError> {
    if source == 0 || !target.is_multiple_of(source) {
        return Err(FormatError::Options(format!(
            "{file}: the target block size {target} is not a multiple of the source block size {source}"
        )));
    }
    Ok((target / source) as usize)
}

/// Seconds (finite, non-negative) as nanoseconds.
pub(crate) fn seconds_to_ns(s: Option<f64>) -> Option<i64> {
    let ns = s.filter(|s| s.is_finite() && *s >= 0.0)? * 1e9;
    (ns < 9.0e18).then(|| ns.round() as i64)
}

/// Source hash ids of one record and the edge rule of its format.
pub(crate) struct SourceIds<'a> {
    pub ids: &'a [u64],
    /// Tokens per source id.
    pub block: u32,
    /// How many leading ids are complete, hashed blocks.
    pub complete: usize,
}

/// A converted record on its way into the trace.
pub(crate) struct Record<'a> {
    pub at_ns: i64,
    pub input: u64,
    pub output: Option<u64>,
    pub conversation: Option<Arc<str>>,
    pub ids: Option<SourceIds<'a>>,
    pub line: u64,
    /// `Some`: the row is a turn of the session named by its conversation, sent this long after
    /// the previous turn completed (`None` inside: as soon as it completed, or the first turn).
    pub turn: Option<Option<f64>>,
}

/// What a format adapter writes into.
pub(crate) struct Sink<'a> {
    src: &'a FileOptions,
    pub namespace: u64,
    pub opts: &'a ConvertOptions,
    out: &'a mut Output,
}

impl<'a> Sink<'a> {
    /// The sink of file `src` (its ids in `namespace`) into the converter's `out`.
    pub(super) fn new(src: &'a FileOptions, namespace: u64, opts: &'a ConvertOptions, out: &'a mut Output) -> Self {
        Sink { src, namespace, opts, out }
    }

    /// Counts one record read from the source (kept or not).
    pub fn count_record(&mut self) {
        self.out.stats.records += 1;
    }

    /// The file's name, for errors.
    pub fn file(&self) -> &Arc<str> {
        &self.src.source
    }

    /// What this file's conversation ids start with.
    pub fn prefix(&self) -> &str {
        &self.src.conversation_prefix
    }

    /// True when the model filter keeps `model`, compared without regard to ASCII case
    /// (`gpt-4` keeps BurstGPT's `GPT-4`); counts the ones it drops, by model.
    pub fn keeps_model(&mut self, model: &str) -> bool {
        let keep = self.opts.models.is_empty() || self.opts.models.iter().any(|m| m.eq_ignore_ascii_case(model));
        if !keep {
            let stats = &mut self.out.stats;
            stats.other_models += 1;
            if let Some(n) = stats.other_model_names.get_mut(model) {
                *n += 1;
            } else if stats.other_model_names.len() < MAX_MODELS_NAMED {
                stats.other_model_names.insert(model.to_owned(), 1);
            }
        }
        keep
    }

    /// Counts a failed row; true when it is to be kept.
    pub fn keeps_failed(&mut self) -> bool {
        if self.opts.drop_failed {
            self.out.stats.failed_dropped += 1;
        } else {
            self.out.stats.failed_kept += 1;
        }
        !self.opts.drop_failed
    }

    pub fn push(&mut self, rec: Record<'_>) -> Result<(), FormatError> {
        let mut row = Row::new(Input::Length(i64::try_from(rec.input).unwrap_or(i64::MAX)));
        row.output_length = rec.output;
        row.line = u32::try_from(rec.line).unwrap_or(u32::MAX);
        if let Some(delay_ms) = rec.turn {
            row.session_id = rec.conversation.as_deref().map(Box::from);
            row.delay = delay_ms.map(Number::Float);
        }
        row.conversation = rec.conversation;
        let start = self.out.trace.arena_mut().len();
        if let Some(src) = rec.ids {
            let per = per_block(self.file(), src.block, self.opts.block_size)?;
            let blocks = rec.input.div_ceil(u64::from(self.opts.block_size));
            self.out.reblock.reblock(self.namespace, src.ids, src.complete, per, blocks, self.out.trace.arena_mut());
            self.out.has_prefix_info = true;
        }
        self.out.trace.push_with_arena_tail(row, start);
        self.out.times.push(rec.at_ns);
        Ok(())
    }

    /// Counts a WEKA document of peak context `peak`, kept or dropped.
    pub fn weka_peak(&mut self, peak: u64, kept: bool) {
        let s = &mut self.out.stats;
        s.weka_documents += 1;
        s.weka_over_context += u64::from(!kept);
        s.weka_smallest_peak = Some(s.weka_smallest_peak.map_or(peak, |p| p.min(peak)));
        // A dropped document had its hash ids all the same.
        self.out.has_prefix_info = true;
    }

    /// Reads ahead for rows about to be pushed with these source ids (`block` tokens each): see
    /// [`Reblocker::touch_rows`]. A hint: the rows convert the same without it.
    pub fn touch<'s>(&mut self, block: u32, sources: impl Iterator<Item = &'s [u64]>) {
        if let Ok(per) = per_block(self.file(), block, self.opts.block_size) {
            self.out.reblock.touch_rows(self.namespace, per, sources);
        }
    }

    /// Rows pushed so far (all files).
    pub fn rows(&self) -> usize {
        self.out.trace.len()
    }

    /// Adds a branch (the sessions it starts, the turn that joins them) to an already pushed row.
    pub fn add_branch(&mut self, row: usize, branch: crate::trace::Branch) {
        if let Some(r) = self.out.trace.rows_mut().get_mut(row) {
            r.rare_mut().branches.push(branch);
        }
    }

    /// Sets the conversation id of an already pushed row.
    pub fn set_conversation(&mut self, row: usize, id: Arc<str>) {
        if let Some(r) = self.out.trace.rows_mut().get_mut(row) {
            r.conversation = Some(id);
        }
    }

    /// Overrides the source time of already pushed rows (ServeGen's invented arrivals).
    pub fn times_from(&mut self, first_row: usize) -> &mut [i64] {
        let first = first_row.min(self.out.times.len());
        &mut self.out.times[first..]
    }
}

/// Checks `len(hash_ids)` against the format's edge rule.
pub(crate) fn check_id_count(
    file: &Arc<str>,
    line: Line,
    field: &str,
    found: usize,
    input: u64,
    block: u32,
    ceil: bool,
) -> Result<(), FormatError> {
    let b = u64::from(block);
    let want = if ceil { input.div_ceil(b) } else { input / b };
    if found as u64 == want {
        return Ok(());
    }
    let rule = if ceil { "ceil" } else { "floor" };
    Err(FormatError::Field {
        file: file.clone(),
        line,
        field: field.into(),
        value: format!("{found} ids"),
        expected: format!("{rule}(input length {input} / {block}) = {want} ids"),
    })
}
