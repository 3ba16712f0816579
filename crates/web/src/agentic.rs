//! AIPerf's agentic-code sessions in the browser: the form (`aiperf-cli synthesize-agentic-code`'s
//! options), the generation with the core's [`aiperf_core::synthesis::agentic`] (the same calls
//! as the command, so the files are its bytes), and the prefix layers of the rows it writes. The
//! worker keeps the generated sessions, not their rows: `dataset.jsonl` is written from them when
//! it is downloaded, as the command writes it.

use std::collections::HashMap;

use aiperf_core::synthesis::agentic::{
    AgenticConfig, Sessions, comparison_text, dataset_id_starts, first_turn_ids, generate, manifest_json, quality,
    quality_json, session_minutes, write_dataset_rows,
};
use serde::{Deserialize, Serialize};

/// The name a manifest records for the built-in configuration (the command's `--config default`).
pub const BUNDLED: &str = "default";

/// What to generate: the command's options, and the uploaded configuration `(file name, text)`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgenticRequest {
    pub sessions: u32,
    pub seed: u64,
    pub max_isl: Option<u64>,
    pub max_osl: Option<u64>,
    pub config: Option<(String, String)>,
}

/// The form as typed.
#[derive(Clone, Debug, PartialEq)]
pub struct AgenticForm {
    pub sessions: String,
    pub seed: String,
    pub max_isl: String,
    pub max_osl: String,
    /// The uploaded configuration `(file name, text)`; `None`: AIPerf's defaults.
    pub config: Option<(String, String)>,
}

impl Default for AgenticForm {
    fn default() -> Self {
        AgenticForm {
            sessions: "100".into(),
            seed: "42".into(),
            max_isl: String::new(),
            max_osl: String::new(),
            config: None,
        }
    }
}

/// A field of the form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgenticField {
    Sessions,
    Seed,
    MaxIsl,
    MaxOsl,
}

impl AgenticField {
    pub const ALL: [AgenticField; 4] =
        [AgenticField::Sessions, AgenticField::Seed, AgenticField::MaxIsl, AgenticField::MaxOsl];

    /// The command's flag (without `--`), also the field's id on the page.
    pub fn flag(self) -> &'static str {
        match self {
            AgenticField::Sessions => "num-sessions",
            AgenticField::Seed => "seed",
            AgenticField::MaxIsl => "max-isl",
            AgenticField::MaxOsl => "max-osl",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            AgenticField::Sessions => "Sessions",
            AgenticField::Seed => "Seed",
            AgenticField::MaxIsl => "Max input length (tokens)",
            AgenticField::MaxOsl => "Max output length (tokens)",
        }
    }

    pub fn hint(self) -> &'static str {
        match self {
            AgenticField::Sessions => "a whole number ≥ 1",
            AgenticField::Seed => "the same seed gives the same files",
            AgenticField::MaxIsl => "replaces max_prompt_tokens; empty: the configuration's",
            AgenticField::MaxOsl => "the generation length's upper bound; empty: none",
        }
    }
}

impl AgenticForm {
    pub fn get(&self, f: AgenticField) -> &str {
        match f {
            AgenticField::Sessions => &self.sessions,
            AgenticField::Seed => &self.seed,
            AgenticField::MaxIsl => &self.max_isl,
            AgenticField::MaxOsl => &self.max_osl,
        }
    }

    pub fn set(&mut self, f: AgenticField, v: String) {
        match f {
            AgenticField::Sessions => self.sessions = v,
            AgenticField::Seed => self.seed = v,
            AgenticField::MaxIsl => self.max_isl = v,
            AgenticField::MaxOsl => self.max_osl = v,
        }
    }

