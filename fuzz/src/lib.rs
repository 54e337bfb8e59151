//! The fuzz targets of bully-core as plain functions of the fuzzer's bytes, one
//! file per target, and a runner for them without libFuzzer: libFuzzer calls
//! them through `fuzz_targets/*.rs` (nightly, `cargo fuzz run`); the stable
//! runner ([`runner`], the `fuzz-stable` command of `fuzz/stable`) feeds them
//! the committed corpus and inputs mutated from it; and
//! `bully-core/tests/fuzz_corpus.rs` includes this file to do the same from
//! `cargo test`.
//!
//! Each function reads its choices from the bytes with
//! [`arbitrary::Unstructured`]; running out of bytes ends the run quietly. A
//! panic is a bug: either in bully-core, or a broken invariant the target
//! asserts.
//!
//! Paths inside this crate are relative (`super::`, never `crate::`): the corpus
//! test includes this file as a module of its own crate.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod cluster;
mod decode;
pub mod mutate;
mod node;
pub mod runner;

pub use cluster::cluster;
pub use decode::decode;
pub use node::node;

/// Whether `BULLY_FUZZ_TRACE` is set: the targets then print what they do.
fn tracing() -> bool {
    static TRACE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TRACE.get_or_init(|| std::env::var_os("BULLY_FUZZ_TRACE").is_some())
}
