//! `my_config` on a stable toolchain, for a bounded number of inputs: the
//! committed corpus (`corpus/my_config/`), then `BULLY_FUZZ_INPUTS` inputs
//! (2,000 by default) mutated from it as libFuzzer mutates, from
//! `BULLY_FUZZ_SEED` (a fixed one by default, so a failure repeats). The runner
//! is the project's own (`bully_fuzz::runner`, which `fuzz/stable` wraps).
//!
//! A crash is saved as `artifacts/my_config/crash-<sha1 of the input>`, where
//! `cargo +nightly fuzz run my_config <file>` replays it (here, with
//! `--fuzz-dir .`), and so does
//! `BULLY_FUZZ_REPLAY=<file> cargo test --no-default-features`.

use std::path::{Path, PathBuf};

use bully_fuzz::runner::{self, Search, Target};

const TARGET: Target = Target {
    name: "my_config",
    run: fuzz_own_config::my_config,
};

/// A number from the environment, or `default`.
fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).map_or(default, |value| {
        let value = value.trim();
        value
            .strip_prefix("0x")
            .map_or_else(|| value.parse(), |hex| u64::from_str_radix(hex, 16))
            .unwrap_or_else(|_| panic!("{name}={value:?} is not a number"))
    })
}

#[test]
fn my_config_keeps_every_promise() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    // One input (a crash file), or the corpus.
    let replay_only = std::env::var_os("BULLY_FUZZ_REPLAY").map(PathBuf::from);
    let path = replay_only
        .clone()
        .unwrap_or_else(|| here.join("corpus/my_config"));
    let corpus = runner::read_inputs(&path).unwrap_or_else(|error| panic!("{path:?}: {error}"));
    assert!(!corpus.is_empty(), "{path:?} holds an input or more");
    let inputs = if replay_only.is_some() {
        0
    } else {
        env_u64("BULLY_FUZZ_INPUTS", 2_000)
    };
    let search = Search {
        seed: env_u64("BULLY_FUZZ_SEED", 0x5EED),
        inputs,
        threads: std::thread::available_parallelism().map_or(1, |cores| cores.get()),
        time_limit: None,
        max_len: 4096,
        inflight: None,
        progress: None,
        keep_going: false,
    };
    let seeds: Vec<Vec<u8>> = corpus.iter().map(|(_, input)| input.clone()).collect();
    let outcome = runner::replay(TARGET, &corpus, None)
        .and_then(|()| runner::search(TARGET, &seeds, &search));
    match outcome {
        Ok(searched) => eprintln!(
            "my_config: {} corpus inputs and {} mutated ones (seed {:#x}) in {:.1?}",
            corpus.len(),
            searched.inputs,
            search.seed,
            searched.elapsed
        ),
        Err(crash) => {
            let saved = runner::save_crash(&here.join("artifacts"), TARGET.name, &crash.input);
            panic!(
                "my_config crashed on {}: {}\nsaved: {saved:?}",
                crash.found, crash.message
            );
        }
    }
}
