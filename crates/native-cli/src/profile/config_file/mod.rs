//! `profile --config FILE.yaml` (`-f FILE`): AIPerf 0.13's config files (schema "2.0"). The file
//! is read (`${VAR}` and Jinja2 expanded by [`expand`]), checked against the typed model of
//! [`model`], and turned by [`spell`] into AIPerf option spellings that go through the same
//! pipeline as a command line: the option table of [`super::aiperf_options`] (a key whose option
//! is refused is refused with the option's reason, naming the file and the key), then clap.
//! Options on the command line override the file's.

/// Fails the enclosing function with a [`KeyError`]: the key path `key` (a `String`) and the
/// message, formatted.
macro_rules! bail_key {
    ($key:expr, $($msg:tt)+) => {
        return Err($crate::profile::config_file::key_error::KeyError::error($key, format!($($msg)+)))
    };
}

pub mod expand;
mod key_error;
pub mod model;
mod scalar;
pub mod spell;

use anyhow::{Context, Result, anyhow, bail};
use serde_yaml_ng::Value;

use super::aiperf_options::{self, AiperfOption, Verdict};
pub use key_error::KeyError;
use spell::Given;

/// Why a config file was not read: the message (naming the file) and the key path it stopped
/// at, when the refusal is of one key.
#[derive(Debug)]
pub struct ReadError {
    pub key: Option<String>,
    message: String,
}

impl ReadError {
    /// `file: error`, with the key path of the [`KeyError`] in `error`'s chain, if any.
    fn of(file: &str, e: &anyhow::Error, alternate: bool) -> ReadError {
        let message = if alternate { format!("{file}: {e:#}") } else { format!("{file}: {e}") };
        ReadError { key: e.downcast_ref::<KeyError>().map(|k| k.key.clone()), message }
    }

    fn whole(message: String) -> ReadError {
        ReadError { key: None, message }
    }
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ReadError {}

/// A config file read into option spellings.
#[derive(Debug)]
pub struct Loaded {
    /// The file as the user named it.
    pub file: String,
    /// The options it gives that the command line does not override.
    pub given: Vec<Given>,
    /// `profile`'s arguments: the file's options, then the command line's without `--config`.
    pub args: Vec<String>,
}

impl Loaded {
    /// A line naming the file's keys behind the options that `message` (an error) names, if any.
    pub fn note_for(&self, message: &str) -> Option<String> {
        let keys: Vec<String> = self
            .given
            .iter()
            .filter(|g| {
                let spelling = g.spelling();
                let ours = canonical(spelling);
                mentions(message, spelling) || mentions(message, &ours)
            })
            .map(|g| format!("`{}` = {} ({})", g.key, g.value, g.args.join(" ")))
            .collect();
        (!keys.is_empty()).then(|| format!("  from {}: {}", self.file, keys.join("; ")))
    }
}

/// Whether `message` names the option `flag` as a whole word.
fn mentions(message: &str, flag: &str) -> bool {
    message.match_indices(flag).any(|(at, _)| {
        let next = message[at + flag.len()..].chars().next();
        !next.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-')
    })
}

/// The config file named by `--config`/`-f` among `profile`'s arguments and the arguments
/// without it; `None` when none is named.
fn find_config(args: &[String]) -> Result<Option<(String, Vec<String>)>> {
    let mut found: Option<String> = None;
    let mut rest = Vec::with_capacity(args.len());
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a == "--" {
            rest.extend(args[i..].iter().cloned());
            break;
        }
        let value = if a == "--config" || a == "-f" {
            i += 1;
            Some(args.get(i).cloned().ok_or_else(|| anyhow!("{a} needs a value: the AIPerf config file (YAML)"))?)
        } else {
            // `--config=FILE`, or `-fFILE` (the value attached to the short form).
            a.strip_prefix("--config=").or_else(|| a.strip_prefix("-f").filter(|v| !v.is_empty())).map(str::to_string)
        };
        match value {
            Some(v) => {
                if let Some(first) = found.replace(v.clone()) {
                    bail!("--config is given twice ({first} and {v}): accepted is one config file");
                }
            }
            None => rest.push(a.clone()),
        }
        i += 1;
    }
    Ok(found.map(|f| (f, rest)))
}

/// Reads the config file named among `profile`'s arguments, if any, and returns the arguments
/// to parse: the file's options (those the command line does not give) before the command
/// line's. A key whose option is refused is an error here.
pub fn load(args: &[String]) -> Result<Option<Loaded>> {
    let Some((file, rest)) = find_config(args)? else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(&file).with_context(|| format!("cannot read the config file {file}"))?;
    let given = read(&file, &text, &|name| std::env::var(name).ok())?;
    merge(file, given, rest).map(Some)
}

