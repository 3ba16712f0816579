//! The Mooncake trace format: the row type, a validating streaming reader and a writer.
//!
//! A [`Trace`] keeps every row's `hash_ids` in one shared arena so that a trace of a million rows
//! costs a few hundred bytes a row, not a `Vec` allocation each. Rows are read with
//! [`TraceParser`] (line by line, for progress reporting in the browser), [`parse_str`] or
//! [`read`] (any `BufRead`), and written back with [`write_row`] / [`write_trace`].

pub mod dataset_file;
pub mod delay_cap;
mod error;
mod fast;
mod model;
pub mod multi_turn;
mod parse;
pub mod prompt_hash;
pub mod random_pool;
mod raw;
mod row;
pub mod single_turn;
mod visit;
mod write;

pub use error::{RowError, TraceError};
pub use model::{Branch, Input, Number, RareFields, Row, Trace};
pub use parse::{
    DEFAULT_MAX_LINE_BYTES, LineRead, ParseOptions, ParseOutcome, TraceParser, parse_str, read, read_each,
    read_line_capped,
};
pub use write::{row_to_string, write_row, write_rows, write_trace};
pub(crate) use write::{write_int, write_number, write_str};
