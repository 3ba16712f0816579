//! The browser app of aiperf-rs (Yew + Trunk); see `../shared/docs/spec-web.md`.
