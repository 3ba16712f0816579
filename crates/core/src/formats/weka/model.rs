//! A WEKA document read into what the converter needs: its requests, conversations and end.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

use crate::formats::error::FormatError;

/// One request, or a sub-agent with its requests. Strings without escapes are borrowed from the
/// document.
#[derive(Deserialize)]
pub(super) struct Entry<'a> {
    pub(super) t: f64,
    #[serde(rename = "type", borrow)]
    pub(super) kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub(super) model: Option<Cow<'a, str>>,
    #[serde(rename = "in")]
    pub(super) input: Option<u64>,
    pub(super) out: Option<u64>,
    pub(super) hash_ids: Option<Vec<u64>>,
    #[serde(borrow)]
    pub(super) agent_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub(super) requests: Option<Vec<Entry<'a>>>,
    /// Read when a number, else taken as absent (the converter only ever skipped it).
    #[serde(default, deserialize_with = "lenient_seconds")]
    pub(super) api_time: Option<f64>,
    #[serde(default, deserialize_with = "lenient_seconds")]
    pub(super) think_time: Option<f64>,
    /// A sub-agent's recorded run time (AIPerf joins it by this).
    #[serde(default, deserialize_with = "lenient_seconds")]
    pub(super) duration_ms: Option<f64>,
}

/// A part of a document read into its requests, ready for [`convert`]: what the converter
/// needs and nothing of the text. A document is one part, or several in order ([`Reader`]).
#[derive(Debug, Default, PartialEq)]
pub(in crate::formats) struct Parsed {
    pub(super) reqs: Vec<Req>,
    /// The requests' hash ids, one after the other.
    pub(super) ids: Vec<u64>,
    /// The conversations (without the file's prefix) and models first met in this part,
    /// numbered after those of the parts before.
    pub(super) convs: Vec<Conv>,
    pub(super) models: Vec<Box<str>>,
    /// In the document's last part: how it ends.
    pub(super) end: Option<End>,
}

impl Parsed {
    pub(in crate::formats) fn is_last(&self) -> bool {
        self.end.is_some()
    }
}

/// How a document ends: its name (its `id`, else the file's) and block size for the note, its
/// counts, or why the reading stopped after the requests (converted first: the converter may
/// refuse one of them before).
#[derive(Debug, Default, PartialEq)]
pub(super) struct End {
    pub(super) name: String,
    pub(super) block: u32,
    pub(super) requests: u64,
    pub(super) subagents: u64,
    pub(super) stop: Option<FormatError>,
}

#[derive(Clone, Debug, PartialEq)]
pub(super) struct Conv {
    pub(super) name: String,
    pub(super) block: u32,
    /// A sub-agent's: where it was started.
    pub(super) spawn: Option<Spawn>,
}

/// Where a sub-agent entry sits: the conversation holding it, its place in that conversation's
/// list, its start and its recorded `duration_ms`.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Spawn {
    pub(super) parent: u32,
    pub(super) outer: u32,
    pub(super) at_ns: i64,
    pub(super) duration_ms: Option<f64>,
}

#[derive(Clone, Debug, PartialEq)]
pub(super) struct Req {
    pub(super) at_ns: i64,
    /// Its place in its conversation's list (sub-agent entries counted).
    pub(super) outer: u32,
    pub(super) input: u64,
    pub(super) output: Option<u64>,
    /// The end of its ids in [`Parsed::ids`] (they start where the previous request's end).
    pub(super) ids_end: usize,
    pub(super) conv: u32,
    pub(super) model: u32,
    /// The recorded `api_time` and `think_time` in seconds (AIPerf's re-timed turns).
    pub(super) api: Option<f64>,
    pub(super) think: Option<f64>,
}

/// The text as pushed line by line: `\r\n` as `\n`, and a final line end (serde's error
/// positions count lines and columns).
pub(super) fn as_lines(text: &str) -> Cow<'_, str> {
    if text.is_empty() || (text.ends_with('\n') && !text.contains('\r')) {
        return Cow::Borrowed(text);
    }
    let body = text.strip_suffix('\n').unwrap_or(text);
    let mut out = String::with_capacity(text.len() + 1);
    for line in body.split('\n') {
        out.push_str(line.strip_suffix('\r').unwrap_or(line));
        out.push('\n');
    }
    Cow::Owned(out)
}

/// Reads a number as seconds; anything else (a string, a list, null) as absent, since the
/// converter reads these fields only for the replay options and never refused a document for them.
pub(super) fn lenient_seconds<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    d.deserialize_any(Lenient)
}

struct Lenient;

impl<'de> Visitor<'de> for Lenient {
    type Value = Option<f64>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any value")
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Some(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Some(v as f64))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Some(v as f64))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(Lenient)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
}
