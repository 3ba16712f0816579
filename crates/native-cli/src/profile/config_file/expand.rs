//! AIPerf's value expansion of a config file, before its keys are read: `${VAR}` and
//! `${VAR:default}` from the environment, then Jinja2 `{{ … }}` / `{% … %}` over the file's own
//! values and its `variables` block. A value that is one whole `${…}` or template becomes a
//! boolean or a number when it reads as one, as AIPerf does.

use std::collections::BTreeMap;

use anyhow::Result;
use minijinja::{Environment, UndefinedBehavior};
use serde_yaml_ng::{Mapping, Value};

/// Substitutes `${VAR}` / `${VAR:default}` in every string of `v` (keys stay as written);
/// `env` looks a variable up. An unset variable without a default is an error naming it.
pub fn substitute_env(v: &mut Value, path: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<()> {
    match v {
        Value::String(s) => {
            if s.contains("${")
                && let Some(new) = substitute_string(s, path, env)?
            {
                *v = new;
            }
        }
        Value::Sequence(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                substitute_env(item, &format!("{path}[{i}]"), env)?;
            }
        }
        Value::Mapping(m) => {
            for (k, item) in m.iter_mut() {
                substitute_env(item, &join(path, k), env)?;
            }
        }
        Value::Tagged(t) => substitute_env(&mut t.value, path, env)?,
        _ => {}
    }
    Ok(())
}

/// `s` with its references replaced, or `None` when it has none.
fn substitute_string(s: &str, path: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Option<Value>> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    let mut whole = false;
    let mut any = false;
    while let Some(at) = rest.find("${") {
        let after = &rest[at + 2..];
        let Some(reference) = reference(after) else {
            out.push_str(&rest[..at + 2]);
            rest = after;
            continue;
        };
        let (name, default, len) = reference;
        whole = at == 0 && out.is_empty() && len + 2 == rest.len();
        out.push_str(&rest[..at]);
        match (env(name), default) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(d)) => out.push_str(d),
            (None, None) => bail_key!(
                format!("{path}"),
                "key `{path}`: the environment variable {name} is not set and `${{{name}}}` gives no default (write `${{{name}:DEFAULT}}` or set it)"
            ),
        }
        any = true;
        rest = &after[len..];
    }
    out.push_str(rest);
    if let Some(at) = out.find("${")
        && !out[at..].contains('}')
    {
        bail_key!(format!("{path}"), "key `{path}`: `{out}` opens `${{` without closing it with `}}`");
    }
    if !any {
        return Ok(None);
    }
    Ok(Some(if whole { coerce(&out) } else { Value::String(out) }))
}

