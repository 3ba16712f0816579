//! Reading `blob:` URLs from the worker: whole small files, or streamed chunk by chunk.

use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

/// The text of a (small) file behind a blob URL.
pub(super) async fn fetch_text(url: &str) -> Result<String, String> {
    let response = fetch(url).await?;
    let text = JsFuture::from(response.text().map_err(js_error)?).await.map_err(js_error)?;
    Ok(text.as_string().unwrap_or_default())
}

/// A reader of the body of the file behind a blob URL.
pub(super) async fn reader(url: &str) -> Result<web_sys::ReadableStreamDefaultReader, String> {
    let response = fetch(url).await?;
    let body = response.body().ok_or_else(|| "cannot read the file: empty response".to_string())?;
    body.get_reader().dyn_into().map_err(js_error)
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

async fn fetch(url: &str) -> Result<web_sys::Response, String> {
    let global: web_sys::WorkerGlobalScope = js_sys::global().dyn_into().map_err(js_error)?;
    let response: web_sys::Response =
        JsFuture::from(global.fetch_with_str(url)).await.map_err(js_error)?.dyn_into().map_err(js_error)?;
    if !response.ok() {
        return Err(format!("cannot read the file: HTTP {}", response.status()));
    }
    Ok(response)
}

fn js_error(e: impl Into<JsValue>) -> String {
    let e: JsValue = e.into();
    format!("cannot read the file: {}", e.as_string().unwrap_or_else(|| format!("{e:?}")))
}
