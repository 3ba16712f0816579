//! Several runs of one trace as one campaign.
//!
//! - [`sweep`]: one run per value of a load option, and repeated runs with Student t intervals;
//! - [`search`]: the capacity search as a state machine (which load to measure next).

pub mod search;
pub mod sweep;
