//! The HTTP statuses the clients received, per strategy: every answer's status (200, 429, 503,
//! 504, ...) counted from the attempts' ends, as the client log records them (live) or as the
//! simulator hands them to the accumulator, the same records. A 429 phase's rejections, a down
//! phase's 503s and a deadline's 504s each get a column of their own.
//!
//! A leaf beside the accumulator, which counts with it: it reads only the records' [`LineEnd`]
//! and the table renderer (not `stats`, which reads the accumulator), and its table reads the
//! runs of a [`ScenarioSummary`].

use std::collections::{BTreeMap, BTreeSet, HashMap};

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::quantiles::{histogram, quantile_ms};
use crate::records::LineEnd;
use crate::table::{Spread, Table};
use crate::ScenarioSummary;

/// Answers per HTTP status; attempts that got no answer (a timeout, a broken connection, a
/// cancelled hedge, one failed fast) count nothing here.
pub type StatusCounts = BTreeMap<u16, u64>;

/// Counts one attempt's end when it is an answer.
pub fn count(counts: &mut StatusCounts, end: LineEnd) {
    if let LineEnd::Status(code) = end {
        *counts.entry(code).or_default() += 1;
    }
}

/// Every status any run of the scenario received, in order.
pub fn statuses_seen(s: &ScenarioSummary) -> Vec<u16> {
    let seen: BTreeSet<u16> = s
        .runs
        .iter()
        .flat_map(|r| r.statuses.keys().copied())
        .collect();
    seen.into_iter().collect()
}

/// The answers each strategy's clients received, one column per status, a cell `mean
/// (min..max)` over the seeds (a seed without that status counts 0); `None` when only one kind
/// of status occurred (every answer a 200: nothing to tell apart).
pub fn status_table(s: &ScenarioSummary) -> Option<Table> {
    let codes = statuses_seen(s);
    if codes.len() < 2 {
        return None;
    }
    let mut headers = vec!["strategy".to_string()];
    headers.extend(codes.iter().map(|c| c.to_string()));
    let rows = s
        .strategies()
        .iter()
        .map(|id| {
            let mut row = vec![s.strategy_label(id)];
            for code in &codes {
                let counts: Vec<f64> = s
                    .runs_of(id)
                    .map(|r| r.statuses.get(code).copied().unwrap_or(0) as f64)
                    .collect();
                row.push(cell(&Spread::of(&counts)));
            }
            row
        })
        .collect();
    Some(Table { headers, rows })
}

/// What the status table's columns are, printed above it.
pub const STATUS_CAPTION: &str =
    "Answers the clients received, by HTTP status (client log, mean (min..max) over seeds)";

/// A count over seeds: `12`, or `12 (9..15)` when the seeds differ.
fn cell(sp: &Spread) -> String {
    // Whole numbers, halves away from zero, as every count of the tables.
    let v = |x: f64| format!("{:.0}", x.round());
    if sp.min == sp.max {
        v(sp.mean)
    } else {
        format!("{} ({}..{})", v(sp.mean), v(sp.min), v(sp.max))
    }
}

/// What a dependency answered, from its log alone (`lab analyze --server-log`: no client log,
/// so any client): every `response` record's status, and the time from each request's `arrival`
/// to its `response`, the two matched by `seq`.
#[derive(Debug)]
pub struct ServerTally {
    /// Arrival instants of the requests not answered yet, by `seq`.
    waiting: HashMap<u64, u64>,
    statuses: StatusCounts,
    latency: Histogram<u64>,
    /// Responses whose arrival the log does not hold.
    unmatched: u64,
}

impl Default for ServerTally {
    fn default() -> Self {
        ServerTally {
            waiting: HashMap::new(),
            statuses: StatusCounts::new(),
            latency: histogram(),
            unmatched: 0,
        }
    }
}

impl ServerTally {
    /// An `arrival` record.
    pub fn arrival(&mut self, seq: u64, t_us: u64) {
        self.waiting.insert(seq, t_us);
    }

    /// A `response` record: its status counts whether or not its arrival is in the log.
    pub fn response(&mut self, seq: u64, t_us: u64, status: u16) {
        *self.statuses.entry(status).or_default() += 1;
        match self.waiting.remove(&seq) {
            Some(at) => self
                .latency
                .saturating_record(t_us.saturating_sub(at).max(1)),
            None => self.unmatched += 1,
        }
    }

    pub fn finish(self) -> ServerAnswers {
        let q = |p| quantile_ms(&self.latency, p);
        ServerAnswers {
            answered: self.statuses.values().sum(),
            unanswered: self.waiting.len() as u64,
            statuses: self.statuses,
            p50_ms: q(0.50),
            p95_ms: q(0.95),
            p99_ms: q(0.99),
            p999_ms: q(0.999),
            max_ms: self.latency.max() as f64 / 1000.0,
            unmatched: self.unmatched,
        }
    }
}

