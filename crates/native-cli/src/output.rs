//! Output files (interim: regular files only; replaced by the hardened module).

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};

/// Writes a whole output file atomically.
pub fn write_output(path: &Path, contents: &[u8]) -> Result<()> {
    crate::input::write_atomically(path, contents)
}

/// Creates an output written line by line.
pub fn create_stream(path: &Path) -> Result<Box<dyn Write + Send>> {
    let f = std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    Ok(Box::new(std::io::BufWriter::new(f)))
}
