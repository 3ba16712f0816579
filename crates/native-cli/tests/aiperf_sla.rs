//! AIPerf's SLA targets (`--ttft-sla-ms`, `--itl-sla-ms`/`--tpot-sla-ms`, `--e2e-sla-ms`,
//! `--error-rate-sla`, `--slo-attainment-fraction`) judge the capacity search's runs, end to end
//! against `aiperf-cli mock-server` on 127.0.0.1; without `--search-max` they change nothing.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::*;

const LIMIT: Duration = Duration::from_secs(120);

/// A concurrency search from 1 to 2, ten requests a point.
const SEARCH: [&str; 10] = [
    "--search-max",
    "concurrency",
    "--search-start",
    "1",
    "--search-limit",
    "2",
    "--request-count",
    "10",
    "--ui-type",
    "none",
];

#[test]
fn the_latency_targets_are_the_searchs_per_request_slos_and_the_attainment_its_target() {
    // Every TTFT is about 40 ms: a 5 ms target fails every request, a 1 s one passes them.
    let mock = Mock::start(&["--ttft-ms", "40", "--itl-ms", "1"]);
    let (dir, trace, art) = scratch(&rows(10, 20, 4));
    let out = profile_streaming(
        &mock.url,
        &trace,
        &art,
        &[&SEARCH[..], &["--ttft-sla-ms", "5", "--e2e-sla-ms", "5000"]].concat(),
        LIMIT,
    );
    ok(&out);
    let s = read_json(&art.join("profile_export_aiperf_search.json"));
    assert_eq!(s["stop"], "start_failed", "{s}");
    assert_eq!(s["input_config"]["goodput"], "time_to_first_token:5 request_latency:5000", "{s}");
    assert_eq!(s["input_config"]["ttft_sla_ms"], 5.0);
    assert_eq!(s["settings"]["target_good_fraction"], 0.95, "AIPerf's default attainment fraction");
    let sub = summary(&art.join("1"));
    assert_eq!(sub["good_request_count"]["avg"], 0.0, "{sub}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "search: a run passes when 95% of its requests meet time_to_first_token ≤ 5, request_latency ≤ 5000"
        ),
        "{stderr}"
    );

    let art = dir.path().join("art2");
    let targets =
        ["--ttft-sla-ms", "1000", "--tpot-sla-ms", "100", "--e2e-sla-ms", "5000", "--slo-attainment-fraction", "0.9"];
    let out = profile_streaming(&mock.url, &trace, &art, &[&SEARCH[..], &targets[..]].concat(), LIMIT);
    ok(&out);
    let s = read_json(&art.join("profile_export_aiperf_search.json"));
    assert_eq!((s["stop"].clone(), s["capacity"].clone()), ("limit_passed".into(), 2.0.into()), "{s}");
    assert_eq!(s["settings"]["target_good_fraction"], 0.9);
    assert_eq!(
        s["input_config"]["goodput"], "time_to_first_token:1000 inter_token_latency:100 request_latency:5000",
        "--tpot-sla-ms is the inter_token_latency target"
    );
    for v in ["1", "2"] {
        let sub = summary(&art.join(v));
        assert_eq!(sub["good_request_count"]["avg"], 10.0, "{sub}");
    }
}

#[test]
fn a_run_whose_error_rate_reaches_the_error_rate_sla_fails() {
    // Half the requests fail: a 5% error-rate target fails the start, a 99% one passes both points.
    let mock = Mock::start(&["--ttft-ms", "2", "--itl-ms", "1", "--error-rate", "0.5"]);
    let (dir, trace, art) = scratch(&rows(10, 20, 4));
    let out = profile_streaming(&mock.url, &trace, &art, &[&SEARCH[..], &["--error-rate-sla", "0.05"]].concat(), LIMIT);
    ok(&out);
    let s = read_json(&art.join("profile_export_aiperf_search.json"));
    assert_eq!(s["stop"], "start_failed", "{s}");
    assert_eq!(s["points"][0]["good_fractions"], serde_json::json!([0.0]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("reaches --error-rate-sla 5.00%: the run fails"), "{stderr}");
    let art = dir.path().join("art2");
    let out = profile_streaming(&mock.url, &trace, &art, &[&SEARCH[..], &["--error-rate-sla", "0.99"]].concat(), LIMIT);
    ok(&out);
    let s = read_json(&art.join("profile_export_aiperf_search.json"));
    assert_eq!((s["stop"].clone(), s["capacity"].clone()), ("limit_passed".into(), 2.0.into()), "{s}");
    assert!(s["input_config"]["goodput"].is_null(), "no per-request SLO: {s}");
}

#[test]
fn without_a_search_the_targets_change_nothing_and_say_so() {
    let mock = Mock::start(&["--ttft-ms", "2", "--itl-ms", "1"]);
    let (_dir, trace, art) = scratch(&rows(4, 20, 4));
    let out = profile_streaming(
        &mock.url,
        &trace,
        &art,
        &["--ttft-sla-ms", "1", "--concurrency", "1", "--ui-type", "none"],
        LIMIT,
    );
    ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("this run ignores them, as AIPerf does outside its search recipes"), "{stderr}");
    let s = summary(&art);
    assert!(s.get("good_request_count").is_none() && s.get("goodput").is_none(), "{s}");
    assert_eq!(s["aiperf_cli_config"]["ttft_sla_ms"], 1.0, "{s}");
}
