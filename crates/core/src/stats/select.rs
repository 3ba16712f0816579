//! The values at given ranks of a list in [`f64::total_cmp`] order, found by their bits: each
//! value's place in that order as an unsigned key ([`order_key`]), the keys counted per digit of
//! 16 bits below the highest bit in which they differ, and only the digits holding a rank looked
//! into further; in time linear in the list, with no copy of it and no sort of it.

/// `v`'s place in [`f64::total_cmp`] order, as an unsigned number.
pub(crate) fn order_key(v: f64) -> u64 {
    let b = v.to_bits();
    if b >> 63 == 1 { !b } else { b | 1 << 63 }
}

/// The value of an [`order_key`].
pub(crate) fn of_order_key(k: u64) -> f64 {
    f64::from_bits(if k >> 63 == 1 { k & !(1 << 63) } else { !k })
}

/// Bits of the keys told apart per pass.
const DIGIT: u32 = 16;

/// At most this many items are sorted rather than counted by digit.
const FEW: usize = 32;

/// The values at `ranks` (ascending, each below `values.len()`) of `values` sorted by
/// [`f64::total_cmp`], bit for bit, in the order of `ranks`.
pub(crate) fn at_ranks(values: &[f64], ranks: &[u64]) -> Vec<f64> {
    at_weighted_ranks(values, ranks, |&v| (v, 1))
}

/// The values at `ranks` (ascending, each below the sum of the weights) of the list in which
/// each of `items` stands for its value `value_of` gives repeated its weight times, sorted by
/// [`f64::total_cmp`], bit for bit, in the order of `ranks`.
pub(crate) fn at_weighted_ranks<I: Copy>(
    items: &[I],
    ranks: &[u64],
    value_of: impl Fn(&I) -> (f64, u64) + Copy,
) -> Vec<f64> {
    let keyed = move |i: &I| {
        let (v, w) = value_of(i);
        (order_key(v), w)
    };
    keys_at_weighted_ranks(items, ranks, keyed).into_iter().map(of_order_key).collect()
}

/// The keys at `ranks` (ascending, each below the sum of the weights) of the list in which each
/// of `items` stands for the key `key_of` gives repeated its weight times, sorted, in the order
/// of `ranks`.
pub(crate) fn keys_at_weighted_ranks<I: Copy>(
    items: &[I],
    ranks: &[u64],
    key_of: impl Fn(&I) -> (u64, u64) + Copy,
) -> Vec<u64> {
    let (lo, hi) = items.iter().fold((u64::MAX, 0), |(lo, hi), i| {
        let k = key_of(i).0;
        (lo.min(k), hi.max(k))
    });
    let mut out = vec![0; ranks.len()];
    select(items, ranks, key_of, (lo, hi), &mut out);
    out
}

/// A digit's items counted: their weight and number, the first one's key, and whether another
/// key is among them.
#[derive(Clone, Copy)]
struct Digit {
    weight: u64,
    count: usize,
    first: u64,
    mixed: bool,
}

