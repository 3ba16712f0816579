//! Where every command's output files go, and how they are written without destroying anything.
//!
//! - `-` is standard output.
//! - A regular file (or a path that does not exist yet) is replaced atomically: the bytes go to a
//!   temporary file in the same folder, which is flushed to disk and renamed over the path, so a
//!   crash or a full disk never leaves half a file and the temporary file is removed on failure.
//!   A large file is flushed to disk as it grows ([`Writeback`]), so the last flush waits for its
//!   last bytes only.
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
//! `parts`: output formatted in parts on worker threads ([`write_trace_file`], [`write_produced`]),
//! written through [`write_output_with`].

mod parts;

pub use parts::{PartSender, write_parts_file, write_produced, write_trace_file, write_trace_file_in};

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use anyhow::{Context, Result, bail};

/// The file name that stands for standard output (and standard input).
const STDIO: &str = "-";

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

/// Symbolic links followed at most (Linux's own limit is 40).
const MAX_LINKS: usize = 40;

/// Whether `path` is `-` (standard input or output).
pub fn is_stdio(path: &Path) -> bool {
    path.as_os_str() == STDIO
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

/// The folder a file path is in (`.` for a bare name).
fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// What writing to a path means, once links are followed.
enum Target {
    Stdout,
    /// A regular file (or nothing yet) at this path: replaced atomically.
    Replace(PathBuf),
    /// A FIFO, device, socket or `/proc/self/fd` entry: opened and written through.
    Through(PathBuf),
}

/// Follows `path`'s symbolic links to what should be written.
fn resolve(path: &Path) -> Result<Target> {
    if is_stdio(path) {
        return Ok(Target::Stdout);
    }
    let mut at = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        let meta = match fs::symlink_metadata(&at) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Target::Replace(at)),
            Err(e) => return Err(e).with_context(|| format!("cannot write {}", path.display())),
        };
        let kind = meta.file_type();
        if kind.is_dir() {
            bail!("cannot write {}: it is a folder (give a file path)", path.display());
        }
        if kind.is_file() {
            return Ok(Target::Replace(at));
        }
        if !kind.is_symlink() {
            return Ok(Target::Through(at));
        }
        // `/proc/self/fd/N` (behind `/dev/stdout`, `/dev/fd/N`) names an open descriptor, whose
        // "target" (`pipe:[123]`, a terminal, a file opened for appending) must not be replaced.
        if at.starts_with("/proc") {
            return Ok(Target::Through(at));
        }
        let link = fs::read_link(&at).with_context(|| format!("cannot follow the link {}", at.display()))?;
        at = match at.parent() {
            Some(dir) if link.is_relative() => dir.join(link),
            _ => link,
        };
    }
    bail!("cannot write {}: more than {MAX_LINKS} symbolic links to follow", path.display())
}

/// Writes `contents` to `path` (see the module documentation for what each kind of path gets).
pub fn write_output(path: &Path, contents: &[u8]) -> Result<()> {
    write_output_with(path, |w| w.write_all(contents))
}

