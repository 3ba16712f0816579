//! What a phase answers with: the response body type, a JSON answer, and an answer given
//! before the last phase.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::{Response, StatusCode};
use serde_json::Value;

pub type Body = BoxBody<Bytes, std::io::Error>;

/// An answer given before the last phase: a phase that answers returns it as its `Err`.
pub(super) type Early = Box<Response<Body>>;

/// A JSON answer with `status`.
pub(super) fn full(status: StatusCode, body: Value) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from(body.to_string())).map_err(|e: Infallible| match e {}).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert("content-type", hyper::header::HeaderValue::from_static("application/json"));
    r
}
