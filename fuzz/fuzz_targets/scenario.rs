//! The cargo fuzz target `scenario`. Its check lives in `fuzz/checks/scenario.rs`, which the lab's own
//! test suite also runs on every file of `fuzz/corpus/scenario/` (`lab/tests/fuzz_corpus.rs`).
#![no_main]

#[path = "../checks/scenario.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