/// Writes to `path` whatever `write` writes (see the module documentation for what each kind of
/// path gets): a replaced file is replaced only once `write` has succeeded.
pub fn write_output_with(path: &Path, write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<()> {
    write_to(path, write).context(crate::exit::OutputFailed)
}

fn write_to(path: &Path, write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<()> {
    match resolve(path)? {
        Target::Stdout => {
            let mut out = io::stdout().lock();
            write(&mut out).and_then(|()| out.flush()).context("cannot write to standard output")
        }
        Target::Through(at) => {
            let mut f = open_through(path, &at)?;
            write(&mut f).and_then(|()| f.flush()).with_context(|| format!("cannot write {}", path.display()))
        }
        Target::Replace(at) => replace_atomically(path, &at, write),
    }
}

/// Whether writing `path` replaces a regular file (or creates one) through a temporary file that
/// is removed on failure, so that a failed write leaves nothing behind: not standard output, a
/// FIFO or a device.
pub fn replaces_file(path: &Path) -> bool {
    matches!(resolve(path), Ok(Target::Replace(_)))
}

/// Opens `path` for output written as it is produced (a JSONL stream): standard output, a FIFO or
/// device written through, or a regular file created (truncated) at the links' target.
pub fn create_stream(path: &Path) -> Result<Box<dyn Write + Send>> {
    open_stream(path).context(crate::exit::OutputFailed)
}

fn open_stream(path: &Path) -> Result<Box<dyn Write + Send>> {
    Ok(match resolve(path)? {
        Target::Stdout => Box::new(io::stdout()),
        Target::Through(at) => Box::new(open_through(path, &at)?),
        Target::Replace(at) => {
            Box::new(File::create(&at).with_context(|| format!("cannot create {}", path.display()))?)
        }
    })
}

/// Opens a FIFO, device or descriptor for writing without truncating or replacing it. Appending
/// keeps `--output-file /dev/stdout >> log` from overwriting the start of `log`.
fn open_through(path: &Path, at: &Path) -> Result<File> {
    OpenOptions::new().append(true).open(at).with_context(|| format!("cannot open {} for writing", path.display()))
}

/// Temporary file in `at`'s folder, flushed to disk, renamed over `at`; removed on any failure.
/// Errors name `path` (what the user typed), never the temporary file.
fn replace_atomically(path: &Path, at: &Path, write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<()> {
    let dir = folder_of(at);
    let name = at.file_name().with_context(|| format!("cannot write {}: not a file path", path.display()))?;
    let (tmp, file) = create_temporary(dir, &name.to_string_lossy()).with_context(|| {
        format!("cannot write {}: cannot create a temporary file in {}", path.display(), dir.display())
    })?;
    let result = (|| -> io::Result<()> {
        // A replaced file keeps its permissions (a new one gets the umask's, like `File::create`).
        if let Ok(old) = fs::metadata(at) {
            file.set_permissions(old.permissions())?;
        }
        let mut out = io::BufWriter::with_capacity(1 << 16, Writeback::new(&file));
        write(&mut out)?;
        out.into_inner().map_err(io::IntoInnerError::into_error)?.finish()?;
        file.sync_all()?;
        drop(file);
        fs::rename(&tmp, at)
    })();
    result.map_err(|e| {
        let _ = fs::remove_file(&tmp);
        anyhow::Error::new(e).context(format!("cannot write {}", path.display()))
    })
}

/// Bytes written between two flushes to disk by [`Writeback`].
const WRITEBACK_EVERY: u64 = 32 << 20;

/// Writes to a file, and every [`WRITEBACK_EVERY`] bytes asks a thread of its own (started at the
/// first such flush) to flush what was written to disk while the writing goes on: the disk works
/// beside the command instead of after it.
struct Writeback<'a> {
    file: &'a File,
    written: u64,
    flusher: Option<(mpsc::SyncSender<()>, std::thread::JoinHandle<io::Result<()>>)>,
}

impl<'a> Writeback<'a> {
    fn new(file: &'a File) -> Self {
        Writeback { file, written: 0, flusher: None }
    }

    /// Waits for the flush under way; its error, if any (the flush that follows would not see it).
    fn finish(mut self) -> io::Result<()> {
        match self.flusher.take() {
            None => Ok(()),
            Some((asks, flusher)) => {
                drop(asks);
                flusher.join().map_err(|_| io::Error::other("the flushing thread stopped"))?
            }
        }
    }

    fn ask_flush(&mut self) -> io::Result<()> {
        if self.flusher.is_none() {
            let file = self.file.try_clone()?;
            let (asks, asked) = mpsc::sync_channel::<()>(1);
            let flusher = std::thread::spawn(move || asked.iter().try_for_each(|()| file.sync_data()));
            self.flusher = Some((asks, flusher));
        }
        if let Some((asks, _)) = &self.flusher {
            // A full channel: a flush is already asked for, which covers these bytes too. A
            // closed one: the flush failed, which `finish` reports.
            let _ = asks.try_send(());
        }
        Ok(())
    }
}

impl Write for Writeback<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        let before = self.written;
        self.written += n as u64;
        if self.written / WRITEBACK_EVERY > before / WRITEBACK_EVERY {
            self.ask_flush()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A new file `.NAME.PID.N.tmp` in `dir` (never an existing one: `create_new`).
fn create_temporary(dir: &Path, name: &str) -> io::Result<(PathBuf, File)> {
    let pid = std::process::id();
    let mut attempt = 0u32;
    loop {
        let tmp = dir.join(format!(".{name}.{pid}.{attempt}.tmp"));
        match OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 1000 => attempt += 1,
            Err(e) => return Err(e),
        }
    }
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