/// A `NAME}` or `NAME:default}` reference after `${`: the name, the default and the length read
/// (through the closing brace).
fn reference(after: &str) -> Option<(&str, Option<&str>, usize)> {
    let end = after.find('}')?;
    let inner = &after[..end];
    let (name, default) = match inner.split_once(':') {
        Some((n, d)) => (n, Some(d)),
        None => (inner, None),
    };
    let mut chars = name.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    (first_ok && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')).then_some((name, default, end + 1))
}

/// A rendered value read as AIPerf does: `true`/`false` (any case), an integer, a float, or the text.
fn coerce(s: &str) -> Value {
    if s.eq_ignore_ascii_case("true") {
        return Value::Bool(true);
    }
    if s.eq_ignore_ascii_case("false") {
        return Value::Bool(false);
    }
    if let Ok(i) = s.parse::<i64>() {
        return Value::Number(i.into());
    }
    if let Ok(x) = s.parse::<f64>() {
        return Value::Number(x.into());
    }
    Value::String(s.to_string())
}

fn join(path: &str, key: &Value) -> String {
    let key = match key {
        Value::String(s) => s.clone(),
        other => serde_yaml_ng::to_string(other).unwrap_or_default().trim_end().to_string(),
    };
    if path.is_empty() { key } else { format!("{path}.{key}") }
}

/// Fields whose text is a request-time template, not a load-time one.
const REQUEST_TIME_FIELDS: [&str; 3] = ["template", "body", "payload_template"];
/// Subtrees rendered when a run starts (with run-time values), not when the file loads.
const RUN_TIME_SUBTREES: [&str; 2] = ["benchmark.artifacts.user_files", "benchmark.artifacts.userFiles"];

/// Renders every Jinja2 template of the file in place. The context is the file itself (its
/// top-level keys, and `benchmark`'s keys lifted to the top) and the `variables` block, whose
/// values may refer to each other in any order.
pub fn render_templates(doc: &mut Value) -> Result<()> {
    if !has_template(doc) {
        return Ok(());
    }
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    let mut context: BTreeMap<String, Value> = BTreeMap::new();
    if let Value::Mapping(m) = &*doc {
        if let Some(Value::Mapping(b)) = m.get("benchmark") {
            lift(b, &mut context);
        }
        lift(m, &mut context);
        if let Some(Value::Mapping(vars)) = m.get("variables") {
            let resolved = resolve_variables(&env, vars, &context)?;
            context.extend(resolved);
        }
    }
    let ctx = minijinja::Value::from_serialize(&context);
    render(&env, doc, "", &ctx)
}

fn has_template(v: &Value) -> bool {
    match v {
        Value::String(s) => s.contains("{{") || s.contains("{%"),
        Value::Sequence(items) => items.iter().any(has_template),
        Value::Mapping(m) => m.values().any(has_template),
        Value::Tagged(t) => has_template(&t.value),
        _ => false,
    }
}

fn lift(m: &Mapping, context: &mut BTreeMap<String, Value>) {
    for (k, v) in m {
        if let Value::String(k) = k {
            context.insert(k.clone(), v.clone());
        }
    }
}

/// The `variables` block rendered in dependency order; a cycle or an unknown name is an error.
fn resolve_variables(
    env: &Environment<'_>,
    vars: &Mapping,
    base: &BTreeMap<String, Value>,
) -> Result<BTreeMap<String, Value>> {
    let mut resolved: BTreeMap<String, Value> = BTreeMap::new();
    let mut pending: Vec<(String, Value)> =
        vars.iter().filter_map(|(k, v)| k.as_str().map(|k| (k.to_string(), v.clone()))).collect();
    while !pending.is_empty() {
        let mut context = base.clone();
        context.extend(resolved.iter().map(|(k, v)| (k.clone(), v.clone())));
        // A variable still waiting for another is not in the context yet.
        for (name, _) in &pending {
            context.remove(name);
        }
        let ctx = minijinja::Value::from_serialize(&context);
        let mut progress = false;
        let mut first_error = None;
        let mut still = Vec::new();
        for (name, mut value) in pending {
            match render(env, &mut value, &format!("variables.{name}"), &ctx) {
                Ok(()) => {
                    resolved.insert(name, value);
                    progress = true;
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                    still.push((name, value));
                }
            }
        }
        pending = still;
        if !progress && let Some(e) = first_error {
            let names: Vec<&str> = pending.iter().map(|(n, _)| n.as_str()).collect();
            return Err(e.context(format!("the variables {} cannot be resolved", names.join(", "))));
        }
    }
    Ok(resolved)
}

fn render(env: &Environment<'_>, v: &mut Value, path: &str, ctx: &minijinja::Value) -> Result<()> {
    if RUN_TIME_SUBTREES.iter().any(|p| path == *p || path.starts_with(&format!("{p}."))) {
        return Ok(());
    }
    match v {
        Value::String(s) => {
            let field = path.rsplit('.').next().unwrap_or(path);
            if REQUEST_TIME_FIELDS.contains(&field) {
                return Ok(());
            }
            if s.contains("{{") && !s.contains("}}") {
                bail_key!(
                    format!("{path}"),
                    "key `{path}`: `{s}` opens a Jinja2 `{{{{` without closing it with `}}}}`"
                );
            }
            if s.contains("{%") && !s.contains("%}") {
                bail_key!(format!("{path}"), "key `{path}`: `{s}` opens a Jinja2 `{{%` without closing it with `%}}`");
            }
            if !(s.contains("{{") || s.contains("{%")) {
                return Ok(());
            }
            let rendered = env.render_str(s, ctx).map_err(|e| {
                super::key_error::KeyError::error(
                    path,
                    format!("key `{path}`: the Jinja2 template `{s}` fails: {}", jinja_reason(&e)),
                )
            })?;
            *v = coerce(&rendered);
        }
        Value::Sequence(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                render(env, item, &format!("{path}[{i}]"), ctx)?;
            }
        }
        Value::Mapping(m) => {
            for (k, item) in m.iter_mut() {
                render(env, item, &join(path, k), ctx)?;
            }
        }
        Value::Tagged(t) => render(env, &mut t.value, path, ctx)?,
        _ => {}
    }
    Ok(())
}

