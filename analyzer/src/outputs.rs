//! Files written beside the logs: `summary.json` (spec section 8), the arrival series CSVs, the
//! figures and `report.md`.
//!
//! `summary.json` is written to a temporary file and renamed over the old one, so a reader never
//! sees half a summary. Its runs carry every field of spec section 6 plus `complete`, `fidelity`
//! and `matched` (null for the simulator).

use std::fs;
use std::path::Path;

use crate::metrics::RunMetrics;
use crate::tables::Table;
use crate::{figures, html, tables, AnalyzeError, ScenarioSummary};

fn out_err(path: &Path, e: impl std::fmt::Display) -> AnalyzeError {
    AnalyzeError::Output {
        path: path.into(),
        message: e.to_string(),
    }
}

/// Writes `bytes` to `path` at once ([`e03_io::logs::write_atomic`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), AnalyzeError> {
    e03_io::logs::write_atomic(path, bytes).map_err(|e| out_err(path, e))
}

pub use e03_metrics::summary_json;

/// Writes `arrivals_100ms.csv` or `arrivals_1s.csv`: `seed,window_start_s,<S>...,<S>_retries...`.
pub fn write_series_csv(
    path: &Path,
    s: &ScenarioSummary,
    one_second: bool,
) -> Result<(), AnalyzeError> {
    let strategies = s.strategies();
    let mut w = csv::Writer::from_path(path).map_err(|e| out_err(path, e))?;
    let mut header = vec!["seed".to_string(), "window_start_s".to_string()];
    header.extend(strategies.iter().cloned());
    header.extend(strategies.iter().map(|id| format!("{id}_retries")));
    w.write_record(&header).map_err(|e| out_err(path, e))?;
    for seed in s.seeds() {
        let runs: Vec<Option<&RunMetrics>> = strategies
            .iter()
            .map(|id| s.runs_of(id).find(|r| r.seed == seed))
            .collect();
        let series = |r: &RunMetrics| -> (Vec<u64>, Vec<u64>) {
            if one_second {
                (r.arrivals_1s.clone(), r.retries_1s.clone())
            } else {
                (r.arrivals_100ms.clone(), r.retries_100ms.clone())
            }
        };
        let data: Vec<(Vec<u64>, Vec<u64>)> = runs
            .iter()
            .map(|r| r.map(series).unwrap_or_default())
            .collect();
        let windows = data.iter().map(|d| d.0.len()).max().unwrap_or(0);
        for k in 0..windows {
            let start = if one_second {
                k.to_string()
            } else {
                format!("{:.1}", k as f64 / 10.0)
            };
            let mut row = vec![seed.to_string(), start];
            row.extend(
                data.iter()
                    .map(|d| d.0.get(k).copied().unwrap_or(0).to_string()),
            );
            row.extend(
                data.iter()
                    .map(|d| d.1.get(k).copied().unwrap_or(0).to_string()),
            );
            w.write_record(&row).map_err(|e| out_err(path, e))?;
        }
    }
    w.flush().map_err(|e| out_err(path, e))
}

/// One piece of a run's report. The report is built once, as blocks, by [`report_blocks`];
/// `report.md` ([`report_markdown`]) and `report.html` ([`crate::html::report_html`]) render the
/// same blocks, so both say the same thing from the same data.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// A heading of level 1 or 2.
    Heading(u8, String),
    /// A paragraph; may hold markdown links `[text](file)`, `code` and *emphasis*.
    Para(String),
    Table(Table),
    /// A figure written beside the report: its file name (`comparison.svg`) and its alt text.
    Figure {
        file: String,
        alt: String,
    },
    /// Preformatted text.
    Pre(String),
    /// A bulleted list.
    Items(Vec<String>),
}

