//! The scorecard's types: a verdict, a row (one question of the retry-logic article's checklist) and the card
//! `lab audit` prints and keeps.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

/// A verdict of the scorecard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Verdict {
    Pass,
    Warn,
    Fail,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Warn => "WARN",
            Verdict::Fail => "FAIL",
        }
    }
}

/// One row: a question of the retry-logic article's checklist.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// The checklist item it belongs to (1 to 5).
    pub item: u32,
    pub check: String,
    pub verdict: Verdict,
    pub evidence: String,
    pub advice: String,
}

/// The whole scorecard.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scorecard {
    pub command: Vec<String>,
    pub claimed_attempts: Option<u32>,
    /// False when the audit was stopped before its battery ended (then nothing is graded).
    pub complete: bool,
    pub rows: Vec<Row>,
}

impl Scorecard {
    pub fn failed(&self) -> bool {
        self.rows.iter().any(|r| r.verdict == Verdict::Fail)
    }

    /// The verdict of the row named `check`.
    pub fn verdict(&self, check: &str) -> Option<Verdict> {
        self.rows
            .iter()
            .find(|r| r.check == check)
            .map(|r| r.verdict)
    }

    /// The table `lab audit` prints.
    pub fn table(&self) -> String {
        let w = self.rows.iter().map(|r| r.check.len()).max().unwrap_or(5);
        let mut s = format!("| # | {:w$} | verdict | evidence |\n", "check");
        let _ = writeln!(s, "|---|{}|---------|----------|", "-".repeat(w + 2));
        for r in &self.rows {
            let _ = writeln!(
                s,
                "| {} | {:w$} | {:7} | {} |",
                r.item,
                r.check,
                r.verdict.as_str(),
                r.evidence
            );
        }
        s
    }

    /// `scorecard.md`: the table, then each row's advice.
    pub fn markdown(&self) -> String {
        let mut s = String::from("# Retry audit (the retry-logic article's checklist)\n\n");
        if !self.command.is_empty() {
            let _ = writeln!(s, "Client: `{}`\n", self.command.join(" "));
        }
        s.push_str(&self.table());
        s.push_str("\n## Advice\n\n");
        for r in &self.rows {
            let _ = writeln!(
                s,
                "- **{}** ({}): {}",
                r.check,
                r.verdict.as_str(),
                r.advice
            );
        }
        s
    }
}

/// A row of the card.
pub(crate) fn row(item: u32, check: &str, verdict: Verdict, evidence: String, advice: &str) -> Row {
    Row {
        item,
        check: check.into(),
        verdict,
        evidence,
        advice: advice.into(),
    }
}
