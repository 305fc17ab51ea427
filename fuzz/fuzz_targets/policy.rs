//! The cargo fuzz target `policy`. Its check lives in `fuzz/checks/policy.rs`, which the lab's own
//! test suite also runs on every file of `fuzz/corpus/policy/` (`lab/tests/fuzz_corpus.rs`).
#![no_main]

#[path = "../checks/policy.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
