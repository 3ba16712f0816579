//! Finished runs on the page: which dropped files form which run.
//!
//! A run is a `*.jsonl` of request records (`profile_export.jsonl`), with its summary file
//! `<same name>_aiperf.json` (`profile_export_aiperf.json`) when dropped with it; a single
//! `.json` dropped with a single `.jsonl` belongs to it whatever their names. A run written with
//! `--profile-export-prefix B` is `B.jsonl` with `B.json` and `B_server_metrics.json`, its other
//! exports (`B.csv`, `B_raw.jsonl`, …: the core's one suffix list) left aside. The worker reads
//! them with `aiperf_core::view` (the code behind `aiperf-cli report`), so the numbers are the CLI's.

use aiperf_core::results::names::{self, RECORDS_SUFFIX, SERVER_METRICS_SUFFIX, SUMMARY_SUFFIX};
use aiperf_core::view::MAX_RUNS;
use aiperf_core::view::curve::is_curve_file;
use aiperf_core::view::server::SERVER_METRICS_FILE;

/// Whether a file name is one of a run's (`*_aiperf.json`, `profile_export*`), its server
/// metrics or a sweep's or search's summary — not a trace to analyse.
pub fn is_run_file(name: &str) -> bool {
    name.ends_with("_aiperf.json")
        || name.starts_with("profile_export")
        || name.ends_with(SERVER_METRICS_FILE)
        || name.ends_with(SERVER_METRICS_SUFFIX)
        || is_curve_file(name)
}

/// Whether the first bytes of a file are those of a `profile_export.jsonl` line.
pub fn looks_like_records(head: &str) -> bool {
    head.trim_start().starts_with("{\"metadata\"")
}

/// The files of one run among the dropped ones (indices into the names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunPick {
    pub records: usize,
    /// `profile_export_aiperf.json`.
    pub config: Option<usize>,
    /// `server_metrics_export.json`.
    pub server: Option<usize>,
}

/// What the dropped files are: runs, and sweep or capacity-search summaries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Picked {
    pub runs: Vec<RunPick>,
    pub curves: Vec<usize>,
}

/// The file among `candidates` that belongs to the run whose records are `records_name`: the one
/// named `<records stem><suffix>` for one of `suffixes`, or the only one when a single run was
/// dropped.
fn belongs(
    names: &[String],
    candidates: &[usize],
    records_name: &str,
    suffixes: &[&str],
    single: bool,
) -> Option<usize> {
    let stem = records_name.trim_end_matches(".jsonl");
    candidates.iter().copied().find(|&c| suffixes.iter().any(|s| names[c].strip_prefix(stem) == Some(*s))).or(
        match candidates {
            [only] if single => Some(*only),
            _ => None,
        },
    )
}

/// Whether file `i` is an export of a prefixed run that the run view does not read (`B.csv`,
/// `B_raw.jsonl`, `B_timeslices.json`, …) dropped with the run's records `B.jsonl`.
fn other_export(names: &[String], i: usize) -> bool {
    names::split(&names[i]).is_some_and(|(base, suffix)| {
        ![RECORDS_SUFFIX, SUMMARY_SUFFIX, SERVER_METRICS_SUFFIX].contains(&suffix)
            && names.iter().any(|n| n.strip_prefix(base) == Some(RECORDS_SUFFIX))
    })
}

/// Sorts the dropped files into runs (records with their summary and server metrics) and
/// campaign summaries, from their names.
pub fn pick_files(names: &[String]) -> Result<Picked, String> {
    let is_server = |n: &str| n.ends_with(SERVER_METRICS_FILE) || n.ends_with(SERVER_METRICS_SUFFIX);
    let others: Vec<usize> = (0..names.len()).filter(|&i| other_export(names, i)).collect();
    let read = || (0..names.len()).filter(|i| !others.contains(i));
    let curves: Vec<usize> = read().filter(|&i| is_curve_file(&names[i])).collect();
    let servers: Vec<usize> = read().filter(|&i| is_server(&names[i])).collect();
    let records: Vec<usize> = read().filter(|&i| names[i].ends_with(".jsonl")).collect();
    let configs: Vec<usize> =
        read().filter(|&i| names[i].ends_with(".json") && !curves.contains(&i) && !servers.contains(&i)).collect();
    let known = |i: &usize| {
        records.contains(i) || configs.contains(i) || curves.contains(i) || servers.contains(i) || others.contains(i)
    };
    if let Some(other) = (0..names.len()).find(|i| !known(i)) {
        return Err(format!(
            "{}: a run is a profile_export.jsonl, with its profile_export_aiperf.json and {SERVER_METRICS_FILE}; a sweep or search is its summary .json",
            names[other]
        ));
    }
    if records.is_empty() && curves.is_empty() {
        return Err("no profile_export.jsonl among the dropped files".into());
    }
    if records.len() > MAX_RUNS {
        return Err(format!("{} runs dropped: at most {MAX_RUNS} are shown at once", records.len()));
    }
    let single = records.len() == 1;
    let mut used = Vec::new();
    let runs: Vec<RunPick> = records
        .iter()
        .map(|&r| {
            let config = belongs(names, &configs, &names[r], &["_aiperf.json", SUMMARY_SUFFIX], single);
            let server_file = format!("_{SERVER_METRICS_FILE}");
            let server = belongs(names, &servers, &names[r], &[&server_file, SERVER_METRICS_SUFFIX], single);
            used.extend(config.into_iter().chain(server));
            RunPick { records: r, config, server }
        })
        .collect();
    if let Some(&k) = configs.iter().chain(&servers).find(|k| !used.contains(k)) {
        let stem = if servers.contains(&k) { format!("_{SERVER_METRICS_FILE}") } else { "_aiperf.json".into() };
        return Err(format!(
            "{}: which run is it for? Name it after its records file (run-a.jsonl → run-a{stem})",
            names[k]
        ));
    }
    Ok(Picked { runs, curves })
}

