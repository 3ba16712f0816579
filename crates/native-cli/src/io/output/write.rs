//! One output path written as its kind asks: `-` to standard output, a regular file (or none yet)
//! replaced atomically through a temporary file flushed to disk as it grows ([`Writeback`]),
//! symbolic links followed, a FIFO or device written through, a folder refused.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use anyhow::{Context, Result, bail};

/// The file name that stands for standard output (and standard input).
const STDIO: &str = "-";

/// Symbolic links followed at most (Linux's own limit is 40).
const MAX_LINKS: usize = 40;

/// Whether `path` is `-` (standard input or output).
pub fn is_stdio(path: &Path) -> bool {
    path.as_os_str() == STDIO
}

/// The folder a file path is in (`.` for a bare name).
pub(super) fn folder_of(path: &Path) -> &Path {
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