/// Puts in `out` the keys at `ranks` of `items` weighed (key, weight) by `weighed`, whose least
/// and greatest keys are `bounds`.
fn select<I: Copy>(
    items: &[I],
    ranks: &[u64],
    weighed: impl Fn(&I) -> (u64, u64) + Copy,
    (lo, hi): (u64, u64),
    out: &mut [u64],
) {
    if ranks.is_empty() {
        return;
    }
    if lo == hi {
        out.fill(lo);
        return;
    }
    if items.len() <= FEW {
        let mut few: Vec<(u64, u64)> = items.iter().map(weighed).collect();
        few.sort_unstable_by_key(|e| e.0);
        let (mut below, mut j) = (0u64, 0);
        for (k, w) in few {
            below += w;
            while j < ranks.len() && ranks[j] < below {
                out[j] = k;
                j += 1;
            }
        }
        // Ranks past the weights (none when called as documented) take the greatest key.
        out[j..].fill(hi);
        return;
    }
    // The keys agree above their highest differing bit: the digit is the 16 bits from it down,
    // counted from the least key's.
    let shift = (64 - (lo ^ hi).leading_zeros()).saturating_sub(DIGIT);
    let base = lo >> shift;
    let digit = |k: u64| ((k >> shift) - base) as usize;
    // Per digit: the weight and the number of its items, its first key, and whether another
    // key is in it.
    let mut per_digit = vec![Digit { weight: 0, count: 0, first: 0, mixed: false }; digit(hi) + 1];
    for i in items {
        let (k, w) = weighed(i);
        let d = &mut per_digit[digit(k)];
        if d.count == 0 {
            d.first = k;
        } else {
            d.mixed |= d.first != k;
        }
        d.weight += w;
        d.count += 1;
    }
    // The digits holding ranks: (digit, weight below it, its ranks' span in `ranks`).
    let mut wanted: Vec<(usize, u64, std::ops::Range<usize>)> = Vec::new();
    let (mut below, mut d, mut j) = (0u64, 0usize, 0usize);
    while j < ranks.len() {
        while d + 1 < per_digit.len() && ranks[j] >= below + per_digit[d].weight {
            below += per_digit[d].weight;
            d += 1;
        }
        let start = j;
        while j < ranks.len() && (ranks[j] < below + per_digit[d].weight || d + 1 == per_digit.len()) {
            j += 1;
        }
        if per_digit[d].mixed {
            wanted.push((d, below, start..j));
        } else {
            // A digit of one key is its ranks' key.
            out[start..j].fill(per_digit[d].first);
        }
    }
    // Each wanted digit's items gathered in one pass, with their bounds.
    const NONE: u32 = u32::MAX;
    let mut slot = vec![NONE; per_digit.len()];
    let mut parts: Vec<(Vec<I>, u64, u64)> = Vec::with_capacity(wanted.len());
    for (s, (d, ..)) in wanted.iter().enumerate() {
        slot[*d] = s as u32;
        parts.push((Vec::with_capacity(per_digit[*d].count), u64::MAX, 0));
    }
    if !parts.is_empty() {
        for i in items {
            let k = weighed(i).0;
            let s = slot[digit(k)];
            if s != NONE {
                let p = &mut parts[s as usize];
                p.0.push(*i);
                p.1 = p.1.min(k);
                p.2 = p.2.max(k);
            }
        }
    }
    for ((_, below, span), (part, lo, hi)) in wanted.into_iter().zip(parts) {
        let inner: Vec<u64> = ranks[span.clone()].iter().map(|r| r - below).collect();
        select(&part, &inner, weighed, (lo, hi), &mut out[span]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn keys_follow_total_order() {
        let vals = [f64::NEG_INFINITY, -1e300, -1.0, -0.0, 0.0, 5e-324, 1.0, f64::MAX, f64::INFINITY];
        for w in vals.windows(2) {
            assert!(order_key(w[0]) < order_key(w[1]), "{w:?}");
        }
        for v in vals {
            assert_eq!(of_order_key(order_key(v)).to_bits(), v.to_bits());
        }
        assert_eq!(of_order_key(order_key(f64::NAN)).to_bits(), f64::NAN.to_bits());
    }

    fn value() -> impl Strategy<Value = f64> {
        prop_oneof![
            4 => (0u8..12).prop_map(f64::from),
            2 => -1e6f64..1e6,
            2 => (0u32..5000).prop_map(|x| 1.0 + f64::from(x) * f64::EPSILON),
            1 => Just(f64::NAN),
            1 => Just(-f64::NAN),
            1 => Just(-0.0),
            1 => Just(f64::INFINITY),
            1 => Just(f64::NEG_INFINITY),
        ]
    }

    proptest! {
        /// Every rank of a list, and any few, selected by their bits are the sorted list's, bit
        /// for bit (keys differing in their low bits only, in their high bits, NaNs of both signs).
        #[test]
        fn ranks_selected_are_those_of_the_sorted_list(
            values in proptest::collection::vec(value(), 1..600),
            picks in proptest::collection::vec(0.0f64..1.0, 0..24),
        ) {
            let mut sorted = values.clone();
            sorted.sort_unstable_by(f64::total_cmp);
            let n = values.len() as u64;
            let mut ranks: Vec<u64> = picks.iter().map(|f| (f * n as f64) as u64).chain([0, n - 1]).collect();
            ranks.sort_unstable();
            let got = at_ranks(&values, &ranks);
            let want: Vec<u64> = ranks.iter().map(|&r| sorted[r as usize].to_bits()).collect();
            prop_assert_eq!(got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), want);
            let all: Vec<u64> = (0..n).collect();
            let got = at_ranks(&values, &all);
            prop_assert_eq!(got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), sorted.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
        }

        /// Weighted items select the ranks of the list written out.
        #[test]
        fn weighted_ranks_are_those_of_the_list_written_out(
            items in proptest::collection::vec((value(), prop_oneof![3 => 1u64..4, 1 => 1u64..500]), 1..200),
            picks in proptest::collection::vec(0.0f64..1.0, 0..24),
        ) {
            let mut out: Vec<f64> = items.iter().flat_map(|&(v, w)| std::iter::repeat_n(v, w as usize)).collect();
            out.sort_unstable_by(f64::total_cmp);
            let n = out.len() as u64;
            let mut ranks: Vec<u64> = picks.iter().map(|f| (f * n as f64) as u64).chain([0, n - 1]).collect();
            ranks.sort_unstable();
            let got = at_weighted_ranks(&items, &ranks, |&i| i);
            let want: Vec<u64> = ranks.iter().map(|&r| out[r as usize].to_bits()).collect();
            prop_assert_eq!(got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), want);
        }
    }
}
