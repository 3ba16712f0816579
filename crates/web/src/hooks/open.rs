//! Opening files: a trace (dropped, picked, the bundled sample, or the open one read again with
//! new conversion settings) or finished runs, handed to the worker as the browser's files ([`FileRef`]).

use std::cell::RefCell;
use std::rc::Rc;

use yew::prelude::*;

use crate::protocol::{FileRef, RunFiles, ToWorker};
use crate::runs::{is_run_file, labels, looks_like_records, pick_files};
use crate::state::{Action, AppState, Reading};
use crate::web;

use super::worker::WorkerLink;

/// Where the bundled sample trace is served.
const SAMPLE_URL: &str = "sample/conversation_trace.jsonl";
const SAMPLE_NAME: &str = "conversation_trace.jsonl";

/// What the page's open controls do.
#[derive(Clone, PartialEq)]
pub struct Open {
    /// Dropped or picked files: a trace (or several WEKA files merged), or runs.
    pub files: Callback<Vec<web_sys::File>>,
    pub sample: Callback<()>,
    /// Reads the open trace again with the conversion settings as they are now.
    pub again: Callback<()>,
}

/// A trace opened on the page, kept to read it again.
#[derive(Clone)]
struct OpenTrace {
    blob: web_sys::Blob,
    name: String,
    /// Files merged after it (several WEKA files).
    merge: Vec<web_sys::File>,
    sample: bool,
}

/// Opens files with the settings of the state it was made from.
struct Opener {
    dispatch: UseReducerDispatcher<AppState>,
    worker: WorkerLink,
    block_size: u32,
    reading: Reading,
    open_now: Rc<RefCell<Option<OpenTrace>>>,
}

/// The open controls' callbacks, made again when the settings they read change.
#[hook]
pub fn use_open(state: &AppState, dispatch: UseReducerDispatcher<AppState>, worker: WorkerLink) -> Open {
    let open_now = use_mut_ref(|| None::<OpenTrace>);
    let block_size = state.form.block_size().unwrap_or(aiperf_core::analysis::DEFAULT_BLOCK_SIZE);
    let open = use_memo((block_size, state.reading.clone()), move |(block_size, reading)| {
        let o = Rc::new(Opener { dispatch, worker, block_size: *block_size, reading: reading.clone(), open_now });
        let (a, b, c) = (o.clone(), o.clone(), o);
        Open {
            files: Callback::from(move |files| a.files(files)),
            sample: Callback::from(move |()| b.sample()),
            again: Callback::from(move |()| c.again()),
        }
    });
    (*open).clone()
}

impl Opener {
    fn files(self: &Rc<Self>, mut files: Vec<web_sys::File>) {
        // Several `.json` files that are not a run's: WEKA traces merged into one, in name order.
        let trace_json = |f: &web_sys::File| {
            let n = f.name();
            n.ends_with(".json") && !is_run_file(&n)
        };
        if files.len() > 1 && files.iter().all(trace_json) {
            files.sort_by_key(web_sys::File::name);
            let merge = files.split_off(1);
            return self.trace_file(files.remove(0), merge);
        }
        let [file] = files.as_slice() else {
            if !files.is_empty() {
                self.runs(files);
            }
            return;
        };
        // A run's summary, server metrics or a sweep's summary goes to the run view; another
        // `.json` (WEKA) is a trace.
        if is_run_file(&file.name()) {
            return self.runs(files);
        }
        let (file, this) = (file.clone(), self.clone());
        wasm_bindgen_futures::spawn_local(async move {
            let head = match file.slice_with_i32_and_i32(0, 64) {
                Ok(b) => wasm_bindgen_futures::JsFuture::from(b.text()).await.ok().and_then(|t| t.as_string()),
                Err(_) => None,
            };
            if head.as_deref().is_some_and(looks_like_records) {
                this.runs(vec![file]);
            } else {
                this.trace_file(file, Vec::new());
            }
        });
    }

