//! AIPerf 0.13.0's `random_pool` datasets (its `RandomPool` model and loader): pools of prompts,
//! one per file (a file, or every file of a folder), sampled into single-turn conversations.
//!
//! An entry is `{"text": "…"}` or `{"texts": [...]}` (AIPerf's image, audio and video fields are
//! refused by name, and so are the timing, session and body fields of single_turn records, which
//! AIPerf ignores here). [`sample`] draws AIPerf's numbers for the run's seed: each pool, in
//! order, draws one entry per conversation with replacement (CPython's `random.choices` on the
//! generator AIPerf derives as `dataset.loader.random_pool`), and conversation `i` sends the
//! prompts of every pool's `i`-th draw together, in pool order: one prompt as the user message,
//! several as the text parts of one user message, as AIPerf's chat endpoint sends them.

use serde_json::{Value, json};

use super::model::{Input, Row, Trace};
use super::single_turn::{RecordError, err, show, texts};
use crate::rng::{PyRandom, derive_seed};

/// The keys of AIPerf's `RandomPool` model.
pub const KEYS: &[&str] = &["type", "text", "texts", "image", "images", "audio", "audios", "video", "videos"];

/// Keys of a single_turn record that a pool entry does not have.
const SINGLE_TURN_ONLY: &[&str] =
    &["timestamp", "delay", "session_id", "role", "output_length", "extra", "image_uuids"];

/// AIPerf's component name of the pool sampler's generator.
pub const COMPONENT: &str = "dataset.loader.random_pool";

/// The prompts of one entry of a pool.
pub fn entry(record: &Value) -> Result<Vec<String>, RecordError> {
    let Value::Object(m) = record else {
        return Err(err("", "an entry: an object with `text` or `texts`", show(record)));
    };
    let get = |k: &str| m.get(k).filter(|v| !v.is_null());
    if let Some(k) = m.keys().find(|k| SINGLE_TURN_ONLY.contains(&k.as_str())) {
        let expected = "no timing, session, role, output length or body fields in a random_pool entry (AIPerf \
                        ignores them here; a single_turn file has them)";
        return Err(err(k, expected, show(&m[k.as_str()])));
    }
    if let Some(k) = m.keys().find(|k| !KEYS.contains(&k.as_str())) {
        let expected = format!("a key of AIPerf's random_pool entry ({})", KEYS.join(", "));
        return Err(err(k, expected, show(&m[k.as_str()])));
    }
    if let Some(t) = get("type")
        && t.as_str() != Some("random_pool")
    {
        return Err(err("type", "random_pool", show(t)));
    }
    for k in ["image", "images", "audio", "audios", "video", "videos"] {
        if let Some(v) = get(k) {
            let expected = "no images, audio or video (AIPerf's multimodal inputs are not sent here): give `text`";
            return Err(err(k, expected, show(v)));
        }
    }
    texts(m)
}

/// One pool: its name (AIPerf's: the file's name) and its entries' prompts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pool {
    pub name: String,
    pub entries: Vec<Vec<String>>,
}

