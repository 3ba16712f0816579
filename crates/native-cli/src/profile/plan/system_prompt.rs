//! `--system-prompt TEXT` and `--system-prompt-file PATH` (AIPerf's): a verbatim system message
//! ahead of every turn of every conversation, merged into a row's own leading system message
//! (this text first, a blank line, then the row's).
//!
//! As in AIPerf 0.13: the two are mutually exclusive, and exclusive with
//! `--shared-system-prompt-length` and the prefix pool (`--prompt-prefix-pool-size`,
//! `--prompt-prefix-length`), which fill the same slot; empty or whitespace-only text is refused;
//! the file is read once, before the run; an endpoint without a system role (completions) is
//! refused, since the text would never reach the wire.

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result, bail, ensure};

use crate::profile::body::EndpointType;
use crate::profile::options::Args;

/// Largest `--system-prompt-file` read: 16 MiB.
pub const MAX_SYSTEM_PROMPT_BYTES: u64 = 16 << 20;

/// The system prompt text of `--system-prompt` or `--system-prompt-file` (read here), checked
/// against the options it excludes; `None` when neither is given.
pub fn resolve(a: &Args) -> Result<Option<Arc<str>>> {
    let text: Arc<str> = match (&a.system_prompt, &a.system_prompt_file) {
        (None, None) => return Ok(None),
        (Some(_), Some(_)) => {
            bail!("--system-prompt and --system-prompt-file are mutually exclusive: give one")
        }
        (Some(t), None) => {
            ensure!(
                !t.trim().is_empty(),
                "--system-prompt is empty or whitespace-only: omit it to run without a system prompt"
            );
            t.as_str().into()
        }
        (None, Some(p)) => read(p)?.into(),
    };
    let s = &a.synthetic;
    ensure!(
        s.shared_system_length.is_none(),
        "--system-prompt/--system-prompt-file and --shared-system-prompt-length are mutually exclusive: both fill the system message (the first with verbatim text, the second with synthetic filler of a token length)"
    );
    ensure!(
        s.prefix_pool_size.is_none() && s.prefix_length.is_none(),
        "--system-prompt/--system-prompt-file and --prompt-prefix-pool-size/--prompt-prefix-length are mutually exclusive, as AIPerf's --shared-system-prompt-length is with them"
    );
    ensure!(
        a.endpoint_type == EndpointType::Chat,
        "--system-prompt/--system-prompt-file is not supported by --endpoint-type completions (no system role): the text would never reach the wire; accepted is --endpoint-type chat"
    );
    Ok(Some(text))
}

/// Reads a `--system-prompt-file`: UTF-8 text, not empty, at most [`MAX_SYSTEM_PROMPT_BYTES`].
fn read(path: &Path) -> Result<String> {
    let shown = path.display();
    let file = std::fs::File::open(path).with_context(|| {
        format!("--system-prompt-file {shown}: cannot be read; accepted is a readable UTF-8 text file")
    })?;
    let mut bytes = Vec::new();
    file.take(MAX_SYSTEM_PROMPT_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("--system-prompt-file {shown}: cannot be read"))?;
    ensure!(
        bytes.len() as u64 <= MAX_SYSTEM_PROMPT_BYTES,
        "--system-prompt-file {shown}: more than {MAX_SYSTEM_PROMPT_BYTES} bytes; accepted is a text file up to 16 MiB"
    );
    let text = String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "--system-prompt-file {shown}: byte {} is not UTF-8; accepted is a UTF-8 text file",
            e.utf8_error().valid_up_to() + 1
        )
    })?;
    ensure!(
        !text.trim().is_empty(),
        "--system-prompt-file {shown}: empty or whitespace-only; omit it to run without a system prompt"
    );
    Ok(text)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::profile::options::parse;

    fn resolved(extra: &[&str]) -> Result<Option<Arc<str>>> {
        let argv: Vec<&str> = [&["x", "-m", "m", "--input-file", "t.jsonl"], extra].concat();
        resolve(&parse(argv).unwrap())
    }

    #[test]
    fn the_text_or_the_files_text_is_the_system_prompt() {
        assert_eq!(resolved(&[]).unwrap(), None);
        assert_eq!(resolved(&["--system-prompt", "Be terse."]).unwrap().as_deref(), Some("Be terse."));
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("system.txt");
        std::fs::write(&f, "You are\na helper.\n").unwrap();
        let got = resolved(&["--system-prompt-file", f.to_str().unwrap()]).unwrap();
        assert_eq!(got.as_deref(), Some("You are\na helper.\n"), "the file's text verbatim");
    }

    #[test]
    fn conflicts_empty_text_and_unreadable_files_are_refused_by_name() {
        let e = |x: &[&str]| resolved(x).unwrap_err().to_string();
        let dir = tempfile::tempdir().unwrap();
        let (f, missing) = (dir.path().join("s.txt"), dir.path().join("missing.txt"));
        std::fs::write(&f, "x").unwrap();
        let f = f.to_str().unwrap();
        assert!(e(&["--system-prompt", "a", "--system-prompt-file", f]).contains("mutually exclusive"));
        assert!(e(&["--system-prompt", " \n"]).contains("--system-prompt is empty"));
        let m = e(&["--system-prompt-file", missing.to_str().unwrap()]);
        assert!(m.contains("missing.txt: cannot be read"), "{m}");
        let blank = dir.path().join("blank.txt");
        std::fs::write(&blank, "  \n").unwrap();
        assert!(e(&["--system-prompt-file", blank.to_str().unwrap()]).contains("blank.txt: empty"));
        let bad = dir.path().join("bad.txt");
        std::fs::write(&bad, b"ab\xff").unwrap();
        assert!(e(&["--system-prompt-file", bad.to_str().unwrap()]).contains("byte 3 is not UTF-8"));
        assert!(e(&["--system-prompt", "a", "--shared-system-prompt-length", "10"]).contains("mutually exclusive"));
        assert!(e(&["--system-prompt", "a", "--prompt-prefix-pool-size", "2"]).contains("mutually exclusive"));
        assert!(e(&["--system-prompt", "a", "--endpoint-type", "completions"]).contains("no system role"));
    }
}
