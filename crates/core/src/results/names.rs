//! The names of a run's files written with `--profile-export-prefix BASE` (AIPerf's): every
//! export is `BASE` and one known suffix. One list, for the CLI that writes and reads such runs
//! and the browser app that opens them.

/// What follows the base name of each export of a prefixed run, each before the shorter ones it
/// ends with, so that `foo_raw.jsonl` and `foo.json` both name the base `foo` (AIPerf strips
/// these from a prefix).
pub const PREFIX_SUFFIXES: [&str; 14] = [
    "_server_metrics.parquet",
    "_server_metrics.jsonl",
    "_server_metrics.json",
    "_server_metrics.csv",
    "_network_latency.jsonl",
    "_gpu_telemetry.jsonl",
    "_timeslices.csv",
    "_timeslices.json",
    "_console.txt",
    "_raw.jsonl",
    ".parquet",
    ".csv",
    ".json",
    ".jsonl",
];

/// The records file's suffix (`BASE.jsonl`).
pub const RECORDS_SUFFIX: &str = ".jsonl";
/// The summary's suffix (`BASE.json`).
pub const SUMMARY_SUFFIX: &str = ".json";
/// The server metrics summary's suffix (`BASE_server_metrics.json`).
pub const SERVER_METRICS_SUFFIX: &str = "_server_metrics.json";

/// `name` as a prefixed run's base and suffix (the longest known suffix), when it ends with one
/// and something is left before it.
pub fn split(name: &str) -> Option<(&str, &'static str)> {
    PREFIX_SUFFIXES.iter().find_map(|s| name.strip_suffix(s).filter(|b| !b.is_empty()).map(|b| (b, *s)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_suffix_names_the_base() {
        assert_eq!(split("run1_raw.jsonl"), Some(("run1", "_raw.jsonl")));
        assert_eq!(split("run1.jsonl"), Some(("run1", ".jsonl")));
        assert_eq!(split("a_server_metrics.json"), Some(("a", SERVER_METRICS_SUFFIX)));
        assert_eq!(split("run1_timeslices.csv"), Some(("run1", "_timeslices.csv")));
        assert_eq!(split(".json"), None);
        assert_eq!(split("notes.txt"), None);
        for (i, a) in PREFIX_SUFFIXES.iter().enumerate() {
            for b in &PREFIX_SUFFIXES[..i] {
                assert!(!a.ends_with(b), "{b} comes before {a}, which ends with it");
            }
        }
    }
}
