//! Fuzz the production trace formats (Bailian, ServeGen, Azure, BurstGPT, WEKA): any bytes, read
//! line by line or as one document, convert or give an error, never a panic; both readings agree;
//! what converts writes Mooncake rows that parse back to the same text; detection never panics.
#![no_main]

use aiperf_core::formats::{ConvertOptions, Converted, Converter, FileOptions, Format, FormatError, detect};
use aiperf_core::trace::{ParseOptions, parse_str, write_trace};
use libfuzzer_sys::fuzz_target;

const FORMATS: [Format; 5] = [Format::Bailian, Format::ServeGen, Format::Azure, Format::BurstGpt, Format::Weka];

fn convert(format: Format, block_size: u32, text: &str, whole: bool) -> Result<Converted, FormatError> {
    let mut c = Converter::new(ConvertOptions { block_size, ..ConvertOptions::default() })?;
    c.start_file(FileOptions {
        source: "fuzz".into(),
        format,
        start_offset_ms: 0,
        conversation_prefix: String::new(),
    })?;
    if whole {
        c.push_document(text)?;
    } else {
        for line in text.split('\n') {
            c.push_line(line)?;
        }
    }
    c.end_file()?;
    c.finish()
}

fuzz_target!(|data: &[u8]| {
    let _ = detect(data);
    let Some((&choice, rest)) = data.split_first() else { return };
    let format = FORMATS[usize::from(choice) % FORMATS.len()];
    // 512 (the default) or another multiple of both source block sizes, now and then one that is not.
    let block_size = match choice / 8 % 4 {
        0 => 512,
        1 => 64,
        2 => 1024,
        _ => 100,
    };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    let by_lines = convert(format, block_size, text, false);
    let whole = convert(format, block_size, text, true);
    match (&by_lines, &whole) {
        (Ok(a), Ok(b)) => {
            let written = write_trace(&a.trace);
            assert_eq!(written, write_trace(&b.trace), "line by line and whole differ");
            let again = parse_str(&written, ParseOptions::new("fuzz-again")).expect("converted rows parse");
            assert_eq!(write_trace(&again.trace), written, "writing is stable");
        }
        (Err(_), Err(_)) => {}
        _ => panic!("line by line {:?} but whole {:?}", by_lines.map(|_| ()), whole.map(|_| ())),
    }
});
