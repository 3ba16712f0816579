//! The conversion settings a user sets — `convert-trace`'s flags and the browser app's conversion
//! form — described once: each flag's name, help, what it accepts and whether the browser offers
//! it. The CLI builds its `clap` options from [`FLAGS`] and the browser its form fields;
//! [`ConversionSettings::set`] is the only parser and range check, so both surfaces accept the
//! same values and refuse the others with the same words.

use serde::{Deserialize, Serialize};

use super::error::FormatError;
use super::options::{Arrivals, ConvertOptions};
use super::transform::Transforms;

/// What a flag accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accepts {
    /// A whole number ≥ 1 that fits in 32 bits (a block size).
    Size,
    /// A whole number ≥ 0.
    Count,
    /// A finite number ≥ 0 (milliseconds).
    Millis,
    /// A finite number > 0 (a rate per second).
    Positive,
    /// A number > 0 and ≤ 1.
    Fraction,
    /// Model names; a comma-separated list adds each, and the flag may be repeated.
    Models,
    /// On or off; given means on.
    Switch,
}

impl Accepts {
    /// What is accepted, in words.
    pub fn describe(self) -> &'static str {
        match self {
            Accepts::Size => "a whole number from 1 to 4294967295",
            Accepts::Count => "a whole number ≥ 0",
            Accepts::Millis => "a number ≥ 0",
            Accepts::Positive => "a number > 0",
            Accepts::Fraction => "a number > 0 and ≤ 1",
            Accepts::Models => "model names (comma-separated)",
            Accepts::Switch => "on or off",
        }
    }
}

/// One conversion flag (a row of [`FLAGS`]).
#[derive(Clone, Copy, Debug)]
pub struct Flag {
    /// The flag without its dashes (`--arrival-rate` → `arrival-rate`).
    pub name: &'static str,
    pub help: &'static str,
    pub accepts: Accepts,
    /// Offered by the browser app's form (the block size there is the analysis' own).
    pub in_browser: bool,
}

/// Every conversion flag, in the order the CLI's help and the browser's form show them.
pub const FLAGS: [Flag; 13] = [
    Flag {
        name: "block-size",
        help: "Tokens per hash id block of the output (a multiple of the source's 16 or 64).",
        accepts: Accepts::Size,
        in_browser: false,
    },
    Flag {
        name: "arrival-rate",
        help: "Sources without arrival times (ServeGen offline): this many requests per second (default: all at 0 ms).",
        accepts: Accepts::Positive,
        in_browser: true,
    },
    Flag {
        name: "output-length",
        help: "Output length for rows that have none (ServeGen a–c); default: none written.",
        accepts: Accepts::Count,
        in_browser: true,
    },
    Flag {
        name: "model",
        help: "Keep only rows of these models (BurstGPT `Model`, WEKA `model`); repeat or separate with commas.",
        accepts: Accepts::Models,
        in_browser: true,
    },
    Flag {
        name: "drop-failed",
        help: "Drop failed rows (BurstGPT: zero response tokens) instead of keeping them; both are counted.",
        accepts: Accepts::Switch,
        in_browser: true,
    },
    Flag {
        name: "start-ms",
        help: "Keep rows from this trace time on (ms, after conversion).",
        accepts: Accepts::Millis,
        in_browser: true,
    },
    Flag {
        name: "end-ms",
        help: "Keep rows before this trace time (ms, after conversion).",
        accepts: Accepts::Millis,
        in_browser: true,
    },
    Flag {
        name: "sample-fraction",
        help: "Keep this fraction of whole conversations, chosen by --sample-seed.",
        accepts: Accepts::Fraction,
        in_browser: true,
    },
    Flag { name: "sample-seed", help: "Seed of the conversation sampling.", accepts: Accepts::Count, in_browser: true },
    Flag {
        name: "max-turn-gap-ms",
        help: "Shorten every gap between turns of one conversation to at most this many ms.",
        accepts: Accepts::Millis,
        in_browser: true,
    },
    Flag {
        name: "max-idle-gap-ms",
        help: "Shorten every idle gap between arrivals to at most this many ms (e.g. compress nights).",
        accepts: Accepts::Millis,
        in_browser: true,
    },
    Flag {
        name: "file-spacing-ms",
        help: "Merging files (WEKA): file k starts k × this many ms after the first.",
        accepts: Accepts::Count,
        in_browser: true,
    },
    Flag {
        name: "file-rate",
        help: "Merging files (WEKA): files (conversations) start at this many per second.",
        accepts: Accepts::Positive,
        in_browser: true,
    },
];

