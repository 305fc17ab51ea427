//! `lab audit --require ROW=VERDICT`: what a team requires of its client's scorecard, and the
//! exit code it gives (docs/ci-gates.md).
//!
//! `ROW` is a scorecard row's check (`idempotency`, `attempt timeout`, `Retry-After`; any case,
//! `-` or `_` for a space), `VERDICT` the worst verdict the team accepts for it: `PASS` (it must
//! pass), `WARN` (PASS or WARN) or `FAIL` (anything: the row is reported, it does not gate). A
//! row not named must not FAIL, as without `--require`. With `--require`, a row worse than its
//! requirement ends the audit with 99 (k6's code for a broken threshold) and its name, verdict
//! and evidence on stderr; without it, the exit codes stay the audit's (1 on any FAIL).

use analyzer::audit::{Scorecard, Verdict};

/// One `--require`: the row as the scorecard names it, and the worst verdict accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    pub row: String,
    pub worst: Verdict,
}

/// A row's name folded for matching: lower case, `-` and `_` as spaces.
fn fold(name: &str) -> String {
    name.trim()
        .to_lowercase()
        .replace(['-', '_'], " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The rows a scorecard has, as the grader names them (graded from an empty, complete log).
pub fn row_names() -> Vec<String> {
    analyzer::audit::grade(&[e03_model::audit::AuditRecord::AuditEnd { complete: true }])
        .rows
        .into_iter()
        .map(|r| r.check)
        .collect()
}

/// Parses one `--require ROW=VERDICT` against the scorecard's rows `rows`; `Err` names what was
/// typed and what is accepted.
pub fn parse(given: &str, rows: &[String]) -> Result<Requirement, String> {
    let listed = || rows.join(", ");
    let Some((row, verdict)) = given.rsplit_once('=') else {
        return Err(format!(
            "invalid --require {given:?}: expected ROW=VERDICT, such as idempotency=PASS (rows: \
             {})",
            listed()
        ));
    };
    let Some(found) = rows.iter().find(|r| fold(r) == fold(row)) else {
        return Err(format!(
            "invalid --require {given:?}: no scorecard row {:?}; expected one of {}",
            row.trim(),
            listed()
        ));
    };
    let worst = match verdict.trim().to_uppercase().as_str() {
        "PASS" => Verdict::Pass,
        "WARN" => Verdict::Warn,
        "FAIL" => Verdict::Fail,
        _ => {
            return Err(format!(
                "invalid --require {given:?}: verdict {:?} is not PASS, WARN or FAIL (the worst \
                 verdict the row may get)",
                verdict.trim()
            ))
        }
    };
    Ok(Requirement {
        row: found.clone(),
        worst,
    })
}

/// The worst verdict accepted for `row`: the last `--require` naming it, else WARN (a row not
/// named must not FAIL).
pub fn worst_accepted(reqs: &[Requirement], row: &str) -> Verdict {
    reqs.iter()
        .rev()
        .find(|r| r.row == row)
        .map_or(Verdict::Warn, |r| r.worst)
}

/// The rows worse than required, each as a line: `backoff: WARN, required PASS: evidence`.
pub fn unmet(card: &Scorecard, reqs: &[Requirement]) -> Vec<String> {
    card.rows
        .iter()
        .filter(|r| r.verdict > worst_accepted(reqs, &r.check))
        .map(|r| {
            format!(
                "required {}={} not met: {} ({})",
                r.check,
                worst_accepted(reqs, &r.check).as_str(),
                r.verdict.as_str(),
                r.evidence
            )
        })
        .collect()
}

/// The audit's end with its scorecard: the unmet requirements printed, the JUnit file written
/// (`junit`), and the exit code: without `--require`, 1 on any FAIL; with it, 99 when a row is
/// worse than required.
pub fn gate(
    card: &Scorecard,
    reqs: &[Requirement],
    junit: Option<&std::path::Path>,
    dir: &std::path::Path,
) -> i32 {
    let unmet = unmet(card, reqs);
    // Without --require the user required nothing: the scorecard's FAILs speak for themselves.
    if !reqs.is_empty() {
        for line in &unmet {
            eprintln!("lab: audit: {line}");
        }
    }
    let code = match (reqs.is_empty(), unmet.is_empty()) {
        (_, true) => 0,
        (true, false) => e03_io::exit::FAILED,
        (false, false) => crate::gate::THRESHOLD_BROKEN,
    };
    let mut suite = analyzer::junit::Suite::new("audit");
    suite.out.push(format!(
        "lab audit of `{}`: scorecard in {}",
        card.command.join(" "),
        e03_io::rundir::shown(dir)
    ));
    suite.add_scorecard(card, &|row| worst_accepted(reqs, row));
    crate::gate::record(suite);
    crate::gate::finish(junit, code)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows() -> Vec<String> {
        [
            "classification",
            "attempt timeout",
            "Retry-After",
            "backoff",
        ]
        .map(String::from)
        .to_vec()
    }

    #[test]
    fn requirements_name_a_row_and_a_verdict() {
        assert_eq!(
            parse("attempt-timeout=pass", &rows()).unwrap(),
            Requirement {
                row: "attempt timeout".into(),
                worst: Verdict::Pass
            }
        );
        assert_eq!(
            parse("retry_after=WARN", &rows()).unwrap().row,
            "Retry-After"
        );
        assert_eq!(
            parse("backoff = FAIL", &rows()).unwrap().worst,
            Verdict::Fail
        );
    }

    /// One case per error: what was typed, and what is accepted.
    #[test]
    fn bad_requirements_say_what_is_accepted() {
        for (given, said) in [
            ("backoff", "expected ROW=VERDICT, such as idempotency=PASS"),
            (
                "jitter=PASS",
                "no scorecard row \"jitter\"; expected one of classification, attempt timeout",
            ),
            ("backoff=GOOD", "verdict \"GOOD\" is not PASS, WARN or FAIL"),
            ("backoff=", "verdict \"\" is not PASS, WARN or FAIL"),
        ] {
            let e = parse(given, &rows()).unwrap_err();
            assert!(
                e.starts_with(&format!("invalid --require {given:?}")),
                "{e}"
            );
            assert!(e.contains(said), "{given}: {e}");
        }
    }

    #[test]
    fn a_row_not_named_must_not_fail_and_a_named_one_meets_its_verdict() {
        let row = |check: &str, verdict| analyzer::audit::Row {
            item: 1,
            check: check.into(),
            verdict,
            evidence: format!("{check} evidence"),
            advice: String::new(),
        };
        let card = Scorecard {
            command: Vec::new(),
            claimed_attempts: None,
            complete: true,
            rows: vec![
                row("classification", Verdict::Fail),
                row("backoff", Verdict::Warn),
            ],
        };
        assert_eq!(
            unmet(&card, &[]),
            ["required classification=WARN not met: FAIL (classification evidence)"]
        );
        let reqs = [
            parse("classification=FAIL", &rows()).unwrap(),
            parse("backoff=PASS", &rows()).unwrap(),
        ];
        assert_eq!(
            unmet(&card, &reqs),
            ["required backoff=PASS not met: WARN (backoff evidence)"]
        );
        let reqs = [parse("classification=fail", &rows()).unwrap()];
        assert!(unmet(&card, &reqs).is_empty());
    }

    #[test]
    fn the_grader_names_its_rows_without_a_log() {
        let names = row_names();
        assert!(names.iter().any(|n| n == "idempotency"), "{names:?}");
        assert!(names.len() >= 8, "{names:?}");
    }
}
