//! ServeGen offline traces (Bailian batch jobs): JSONL with `request_id`, `type`, `input_length`
//! and either 16-token `hash_ids` (traces a–c, no output length) or `output_length` and
//! `duration` (traces d–f, no hashes). There are no arrival times: a file is one submitted batch,
//! so arrivals come from [`super::Arrivals`] and missing output lengths from
//! [`super::ConvertOptions::output_length`], and the note says what was invented.

use std::sync::Arc;

use serde::Deserialize;

use super::error::{FormatError, Line};
use super::flat::{Val, scan};
use super::json::{Kind, flat_record};
use super::options::Arrivals;
use super::sink::{Record, Sink, SourceIds, check_id_count};

const BLOCK: u32 = 16;

#[derive(Debug, Deserialize)]
pub(super) struct Raw {
    input_length: u64,
    output_length: Option<u64>,
    hash_ids: Option<Vec<u64>>,
}

const SPEC: &[(&str, Kind, bool)] =
    &[("input_length", Kind::Count, true), ("output_length", Kind::Count, false), ("hash_ids", Kind::IdList, false)];

/// The fast path ([`scan`]): the same fields as [`Raw`], its ids in `ids`; `None` → serde.
fn fast(text: &str, ids: &mut Vec<u64>) -> Option<Raw> {
    let (mut input, mut output, mut has_ids) = (None, None, false);
    scan(text, ids, |key, val| {
        let slot = match key {
            "input_length" => &mut input,
            "output_length" => &mut output,
            "hash_ids" => return (val == Val::List && !std::mem::replace(&mut has_ids, true)).then_some(()),
            _ => return Some(()),
        };
        let Val::Num(n) = val else { return None };
        slot.replace(n.parse::<u64>().ok()?).is_none().then_some(())
    })?;
    Some(Raw { input_length: input?, output_length: output, hash_ids: has_ids.then(Vec::new) })
}

/// One line read on its own: its fields, its ids appended to `ids`.
pub(super) fn parse(file: &Arc<str>, line: u64, text: &str, ids: &mut Vec<u64>) -> Result<Raw, FormatError> {
    flat_record((file, line, text), ids, SPEC, fast, |r| r.hash_ids.as_deref().unwrap_or_default())
}

#[derive(Debug, Default)]
pub(super) struct State {
    rows: u64,
    first_row: Option<usize>,
    with_hashes: u64,
    without_output: u64,
}

impl State {
    pub(super) fn row(&mut self, sink: &mut Sink<'_>, line: u64, raw: Raw, buf: &[u64]) -> Result<(), FormatError> {
        let ids = match &raw.hash_ids {
            Some(_) => {
                let ids = buf;
                check_id_count(sink.file(), Line(Some(line)), "hash_ids", ids.len(), raw.input_length, BLOCK, true)?;
                self.with_hashes += 1;
                let complete = (raw.input_length / u64::from(BLOCK)) as usize;
                Some(SourceIds { ids, block: BLOCK, complete })
            }
            None => None,
        };
        let output = raw.output_length.or(sink.opts.output_length);
        if raw.output_length.is_none() {
            self.without_output += 1;
        }
        self.first_row.get_or_insert(sink.rows());
        sink.count_record();
        self.rows += 1;
        sink.push(Record { at_ns: 0, input: raw.input_length, output, conversation: None, ids, line, turn: None })
    }

    pub(super) fn end(self, sink: &mut Sink<'_>) -> Result<String, FormatError> {
        let arrivals = match sink.opts.arrivals {
            Arrivals::AllAtZero => "no arrival times in the source: all rows invented at 0 ms".to_string(),
            Arrivals::Rate { per_second } => {
                if let Some(first) = self.first_row {
                    for (k, t) in sink.times_from(first).iter_mut().enumerate() {
                        let ns = (k as f64 * 1e9 / per_second).round();
                        if ns.is_nan() || ns >= 9.0e18 {
                            return Err(FormatError::Options(format!("arrival rate {per_second}/s: times overflow")));
                        }
                        *t = ns as i64;
                    }
                }
                format!("no arrival times in the source: invented at a constant {per_second} requests/s in file order")
            }
        };
        let outputs = match (self.without_output, sink.opts.output_length) {
            (0, _) => String::new(),
            (n, Some(len)) => format!("; no output lengths on {n} rows: invented as {len} tokens"),
            (n, None) => format!("; no output lengths on {n} rows: left out (choose one to set them)"),
        };
        Ok(format!(
            "ServeGen offline trace, {} rows ({} with 16-token hash ids re-blocked to {}); {arrivals}{outputs}",
            self.rows, self.with_hashes, sink.opts.block_size
        ))
    }
}
