//! AIPerf's own dataset files (`--input-file F --custom-dataset-type single_turn | multi_turn |
//! random_pool`, or a config file's `benchmark.dataset` with that `format` and a `path`), read
//! when the plan is made through the core's readers ([`aiperf_core::trace::dataset_file`]) into
//! the trace the run replays: a single_turn record or a multi_turn conversation per line, or the
//! pools of a random_pool file or folder sampled with the run's seed.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use aiperf_core::trace::dataset_file::{ConversationReader, Kind, LineError, PoolReader};
use aiperf_core::trace::random_pool;
use aiperf_core::trace::{Input, LineRead, Trace, read_line_capped};
use anyhow::{Context, Result, anyhow, bail};

use super::model::DatasetFile;
use crate::profile::body::EndpointType;

/// How many conversations a random_pool dataset draws without `--num-dataset-entries`,
/// `--conversation-num` or `--request-count` (AIPerf's default).
pub const POOL_CONVERSATIONS: u64 = 100;

/// The most conversations a random_pool dataset draws (each is a row held in memory).
pub const MAX_POOL_CONVERSATIONS: u64 = 10_000_000;

/// The trace of `path`, a dataset file of `kind`, and the system prompt of its conversations
/// (a multi_turn file's leading system turns); a random_pool draws `conversations` with `seed`.
/// Lines longer than `max_line_bytes` are refused.
pub fn read(
    path: &Path,
    kind: Kind,
    conversations: usize,
    seed: u64,
    max_line_bytes: usize,
) -> Result<(Trace, Option<String>)> {
    let folder = std::fs::metadata(path).is_ok_and(|m| m.is_dir());
    let trace = match kind {
        Kind::SingleTurn | Kind::MultiTurn => {
            if folder {
                bail!(
                    "{}: a folder: accepted for {kind} is a file of JSON lines (random_pool reads a folder, a pool per file)",
                    path.display()
                );
            }
            let mut reader = if kind == Kind::MultiTurn {
                ConversationReader::multi_turn()
            } else {
                ConversationReader::single_turn()
            };
            each_line(path, max_line_bytes, |line, text| reader.push_line(line, text))?;
            if reader.is_empty() {
                let what = if kind == Kind::MultiTurn { "conversation" } else { "record" };
                bail!("{}: no {what}: accepted is a file of {kind} lines, at least one", path.display());
            }
            let system = reader
                .system_prompt()
                .map_err(|e| anyhow!("{}:{}: {}", path.display(), e.line, e.error))?
                .map(str::to_owned);
            (reader.finish(), system)
        }
        Kind::RandomPool => {
            let files = if folder { pool_files(path)? } else { vec![path.to_path_buf()] };
            let mut pools = Vec::with_capacity(files.len());
            for f in &files {
                let mut reader = PoolReader::new();
                each_line(f, max_line_bytes, |line, text| reader.push_line(line, text))?;
                let name = f.file_name().map_or_else(|| f.display().to_string(), |n| n.to_string_lossy().into_owned());
                pools.push(reader.finish(name));
            }
            if let Some((f, _)) = files.iter().zip(&pools).find(|(_, p)| p.entries.is_empty()) {
                bail!("{}: no entry: accepted is a file of random_pool entries, at least one", f.display());
            }
            let trace =
                random_pool::sample(&pools, conversations, seed).map_err(|e| anyhow!("{}: {e}", path.display()))?;
            (trace, None)
        }
    };
    Ok(trace)
}

/// The run's system prompt: `--system-prompt`'s (`given`), then, after a blank line, the
/// dataset's conversation system prompt, as AIPerf joins them.
pub fn system_prompt(given: Option<Arc<str>>, d: Option<&DatasetFile>) -> Option<Arc<str>> {
    match (given, d.and_then(|d| d.system.as_deref())) {
        (Some(g), Some(s)) => Some(format!("{g}\n\n{s}").into()),
        (None, Some(s)) => Some(s.into()),
        (given, None) => given,
    }
}

/// A random_pool of several prompts per request is sent as the text parts of one chat message;
/// AIPerf sends them to a completions endpoint as a list `prompt` (a batch), which is refused. A
/// conversation system prompt is AIPerf's on chat endpoints only.
pub fn check_endpoint(d: &DatasetFile, endpoint: EndpointType) -> Result<()> {
    if d.system.is_some() && endpoint == EndpointType::Completions {
        bail!(
            "{}: a leading system turn with --endpoint-type completions: AIPerf makes it the conversation's system prompt on chat endpoints only (on completions it is a request of its own); accepted is --endpoint-type chat",
            d.path.display()
        );
    }
    if d.kind == Kind::RandomPool
        && endpoint == EndpointType::Completions
        && d.trace.rows().iter().any(|r| matches!(r.input, Input::Messages(_)))
    {
        bail!(
            "{}: a random_pool of several prompts per request (a folder of several pools, or an entry of several texts): AIPerf sends them to --endpoint-type completions as a list prompt (a batch of completions), not sent here; accepted is --endpoint-type chat (the prompts as the text parts of one user message), or one prompt per entry in one pool",
            d.path.display()
        );
    }
    Ok(())
}

