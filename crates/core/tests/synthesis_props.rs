//! Property tests of synthesis: every output row with ids keeps `(n-1)*bs < input_length <= n*bs`
//! for random valid traces and random parameters.

#![allow(clippy::unwrap_used)] // test code: a panic is a failed test

use aiperf_core::synthesis::{
    GenerateParams, SynthesisError, SynthesisSettings, TransformParams, generate, synthesize_direct, transform,
};
use aiperf_core::trace::write_trace;
use aiperf_core::trace::{Input, Row, Trace};
use proptest::prelude::*;

/// A random trace obeying the invariant; ids come from a small pool so prefixes are shared.
fn arb_trace(bs: u32) -> impl Strategy<Value = Trace> {
    let row = (proptest::collection::vec(0u64..40, 0..10), 1u32..=bs, 1u64..2000);
    proptest::collection::vec(row, 1..40).prop_map(move |rows| {
        rows.into_iter()
            .map(|(ids, fill, osl)| {
                let n = ids.len() as i64;
                let isl = if n == 0 { i64::from(fill) } else { (n - 1) * i64::from(bs) + i64::from(fill) };
                let mut row = Row::new(Input::Length(isl));
                row.output_length = Some(osl);
                (row, ids)
            })
            .collect()
    })
}

fn arb_params(bs: u32) -> impl Strategy<Value = TransformParams> {
    (
        prop_oneof![Just(1.0), 0.05f64..5.0],
        prop_oneof![Just(1.0), 0.05f64..5.0],
        1u32..5,
        prop_oneof![Just(1.0), 0.05f64..5.0],
        prop_oneof![Just(1.0), 0.0f64..3.0],
        proptest::option::of(1u64..5000),
        proptest::option::of(1u64..3000),
        any::<u64>(),
    )
        .prop_map(move |(speedup_ratio, plm, prm, pml, olm, max_isl, max_osl, seed)| TransformParams {
            speedup_ratio,
            prefix_len_multiplier: plm,
            prefix_root_multiplier: prm,
            prompt_len_multiplier: pml,
            output_len_multiplier: olm,
            max_isl,
            max_osl,
            block_size: bs,
            seed,
        })
}

fn check_invariant(t: &Trace, params: &TransformParams) -> Result<(), TestCaseError> {
    let bs = i64::from(params.block_size);
    for (row, ids) in t.iter() {
        let isl = row.input_length().unwrap_or(0);
        if !ids.is_empty() {
            let n = ids.len() as i64;
            prop_assert!((n - 1) * bs < isl && isl <= n * bs, "{isl} tokens with {n} ids of {bs}");
        }
        if let Some(max) = params.max_isl {
            prop_assert!(isl as u64 <= max);
        }
        if let (Some(max), Some(osl)) = (params.max_osl, row.output_length) {
            prop_assert!(osl <= max);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn transform_keeps_the_block_invariant(
        (trace, params) in (1u32..64).prop_flat_map(|bs| (arb_trace(bs), arb_params(bs)))
    ) {
        let direct = synthesize_direct(&trace, &params).unwrap();
        prop_assert_eq!(direct.len(), trace.len());
        check_invariant(&direct, &params)?;
        let loader = transform(&trace, &params).unwrap();
        check_invariant(&loader, &params)?;
        // Same seed, same output.
        prop_assert_eq!(synthesize_direct(&trace, &params).unwrap(), direct);
    }

    #[test]
    fn generate_keeps_the_block_invariant_and_is_reproducible(
        (trace, t) in (1u32..64).prop_flat_map(|bs| (arb_trace(bs), arb_params(bs))),
        n in 1usize..300,
    ) {
        // Rows without ids teach nothing; skip traces that have none with ids.
        prop_assume!(trace.iter().any(|(_, ids)| !ids.is_empty()));
        let params = GenerateParams { num_requests: n, ..SynthesisSettings::from(&t).params };
        let out = match generate(&trace, &params) {
            Ok(out) => out,
            // A max ISL below every learnable length may reject all samples: an error, not a hang.
            Err(SynthesisError::FilterRejectsEverything { .. }) => return Ok(()),
            Err(e) => return Err(TestCaseError::fail(e.to_string())),
        };
        prop_assert_eq!(out.len(), n);
        check_invariant(&out, &t)?;
        prop_assert_eq!(write_trace(&generate(&trace, &params).unwrap()), write_trace(&out));
    }
}
