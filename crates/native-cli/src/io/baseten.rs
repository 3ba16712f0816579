//! Baseten traces (AIPerf's `baseten_trace`): a Parquet file read row by row into the core's
//! [`Record`]s, each value checked as AIPerf's `BasetenTrace` model checks it (an error names the
//! file, the row, the column, the value and what is accepted), then converted by
//! [`baseten::convert`]. Arrow IPC files (`.arrow`, `.ipc`), which AIPerf also reads, are refused
//! with the way to turn them into Parquet.

use std::path::Path;

use aiperf_core::formats::baseten::{self, BasetenReplay, BasetenReport, REQUIRED_COLUMNS, Record, SessionId};
use aiperf_core::trace::Trace;
use anyhow::{Context, Result, bail};
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;

/// The optional columns read (the others are ignored, as AIPerf does).
const OPTIONAL_COLUMNS: &str = "total_hashes, provided_session_id or poor_man_session_id, duration_e2e_ms, block_size";

/// Reads a Baseten trace and converts it with `opts` (the KV hint columns are not read under
/// `--omit-kv-hints`, as AIPerf does not read them).
pub fn load(path: &Path, opts: &BasetenReplay) -> Result<(Trace, BasetenReport)> {
    let (records, has_sessions) = read(path, !opts.omit_kv_hints)?;
    let shown = path.display();
    baseten::convert(&records, has_sessions, opts).with_context(|| format!("{shown}: cannot replay the trace"))
}

/// The records of a Baseten Parquet trace and whether it has a session column.
pub fn read(path: &Path, kv_hints: bool) -> Result<(Vec<Record>, bool)> {
    let shown = path.display();
    let extension = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    let head = crate::io::input::head(path, 8)?;
    if matches!(extension.as_deref(), Some("arrow" | "ipc")) || head.starts_with(b"ARROW1") {
        bail!(
            "{shown}: an Arrow IPC file; Baseten traces are read as Parquet only (convert it with pyarrow: \
             pq.write_table(pa.ipc.open_file(PATH).read_all(), 'trace.parquet'))"
        );
    }
    let file = std::fs::File::open(path).with_context(|| format!("cannot open {shown}"))?;
    let reader = SerializedFileReader::new(file).with_context(|| format!("{shown}: not a readable Parquet file"))?;
    let names: Vec<String> =
        reader.metadata().file_metadata().schema().get_fields().iter().map(|f| f.name().to_owned()).collect();
    let has = |c: &str| names.iter().any(|n| n == c);
    let missing: Vec<&str> = REQUIRED_COLUMNS.into_iter().filter(|c| !has(c)).collect();
    if !missing.is_empty() {
        bail!(
            "{shown}: not a Baseten trace: no column {}; a Baseten trace has the columns {} (and may have {OPTIONAL_COLUMNS}); \
             this file has {}",
            missing.join(", "),
            REQUIRED_COLUMNS.join(", "),
            names.join(", ")
        );
    }
    let session = baseten::session_column(has);
    let rows = reader.get_row_iter(None).with_context(|| format!("{shown}: cannot read the rows"))?;
    let mut records = Vec::with_capacity(usize::try_from(reader.metadata().file_metadata().num_rows()).unwrap_or(0));
    for (k, row) in rows.enumerate() {
        let n = k as u64 + 1;
        let row = row.with_context(|| format!("{shown}: row {n}: cannot read"))?;
        let at = |column: &str, field: &Field, expected: &str| {
            let mut value = field.to_string();
            if value.chars().count() > 40 {
                value = value.chars().take(40).collect::<String>() + "…";
            }
            anyhow::anyhow!("{shown}: row {n}: column '{column}': found {value}, expected {expected}")
        };
        let mut r = Record {
            row: n,
            timestamp_ms: 0,
            prompt: String::new(),
            input_tokens: 0,
            output_tokens: 0,
            total_hashes: Vec::new(),
            session: None,
            duration_e2e_ms: None,
            block_size: None,
        };
        let mut required = 0;
        for (name, field) in row.get_column_iter() {
            let count = |expected| whole(field).ok_or_else(|| at(name, field, expected));
            let optional = |expected| match field {
                Field::Null => Ok(None),
                f => whole(f).map(Some).ok_or_else(|| at(name, field, expected)),
            };
            match name.as_str() {
                "timestamp_start_unix_ms" => r.timestamp_ms = count("a non-negative integer (Unix milliseconds)")?,
                "input_tokens" => r.input_tokens = count("a non-negative integer")?,
                "output_tokens" => r.output_tokens = count("a non-negative integer")?,
                "prompt" => match field {
                    Field::Str(s) => r.prompt = s.clone(),
                    _ => return Err(at(name, field, "a string")),
                },
                "total_hashes" if kv_hints => match field {
                    Field::Null => {}
                    Field::ListInternal(list) => {
                        r.total_hashes = list
                            .elements()
                            .iter()
                            .map(whole)
                            .collect::<Option<Vec<u64>>>()
                            .ok_or_else(|| at(name, field, "a list of non-negative integers"))?;
                    }
                    _ => return Err(at(name, field, "a list of non-negative integers")),
                },
                "block_size" if kv_hints => {
                    r.block_size = optional("a positive integer")?;
                    if r.block_size == Some(0) {
                        return Err(at(name, field, "a positive integer"));
                    }
                }
                "duration_e2e_ms" => r.duration_e2e_ms = optional("a non-negative integer (milliseconds)")?,
                c if Some(c) == session => {
                    r.session = match field {
                        Field::Null => None,
                        Field::Str(s) if c == "provided_session_id" => Some(SessionId::Text(s.clone())),
                        f => Some(SessionId::Int(whole(f).ok_or_else(|| {
                            at(
                                name,
                                field,
                                if c == "provided_session_id" {
                                    "a string or a non-negative integer"
                                } else {
                                    "a non-negative integer"
                                },
                            )
                        })?)),
                    }
                }
                _ => continue,
            }
            required += usize::from(REQUIRED_COLUMNS.contains(&name.as_str()));
        }
        if required < REQUIRED_COLUMNS.len() {
            bail!("{shown}: row {n}: a required column ({}) is missing", REQUIRED_COLUMNS.join(", "));
        }
        records.push(r);
    }
    Ok((records, session.is_some()))
}

/// A non-negative whole number, as Pydantic's lax integers take it (an integral float included).
fn whole(field: &Field) -> Option<u64> {
    match *field {
        Field::Byte(v) => u64::try_from(v).ok(),
        Field::Short(v) => u64::try_from(v).ok(),
        Field::Int(v) => u64::try_from(v).ok(),
        Field::Long(v) => u64::try_from(v).ok(),
        Field::UByte(v) => Some(u64::from(v)),
        Field::UShort(v) => Some(u64::from(v)),
        Field::UInt(v) => Some(u64::from(v)),
        Field::ULong(v) => Some(v),
        Field::Double(v) if v.fract() == 0.0 && (0.0..1.8e19).contains(&v) => Some(v as u64),
        Field::Float(v) if v.fract() == 0.0 && (0.0..1.8e19).contains(&v) => Some(v as u64),
        _ => None,
    }
}
