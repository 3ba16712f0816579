//! The one tokenizer loader of the CLI (`profile`, `hash-prompts`): a `tokenizer.json`, a folder
//! holding one, a Hugging Face model name (from the local cache, else fetched into it), or, for
//! `profile` without `--tokenizer`, the model's cached tokenizer or the embedded SmolLM2 one.
//!
//! A model name is read at a Hugging Face revision (`profile --tokenizer-revision`, AIPerf's,
//! default `main`): a branch or tag (`refs/REV` in the cache names its snapshot) or a commit
//! (`snapshots/REV`), fetched from `resolve/REV/` when not cached. A file or folder is read as it
//! is, whatever the revision, as `transformers` reads a local path.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use tokenizers::Tokenizer;

/// SmolLM2-135M's tokenizer, used when no other tokenizer is available.
pub static EMBEDDED_TOKENIZER: &[u8] =
    include_bytes!("../../../../tests/fixtures/tokenizers/smollm2-135m/tokenizer.json");

/// Where the tokenizer came from, for the run report.
#[derive(Clone, Debug)]
pub struct TokenizerSource {
    pub description: String,
    /// True when the embedded fallback is used: counts are approximate for other models.
    pub approximate: bool,
}

/// The revision a Hugging Face model is read at unless told otherwise.
pub const MAIN: &str = "main";

/// Loads the tokenizer named by `--tokenizer` (see [`load_named_at`]), else the model's tokenizer
/// at `revision` from the local Hugging Face cache, else the embedded one.
pub fn load_tokenizer(arg: Option<&str>, model: &str, revision: &str) -> Result<(Tokenizer, TokenizerSource)> {
    if let Some(arg) = arg {
        return load_named_at(arg, revision);
    }
    if let Some(file) = hf_cached(model, revision) {
        let description = format!("{model} ({})", file.display());
        return Ok((from_file(&file)?, TokenizerSource { description, approximate: false }));
    }
    let tok = Tokenizer::from_bytes(EMBEDDED_TOKENIZER).map_err(|e| anyhow::anyhow!("embedded tokenizer: {e}"))?;
    Ok((
        tok,
        TokenizerSource {
            description: "embedded SmolLM2-135M tokenizer".into(),
            approximate: model != "tiny-random" && !model.to_lowercase().contains("smollm2"),
        },
    ))
}

/// Loads a tokenizer the user named: a `tokenizer.json`, a folder holding one, or a Hugging Face
/// model name (from the local cache, else fetched into it).
pub fn load_named(arg: &str) -> Result<(Tokenizer, TokenizerSource)> {
    load_named_at(arg, MAIN)
}

/// [`load_named`] with a model name read at `revision`.
pub fn load_named_at(arg: &str, revision: &str) -> Result<(Tokenizer, TokenizerSource)> {
    let path = Path::new(arg);
    let (file, description) = if path.is_file() {
        (path.to_path_buf(), path.display().to_string())
    } else if path.is_dir() {
        let file = path.join("tokenizer.json");
        if !file.is_file() {
            bail!("{} has no tokenizer.json", path.display());
        }
        let description = file.display().to_string();
        (file, description)
    } else if let Some(file) = hf_cached(arg, revision) {
        let description = format!("{arg} ({})", file.display());
        (file, description)
    } else {
        let at = if revision == MAIN { String::new() } else { format!(" at revision '{revision}'") };
        let file = hf_download(arg, revision).with_context(|| {
            format!("tokenizer '{arg}'{at} is neither a file, a folder, nor in the Hugging Face cache, and fetching it failed (offline?); pass a path to a tokenizer.json")
        })?;
        (file, format!("{arg} (downloaded)"))
    };
    Ok((from_file(&file)?, TokenizerSource { description, approximate: false }))
}

fn from_file(p: &Path) -> Result<Tokenizer> {
    Tokenizer::from_file(p)
        .map_err(|e| anyhow::anyhow!("{e}"))
        .with_context(|| format!("cannot load tokenizer {}", p.display()))
}

fn hf_hub_dir() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("HF_HUB_CACHE") {
        return Some(PathBuf::from(p));
    }
    if let Some(p) = std::env::var_os("HF_HOME") {
        return Some(PathBuf::from(p).join("hub"));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("huggingface").join("hub"))
}

/// `tokenizer.json` of a model at `revision` in the Hugging Face cache
/// (`models--org--name/snapshots/*/`).
fn hf_cached(name: &str, revision: &str) -> Option<PathBuf> {
    hf_cached_in(&hf_hub_dir()?, name, revision)
}

/// [`hf_cached`] in the cache folder `hub`: the snapshot `refs/REV` names, else `snapshots/REV`;
/// at `main`, any snapshot when neither holds one.
fn hf_cached_in(hub: &Path, name: &str, revision: &str) -> Option<PathBuf> {
    if name.is_empty() || name.contains("..") || !revision_ok(revision) {
        return None;
    }
    let repo = hub.join(format!("models--{}", name.replace('/', "--")));
    let named = std::fs::read_to_string(repo.join("refs").join(revision)).ok();
    for snap in named.iter().map(|r| r.trim()).chain([revision]) {
        let f = repo.join("snapshots").join(snap).join("tokenizer.json");
        if revision_ok(snap) && !snap.contains('/') && f.is_file() {
            return Some(f);
        }
    }
    if revision != MAIN {
        return None;
    }
    let mut snaps: Vec<PathBuf> = std::fs::read_dir(repo.join("snapshots")).ok()?.flatten().map(|e| e.path()).collect();
    snaps.sort();
    snaps.into_iter().map(|s| s.join("tokenizer.json")).find(|f| f.is_file())
}

