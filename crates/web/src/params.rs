//! The parameters a user sets, kept as the text typed so that invalid values can be shown with a
//! message; their URL form (the share link); and the equivalent CLI command. Names, ranges,
//! defaults and messages all come from the core's table ([`Param`]), the same one the CLI's
//! flags are built from.

use aiperf_core::synthesis::{Mode, Param, SynthesisSettings};

/// Everything the user set, as typed (indexed like [`Param::ALL`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Form {
    values: [String; Param::ALL.len()],
    pub mode: Mode,
    /// Load the bundled sample when the page opens (from a shared link).
    pub sample: bool,
}

impl Default for Form {
    fn default() -> Self {
        Form { values: Param::ALL.map(|p| p.default_text().to_string()), mode: Mode::Transform, sample: false }
    }
}

/// The message under a field holding an invalid value ("must be a whole number from 1 to 16").
pub fn field_error(p: Param, text: &str) -> Option<String> {
    p.parse(text).err().map(|_| {
        let empty_ok = if p.default_text().is_empty() { ", or empty" } else { "" };
        format!("must be {}{empty_ok}", p.range().describe())
    })
}

/// The hint under a valid field: what it does and what it accepts.
pub fn field_hint(p: Param) -> String {
    let empty = if p.default_text().is_empty() { "; empty: none" } else { "" };
    format!("{}; {}{empty}", p.hint(), p.range().describe())
}

impl Form {
    pub fn get(&self, p: Param) -> &str {
        &self.values[p as usize]
    }

    pub fn set(&mut self, p: Param, v: impl Into<String>) {
        self.values[p as usize] = v.into();
    }

    pub fn error(&self, p: Param) -> Option<String> {
        field_error(p, self.get(p))
    }

    /// The block size when valid.
    pub fn block_size(&self) -> Option<u32> {
        let mut s = SynthesisSettings::default();
        s.set(Param::BlockSize, Param::BlockSize.parse(self.get(Param::BlockSize)).ok()?).ok()?;
        Some(s.params.block_size)
    }

    /// The fields that matter in the current mode (generative ones only when generating).
    pub fn active_synth_fields(&self) -> impl Iterator<Item = Param> + '_ {
        // The table's order is the panel's; the block size sits in the analysis panel.
        Param::ALL.into_iter().filter(|&p| p != Param::BlockSize && (!p.generate_only() || self.mode == Mode::Generate))
    }

    /// The synthesis settings, or `None` while a field of the current mode is invalid.
    pub fn synth(&self) -> Option<SynthesisSettings> {
        let mut s = SynthesisSettings { mode: self.mode, ..SynthesisSettings::default() };
        for p in s.active().collect::<Vec<_>>() {
            s.set(p, p.parse(self.get(p)).ok()?).ok()?;
        }
        Some(s)
    }

    /// The query string (`?block_size=16&seed=7`) holding the values that differ from the defaults.
    pub fn to_query(&self) -> String {
        let mut parts: Vec<String> = Param::ALL
            .iter()
            .filter(|&&p| self.get(p) != p.default_text())
            .map(|&p| format!("{}={}", p.key(), encode(self.get(p))))
            .collect();
        if self.mode == Mode::Generate {
            parts.push("mode=generate".into());
        }
        if self.sample {
            parts.push("sample=1".into());
        }
        if parts.is_empty() { String::new() } else { format!("?{}", parts.join("&")) }
    }

    /// Reads a query string; unknown keys are reported, invalid values are kept (and shown invalid).
    pub fn from_query(query: &str) -> (Form, Vec<String>) {
        let mut form = Form::default();
        let mut unknown = Vec::new();
        for pair in query.trim_start_matches('?').split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let (k, v) = (decode(k), decode(v));
            if let Some(p) = Param::from_key(&k) {
                form.set(p, v);
            } else if k == "mode" {
                match v.as_str() {
                    "generate" => form.mode = Mode::Generate,
                    "transform" => form.mode = Mode::Transform,
                    _ => unknown.push(format!("mode={v}")),
                }
            } else if k == "sample" {
                form.sample = v != "0";
            } else {
                unknown.push(k);
            }
        }
        (form, unknown)
    }

    /// `aiperf-cli analyze-trace` with these settings.
    pub fn analyze_command(&self, file: &str, skip_invalid: bool) -> String {
        let mut cmd = format!("aiperf-cli analyze-trace {}", shell_quote(file));
        let bs = Param::BlockSize;
        if self.get(bs) != bs.default_text() {
            cmd += &format!(" --{} {}", bs.flag(), self.get(bs).trim());
        }
        if skip_invalid {
            cmd += " --skip-invalid";
        }
        cmd + " --output-file analysis.json"
    }

    /// `aiperf-cli synthesize-trace` with these settings.
    pub fn synthesize_command(&self, file: &str, out: &str, skip_invalid: bool) -> String {
        let mut cmd = format!("aiperf-cli synthesize-trace {}", shell_quote(file));
        if skip_invalid {
            cmd += " --skip-invalid";
        }
        for p in std::iter::once(Param::BlockSize).chain(self.active_synth_fields()) {
            let v = self.get(p).trim();
            if p == Param::Seed || p == Param::NumRequests || (v != p.default_text() && !v.is_empty()) {
                cmd += &format!(" --{} {}", p.flag(), shell_quote(v));
            }
        }
        cmd + &format!(" --output-file {}", shell_quote(out))
    }
}

