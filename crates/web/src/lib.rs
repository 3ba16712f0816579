//! The browser app of aiperf-rs: a Yew single-page app running `aiperf-core` in WebAssembly.
//!
//! The page ([`components::App`], binary `app`) holds the state in one reducer ([`state`]) and
//! hands its dispatcher and the worker link to the panels through a context ([`hooks`]); the
//! worker ([`worker::TraceWorker`], binary `worker`) reads, parses, analyses and synthesizes, so
//! a 100 MB trace never freezes the page. Everything but the thin browser glue is plain Rust,
//! tested natively with `cargo test -p aiperf-web`.

pub mod agentic;
pub mod chart_data;
pub mod codec;
pub mod components;
pub mod engine;
pub mod format;
pub mod hooks;
pub mod ingest;
pub mod params;
pub mod protocol;
pub mod runs;
pub mod state;
pub mod web;
pub mod what_if;
pub mod worker;