/// A revision that is a branch, tag or commit name (`refs/pr/1` included), never a path out of
/// the cache.
fn revision_ok(revision: &str) -> bool {
    !revision.is_empty()
        && !revision.starts_with('/')
        && !revision.contains("..")
        && revision.chars().all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
}

/// Fetches `tokenizer.json` of a Hugging Face model at `revision` into the cache layout.
fn hf_download(name: &str, revision: &str) -> Result<PathBuf> {
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c)) || name.contains("..") {
        bail!("'{name}' is not a Hugging Face model name");
    }
    if !revision_ok(revision) {
        bail!("--tokenizer-revision '{revision}': accepted is a branch, tag or commit name (letters, digits, - _ . /)");
    }
    let url = format!("https://huggingface.co/{name}/resolve/{}/tokenizer.json", revision.replace('/', "%2F"));
    let bytes = crate::io::http::fetch_bytes(&url, std::time::Duration::from_secs(20))?;
    let dir =
        hf_hub_dir().context("no cache folder (HOME unset)")?.join(format!("models--{}", name.replace('/', "--")));
    let snapshot = revision.replace('/', "--");
    let snap = dir.join("snapshots").join(&snapshot);
    std::fs::create_dir_all(&snap).with_context(|| format!("cannot create {}", snap.display()))?;
    let reference = dir.join("refs").join(revision);
    if let Some(parent) = reference.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let file = snap.join("tokenizer.json");
    crate::io::output::write_output(&file, &bytes)?;
    crate::io::output::write_output(&reference, snapshot.as_bytes())?;
    Ok(file)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A Hugging Face cache holding `org/model` with the embedded tokenizer.
    fn cache_with_model(root: &Path) -> PathBuf {
        let snap = root.join("models--org--model").join("snapshots").join("abc123");
        std::fs::create_dir_all(&snap).unwrap();
        std::fs::write(snap.join("tokenizer.json"), EMBEDDED_TOKENIZER).unwrap();
        std::fs::create_dir_all(root.join("models--org--model").join("refs")).unwrap();
        std::fs::write(root.join("models--org--model").join("refs").join("main"), "abc123\n").unwrap();
        snap.join("tokenizer.json")
    }

    #[test]
    fn files_folders_and_cached_model_names_load_the_same_tokenizer() {
        let dir = tempfile::tempdir().unwrap();
        let file = cache_with_model(dir.path());
        let folder = file.parent().unwrap();
        let encode = |t: &Tokenizer| t.encode_fast("hello prefix cache", false).unwrap().get_ids().to_vec();
        let want = encode(&Tokenizer::from_bytes(EMBEDDED_TOKENIZER).unwrap());
        for arg in [file.to_str().unwrap(), folder.to_str().unwrap()] {
            let (tok, source) = load_named(arg).unwrap();
            assert_eq!(encode(&tok), want);
            assert!(!source.approximate);
        }
        assert_eq!(hf_cached_in(dir.path(), "org/model", MAIN), Some(file));
        assert_eq!(hf_cached_in(dir.path(), "org/other", MAIN), None);
        assert_eq!(hf_cached_in(dir.path(), "../org/model", MAIN), None);
        let empty = tempfile::tempdir().unwrap();
        let err = load_named(empty.path().to_str().unwrap()).unwrap_err().to_string();
        assert!(err.contains("has no tokenizer.json"), "{err}");
    }

    #[test]
    fn a_revision_picks_its_snapshot_by_ref_or_commit() {
        let dir = tempfile::tempdir().unwrap();
        let main = cache_with_model(dir.path());
        let repo = dir.path().join("models--org--model");
        let v1 = repo.join("snapshots").join("def456").join("tokenizer.json");
        std::fs::create_dir_all(v1.parent().unwrap()).unwrap();
        std::fs::write(&v1, EMBEDDED_TOKENIZER).unwrap();
        std::fs::write(repo.join("refs").join("v1"), "def456").unwrap();
        let hub = dir.path();
        assert_eq!(hf_cached_in(hub, "org/model", "main"), Some(main.clone()));
        assert_eq!(hf_cached_in(hub, "org/model", "v1"), Some(v1.clone()), "a tag names its snapshot");
        assert_eq!(hf_cached_in(hub, "org/model", "def456"), Some(v1), "a commit is its snapshot");
        assert_eq!(hf_cached_in(hub, "org/model", "abc123"), Some(main));
        assert_eq!(hf_cached_in(hub, "org/model", "v2"), None, "another revision is not cached");
        for bad in ["", "../x", "/etc", "a b"] {
            assert_eq!(hf_cached_in(hub, "org/model", bad), None, "{bad:?}");
        }
        // A file or folder is read whatever the revision.
        let file = repo.join("snapshots").join("abc123").join("tokenizer.json");
        assert!(load_named_at(file.to_str().unwrap(), "v9").is_ok());
    }
}