    fn trace_file(&self, file: web_sys::File, merge: Vec<web_sys::File>) {
        self.opened(&file.name(), file.size() as u64, false);
        self.load(OpenTrace { name: file.name(), blob: file.into(), merge, sample: false });
    }

    fn sample(self: &Rc<Self>) {
        self.opened(SAMPLE_NAME, 0, true);
        let this = self.clone();
        wasm_bindgen_futures::spawn_local(async move {
            match fetch_sample().await {
                Ok(blob) => this.load(OpenTrace { blob, name: SAMPLE_NAME.into(), merge: Vec::new(), sample: true }),
                Err(message) => this.dispatch.dispatch(Action::OpenFailed { name: SAMPLE_NAME.into(), message }),
            }
        });
    }

    fn again(&self) {
        let Some(open) = self.open_now.borrow().clone() else { return };
        self.opened(&open.name, open.blob.size() as u64, open.sample);
        self.load(open);
    }

    fn opened(&self, name: &str, size: u64, sample: bool) {
        let now = web::now_ms();
        let block_size = self.block_size;
        self.dispatch.dispatch(Action::FileOpened { name: name.into(), size, now, sample, block_size });
    }

    /// Hands the trace to the worker.
    fn load(&self, open: OpenTrace) {
        *self.open_now.borrow_mut() = Some(open.clone());
        let OpenTrace { blob, name, merge, .. } = open;
        let fail = |message| self.dispatch.dispatch(Action::OpenFailed { name: name.clone(), message });
        let conversion = match self.reading.conversion() {
            Ok(c) => c,
            Err(message) => return fail(message),
        };
        let more = merge.iter().map(|f| (FileRef::new(f.clone().into()), f.name())).collect();
        let msg = ToWorker::Load {
            file: FileRef::new(blob.clone()),
            name: name.clone(),
            size: blob.size() as u64,
            block_size: self.block_size,
            format: self.reading.format.clone(),
            conversion: Box::new(conversion),
            more,
        };
        self.worker.send(msg);
    }

    /// Finished runs: pairs the files, hands them to the worker.
    fn runs(&self, files: Vec<web_sys::File>) {
        let names: Vec<String> = files.iter().map(web_sys::File::name).collect();
        match run_files(&files, &names) {
            Ok(msg) => {
                self.dispatch.dispatch(Action::RunsOpened { names, now: web::now_ms() });
                self.worker.send(msg);
            }
            Err(message) => self.dispatch.dispatch(Action::RunsRefused(message)),
        }
    }
}

/// The [`ToWorker::LoadRuns`] of the dropped files.
fn run_files(files: &[web_sys::File], names: &[String]) -> Result<ToWorker, String> {
    let picked = pick_files(names)?;
    let run_labels = labels(&picked.runs.iter().map(|r| names[r.records].as_str()).collect::<Vec<_>>());
    let named = |i: usize| (FileRef::new(files[i].clone().into()), names[i].clone());
    let mut runs = Vec::new();
    for (pick, label) in picked.runs.iter().zip(run_labels) {
        let (records, records_name) = named(pick.records);
        let config = pick.config.map(named);
        let server = pick.server.map(named);
        runs.push(RunFiles { label, records, records_name, config, server });
    }
    let curves = picked.curves.iter().map(|&c| named(c)).collect();
    Ok(ToWorker::LoadRuns { runs, curves })
}

async fn fetch_sample() -> Result<web_sys::Blob, String> {
    let resp = gloo_net::http::Request::get(SAMPLE_URL)
        .send()
        .await
        .map_err(|e| format!("cannot fetch the sample trace: {e}"))?;
    if !resp.ok() {
        return Err(format!("cannot fetch the sample trace: HTTP {}", resp.status()));
    }
    let bytes = resp.binary().await.map_err(|e| format!("cannot read the sample trace: {e}"))?;
    let parts = js_sys::Array::of1(&js_sys::Uint8Array::from(bytes.as_slice()));
    web_sys::Blob::new_with_u8_array_sequence(&parts).map_err(|_| "cannot hold the sample trace".to_string())
}
