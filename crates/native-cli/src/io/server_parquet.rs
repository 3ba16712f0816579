//! `server_metrics_export.parquet`: the server metrics' raw rows ([`aiperf_core::server::raw`])
//! in AIPerf 0.13's Parquet layout: `endpoint_url`, `metric_name`, `metric_type`, `unit`,
//! `description` (strings), `timestamp_ns` (int64), one string column per label name (sorted),
//! `value`, `sum`, `count` (double), `bucket_le` (string), `bucket_count` (double), every column
//! nullable as AIPerf's Arrow schema makes them; Snappy pages, a row group per 10,000 rows, and
//! key-value metadata saying what the file holds.

use std::sync::Arc;

use aiperf_core::server::raw::{HEAD_COLUMNS, RawRow, RawTable, VALUE_COLUMNS};
use anyhow::{Context, Result};
use parquet::basic::{Compression, LogicalType, Repetition, Type as Physical};
use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::{SerializedFileWriter, SerializedRowGroupWriter};
use parquet::schema::types::Type;

/// The file's name without `--profile-export-prefix`, as AIPerf names it.
pub const FILE: &str = "server_metrics_export.parquet";

/// Rows per row group (AIPerf writes its table in batches of this many).
const ROW_GROUP: usize = 10_000;

/// How a text column reads its value off a row.
type TextOf = Box<dyn Fn(&RawRow) -> Option<&str>>;

/// A column's values: how to read it off a row.
enum Column {
    Text(TextOf),
    Int(fn(&RawRow) -> Option<i64>),
    Float(fn(&RawRow) -> Option<f64>),
}

fn columns(label_count: usize) -> Vec<Column> {
    let mut c = vec![
        Column::Text(Box::new(|r: &RawRow| Some(r.endpoint_url.as_str()))),
        Column::Text(Box::new(|r: &RawRow| Some(r.metric_name.as_str()))),
        Column::Text(Box::new(|r: &RawRow| Some(r.metric_type))),
        Column::Text(Box::new(|r: &RawRow| r.unit)),
        Column::Text(Box::new(|r: &RawRow| r.description.as_deref())),
        Column::Int(|r| Some(r.timestamp_ns)),
    ];
    for i in 0..label_count {
        c.push(Column::Text(Box::new(move |r: &RawRow| r.labels.get(i).and_then(|v| v.as_deref()))));
    }
    c.extend([
        Column::Float(|r| r.value),
        Column::Float(|r| r.sum),
        Column::Float(|r| r.count),
        Column::Text(Box::new(|r: &RawRow| r.bucket_le.as_deref())),
        Column::Float(|r| r.bucket_count),
    ]);
    c
}

fn field(name: &str, physical: Physical) -> Result<Arc<Type>> {
    let b = Type::primitive_type_builder(name, physical).with_repetition(Repetition::OPTIONAL);
    let b = if physical == Physical::BYTE_ARRAY { b.with_logical_type(Some(LogicalType::String)) } else { b };
    Ok(Arc::new(b.build().with_context(|| format!("parquet column {name}"))?))
}

fn schema(t: &RawTable) -> Result<Arc<Type>> {
    let text = Physical::BYTE_ARRAY;
    let head = [text, text, text, text, text, Physical::INT64];
    let values = [Physical::DOUBLE, Physical::DOUBLE, Physical::DOUBLE, text, Physical::DOUBLE];
    let mut fields = Vec::new();
    for (name, p) in HEAD_COLUMNS.into_iter().zip(head) {
        fields.push(field(name, p)?);
    }
    for k in &t.label_keys {
        fields.push(field(k, text)?);
    }
    for (name, p) in VALUE_COLUMNS.into_iter().zip(values) {
        fields.push(field(name, p)?);
    }
    Ok(Arc::new(Type::group_type_builder("schema").with_fields(fields).build()?))
}

/// The file's bytes: `t`'s rows, and `metadata` as its key-value metadata.
pub fn encode(t: &RawTable, metadata: Vec<(String, String)>) -> Result<Vec<u8>> {
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_created_by(format!("aiperf-cli {}", env!("CARGO_PKG_VERSION")))
        .set_key_value_metadata(Some(metadata.into_iter().map(|(k, v)| KeyValue::new(k, v)).collect()))
        .build();
    let mut out = Vec::new();
    let mut w = SerializedFileWriter::new(&mut out, schema(t)?, Arc::new(props))?;
    let cols = columns(t.label_keys.len());
    for rows in t.rows.chunks(ROW_GROUP) {
        let mut g = w.next_row_group()?;
        for col in &cols {
            write_column(&mut g, col, rows)?;
        }
        g.close()?;
    }
    w.close()?;
    Ok(out)
}

fn write_column(g: &mut SerializedRowGroupWriter<'_, &mut Vec<u8>>, col: &Column, rows: &[RawRow]) -> Result<()> {
    let Some(mut c) = g.next_column()? else { anyhow::bail!("the parquet schema has fewer columns than the rows") };
    let levels =
        |present: &dyn Fn(&RawRow) -> bool| -> Vec<i16> { rows.iter().map(|r| i16::from(present(r))).collect() };
    match col {
        Column::Text(get) => {
            let values: Vec<ByteArray> =
                rows.iter().filter_map(get).map(|s| ByteArray::from(s.as_bytes().to_vec())).collect();
            c.typed::<ByteArrayType>().write_batch(&values, Some(&levels(&|r| get(r).is_some())), None)?;
        }
        Column::Int(get) => {
            let values: Vec<i64> = rows.iter().filter_map(get).collect();
            c.typed::<Int64Type>().write_batch(&values, Some(&levels(&|r| get(r).is_some())), None)?;
        }
        Column::Float(get) => {
            let values: Vec<f64> = rows.iter().filter_map(get).collect();
            c.typed::<DoubleType>().write_batch(&values, Some(&levels(&|r| get(r).is_some())), None)?;
        }
    }
    c.close()?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use parquet::file::reader::{FileReader, SerializedFileReader};

    #[test]
    fn rows_and_columns_read_back() {
        let row = RawRow {
            endpoint_url: "http://h/metrics".into(),
            metric_name: "q".into(),
            metric_type: "gauge",
            unit: None,
            description: Some("d".into()),
            timestamp_ns: 7,
            labels: vec![Some("m".into())],
            value: Some(1.5),
            sum: None,
            count: None,
            bucket_le: None,
            bucket_count: None,
        };
        let rows = vec![row; ROW_GROUP + 1];
        let t = RawTable { label_keys: vec!["model".into()], rows };
        let bytes = encode(&t, vec![("aiperf.schema_version".into(), "1.0".into())]).unwrap();
        let r = SerializedFileReader::new(bytes::Bytes::from(bytes)).unwrap();
        let meta = r.metadata();
        assert_eq!(meta.file_metadata().num_rows(), ROW_GROUP as i64 + 1);
        assert_eq!(meta.num_row_groups(), 2);
        let names: Vec<&str> = meta.file_metadata().schema_descr().columns().iter().map(|c| c.name()).collect();
        assert_eq!(
            names,
            [
                "endpoint_url",
                "metric_name",
                "metric_type",
                "unit",
                "description",
                "timestamp_ns",
                "model",
                "value",
                "sum",
                "count",
                "bucket_le",
                "bucket_count"
            ]
        );
        let kv = meta.file_metadata().key_value_metadata().unwrap();
        assert_eq!((kv[0].key.as_str(), kv[0].value.as_deref()), ("aiperf.schema_version", Some("1.0")));
    }
}
