//! The `--slots` load model: at most N requests served at once, the others in a FIFO queue.

use std::sync::Arc;

/// The `--slots` load model: a FIFO queue in front of N slots.
#[derive(Clone, Debug)]
pub struct Slots(Arc<tokio::sync::Semaphore>);

impl Slots {
    pub fn new(n: u32) -> Slots {
        Slots(Arc::new(tokio::sync::Semaphore::new(n as usize)))
    }

    /// Waits for a free slot, first come first served; the slot is held until the permit drops
    /// (also when the client goes away while waiting or being served).
    pub async fn take(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        self.0.clone().acquire_owned().await.ok()
    }
}

/// Requests per second that `slots` slots serve when every request asks for `tokens` tokens:
/// each holds a slot for `ttft + (tokens − 1)·itl`.
pub fn capacity(slots: u32, ttft_ms: f64, itl_ms: f64, tokens: u64) -> f64 {
    let hold_s = (ttft_ms + itl_ms * tokens.saturating_sub(1) as f64) / 1e3;
    if hold_s > 0.0 { f64::from(slots) / hold_s } else { f64::INFINITY }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::Duration;

    #[test]
    fn capacity_is_slots_over_the_time_a_request_holds_one() {
        // 50 ms + 31 gaps of 5 ms = 205 ms per request: 8 slots serve 39.0 requests per second.
        assert!((capacity(8, 50.0, 5.0, 32) - 8.0 / 0.205).abs() < 1e-9);
        assert_eq!(capacity(1, 100.0, 0.0, 1), 10.0);
        assert_eq!(capacity(4, 0.0, 0.0, 10), f64::INFINITY);
    }

    #[test]
    fn slots_admit_at_most_n_at_once_in_arrival_order() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let slots = Slots::new(2);
            let held = (slots.take().await.unwrap(), slots.take().await.unwrap());
            let order = Arc::new(Mutex::new(Vec::new()));
            let busy = Arc::new(AtomicU64::new(0));
            let most = Arc::new(AtomicU64::new(0));
            let mut tasks = Vec::new();
            for k in 0..6u64 {
                let (slots, order, busy, most) = (slots.clone(), order.clone(), busy.clone(), most.clone());
                tasks.push(tokio::spawn(async move {
                    let _slot = slots.take().await.unwrap();
                    order.lock().unwrap().push(k);
                    let now = busy.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    busy.fetch_sub(1, Ordering::SeqCst);
                }));
                // Each waiter is queued before the next arrives.
                tokio::task::yield_now().await;
            }
            assert!(order.lock().unwrap().is_empty(), "nobody is served while both slots are held");
            drop(held);
            for t in tasks {
                t.await.unwrap();
            }
            assert_eq!(*order.lock().unwrap(), vec![0, 1, 2, 3, 4, 5]);
            assert_eq!(most.load(Ordering::SeqCst), 2);
        });
    }
}
