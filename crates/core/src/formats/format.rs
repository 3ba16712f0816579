//! The trace formats this crate reads, by name, and how each is read: line by line, lines apart,
//! as one document, or as columns.

/// A trace format this crate reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    Mooncake,
    Bailian,
    ServeGen,
    Azure,
    BurstGpt,
    Weka,
    /// Baseten completion traces: Parquet files, read by the CLI into
    /// [`crate::formats::baseten::Record`]s.
    Baseten,
}

impl Format {
    pub const ALL: [Format; 7] = [
        Format::Mooncake,
        Format::Bailian,
        Format::ServeGen,
        Format::Azure,
        Format::BurstGpt,
        Format::Weka,
        Format::Baseten,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Mooncake => "mooncake",
            Format::Bailian => "bailian",
            Format::ServeGen => "servegen",
            Format::Azure => "azure",
            Format::BurstGpt => "burstgpt",
            Format::Weka => "weka",
            Format::Baseten => "baseten",
        }
    }

    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name().eq_ignore_ascii_case(name))
    }

    /// Tokens per source hash id (`None`: the format has no hashes or keeps Mooncake's).
    pub fn source_block_size(self) -> Option<u32> {
        match self {
            Format::Bailian | Format::ServeGen => Some(16),
            Format::Weka => Some(64),
            _ => None,
        }
    }

    /// Whether [`crate::formats::parse_line`] reads this format's lines apart (the others need
    /// their file's state from line to line, or are one document).
    pub fn parses_lines_apart(self) -> bool {
        matches!(self, Format::Bailian | Format::ServeGen)
    }

    /// Whether the format is one document per file, read whole by
    /// [`crate::formats::parse_document`].
    pub fn is_document(self) -> bool {
        self == Format::Weka
    }

    /// Whether the format is a columnar binary file (Baseten's Parquet), read by its own reader
    /// into records and converted by [`crate::formats::baseten::convert`], not by the
    /// [`crate::formats::Converter`].
    pub fn is_columnar(self) -> bool {
        self == Format::Baseten
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
