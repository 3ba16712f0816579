//! AIPerf 0.13.0's synthetic dataset options, with its spellings, aliases and defaults, turned into
//! the core's validated [`SyntheticWorkload`] (generated as a trace by
//! [`SyntheticWorkload::generate`]). `synthesize-trace` takes them when it is given no input trace.
//!
//! The block size (`--isl-block-size`) and the seed (`--random-seed`) are not here: every command
//! that takes these flags has its own; the caller sets [`SyntheticWorkload::block_size`] and passes
//! the seed.

use aiperf_core::synthesis::synthetic::{CorpusStyle, LengthDist, RangeRatio, SeqDist, SyntheticWorkload};
use anyhow::{Result, anyhow};

/// `--random-corpus-style`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CorpusStyleArg {
    Vllm,
    Sglang,
}

/// AIPerf's synthetic workload options (a value not given keeps AIPerf's default).
#[derive(Clone, Debug, Default, clap::Args)]
pub struct SyntheticFlags {
    /// Mean tokens of a synthetic prompt (normal around it, ±--isl-stddev). [default: 550]
    #[arg(
        long = "prompt-input-tokens-mean",
        visible_aliases = ["synthetic-input-tokens-mean", "isl"],
        value_name = "N",
        value_parser = one_u64
    )]
    pub isl: Option<u64>,
    /// Standard deviation of the prompt tokens (truncated to an integer, as AIPerf). [default: 0]
    #[arg(
        long = "prompt-input-tokens-stddev",
        visible_aliases = ["synthetic-input-tokens-stddev", "isl-stddev"],
        value_name = "X",
        value_parser = one_f64
    )]
    pub isl_stddev: Option<f64>,
    /// Mean output tokens asked for (`output_length`; none when not given, as AIPerf then sends no
    /// max_tokens).
    #[arg(
        long = "prompt-output-tokens-mean",
        visible_aliases = ["output-tokens-mean", "osl"],
        value_name = "N",
        value_parser = one_u64
    )]
    pub osl: Option<u64>,
    /// Standard deviation of the output tokens. [default: 0]
    #[arg(
        long = "prompt-output-tokens-stddev",
        visible_aliases = ["output-tokens-stddev", "osl-stddev"],
        value_name = "X",
        value_parser = one_f64
    )]
    pub osl_stddev: Option<f64>,
    /// Conversations to generate. [default: 100]
    #[arg(long = "num-dataset-entries", visible_alias = "num-prompts", value_name = "N", value_parser = one_u64)]
    pub num_dataset_entries: Option<u64>,
    /// Conversations to generate when --num-dataset-entries is not given (AIPerf's fallback).
    #[arg(
        long = "conversation-num",
        visible_aliases = ["num-conversations", "num-sessions"],
        value_name = "N",
        value_parser = one_u64
    )]
    pub conversation_num: Option<u64>,
    /// Mean turns per conversation (normal, rounded up, at least 1). [default: 1]
    #[arg(
        long = "conversation-turn-mean",
        visible_alias = "session-turns-mean",
        value_name = "X",
        value_parser = one_f64
    )]
    pub turn_mean: Option<f64>,
    /// Standard deviation of the turns per conversation. [default: 0]
    #[arg(
        long = "conversation-turn-stddev",
        visible_alias = "session-turns-stddev",
        value_name = "X",
        value_parser = one_f64
    )]
    pub turn_stddev: Option<f64>,
    /// Mean delay before a later turn, milliseconds (0: none). [default: 0]
    #[arg(
        long = "conversation-turn-delay-mean",
        visible_alias = "session-turn-delay-mean",
        value_name = "MS",
        value_parser = one_f64
    )]
    pub delay_mean: Option<f64>,
    /// Standard deviation of the turn delays, milliseconds. [default: 0]
    #[arg(
        long = "conversation-turn-delay-stddev",
        visible_alias = "session-turn-delay-stddev",
        value_name = "MS",
        value_parser = one_f64
    )]
    pub delay_stddev: Option<f64>,
    /// Multiplies every turn delay. [default: 1]
    #[arg(
        long = "conversation-turn-delay-ratio",
        visible_alias = "session-delay-ratio",
        value_name = "X",
        value_parser = one_f64
    )]
    pub delay_ratio: Option<f64>,
    /// Distinct prefixes; each conversation's first prompt starts with one drawn at random. [default: 0]
    #[arg(
        long = "prompt-prefix-pool-size",
        visible_aliases = ["prefix-prompt-pool-size", "num-prefix-prompts"],
        value_name = "N",
        value_parser = one_u64
    )]
    pub prefix_pool_size: Option<u64>,
    /// Tokens of each pool prefix (added to --isl). [default: 0]
    #[arg(long = "prompt-prefix-length", visible_alias = "prefix-prompt-length", value_name = "N", value_parser = one_u64)]
    pub prefix_length: Option<u64>,
    /// Tokens of a system prompt shared by every conversation.
    #[arg(long = "shared-system-prompt-length", value_name = "N", value_parser = one_u64)]
    pub shared_system_length: Option<u64>,
    /// Tokens of a context prompt of each conversation's own.
    #[arg(long = "user-context-prompt-length", value_name = "N", value_parser = one_u64)]
    pub user_context_length: Option<u64>,
    /// (ISL, OSL) buckets with probabilities in percent: `ISL[|SD],OSL[|SD]:PROB;…`, the bracket
    /// form `[(ISL,OSL):PROB,…]` or JSON `{"pairs": [...]}`.
    #[arg(long = "seq-dist", visible_alias = "sequence-distribution", value_name = "DIST")]
    pub seq_dist: Option<String>,
    /// The ISL from one of AIPerf's config-file distributions, as JSON: `{"mean": M, "median": D}`
    /// (log-normal), `{"peaks": [{…, "weight": W}, …]}` (a mixture), `{"points": [{"value": V,
    /// "weight": W}, …]}`, `{"mean": M, "stddev": S}`, each with optional `min`/`max`.
    #[arg(long = "isl-distribution", value_name = "JSON")]
    pub isl_dist: Option<String>,
    /// The OSL from one of AIPerf's config-file distributions, as JSON (as --isl-distribution).
    #[arg(long = "osl-distribution", value_name = "JSON")]
    pub osl_dist: Option<String>,
    /// Uniform ISL and OSL in a window around the means: a float, or `{"input": r, "output": r}`.
    #[arg(long = "random-range-ratio", value_name = "R")]
    pub range_ratio: Option<String>,
    /// The --random-range-ratio window: vllm [floor(m(1-r)), ceil(m(1+r))], sglang [max(1, int(m r)), m].
    #[arg(long = "random-corpus-style", value_enum, value_name = "STYLE")]
    pub corpus_style: Option<CorpusStyleArg>,
    /// Prompts per request: 1 (AIPerf batches prompts for embeddings and rankings only). [default: 1]
    #[arg(
        long = "prompt-batch-size",
        visible_aliases = ["batch-size-text", "batch-size"],
        short = 'b',
        value_name = "N",
        value_parser = one_u64
    )]
    pub batch_size: Option<u64>,
}

