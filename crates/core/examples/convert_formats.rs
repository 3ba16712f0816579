//! Generates a large trace in one of the production formats, or times converting one (issue 14's
//! "1M rows ≤ 1 s" measurement; see BENCHMARKS.md, "Trace formats").
//!
//! `cargo run --release -p aiperf-core --example convert_formats -- gen FORMAT ROWS OUT`
//! `cargo run --release -p aiperf-core --example convert_formats -- time FORMAT FILE|DIR`
//! `cargo run --release -p aiperf-core --example convert_formats -- gen-weka-files DIR FILES REQUESTS`
//!
//! Generated shapes: Bailian/ServeGen rows of 100–1,100 tokens (16-token ids, a 320-token shared
//! system prompt, conversations of 1–4 turns whose inputs grow); Azure 2024 CSV (offsets, 6
//! fraction digits); BurstGPT v2 CSV (sessions, 5 % failures); WEKA: one file of ROWS requests of
//! 640–2,560 tokens (64-token ids). `gen-weka-files`: FILES WEKA files `DIR/trace_NNNNN.json` of
//! REQUESTS requests each, written on one line like the real ones (the same request sizes, ids
//! local to each file, some sub-agents).

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read as _, Write as _};
use std::time::Instant;

use aiperf_core::formats::{ConvertOptions, Converter, FileOptions, Format};

/// A small deterministic generator (xorshift64*), enough for test data.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn ids_json(out: &mut String, ids: &[u64]) {
    out.push('[');
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{id}");
    }
    out.push(']');
}

fn generate(format: Format, rows: u64, out: &mut String) {
    let mut g = Gen(0x9E37_79B9_7F4A_7C15);
    let mut next_id = 20u64;
    // Open conversations: (root chat id, last chat id, ids so far, turn).
    let mut open: Vec<(u64, u64, Vec<u64>, u64)> = Vec::new();
    match format {
        Format::Azure => out.push_str("TIMESTAMP,ContextTokens,GeneratedTokens\n"),
        Format::BurstGpt => out
            .push_str("Timestamp,Session ID,Elapsed time,Model,Request tokens,Response tokens,Total tokens,Log Type\n"),
        Format::Weka => {
            out.push_str("{\"id\": \"bench\", \"block_size\": 64, \"hash_id_scope\": \"local\", \"requests\": [\n")
        }
        _ => {}
    }
    for i in 0..rows {
        let ms = i * 7 + g.below(7);
        match format {
            Format::Bailian | Format::ServeGen => {
                let continue_conv = !open.is_empty() && g.below(2) == 0;
                let (parent, root, mut ids, turn) = if continue_conv {
                    let k = g.below(open.len() as u64) as usize;
                    let (root, last, ids, turn) = open.swap_remove(k);
                    (last as i64, root, ids, turn + 1)
                } else {
                    (-1, i, (0..20).collect(), 1)
                };
                let add = 6 + g.below(40);
                for _ in 0..add {
                    ids.push(next_id);
                    next_id += 1;
                }
                let input = (ids.len() as u64 - 1) * 16 + 1 + g.below(16);
                if format == Format::Bailian {
                    let _ = write!(
                        out,
                        "{{\"chat_id\": {i}, \"parent_chat_id\": {parent}, \"timestamp\": {}.{:03}, \"input_length\": {input}, \
                         \"output_length\": {}, \"type\": \"text\", \"turn\": {turn}, \"hash_ids\": ",
                        ms / 1000,
                        ms % 1000,
                        1 + g.below(500)
                    );
                } else {
                    let _ = write!(
                        out,
                        "{{\"request_id\": {i}, \"type\": \"text\", \"input_length\": {input}, \"hash_ids\": "
                    );
                }
                ids_json(out, &ids);
                out.push_str(if format == Format::ServeGen { ", \"img_ids\": []}\n" } else { "}\n" });
                if turn < 4 && ids.len() < 60 {
                    open.push((root, i, ids, turn));
                }
            }
            Format::Azure => {
                let s = ms / 1000;
                let _ = writeln!(
                    out,
                    "2024-05-{:02} {:02}:{:02}:{:02}.{:06}+00:00,{},{}",
                    10 + s / 86_400,
                    s / 3600 % 24,
                    s / 60 % 60,
                    s % 60,
                    ms % 1000 * 1000 + g.below(1000),
                    1 + g.below(8000),
                    1 + g.below(800)
                );
            }
            Format::BurstGpt => {
                let failed = g.below(20) == 0;
                let (req, resp) = if failed { (0, 0) } else { (1 + g.below(3000), 1 + g.below(800)) };
                let session = if g.below(3) == 0 { String::new() } else { format!("s-{:08x}", g.below(100_000)) };
                let log = if session.is_empty() { "API log" } else { "Conversation log" };
                let model = if g.below(4) == 0 { "GPT-4" } else { "ChatGPT" };
                let _ = writeln!(
                    out,
                    "{}.0,{session},{},{model},{req},{resp},{},{log}",
                    19_440_110 + ms / 1000,
                    g.below(60),
                    req + resp
                );
            }
            Format::Weka => {
                let input = 640 + g.below(1920);
                let ids: Vec<u64> = (1..=input / 64).map(|k| if k <= 8 { k } else { next_id + k }).collect();
                next_id += 40;
                let _ = write!(
                    out,
                    "{}{{\"t\": {}.0, \"type\": \"s\", \"model\": \"claude\", \"in\": {input}, \"out\": {}, \"hash_ids\": ",
                    if i > 0 { ",\n" } else { "" },
                    ms / 1000,
                    g.below(900)
                );
                ids_json(out, &ids);
                out.push_str(", \"input_types\": [\"text\"], \"output_types\": [\"text\"], \"stop\": \"end_turn\"}");
            }
            Format::Mooncake | Format::Baseten => {}
        }
    }
    if format == Format::Weka {
        out.push_str("\n]}\n");
    }
}

