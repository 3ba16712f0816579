//! How messages cross between the page and the worker: bincode, as gloo-worker's own codec, with
//! the browser's files beside it. A [`FileRef`] in a message puts its `Blob` (a dropped `File`
//! is one) in a list next to the bincode bytes and its place in that list into them; the
//! structured clone of `postMessage` passes a `Blob` by reference, so the worker reads the file
//! where the browser holds it (`Blob.stream()`, about twice as fast as fetching a `blob:` URL)
//! and nothing is copied or revoked on the page.

use std::cell::RefCell;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use wasm_bindgen::{JsCast, JsValue};
use yew_agent::Codec;

thread_local! {
    /// The files of the message being encoded or decoded on this thread, in their order.
    static FILES: RefCell<Vec<web_sys::Blob>> = const { RefCell::new(Vec::new()) };
}

/// A file the page hands to the worker: the browser's `Blob`, read in place by the worker. Its
/// bincode form is its place among the message's files (`None` without a blob: the native tests'
/// messages, which never reach a browser).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FileRef(Option<web_sys::Blob>);

impl FileRef {
    pub fn new(blob: web_sys::Blob) -> FileRef {
        FileRef(Some(blob))
    }

    /// The blob; `None` only for a message made without one.
    pub fn blob(&self) -> Option<&web_sys::Blob> {
        self.0.as_ref()
    }
}

impl Serialize for FileRef {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // bincode serializes twice (its size, then its bytes): a blob met again keeps its place.
        let place = self.0.as_ref().map(|b| {
            FILES.with_borrow_mut(|files| match files.iter().position(|f| f == b) {
                Some(i) => i as u32,
                None => {
                    files.push(b.clone());
                    files.len() as u32 - 1
                }
            })
        });
        place.serialize(s)
    }
}

impl<'de> Deserialize<'de> for FileRef {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<FileRef, D::Error> {
        let Some(place) = Option::<u32>::deserialize(d)? else { return Ok(FileRef(None)) };
        FILES
            .with_borrow(|files| files.get(place as usize).cloned())
            .map(|b| FileRef(Some(b)))
            .ok_or_else(|| serde::de::Error::custom(format!("file {place} of the message is missing")))
    }
}

/// gloo-worker's codec: the message's bincode bytes, alone as a `Uint8Array` (as gloo-worker's
/// `Bincode` sends them) or, with files, first in an array followed by the files.
#[derive(Debug)]
pub struct WithFiles;

impl Codec for WithFiles {
    fn encode<I: Serialize>(input: I) -> JsValue {
        FILES.with_borrow_mut(Vec::clear);
        // The messages are this crate's own plain-data types: bincode cannot fail on them.
        #[allow(clippy::expect_used)]
        let bytes = bincode::serialize(&input).expect("a worker message is plain data");
        let files = FILES.take();
        let bytes: JsValue = js_sys::Uint8Array::from(bytes.as_slice()).into();
        if files.is_empty() {
            return bytes;
        }
        let out = js_sys::Array::of1(&bytes);
        for f in files {
            out.push(&f);
        }
        out.into()
    }

    fn decode<O: for<'de> Deserialize<'de>>(input: JsValue) -> O {
        let bytes = if js_sys::Array::is_array(&input) {
            let parts: js_sys::Array = input.unchecked_into();
            FILES.set(parts.iter().skip(1).map(JsCast::unchecked_into).collect());
            parts.get(0)
        } else {
            FILES.with_borrow_mut(Vec::clear);
            input
        };
        let data = js_sys::Uint8Array::from(bytes).to_vec();
        // Both ends run this crate's build: a message one encodes, the other decodes.
        #[allow(clippy::expect_used)]
        let out = bincode::deserialize(&data).expect("a worker message from this build");
        FILES.with_borrow_mut(Vec::clear);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Natively a message holds no blob: its files cross as `None`, the rest as bincode.
    #[test]
    fn a_message_without_blobs_crosses_as_plain_bincode() {
        let msg = (String::from("run"), FileRef::default(), Some(FileRef::default()));
        let bytes = bincode::serialize(&msg).unwrap();
        let back: (String, FileRef, Option<FileRef>) = bincode::deserialize(&bytes).unwrap();
        assert_eq!(back, msg);
        assert!(FILES.with_borrow(Vec::is_empty));
    }

    #[test]
    fn a_place_beyond_the_message_files_is_an_error() {
        let bytes = bincode::serialize(&Some(3u32)).unwrap();
        let err = bincode::deserialize::<FileRef>(&bytes).unwrap_err();
        assert!(err.to_string().contains("file 3 of the message is missing"), "{err}");
    }
}
