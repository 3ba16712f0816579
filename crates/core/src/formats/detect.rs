//! Telling a trace's format from its first bytes (a few KiB are plenty).
//!
//! JSON documents are told apart by their keys (WEKA's `hash_id_scope`/`block_size` + `requests`;
//! Bailian's `chat_id`/`parent_chat_id`; ServeGen's `request_id` without a `timestamp`; Mooncake's
//! input fields), CSV by the header's column names. The first line may be cut short (a prefix of a
//! long line): then key names are searched in the text rather than parsed.

use serde_json::{Map, Value};

use super::error::FormatError;
use super::format::Format;

/// The detected format and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Detection {
    pub format: Format,
    /// What in the content decided it, e.g. "JSONL keys chat_id, parent_chat_id".
    pub evidence: String,
}

const ACCEPTED: &str = "Mooncake JSONL, Bailian/Qwen JSONL, ServeGen offline JSONL, Azure LLM CSV, BurstGPT CSV, \
                        WEKA kv-cache-tester JSON, Baseten Parquet";

/// Detects the format of a trace from its first bytes.
pub fn detect(first_bytes: &[u8]) -> Result<Detection, FormatError> {
    if first_bytes.starts_with(b"PAR1") || first_bytes.starts_with(b"ARROW1") {
        let what = if first_bytes.starts_with(b"PAR1") { "Parquet" } else { "Arrow IPC" };
        return Ok(Detection {
            format: Format::Baseten,
            evidence: format!(
                "a {what} file: the columnar trace read is Baseten's (its columns are checked as it is read)"
            ),
        });
    }
    let text = String::from_utf8_lossy(first_bytes);
    let text = text.trim_start_matches('\u{feff}').trim_start();
    let found = |format, evidence: String| Ok(Detection { format, evidence });
    let first_line = text.split('\n').next().unwrap_or("").trim_end_matches('\r');
    if text.starts_with('{') {
        let has = |k: &str| text.contains(&format!("\"{k}\""));
        if let Some(what) = other_document(&has) {
            return Err(FormatError::NotATrace { what, accepted: ACCEPTED });
        }
        if has("hash_id_scope") || (has("block_size") && has_list(text, "requests")) {
            let keys = ["id", "block_size", "hash_id_scope", "requests"].into_iter().filter(|k| has(k));
            return found(Format::Weka, format!("a JSON object with keys {}", keys.collect::<Vec<_>>().join(", ")));
        }
        let complete_line = text.contains('\n') || first_bytes.len() < 64 * 1024;
        let parsed: Option<Map<String, Value>> =
            if complete_line { serde_json::from_str(first_line).ok() } else { None };
        let key = |k: &str| match &parsed {
            Some(obj) => obj.contains_key(k),
            None => first_line.contains(&format!("\"{k}\"")),
        };
        if key("chat_id") && key("parent_chat_id") {
            return found(Format::Bailian, "JSONL keys chat_id, parent_chat_id (timestamps in seconds)".into());
        }
        if key("request_id") && key("input_length") && !key("timestamp") {
            return found(Format::ServeGen, "JSONL keys request_id, input_length and no timestamp".into());
        }
        if let Some(k) = ["input_length", "text_input", "messages", "payload"].into_iter().find(|k| key(k)) {
            return found(Format::Mooncake, format!("JSONL key {k}"));
        }
        if first_line.trim() == "{" {
            let keys: Vec<&str> = text
                .split('"')
                .collect::<Vec<_>>()
                .windows(2)
                .filter(|w| w[1].trim_start().starts_with(':'))
                .map(|w| w[0])
                .take(5)
                .collect();
            return Err(FormatError::NotATrace {
                what: format!("a JSON document, not JSON lines, with keys {}", keys.join(", ")),
                accepted: ACCEPTED,
            });
        }
        // No other format's keys: Mooncake's validating parser says what is wrong with the rows.
        return found(Format::Mooncake, "JSON lines without another format's keys".into());
    }
    let columns: Vec<String> =
        crate::csv::split(first_line).unwrap_or_default().iter().map(|c| c.trim().to_ascii_lowercase()).collect();
    let col = |name: &str| columns.iter().any(|c| c == name);
    if col("timestamp") && col("contexttokens") && col("generatedtokens") {
        let second = text.split('\n').nth(1).unwrap_or("");
        let zone = if second.contains('+') || second.trim_end().ends_with('Z') {
            "date-times with a UTC offset (2024 style)"
        } else {
            "date-times without a UTC offset (2023 style)"
        };
        return found(Format::Azure, format!("CSV header TIMESTAMP,ContextTokens,GeneratedTokens; {zone}"));
    }
    if col("timestamp") && col("request tokens") && col("response tokens") {
        let v = if col("session id") { "v2 (Session ID column)" } else { "v1" };
        return found(Format::BurstGpt, format!("CSV header with Timestamp, Request tokens, Response tokens: {v}"));
    }
    let shown: String = first_line.chars().take(80).collect();
    Err(FormatError::Unknown { evidence: format!("first line `{shown}`"), accepted: ACCEPTED })
}

