//! The fuzz targets on stable: every committed input under `fuzz/corpus/<target>/`
//! (the seed corpus and the reproducers of crashes found and fixed) goes through
//! the same function libFuzzer calls, so `cargo test` exercises each target
//! without nightly; then `BULLY_FUZZ_RANDOM` inputs (1,000 by default) mutated
//! from the corpus by the stable runner's mutator, from a fixed seed.
//!
//! The targets and the runner are this crate's library (built without its
//! libFuzzer feature: `cargo test --manifest-path fuzz/Cargo.toml
//! --no-default-features`); `fuzz/README.md` tells how to run the fuzzers
//! themselves, and `fuzz/stable` is the runner as a command, for longer
//! searches. A crash found here is saved as
//! `fuzz/artifacts/<target>/crash-<sha1>`, where both replay it.

use std::path::PathBuf;

use bully_fuzz::runner::{self, Search};

/// The seed of `cargo test`'s mutated inputs: fixed, so a failure repeats.
const SEED: u64 = 0xF022;

fn fuzz_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `name`'s corpus, then `BULLY_FUZZ_RANDOM` mutated inputs, naming the
/// crash and where it was saved.
fn replay(name: &str) {
    let target = runner::target(name).expect("a target of the fuzz crate");
    let dir = fuzz_dir().join("corpus").join(name);
    let corpus = runner::read_inputs(&dir).unwrap_or_else(|error| panic!("{dir:?}: {error}"));
    assert!(
        !corpus.is_empty(),
        "the {name} corpus has a seed or more committed"
    );
    let mutated: u64 = std::env::var("BULLY_FUZZ_RANDOM")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(1_000);
    let inputs: Vec<Vec<u8>> = corpus.iter().map(|(_, input)| input.clone()).collect();
    let search = Search {
        seed: SEED,
        inputs: mutated,
        threads: 1,
        time_limit: None,
        max_len: 4096,
        inflight: None,
        progress: None,
        keep_going: false,
    };
    let outcome = runner::replay(target, &corpus, None)
        .and_then(|()| runner::search(target, &inputs, &search).map(|_| ()));
    if let Err(crash) = outcome {
        let saved = runner::save_crash(&fuzz_dir().join("artifacts"), name, &crash.input);
        panic!(
            "{name} crashed on {}: {}\nsaved: {saved:?}",
            crash.found, crash.message
        );
    }
    eprintln!(
        "{name}: {} corpus inputs and {mutated} mutated ones passed",
        corpus.len()
    );
}

#[test]
fn the_decode_corpus_decodes_without_panics_and_round_trips() {
    replay("decode");
}

#[test]
fn the_node_corpus_keeps_the_sans_io_contract() {
    replay("node");
}

#[test]
fn the_cluster_corpus_keeps_safety_and_settles() {
    replay("cluster");
}
