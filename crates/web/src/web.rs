//! Thin browser glue shared by the page and the worker: clock, downloads, the address bar.

use wasm_bindgen::{JsCast, JsValue};

/// `performance.now()` in the page or in a worker (0 outside a browser).
pub fn now_ms() -> f64 {
    #[cfg(target_arch = "wasm32")]
    {
        let perf = js_sys::Reflect::get(&js_sys::global(), &JsValue::from_str("performance")).ok();
        perf.and_then(|p| p.dyn_into::<web_sys::Performance>().ok()).map_or(0.0, |p| p.now())
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        0.0
    }
}

/// Offers `content` as a file download named `name`.
pub fn download(name: &str, content: &str, mime: &str) -> Result<(), JsValue> {
    let parts = js_sys::Array::of1(&JsValue::from_str(content));
    let opts = web_sys::BlobPropertyBag::new();
    opts.set_type(mime);
    let blob = web_sys::Blob::new_with_str_sequence_and_options(&parts, &opts)?;
    let url = web_sys::Url::create_object_url_with_blob(&blob)?;
    download_url(name, &url)?;
    revoke_later(url);
    Ok(())
}

/// Saves the file behind the blob URL `url` as `name`.
pub fn download_url(name: &str, url: &str) -> Result<(), JsValue> {
    let document = gloo_utils_document()?;
    let a: web_sys::HtmlAnchorElement = document.create_element("a")?.dyn_into()?;
    a.set_href(url);
    a.set_download(name);
    a.click();
    Ok(())
}

/// A blob URL of the bytes `content`, made where it is called (a worker's URLs open in its page),
/// and revoked 10 s later, once the browser has started its download.
pub fn blob_url(content: &[u8], mime: &str) -> Result<String, JsValue> {
    let parts = js_sys::Array::of1(&js_sys::Uint8Array::from(content));
    let opts = web_sys::BlobPropertyBag::new();
    opts.set_type(mime);
    let blob = web_sys::Blob::new_with_u8_array_sequence_and_options(&parts, &opts)?;
    let url = web_sys::Url::create_object_url_with_blob(&blob)?;
    revoke_later(url.clone());
    Ok(url)
}

/// Revokes a blob URL once the browser has started its download.
fn revoke_later(url: String) {
    gloo_timers::callback::Timeout::new(10_000, move || {
        let _ = web_sys::Url::revoke_object_url(&url);
    })
    .forget();
}

fn gloo_utils_document() -> Result<web_sys::Document, JsValue> {
    web_sys::window().and_then(|w| w.document()).ok_or_else(|| JsValue::from_str("no document"))
}

/// The page's query string (`?a=b`), empty outside a browser page.
pub fn location_search() -> String {
    web_sys::window().and_then(|w| w.location().search().ok()).unwrap_or_default()
}

/// The page's address without its query string.
pub fn location_base() -> String {
    web_sys::window()
        .and_then(|w| {
            let l = w.location();
            Some(format!("{}{}", l.origin().ok()?, l.pathname().ok()?))
        })
        .unwrap_or_default()
}

/// Replaces the address bar's query string without reloading or adding history entries.
pub fn replace_query(query: &str) {
    let Some(w) = web_sys::window() else { return };
    let Ok(history) = w.history() else { return };
    let path = w.location().pathname().unwrap_or_else(|_| "/".into());
    let url = if query.is_empty() { path } else { format!("{path}{query}") };
    let _ = history.replace_state_with_url(&JsValue::NULL, "", Some(&url));
}

/// Copies text to the clipboard (best effort: a refusal is logged, and the text stays
/// selectable on the page anyway).
pub fn copy_text(text: &str) {
    if let Some(w) = web_sys::window() {
        let promise = w.navigator().clipboard().write_text(text);
        wasm_bindgen_futures::spawn_local(async move {
            if wasm_bindgen_futures::JsFuture::from(promise).await.is_err() {
                log("the clipboard refused the text; select it on the page instead");
            }
        });
    }
}

/// Logs to the console (not an error: the e2e test fails on console errors).
pub fn log(msg: &str) {
    web_sys::console::log_1(&JsValue::from_str(msg));
}
