//! The cargo fuzz target `headers`. Its check lives in `fuzz/checks/headers.rs`, which the lab's own
//! test suite also runs on every file of `fuzz/corpus/headers/` (`lab/tests/fuzz_corpus.rs`).
#![no_main]

#[path = "../checks/headers.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