/// `conversations` single-turn conversations drawn from `pools` with the run's `seed`, as
/// AIPerf's loader draws them; a pool without entries is refused (the error's value names it).
pub fn sample(pools: &[Pool], conversations: usize, seed: u64) -> Result<Trace, RecordError> {
    if pools.is_empty() {
        return Err(err("", "at least one pool of prompts", "none"));
    }
    if let Some(p) = pools.iter().find(|p| p.entries.is_empty()) {
        return Err(err("", "at least one entry in every pool", format!("no entry in {}", p.name)));
    }
    let mut rng = PyRandom::new(derive_seed(seed, COMPONENT));
    // CPython's `choices(population, k=n)`: `population[floor(random() * len)]`, n times.
    let draws: Vec<Vec<usize>> = pools
        .iter()
        .map(|p| {
            let n = p.entries.len() as f64;
            (0..conversations).map(|_| ((rng.random() * n).floor() as usize).min(p.entries.len() - 1)).collect()
        })
        .collect();
    let mut trace = Trace::with_capacity(conversations, 0);
    for i in 0..conversations {
        let prompts: Vec<&str> =
            pools.iter().zip(&draws).flat_map(|(p, d)| p.entries[d[i]].iter().map(String::as_str)).collect();
        let input = match prompts[..] {
            [one] => Input::Text(one.into()),
            _ => {
                let parts: Vec<Value> = prompts.iter().map(|t| json!({"type": "text", "text": t})).collect();
                Input::Messages(vec![json!({"role": "user", "content": parts})].into_boxed_slice())
            }
        };
        trace.push(Row::new(input), []);
    }
    Ok(trace)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pool(name: &str, texts: &[&str]) -> Pool {
        Pool { name: name.into(), entries: texts.iter().map(|t| vec![t.to_string()]).collect() }
    }

    fn text(r: &Row) -> &str {
        match &r.input {
            Input::Text(t) => t,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_entry_is_its_prompts() {
        assert_eq!(entry(&json!({"text": "Who are you?"})).unwrap(), ["Who are you?"]);
        assert_eq!(
            entry(&json!({"texts": [{"name": "query", "contents": ["a", "b"]}], "type": "random_pool"})).unwrap(),
            ["a", "b"]
        );
        let e = |v: Value| entry(&v).unwrap_err().to_string();
        assert!(e(json!({"text": "a", "delay": 5})).starts_with("`delay`: no timing, session"));
        assert!(e(json!({"text": "a", "image": "x.png"})).starts_with("`image`: no images"));
        assert!(e(json!({"txt": "a"})).starts_with("`txt`: a key of AIPerf's random_pool entry"));
        assert!(e(json!({"text": "a", "type": "single_turn"})).starts_with("`type`: random_pool"));
        assert!(e(json!({})).starts_with("`text`: a prompt"));
        assert!(e(json!("a")).starts_with("an entry: an object"));
    }

    /// The prompts AIPerf 0.13.0's loader draws at seed 0 from one pool of five prompts `p0..p4`
    /// for ten conversations: CPython 3.11's `random.Random(seed of "0:dataset.loader.random_pool")
    /// .choices(pool, k=10)` (`tests/aiperf_dataset_files.rs` runs the loader itself).
    #[test]
    fn one_pool_draws_aiperfs_prompts() {
        let t = sample(&[pool("pool.jsonl", &["p0", "p1", "p2", "p3", "p4"])], 10, 0).unwrap();
        let drawn: Vec<&str> = t.rows().iter().map(text).collect();
        assert_eq!(drawn, AIPERF_SEED0);
        assert!(t.rows().iter().all(|r| r.session_id.is_none() && r.timestamp.is_none()));
        // The same seed draws the same prompts; another seed others.
        assert_eq!(sample(&[pool("x", &["p0", "p1", "p2", "p3", "p4"])], 10, 0).unwrap(), t);
        assert_ne!(sample(&[pool("x", &["p0", "p1", "p2", "p3", "p4"])], 10, 1).unwrap(), t);
    }

    const AIPERF_SEED0: [&str; 10] = ["p1", "p2", "p1", "p4", "p3", "p1", "p2", "p0", "p1", "p1"];

    #[test]
    fn pools_of_a_folder_send_one_prompt_each_in_pool_order() {
        let pools = [pool("a.jsonl", &["q0", "q1"]), pool("b.jsonl", &["r0", "r1", "r2"])];
        let t = sample(&pools, 4, 3).unwrap();
        assert_eq!(t.len(), 4);
        // The first pool draws all its conversations first, then the second: pool a's prompts
        // are those one pool alone draws.
        let alone = sample(&pools[..1], 4, 3).unwrap();
        for (row, first) in t.rows().iter().zip(alone.rows()) {
            let Input::Messages(m) = &row.input else { panic!("{:?}", row.input) };
            let parts = m[0]["content"].as_array().unwrap();
            assert_eq!(m[0]["role"], "user");
            assert_eq!(parts.len(), 2);
            assert_eq!(parts[0], json!({"type": "text", "text": text(first)}));
            assert!(parts[1]["text"].as_str().unwrap().starts_with('r'));
        }
    }

    #[test]
    fn an_empty_pool_is_named() {
        let e = sample(&[pool("a.jsonl", &["x"]), pool("empty.jsonl", &[])], 3, 0).unwrap_err();
        assert_eq!(e.to_string(), "at least one entry in every pool, got no entry in empty.jsonl");
        assert!(sample(&[], 3, 0).is_err());
        assert_eq!(sample(&[pool("a", &["x"])], 0, 0).unwrap().len(), 0);
    }
}
