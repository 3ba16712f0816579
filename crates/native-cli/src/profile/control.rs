//! How a run is stopped: two cancellation tokens, `stop` (no new requests: a signal or the end
//! of `--benchmark-duration`) and `abort` (cancel what is in flight: the end of the grace period
//! or a second signal). SIGINT, SIGTERM and SIGHUP all act alike, so a job stopped by Kubernetes
//! or CI still writes every export.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// The two tokens of a run and what stopped it.
#[derive(Clone, Debug, Default)]
pub struct Control {
    /// No new requests.
    pub stop: CancellationToken,
    /// Cancel the requests in flight.
    pub abort: CancellationToken,
    /// A signal stopped the run.
    pub(super) interrupted: Arc<AtomicBool>,
}

impl Control {
    /// The control of one sub-run: stopped by this one's signals, while its own duration timer
    /// and grace period stop only it.
    pub fn child(&self) -> Control {
        Control {
            stop: self.stop.child_token(),
            abort: self.abort.child_token(),
            interrupted: self.interrupted.clone(),
        }
    }

    /// Whether a signal stopped the run.
    pub fn interrupted(&self) -> bool {
        self.interrupted.load(Ordering::SeqCst)
    }

    /// Waits `d`, or less when a signal stops the run; returns whether it was stopped.
    pub async fn pause(&self, d: Duration) -> bool {
        tokio::select! {
            _ = tokio::time::sleep(d) => false,
            _ = self.stop.cancelled() => true,
        }
    }
}

/// First signal: stop sending; second: cancel what is in flight.
pub async fn watch_signals(control: Control, grace: Duration) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term), Ok(mut hup)) =
        (signal(SignalKind::interrupt()), signal(SignalKind::terminate()), signal(SignalKind::hangup()))
    else {
        say!("warning: cannot watch for signals; a signal will end the run without exports");
        return;
    };
    let mut seen = 0;
    loop {
        let name = tokio::select! {
            _ = int.recv() => "SIGINT",
            _ = term.recv() => "SIGTERM",
            _ = hup.recv() => "SIGHUP",
        };
        seen += 1;
        control.interrupted.store(true, Ordering::SeqCst);
        if seen == 1 {
            say!(
                "\n{name}: no new requests; in-flight requests get {:.1} s to finish (signal again to cancel them now)",
                grace.as_secs_f64()
            );
            control.stop.cancel();
        } else {
            say!("\n{name} again: cancelling the requests in flight and writing the exports");
            control.stop.cancel();
            control.abort.cancel();
        }
    }
}