/// The flags that cannot be given together.
pub const EXCLUSIVE: [(&str, &str); 1] = [("file-spacing-ms", "file-rate")];

/// Everything a conversion lets the user choose: the converter's options, the transforms after
/// it, and where merged files start.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ConversionSettings {
    pub options: ConvertOptions,
    pub transforms: Transforms,
    pub file_spacing_ms: Option<u64>,
    pub file_rate: Option<f64>,
}

/// A parsed value.
enum Parsed {
    Int(u64),
    Num(f64),
    Models(Vec<String>),
    On(bool),
}

/// Parses `text` as what `accepts` names.
fn parse(accepts: Accepts, text: &str) -> Option<Parsed> {
    let t = text.trim();
    let num = || t.parse::<f64>().ok().filter(|v| v.is_finite());
    match accepts {
        Accepts::Size => t.parse::<u32>().ok().filter(|&v| v >= 1).map(|v| Parsed::Int(v.into())),
        Accepts::Count => t.parse::<u64>().ok().map(Parsed::Int),
        Accepts::Millis => num().filter(|&v| v >= 0.0).map(Parsed::Num),
        Accepts::Positive => num().filter(|&v| v > 0.0).map(Parsed::Num),
        Accepts::Fraction => num().filter(|&v| v > 0.0 && v <= 1.0).map(Parsed::Num),
        Accepts::Models => {
            let models: Vec<String> = t.split(',').map(str::trim).filter(|m| !m.is_empty()).map(String::from).collect();
            (!models.is_empty()).then_some(Parsed::Models(models))
        }
        Accepts::Switch => match t {
            "" | "1" | "true" | "on" => Some(Parsed::On(true)),
            "0" | "false" | "off" => Some(Parsed::On(false)),
            _ => None,
        },
    }
}

