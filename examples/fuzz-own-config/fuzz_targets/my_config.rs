//! `cargo +nightly fuzz run my_config` (here, `--fuzz-dir .` too): see
//! `fuzz_own_config::my_config`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_own_config::my_config(data));
