//! Reads a `profile_export.jsonl` record by record for the examples that time what is made of a
//! run's records.

use std::io::BufRead;

use aiperf_core::results::line::read_line;
use aiperf_core::results::record::RequestRecord;

/// Calls `each` with every request record of the file at `input`, in order; returns the lines
/// read. A line that is no record stops the reading with its `file:line`.
pub fn each_record(input: &str, mut each: impl FnMut(&RequestRecord)) -> Result<u64, Box<dyn std::error::Error>> {
    let mut rec = RequestRecord::default();
    let mut reader = std::io::BufReader::new(std::fs::File::open(input)?);
    let mut line = Vec::new();
    let mut n = 0u64;
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            return Ok(n);
        }
        n += 1;
        if read_line(&line, &mut rec).map_err(|e| format!("{input}:{n}: {e}"))? {
            each(&rec);
        }
    }
}
