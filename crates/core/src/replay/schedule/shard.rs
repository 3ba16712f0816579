//! A deterministic part of a schedule's session runs (`--shard K/N`).

/// A deterministic part of a schedule: shard `index` of `count` sends the session runs of the
/// sessions whose index is `index` modulo `count`, at the times of the whole run. A session's
/// turns never cross shards (prefix reuse and turn order are kept), the shards are disjoint and
/// together they are the whole run; nothing is re-timed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// 0-based, below `count` (Kubernetes numbers the pods of an Indexed Job so).
    pub index: u32,
    /// At least 1.
    pub count: u32,
}

impl Default for Shard {
    fn default() -> Self {
        Shard::WHOLE
    }
}

/// An impossible shard.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ShardError {
    #[error("'{0}' is not of the form K/N (e.g. 0/4)")]
    Syntax(String),
    #[error("shard {index}/{count}: K must be from 0 to N-1 and N at least 1")]
    OutOfRange { index: u64, count: u64 },
}

impl Shard {
    /// The whole run (shard 0 of 1).
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// A shard, checked: `index < count`.
    pub fn new(index: u64, count: u64) -> Result<Shard, ShardError> {
        match (u32::try_from(index), u32::try_from(count)) {
            (Ok(i), Ok(c)) if c >= 1 && i < c => Ok(Shard { index: i, count: c }),
            _ => Err(ShardError::OutOfRange { index, count }),
        }
    }

    /// Parses `K/N`.
    pub fn parse(s: &str) -> Result<Shard, ShardError> {
        let syntax = || ShardError::Syntax(s.to_owned());
        let (k, n) = s.trim().split_once('/').ok_or_else(syntax)?;
        let k: u64 = k.trim().parse().map_err(|_| syntax())?;
        let n: u64 = n.trim().parse().map_err(|_| syntax())?;
        Shard::new(k, n)
    }

    /// Whether this is the whole run.
    pub fn is_whole(self) -> bool {
        self.count == 1
    }

    /// Whether session `session` (an index into
    /// [`Schedule::sessions`](super::Schedule::sessions)) belongs to this shard.
    pub fn has(self, session: u32) -> bool {
        session % self.count == self.index
    }

    /// This shard's part of a total (a concurrency ceiling, a warm-up count) divided as evenly
    /// as possible: the first `total % count` shards get one more.
    pub fn part_of(self, total: u64) -> u64 {
        let (n, k) = (u64::from(self.count), u64::from(self.index));
        total / n + u64::from(k < total % n)
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_divide_totals() {
        assert_eq!(Shard::parse("2/3"), Ok(Shard { index: 2, count: 3 }));
        assert_eq!(Shard::parse(" 0 / 1 "), Ok(Shard::WHOLE));
        assert_eq!(Shard::parse("3/3"), Err(ShardError::OutOfRange { index: 3, count: 3 }));
        assert_eq!(Shard::parse("0/0"), Err(ShardError::OutOfRange { index: 0, count: 0 }));
        assert!(matches!(Shard::parse("1-3"), Err(ShardError::Syntax(_))));
        assert!(matches!(Shard::parse("-1/3"), Err(ShardError::Syntax(_))));
        assert!(matches!(Shard::parse("1/99999999999"), Err(ShardError::OutOfRange { .. })));
        let parts: Vec<u64> = (0..4).map(|k| Shard { index: k, count: 4 }.part_of(10)).collect();
        assert_eq!(parts, vec![3, 3, 2, 2]);
        assert_eq!(Shard { index: 3, count: 4 }.to_string(), "3/4");
    }
}
