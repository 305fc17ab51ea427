//! The cargo fuzz target `log_line`. Its check lives in `fuzz/checks/log_line.rs`, which the lab's own
//! test suite also runs on every file of `fuzz/corpus/log_line/` (`lab/tests/fuzz_corpus.rs`).
#![no_main]

#[path = "../checks/log_line.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
