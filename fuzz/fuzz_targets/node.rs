//! `cargo fuzz run node`: see `bully_fuzz::node`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bully_fuzz::node(data));
