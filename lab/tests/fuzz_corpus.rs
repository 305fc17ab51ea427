//! Every file of `fuzz/corpus/<target>/` replayed through its fuzz target's own check, on the
//! stable toolchain and with no sanitizer, in the ordinary test suite: an input that once made
//! a target crash, kept as a seed (docs/fuzzing.md, "A crash becomes a regression test"), fails
//! here at once, without a nightly build. Fuzzing itself, which looks for new inputs, is
//! `scripts/check-fuzz.sh SECONDS`.
//!
//! The checks are the fuzz targets' files (`fuzz/checks/<target>.rs`), compiled into this test
//! as they are: no copy of them.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

#[path = "../../fuzz/checks/control.rs"]
mod control;
#[path = "../../fuzz/checks/headers.rs"]
mod headers;
#[path = "../../fuzz/checks/idempotency_key.rs"]
mod idempotency_key;
#[path = "../../fuzz/checks/log_line.rs"]
mod log_line;
#[path = "../../fuzz/checks/plan.rs"]
mod plan;
#[path = "../../fuzz/checks/policy.rs"]
mod policy;
#[path = "../../fuzz/checks/scenario.rs"]
mod scenario;
#[path = "../../fuzz/checks/toxic.rs"]
mod toxic;

/// A fuzz target's check: returns, or panics on a finding.
type Check = fn(&[u8]);

/// Each target of `fuzz/Cargo.toml` with its check.
const TARGETS: [(&str, Check); 8] = [
    ("control", control::check),
    ("headers", headers::check),
    ("idempotency_key", idempotency_key::check),
    ("log_line", log_line::check),
    ("plan", plan::check),
    ("policy", policy::check),
    ("scenario", scenario::check),
    ("toxic", toxic::check),
];

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz")
}

/// The files of one target's corpus, sorted.
fn corpus(target: &str) -> Vec<PathBuf> {
    let dir = fuzz_dir().join("corpus").join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a corpus entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

/// Runs `check` on every file of `files`; returns the files it panicked on, with the panic.
fn replay(check: Check, files: &[PathBuf]) -> Vec<String> {
    let mut failed = Vec::new();
    for file in files {
        let data = std::fs::read(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| check(&data))) {
            let why = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            failed.push(format!("{}: {why}", file.display()));
        }
    }
    failed
}

#[test]
fn every_seed_of_every_target_passes_its_check() {
    let mut failed = Vec::new();
    let mut count = 0;
    for (target, check) in TARGETS {
        let files = corpus(target);
        assert!(!files.is_empty(), "fuzz/corpus/{target}/ holds no seed");
        count += files.len();
        failed.extend(replay(check, &files));
    }
    assert!(
        failed.is_empty(),
        "{} of {count} seeds crash their target:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

#[test]
fn every_target_of_the_fuzz_crate_is_replayed_and_has_a_corpus() {
    let manifest = std::fs::read_to_string(fuzz_dir().join("Cargo.toml")).expect("fuzz/Cargo.toml");
    let mut declared: Vec<&str> = manifest
        .lines()
        .filter_map(|l| l.strip_prefix("name = \""))
        .filter_map(|l| l.strip_suffix('"'))
        .filter(|n| *n != "e03-fuzz")
        .collect();
    declared.sort_unstable();
    let replayed: Vec<&str> = TARGETS.iter().map(|(t, _)| *t).collect();
    assert_eq!(
        declared, replayed,
        "fuzz/Cargo.toml's targets and this test's"
    );
    let mut corpora: Vec<String> = std::fs::read_dir(fuzz_dir().join("corpus"))
        .expect("fuzz/corpus")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    corpora.sort();
    assert_eq!(corpora, replayed, "fuzz/corpus/'s folders and the targets");
}

/// The replay does find a crash: an input a check panics on is named, with the panic. (A made-up
/// check stands for a target with a bug; the real targets pass on every seed above.)
#[test]
fn a_seed_that_crashes_its_check_is_named_with_the_panic() {
    fn buggy(data: &[u8]) {
        assert!(!data.starts_with(b"crash"), "the made-up bug");
    }
    let dir = std::env::temp_dir().join(format!("e03-fuzz-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (good, bad) = (dir.join("good"), dir.join("bad"));
    std::fs::write(&good, b"fine").unwrap();
    std::fs::write(&bad, b"crash me").unwrap();
    let failed = replay(buggy, &[good, bad.clone()]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert!(
        failed[0].starts_with(&bad.display().to_string()),
        "{failed:?}"
    );
    assert!(failed[0].contains("the made-up bug"), "{failed:?}");
}