/// A comma in a value is an AIPerf sweep list, which these options do not take.
fn no_list(text: &str) -> Result<&str, String> {
    if text.contains(',') {
        Err("one value is accepted here (a comma-separated list is an AIPerf sweep)".into())
    } else {
        Ok(text.trim())
    }
}

fn one_u64(text: &str) -> Result<u64, String> {
    no_list(text)?.parse().map_err(|_| "a whole number ≥ 0 is accepted".to_string())
}

fn one_f64(text: &str) -> Result<f64, String> {
    let v: f64 = no_list(text)?.parse().map_err(|_| "a number is accepted".to_string())?;
    if v.is_finite() { Ok(v) } else { Err("a finite number is accepted".into()) }
}

/// A distribution option's JSON value, read.
fn length_dist(option: &str, text: &str) -> Result<LengthDist> {
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| anyhow!("{option} {text:?}: accepted is a JSON value ({e})"))?;
    LengthDist::parse(&v, "").map_err(|e| anyhow!("{option} {text}: {e}"))
}

impl SyntheticFlags {
    /// Whether any option was given.
    pub fn any(&self) -> bool {
        let SyntheticFlags {
            isl,
            isl_stddev,
            osl,
            osl_stddev,
            num_dataset_entries,
            conversation_num,
            turn_mean,
            turn_stddev,
            delay_mean,
            delay_stddev,
            delay_ratio,
            prefix_pool_size,
            prefix_length,
            shared_system_length,
            user_context_length,
            seq_dist,
            isl_dist,
            osl_dist,
            range_ratio,
            corpus_style,
            batch_size,
        } = self;
        [isl, osl, num_dataset_entries, conversation_num, prefix_pool_size, prefix_length].iter().any(|v| v.is_some())
            || [isl_stddev, osl_stddev, turn_mean, turn_stddev, delay_mean, delay_stddev, delay_ratio]
                .iter()
                .any(|v| v.is_some())
            || [shared_system_length, user_context_length, batch_size].iter().any(|v| v.is_some())
            || seq_dist.is_some()
            || isl_dist.is_some()
            || osl_dist.is_some()
            || range_ratio.is_some()
            || corpus_style.is_some()
    }

    /// The workload the options ask for, validated (AIPerf's defaults for what was not given), or
    /// `None` when no option was given.
    pub fn workload(&self) -> Result<Option<SyntheticWorkload>> {
        if !self.any() {
            return Ok(None);
        }
        Ok(Some(self.build()?))
    }

