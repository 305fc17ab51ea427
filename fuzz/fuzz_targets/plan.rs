//! The cargo fuzz target `plan`. Its check lives in `fuzz/checks/plan.rs`, which the lab's own
//! test suite also runs on every file of `fuzz/corpus/plan/` (`lab/tests/fuzz_corpus.rs`).
#![no_main]

#[path = "../checks/plan.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
