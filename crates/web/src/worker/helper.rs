//! The helper: a second instance of the worker's script, named [`HELPER_NAME`], that takes a
//! big run's work in two places so that it takes two cores where the browser has them. While the
//! worker reads the first part of the records file, the helper reads the rest
//! ([`RestOfFile`], the file's `Blob` sliced; its [`LoadedPart`] crosses back as bincode); while
//! the worker finishes the summary, the helper computes groups of the time-weighted curves
//! ([`CurvesApart`]). Its answers are, to the bit, what the worker would compute; the bytes of
//! each message are handed over, not copied.

use std::cell::RefCell;
use std::rc::Rc;

use aiperf_core::view::{CurvesApart, RestOfFile};
use serde::de::DeserializeOwned;
use wasm_bindgen::prelude::*;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

/// The name the helper is started with, which its script reads to serve as the helper.
pub const HELPER_NAME: &str = "helper";

/// The groups the helper computes: the decode rates and the tokens in flight (the two with a
/// step per chunk, about half of the curves' work), while the worker takes the lists, the
/// total rate and the prefill rates.
pub(super) const APART: [usize; 2] = [0, 1];

/// Files from this size on (about 90,000 records) are read and have their curves computed with
/// the helper; below it, starting the helper costs more than it saves.
pub(super) const HELPER_FROM_BYTES: f64 = 32.0 * 1024.0 * 1024.0;

/// What the helper says once it listens, and as it takes a request, before computing.
const READY: &str = "ready";
const STARTED: &str = "started";

/// How long the worker waits for the helper to listen, or to take the request, before computing
/// every curve itself (a helper that could not start).
const WAIT_MS: i32 = 3_000;

/// Whether this worker was started as the helper.
pub fn is_helper() -> bool {
    js_sys::global().dyn_into::<web_sys::DedicatedWorkerGlobalScope>().is_ok_and(|scope| scope.name() == HELPER_NAME)
}

/// Serves as the helper. A message is either a [`CurvesApart`] in bincode, answered with its
/// groups' figures in bincode (an empty answer when the message cannot be read), or the rest of
/// a records file and its [`RestOfFile`] in bincode, answered with the [`LoadedPart`] in bincode
/// (`false` when the part cannot be read: the worker then reads it itself, and names the line).
pub fn serve() {
    let Ok(scope) = js_sys::global().dyn_into::<web_sys::DedicatedWorkerGlobalScope>() else { return };
    let answer_to = scope.clone();
    let on = Closure::<dyn Fn(web_sys::MessageEvent)>::new(move |e: web_sys::MessageEvent| {
        // Said first: the worker starts its own part once the helper has the request.
        let _ = answer_to.post_message(&JsValue::from_str(STARTED));
        let data = e.data();
        if let Ok(rest) = data.clone().dyn_into::<js_sys::Array>() {
            let answer_to = answer_to.clone();
            wasm_bindgen_futures::spawn_local(async move {
                match part_of_rest(&rest).await {
                    Some(answer) => {
                        let _ = answer_to.post_message_with_transfer(&answer, &js_sys::Array::of1(&answer.buffer()));
                    }
                    None => {
                        let _ = answer_to.post_message(&JsValue::FALSE);
                    }
                }
            });
            return;
        }
        let bytes = js_sys::Uint8Array::new(&data).to_vec();
        let figures = bincode::deserialize::<CurvesApart<'_>>(&bytes).map(|request| request.compute());
        let out = figures.ok().and_then(|f| bincode::serialize(&f).ok()).unwrap_or_default();
        let answer = js_sys::Uint8Array::from(out.as_slice());
        let _ = answer_to.post_message_with_transfer(&answer, &js_sys::Array::of1(&answer.buffer()));
    });
    scope.set_onmessage(Some(on.as_ref().unchecked_ref()));
    on.forget();
    // A message that came before the handler was set would be lost: the worker waits for this.
    let _ = scope.post_message(&JsValue::from_str(READY));
}

