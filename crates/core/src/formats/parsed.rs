//! Lines and documents read on their own, without the converter (so on any thread), for the
//! [`Converter`](super::Converter) to take in order: [`parse_line`] for the formats whose lines read apart,
//! [`parse_document`] and [`DocumentReader`] for the document formats.

use std::sync::Arc;

use super::error::FormatError;
use super::format::Format;
use super::{bailian, servegen, weka};

/// A line of a Bailian or ServeGen file read on its own ([`parse_line`]), for
/// [`Converter::push_parsed`](super::Converter::push_parsed): reading lines is most of the conversion of these formats, and it
/// needs nothing from the lines before.
#[derive(Debug)]
pub struct ParsedLine(pub(super) Parsed);

#[derive(Debug)]
pub(super) enum Parsed {
    Blank,
    Bailian(bailian::Raw, std::ops::Range<usize>),
    ServeGen(servegen::Raw, std::ops::Range<usize>),
}

/// Reads line `line` (1-based, without its terminator) of `source`, a file of `format`, as
/// [`Converter::push_line`](super::Converter::push_line) would, without the converter: the errors are the same. The line's
/// hash ids are appended to `ids` (one buffer for many lines), to be handed to
/// [`Converter::push_parsed`](super::Converter::push_parsed) with it.
pub fn parse_line(
    format: Format,
    source: &Arc<str>,
    line: u64,
    text: &str,
    ids: &mut Vec<u64>,
) -> Result<ParsedLine, FormatError> {
    let text = text.strip_suffix('\r').unwrap_or(text);
    if text.trim().is_empty() {
        return Ok(ParsedLine(Parsed::Blank));
    }
    let start = ids.len();
    let parsed = match format {
        Format::Bailian => bailian::parse(source, line, text, ids).map(|raw| Parsed::Bailian(raw, start..ids.len())),
        Format::ServeGen => servegen::parse(source, line, text, ids).map(|raw| Parsed::ServeGen(raw, start..ids.len())),
        _ => Err(FormatError::Options(format!("{source}: {format} lines are not read apart"))),
    };
    parsed.map(ParsedLine)
}

/// A whole document, or a part of one, read on its own ([`parse_document`], [`DocumentReader`]),
/// for [`Converter::push_parsed_document`](super::Converter::push_parsed_document): its requests checked, their hash ids in one buffer,
/// none of its text.
#[derive(Debug, PartialEq)]
pub struct ParsedDocument(pub(super) weka::Parsed);

/// Reads the whole text of `source`, a file of a document `format` (WEKA), as
/// [`Converter::push_document`](super::Converter::push_document) would, without the converter (so on any thread). Its errors
/// (the first of them) come out of [`Converter::push_parsed_document`](super::Converter::push_parsed_document), after the requests
/// before it, exactly as converting the text would give them.
pub fn parse_document(format: Format, source: &Arc<str>, text: &str) -> Result<ParsedDocument, FormatError> {
    let mut reader = DocumentReader::new(format, source, text)?;
    Ok(reader.next_part(usize::MAX).unwrap_or(ParsedDocument(weka::Parsed::default())))
}

/// Reads a document in parts ([`DocumentReader::next_part`]), for
/// [`Converter::push_parsed_document`](super::Converter::push_parsed_document) one after the other: a big document's first requests can
/// be converted while the rest is read. The parts together convert exactly as the whole
/// document ([`parse_document`]), errors included.
pub struct DocumentReader<'t>(weka::scan::Reader<'t>);

impl<'t> DocumentReader<'t> {
    pub fn new(format: Format, source: &Arc<str>, text: &'t str) -> Result<Self, FormatError> {
        match format {
            Format::Weka => Ok(DocumentReader(weka::scan::Reader::new(source, text))),
            _ => Err(FormatError::Options(format!("{source}: {format} files are not one document"))),
        }
    }

    /// The next part: at most `max_requests` requests (at least one) unless it is the last;
    /// `None` after the last.
    pub fn next_part(&mut self, max_requests: usize) -> Option<ParsedDocument> {
        self.0.next_part(max_requests).map(ParsedDocument)
    }
}

impl ParsedDocument {
    /// Whether this is its document's last part (a whole document is one).
    pub fn is_last(&self) -> bool {
        self.0.is_last()
    }
}
