//! The values of each metric an [`super::Aggregate`] keeps: one list per metric, a twin's
//! values counted instead of copied, whole numbers kept as `u32`.

use std::borrow::Cow;
use std::sync::OnceLock;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::results::metrics::Metric;

/// The values of each metric, one list per metric, found by the metric's place in the enum. A
/// metric with a twin (see [`twin`]) keeps no list of its own while its values are the first ones
/// of its twin's, bit for bit (a server reporting the counts the client made): it only counts
/// them. A list holds whole numbers as `u32` until a value that is not one comes (token counts
/// stay so: half the memory).
#[derive(Clone, Debug)]
pub(super) struct Columns {
    pub(super) lists: Vec<List>,
    /// Per metric: its twin's place and how many of the twin's values are its own, while it
    /// has no list of its own.
    shadowed: Vec<Option<(usize, usize)>>,
    /// Per metric: its values as `f64`, made when asked for as a slice ([`Columns::slice`]) and
    /// dropped when a value is added.
    made: Vec<OnceLock<Vec<f64>>>,
    /// Values a list is made room for when it takes its first ([`Columns::expect`]).
    expected: usize,
}

/// One metric's values: whole numbers below 2^32 kept as such, else every value as `f64`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) enum List {
    Whole(Vec<u32>),
    Real(Vec<f64>),
}

impl Default for List {
    fn default() -> List {
        List::Whole(Vec::new())
    }
}

/// `v` as a `u32` when that is exactly `v` (not for -0.0 or NaN).
fn whole(v: f64) -> Option<u32> {
    let n = v as u32;
    (f64::from(n).to_bits() == v.to_bits()).then_some(n)
}

impl List {
    fn len(&self) -> usize {
        match self {
            List::Whole(w) => w.len(),
            List::Real(r) => r.len(),
        }
    }

    fn get(&self, i: usize) -> Option<f64> {
        match self {
            List::Whole(w) => w.get(i).map(|&n| f64::from(n)),
            List::Real(r) => r.get(i).copied(),
        }
    }

    /// The first `n` values.
    fn prefix(&self, n: usize) -> Cow<'_, [f64]> {
        match self {
            List::Whole(w) => Cow::Owned(w[..n.min(w.len())].iter().map(|&n| f64::from(n)).collect()),
            List::Real(r) => Cow::Borrowed(&r[..n.min(r.len())]),
        }
    }

    fn push(&mut self, v: f64, expected: usize) {
        match self {
            List::Whole(w) => match whole(v) {
                Some(n) => {
                    if w.capacity() == 0 {
                        w.reserve(expected);
                    }
                    w.push(n);
                }
                None => {
                    let mut r: Vec<f64> = Vec::with_capacity(expected.max(w.len() + 1));
                    r.extend(w.iter().map(|&n| f64::from(n)));
                    r.push(v);
                    *self = List::Real(r);
                }
            },
            List::Real(r) => r.push(v),
        }
    }
}

/// The metric whose values a metric's often are (see [`Columns`]); its values are added first.
fn twin(metric: Metric) -> Option<Metric> {
    match metric {
        Metric::UsageCompletionTokens => Some(Metric::OutputSequenceLength),
        Metric::ServerInputSequenceLength => Some(Metric::InputSequenceLength),
        _ => None,
    }
}

impl Default for Columns {
    fn default() -> Columns {
        let n = Metric::ALL.len();
        let mut shadowed = vec![None; n];
        for m in Metric::ALL {
            if let Some(t) = twin(m) {
                shadowed[m as usize] = Some((t as usize, 0));
            }
        }
        Columns {
            lists: vec![List::default(); n],
            shadowed,
            made: (0..n).map(|_| OnceLock::new()).collect(),
            expected: 0,
        }
    }
}

/// A [`Columns`] as it crosses: its lists, twins and expected length (its made slices are made
/// again when asked for).
#[derive(Serialize, Deserialize)]
struct Wire<L> {
    lists: L,
    shadowed: Vec<Option<(usize, usize)>>,
    expected: usize,
}

impl Serialize for Columns {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Wire { lists: &self.lists, shadowed: self.shadowed.clone(), expected: self.expected }.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Columns {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Columns, D::Error> {
        let Wire { lists, shadowed, expected } = Wire::<Vec<List>>::deserialize(d)?;
        let fits = shadowed.len() == lists.len()
            && shadowed.iter().flatten().all(|&(t, n)| lists.get(t).is_some_and(|l: &List| n <= l.len()));
        if !fits {
            return Err(serde::de::Error::custom("a metric's twin is not among the lists"));
        }
        let made = (0..lists.len()).map(|_| OnceLock::new()).collect();
        Ok(Columns { lists, shadowed, made, expected })
    }
}

impl PartialEq for Columns {
    fn eq(&self, other: &Columns) -> bool {
        (0..self.lists.len().max(other.lists.len())).all(|i| self.at(i) == other.at(i))
    }
}

impl Columns {
    pub(super) fn get(&self, metric: Metric) -> Cow<'_, [f64]> {
        self.at(metric as usize)
    }