impl ConversionSettings {
    /// The flag called `name`.
    pub fn flag(name: &str) -> Option<&'static Flag> {
        FLAGS.iter().find(|f| f.name == name)
    }

    /// Sets the flag `name` from its text (a model list adds to the models already set).
    pub fn set(&mut self, name: &str, text: &str) -> Result<(), FormatError> {
        let Some(flag) = Self::flag(name) else {
            return Err(FormatError::Options(format!("--{name}: not a conversion option")));
        };
        let Some(value) = parse(flag.accepts, text) else {
            return Err(FormatError::Options(format!(
                "--{name}: {text:?} is not accepted: expected {}",
                flag.accepts.describe()
            )));
        };
        let int = |v: &Parsed| if let Parsed::Int(i) = v { Some(*i) } else { None };
        let num = |v: &Parsed| if let Parsed::Num(x) = v { Some(*x) } else { None };
        let (o, t) = (&mut self.options, &mut self.transforms);
        match (name, value) {
            ("model", Parsed::Models(m)) => o.models.extend(m),
            ("drop-failed", Parsed::On(on)) => o.drop_failed = on,
            (name, v) => match name {
                "block-size" => o.block_size = int(&v).and_then(|i| u32::try_from(i).ok()).unwrap_or(o.block_size),
                "output-length" => o.output_length = int(&v),
                "arrival-rate" => {
                    o.arrivals = num(&v).map_or(Arrivals::AllAtZero, |per_second| Arrivals::Rate { per_second });
                }
                "sample-seed" => t.sample_seed = int(&v).unwrap_or(0),
                "start-ms" => t.window_start_ms = num(&v),
                "end-ms" => t.window_end_ms = num(&v),
                "sample-fraction" => t.sample_fraction = num(&v),
                "max-turn-gap-ms" => t.max_turn_gap_ms = num(&v),
                "max-idle-gap-ms" => t.max_idle_gap_ms = num(&v),
                "file-spacing-ms" => self.file_spacing_ms = int(&v),
                "file-rate" => self.file_rate = num(&v),
                _ => return Err(FormatError::Options(format!("--{name}: not a conversion option"))),
            },
        }
        Ok(())
    }

    /// Settings from (flag, text) pairs, as a form sends them: empty texts are flags not given.
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Self, FormatError> {
        let mut s = ConversionSettings::default();
        let mut given = Vec::new();
        for (name, text) in pairs {
            if !text.trim().is_empty() {
                s.set(name, text)?;
                given.push(name);
            }
        }
        for (a, b) in EXCLUSIVE {
            if given.contains(&a) && given.contains(&b) {
                return Err(FormatError::Options(format!("--{a} and --{b}: give one of them")));
            }
        }
        Ok(s)
    }

    /// Where merged file `k` starts, in ms.
    pub fn file_offset_ms(&self, k: usize) -> u64 {
        match (self.file_spacing_ms, self.file_rate) {
            (Some(ms), _) => ms.saturating_mul(k as u64),
            (None, Some(rate)) if rate.is_finite() && rate > 0.0 => (k as f64 * 1000.0 / rate).round() as u64,
            _ => 0,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn every_flag_sets_its_field() {
        let s = ConversionSettings::from_pairs([
            ("block-size", "256"),
            ("arrival-rate", "20"),
            ("output-length", "128"),
            ("model", "a, b"),
            ("drop-failed", "1"),
            ("start-ms", "1000"),
            ("end-ms", "9000.5"),
            ("sample-fraction", "0.25"),
            ("sample-seed", "7"),
            ("max-turn-gap-ms", "60000"),
            ("max-idle-gap-ms", "5000"),
            ("file-rate", "2"),
            ("file-spacing-ms", ""),
        ])
        .unwrap();
        let want = ConversionSettings {
            options: ConvertOptions {
                block_size: 256,
                arrivals: Arrivals::Rate { per_second: 20.0 },
                output_length: Some(128),
                models: vec!["a".into(), "b".into()],
                drop_failed: true,
                weka: None,
                baseten: None,
            },
            transforms: Transforms {
                window_start_ms: Some(1000.0),
                window_end_ms: Some(9000.5),
                sample_fraction: Some(0.25),
                sample_seed: 7,
                max_turn_gap_ms: Some(60000.0),
                max_idle_gap_ms: Some(5000.0),
            },
            file_spacing_ms: None,
            file_rate: Some(2.0),
        };
        assert_eq!(s, want);
        assert_eq!(s.file_offset_ms(3), 1500);
        // Every flag of the table is one the settings know.
        for f in FLAGS {
            let text = match f.accepts {
                Accepts::Models => "m",
                Accepts::Switch => "1",
                Accepts::Fraction => "0.5",
                _ => "3",
            };
            ConversionSettings::default().set(f.name, text).unwrap();
        }
    }

    #[test]
    fn refusals_name_the_flag_the_value_and_what_is_accepted() {
        let err = |name: &str, text: &str| ConversionSettings::default().set(name, text).unwrap_err().to_string();
        assert_eq!(
            err("sample-fraction", "1.5"),
            "--sample-fraction: \"1.5\" is not accepted: expected a number > 0 and ≤ 1"
        );
        assert_eq!(err("file-rate", "0"), "--file-rate: \"0\" is not accepted: expected a number > 0");
        assert_eq!(err("start-ms", "-1"), "--start-ms: \"-1\" is not accepted: expected a number ≥ 0");
        assert_eq!(err("end-ms", "NaN"), "--end-ms: \"NaN\" is not accepted: expected a number ≥ 0");
        assert_eq!(
            err("block-size", "0"),
            "--block-size: \"0\" is not accepted: expected a whole number from 1 to 4294967295"
        );
        assert_eq!(
            err("output-length", "1.5"),
            "--output-length: \"1.5\" is not accepted: expected a whole number ≥ 0"
        );
        assert_eq!(err("drop-failed", "maybe"), "--drop-failed: \"maybe\" is not accepted: expected on or off");
        assert_eq!(err("nope", "1"), "--nope: not a conversion option");
        let both = ConversionSettings::from_pairs([("file-spacing-ms", "10"), ("file-rate", "2")]).unwrap_err();
        assert_eq!(both.to_string(), "--file-spacing-ms and --file-rate: give one of them");
    }

    #[test]
    fn defaults_are_the_converters() {
        let s = ConversionSettings::default();
        assert_eq!(s.options, ConvertOptions::default());
        assert!(s.transforms.is_identity());
        assert_eq!(s.file_offset_ms(5), 0);
    }
}