    /// What is wrong with a field (`None`: valid).
    pub fn error(&self, f: AgenticField) -> Option<String> {
        let v = self.get(f);
        let t = v.trim();
        let (min, max, optional) = match f {
            AgenticField::Sessions => (1, u64::from(u32::MAX), false),
            AgenticField::Seed => (0, u64::MAX, false),
            AgenticField::MaxIsl | AgenticField::MaxOsl => (1, u64::MAX, true),
        };
        if optional && t.is_empty() {
            return None;
        }
        match t.parse::<u64>() {
            Ok(n) if n >= min && n <= max => None,
            _ if optional => Some(format!("'{v}' is not accepted: a whole number ≥ {min}, or empty")),
            _ => Some(format!("'{v}' is not accepted: a whole number from {min} to {max}")),
        }
    }

    /// The request, or `None` while a field is invalid.
    pub fn request(&self) -> Option<AgenticRequest> {
        if AgenticField::ALL.iter().any(|&f| self.error(f).is_some()) {
            return None;
        }
        let opt = |s: &str| if s.trim().is_empty() { None } else { s.trim().parse().ok() };
        Some(AgenticRequest {
            sessions: self.sessions.trim().parse().ok()?,
            seed: self.seed.trim().parse().ok()?,
            max_isl: opt(&self.max_isl),
            max_osl: opt(&self.max_osl),
            config: self.config.clone(),
        })
    }

    /// The `aiperf-cli synthesize-agentic-code` command writing the same files.
    pub fn command(&self) -> String {
        let q = crate::params::shell_quote;
        let mut cmd = format!("aiperf-cli synthesize-agentic-code --num-sessions {}", q(self.sessions.trim()));
        if self.seed.trim() != "42" {
            cmd += &format!(" --seed {}", q(self.seed.trim()));
        }
        for (flag, v) in [("max-isl", &self.max_isl), ("max-osl", &self.max_osl)] {
            if !v.trim().is_empty() {
                cmd += &format!(" --{flag} {}", q(v.trim()));
            }
        }
        if let Some((name, _)) = &self.config {
            cmd += &format!(" --config {}", q(name));
        }
        cmd + " --output-dir agentic"
    }
}

/// One prefix layer as the trace shows it: blocks by how many sessions use them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Layer {
    pub name: String,
    /// Distinct blocks of the layer.
    pub blocks: u64,
    /// Sessions whose first turn uses at least one of them.
    pub sessions: u64,
    /// Mean blocks of the layer per first turn that uses it.
    pub mean_blocks: f64,
}

/// What the page shows of a generated dataset.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgenticView {
    pub request: AgenticRequest,
    pub sessions: u64,
    pub rows: u64,
    pub block_size: u64,
    /// `comparison.txt`: the target distributions against the dataset's.
    pub comparison: String,
    pub layers: Vec<Layer>,
    pub compute_ms: f64,
}

/// A generated dataset, kept by the worker for the downloads: the sessions, from which the rows
/// are written on demand.
pub struct Generated {
    config: AgenticConfig,
    sessions: Sessions,
    pub manifest: String,
    pub quality: String,
    pub comparison: String,
}

impl Generated {
    /// A file of the command's output folder by name (`dataset.jsonl`, `manifest.json`,
    /// `quality.json`, `comparison.txt`).
    pub fn file(&self, name: &str) -> Option<String> {
        match name {
            "dataset.jsonl" => {
                let starts = dataset_id_starts(&self.config, &self.sessions);
                let mut out = String::new();
                write_dataset_rows(&self.config, &self.sessions, &starts, 0..self.sessions.sessions.len(), &mut out);
                Some(out)
            }
            "manifest.json" => Some(self.manifest.clone()),
            "quality.json" => Some(self.quality.clone()),
            "comparison.txt" => Some(self.comparison.clone()),
            _ => None,
        }
    }
}

/// The files the command writes, in its order.
pub const FILES: [&str; 4] = ["dataset.jsonl", "manifest.json", "quality.json", "comparison.txt"];

