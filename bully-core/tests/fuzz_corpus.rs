//! The fuzz targets on stable: every committed input under `fuzz/corpus/<target>/`
//! (the seed corpus and the reproducers of crashes found and fixed) goes through
//! the same function libFuzzer calls, so CI exercises each target without nightly.
//!
//! The targets' bodies live in `fuzz/src/` (see `fuzz/README.md` for
//! running the fuzzers themselves). Each target also runs on `BULLY_FUZZ_RANDOM`
//! seeded random inputs (1,000 by default): random bytes make long schedules,
//! which libFuzzer reaches only slowly.
#![cfg(all(feature = "arbitrary", feature = "wire", feature = "sim"))]

use rand::{RngExt, SeedableRng};
use std::path::{Path, PathBuf};

#[allow(unreachable_pub, dead_code)]
#[path = "../../fuzz/src/lib.rs"]
mod targets;

fn corpus(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("{}: {error}", dir.display()))
        .map(|entry| entry.expect("a readable corpus directory").path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    files
}

/// Runs `body` on every corpus file of `target`, naming the file that fails, and
/// on `BULLY_FUZZ_RANDOM` random inputs.
fn replay(target: &str, body: fn(&[u8])) {
    let files = corpus(target);
    assert!(
        !files.is_empty(),
        "the {target} corpus has a seed or more committed"
    );
    for file in &files {
        let data = std::fs::read(file).expect("a readable corpus file");
        eprintln!("{target}: {}", file.display());
        body(&data);
    }
    let random: u64 = std::env::var("BULLY_FUZZ_RANDOM")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(1_000);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0xF022);
    for _ in 0..random {
        let len = rng.random_range(0..4096);
        let data: Vec<u8> = (0..len).map(|_| rng.random()).collect();
        body(&data);
    }
    eprintln!(
        "{target}: {} corpus inputs and {random} random ones passed",
        files.len()
    );
}

#[test]
fn the_decode_corpus_decodes_without_panics_and_round_trips() {
    replay("decode", targets::decode);
}

#[test]
fn the_node_corpus_keeps_the_sans_io_contract() {
    replay("node", targets::node);
}

#[test]
fn the_cluster_corpus_keeps_safety_and_settles() {
    replay("cluster", targets::cluster);
}
