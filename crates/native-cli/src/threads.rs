//! The core's parts ([`aiperf_core::fork`]) run on this machine's cores: as many threads as
//! cores (at most one per part), each taking the next part not started, the caller's thread one
//! of them.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use aiperf_core::fork::{Fork, Part};

/// Runs parts on up to every core.
#[derive(Clone, Copy, Debug, Default)]
pub struct Threads;

impl Fork for Threads {
    fn run<'a, T: Send + 'a>(&self, parts: Vec<Part<'a, T>>) -> Vec<T> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let workers = cores.min(parts.len());
        if workers <= 1 {
            return parts.into_iter().map(|p| p()).collect();
        }
        let n = parts.len();
        let parts: Vec<Mutex<Option<Part<'a, T>>>> = parts.into_iter().map(|p| Mutex::new(Some(p))).collect();
        let results: Vec<Mutex<Option<T>>> = (0..n).map(|_| Mutex::new(None)).collect();
        let next = AtomicUsize::new(0);
        let work = || {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(slot) = parts.get(i) else { break };
                let part = slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
                if let Some(part) = part {
                    let value = part();
                    *results[i].lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(value);
                }
            }
        };
        std::thread::scope(|s| {
            let helpers: Vec<_> = (1..workers).map(|_| std::thread::Builder::new().spawn_scoped(s, work)).collect();
            work();
            for h in helpers.into_iter().flatten() {
                if let Err(panic) = h.join() {
                    std::panic::resume_unwind(panic);
                }
            }
        });
        // Every part ran (a part that panicked raised its panic above).
        results.into_iter().filter_map(|r| r.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner)).collect()
    }

    fn width(&self) -> usize {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_part_runs_once_and_results_come_in_the_parts_order() {
        let ran = AtomicUsize::new(0);
        let parts: Vec<Part<'_, usize>> = (0..40)
            .map(|i| {
                let ran = &ran;
                Box::new(move || {
                    ran.fetch_add(1, Ordering::Relaxed);
                    (0..=i).sum::<usize>()
                }) as Part<'_, usize>
            })
            .collect();
        let got = Threads.run(parts);
        assert_eq!(ran.load(Ordering::Relaxed), 40);
        assert_eq!(got, (0..40).map(|i| i * (i + 1) / 2).collect::<Vec<_>>());
        assert!(Threads.run(Vec::<Part<'_, u8>>::new()).is_empty());
    }

    #[test]
    fn a_part_that_panics_raises_its_panic_in_the_caller() {
        let caught = std::panic::catch_unwind(|| {
            let parts: Vec<Part<'_, u8>> =
                vec![Box::new(|| 1), Box::new(|| panic!("part two failed")), Box::new(|| 3), Box::new(|| 4)];
            Threads.run(parts)
        });
        let payload = caught.err().map(|p| p.downcast_ref::<&str>().map(|s| s.to_string()));
        assert_eq!(payload, Some(Some("part two failed".to_owned())));
    }
}
