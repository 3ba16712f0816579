//! Fuzz the run loader's fast line parser: whatever it accepts, serde accepts with the same
//! record, and the loader never panics on any bytes.
#![no_main]

use aiperf_core::results::record::RequestRecord;
use aiperf_core::view::{RunLoader, RunSettings};
use aiperf_core::results::record;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut rec = RequestRecord::default();
    if record::parse_fast(data, &mut rec) {
        assert_eq!(record::parse_serde(data).ok(), Some(rec));
    }
    let mut l = RunLoader::new("fuzz.jsonl", RunSettings::default());
    if l.push(data).is_ok() {
        let _ = l.finish("fuzz");
    }
});
