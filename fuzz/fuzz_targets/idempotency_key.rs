//! The cargo fuzz target `idempotency_key`. Its check lives in `fuzz/checks/idempotency_key.rs`, which the lab's own
//! test suite also runs on every file of `fuzz/corpus/idempotency_key/` (`lab/tests/fuzz_corpus.rs`).
#![no_main]

#[path = "../checks/idempotency_key.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