/// Generates as `aiperf-cli synthesize-agentic-code` does: the same configuration reading,
/// limits, generator and report functions.
pub fn generate_dataset(req: &AgenticRequest) -> Result<(AgenticView, Generated), String> {
    let (config, name) = match &req.config {
        None => (AgenticConfig::default(), BUNDLED.to_owned()),
        Some((file, text)) => {
            let c = AgenticConfig::from_json(text).map_err(|e| format!("{file}: {e}"))?;
            let stem = file.rsplit_once('.').map_or(file.as_str(), |(s, _)| s).to_owned();
            (c, stem)
        }
    };
    let config = config.with_limits(req.max_isl, req.max_osl).map_err(|e| format!("max ISL/OSL: {e}"))?;
    let sessions = generate(&config, req.sessions as usize, req.seed).map_err(|e| e.to_string())?;
    let manifest = manifest_json(&config, req.seed, sessions.sessions.len(), &name);
    let q = quality(&sessions, &config);
    let comparison = comparison_text(&q, &session_minutes(&sessions));
    let view = AgenticView {
        request: req.clone(),
        sessions: sessions.sessions.len() as u64,
        rows: sessions.turns.len() as u64,
        block_size: config.block_size,
        comparison: comparison.clone(),
        layers: layers(&config, &sessions),
        compute_ms: 0.0,
    };
    Ok((view, Generated { config, sessions, manifest, quality: quality_json(&q), comparison }))
}

