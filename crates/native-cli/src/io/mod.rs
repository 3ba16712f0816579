//! The edges every command shares: reading inputs (traces of any format, documents, tokenizers),
//! writing outputs (atomic files, a run's exports), printing for people, and the HTTP client.

#[macro_use]
pub mod console;
pub mod baseten;
pub mod document;
pub mod exports;
pub mod http;
pub mod input;
pub mod output;
pub mod server_parquet;
pub mod token_count;
pub mod tokenizer;
pub mod trace_format;