/// Reads the rest of a records file (`[Blob, RestOfFile in bincode]`) into its part, in
/// bincode; `None` when it cannot be read.
async fn part_of_rest(message: &js_sys::Array) -> Option<js_sys::Uint8Array> {
    let blob: web_sys::Blob = message.get(0).dyn_into().ok()?;
    let request = js_sys::Uint8Array::new(&message.get(1)).to_vec();
    let mut loader = bincode::deserialize::<RestOfFile>(&request).ok()?.loader();
    let reader = super::files::reader_of(&blob).ok()?;
    let mut buf = Vec::new();
    while super::files::next_chunk(&reader, &mut buf).await.ok()? {
        loader.push(&buf).ok()?;
    }
    drop(buf);
    let bytes = bincode::serialize(&loader.into_part().ok()?).ok()?;
    Some(js_sys::Uint8Array::from(bytes.as_slice()))
}

/// What posts a message to the helper once it listens.
type Post = Closure<dyn FnMut(JsValue)>;

/// A helper started for one run; stopped when dropped.
pub(super) struct Helper {
    worker: web_sys::Worker,
    /// Who waits for the helper's next word of each kind.
    waiting: Rc<RefCell<Waiting>>,
    ready: js_sys::Promise,
    /// Messages posted once the helper listens.
    posts: RefCell<Vec<Post>>,
    _heard: Closure<dyn Fn(web_sys::MessageEvent)>,
    _failed: Closure<dyn Fn()>,
}

/// The functions resolving the promises of the helper's words.
#[derive(Default)]
struct Waiting {
    ready: Option<js_sys::Function>,
    started: Option<js_sys::Function>,
    answered: Option<js_sys::Function>,
}

/// A request the helper took, or (with `started`) was sent: its answer, to wait for.
pub(super) struct Asked {
    started: Option<js_sys::Promise>,
    answered: js_sys::Promise,
}

impl Helper {
    /// Starts the helper from this worker's own script (it loads while the run is read);
    /// `None` where the browser refuses, and the worker computes every curve itself.
    pub(super) fn start() -> Option<Helper> {
        let scope = js_sys::global().dyn_into::<web_sys::WorkerGlobalScope>().ok()?;
        let options = web_sys::WorkerOptions::new();
        options.set_type(web_sys::WorkerType::Module);
        options.set_name(HELPER_NAME);
        let worker = web_sys::Worker::new_with_options(&scope.location().href(), &options).ok()?;
        let waiting = Rc::new(RefCell::new(Waiting::default()));
        let ready = promise(|resolve| waiting.borrow_mut().ready = Some(resolve));
        let heard = {
            let waiting = waiting.clone();
            Closure::<dyn Fn(web_sys::MessageEvent)>::new(move |e: web_sys::MessageEvent| {
                let data = e.data();
                let mut w = waiting.borrow_mut();
                let next = match data.as_string().as_deref() {
                    Some(READY) => w.ready.take(),
                    Some(_) => w.started.take(),
                    None => w.answered.take(),
                };
                drop(w);
                if let Some(resolve) = next {
                    let _ = resolve.call1(&JsValue::NULL, &data);
                }
            })
        };
        // A helper that fails answers nothing: every wait ends, and the worker computes alone.
        let failed = {
            let waiting = waiting.clone();
            Closure::<dyn Fn()>::new(move || {
                let w = std::mem::take(&mut *waiting.borrow_mut());
                for resolve in [w.ready, w.started, w.answered].into_iter().flatten() {
                    let _ = resolve.call1(&JsValue::NULL, &JsValue::FALSE);
                }
            })
        };
        worker.set_onmessage(Some(heard.as_ref().unchecked_ref()));
        worker.set_onerror(Some(failed.as_ref().unchecked_ref()));
        Some(Helper { worker, waiting, ready, posts: RefCell::default(), _heard: heard, _failed: failed })
    }