    /// The workload the options ask for.
    fn build(&self) -> Result<SyntheticWorkload> {
        let d = SyntheticWorkload::default();
        let style = match self.corpus_style {
            Some(CorpusStyleArg::Sglang) => CorpusStyle::Sglang,
            Some(CorpusStyleArg::Vllm) | None => CorpusStyle::Vllm,
        };
        let w = SyntheticWorkload {
            entries: self.num_dataset_entries.or(self.conversation_num).unwrap_or(d.entries),
            isl_mean: self.isl,
            isl_stddev: self.isl_stddev.unwrap_or(d.isl_stddev),
            osl_mean: self.osl,
            osl_stddev: self.osl_stddev.unwrap_or(d.osl_stddev),
            turn_mean: self.turn_mean.unwrap_or(d.turn_mean),
            turn_stddev: self.turn_stddev.unwrap_or(d.turn_stddev),
            delay_mean: self.delay_mean.unwrap_or(d.delay_mean),
            delay_stddev: self.delay_stddev.unwrap_or(d.delay_stddev),
            delay_ratio: self.delay_ratio.unwrap_or(d.delay_ratio),
            prefix_pool_size: self.prefix_pool_size,
            prefix_length: self.prefix_length,
            shared_system_length: self.shared_system_length,
            user_context_length: self.user_context_length,
            seq_dist: self.seq_dist.as_deref().map(SeqDist::parse).transpose()?,
            isl_dist: self.isl_dist.as_deref().map(|t| length_dist("--isl-distribution", t)).transpose()?,
            osl_dist: self.osl_dist.as_deref().map(|t| length_dist("--osl-distribution", t)).transpose()?,
            range_ratio: self.range_ratio.as_deref().map(|r| RangeRatio::parse(r, style)).transpose()?,
            batch_size: self.batch_size.unwrap_or(d.batch_size),
            block_size: d.block_size,
        };
        w.validate()?;
        Ok(w)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        s: SyntheticFlags,
    }

    fn parse(args: &[&str]) -> Result<Option<SyntheticWorkload>> {
        Cli::try_parse_from(std::iter::once("x").chain(args.iter().copied()))?.s.workload()
    }

    #[test]
    fn aiperfs_spellings_reach_the_workload() {
        assert_eq!(parse(&[]).unwrap(), None);
        let w =
            parse(&["--isl", "200", "--synthetic-input-tokens-stddev", "20", "--output-tokens-mean", "50"]).unwrap();
        let w = w.unwrap();
        assert_eq!((w.isl_mean, w.isl_stddev, w.osl_mean, w.entries), (Some(200), 20.0, Some(50), 100));
        let w = parse(&["--num-sessions", "7", "--session-turns-mean", "3", "--num-prefix-prompts", "2"]);
        let w = w.unwrap().unwrap();
        assert_eq!((w.entries, w.turn_mean, w.prefix_pool_size), (7, 3.0, Some(2)));
        let w = parse(&["--num-conversations", "7", "--num-prompts", "9", "--sequence-distribution", "10,5:100"]);
        assert_eq!(w.unwrap().unwrap().entries, 9, "--num-dataset-entries wins over --conversation-num");
        let w = parse(&["--isl", "100", "--osl", "10", "--random-range-ratio", "1", "--random-corpus-style", "sglang"]);
        assert!(w.unwrap().unwrap().range_ratio.is_some());
        let w = parse(&["--isl-distribution", r#"{"mean": 9, "median": 8}"#, "--osl-distribution", "4"]);
        let w = w.unwrap().unwrap();
        assert_eq!((w.isl_dist.unwrap().mean(), w.osl_dist.unwrap().mean()), (9.0, 4.0));
    }

    #[test]
    fn errors_name_the_option_and_value() {
        let e = parse(&["--isl", "128,512"]).err().unwrap().to_string();
        assert!(e.contains("--prompt-input-tokens-mean") && e.contains("sweep"), "{e}");
        let e = parse(&["--conversation-turn-mean", "0"]).err().unwrap().to_string();
        assert_eq!(e, "--conversation-turn-mean must be at least 1, got 0");
        let e = parse(&["-b", "4"]).err().unwrap().to_string();
        assert!(e.starts_with("--prompt-batch-size must be 1 here"), "{e}");
        let e = parse(&["--isl-distribution", r#"{"mean": 9, "median": 10}"#]).err().unwrap().to_string();
        assert_eq!(e, r#"--isl-distribution {"mean": 9, "median": 10}: `median`: at most the mean (9), got 10"#);
        let e = parse(&["--isl-distribution", "{mean: 9}"]).err().unwrap().to_string();
        assert!(e.starts_with("--isl-distribution \"{mean: 9}\": accepted is a JSON value"), "{e}");
        let e = parse(&["--isl", "5", "--isl-distribution", "9"]).err().unwrap().to_string();
        assert!(e.starts_with("--isl-distribution and --isl are mutually exclusive"), "{e}");
        let e = parse(&["--random-range-ratio", "0.3"]).err().unwrap().to_string();
        assert!(e.starts_with("--random-range-ratio needs --isl"), "{e}");
    }
}