/// What a JSON file that is no trace is, from its keys: an analysis or a run's summary.
fn other_document(has: &dyn Fn(&str) -> bool) -> Option<String> {
    if has("total_requests") && has("unique_prefixes") && has("isl_stats") {
        return Some(
            "an analysis of a trace: keys total_requests, unique_prefixes, isl_stats; analyze the trace itself".into(),
        );
    }
    if has("input_config") && (has("time_to_first_token") || has("request_latency") || has("request_throughput")) {
        return Some(
            "the summary of a profile run (profile_export_aiperf.json); open the run's folder with aiperf-cli report"
                .into(),
        );
    }
    if has("records") && has("input_config") {
        return Some("a profile run's export; open the run's folder with aiperf-cli report".into());
    }
    None
}

/// Whether `key` appears with a list as its value (`"requests": [`).
fn has_list(text: &str, key: &str) -> bool {
    let quoted = format!("\"{key}\"");
    text.match_indices(&quoted).any(|(i, _)| {
        let rest = text[i + quoted.len()..].trim_start();
        rest.strip_prefix(':').is_some_and(|r| r.trim_start().starts_with('['))
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn format_of(text: &str) -> Format {
        detect(text.as_bytes()).unwrap().format
    }

    #[test]
    fn parquet_files_are_baseten_traces() {
        assert_eq!(format_of("PAR1\u{15}\u{4}"), Format::Baseten);
        assert_eq!(format_of("ARROW1\0\0"), Format::Baseten);
    }

    #[test]
    fn each_format_by_its_content() {
        assert_eq!(format_of("{\"timestamp\":0,\"input_length\":5,\"hash_ids\":[1]}\n"), Format::Mooncake);
        assert_eq!(
            format_of("{\"chat_id\":0,\"parent_chat_id\":-1,\"timestamp\":0.0,\"input_length\":5}\n"),
            Format::Bailian
        );
        assert_eq!(format_of("{\"request_id\":0,\"type\":\"text\",\"input_length\":61}\n"), Format::ServeGen);
        assert_eq!(
            format_of("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n"),
            Format::Azure
        );
        assert_eq!(
            format_of("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"),
            Format::BurstGpt
        );
        assert_eq!(format_of("{\n  \"id\": \"trace_0001\",\n  \"block_size\": 64,\n  \"requests\": ["), Format::Weka);
        // A first line cut short still shows its keys.
        let cut = format!("{{\"chat_id\":7,\"parent_chat_id\":-1,\"hash_ids\":[{}", "1,".repeat(40_000));
        assert_eq!(format_of(&cut), Format::Bailian);
    }

    #[test]
    fn json_documents_that_are_no_trace_are_named() {
        let analysis = "{\n  \"total_requests\": 20,\n  \"unique_prefixes\": 449,\n  \"block_size\": 512,\n  \"isl_stats\": {},\n  \"arrivals\": {\"requests\": 20}\n}\n";
        let e = detect(analysis.as_bytes()).unwrap_err().to_string();
        assert!(e.starts_with("not a trace (an analysis of a trace"), "{e}");
        let summary = "{\n  \"input_config\": {},\n  \"time_to_first_token\": {\"avg\": 1}\n}\n";
        let e = detect(summary.as_bytes()).unwrap_err().to_string();
        assert!(e.contains("profile_export_aiperf.json") && e.contains("aiperf-cli report"), "{e}");
        let other = "{\n  \"name\": \"x\",\n  \"block_size\": 4,\n  \"requests\": 3\n}\n";
        let e = detect(other.as_bytes()).unwrap_err().to_string();
        assert!(e.contains("a JSON document, not JSON lines, with keys name, block_size, requests"), "{e}");
    }

    #[test]
    fn azure_variant_is_in_the_evidence() {
        let d = detect(b"TIMESTAMP,ContextTokens,GeneratedTokens\n2024-05-10 00:00:00.009930+00:00,2162,5\n").unwrap();
        assert!(d.evidence.contains("2024"), "{}", d.evidence);
    }

    #[test]
    fn unknown_content_names_what_is_accepted() {
        let e = detect(b"a,b,c\n1,2,3\n").unwrap_err().to_string();
        assert!(e.contains("first line `a,b,c`") && e.contains("BurstGPT CSV"), "{e}");
        // JSON of no known shape is left to the Mooncake parser, whose errors name the rows.
        assert_eq!(format_of("{\"x\":1}\n"), Format::Mooncake);
    }
}
