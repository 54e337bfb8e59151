//! The fuzz targets of bully-core as plain functions of the fuzzer's bytes
//! (`decode` here; `node` and `cluster` call `bully_sim::fuzz`, the harness
//! users call with their own configuration, with one drawn from the bytes),
//! and a runner for them without libFuzzer: libFuzzer calls
//! them through `fuzz_targets/*.rs` (nightly, `cargo fuzz run`); the stable
//! runner ([`runner`], the `fuzz-stable` command of `fuzz/stable`) feeds them
//! the committed corpus and inputs mutated from it; and
//! this crate's `tests/corpus.rs` does the same from `cargo test` (without
//! the `libfuzzer` feature).
//!
//! Each function reads its choices from the bytes with
//! [`arbitrary::Unstructured`]; running out of bytes ends the run quietly. A
//! panic is a bug: either in bully-core, or a broken invariant the target
//! asserts.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod decode;
pub mod mutate;
pub mod runner;

pub use decode::decode;

/// The `node` target: one node, its member list, identity and configuration
/// drawn from the bytes (`bully_sim::fuzz::node_with_arbitrary_config`, where
/// the oracles live, and which users call with their own configuration as
/// `bully_sim::fuzz::node`).
pub fn node(data: &[u8]) {
    bully_sim::fuzz::node_with_arbitrary_config(data);
}

/// The `cluster` target: a simulated cluster, its size and configuration
/// drawn from the bytes (`bully_sim::fuzz::cluster_with_arbitrary_config`;
/// users call it with their own configuration as `bully_sim::fuzz::cluster`).
pub fn cluster(data: &[u8]) {
    bully_sim::fuzz::cluster_with_arbitrary_config(data);
}

/// Whether `BULLY_FUZZ_TRACE` is set: the targets then print what they do.
fn tracing() -> bool {
    static TRACE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TRACE.get_or_init(|| std::env::var_os("BULLY_FUZZ_TRACE").is_some())
}