    /// The values of `metric` as a slice (made once when kept as whole numbers).
    pub(super) fn slice(&self, metric: Metric) -> &[f64] {
        let i = metric as usize;
        match self.at(i) {
            Cow::Borrowed(v) => v,
            Cow::Owned(v) => match self.made.get(i) {
                Some(made) => made.get_or_init(|| v),
                None => &[],
            },
        }
    }

    pub(super) fn at(&self, i: usize) -> Cow<'_, [f64]> {
        match self.shadowed.get(i).copied().flatten() {
            Some((t, n)) => self.lists[t].prefix(n),
            None => self.lists.get(i).map_or(Cow::Borrowed(&[]), |l| l.prefix(usize::MAX)),
        }
    }

    /// Whether `a` and `b` hold the same values, bit for bit, where that is cheap to tell: the
    /// same list (a twin counted, not copied), or two lists kept alike compared; `false` else.
    pub(super) fn same(&self, a: Metric, b: Metric) -> bool {
        let place = |m: Metric| {
            let i = m as usize;
            match self.shadowed.get(i).copied().flatten() {
                Some((t, n)) => (t, n),
                None => (i, self.lists.get(i).map_or(0, List::len)),
            }
        };
        let ((a, n), (b, m)) = (place(a), place(b));
        if n != m {
            return false;
        }
        if a == b {
            return true;
        }
        match (self.lists.get(a), self.lists.get(b)) {
            (Some(List::Whole(x)), Some(List::Whole(y))) => x[..n] == y[..n],
            (Some(List::Real(x)), Some(List::Real(y))) => {
                x[..n].iter().zip(&y[..n]).all(|(p, q)| p.to_bits() == q.to_bits())
            }
            _ => false,
        }
    }

    pub(super) fn push(&mut self, metric: Metric, value: f64) {
        self.push_at(metric as usize, value);
    }

    fn push_at(&mut self, i: usize, value: f64) {
        if i >= self.lists.len() {
            self.lists.resize_with(i + 1, List::default);
            self.shadowed.resize(i + 1, None);
            self.made.resize_with(i + 1, OnceLock::new);
        }
        self.made[i].take();
        if let Some((t, n)) = self.shadowed[i] {
            if self.lists[t].get(n).is_some_and(|v| v.to_bits() == value.to_bits()) {
                self.shadowed[i] = Some((t, n + 1));
                return;
            }
            let own = match &self.lists[t] {
                List::Whole(w) => List::Whole(w[..n].to_vec()),
                List::Real(r) => List::Real(r[..n].to_vec()),
            };
            self.lists[i] = own;
            self.shadowed[i] = None;
        }
        self.lists[i].push(value, self.expected);
    }

    /// Makes each list room for `values` when it takes its first value (a list of a value per
    /// request grows once, not by doubling).
    pub(super) fn expect(&mut self, values: usize) {
        self.expected = values;
    }

    /// Adds `other`'s values of metric `i` after these, as pushing them one by one would.
    pub(super) fn extend_from(&mut self, i: usize, other: &Columns) {
        let own = |c: &Columns| i < c.lists.len() && c.shadowed[i].is_none();
        if !(own(self) && own(other)) {
            for v in other.at(i).iter() {
                self.push_at(i, *v);
            }
            return;
        }
        self.made[i].take();
        let list = &mut self.lists[i];
        match (&mut *list, &other.lists[i]) {
            (List::Whole(a), List::Whole(b)) => a.extend_from_slice(b),
            (List::Real(a), List::Whole(b)) => a.extend(b.iter().map(|&n| f64::from(n))),
            (List::Real(a), List::Real(b)) => a.extend_from_slice(b),
            // The values in turn: a list copied from a twin kept as `f64` may hold whole
            // numbers only, which stay `u32` here.
            (List::Whole(_), List::Real(b)) => {
                for &v in b {
                    list.push(v, self.expected);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Which kind each list is, and whether each metric is counted on its twin.
    fn shape(c: &Columns) -> Vec<(bool, bool)> {
        c.lists.iter().zip(&c.shadowed).map(|(l, s)| (matches!(l, List::Whole(_)), s.is_some())).collect()
    }

    proptest! {
        /// Columns extended by another's hold every value pushed in turn, and are the columns
        /// of pushing the other's values one by one: lists of the same kind, twins counted alike.
        #[test]
        fn extended_columns_are_the_values_pushed_one_by_one(
            values in proptest::collection::vec((0usize..4, 0u8..4, any::<bool>()), 0..60),
            split in 0usize..60,
        ) {
            let metrics = [
                Metric::OutputSequenceLength,
                Metric::UsageCompletionTokens,
                Metric::TimeToFirstToken,
                Metric::InputSequenceLength,
            ];
            let value = |v: u8, real: bool| if real { f64::from(v) + 0.5 } else { f64::from(v) };
            let (mut whole, mut a, mut b) = (Columns::default(), Columns::default(), Columns::default());
            for (k, &(m, v, real)) in values.iter().enumerate() {
                let (m, v) = (metrics[m], value(v, real));
                whole.push(m, v);
                if k < split { a.push(m, v) } else { b.push(m, v) }
            }
            let mut one_by_one = a.clone();
            for i in 0..b.lists.len() {
                a.extend_from(i, &b);
                for &v in b.at(i).iter() {
                    one_by_one.push_at(i, v);
                }
            }
            prop_assert!(a == whole);
            prop_assert_eq!(shape(&a), shape(&one_by_one));
        }
    }

    #[test]
    fn lists_of_the_same_values_are_told_apart_from_others() {
        let mut c = Columns::default();
        for v in [1.0, 2.0, 3.0] {
            c.push(Metric::SendLateness, v);
            c.push(Metric::TimeToFirstToken, v);
        }
        c.push(Metric::TimeToFirstToken, 4.0);
        // Lengths differ.
        assert!(!c.same(Metric::SendLateness, Metric::TimeToFirstToken));
        c.push(Metric::SendLateness, 4.0);
        assert!(c.same(Metric::SendLateness, Metric::TimeToFirstToken));
        // Real lists compare bit for bit: 0.0 and -0.0 differ.
        for (m, v) in [(Metric::RequestLatency, 0.5), (Metric::EffectiveLatency, 0.5), (Metric::RequestLatency, 0.0)] {
            c.push(m, v);
        }
        c.push(Metric::EffectiveLatency, -0.0);
        assert!(!c.same(Metric::RequestLatency, Metric::EffectiveLatency));
        assert!(c.same(Metric::DecodeDuration, Metric::InterTokenLatency));
        // A twin counted, not copied, is its twin's list while it has all its values.
        for v in [3.0, 0.0] {
            c.push(Metric::InputSequenceLength, v);
        }
        c.push(Metric::ServerInputSequenceLength, 3.0);
        assert!(!c.same(Metric::ServerInputSequenceLength, Metric::InputSequenceLength));
        c.push(Metric::ServerInputSequenceLength, 0.0);
        assert!(c.same(Metric::ServerInputSequenceLength, Metric::InputSequenceLength));
    }

    #[test]
    fn whole_numbers_stay_u32_until_a_value_is_not_one() {
        let mut c = Columns::default();
        for v in [3.0, 0.0, 4_294_967_295.0] {
            c.push(Metric::InputSequenceLength, v);
        }
        assert!(matches!(c.lists[Metric::InputSequenceLength as usize], List::Whole(_)));
        // A twin's equal values are counted, not kept.
        for v in [3.0, 0.0] {
            c.push(Metric::ServerInputSequenceLength, v);
        }
        assert_eq!(c.get(Metric::ServerInputSequenceLength).as_ref(), [3.0, 0.0]);
        for (v, bits) in [(-0.0, (-0.0f64).to_bits()), (4_294_967_296.0, 4_294_967_296.0f64.to_bits())] {
            let mut one = Columns::default();
            one.push(Metric::CachedTokens, 1.0);
            one.push(Metric::CachedTokens, v);
            assert!(matches!(one.lists[Metric::CachedTokens as usize], List::Real(_)));
            assert_eq!(one.get(Metric::CachedTokens)[1].to_bits(), bits);
        }
        c.push(Metric::InputSequenceLength, 2.5);
        c.push(Metric::InputSequenceLength, f64::NAN);
        let all = c.get(Metric::InputSequenceLength);
        assert_eq!(all[..4], [3.0, 0.0, 4_294_967_295.0, 2.5]);
        assert!(all[4].is_nan());
        assert_eq!(c.get(Metric::ServerInputSequenceLength).as_ref(), [3.0, 0.0]);
    }
}
