//! Baseten traces for the tests: AIPerf's `BasetenTrace` columns written as Parquet, and a small
//! trace of two sessions and a row without one.

use std::path::Path;
use std::sync::Arc;

use parquet::data_type::{ByteArray, ByteArrayType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;

/// One row of a Baseten trace.
pub struct BasetenRow {
    pub ts: i64,
    pub prompt: &'static str,
    pub input: i64,
    pub output: i64,
    pub hashes: Option<Vec<i64>>,
    pub session: Option<&'static str>,
    pub e2e: Option<i64>,
    pub block: Option<i64>,
}

/// Writes `rows` as a Baseten Parquet trace (AIPerf's columns; nulls where a value is `None`).
pub fn write_baseten(path: &Path, rows: &[BasetenRow]) {
    let schema = parquet::schema::parser::parse_message_type(
        "message schema {
            required int64 timestamp_start_unix_ms;
            required binary prompt (UTF8);
            required int64 input_tokens;
            required int64 output_tokens;
            optional group total_hashes (LIST) { repeated group list { required int64 element; } }
            optional binary provided_session_id (UTF8);
            optional int64 duration_e2e_ms;
            optional int64 block_size;
        }",
    )
    .unwrap();
    let file = std::fs::File::create(path).unwrap();
    let mut w =
        SerializedFileWriter::new(file, Arc::new(schema), Arc::new(WriterProperties::builder().build())).unwrap();
    let mut g = w.next_row_group().unwrap();
    let ints = |g: &mut parquet::file::writer::SerializedRowGroupWriter<'_, std::fs::File>,
                get: &dyn Fn(&BasetenRow) -> Option<i64>,
                optional: bool| {
        let mut c = g.next_column().unwrap().unwrap();
        let values: Vec<i64> = rows.iter().filter_map(get).collect();
        let def: Vec<i16> = rows.iter().map(|r| i16::from(get(r).is_some())).collect();
        c.typed::<Int64Type>().write_batch(&values, optional.then_some(&def[..]), None).unwrap();
        c.close().unwrap();
    };
    ints(&mut g, &|r| Some(r.ts), false);
    let mut c = g.next_column().unwrap().unwrap();
    let prompts: Vec<ByteArray> = rows.iter().map(|r| ByteArray::from(r.prompt)).collect();
    c.typed::<ByteArrayType>().write_batch(&prompts, None, None).unwrap();
    c.close().unwrap();
    ints(&mut g, &|r| Some(r.input), false);
    ints(&mut g, &|r| Some(r.output), false);
    // The list: definition 0 = null, 1 = empty, 2 = an element; repetition 0 starts a row.
    let (mut values, mut def, mut rep) = (Vec::new(), Vec::new(), Vec::new());
    for r in rows {
        match &r.hashes {
            None => (def.push(0), rep.push(0)),
            Some(h) if h.is_empty() => (def.push(1), rep.push(0)),
            Some(h) => {
                for (i, v) in h.iter().enumerate() {
                    values.push(*v);
                    def.push(2);
                    rep.push(i16::from(i > 0));
                }
                ((), ())
            }
        };
    }
    let mut c = g.next_column().unwrap().unwrap();
    c.typed::<Int64Type>().write_batch(&values, Some(&def), Some(&rep)).unwrap();
    c.close().unwrap();
    let mut c = g.next_column().unwrap().unwrap();
    let sessions: Vec<ByteArray> = rows.iter().filter_map(|r| r.session.map(ByteArray::from)).collect();
    let def: Vec<i16> = rows.iter().map(|r| i16::from(r.session.is_some())).collect();
    c.typed::<ByteArrayType>().write_batch(&sessions, Some(&def), None).unwrap();
    c.close().unwrap();
    ints(&mut g, &|r| r.e2e, true);
    ints(&mut g, &|r| r.block, true);
    g.close().unwrap();
    w.close().unwrap();
}

/// Unix ms of the trace's first row.
pub const T0: i64 = 1_700_000_000_000;

/// Two sessions and a row without one: a at 0 and 300 ms (recorded durations 100 and 50 ms), b
/// at 100 and 400 ms (150 ms, none), the lone row at 2600 ms with `output_tokens` 0.
pub fn rows() -> Vec<BasetenRow> {
    let row = |ts, prompt, output, hashes: &[i64], session, e2e| BasetenRow {
        ts: T0 + ts,
        prompt,
        input: 12,
        output,
        hashes: Some(hashes.to_vec()),
        session,
        e2e,
        block: Some(16),
    };
    vec![
        row(100, "b one", 3, &[7], Some("b"), Some(150)),
        row(0, "a one", 4, &[1, 2], Some("a"), Some(100)),
        row(2600, "lone", 0, &[], None, None),
        row(300, "a two", 5, &[1, 2, 3], Some("a"), Some(50)),
        row(400, "b two", 2, &[7, 8], Some("b"), None),
    ]
}

/// The rows as the core's records (what the CLI's Parquet reader makes of them).
pub fn records(rows: &[BasetenRow]) -> Vec<aiperf_core::formats::baseten::Record> {
    use aiperf_core::formats::baseten::{Record, SessionId};
    rows.iter()
        .enumerate()
        .map(|(k, r)| Record {
            row: k as u64 + 1,
            timestamp_ms: r.ts as u64,
            prompt: r.prompt.into(),
            input_tokens: r.input as u64,
            output_tokens: r.output as u64,
            total_hashes: r.hashes.clone().unwrap_or_default().into_iter().map(|h| h as u64).collect(),
            session: r.session.map(|s| SessionId::Text(s.into())),
            duration_e2e_ms: r.e2e.map(|d| d as u64),
            block_size: r.block.map(|b| b as u64),
        })
        .collect()
}