/// The prefix layers of the rows `dataset.jsonl` holds: the blocks of first turns by how many
/// sessions share them (every session: the global system prompt; several: a group's prefix or a
/// restart's context; one: the session's own context), and the blocks later turns add. Only the
/// first turns' blocks are kept while counting.
pub fn layers(cfg: &AgenticConfig, sessions: &Sessions) -> Vec<Layer> {
    // Block → (sessions using it in a first turn, last session counted).
    let mut users: HashMap<u64, (u64, usize)> = HashMap::new();
    let mut later_blocks = 0u64;
    let mut later_rows = 0u64;
    let mut ids = Vec::new();
    let first_ids = |s: &aiperf_core::synthesis::agentic::Session, ids: &mut Vec<u64>| {
        ids.clear();
        if let Some(t) = sessions.turns_of(s).first() {
            first_turn_ids(cfg, s, t.new_tokens, ids);
        }
    };
    for (session, s) in sessions.sessions.iter().enumerate() {
        for t in sessions.turns_of(s).iter().skip(1) {
            later_blocks += t.new_tokens.div_ceil(cfg.block_size);
            later_rows += 1;
        }
        first_ids(s, &mut ids);
        for &h in &ids {
            let e = users.entry(h).or_insert((0, usize::MAX));
            if e.1 != session {
                *e = (e.0 + 1, session);
            }
        }
    }
    let n = sessions.sessions.len() as u64;
    let layer_of = |users: u64| {
        if users == n && n > 1 {
            0
        } else if users > 1 {
            1
        } else {
            2
        }
    };
    let mut distinct = [0u64; 3];
    for &(u, _) in users.values() {
        distinct[layer_of(u)] += 1;
    }
    let mut per_first = [(0u64, 0u64); 3];
    for s in &sessions.sessions {
        first_ids(s, &mut ids);
        let mut counts = [0u64; 3];
        for h in &ids {
            if let Some(&(u, _)) = users.get(h) {
                counts[layer_of(u)] += 1;
            }
        }
        for (k, c) in counts.into_iter().enumerate() {
            if c > 0 {
                per_first[k].0 += 1;
                per_first[k].1 += c;
            }
        }
    }
    let names = ["system prompt", "group prefix", "session context", "later turns"];
    let mut out: Vec<Layer> = (0..3)
        .map(|k| Layer {
            name: names[k].to_owned(),
            blocks: distinct[k],
            sessions: per_first[k].0,
            mean_blocks: if per_first[k].0 == 0 { 0.0 } else { per_first[k].1 as f64 / per_first[k].0 as f64 },
        })
        .collect();
    out.push(Layer {
        name: names[3].to_owned(),
        blocks: later_blocks,
        sessions: n,
        mean_blocks: if later_rows == 0 { 0.0 } else { later_blocks as f64 / later_rows as f64 },
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use aiperf_core::synthesis::agentic::to_trace;

    /// `layers` counts the blocks of the rows `dataset.jsonl` holds: each session's first row
    /// carries the ids `first_turn_ids` gives, a later row as many new blocks as its tokens fill,
    /// and every session has an id of its own (sessions and the file's sessions are one).
    #[test]
    fn the_layers_count_the_blocks_of_the_rows_written() {
        let mut grouped = AgenticConfig::default();
        grouped.cache.layer1_5_groups.num_groups = 7;
        grouped.restart_initial_probability = 0.5;
        let mut restarts = 0;
        for (cfg, seeds) in [(AgenticConfig::default(), 1..5u64), (grouped, 5..8)] {
            for seed in seeds {
                let sessions = generate(&cfg, 300, seed).unwrap();
                let trace = to_trace(&cfg, &sessions);
                let mut rows = trace.rows().iter();
                let mut ids = Vec::new();
                let mut names = std::collections::HashSet::new();
                let mut later = 0;
                for s in &sessions.sessions {
                    assert!(names.insert(s.id.as_str()), "seed {seed}: {} twice", s.id);
                    for (i, t) in sessions.turns_of(s).iter().enumerate() {
                        let row = rows.next().unwrap();
                        assert_eq!(row.session_id.as_deref(), Some(s.id.as_str()));
                        if i == 0 {
                            ids.clear();
                            first_turn_ids(&cfg, s, t.new_tokens, &mut ids);
                            assert_eq!(trace.hash_ids(row), &ids[..], "seed {seed}: {}", s.id);
                        } else {
                            let n = trace.hash_ids(row).len() as u64;
                            assert_eq!(n, t.new_tokens.div_ceil(cfg.block_size));
                            later += n;
                        }
                    }
                }
                assert!(rows.next().is_none());
                assert_eq!(layers(&cfg, &sessions)[3].blocks, later, "seed {seed}");
                restarts += sessions.sessions.iter().filter(|s| s.continuation).count();
            }
        }
        assert!(restarts > 0, "no restart to check");
    }

    #[test]
    fn the_files_are_the_commands_and_the_layers_come_from_the_trace() {
        let form = AgenticForm { sessions: "20".into(), ..AgenticForm::default() };
        let req = form.request().unwrap();
        let (view, files) = generate_dataset(&req).unwrap();
        let cfg = AgenticConfig::default();
        let sessions = generate(&cfg, 20, 42).unwrap();
        let trace = to_trace(&cfg, &sessions);
        assert_eq!(files.file("dataset.jsonl").unwrap(), aiperf_core::trace::write_trace(&trace));
        assert_eq!(files.file("manifest.json").unwrap(), manifest_json(&cfg, 42, 20, "default"));
        assert_eq!(view.rows, trace.len() as u64);
        assert!(view.comparison.contains("Metric") || !view.comparison.is_empty());
        // Every session shares the global system prompt: its blocks are in the first layer.
        let global = &view.layers[0];
        assert_eq!(global.blocks, cfg.cache.layer1_tokens.div_ceil(cfg.block_size));
        assert_eq!(global.sessions, view.sessions);
        assert!(view.layers[2].blocks > 0 && view.layers[3].blocks > 0);
        assert_eq!(form.command(), "aiperf-cli synthesize-agentic-code --num-sessions 20 --output-dir agentic");
    }

    #[test]
    fn a_bad_configuration_is_named_with_its_file() {
        let form = AgenticForm { config: Some(("mine.json".into(), "{\"nope\": 1}".into())), ..AgenticForm::default() };
        let Err(err) = generate_dataset(&form.request().unwrap()) else { panic!("the configuration was accepted") };
        assert!(err.starts_with("mine.json: "), "{err}");
        let bad = AgenticForm { sessions: "0".into(), ..AgenticForm::default() };
        assert_eq!(
            bad.error(AgenticField::Sessions).unwrap(),
            "'0' is not accepted: a whole number from 1 to 4294967295"
        );
        assert!(bad.request().is_none());
    }
}
