//! What the converter keeps of a WEKA document while its parts come ([`Progress`]), a request
//! into the converter, and the note of a document that ended: shared by the parts converted as
//! they come (`convert`) and the timed replay's whole document (`timing`).

use std::sync::Arc;

use super::model::{End, Parsed, Req, Spawn};
use crate::formats::error::FormatError;
use crate::formats::sink::{Record, Sink, SourceIds};

/// What the converter keeps of a document's parts: their conversations (with the file's
/// prefix) and models, and the requests kept so far.
#[derive(Debug, Default)]
pub(in crate::formats) struct Progress {
    pub(super) convs: Vec<(Arc<str>, u32)>,
    pub(super) models: Vec<Box<str>>,
    pub(super) kept: u64,
    /// With [`WekaTiming`](crate::formats::WekaTiming): the parts read so far, converted when the document ends.
    pub(super) held: Vec<Parsed>,
    /// Each conversation's sub-agent entry (`None` for the file's own).
    pub(super) spawns: Vec<Option<Spawn>>,
}

/// One request into the converter, sent at `at_ns` (`turn`: as [`Record::turn`]), unless its
/// model is filtered out.
#[inline]
pub(super) fn push_request(
    sink: &mut Sink<'_>,
    progress: &mut Progress,
    r: &Req,
    ids: &[u64],
    at_ns: i64,
    turn: Option<Option<f64>>,
) -> Result<(), FormatError> {
    sink.count_record();
    if !sink.keeps_model(progress.models.get(r.model as usize).map_or("", |m| m)) {
        return Ok(());
    }
    progress.kept += 1;
    let Some((name, block)) = progress.convs.get(r.conv as usize) else {
        return Err(FormatError::Options(format!("{}: a request without its conversation", sink.file())));
    };
    sink.push(Record {
        at_ns,
        input: r.input,
        output: r.output,
        conversation: Some(name.clone()),
        ids: Some(SourceIds { ids, block: *block, complete: ids.len() }),
        line: 0,
        turn,
    })
}

/// The note of a document that ended (or its error).
pub(super) fn note(sink: &Sink<'_>, progress: &Progress, end: End) -> Result<Option<String>, FormatError> {
    if let Some(e) = end.stop {
        return Err(e);
    }
    Ok(Some(format!(
        "WEKA trace {}: {} requests ({} kept), {} sub-agents; {}-token hash ids re-blocked to {}, \
         one conversation per file and per sub-agent",
        end.name, end.requests, progress.kept, end.subagents, end.block, sink.opts.block_size
    )))
}
