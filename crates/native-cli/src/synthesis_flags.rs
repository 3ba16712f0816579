//! The `--synthesis-*` options (AIPerf's names), shared by `synthesize-trace` and `profile`.

use aiperf_core::synthesis::TransformParams;

#[derive(Debug, Clone, clap::Args)]
pub struct SynthesisFlags {
    /// Synthesis: divide timestamps (generative mode: gaps between arrivals) by this; 2 = twice as fast.
    #[arg(long, default_value_t = 1.0)]
    pub synthesis_speedup_ratio: f64,
    /// Synthesis: scale the shared prefix of every request.
    #[arg(long, default_value_t = 1.0)]
    pub synthesis_prefix_len_multiplier: f64,
    /// Synthesis: spread requests over this many disjoint copies of the prefix trees.
    #[arg(long, default_value_t = 1)]
    pub synthesis_prefix_root_multiplier: u32,
    /// Synthesis: scale the unique (non-shared) part of every prompt.
    #[arg(long, default_value_t = 1.0)]
    pub synthesis_prompt_len_multiplier: f64,
    /// Synthesis: scale output lengths.
    #[arg(long, default_value_t = 1.0)]
    pub synthesis_output_len_multiplier: f64,
    /// Drop requests longer than this (tokens) first and cap synthesized ones to it
    /// (generative mode: resample longer requests).
    #[arg(long)]
    pub synthesis_max_isl: Option<u64>,
    /// Cap output lengths to this (tokens).
    #[arg(long)]
    pub synthesis_max_osl: Option<u64>,
}

impl SynthesisFlags {
    /// The transform these flags ask for (validated by the caller through `TransformParams::validate`).
    pub fn transform_params(&self, block_size: u32, seed: u64) -> TransformParams {
        TransformParams {
            speedup_ratio: self.synthesis_speedup_ratio,
            prefix_len_multiplier: self.synthesis_prefix_len_multiplier,
            prefix_root_multiplier: self.synthesis_prefix_root_multiplier,
            prompt_len_multiplier: self.synthesis_prompt_len_multiplier,
            output_len_multiplier: self.synthesis_output_len_multiplier,
            max_isl: self.synthesis_max_isl,
            max_osl: self.synthesis_max_osl,
            block_size,
            seed,
        }
    }
}
