//! The serde reading of a WEKA document: the reference the scanner must agree with, and the one
//! that words every error.

use std::fmt;
use std::sync::Arc;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::build::{Builder, List, block_of};
use super::model::{Entry, Parsed};
use crate::formats::error::{FormatError, Line};

/// The state of a document while serde reads it.
struct Doc<'d> {
    b: Builder,
    id: Option<String>,
    block: Option<u32>,
    /// Requests met before `id` and `block_size`: read when the document ends.
    early: Option<Vec<Entry<'d>>>,
    /// Why the reading stopped inside serde (its own error then only says "stopped").
    failed: Option<FormatError>,
    /// The document has a `requests` list.
    has_requests: bool,
}

impl Doc<'_> {
    fn conversation(&self) -> String {
        self.id.clone().unwrap_or_else(|| self.b.file.to_string())
    }
}

/// Reads a document with serde (errors included).
pub(super) fn parse_serde(file: &Arc<str>, text: &str) -> Parsed {
    let mut doc = Doc { b: Builder::new(file), id: None, block: None, early: None, failed: None, has_requests: false };
    let mut de = serde_json::Deserializer::from_str(text);
    let read = de.deserialize_map(DocVisitor(&mut doc)).and_then(|()| de.end());
    let stop = match (doc.failed.take(), read) {
        (Some(e), _) => Some(e),
        (None, Err(e)) => Some(FormatError::Shape {
            file: file.clone(),
            line: Line(Some(e.line() as u64)),
            reason: format!("not a WEKA trace object (`id`, `block_size`, `requests`): {e}"),
        }),
        (None, Ok(())) => finish_serde(&mut doc).err(),
    };
    let name = doc.conversation();
    let block = doc.block.unwrap_or(64);
    doc.b.finish(name, block, stop)
}

/// What follows a document serde read whole: the requests met before the header.
fn finish_serde(doc: &mut Doc<'_>) -> Result<(), FormatError> {
    if !doc.has_requests {
        return Err(FormatError::Shape {
            file: doc.b.file.clone(),
            line: Line(None),
            reason: "not a WEKA trace object (`id`, `block_size`, `requests`): missing field `requests`".into(),
        });
    }
    let block = block_of(&doc.b.file, doc.block)?;
    if let Some(early) = doc.early.take() {
        let conv = doc.b.conv(doc.conversation(), block);
        let list = List { base_ns: 0, base_s: 0.0, conv, path: "requests", block };
        for (i, e) in early.iter().enumerate() {
            doc.b.entry(e, i, &list)?;
        }
    }
    Ok(())
}

/// The document's top-level object.
struct DocVisitor<'v, 'd>(&'v mut Doc<'d>);

impl<'de> Visitor<'de> for DocVisitor<'_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a WEKA trace object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let doc = self.0;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "id" => doc.id = map.next_value()?,
                "block_size" => doc.block = map.next_value()?,
                "requests" if doc.id.is_some() && doc.block.is_some() => {
                    doc.has_requests = true;
                    let block = block_of(&doc.b.file, doc.block).map_err(|e| stop(doc, e))?;
                    let conv = doc.b.conv(doc.conversation(), block);
                    map.next_value_seed(Requests { doc: &mut *doc, block, conv })?;
                }
                "requests" => {
                    doc.has_requests = true;
                    doc.early = Some(map.next_value()?);
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// Keeps a conversion error for after serde returns, and gives serde one to stop with.
fn stop<E: de::Error>(doc: &mut Doc<'_>, e: FormatError) -> E {
    doc.failed = Some(e);
    E::custom("stopped")
}

/// The top-level `requests` list, read as it comes.
struct Requests<'v, 'd> {
    doc: &'v mut Doc<'d>,
    block: u32,
    conv: u32,
}

impl<'de> DeserializeSeed<'de> for Requests<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Requests<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of requests")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        let list = List { base_ns: 0, base_s: 0.0, conv: self.conv, path: "requests", block: self.block };
        while let Some(e) = seq.next_element::<Entry<'de>>()? {
            let doc = &mut *self.doc;
            doc.b.entry(&e, i, &list).map_err(|err| stop(doc, err))?;
            i += 1;
        }
        Ok(())
    }
}