/// Quotes a word for a POSIX shell when it needs it.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@".contains(&b)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

fn encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out += &format!("%{b:02X}");
        }
    }
    out
}

fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                match u8::from_str_radix(std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("zz"), 16) {
                    Ok(v) => {
                        out.push(v);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_messages() {
        let f = Form::default();
        assert_eq!(f.error(Param::BlockSize), None);
        let err = |p: Param, v: &str| field_error(p, v);
        assert_eq!(err(Param::BlockSize, "0").unwrap(), "must be a whole number from 1 to 16777216");
        assert_eq!(err(Param::BlockSize, "abc").unwrap(), "must be a whole number from 1 to 16777216");
        assert_eq!(err(Param::SpeedupRatio, "0").unwrap(), "must be a number from 0.001 to 1000000");
        assert_eq!(err(Param::OutputLenMultiplier, "0"), None);
        assert_eq!(err(Param::OutputLenMultiplier, "-1").unwrap(), "must be a number from 0 to 1000");
        assert_eq!(err(Param::PromptLenMultiplier, "1e30").unwrap(), "must be a number > 0 and ≤ 1000");
        assert_eq!(err(Param::MaxIsl, ""), None);
        assert_eq!(err(Param::MaxIsl, "0").unwrap(), "must be a whole number ≥ 1, or empty");
        assert_eq!(field_hint(Param::MaxOsl), "tokens; no cap when empty; a whole number ≥ 1; empty: none");
    }

    #[test]
    fn query_round_trip() {
        let mut f = Form::default();
        assert_eq!(f.to_query(), "");
        f.set(Param::SpeedupRatio, "2.5");
        f.set(Param::MaxIsl, "8192");
        f.mode = Mode::Generate;
        f.sample = true;
        let q = f.to_query();
        assert_eq!(q, "?speedup_ratio=2.5&max_isl=8192&mode=generate&sample=1");
        f.set(Param::Seed, "7");
        f.set(Param::NumRequests, "5");
        assert_eq!(f.to_query(), "?num_requests=5&speedup_ratio=2.5&max_isl=8192&seed=7&mode=generate&sample=1");
        let (g, unknown) = Form::from_query(&f.to_query());
        assert_eq!(g, f);
        assert!(unknown.is_empty());
    }

    #[test]
    fn a_link_with_every_key_decodes() {
        let link = "?block_size=16&speedup_ratio=2&prefix_len_multiplier=1.5&prefix_root_multiplier=3\
                   &prompt_len_multiplier=0.5&output_len_multiplier=0&max_isl=8192&max_osl=512&seed=7\
                   &num_requests=50&min_isl=10&min_osl=2&mode=generate&sample=1";
        let (f, unknown) = Form::from_query(link);
        assert!(unknown.is_empty(), "{unknown:?}");
        let s = f.synth().unwrap();
        let g = &s.params;
        assert_eq!((s.mode, g.block_size, g.seed, g.num_requests), (Mode::Generate, 16, 7, 50));
        assert_eq!((g.speedup_ratio, g.prefix_len_multiplier, g.prompt_len_multiplier), (2.0, 1.5, 0.5));
        assert_eq!((g.prefix_root_multiplier, g.output_len_multiplier), (3, 0.0));
        assert_eq!((g.min_isl, g.max_isl, g.min_osl, g.max_osl), (Some(10), Some(8192), Some(2), Some(512)));
        assert!(f.sample);
    }

    #[test]
    fn bad_query_values_are_kept_and_flagged() {
        let (f, unknown) = Form::from_query("?block_size=%2Dx&zzz=1&mode=weird&seed=%");
        assert_eq!(f.get(Param::BlockSize), "-x");
        assert!(f.error(Param::BlockSize).is_some());
        assert!(f.synth().is_none());
        assert_eq!(f.get(Param::Seed), "%");
        assert_eq!(unknown, ["zzz", "mode=weird"]);
        // Out of range, not just malformed: refused the same way as on the command line.
        let (f, _) = Form::from_query("?output_len_multiplier=1e30");
        assert!(f.error(Param::OutputLenMultiplier).is_some() && f.synth().is_none());
    }

    #[test]
    fn commands() {
        let mut f = Form::default();
        assert_eq!(
            f.analyze_command("my trace.jsonl", false),
            "aiperf-cli analyze-trace 'my trace.jsonl' --output-file analysis.json"
        );
        f.set(Param::BlockSize, "16");
        f.set(Param::SpeedupRatio, "2");
        assert_eq!(
            f.synthesize_command("t.jsonl", "out.jsonl", false),
            "aiperf-cli synthesize-trace t.jsonl --block-size 16 --synthesis-speedup-ratio 2 --random-seed 0 --output-file out.jsonl"
        );
        let s = f.synth().unwrap();
        assert_eq!((s.params.block_size, s.params.speedup_ratio, s.params.max_isl, s.params.seed), (16, 2.0, None, 0));
        f.mode = Mode::Generate;
        f.set(Param::MinIsl, "100");
        assert_eq!(
            f.synthesize_command("t.jsonl", "o.jsonl", true),
            "aiperf-cli synthesize-trace t.jsonl --skip-invalid --block-size 16 --num-requests 1000 \
             --synthesis-speedup-ratio 2 --synthesis-min-isl 100 --random-seed 0 --output-file o.jsonl"
        );
        assert_eq!(f.synth().unwrap().params.min_isl, Some(100));
    }
}