    /// Hands `request` to the helper (its bytes moved, not copied) once it listens, and waits
    /// until it has taken it: a helper's messages are delivered only once this worker yields,
    /// so this worker must wait before computing its own part. `None` when the helper did not
    /// listen or take the request in time.
    pub(super) async fn ask(&self, request: &CurvesApart<'_>) -> Option<Asked> {
        if !said(&self.ready).await {
            return None;
        }
        let bytes = bincode::serialize(request).ok()?;
        let started = promise(|resolve| self.waiting.borrow_mut().started = Some(resolve));
        let answered = promise(|resolve| self.waiting.borrow_mut().answered = Some(resolve));
        let message = js_sys::Uint8Array::from(bytes.as_slice());
        drop(bytes);
        self.worker.post_message_with_transfer(&message, &js_sys::Array::of1(&message.buffer())).ok()?;
        said(&started).await.then_some(Asked { started: None, answered })
    }

    /// Hands the helper `rest`, the bytes of a records file from the byte before a line's end
    /// on, to read as `request` tells (sent once it listens, while this worker reads the first
    /// part: this worker's reads yield).
    pub(super) fn read_rest(&self, rest: &web_sys::Blob, request: &RestOfFile) -> Option<Asked> {
        let bytes = bincode::serialize(request).ok()?;
        let started = promise(|resolve| self.waiting.borrow_mut().started = Some(resolve));
        let answered = promise(|resolve| self.waiting.borrow_mut().answered = Some(resolve));
        let message = js_sys::Array::of2(rest, &js_sys::Uint8Array::from(bytes.as_slice()));
        let worker = self.worker.clone();
        let post = Closure::once(move |word: JsValue| {
            if word.as_string().is_some() {
                let _ = worker.post_message(&message);
            }
        });
        let _ = self.ready.then(&post);
        self.posts.borrow_mut().push(post);
        Some(Asked { started: Some(started), answered })
    }

    /// Whether the helper took the last request sent ([`Helper::read_rest`]), or failed.
    pub(super) fn took_request(&self) -> bool {
        self.waiting.borrow().started.is_none()
    }
}

/// Lets this worker's event loop run its waiting tasks: the helper's messages are delivered
/// only then (a stream's chunks that are already there resolve without it).
pub(super) async fn yield_to_tasks() {
    let Ok(scope) = js_sys::global().dyn_into::<web_sys::WorkerGlobalScope>() else { return };
    let later = promise(|resolve| {
        let _ = scope.set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, 0);
    });
    let _ = JsFuture::from(later).await;
}

impl Asked {
    /// The helper's answer; `None` when it failed, or did not take the request in time.
    pub(super) async fn answer<T: DeserializeOwned>(self) -> Option<T> {
        if let Some(started) = &self.started
            && !said(started).await
        {
            return None;
        }
        let data = JsFuture::from(self.answered).await.ok()?;
        if !data.is_instance_of::<js_sys::Uint8Array>() {
            return None;
        }
        bincode::deserialize(&js_sys::Uint8Array::new(&data).to_vec()).ok()
    }
}

/// A promise and the function resolving it, handed to `keep`.
fn promise(keep: impl FnOnce(js_sys::Function)) -> js_sys::Promise {
    let mut resolver = None;
    let p = js_sys::Promise::new(&mut |resolve, _| resolver = Some(resolve));
    if let Some(r) = resolver {
        keep(r);
    }
    p
}

/// Whether the helper said the word `word` resolves with, within [`WAIT_MS`].
async fn said(word: &js_sys::Promise) -> bool {
    let Ok(scope) = js_sys::global().dyn_into::<web_sys::WorkerGlobalScope>() else { return false };
    let timeout = promise(|resolve| {
        let _ = scope.set_timeout_with_callback_and_timeout_and_arguments_1(&resolve, WAIT_MS, &JsValue::FALSE);
    });
    let first = js_sys::Promise::race(&js_sys::Array::of2(word, &timeout));
    JsFuture::from(first).await.is_ok_and(|v| v.as_string().is_some())
}

impl Drop for Helper {
    fn drop(&mut self) {
        self.worker.terminate();
    }
}
