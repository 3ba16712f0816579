//! Fuzz the SSE parser and chunk interpretation: any bytes, split anywhere, give the same events
//! as in one piece, and interpreting them never panics.
#![no_main]

use aiperf_core::replay::sse::{SseParser, interpret_chunk};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (split, body) = match data.split_first() {
        Some((s, rest)) => (usize::from(*s), rest),
        None => return,
    };
    let mut whole = Vec::new();
    let mut p = SseParser::new();
    p.feed(body, &mut whole);
    p.finish(&mut whole);
    let mut pieces = Vec::new();
    let mut q = SseParser::new();
    let step = split.max(1);
    for chunk in body.chunks(step) {
        q.feed(chunk, &mut pieces);
    }
    q.finish(&mut pieces);
    assert_eq!(whole, pieces);
    for ev in &whole {
        let _ = interpret_chunk(&ev.data);
    }
});
