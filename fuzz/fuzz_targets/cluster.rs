//! `cargo fuzz run cluster`: see `bully_fuzz::cluster`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bully_fuzz::cluster(data));
