//! The report's blocks: [`Block`], one piece of a report, and [`report_blocks`], a scenario
//! run's report built once as blocks. On its own, below both renderers, so that `report.md`
//! ([`crate::outputs`]) and `report.html` ([`crate::html`]) render the same blocks without
//! importing each other: the writer of the outputs calls the HTML renderer, never the other way
//! round.

use crate::tables::{self, Table};
use crate::ScenarioSummary;

/// One piece of a run's report. The report is built once, as blocks, by [`report_blocks`];
/// `report.md` ([`crate::outputs::report_markdown`]) and `report.html`
/// ([`crate::html::report_html`]) render the same blocks, so both say the same thing from the
/// same data.
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
    // One conclusion first: what the run shows; the comparisons follow the tables.
    let headline = tables::headline(s);
    b.extend(headline.clone().map(Para));
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
    // The conclusion's findings as paragraphs, the pairs of strategies as one list.
    let pairs = tables::pair_lines(s);
    let (items, paras): (Vec<String>, Vec<String>) = tables::conclusion(s)
        .into_iter()
        .partition(|l| pairs.contains(l));
    let (notes, paras): (Vec<String>, Vec<String>) = paras
        .into_iter()
        .partition(|l| l.starts_with("One seed cannot tell"));
    let said = |l: &String| headline.as_ref().is_some_and(|h| h.contains(l.as_str()));
    b.extend(paras.into_iter().filter(|l| !said(l)).map(Para));
    if !items.is_empty() {
        b.push(para(
            "Each pair of strategies, on every measure they differ on:",
        ));
        b.push(Items(items));
    }
    b.extend(notes.into_iter().map(Para));
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
    if let Some(t) = e03_metrics::statuses::status_table(s) {
        b.push(Heading(2, "Answers by status".into()));
        b.push(Para(format!("{}.", e03_metrics::statuses::STATUS_CAPTION)));
        b.push(Table(t));
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
    if let Some(t) = e03_metrics::thresholds::threshold_table(s) {
        b.push(Heading(
            2,
            e03_metrics::thresholds::THRESHOLD_HEADING.into(),
        ));
        b.push(Table(t));
    }
    if let Some(t) = e03_metrics::checks::check_table(s) {
        b.push(Heading(2, e03_metrics::checks::CHECK_HEADING.into()));
        b.push(Table(t));
        let notes = e03_metrics::checks::check_notes(s);
        if !notes.is_empty() {
            b.push(Items(notes));
        }
    }
    if let Some(t) = e03_metrics::steps::step_table(s) {
        b.push(Heading(
            2,
            "Who pays for a retry (the rate-limit article)".into(),
        ));
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
