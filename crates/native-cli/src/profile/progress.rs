//! The one progress-bar factory: a live bar on a terminal, a hidden one otherwise.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A bar over `total` requests; hidden when stdout is not a terminal or `enabled` is false.
pub fn bar(total: u64, enabled: bool) -> ProgressBar {
    if !enabled || !std::io::stdout().is_terminal() {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stdout_with_hz(4));
    if let Ok(style) = ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {pos}/{len} requests {msg}") {
        pb.set_style(style.progress_chars("=> "));
    }
    pb
}
