//! Reading the page's files in the worker: whole small files, or streamed chunk by chunk, from the
//! browser's `Blob` itself ([`FileRef`]).

use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

use crate::protocol::FileRef;

pub(super) fn blob(file: &FileRef) -> Result<&web_sys::Blob, String> {
    file.blob().ok_or_else(|| "cannot read the file: the page sent none".to_string())
}

/// The text of a (small) file.
pub(super) async fn text(file: &FileRef) -> Result<String, String> {
    let text = JsFuture::from(blob(file)?.text()).await.map_err(js_error)?;
    Ok(text.as_string().unwrap_or_default())
}

/// A reader of the file's bytes.
pub(super) fn reader(file: &FileRef) -> Result<web_sys::ReadableStreamDefaultReader, String> {
    reader_of(blob(file)?)
}

/// A reader of a `Blob`'s bytes.
pub(super) fn reader_of(blob: &web_sys::Blob) -> Result<web_sys::ReadableStreamDefaultReader, String> {
    blob.stream().get_reader().dyn_into().map_err(js_error)
}

/// Reads the next chunk of a stream into `buf`; `false` at the stream's end.
pub(super) async fn next_chunk(
    reader: &web_sys::ReadableStreamDefaultReader,
    buf: &mut Vec<u8>,
) -> Result<bool, String> {
    let chunk = JsFuture::from(reader.read()).await.map_err(js_error)?;
    let done = js_sys::Reflect::get(&chunk, &JsValue::from_str("done")).map_err(js_error)?;
    if done.as_bool() == Some(true) {
        return Ok(false);
    }
    let value: js_sys::Uint8Array =
        js_sys::Reflect::get(&chunk, &JsValue::from_str("value")).map_err(js_error)?.dyn_into().map_err(js_error)?;
    buf.resize(value.length() as usize, 0);
    value.copy_to(buf);
    Ok(true)
}

fn js_error(e: impl Into<JsValue>) -> String {
    let e: JsValue = e.into();
    format!("cannot read the file: {}", e.as_string().unwrap_or_else(|| format!("{e:?}")))
}
