//! How far a scenario's figures can be trusted, decided once from the summary, so that every
//! output says the same: a run that was stopped, whose logs are cut or missing, or whose client
//! attempts and server arrivals do not match, gives its counts under a banner that says so, and
//! no comparison verdict, no check, no recovery verdict and no conclusion (issue "Outputs that
//! never overstate"). The terminal, `report.md`, `report.html` and `summary.json` (`complete`,
//! `trust`) all read it from here.

use serde::Serialize;

use crate::ScenarioSummary;

/// How far a scenario's figures can be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Trust {
    /// Every run ran to its end and, live, every client attempt matched a server arrival:
    /// verdicts, checks and conclusions are drawn.
    Whole,
    /// A run was stopped early, or a log is cut or missing: the figures cover what was logged
    /// until then.
    Incomplete,
    /// Every run ended, but in some the client's attempts and the server's arrivals do not
    /// match one to one: attempts were lost between the two (the machine was overloaded, or
    /// a process fell behind), so the two sides' counts disagree.
    Unmatched,
}

impl Trust {
    /// The trust of a summary: incomplete first, then unmatched.
    pub fn of(s: &ScenarioSummary) -> Trust {
        if !s.complete {
            Trust::Incomplete
        } else if s
            .runs
            .iter()
            .any(|r| r.matched.as_ref().is_some_and(|m| !m.ok()))
        {
            Trust::Unmatched
        } else {
            Trust::Whole
        }
    }

    /// Whether verdicts, checks and conclusions may be drawn from the figures.
    pub fn judges(self) -> bool {
        self == Trust::Whole
    }

    /// The banner above every output of an untrusted run: what happened, which figures still
    /// hold, and what is left out. `None` for a whole run.
    pub fn banner(self) -> Option<String> {
        match self {
            Trust::Whole => None,
            Trust::Incomplete => Some(
                "INCOMPLETE RUN, NO VERDICTS: at least one run was stopped early or its logs are \
                 cut or missing. The counts below are what was logged until then; they do not \
                 describe the whole scenario, so the comparisons' verdicts, the recovery \
                 verdicts, the checks and the conclusions are left out."
                    .into(),
            ),
            Trust::Unmatched => Some(
                "UNMATCHED RUN, NO VERDICTS: the client attempts and the server arrivals of at \
                 least one run do not match (attempts were lost between the two; the machine \
                 was likely overloaded: see the fidelity lines). Each side's counts below are \
                 what it logged, but they disagree, so the comparisons' verdicts, the recovery \
                 verdicts, the checks and the conclusions are left out."
                    .into(),
            ),
        }
    }
}

/// [`Trust::of`], for callers that hold only the summary.
pub fn trust(s: &ScenarioSummary) -> Trust {
    Trust::of(s)
}
