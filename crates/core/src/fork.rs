//! Independent parts of one computation, run by whoever calls the core: the core starts no
//! thread (it runs in the browser's worker too), so it hands its parts to a [`Fork`], which runs
//! them one after the other ([`InTurn`]) or, natively, on several threads at once. The results
//! are the same either way: each part computes alone and they are given back in the parts' order.

/// One part: a computation that can run on another thread.
pub type Part<'a, T> = Box<dyn FnOnce() -> T + Send + 'a>;

/// Runs parts, in any order or at once, and gives their results in the parts' order. Parts
/// listed first are started first: list the longest first.
pub trait Fork {
    fn run<'a, T: Send + 'a>(&self, parts: Vec<Part<'a, T>>) -> Vec<T>;

    /// Whether parts run at once (then the longest go first), else in turn (then a part's
    /// memory can be let go before the next starts).
    fn at_once(&self) -> bool {
        self.width() > 1
    }

    /// How many parts run at once (1: in turn), to split a computation into as many.
    fn width(&self) -> usize {
        1
    }
}

/// Each part in turn, on the caller's thread: at most one part's memory held at a time.
#[derive(Clone, Copy, Debug, Default)]
pub struct InTurn;

impl Fork for InTurn {
    fn run<'a, T: Send + 'a>(&self, parts: Vec<Part<'a, T>>) -> Vec<T> {
        parts.into_iter().map(|p| p()).collect()
    }
}

/// Runs parts last first, as threads might finish them; `at_once`: as if at once (four at a time).
#[cfg(test)]
pub(crate) struct LastFirst {
    pub(crate) at_once: bool,
}

#[cfg(test)]
impl Fork for LastFirst {
    fn run<'a, T: Send + 'a>(&self, parts: Vec<Part<'a, T>>) -> Vec<T> {
        let mut done: Vec<T> = parts.into_iter().rev().map(|p| p()).collect();
        done.reverse();
        done
    }

    fn width(&self) -> usize {
        if self.at_once { 4 } else { 1 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_turn_gives_results_in_the_parts_order() {
        let parts: Vec<Part<'_, u32>> = (0..5u32).map(|i| Box::new(move || i * i) as Part<'_, u32>).collect();
        assert_eq!(InTurn.run(parts), vec![0, 1, 4, 9, 16]);
    }
}
