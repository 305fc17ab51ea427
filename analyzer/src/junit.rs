//! `--junit FILE`: a run's checks, thresholds and scorecard rows as JUnit XML, the report every
//! CI system reads.
//!
//! The shape is the one of Apache Ant's JUnit task as the schema of
//! windyroad/JUnit-Schema (`JUnit.xsd`, Apache License 2.0; a copy in
//! `scripts/junit-schema/`) pins it: `<testsuites>` holding one `<testsuite>` per scenario (or
//! audit) with `package`, `id`, `name`, `timestamp` (UTC, no zone), `hostname`, `tests`,
//! `failures`, `errors`, `skipped` and `time`, then `<properties>`, the `<testcase>`s (`name`,
//! `classname`, `time`; a `<failure message type>` or a `<skipped message>`), `<system-out>`
//! and `<system-err>`, in that order. `scripts/check-junit.sh` validates a file the lab wrote
//! against that schema.

use std::fmt::Write as _;

use e03_metrics::checks::CheckRow;
use e03_metrics::thresholds::ThresholdRow;

use crate::audit::{Scorecard, Verdict};

/// What became of one test case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Passed,
    /// `message`: the bound and the value measured, or the row's evidence.
    Failed {
        message: String,
    },
    /// Not judged (a figure that could not be computed, a figure only reported).
    Skipped {
        message: String,
    },
}

/// One `<testcase>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    /// `check`, `threshold` or `scorecard`: the case's `classname` under its suite.
    pub kind: &'static str,
    pub name: String,
    pub outcome: Outcome,
}

/// One `<testsuite>`: a scenario's run, or an audit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suite {
    /// The scenario's name (or `audit`).
    pub name: String,
    /// Lines for `<system-out>` (what the run was, where its outputs are).
    pub out: Vec<String>,
    pub cases: Vec<Case>,
}

impl Suite {
    pub fn new(name: &str) -> Self {
        Suite {
            name: name.to_string(),
            out: Vec::new(),
            cases: Vec::new(),
        }
    }

    pub fn failures(&self) -> usize {
        self.cases
            .iter()
            .filter(|c| matches!(c.outcome, Outcome::Failed { .. }))
            .count()
    }

    /// One case per check row: `attempts of C (seed 1)`, failed with ours, the figure and the
    /// band.
    pub fn add_checks(&mut self, rows: &[CheckRow]) {
        for r in rows {
            let message = format!(
                "ours {}, against {}, band {}",
                r.ours,
                r.published,
                if r.band.is_empty() { "-" } else { &r.band }
            );
            let outcome = match r.pass {
                Some(true) => Outcome::Passed,
                Some(false) => Outcome::Failed { message },
                None => Outcome::Skipped { message },
            };
            self.cases.push(Case {
                kind: "check",
                name: format!("{} of {} (seed {})", r.metric, r.strategy, r.seed),
                outcome,
            });
        }
    }

    /// One case per threshold row, failed with its bound and the value measured.
    pub fn add_thresholds(&mut self, rows: &[ThresholdRow]) {
        for r in rows {
            let message = format!("bound {}, measured {}", r.bound, r.measured);
            let outcome = match r.pass {
                Some(true) => Outcome::Passed,
                Some(false) => Outcome::Failed { message },
                None => Outcome::Skipped { message },
            };
            self.cases.push(Case {
                kind: "threshold",
                name: format!("{} (seed {})", r.threshold, r.seed),
                outcome,
            });
        }
    }

    /// One case per scorecard row: failed when the row is worse than `required(row)` allows,
    /// with the verdict, what was required and the row's evidence.
    pub fn add_scorecard(&mut self, card: &Scorecard, required: &dyn Fn(&str) -> Verdict) {
        for r in &card.rows {
            let needed = required(&r.check);
            let outcome = if r.verdict <= needed {
                Outcome::Passed
            } else {
                Outcome::Failed {
                    message: format!(
                        "{} (required: {} or better): {}",
                        r.verdict.as_str(),
                        needed.as_str(),
                        r.evidence
                    ),
                }
            };
            self.cases.push(Case {
                kind: "scorecard",
                name: format!("{}. {}", r.item, r.check),
                outcome,
            });
        }
    }
}

/// `&`, `<`, `>`, `"` and `'` escaped, and the characters XML 1.0 does not allow dropped.
fn escape(text: &str) -> String {
    let mut s = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => s.push_str("&amp;"),
            '<' => s.push_str("&lt;"),
            '>' => s.push_str("&gt;"),
            '"' => s.push_str("&quot;"),
            '\'' => s.push_str("&apos;"),
            '\t' | '\n' | '\r' => s.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => {}
            c => s.push(c),
        }
    }
    s
}

/// A `xs:token` attribute: no line breaks, tabs or runs of spaces, never empty.
fn token(text: &str) -> String {
    let t = text.split_whitespace().collect::<Vec<_>>().join(" ");
    escape(if t.is_empty() { "-" } else { &t })
}

