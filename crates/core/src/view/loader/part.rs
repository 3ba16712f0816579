//! A run file read in two parts at once, split at a byte: the loader reading the start goes on to
//! the end of the line under way there ([`RunLoader::push_to_line_end`]); another loader, on
//! another worker, reads the lines that start after it ([`RestOfFile::loader`]) into a
//! [`LoadedPart`], which crosses as bincode and is [added](RunLoader::add_part) where the run is
//! finished. The run is the one of reading the file whole: the part's records come after the
//! first part's in every list, its sessions, instances and failures numbered after theirs.

use serde::{Deserialize, Serialize};

use super::RunLoader;
use crate::results::aggregate::Aggregate;
use crate::results::metrics::Slo;
use crate::view::run::{NONE, Point};
use crate::view::summary::RunSettings;

/// What a loader of the rest of a file needs to count its records as the first part's loader
/// does (serialized to cross to another worker).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RestOfFile {
    file: String,
    server_token_count: bool,
    slos: Vec<Slo>,
}

impl RestOfFile {
    /// A loader of the file's bytes from the byte before the split on: it skips them up to and
    /// including their first newline (the end of the line the first part's loader finishes),
    /// then reads the lines after it. Its part is [`RunLoader::into_part`].
    pub fn loader(&self) -> RunLoader {
        let settings = RunSettings {
            server_token_count: self.server_token_count,
            slos: self.slos.clone(),
            ..RunSettings::default()
        };
        let mut l = RunLoader::new(&self.file, settings);
        l.skipping = true;
        l
    }
}

/// The lines a loader of the rest of a file read: its records counted, its points, and what
/// they are numbered by.
#[derive(Debug, Serialize, Deserialize)]
pub struct LoadedPart {
    /// Lines read (blank and warm-up lines included).
    lines: u64,
    aggregate: Aggregate,
    points: Vec<Point>,
    sessions: Vec<String>,
    /// The hash of each instance's id, by instance number.
    instances: Vec<u64>,
    failures: Vec<(String, String)>,
}

impl LoadedPart {
    /// Records read.
    pub fn records(&self) -> usize {
        self.points.len()
    }
}

impl RunLoader {
    /// What a loader of the lines after this one's needs ([`RestOfFile::loader`]).
    pub fn rest_of_file(&self) -> RestOfFile {
        RestOfFile {
            file: self.file.clone(),
            server_token_count: self.settings.server_token_count,
            slos: self.settings.slos.clone(),
        }
    }

    /// Pushes the start of `bytes` (the file's next bytes) up to the end of the line under way:
    /// how many bytes that took once the line ended (0 when none was under way), `None` when it
    /// took them all and the line goes on.
    pub fn push_to_line_end(&mut self, bytes: &[u8]) -> Result<Option<usize>, super::RunError> {
        if self.partial.is_empty() {
            return Ok(Some(0));
        }
        match memchr::memchr(b'\n', bytes) {
            Some(nl) => self.push(&bytes[..=nl]).map(|()| Some(nl + 1)),
            None => self.push(bytes).map(|()| None),
        }
    }

    /// The lines read, the last one without a newline included.
    pub fn into_part(mut self) -> Result<LoadedPart, super::RunError> {
        self.finish_line()?;
        let mut instances = vec![0; self.instances.len()];
        for (&hash, &i) in &self.instances {
            if let Some(slot) = instances.get_mut(i as usize) {
                *slot = hash;
            }
        }
        Ok(LoadedPart {
            lines: self.line,
            aggregate: self.aggregate,
            points: self.points,
            sessions: self.sessions,
            instances,
            failures: self.failures,
        })
    }

    /// Adds the part read after this loader's lines (which must end where it starts: `false`,
    /// and nothing added, while a line is under way).
    pub fn add_part(&mut self, part: LoadedPart) -> bool {
        if !self.partial.is_empty() || self.skipping {
            return false;
        }
        let LoadedPart { lines, aggregate, mut points, sessions, instances, failures } = part;
        let sessions: Vec<u32> = sessions.into_iter().map(|s| self.session_of(&s)).collect();
        let instances: Vec<u32> = instances.into_iter().map(|h| self.instance_of(h)).collect();
        let failed = self.failures.len() as u32;
        let renumber = |i: u32, to: &[u32]| if i == NONE { NONE } else { to.get(i as usize).copied().unwrap_or(NONE) };
        for p in &mut points {
            p.session = renumber(p.session, &sessions);
            p.instance = renumber(p.instance, &instances);
            if p.error != NONE {
                p.error += failed;
            }
        }
        self.line += lines;
        self.aggregate.merge(&aggregate);
        self.points.extend(points);
        self.failures.extend(failures);
        true
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::super::tests::{jsonl, record};
    use super::*;
    use crate::results::metrics::parse_goodput;
    use crate::view::{Run, html};
    use proptest::prelude::*;

    fn crossed<T: Serialize + for<'de> Deserialize<'de>>(value: &T) -> T {
        bincode::deserialize(&bincode::serialize(value).unwrap()).unwrap()
    }

    proptest! {
        /// Wherever the file is split, and however the rest arrives, its two parts read apart
        /// (the rest's loader and its part crossing as bincode) give the run read whole.
        #[test]
        fn a_file_read_in_two_parts_is_the_file_read_whole(
            n in 1u64..40,
            split in 0usize..100_000,
            cut in 0usize..100_000,
            last_newline in any::<bool>(),
        ) {
            let records: Vec<_> = (0..n).map(|i| record(i, i % 4 == 1)).collect();
            let slos = parse_goodput("time_to_first_token:25").unwrap();
            let (mut text, _) = jsonl(&records, true, &slos);
            if !last_newline {
                text.pop();
            }
            let settings = RunSettings { slos, ..RunSettings::default() };
            let whole = Run::from_jsonl("x", "f", &text, settings.clone()).unwrap();
            let at = 1 + split % text.len();
            let mut first = RunLoader::new("f", settings);
            first.push(&text[..at]).unwrap();
            let ended = first.push_to_line_end(&text[at..]).unwrap();
            let mut rest = crossed(&first.rest_of_file()).loader();
            let from = &text[at - 1..];
            let cut = cut % (from.len() + 1);
            rest.push(&from[..cut]).unwrap();
            rest.push(&from[cut..]).unwrap();
            let part = crossed(&rest.into_part().unwrap());
            match ended {
                Some(_) => prop_assert!(first.add_part(part)),
                None => prop_assert_eq!(part.records(), 0),
            }
            let run = first.finish("x").unwrap();
            prop_assert_eq!(&run.report, &whole.report);
            // Debug forms: the points' missing metrics are NaN.
            prop_assert_eq!(format!("{:?}", run.points), format!("{:?}", whole.points));
            prop_assert_eq!(&run.sessions, &whole.sessions);
            prop_assert_eq!(&run.failures, &whole.failures);
            prop_assert_eq!(html::run_section(&run, 0), html::run_section(&whole, 0));
        }
    }

    #[test]
    fn a_part_is_not_added_to_a_loader_inside_a_line() {
        let (text, _) = jsonl(&[record(0, false), record(1, false)], true, &[]);
        let mut first = RunLoader::new("f", RunSettings::default());
        first.push(&text[..5]).unwrap();
        let mut rest = first.rest_of_file().loader();
        rest.push(&text[4..]).unwrap();
        let part = rest.into_part().unwrap();
        assert_eq!(part.records(), 1);
        assert!(!first.add_part(part));
    }
}