/// The report's blocks: the tables, the conclusion, the figures and the checks, in order.
pub fn report_blocks(s: &ScenarioSummary) -> Vec<Block> {
    use Block::*;
    let para = |t: &str| Para(t.to_string());
    let fig = |file: &str, alt: &str| Figure {
        file: file.into(),
        alt: alt.into(),
    };
    let mut b = vec![Heading(
        1,
        format!("{} ({})", s.scenario.title(), s.scenario.name()),
    )];
    b.extend(tables::header_lines(s).into_iter().map(Para));
    b.push(Heading(2, "Comparison".into()));
    b.push(Table(tables::main_table(s)));
    let mut note = String::from(if s.params.timeline(&s.scenario).incident().is_some() {
        "Success is the share of operations started during the incident (from the first down, \
         freeze or degraded phase to the end of the last one) that succeeded; "
    } else {
        "Success is the share of all operations that succeeded (the scenario has no incident); "
    });
    note += "total and peaks count arrivals at the dependency (server log); p95/p99 are latencies \
             of all operations, failures included. With several seeds a cell reads mean (min..max) \
             over seeds.";
    if let Some(why) = tables::recovery_note(s) {
        note += " ";
        note += &why;
    }
    b.push(Para(note));
    b.extend(tables::conclusion(s).into_iter().map(Para));
    b.push(fig("comparison.svg", "comparison"));
    b.push(Heading(2, "Arrivals at the dependency".into()));
    b.push(para("Per 100 ms window ([CSV](arrivals_100ms.csv)):"));
    b.push(fig("arrivals_100ms.svg", "arrivals per 100 ms"));
    b.push(para(
        "Per 1 s window ([CSV](arrivals_1s.csv)): the same traffic, with the spike averaged away:",
    ));
    b.push(fig("arrivals_1s.svg", "arrivals per 1 s"));
    if let Some(t) = tables::series_table(s) {
        b.push(para(
            "Arrivals per 100 ms window around the outage (share of retries in brackets):",
        ));
        b.push(Table(t));
    }
    if let Some(t) = tables::verdict_table(s) {
        b.push(Heading(2, "Seed-to-seed verdicts".into()));
        b.push(para(
            "A difference is *measured* only when it is larger than the spread (max - min across \
             seeds) of both strategies.",
        ));
        b.push(Table(t));
    }
    let extra: Vec<String> = tables::fidelity_lines(s)
        .into_iter()
        .chain(tables::matched_lines(s))
        .collect();
    if !extra.is_empty() {
        b.push(Heading(2, "Fidelity of the live run".into()));
        b.push(Items(extra));
    }
    if let Some(t) = e03_metrics::tables::shards_table(s) {
        b.push(Heading(2, "Shards".into()));
        b.push(para(
            "The run's clients were split over swarm processes (the lab's docs/shards.md): each \
             shard's attempts against the arrivals of its own clients, matched by identity, and \
             how late it sent them.",
        ));
        b.push(Table(t));
    }
    if let Some(log) = e03_metrics::checks::attempt_log_text(s) {
        b.push(Heading(2, "Attempts of each caller".into()));
        b.push(para("([attempts.txt](attempts.txt))"));
        b.push(Pre(log));
    }
    if let Some(t) = e03_metrics::tables::no_answer_table(s) {
        b.push(Heading(2, "Attempts without an answer".into()));
        b.push(para(
            "Sent attempts that got no HTTP answer, from the client logs: a *read timeout* (no \
             complete answer within the attempt's timeout), a *connect refused* (nothing \
             listened), a *connect timeout*, a *reset before answer* (the connection broke \
             after the request left, before the answer's head) and a *reset mid-body* ([CSV](no_answer.csv)).",
        ));
        if s.runs.iter().any(|r| r.wire.is_some()) {
            b.push(para(
                "With a fault on the wire, from both logs: *timed out, answer sent* counts the \
                 read timeouts whose answer the dependency had already sent (the work fitted in \
                 the timeout; the network did not), and *ops worked twice* the operations whose \
                 work the dependency did more than once (a retry left before the first answer \
                 arrived).",
            ));
        }
        b.push(Table(t));
    }
    if let Some(t) = e03_metrics::tables::connections_table(s) {
        b.push(Heading(2, "Connections to the proxy in front".into()));
        b.push(para(
            "From the proxy's log (`wire-*.jsonl`): the connections the callers opened, the ones \
             the proxy reset, and attempts sent per connection ([CSV](connections.csv)).",
        ));
        b.push(Table(t));
    }
    if let Some(t) = e03_metrics::ledger::ledger_table(s) {
        b.push(Heading(
            2,
            "Charges, lost answers and permanent errors".into(),
        ));
        b.push(para(
            "From the ledger (`ledger-*.jsonl`: every committed charge) and the logs. A \
             *duplicate charge* is a charge beyond the first of its operation; a *retried lost \
             answer* is an answer lost after its commit (connection reset) whose operation \
             sent another attempt; *retries after permanent* counts the attempts sent after \
             an operation's first 400/401/403/404/409/422 ([CSV](ledger.csv)).",
        ));
        b.push(Table(t));
    }
    if let Some(t) = e03_metrics::checks::check_table(s) {
        b.push(Heading(
            2,
            "Check against the source's published figures".into(),
        ));
        b.push(Table(t));
        let notes = e03_metrics::checks::check_notes(s);
        if !notes.is_empty() {
            b.push(Items(notes));
        }
    }
    if let Some(t) = e03_metrics::steps::step_table(s) {
        b.push(Heading(2, "Who pays for a retry (seed 002)".into()));
        b.push(para(
            "Means over the seeds ([CSV](steps.csv)); calls, 429s and content failures (504 and \
             502) of the batch flow, tokens of both flows, wasted tokens paid for answers that \
             were not a success. A difference from `none` is *measured* only when it exceeds the \
             seed-to-seed difference of `none`.",
        ));
        b.push(Table(t));
        if let Some(t) = e03_metrics::steps::step_seed_table(s) {
            b.push(para("Completion / interactive completion per seed:"));
            b.push(Table(t));
        }
        b.push(fig(
            "calls_per_step.svg",
            "calls in the rate limit's window per step",
        ));
    }
    if let Some(t) = e03_metrics::openloop::open_loop_table(s) {
        b.push(Heading(2, "Open loop".into()));
        b.push(para(
            "Latency from each operation's intended start; per-second series in \
             open_loop_1s.csv; the verdict's rule in docs/metastability.md.",
        ));
        b.push(Table(t));
        b.push(para(
            "Work done is every answer a worker served; goodput, the successes that reached a \
             client still waiting; wasted work, the rest (late: answered after its client gave \
             up).",
        ));
        b.push(fig("goodput.svg", "work done and useful work per second"));
    }
    if let Some(t) = e03_metrics::tables::class_table(s) {
        b.push(Heading(2, "By class".into()));
        b.push(para(
            "Critical and best-effort operations (E03_BEST_EFFORT_SHARE); priority admission \
             sheds best effort first.",
        ));
        b.push(Table(t));
    }
    if let Some(t) = e03_metrics::tables::dependency_table(s) {
        b.push(Heading(2, "By dependency".into()));
        b.push(para(
            "Over a partition (E03_BALANCER=partition), client c calls dependency c mod \
             E03_REPLICAS: each dependency's operations.",
        ));
        b.push(Table(t));
    }
    if let Some(t) = e03_metrics::tables::fanout_table(s) {
        b.push(Heading(2, "Fan-out requests".into()));
        b.push(para(
            "Each request calls the dependency E03_FANOUT times at once and ends with its \
             slowest call (The Tail at Scale).",
        ));
        b.push(Table(t));
    }
    if let Some(t) = e03_metrics::tables::hedge_table(s) {
        b.push(Heading(2, "Hedging".into()));
        b.push(para(e03_metrics::tables::HEDGE_CAPTION));
        b.push(Table(t));
    }
    b
}

