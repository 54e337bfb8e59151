//! `cargo fuzz run decode`: see `bully_fuzz::decode`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bully_fuzz::decode(data));
