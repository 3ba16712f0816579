//! A run's options under AIPerf's `profile` option names, for `compare`: AIPerf's runs keep their
//! options only in `input_config` (its `BenchmarkConfig`), ours write the same shape there beside
//! `aiperf_cli_config`. Both are read back through the one table from AIPerf's configuration keys
//! to its options, the config file's (`profile::config_file`): `endpoint.streaming: true` is
//! `--streaming`, `phases[…].rate` is `--request-rate`. A key that table has no option for (or
//! refuses) keeps its key path as its name.

use serde_json::{Map, Value};

use crate::profile::config_file;

/// Most keys set aside before giving up on the rest (a config has far fewer).
const MAX_SET_ASIDE: usize = 256;

/// `input_config` (AIPerf's `BenchmarkConfig`) as `{option or key path: value}`.
pub fn option_names(input_config: &Value) -> Value {
    let mut doc = serde_json::json!({"schemaVersion": "2.0", "benchmark": input_config});
    let mut out = Map::new();
    for _ in 0..MAX_SET_ASIDE {
        match config_file::read("input_config", &doc.to_string(), &|_| None) {
            Ok(given) => {
                for g in given {
                    // An empty section (AIPerf's `otel: {}`) gives no option.
                    if g.value == "{}" {
                        continue;
                    }
                    let value =
                        if g.args.len() > 1 { g.args[1..].join(" ") } else { g.value.trim_matches('"').to_owned() };
                    let name = g.spelling().to_owned();
                    match out.get_mut(&name) {
                        Some(Value::String(s)) => {
                            s.push_str(", ");
                            s.push_str(&value);
                        }
                        _ => {
                            out.insert(name, Value::String(value));
                        }
                    }
                }
                return Value::Object(out);
            }
            Err(e) => {
                // The key the reader refused: kept under its path, the rest read again.
                let Some(path) = e.key else { break };
                let Some(v) = take(&mut doc, &path) else { break };
                out.insert(path.strip_prefix("benchmark.").unwrap_or(&path).to_owned(), v);
            }
        }
    }
    // What the table could not read is compared key by key.
    if let Some(Value::Object(rest)) = doc.get("benchmark") {
        flatten("", &Value::Object(rest.clone()), &mut out);
    }
    Value::Object(out)
}

/// `fooBar` as `foo_bar` (the config file's camelCase spelling of a `BenchmarkConfig` key).
fn snake(key: &str) -> String {
    let mut s = String::with_capacity(key.len() + 4);
    for c in key.chars() {
        if c.is_ascii_uppercase() {
            s.push('_');
            s.push(c.to_ascii_lowercase());
        } else {
            s.push(c);
        }
    }
    s
}

/// Removes the value at a key path (`benchmark.datasets[0].randomSeed`) and returns it.
fn take(doc: &mut Value, path: &str) -> Option<Value> {
    let mut parts: Vec<(String, Option<usize>)> = Vec::new();
    for seg in path.split('.') {
        match seg.split_once('[') {
            Some((k, i)) => parts.push((k.to_owned(), i.trim_end_matches(']').parse().ok())),
            None => parts.push((seg.to_owned(), None)),
        }
    }
    let (last, init) = parts.split_last()?;
    let mut at = doc;
    for (k, i) in init {
        let o = at.as_object_mut()?;
        let key = if o.contains_key(k) { k.clone() } else { snake(k) };
        at = o.get_mut(&key)?;
        if let Some(i) = i {
            at = at.get_mut(*i)?;
        }
    }
    let o = at.as_object_mut()?;
    let key = if o.contains_key(&last.0) { last.0.clone() } else { snake(&last.0) };
    match last.1 {
        Some(i) => {
            let list = o.get_mut(&key)?.as_array_mut()?;
            (i < list.len()).then(|| list.remove(i))
        }
        None => o.remove(&key),
    }
}

fn flatten(prefix: &str, v: &Value, out: &mut Map<String, Value>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                flatten(&p, x, out);
            }
        }
        other => {
            out.insert(prefix.to_owned(), other.clone());
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn aiperfs_config_reads_as_its_options() {
        let cfg = serde_json::json!({
            "models": {"items": [{"name": "mock"}]},
            "endpoint": {"urls": ["http://127.0.0.1:1"], "type": "chat", "streaming": true},
            "datasets": [{"name": "main", "type": "file", "path": "t.jsonl", "format": "mooncake_trace", "random_seed": 1}],
            "phases": [{"name": "profiling", "kind": "profiling", "type": "fixed_schedule", "requests": 30}],
        });
        let o = option_names(&cfg);
        assert_eq!(o["--streaming"], "true", "{o}");
        assert_eq!(o["--model"], "mock", "{o}");
        // A key without an option keeps its path.
        assert_eq!(o["datasets[0].randomSeed"], 1, "{o}");
        // So does a key the table refuses, and the keys after it are still read.
        let mut cfg = cfg;
        cfg["artifacts"] = serde_json::json!({"raw": 3});
        cfg["metrics"] = serde_json::json!({"x": 1});
        let o = option_names(&cfg);
        assert_eq!(o["artifacts.raw"], 3, "{o}");
        assert_eq!(o["metrics.x"], 1, "{o}");
        assert_eq!(o["--streaming"], "true", "{o}");
    }
}