/// The file's options that `rest` (the command line) does not override, checked against the
/// option table, before the command line's.
fn merge(file: String, given: Vec<Given>, rest: Vec<String>) -> Result<Loaded> {
    let flags = || rest.iter().take_while(|a| *a != "--").filter(|a| a.starts_with('-'));
    let on_command_line: Vec<String> = flags().map(|a| family(a)).collect();
    // `--no-server-metrics` also drops the file's `--server-metrics-formats`.
    let switched_off: Vec<String> = flags()
        .filter(|a| canonical(a.split('=').next().unwrap_or(a)).starts_with("--no-"))
        .map(|a| family(a) + "-")
        .collect();
    // `--input-file` on the command line replaces the file's whole dataset section.
    let own_dataset = on_command_line.iter().any(|f| f == "--input-file");
    let overridden = |g: &Given| {
        let f = family(g.spelling());
        on_command_line.contains(&f)
            || switched_off.iter().any(|off| f.starts_with(off.as_str()))
            || (own_dataset && (g.key.starts_with("benchmark.dataset.") || g.key.starts_with("benchmark.datasets[")))
    };
    let given: Vec<Given> = given.into_iter().filter(|g| !overridden(g)).collect();
    for g in &given {
        if let Some(AiperfOption { spelling, verdict: Verdict::Refused(r) }) = aiperf_options::lookup(g.spelling()) {
            bail!(
                "{file}: key `{}` = {} (AIPerf option {spelling}) is not supported by `aiperf-cli profile`: {}; instead: {}",
                g.key,
                g.value,
                r.why,
                r.instead
            );
        }
    }
    let mut out: Vec<String> = given.iter().flat_map(|g| g.args.iter().cloned()).collect();
    out.extend(rest);
    Ok(Loaded { file, given, args: out })
}

/// The file's options (every key, none overridden yet), or the first error, naming the file
/// (and, apart, the key path it refuses).
pub fn read(file: &str, text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Vec<Given>, ReadError> {
    let mut doc: Value =
        serde_yaml_ng::from_str(text).map_err(|e| ReadError::whole(format!("{file}: not a YAML config file: {e}")))?;
    if !matches!(doc, Value::Mapping(_)) {
        return Err(ReadError::whole(format!(
            "{file}: an AIPerf config file is a YAML mapping (schemaVersion, benchmark, …), not {}",
            spell::show(&doc)
        )));
    }
    expand::substitute_env(&mut doc, "", env).map_err(|e| ReadError::of(file, &e, false))?;
    expand::render_templates(&mut doc).map_err(|e| ReadError::of(file, &e, true))?;
    let model: model::ConfigFile =
        serde_path_to_error::deserialize(doc.clone()).map_err(|e| model_error(file, &doc, &e))?;
    spell::options(&model).map_err(|e| ReadError::of(file, &e, false))
}

/// A key the model does not accept, or a value of the wrong shape: the file, the key path, the
/// value and what is accepted (with the nearest accepted key for a misspelt one).
fn model_error(file: &str, doc: &Value, e: &serde_path_to_error::Error<serde_yaml_ng::Error>) -> ReadError {
    let path = e.path().to_string();
    let inner = e.inner().to_string();
    // serde's "unknown field `x`, expected one of `a`, `b`" (or "expected `a`").
    if let Some(rest) = inner.strip_prefix("unknown field `")
        && let Some((key, accepted)) = rest.split_once("`, ")
    {
        // The camelCase names; each also has its snake_case alias.
        let accepted: Vec<&str> = accepted.split('`').skip(1).step_by(2).filter(|a| !a.contains('_')).collect();
        let parent = path.strip_suffix(key).map(|p| p.trim_end_matches('.')).unwrap_or(&path);
        let full = if parent.is_empty() || parent == "." { key.to_string() } else { format!("{parent}.{key}") };
        let value = lookup(doc, &full).map(spell::show).unwrap_or_default();
        let hint = accepted
            .iter()
            .map(|a| (strsim::levenshtein(&a.to_lowercase(), &key.to_lowercase().replace('_', "")), a))
            .filter(|(d, a)| *d <= 3.max(a.len() / 3))
            .min()
            .map(|(_, a)| format!(" (did you mean `{a}`?)"))
            .unwrap_or_default();
        let message = format!(
            "{file}: key `{full}` = {value} is not a key of AIPerf 0.13's config file{hint}; accepted keys here (camelCase or snake_case): {}",
            accepted.join(", ")
        );
        return ReadError { key: Some(full), message };
    }
    let value = lookup(doc, &path).map(spell::show).unwrap_or_default();
    let message = format!("{file}: key `{path}` = {value}: {inner}");
    ReadError { key: Some(path), message }
}

/// The value at a key path (`a.b[2].c`) of the file.
fn lookup<'a>(doc: &'a Value, path: &str) -> Option<&'a Value> {
    let mut v = doc;
    for part in path.split('.') {
        let (name, indices) = match part.find('[') {
            Some(at) => (&part[..at], &part[at..]),
            None => (part, ""),
        };
        if !name.is_empty() {
            v = v.get(name)?;
        }
        for index in indices.split('[').filter(|s| !s.is_empty()) {
            v = v.get(index.trim_end_matches(']').parse::<usize>().ok()?)?;
        }
    }
    Some(v)
}

/// An option's family: our flag (the table's, for an AIPerf spelling), without `=value` and
/// without a `no-` prefix, so that `--no-server-metrics` on the command line overrides the file's
/// `--server-metrics`.
fn family(arg: &str) -> String {
    let name = arg.split('=').next().unwrap_or(arg);
    // A length's distribution stands for its mean and spread: `--isl` replaces it, and the other
    // way round.
    if let Some(length) = name.strip_suffix("-distribution") {
        return family(length);
    }
    // One network latency option on the command line replaces the file's whole section, as
    // AIPerf's command line replaces the section it builds.
    if name.starts_with("--network-latency-") {
        return "--network-latency".to_owned();
    }
    let ours = canonical(name);
    ours.strip_prefix("--no-").map(|s| format!("--{s}")).unwrap_or(ours)
}

/// Our flag for a spelling (itself when the table does not list it).
fn canonical(name: &str) -> String {
    match aiperf_options::lookup(name) {
        Some(AiperfOption { verdict: Verdict::Honoured { ours, .. }, .. }) => ours.to_string(),
        _ => name.to_string(),
    }
}

#[cfg(test)]
mod tests;