/// The files of a random_pool folder, by name (AIPerf's order; folders inside are skipped).
fn pool_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot read the folder {}", dir.display()))? {
        let path = entry.with_context(|| format!("cannot read the folder {}", dir.display()))?.path();
        if path.is_file() {
            files.push(path);
        }
    }
    files.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    if files.is_empty() {
        bail!("{}: a folder without files: accepted is a folder of random_pool files, a pool per file", dir.display());
    }
    Ok(files)
}

/// Hands every line of `path` (gzip or not) to `push`, numbered from 1; an error names the file
/// and the line.
fn each_line(
    path: &Path,
    max_line_bytes: usize,
    mut push: impl FnMut(u64, &str) -> Result<(), LineError>,
) -> Result<()> {
    let mut reader = crate::io::input::open(path)?;
    let mut buf = Vec::new();
    let mut line = 0u64;
    loop {
        buf.clear();
        match read_line_capped(&mut reader, &mut buf, max_line_bytes)
            .with_context(|| format!("cannot read {} after line {line}", path.display()))?
        {
            LineRead::End => return Ok(()),
            LineRead::TooLong => bail!(
                "{}:{}: the line is longer than {max_line_bytes} bytes, the most a line may hold (raise it with --max-line-bytes if the file is right)",
                path.display(),
                line + 1
            ),
            LineRead::Line => {}
        }
        line += 1;
        let text = std::str::from_utf8(&buf).map_err(|e| {
            anyhow!("{}:{line}: accepted is UTF-8 text, got an invalid byte at {}", path.display(), e.valid_up_to())
        })?;
        push(line, text).map_err(|e| anyhow!("{}:{}: {}", path.display(), e.line, e.error))?;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn err(path: &Path, kind: Kind) -> String {
        format!("{:#}", read(path, kind, 3, 0, 1 << 20).unwrap_err())
    }

    #[test]
    fn files_and_folders_read_as_their_kind_or_name_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("st.jsonl");
        std::fs::write(&f, "{\"text\": \"a\"}\n\n{\"text\": \"b\", \"output_lenght\": 3}\n").unwrap();
        let e = err(&f, Kind::SingleTurn);
        assert!(e.starts_with(&format!("{}:3: `output_lenght`: a key of AIPerf's single_turn", f.display())), "{e}");
        std::fs::write(&f, "\n\n").unwrap();
        assert_eq!(
            err(&f, Kind::SingleTurn),
            format!("{}: no record: accepted is a file of single_turn lines, at least one", f.display())
        );
        std::fs::write(&f, "{\"text\": \"a\"}\r\n{\"text\": \"b\"}").unwrap();
        let (t, system) = read(&f, Kind::SingleTurn, 0, 0, 1 << 20).unwrap();
        assert_eq!(system, None);
        assert_eq!(
            t.rows().iter().map(|r| r.input.clone()).collect::<Vec<_>>(),
            [Input::Text("a".into()), Input::Text("b".into())]
        );
        std::fs::write(&f, "{\"text\": \"aaaaaaaaaa\"}\n").unwrap();
        assert!(
            format!("{:#}", read(&f, Kind::SingleTurn, 0, 0, 8).unwrap_err())
                .contains(":1: the line is longer than 8 bytes")
        );
        assert!(err(dir.path(), Kind::MultiTurn).contains(": a folder: accepted for multi_turn is a file"));

        // A folder of pools: every file, by name; an empty one is named.
        let pools = dir.path().join("pools");
        std::fs::create_dir(&pools).unwrap();
        assert!(err(&pools, Kind::RandomPool).contains("a folder without files"));
        std::fs::write(pools.join("b.jsonl"), "{\"text\": \"r\"}\n").unwrap();
        std::fs::write(pools.join("a.jsonl"), "{\"text\": \"q\"}\n").unwrap();
        std::fs::create_dir(pools.join("inner")).unwrap();
        let (t, _) = read(&pools, Kind::RandomPool, 3, 0, 1 << 20).unwrap();
        assert_eq!(t.len(), 3);
        let Input::Messages(m) = &t.rows()[0].input else { panic!() };
        assert_eq!(m[0]["content"], serde_json::json!([{"type": "text", "text": "q"}, {"type": "text", "text": "r"}]));
        std::fs::write(pools.join("c.jsonl"), "\n").unwrap();
        assert_eq!(
            err(&pools, Kind::RandomPool),
            format!(
                "{}: no entry: accepted is a file of random_pool entries, at least one",
                pools.join("c.jsonl").display()
            )
        );
        assert_eq!(read(&pools.join("a.jsonl"), Kind::RandomPool, 5, 0, 1 << 20).unwrap().0.len(), 5);
    }
}
