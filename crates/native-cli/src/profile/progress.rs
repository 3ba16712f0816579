//! The one progress-bar factory: a live bar on a terminal, a hidden one otherwise.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A bar over `total` requests (a counter when only a duration ends the run); hidden when stdout
/// is not a terminal or `enabled` is false.
pub fn bar(total: Option<u64>, enabled: bool) -> ProgressBar {
    if !enabled || !std::io::stdout().is_terminal() {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::with_draw_target(total, ProgressDrawTarget::stdout_with_hz(4));
    let template = if total.is_some() {
        "{elapsed_precise} [{bar:40}] {pos}/{len} requests {msg}"
    } else {
        "{elapsed_precise} {pos} requests {msg}"
    };
    if let Ok(style) = ProgressStyle::with_template(template) {
        pb.set_style(style.progress_chars("=> "));
    }
    pb
}
