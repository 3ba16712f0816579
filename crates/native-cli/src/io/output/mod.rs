//! Where every command's output files go, and how they are written without destroying anything.
//!
//! - `-` is standard output.
//! - A regular file (or a path that does not exist yet) is replaced atomically: the bytes go to a
//!   temporary file in the same folder, which is flushed to disk and renamed over the path, so a
//!   crash or a full disk never leaves half a file and the temporary file is removed on failure.
//!   A large file is flushed to disk as it grows, so the last flush waits for its last bytes
//!   only.
//! - A symbolic link is followed; its final target is what gets replaced (the link stays a link).
//! - A FIFO, a character or block device, a socket and `/dev/stdout` (a link into `/proc/self/fd`)
//!   are written through: opened for writing and never replaced, so `--output-file /dev/null`
//!   leaves `/dev/null` a device.
//! - A folder is an error naming the path.
//!
//! Before reading anything, a command calls [`refuse_same_files`] with its outputs and inputs: an
//! output that is the same file as an input (same device and inode, through any link) is refused,
//! so that no command can overwrite the file it is reading. Error messages always name the user's
//! path, never the temporary file.
//!
//! `write`: one path written as its kind asks ([`write_output`], [`create_stream`]); `parts`:
//! output formatted in parts on worker threads ([`write_trace_file`], [`write_produced`]),
//! written through [`write_output_with`].

mod parts;
mod write;

pub use parts::{PartSender, write_parts_file, write_produced, write_trace_file, write_trace_file_in};
pub use write::{create_stream, is_stdio, replaces_file, write_output, write_output_with};

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use write::folder_of;

/// Where a command's human-readable report goes: standard error when one of its outputs is
/// standard output (`-`, or a path to the same file or pipe such as `/dev/stdout`), so that the
/// report never mixes with the data. A closed console drops the report (see [`crate::io::console`]).
pub fn report_stream(outputs: &[&Path]) -> crate::io::console::Console {
    let stdout = fs::metadata("/proc/self/fd/1").ok().map(|m| (m.dev(), m.ino()));
    let is_stdout =
        |p: &Path| is_stdio(p) || (stdout.is_some() && fs::metadata(p).ok().map(|m| (m.dev(), m.ino())) == stdout);
    if outputs.iter().any(|p| is_stdout(p)) {
        crate::io::console::Console::Stderr
    } else {
        crate::io::console::Console::Stdout
    }
}

/// Refuses (naming both paths) any output that is the same file as one of the inputs, or as
/// another output. Existing regular files are compared by device and inode, outputs not created
/// yet by their canonical folder and name; devices, FIFOs and `-` may be named more than once
/// (`/dev/stdin` and `/dev/stdout` are often the same terminal).
pub fn refuse_same_files(outputs: &[&Path], inputs: &[&Path]) -> Result<()> {
    let identity = |p: &Path| -> Option<(u64, u64)> {
        if is_stdio(p) {
            return None;
        }
        let m = fs::metadata(p).ok()?;
        m.is_file().then(|| (m.dev(), m.ino()))
    };
    for (i, out) in outputs.iter().enumerate() {
        // Two outputs not created yet may still be one path (`o.json` and `./o.json`).
        if let Some(other) = outputs[..i]
            .iter()
            .find(|p| !is_stdio(p) && !is_stdio(out) && planned(p).is_some_and(|q| Some(q) == planned(out)))
        {
            bail!(
                "refusing to write {} and {}: they are the same file; give each output its own path",
                other.display(),
                out.display()
            );
        }
        let Some(id) = identity(out) else { continue };
        if let Some(input) = inputs.iter().find(|p| identity(p) == Some(id)) {
            bail!(
                "refusing to write {}: it is the same file as the input {} (writing it would destroy the input); \
                 choose another output path",
                out.display(),
                input.display()
            );
        }
        if let Some(other) = outputs[..i].iter().find(|p| identity(p) == Some(id)) {
            bail!(
                "refusing to write {} and {}: they are the same file; give each output its own path",
                other.display(),
                out.display()
            );
        }
    }
    Ok(())
}

