//! The cargo fuzz target `control`. Its check lives in `fuzz/checks/control.rs`, which the lab's own
//! test suite also runs on every file of `fuzz/corpus/control/` (`lab/tests/fuzz_corpus.rs`).
#![no_main]

#[path = "../checks/control.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