/// Labels from file names, made unique (`name`, `name #2`, …).
pub fn labels(names: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in names {
        let base = n.trim_end_matches(".jsonl").to_string();
        let mut label = base.clone();
        let mut k = 2;
        while out.contains(&label) {
            label = format!("{base} #{k}");
            k += 1;
        }
        out.push(label);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn pairs(v: &[&str]) -> Result<Vec<(usize, Option<usize>)>, String> {
        pick_files(&names(v)).map(|p| p.runs.iter().map(|r| (r.records, r.config)).collect())
    }

    #[test]
    fn files_pair_by_name() {
        assert_eq!(pairs(&["profile_export.jsonl"]), Ok(vec![(0, None)]));
        assert_eq!(pairs(&["x.json", "a.jsonl"]), Ok(vec![(1, Some(0))]));
        assert_eq!(
            pairs(&["a.jsonl", "b_aiperf.json", "b.jsonl", "a_aiperf.json"]),
            Ok(vec![(0, Some(3)), (2, Some(1))])
        );
        assert_eq!(pairs(&["a.jsonl", "b.jsonl"]), Ok(vec![(0, None), (1, None)]));
        assert!(pairs(&["a.jsonl", "b.jsonl", "c.json"]).unwrap_err().starts_with("c.json: which run"));
        assert!(pairs(&["a.json"]).is_err());
        assert!(pairs(&["a.csv", "b.jsonl"]).unwrap_err().starts_with("a.csv:"));
        let nine: Vec<String> = (0..9).map(|i| format!("{i}.jsonl")).collect();
        assert!(pick_files(&nine).unwrap_err().contains("at most 8"));
    }

    #[test]
    fn server_metrics_and_campaign_summaries_are_told_apart() {
        let p = pick_files(&names(&[
            "server_metrics_export.json",
            "profile_export.jsonl",
            "profile_export_aiperf.json",
            "profile_export_aiperf_sweep.json",
        ]))
        .unwrap();
        assert_eq!(p.runs, vec![RunPick { records: 1, config: Some(2), server: Some(0) }]);
        assert_eq!(p.curves, vec![3]);
        // A summary alone is a view of its own.
        let p = pick_files(&names(&["profile_export_aiperf_search.json"])).unwrap();
        assert_eq!((p.runs.len(), p.curves.len()), (0, 1));
        // Several runs: server metrics named after their run.
        let p = pick_files(&names(&["a.jsonl", "b.jsonl", "b_server_metrics_export.json"])).unwrap();
        assert_eq!(p.runs[1].server, Some(2));
        assert_eq!(p.runs[0].server, None);
        let e = pick_files(&names(&["a.jsonl", "b.jsonl", "server_metrics_export.json"])).unwrap_err();
        assert!(e.contains("which run is it for") && e.contains("run-a_server_metrics_export.json"), "{e}");
    }

    /// A run written with `--profile-export-prefix`, dropped whole: its records, summary and
    /// server metrics by their names, the other exports left aside; two such runs side by side.
    #[test]
    fn a_prefixed_runs_files_are_told_by_the_one_suffix_list() {
        let folder = [
            "run1.csv",
            "run1.json",
            "run1.jsonl",
            "run1_console.txt",
            "run1_raw.jsonl",
            "run1_server_metrics.csv",
            "run1_server_metrics.json",
            "run1_timeslices.csv",
            "run1_timeslices.json",
            "run1_gpu_telemetry.jsonl",
        ];
        let p = pick_files(&names(&folder)).unwrap();
        assert_eq!(p.runs, vec![RunPick { records: 2, config: Some(1), server: Some(6) }]);
        assert!(p.curves.is_empty());
        let p = pick_files(&names(&["a.jsonl", "b.json", "b.jsonl", "a.json", "b_server_metrics.json"])).unwrap();
        assert_eq!(
            p.runs,
            vec![
                RunPick { records: 0, config: Some(3), server: None },
                RunPick { records: 2, config: Some(1), server: Some(4) }
            ]
        );
        // Without its records, another export is no file the run view reads.
        assert!(pick_files(&names(&["run1.csv", "b.jsonl"])).unwrap_err().starts_with("run1.csv:"));
        assert!(is_run_file("run1_server_metrics.json"));
    }

    #[test]
    fn the_page_links_the_run_view_rules() {
        let page = include_str!("../../../index.html");
        assert!(page.contains(r#"<link data-trunk rel="css" href="crates/core/src/view/runs.css">"#));
        assert!(aiperf_core::view::html::CSS.contains(".runs .charts"));
    }

    #[test]
    fn labels_are_unique() {
        assert_eq!(labels(&["run-a.jsonl", "p.jsonl", "p.jsonl"]), vec!["run-a", "p", "p #2"]);
        assert!(looks_like_records("  {\"metadata\": {}}"));
        for run_file in ["a_aiperf.json", "server_metrics_export.json", "x_profile_export_aiperf_sweep.json"] {
            assert!(is_run_file(run_file), "{run_file}");
        }
        assert!(!is_run_file("conversation-01.json"), "a WEKA trace");
        assert!(!looks_like_records("{\"timestamp\": 0}"));
    }
}