/// minijinja's reason without its template-name decoration.
fn jinja_reason(e: &minijinja::Error) -> String {
    match e.detail() {
        Some(d) => format!("{}: {d}", e.kind()),
        None => e.kind().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
    }

    fn expanded(yaml: &str, vars: &'static [(&'static str, &'static str)]) -> Result<Value> {
        let mut v: Value = serde_yaml_ng::from_str(yaml)?;
        substitute_env(&mut v, "", &env_of(vars))?;
        render_templates(&mut v)?;
        Ok(v)
    }

    #[test]
    fn env_values_defaults_and_coercion() {
        let v = expanded(
            "a: ${RATE:30.0}\nb: ${NAME}\nc: http://${HOST:localhost}:8000\nd: ${FLAG:TRUE}\ne: ${EMPTY:}",
            &[("NAME", "m")],
        )
        .unwrap();
        assert_eq!(v["a"], Value::Number(30.0.into()));
        assert_eq!(v["b"], Value::String("m".into()));
        assert_eq!(v["c"], Value::String("http://localhost:8000".into()));
        assert_eq!(v["d"], Value::Bool(true));
        assert_eq!(v["e"], Value::String(String::new()));
        let v = expanded("n: ${N:3}", &[("N", "12")]).unwrap();
        assert_eq!(v["n"], Value::Number(12.into()));
    }

    #[test]
    fn a_missing_variable_without_default_is_named() {
        let e = expanded("benchmark:\n  model: ${MODEL_NAME}\n", &[]).unwrap_err().to_string();
        assert!(e.contains("key `benchmark.model`: the environment variable MODEL_NAME is not set"), "{e}");
        let e = expanded("a: ${OPEN\n", &[]).unwrap_err().to_string();
        assert!(e.contains("key `a`: `${OPEN` opens"), "{e}");
    }

    #[test]
    fn jinja_over_variables_in_any_order_and_file_values() {
        let v = expanded(
            "variables:\n  b: \"{{ a * 2 }}\"\n  a: 16\nbenchmark:\n  model: m\n  x: \"{{ b // 3 }}\"\n  y: \"{{ model }}-{{ a }}\"\n  z: \"{{ 0.5 * a }}\"\n",
            &[],
        )
        .unwrap();
        assert_eq!(v["benchmark"]["x"], Value::Number(10.into()));
        assert_eq!(v["benchmark"]["y"], Value::String("m-16".into()));
        assert_eq!(v["benchmark"]["z"], Value::Number(8.0.into()));
    }

    #[test]
    fn jinja_errors_name_the_key() {
        let e = expanded("benchmark:\n  phases:\n    - rate: \"{{ nope }}\"\n", &[]).unwrap_err().to_string();
        assert!(e.contains("benchmark.phases[0].rate") && e.contains("{{ nope }}"), "{e}");
        let e = expanded("variables:\n  a: \"{{ b }}\"\n  b: \"{{ a }}\"\n", &[]).unwrap_err();
        assert!(format!("{e:#}").contains("the variables a, b cannot be resolved"), "{e:#}");
        let e = expanded("a: \"{{ open\"\n", &[]).unwrap_err().to_string();
        assert!(e.contains("without closing"), "{e}");
    }

    #[test]
    fn request_time_templates_stay() {
        let v = expanded("benchmark:\n  endpoint:\n    template:\n      body: \"{{ text }}\"\n", &[]).unwrap();
        assert_eq!(v["benchmark"]["endpoint"]["template"]["body"], Value::String("{{ text }}".into()));
    }
}
