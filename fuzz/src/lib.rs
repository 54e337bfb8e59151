//! The fuzz targets of bully-core as plain functions, for libFuzzer
//! (`fuzz_targets/*.rs`) and for the stable corpus replay
//! (`bully-core/tests/fuzz_corpus.rs`, which includes `targets.rs` directly).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod targets;

pub use targets::{cluster, decode, node};
