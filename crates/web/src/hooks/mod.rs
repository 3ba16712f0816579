//! The page's hooks: the worker link, opening files, the effects of state changes, and the
//! context that hands the dispatcher and the worker to every panel.

mod context;
mod effects;
mod open;
mod worker;

pub use context::{AppContext, use_app};
pub use effects::{use_address_bar, use_requests, use_shown_timing, use_simulation};
pub use open::{Open, use_open};
pub use worker::{WorkerLink, use_worker};
