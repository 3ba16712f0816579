//! Fuzz the run loader's fast line parser: whatever it accepts, serde accepts with the same
//! record, and the loader never panics on any bytes.
#![no_main]

use aiperf_core::results::line;
use aiperf_core::results::record::RequestRecord;
use aiperf_core::view::{RunLoader, RunSettings};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut rec = RequestRecord::default();
    match line::parse_fast(data, &mut rec) {
        Some(true) => assert_eq!(line::parse_serde(data).ok(), Some(Some(rec))),
        Some(false) => assert!(matches!(line::parse_serde(data), Ok(None))),
        None => {}
    }
    let mut l = RunLoader::new("fuzz.jsonl", RunSettings::default());
    if l.push(data).is_ok() {
        let _ = l.finish("fuzz");
    }
});