/// One WEKA file of `requests` requests, on one line like kv-cache-tester's.
fn weka_file(g: &mut Gen, name: &str, requests: u64, out: &mut String) {
    let _ = write!(
        out,
        "{{\"id\":\"{name}\",\"models\":[\"claude\"],\"block_size\":64,\"hash_id_scope\":\"local\",\
         \"tool_tokens\":9545,\"system_tokens\":1212,\"requests\":["
    );
    let mut next_id = 20u64;
    let mut t = 0u64;
    let mut request = |g: &mut Gen, out: &mut String, t: u64| {
        let input = 640 + g.below(1920);
        let ids: Vec<u64> = (1..=input / 64).map(|k| if k <= 8 { k } else { next_id + k }).collect();
        next_id += 40;
        let _ = write!(
            out,
            "{{\"t\":{t}.0,\"type\":\"n\",\"model\":\"claude\",\"in\":{input},\"out\":{},\"hash_ids\":",
            g.below(900)
        );
        for (i, id) in ids.iter().enumerate() {
            out.push(if i == 0 { '[' } else { ',' });
            let _ = write!(out, "{id}");
        }
        out.push(']');
        out.push_str(
            ",\"input_types\":[\"tool_result\"],\"output_types\":[\"text\",\"tool_use\"],\"stop\":\"tool_use\",\
             \"api_time\":8.79,\"think_time\":0.0}",
        );
    };
    let mut left = requests;
    let mut first = true;
    while left > 0 {
        if !first {
            out.push(',');
        }
        first = false;
        t += 1 + g.below(20);
        if left >= 4 && g.below(25) == 0 {
            // A sub-agent of three requests on its own clock.
            let _ = write!(out, "{{\"t\":{t}.5,\"type\":\"subagent\",\"agent_id\":\"agent_{left}\",\"requests\":[");
            for k in 0..3 {
                if k > 0 {
                    out.push(',');
                }
                request(g, out, k * 5);
            }
            out.push_str("]}");
            left -= 3;
            continue;
        }
        request(g, out, t);
        left -= 1;
    }
    out.push_str("]}");
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: gen FORMAT ROWS OUT | time FORMAT FILE | gen-weka-files DIR FILES REQUESTS";
    let [mode, format, rest @ ..] = args.as_slice() else {
        return Err(usage.into());
    };
    let (mode, format, rest) = match mode.as_str() {
        "gen-weka-files" => ("files", Format::Weka, &args[1..]),
        _ => (mode.as_str(), Format::from_name(format).ok_or("unknown format")?, rest),
    };
    match (mode, rest) {
        ("gen", [rows, path]) => {
            let mut out = String::new();
            generate(format, rows.parse()?, &mut out);
            std::fs::File::create(path)?.write_all(out.as_bytes())?;
        }
        ("files", [dir, files, requests]) => {
            let mut g = Gen(0x9E37_79B9_7F4A_7C15);
            std::fs::create_dir_all(dir)?;
            let mut out = String::new();
            for k in 0..files.parse::<u64>()? {
                out.clear();
                let name = format!("trace_{k:05}");
                weka_file(&mut g, &name, requests.parse()?, &mut out);
                std::fs::write(std::path::Path::new(dir).join(format!("{name}.json")), &out)?;
            }
        }
        ("time", [path]) => {
            let start = Instant::now();
            let mut conv = Converter::new(ConvertOptions::default())?;
            // A folder: its `*.json` files merged (WEKA), one after the other on this thread.
            let files: Vec<String> = if std::path::Path::new(path).is_dir() {
                let mut all: Vec<String> = std::fs::read_dir(path)?
                    .filter_map(|e| e.ok().map(|e| e.path().display().to_string()))
                    .filter(|p| p.ends_with(".json"))
                    .collect();
                all.sort();
                all
            } else {
                vec![path.clone()]
            };
            for (k, file) in files.iter().enumerate() {
                let mut reader = BufReader::with_capacity(1 << 20, std::fs::File::open(file)?);
                conv.start_file(FileOptions {
                    source: file.as_str().into(),
                    format,
                    start_offset_ms: 0,
                    conversation_prefix: if files.len() > 1 { format!("{k}:") } else { String::new() },
                })?;
                if format == Format::Weka {
                    // One document, read whole as `convert-trace` reads it.
                    let mut text = String::new();
                    reader.read_to_string(&mut text)?;
                    conv.push_document(&text)?;
                } else {
                    let mut line = String::new();
                    while reader.read_line(&mut line)? > 0 {
                        conv.push_line(line.strip_suffix('\n').unwrap_or(&line))?;
                        line.clear();
                    }
                }
            }
            let converted = conv.finish()?;
            let elapsed = start.elapsed();
            println!(
                "{format}: {} rows, {} ids, {:.3} s",
                converted.trace.len(),
                converted.trace.total_hash_ids(),
                elapsed.as_secs_f64()
            );
        }
        _ => return Err(usage.into()),
    }
    Ok(())
}