/// `report.md`: the report's blocks as markdown, for reading on GitHub.
pub fn report_markdown(s: &ScenarioSummary) -> String {
    blocks_markdown(report_blocks(s))
}

/// Blocks as markdown (`report.md`, and a chain run's `chain.md`).
pub fn blocks_markdown(blocks: Vec<Block>) -> String {
    let mut md = String::new();
    for block in blocks {
        match block {
            Block::Heading(level, text) => {
                md += &format!("{} {text}\n\n", "#".repeat(level as usize))
            }
            Block::Para(text) => md += &format!("{text}\n\n"),
            Block::Table(t) => md += &format!("{}\n", t.markdown()),
            Block::Figure { file, alt } => md += &format!("![{alt}]({file})\n\n"),
            Block::Pre(text) => md += &format!("```text\n{text}```\n\n"),
            Block::Items(lines) => {
                for line in lines {
                    md += &format!("- {line}\n");
                }
                md += "\n";
            }
        }
    }
    md
}

/// Writes summary.json, the CSVs, the figures and report.md into `dir`.
pub fn write_outputs(dir: &Path, s: &ScenarioSummary) -> Result<(), AnalyzeError> {
    fs::create_dir_all(dir).map_err(|e| out_err(dir, e))?;
    write_atomic(&dir.join("summary.json"), summary_json(s).as_bytes())?;
    write_series_csv(&dir.join("arrivals_100ms.csv"), s, false)?;
    write_series_csv(&dir.join("arrivals_1s.csv"), s, true)?;
    figures::write_arrivals(dir, s)?;
    figures::write_comparison(dir, s)?;
    if let Some(t) = e03_metrics::ledger::ledger_table(s) {
        let rows: Vec<Vec<String>> = std::iter::once(t.headers).chain(t.rows).collect();
        write_csv_rows(&dir.join("ledger.csv"), &rows)?;
    }
    if let Some(t) = e03_metrics::tables::no_answer_table(s) {
        let rows: Vec<Vec<String>> = std::iter::once(t.headers).chain(t.rows).collect();
        write_csv_rows(&dir.join("no_answer.csv"), &rows)?;
    }
    if let Some(t) = e03_metrics::tables::connections_table(s) {
        let rows: Vec<Vec<String>> = std::iter::once(t.headers).chain(t.rows).collect();
        write_csv_rows(&dir.join("connections.csv"), &rows)?;
    }
    if let Some(t) = e03_metrics::steps::step_table(s) {
        let rows: Vec<Vec<String>> = std::iter::once(t.headers).chain(t.rows).collect();
        write_csv_rows(&dir.join("steps.csv"), &rows)?;
        figures::write_steps(dir, s)?;
    }
    if s.runs.iter().any(|r| r.open_loop.is_some()) {
        let rows = e03_metrics::openloop::open_loop_csv_rows(s);
        write_csv_rows(&dir.join("open_loop_1s.csv"), &rows)?;
        figures::write_goodput(dir, s)?;
    }
    if let Some(log) = e03_metrics::checks::attempt_log_text(s) {
        let path = dir.join("attempts.txt");
        fs::write(&path, log).map_err(|e| out_err(&path, e))?;
    }
    let report = dir.join("report.md");
    fs::write(&report, report_markdown(s)).map_err(|e| out_err(&report, e))?;
    // Last: it inlines the figures written above.
    let page = dir.join("report.html");
    let text = html::report_html(dir, s);
    fs::write(&page, text).map_err(|e| out_err(&page, e))
}

/// Writes rows of cells as a CSV file (the simulator's sweep table, for one), creating its
/// directory.
pub fn write_csv_rows(path: &Path, rows: &[Vec<String>]) -> Result<(), AnalyzeError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).map_err(|e| out_err(dir, e))?;
    }
    let mut w = csv::Writer::from_path(path).map_err(|e| out_err(path, e))?;
    for row in rows {
        w.write_record(row).map_err(|e| out_err(path, e))?;
    }
    w.flush().map_err(|e| out_err(path, e))
}
