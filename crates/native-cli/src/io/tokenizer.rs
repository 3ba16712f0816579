//! The one tokenizer loader of the CLI (`profile`, `hash-prompts`): a `tokenizer.json`, a folder
//! holding one, a Hugging Face model name (from the local cache, else fetched into it), or, for
//! `profile` without `--tokenizer`, the model's cached tokenizer or the embedded SmolLM2 one.

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

/// Loads the tokenizer named by `--tokenizer` (see [`load_named`]), else the model's tokenizer from
/// the local Hugging Face cache, else the embedded one.
pub fn load_tokenizer(arg: Option<&str>, model: &str) -> Result<(Tokenizer, TokenizerSource)> {
    if let Some(arg) = arg {
        return load_named(arg);
    }
    if let Some(file) = hf_cached(model) {
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
    } else if let Some(file) = hf_cached(arg) {
        let description = format!("{arg} ({})", file.display());
        (file, description)
    } else {
        let file = hf_download(arg).with_context(|| {
            format!("tokenizer '{arg}' is neither a file, a folder, nor in the Hugging Face cache, and fetching it failed (offline?); pass a path to a tokenizer.json")
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

/// `tokenizer.json` of a model in the Hugging Face cache (`models--org--name/snapshots/*/`).
fn hf_cached(name: &str) -> Option<PathBuf> {
    hf_cached_in(&hf_hub_dir()?, name)
}

/// [`hf_cached`] in the cache folder `hub`.
fn hf_cached_in(hub: &Path, name: &str) -> Option<PathBuf> {
    if name.is_empty() || name.contains("..") {
        return None;
    }
    let repo = hub.join(format!("models--{}", name.replace('/', "--")));
    let main = std::fs::read_to_string(repo.join("refs").join("main")).ok();
    if let Some(rev) = main {
        let f = repo.join("snapshots").join(rev.trim()).join("tokenizer.json");
        if f.is_file() {
            return Some(f);
        }
    }
    let mut snaps: Vec<PathBuf> = std::fs::read_dir(repo.join("snapshots")).ok()?.flatten().map(|e| e.path()).collect();
    snaps.sort();
    snaps.into_iter().map(|s| s.join("tokenizer.json")).find(|f| f.is_file())
}

/// Fetches `tokenizer.json` of a Hugging Face model into the cache layout.
fn hf_download(name: &str) -> Result<PathBuf> {
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c)) || name.contains("..") {
        bail!("'{name}' is not a Hugging Face model name");
    }
    let url = format!("https://huggingface.co/{name}/resolve/main/tokenizer.json");
    let bytes = crate::io::http::fetch_bytes(&url, std::time::Duration::from_secs(20))?;
    let dir =
        hf_hub_dir().context("no cache folder (HOME unset)")?.join(format!("models--{}", name.replace('/', "--")));
    let snap = dir.join("snapshots").join("main");
    std::fs::create_dir_all(&snap).with_context(|| format!("cannot create {}", snap.display()))?;
    std::fs::create_dir_all(dir.join("refs"))?;
    let file = snap.join("tokenizer.json");
    crate::io::output::write_output(&file, &bytes)?;
    crate::io::output::write_output(&dir.join("refs").join("main"), b"main")?;
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
        assert_eq!(hf_cached_in(dir.path(), "org/model"), Some(file));
        assert_eq!(hf_cached_in(dir.path(), "org/other"), None);
        assert_eq!(hf_cached_in(dir.path(), "../org/model"), None);
        let empty = tempfile::tempdir().unwrap();
        let err = load_named(empty.path().to_str().unwrap()).unwrap_err().to_string();
        assert!(err.contains("has no tokenizer.json"), "{err}");
    }
}
