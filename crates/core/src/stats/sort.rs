//! Sorting a list of values in `f64::total_cmp`'s order, long ones by a radix sort.

/// Sorts a copy of the values (NaN last) for percentile queries.
pub fn sorted(values: &[f64]) -> Vec<f64> {
    if values.len() >= RADIX_FROM {
        return radix_sorted(values);
    }
    let mut v = values.to_vec();
    v.sort_unstable_by(f64::total_cmp);
    v
}

/// Lists this long are sorted by [`radix_sorted`].
const RADIX_FROM: usize = 1 << 14;

/// The values in `f64::total_cmp`'s order by a least-significant-digit radix sort of their bits:
/// the order is total and equal keys are equal bits, so the result is the comparison sort's bit
/// for bit. Digits of 11 bits; a digit every value shares is skipped (the low bits of whole
/// numbers).
fn radix_sorted(values: &[f64]) -> Vec<f64> {
    const BITS: u32 = 11;
    const PASSES: usize = 64usize.div_ceil(BITS as usize);
    // Unsigned keys in total order: negative numbers' bits all flipped, the sign set on the others.
    let key = |v: f64| {
        let b = v.to_bits();
        b ^ ((((b as i64) >> 63) as u64) | (1 << 63))
    };
    let mut keys: Vec<u64> = values.iter().map(|&v| key(v)).collect();
    let mut counts = vec![[0usize; 1 << BITS]; PASSES];
    for &k in &keys {
        for (pass, count) in counts.iter_mut().enumerate() {
            count[((k >> (pass as u32 * BITS)) & ((1 << BITS) - 1)) as usize] += 1;
        }
    }
    let mut spare = vec![0u64; keys.len()];
    for (pass, count) in counts.iter_mut().enumerate() {
        if count.contains(&keys.len()) {
            continue;
        }
        let mut at = 0;
        for c in count.iter_mut() {
            (*c, at) = (at, at + *c);
        }
        let shift = pass as u32 * BITS;
        for &k in &keys {
            let digit = &mut count[((k >> shift) & ((1 << BITS) - 1)) as usize];
            spare[*digit] = k;
            *digit += 1;
        }
        std::mem::swap(&mut keys, &mut spare);
    }
    keys.into_iter().map(|k| f64::from_bits(if k >> 63 == 1 { k ^ (1 << 63) } else { !k })).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn the_radix_sort_is_the_comparison_sort_bit_for_bit(
            v in proptest::collection::vec(prop_oneof![
                4 => -1e6..1e6f64,
                4 => (0u32..5000).prop_map(f64::from),
                1 => Just(0.0), 1 => Just(-0.0), 1 => Just(f64::NAN), 1 => Just(-f64::NAN),
                1 => Just(f64::INFINITY), 1 => Just(f64::NEG_INFINITY), 1 => Just(f64::MIN_POSITIVE / 2.0),
            ], 0..3000)
        ) {
            let mut expected = v.clone();
            expected.sort_unstable_by(f64::total_cmp);
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            prop_assert_eq!(bits(&radix_sorted(&v)), bits(&expected));
        }
    }

    #[test]
    fn long_lists_are_sorted_as_short_ones() {
        // Whole numbers (their low digits skipped) and fractions, past the radix sort's length.
        let v: Vec<f64> = (0..RADIX_FROM as u64 * 3)
            .map(|i| {
                let x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40;
                if i % 3 == 0 { x as f64 } else { (x as f64 / 7.0) - 1000.0 }
            })
            .collect();
        let mut expected = v.clone();
        expected.sort_unstable_by(f64::total_cmp);
        assert_eq!(
            sorted(&v).iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            expected.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
    }
}
