//! The errors a request records: a response over its size limit, a failure of a kind, and the
//! client's error chain described.

use aiperf_core::results::record::RecordError;

use crate::io::http::{chain, tls};

pub(super) fn too_large(limit: usize, what: &str) -> Option<RecordError> {
    err("response_too_large", format!("{what} exceeded {limit} bytes (--max-response-bytes raises the limit)"))
}

pub(super) fn err(kind: &str, message: impl Into<String>) -> Option<RecordError> {
    Some(RecordError { kind: kind.into(), message: message.into() })
}

/// An error of the client, its whole chain, with the TLS hint first when TLS caused it.
pub(super) fn describe(e: &hyper_util::client::legacy::Error) -> String {
    match tls::hint(e) {
        Some(h) => format!("{h} [{}]", chain(e)),
        None => chain(e),
    }
}
