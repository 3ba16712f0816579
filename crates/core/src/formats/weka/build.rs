//! The checks of each request of a document, in document order, and the parts they are built into.

use std::collections::HashMap;
use std::sync::Arc;

use super::model::{Conv, End, Entry, Parsed, Req, Spawn};
use crate::formats::error::{FormatError, Line};
use crate::formats::sink::{check_id_count, seconds_to_ns};

/// AIPerf's `_JOIN_EPSILON_SECONDS`, the slack of "before the sub-agent's entry".
const SUB_AGENT_SLACK_S: f64 = 1e-6;

pub(super) fn field_error(file: &Arc<str>, field: &str, value: &str, expected: &str) -> FormatError {
    FormatError::Field {
        file: file.clone(),
        line: Line(None),
        field: field.into(),
        value: value.into(),
        expected: expected.into(),
    }
}

pub(super) fn block_of(file: &Arc<str>, block: Option<u32>) -> Result<u32, FormatError> {
    match block.unwrap_or(64) {
        0 => Err(field_error(file, "block_size", "0", "a positive number of tokens")),
        b => Ok(b),
    }
}

/// Where a list of entries sits: its conversation, its clock's start, its path in the document.
pub(super) struct List<'p> {
    pub(super) base_ns: i64,
    /// That start in seconds: a sub-agent's request time before it is read from it (AIPerf's
    /// rule: older captures recorded them from the entry), any other from the document's start.
    pub(super) base_s: f64,
    pub(super) conv: u32,
    pub(super) path: &'p str,
    pub(super) block: u32,
}

/// A request's fields as read.
pub(super) struct Request<'a> {
    pub(super) t: f64,
    pub(super) input: Option<u64>,
    pub(super) output: Option<u64>,
    pub(super) model: &'a str,
    pub(super) api: Option<f64>,
    pub(super) think: Option<f64>,
}

/// Builds the parts of a document: the checks of each request, in document order.
pub(super) struct Builder {
    pub(super) file: Arc<str>,
    /// The part being built (its `convs` and `models` stay empty until it is handed out).
    pub(super) part: Parsed,
    pub(super) convs: Vec<Conv>,
    pub(super) models: Vec<Box<str>>,
    pub(super) model_index: HashMap<Box<str>, u32>,
    pub(super) last_model: Option<u32>,
    pub(super) requests: u64,
    pub(super) subagents: u64,
    /// Requests, conversations and models handed out in parts so far.
    pub(super) sent: (usize, usize, usize),
}

impl Builder {
    pub(super) fn new(file: &Arc<str>) -> Self {
        Builder {
            file: file.clone(),
            part: Parsed::default(),
            convs: Vec::new(),
            models: Vec::new(),
            model_index: HashMap::new(),
            last_model: None,
            requests: 0,
            subagents: 0,
            sent: (0, 0, 0),
        }
    }

    pub(super) fn conv(&mut self, name: String, block: u32) -> u32 {
        self.convs.push(Conv { name, block, spawn: None });
        (self.convs.len() - 1) as u32
    }

    pub(super) fn model(&mut self, name: &str) -> u32 {
        if let Some(k) = self.last_model
            && self.models.get(k as usize).is_some_and(|m| **m == *name)
        {
            return k;
        }
        let k = match self.model_index.get(name) {
            Some(&k) => k,
            None => {
                let k = self.models.len() as u32;
                self.models.push(name.into());
                self.model_index.insert(name.into(), k);
                k
            }
        };
        self.last_model = Some(k);
        k
    }

    /// The time of entry `i` of `list`, checked.
    pub(super) fn at(&self, t: f64, i: usize, list: &List<'_>) -> Result<i64, FormatError> {
        let base = if t + SUB_AGENT_SLACK_S < list.base_s { list.base_ns } else { 0 };
        seconds_to_ns(Some(t)).and_then(|ns| ns.checked_add(base)).ok_or_else(|| {
            field_error(
                &self.file,
                &format!("{}[{i}].t", list.path),
                &t.to_string(),
                "a non-negative number of seconds",
            )
        })
    }

    /// Request `i` of `list` at `at_ns`, whose hash ids were appended to the part's ids.
    pub(super) fn request(
        &mut self,
        at_ns: i64,
        r: &Request<'_>,
        i: usize,
        list: &List<'_>,
    ) -> Result<(), FormatError> {
        self.requests += 1;
        let here = || format!("{}[{i}]", list.path);
        let input = r
            .input
            .ok_or_else(|| field_error(&self.file, &format!("{}.in", here()), "nothing", "a non-negative integer"))?;
        let start = self.part.reqs.last().map_or(0, |q| q.ids_end);
        let found = self.part.ids.len() - start;
        if let Err(err) = check_id_count(&self.file, Line(None), "hash_ids", found, input, list.block, false) {
            // Named with the request's place in the document.
            return Err(match err {
                FormatError::Field { file, line, value, expected, .. } => {
                    FormatError::Field { file, line, field: format!("{}.hash_ids", here()), value, expected }
                }
                other => other,
            });
        }
        let model = self.model(r.model);
        let ids_end = self.part.ids.len();
        self.part.reqs.push(Req {
            at_ns,
            outer: i as u32,
            input,
            output: r.output,
            ids_end,
            conv: list.conv,
            model,
            api: r.api,
            think: r.think,
        });
        Ok(())
    }

    /// Entry `i` of `list` as serde read it: a request, or a sub-agent's requests.
    pub(super) fn entry(&mut self, e: &Entry<'_>, i: usize, list: &List<'_>) -> Result<(), FormatError> {
        let at_ns = self.at(e.t, i, list)?;
        if e.kind.as_deref() == Some("subagent") || e.requests.is_some() {
            self.subagents += 1;
            let agent = e.agent_id.as_deref().map_or_else(|| format!("agent{i}"), str::to_string);
            let name = format!("{}/{agent}", self.convs.get(list.conv as usize).map_or("", |c| &c.name));
            let conv = self.conv(name, list.block);
            if let Some(c) = self.convs.last_mut() {
                c.spawn = Some(Spawn { parent: list.conv, outer: i as u32, at_ns, duration_ms: e.duration_ms });
            }
            let path = format!("{}[{i}].requests", list.path);
            let sub = List { base_ns: at_ns, base_s: at_ns as f64 / 1e9, conv, path: &path, block: list.block };
            for (k, e) in e.requests.as_deref().unwrap_or_default().iter().enumerate() {
                self.entry(e, k, &sub)?;
            }
            return Ok(());
        }
        self.part.ids.extend_from_slice(e.hash_ids.as_deref().unwrap_or_default());
        let r = Request {
            t: e.t,
            input: e.input,
            output: e.out,
            model: e.model.as_deref().unwrap_or(""),
            api: e.api_time,
            think: e.think_time,
        };
        self.request(at_ns, &r, i, list)
    }

    /// Hands out the requests read since the last part, with the conversations and models met
    /// since.
    pub(super) fn take_part(&mut self) -> Parsed {
        let mut part = std::mem::take(&mut self.part);
        part.convs = self.convs.get(self.sent.1..).unwrap_or_default().to_vec();
        part.models = self.models.get(self.sent.2..).unwrap_or_default().to_vec();
        self.sent = (self.sent.0 + part.reqs.len(), self.convs.len(), self.models.len());
        part
    }

    /// The last part of the document read (or stopped) with this name and block size.
    pub(super) fn finish(mut self, name: String, block: u32, stop: Option<FormatError>) -> Parsed {
        let mut part = self.take_part();
        part.end = Some(End { name, block, requests: self.requests, subagents: self.subagents, stop });
        part
    }
}