/// Where a missing output will be created: its folder's canonical path joined with its name.
fn planned(path: &Path) -> Option<PathBuf> {
    if fs::symlink_metadata(path).is_ok() {
        return None;
    }
    Some(fs::canonicalize(folder_of(path)).ok()?.join(path.file_name()?))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::parts::tests::trace_of;
    use super::*;

    fn read(p: &Path) -> String {
        fs::read_to_string(p).unwrap()
    }

    #[test]
    fn a_trace_file_replaces_its_path_and_equals_the_whole_text() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.jsonl");
        fs::write(&p, "old").unwrap();
        let trace = trace_of(50);
        write_trace_file(&p, &trace).unwrap();
        assert_eq!(read(&p), aiperf_core::trace::write_trace(&trace));
        assert!(leftovers(dir.path()).is_empty());
    }

    fn leftovers(dir: &Path) -> Vec<String> {
        fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect()
    }

    #[test]
    fn regular_and_missing_files_are_replaced_without_leftovers() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.json");
        write_output(&p, b"one").unwrap();
        write_output(&p, b"two").unwrap();
        assert_eq!(read(&p), "two");
        assert!(leftovers(dir.path()).is_empty());
    }

    #[test]
    fn a_symlink_stays_a_link_and_its_target_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("real.json");
        fs::write(&target, "old").unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink("real.json", &link).unwrap();
        write_output(&link, b"new").unwrap();
        assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(read(&target), "new");
        // A dangling link creates its target.
        let dangling = dir.path().join("dangling");
        std::os::unix::fs::symlink(dir.path().join("created.json"), &dangling).unwrap();
        write_output(&dangling, b"x").unwrap();
        assert_eq!(read(&dir.path().join("created.json")), "x");
    }

    #[test]
    fn a_folder_or_a_missing_folder_is_an_error_naming_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let e = format!("{:#}", write_output(dir.path(), b"x").unwrap_err());
        assert!(e.contains(&dir.path().display().to_string()) && e.contains("folder"), "{e}");
        let p = dir.path().join("no/such/out.json");
        let e = format!("{:#}", write_output(&p, b"x").unwrap_err());
        assert!(e.contains("no/such/out.json") && !e.contains(".out.json."), "{e}");
        assert!(leftovers(dir.path()).is_empty());
    }

    #[test]
    fn a_fifo_is_written_through() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || fs::read_to_string(fifo).unwrap())
        };
        write_output(&fifo, b"through").unwrap();
        assert_eq!(reader.join().unwrap(), "through");
        assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    }

    #[test]
    fn same_files_are_refused_through_links() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.jsonl");
        fs::write(&input, "data").unwrap();
        let hard = dir.path().join("hard.jsonl");
        fs::hard_link(&input, &hard).unwrap();
        let soft = dir.path().join("soft.jsonl");
        std::os::unix::fs::symlink(&input, &soft).unwrap();
        for out in [&input, &hard, &soft] {
            let e = refuse_same_files(&[out], &[&input]).unwrap_err().to_string();
            assert!(e.contains(&out.display().to_string()) && e.contains(&input.display().to_string()), "{e}");
        }
        let other = dir.path().join("other.jsonl");
        refuse_same_files(&[&other, Path::new("-")], &[&input, Path::new("-")]).unwrap();
        fs::write(&other, "").unwrap();
        let e = refuse_same_files(&[&other, &other], &[&input]).unwrap_err().to_string();
        assert!(e.contains("same file"), "{e}");
        let fresh = dir.path().join("fresh.json");
        let e = refuse_same_files(&[&fresh, &dir.path().join("./fresh.json")], &[&input]).unwrap_err().to_string();
        assert!(e.contains("same file"), "{e}");
        assert_eq!(read(&input), "data");
    }
}
