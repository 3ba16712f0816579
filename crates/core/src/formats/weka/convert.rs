//! A document's parts into the converter as they come: their conversations and models, then the
//! requests (read ahead in batches); a timed replay's parts go to [`timing`] whole.

use super::model::{Parsed, Req};
use super::progress::{Progress, note, push_request};
use super::timing;
use crate::formats::error::FormatError;
use crate::formats::sink::Sink;

/// Requests read ahead at a time (see [`Sink::touch`]).
const AHEAD: usize = 64;

/// Reads ahead for the first [`AHEAD`] of `reqs` (whose ids start at `start` in `ids`).
fn touch_ahead(sink: &mut Sink<'_>, progress: &Progress, reqs: &[Req], ids: &[u64], start: usize) {
    let reqs = reqs.iter().take(AHEAD);
    let Some(first) = reqs.clone().next() else { return };
    let Some(&(_, block)) = progress.convs.get(first.conv as usize) else { return };
    let mut from = start;
    let sources = reqs.take_while(|r| progress.convs.get(r.conv as usize).is_some_and(|c| c.1 == block)).map(|r| {
        let these = ids.get(from..r.ids_end).unwrap_or_default();
        from = r.ids_end;
        these
    });
    sink.touch(block, sources);
}

/// Hands a part's requests to the converter: after the last part the note, or the first error.
pub(in crate::formats) fn convert(
    sink: &mut Sink<'_>,
    progress: &mut Progress,
    part: Parsed,
) -> Result<Option<String>, FormatError> {
    let prefix = sink.prefix().to_string();
    progress.convs.extend(part.convs.iter().map(|c| (format!("{prefix}{}", c.name).into(), c.block)));
    progress.models.extend(part.models.iter().cloned());
    progress.spawns.extend(part.convs.iter().map(|c| c.spawn.clone()));
    if let Some(timing) = sink.opts.weka {
        return timing::convert_whole(sink, progress, part, &timing);
    }
    let mut start = 0;
    for (k, r) in part.reqs.iter().enumerate() {
        if k % AHEAD == 0 {
            touch_ahead(sink, progress, part.reqs.get(k..).unwrap_or_default(), &part.ids, start);
        }
        let ids = part.ids.get(start..r.ids_end).unwrap_or_default();
        start = r.ids_end;
        push_request(sink, progress, r, ids, r.at_ns, None)?;
    }
    let Some(end) = part.end else { return Ok(None) };
    note(sink, progress, end)
}
