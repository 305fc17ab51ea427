//! The cargo fuzz target `toxic`. Its check lives in `fuzz/checks/toxic.rs`, which the lab's own
//! test suite also runs on every file of `fuzz/corpus/toxic/` (`lab/tests/fuzz_corpus.rs`).
#![no_main]

#[path = "../checks/toxic.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