/// A server log's answers ([`ServerTally`]): `load.json`'s `answers`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerAnswers {
    /// Responses in the log.
    pub answered: u64,
    /// Arrivals with no response in the log (in flight when it ended).
    pub unanswered: u64,
    /// Responses per HTTP status.
    pub statuses: StatusCounts,
    /// Arrival to response, in ms, over the responses matched to their arrival.
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
    /// Responses whose arrival the log does not hold (not in the percentiles).
    pub unmatched: u64,
}

/// The server's answers as one row per status (count and share) and the latency line under
/// it, for the terminal.
pub fn server_answers_table(a: &ServerAnswers) -> Table {
    let mut rows: Vec<Vec<String>> = a
        .statuses
        .iter()
        .map(|(code, n)| {
            let share = 100.0 * *n as f64 / a.answered.max(1) as f64;
            vec![code.to_string(), n.to_string(), format!("{share:.1}%")]
        })
        .collect();
    rows.push(vec!["all".into(), a.answered.to_string(), "100.0%".into()]);
    Table {
        headers: ["status", "answers", "share"].map(String::from).to_vec(),
        rows,
    }
}

/// The latency percentiles of a server log's answers, one table row.
pub fn server_latency_table(a: &ServerAnswers) -> Table {
    // Answers under 1 ms (a down phase's, over loopback) keep their µs: 0.042, not 0.0.
    let ms = |v: f64| {
        if v < 1.0 {
            format!("{v:.3}")
        } else {
            format!("{v:.1}")
        }
    };
    Table {
        headers: [
            "answers timed",
            "p50 ms",
            "p95 ms",
            "p99 ms",
            "p99.9 ms",
            "max ms",
        ]
        .map(String::from)
        .to_vec(),
        rows: vec![vec![
            (a.answered - a.unmatched).to_string(),
            ms(a.p50_ms),
            ms(a.p95_ms),
            ms(a.p99_ms),
            ms(a.p999_ms),
            ms(a.max_ms),
        ]],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_summaries::{run, summary};

    #[test]
    fn answers_are_counted_by_status_and_nothing_else() {
        let mut c = StatusCounts::new();
        for end in [
            LineEnd::Status(200),
            LineEnd::Status(429),
            LineEnd::Status(200),
            LineEnd::Timeout,
            LineEnd::Cancelled,
            LineEnd::FailedFast,
            LineEnd::Unanswered,
        ] {
            count(&mut c, end);
        }
        assert_eq!(c, StatusCounts::from([(200, 2), (429, 1)]));
    }

    #[test]
    fn the_table_shows_every_status_per_strategy_only_when_several_occur() {
        let with = |id: &str, seed: u64, codes: &[(u16, u64)]| {
            let mut r = run(id, seed, 1.0, 10, 0, 1);
            r.statuses = codes.iter().copied().collect();
            r
        };
        let s = summary(
            "B,C",
            vec![
                with("B", 1, &[(200, 90), (503, 10)]),
                with("C", 1, &[(200, 95), (429, 5)]),
                with("B", 2, &[(200, 80), (503, 20)]),
                with("C", 2, &[(200, 95), (429, 5)]),
            ],
        );
        let t = status_table(&s).expect("three kinds of status");
        assert_eq!(t.headers, ["strategy", "200", "429", "503"]);
        assert_eq!(t.rows[0][1..], ["85 (80..90)", "0", "15 (10..20)"]);
        assert_eq!(t.rows[1][1..], ["95", "5", "0"]);
        let only_200 = summary("B", vec![with("B", 1, &[(200, 9)])]);
        assert_eq!(status_table(&only_200), None);
    }

    #[test]
    fn a_server_log_s_answers_are_counted_by_status_and_timed_from_their_arrival() {
        let mut t = ServerTally::default();
        t.arrival(0, 1_000);
        t.arrival(1, 2_000);
        t.arrival(2, 3_000);
        t.response(1, 12_000, 429); // 10 ms
        t.response(0, 21_000, 200); // 20 ms
        t.response(7, 30_000, 503); // no arrival: counted, not timed
        let a = t.finish();
        assert_eq!(
            a.statuses,
            StatusCounts::from([(200, 1), (429, 1), (503, 1)])
        );
        assert_eq!((a.answered, a.unanswered, a.unmatched), (3, 1, 1));
        // HDR's 3 significant digits: 10.007 and 20.015 ms, shown to 0.1 ms.
        assert!((a.p50_ms - 10.0).abs() < 0.01 && (a.max_ms - 20.0).abs() < 0.02);
        let rows = server_answers_table(&a).rows;
        assert_eq!(rows[1], ["429", "1", "33.3%"]);
        assert_eq!(rows[3], ["all", "3", "100.0%"]);
        assert_eq!(
            server_latency_table(&a).rows[0],
            ["2", "10.0", "20.0", "20.0", "20.0", "20.0"]
        );
        let mut fast = ServerTally::default();
        fast.arrival(0, 1_000);
        fast.response(0, 1_042, 503);
        assert_eq!(server_latency_table(&fast.finish()).rows[0][1], "0.042");
    }
}