/// The whole document. `timestamp`: `YYYY-MM-DDTHH:MM:SS` in UTC
/// ([`e03_io::rundir::iso_utc`]); `seconds`: how long the command ran.
pub fn render(suites: &[Suite], timestamp: &str, seconds: f64) -> String {
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n");
    for (id, suite) in suites.iter().enumerate() {
        let skipped = suite
            .cases
            .iter()
            .filter(|c| matches!(c.outcome, Outcome::Skipped { .. }))
            .count();
        let _ = writeln!(
            x,
            "  <testsuite package=\"e03\" id=\"{id}\" name=\"{}\" timestamp=\"{timestamp}\" \
             hostname=\"localhost\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{skipped}\" \
             time=\"{seconds:.3}\">",
            token(&suite.name),
            suite.cases.len(),
            suite.failures(),
        );
        x.push_str("    <properties/>\n");
        for c in &suite.cases {
            let open = format!(
                "    <testcase name=\"{}\" classname=\"e03.{}.{}\" time=\"0\"",
                token(&c.name),
                token(&suite.name),
                c.kind
            );
            match &c.outcome {
                Outcome::Passed => {
                    let _ = writeln!(x, "{open}/>");
                }
                Outcome::Failed { message } => {
                    let _ = writeln!(
                        x,
                        "{open}>\n      <failure message=\"{}\" type=\"{}\">{}</failure>\n    \
                         </testcase>",
                        escape(message),
                        c.kind,
                        escape(&format!("{}: {message}", c.name))
                    );
                }
                Outcome::Skipped { message } => {
                    let _ = writeln!(
                        x,
                        "{open}>\n      <skipped message=\"{}\"/>\n    </testcase>",
                        escape(message)
                    );
                }
            }
        }
        let _ = writeln!(
            x,
            "    <system-out>{}</system-out>\n    <system-err></system-err>\n  </testsuite>",
            escape(&suite.out.join("\n"))
        );
    }
    x.push_str("</testsuites>\n");
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_threshold_is_a_failure_with_its_bound_and_value() {
        let mut s = Suite::new("blip");
        s.add_thresholds(&[
            ThresholdRow {
                threshold: "p99 (ms) of C < 5".into(),
                metric: "p99 (ms)".into(),
                strategy: "C".into(),
                seed: 1,
                bound: "< 5".into(),
                measured: "812.40".into(),
                pass: Some(false),
            },
            ThresholdRow {
                threshold: "peak 100 ms of C <= 500".into(),
                metric: "peak 100 ms".into(),
                strategy: "C".into(),
                seed: 1,
                bound: "<= 500".into(),
                measured: "31".into(),
                pass: Some(true),
            },
        ]);
        s.out.push("a <run> & more".into());
        let x = render(&[s], "2026-12-06T14:30:05", 1.5);
        assert!(x.contains(
            "<testsuite package=\"e03\" id=\"0\" name=\"blip\" timestamp=\"2026-12-06T14:30:05\" \
             hostname=\"localhost\" tests=\"2\" failures=\"1\" errors=\"0\" skipped=\"0\" \
             time=\"1.500\">"
        ));
        assert!(x.contains(
            "<testcase name=\"p99 (ms) of C &lt; 5 (seed 1)\" classname=\"e03.blip.threshold\" \
             time=\"0\">\n      <failure message=\"bound &lt; 5, measured 812.40\" \
             type=\"threshold\">"
        ));
        assert!(x.contains(
            "<testcase name=\"peak 100 ms of C &lt;= 500 (seed 1)\" \
             classname=\"e03.blip.threshold\" time=\"0\"/>"
        ));
        assert!(x.contains("<system-out>a &lt;run&gt; &amp; more</system-out>"));
        assert!(x.ends_with("</testsuites>\n"));
    }

    #[test]
    fn a_scorecard_row_fails_only_below_what_is_required() {
        let card = Scorecard {
            command: vec!["client".into()],
            claimed_attempts: None,
            complete: true,
            rows: vec![crate::audit::Row {
                item: 4,
                check: "backoff".into(),
                verdict: Verdict::Warn,
                evidence: "waits 10, 10 ms".into(),
                advice: String::new(),
            }],
        };
        let mut s = Suite::new("audit");
        s.add_scorecard(&card, &|_| Verdict::Warn);
        assert_eq!(s.cases[0].outcome, Outcome::Passed);
        let mut s = Suite::new("audit");
        s.add_scorecard(&card, &|_| Verdict::Pass);
        assert_eq!(
            s.cases[0].outcome,
            Outcome::Failed {
                message: "WARN (required: PASS or better): waits 10, 10 ms".into()
            }
        );
        assert_eq!(s.cases[0].name, "4. backoff");
    }

    #[test]
    fn tokens_lose_line_breaks_and_text_loses_control_characters() {
        assert_eq!(token("a\n  b\tc"), "a b c");
        assert_eq!(token("  "), "-");
        assert_eq!(escape("x\u{1}y\n"), "xy\n");
    }
}
