//! The gate a team's CI holds a run to (docs/ci-gates.md): a scenario's checks and thresholds
//! judged after the analysis, the exit code they give (99 for a broken threshold, k6's), and
//! `--junit FILE`, every check, threshold and scorecard row as a JUnit test case.
//!
//! Every scenario a command judges adds its suite here ([`judge`], [`record`]); the command's
//! end writes the file whole ([`finish`]: a temporary file renamed over FILE), whatever the
//! verdicts, so that a CI system reads the failures too.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use analyzer::junit::Suite;

pub use e03_io::exit::{CHECK_FAILED, THRESHOLD_BROKEN};

/// The suites judged so far, in order, and when the command started judging.
static SUITES: Mutex<Vec<Suite>> = Mutex::new(Vec::new());
static STARTED: Mutex<Option<Instant>> = Mutex::new(None);

/// Notes the command's start (the JUnit file's `time`).
pub fn start() {
    STARTED
        .lock()
        .expect("never poisoned")
        .get_or_insert_with(Instant::now);
}

/// Adds a suite to the JUnit file of this command.
pub fn record(suite: Suite) {
    SUITES.lock().expect("never poisoned").push(suite);
}

/// Adds a case to the suite named `suite` (a new suite when there is none yet).
pub fn record_case(suite: &str, case: analyzer::junit::Case) {
    let mut suites = SUITES.lock().expect("never poisoned");
    match suites.iter_mut().find(|s| s.name == suite) {
        Some(s) => s.cases.push(case),
        None => {
            let mut s = Suite::new(suite);
            s.cases.push(case);
            suites.push(s);
        }
    }
}

/// A scenario's checks and thresholds on its final figures: each failure printed (`lab:
/// NAME: ...`), its suite recorded, and the exit code after them: `code` when the run was not
/// sound (1), else [`THRESHOLD_BROKEN`] when a threshold broke, [`CHECK_FAILED`] when a check
/// failed, `code` otherwise.
pub fn judge(summary: &analyzer::ScenarioSummary, dir: &Path, code: i32) -> i32 {
    let name = summary.scenario.name();
    let checks = e03_metrics::checks::evaluate(summary);
    let thresholds = e03_metrics::thresholds::evaluate(summary);
    let mut suite = Suite::new(name);
    suite.out.push(format!(
        "{} run of {name}: outputs in {}",
        if summary.simulated {
            "simulated"
        } else {
            "live"
        },
        e03_io::rundir::shown(dir)
    ));
    if let Some(banner) = e03_metrics::trust::Trust::of(summary).banner() {
        // An incomplete or unmatched run judges nothing: a CI sees it as a failed case.
        suite.cases.push(analyzer::junit::Case {
            kind: "run",
            name: "the run is whole (complete, client and server logs matched)".into(),
            outcome: analyzer::junit::Outcome::Failed {
                message: banner.clone(),
            },
        });
        suite.out.push(banner);
    }
    suite.add_checks(&checks);
    suite.add_thresholds(&thresholds);
    record(suite);
    let mut out = code;
    if checks.iter().any(|r| r.pass == Some(false)) {
        for line in e03_metrics::checks::fail_lines(summary) {
            eprintln!("lab: {name}: {line}");
        }
        if out == 0 {
            out = CHECK_FAILED;
        }
    }
    let broken: Vec<_> = thresholds
        .iter()
        .filter(|r| r.pass == Some(false))
        .collect();
    for r in &broken {
        eprintln!("lab: {name}: {}", r.breach_line());
    }
    if !broken.is_empty() && matches!(out, 0 | CHECK_FAILED) {
        out = THRESHOLD_BROKEN;
    }
    out
}

/// Where `--junit` writes, checked before anything runs: a file in a folder that exists, not a
/// folder. `Err` names what the user typed.
pub fn junit_path(given: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(given);
    if given.trim().is_empty() {
        return Err("invalid --junit \"\": expected a file to write, such as junit.xml".into());
    }
    if path.is_dir() {
        return Err(format!(
            "invalid --junit {given:?}: that is a folder; expected a file to write, such as \
             {}",
            path.join("junit.xml").display()
        ));
    }
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !parent.is_dir() {
        return Err(format!(
            "invalid --junit {given:?}: no folder {}; expected a file in a folder that exists",
            parent.display()
        ));
    }
    Ok(path)
}

/// The command's end: with `--junit FILE`, the suites recorded, written whole (a temporary
/// file beside it, renamed over it), unless the command ended on bad input (exit 2). `code` unless the file could not be written (then 1,
/// and why on stderr).
pub fn finish(junit: Option<&Path>, code: i32) -> i32 {
    // Bad input wrote nothing that looks like a result (docs/running.md).
    let Some(path) = junit.filter(|_| code != e03_io::exit::USAGE) else {
        return code;
    };
    let suites = std::mem::take(&mut *SUITES.lock().expect("never poisoned"));
    let seconds = STARTED
        .lock()
        .expect("never poisoned")
        .map_or(0.0, |t| t.elapsed().as_secs_f64());
    let xml = analyzer::junit::render(
        &suites,
        &e03_io::rundir::iso_utc(std::time::SystemTime::now()),
        seconds,
    );
    match e03_io::logs::write_atomic(path, xml.as_bytes()) {
        Ok(()) => {
            eprintln!(
                "lab: JUnit report: {} ({} test case(s), {} failed)",
                path.display(),
                suites.iter().map(|s| s.cases.len()).sum::<usize>(),
                suites.iter().map(Suite::failures).sum::<usize>()
            );
            code
        }
        Err(e) => {
            eprintln!("lab: writing --junit {}: {e}", path.display());
            e03_io::exit::FAILED
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_junit_path_is_a_file_in_a_folder_that_exists() {
        let dir = std::env::temp_dir().join(format!("e03-gate-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let d = dir.display().to_string();
        assert!(junit_path(&d).unwrap_err().contains("that is a folder"));
        assert!(junit_path("").unwrap_err().contains("invalid --junit \"\""));
        let e = junit_path(&format!("{d}/nowhere/j.xml")).unwrap_err();
        assert!(e.contains("no folder") && e.contains("nowhere"), "{e}");
        assert_eq!(
            junit_path(&format!("{d}/j.xml")).unwrap(),
            dir.join("j.xml")
        );
        assert_eq!(junit_path("j.xml").unwrap(), PathBuf::from("j.xml"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
