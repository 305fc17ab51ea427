//! The comparison tables: one row per strategy (spec section 7's layout), the 100 ms series
//! around the outage, the seed-to-seed verdicts, and the fidelity and matching lines.
//!
//! Every table of the lab (the analyzer's, the simulator's sweeps and comparisons) is built as a
//! [`Table`] and rendered by the one renderer, [`Table::markdown`]: an aligned markdown pipe
//! table, which reads well in a terminal and renders on GitHub. Every spread over seeds is
//! written one way, `mean (min..max)` ([`crate::stats::format_spread`]).
//!
//! The terminal shows what fits in [`TERMINAL_COLUMNS`] columns: the comparison split into an
//! outcome and a load table, the fidelity as one compact row per run. `report.md` and
//! `summary.json` carry the full detail. Under the comparison, [`conclusion`] says in plain words
//! what the figures and the verdicts show.
//!
//! The top of the crate: [`print_tables`] prints every table, the figure modules' own (checks,
//! ledger, steps, open loop) among them, and nothing else in the crate reads this module. Parts
//! of it live in files of their own and are re-exported here at their old paths: the renderer,
//! spreads and verdicts (`table.rs`), the conclusion (`conclusion.rs`), and the live runs'
//! fidelity, matching and shard tables (`live_tables.rs`).

use std::io::Write;

pub use crate::conclusion::{conclusion, headline, pair_lines};
pub use crate::live_tables::{
    fidelity_lines, fidelity_table, matched_lines, mismatched_complete_runs, shards_table,
    warning_lines,
};
use crate::measures::{spread_of, Metric, PEAK_100MS, RETRIES, SUCCESS, TOTAL};
use crate::metrics::RunMetrics;
use crate::stats::{format_difference, format_spread, format_width, Unit};
pub use crate::table::{Spread, Table, Verdict};
use crate::ScenarioSummary;

/// Widest line the default terminal output may print.
pub const TERMINAL_COLUMNS: usize = 120;

/// One cell: `mean (min..max)` over seeds, the value alone for one seed.
fn cell(sp: &Spread, unit: Unit) -> String {
    format_spread(unit, sp)
}

/// Seeds as a short list, consecutive runs folded: `42,7,1-3`.
pub fn seed_ranges(seeds: &[u64]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < seeds.len() {
        let mut j = i;
        while j + 1 < seeds.len() && seeds[j + 1] == seeds[j] + 1 {
            j += 1;
        }
        parts.push(if j - i >= 2 {
            format!("{}-{}", seeds[i], seeds[j])
        } else {
            seeds[i..=j]
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(",")
        });
        i = j + 1;
    }
    parts.join(",")
}

/// The lines above the tables: the banner of a run that cannot be trusted (first), then the
/// scenario, its seeds, live or simulated.
pub fn header_lines(s: &ScenarioSummary) -> Vec<String> {
    // An untrusted run says so first, before anything that looks like a result.
    let mut lines: Vec<String> = crate::trust::Trust::of(s).banner().into_iter().collect();
    lines.push(format!(
        "{} ({}): seeds {}, {}",
        s.scenario.title(),
        s.scenario.name(),
        seed_ranges(&s.seeds()),
        if s.simulated {
            "SIMULATED (discrete-event model, no HTTP)"
        } else {
            "live HTTP run"
        }
    ));
    lines
}

/// One row per strategy, spec section 7's columns; the strategy cell is the id and its name
/// ("C backoff + full jitter").
pub fn main_table(s: &ScenarioSummary) -> Table {
    let success = match s.params.timeline(&s.scenario).incident() {
        None => "success (all ops)",
        Some(_) => "success (affected)",
    };
    let mut headers = vec![
        "strategy",
        success,
        "total",
        "retries",
        "denied",
        "peak 1 s",
        "peak 100 ms",
        "p95 (ms)",
        "p99 (ms)",
        "recovery (s)",
    ];
    // Attempts a breaker or a throttle refused before sending: a column only where there are.
    let failed_fast = s.runs.iter().any(|r| r.failed_fast > 0);
    if failed_fast {
        headers.push("failed fast");
    }
    let rows = s
        .strategies()
        .iter()
        .map(|id| {
            let runs: Vec<&RunMetrics> = s.runs_of(id).collect();
            let sp = |f: fn(&RunMetrics) -> f64| spread_of(s, id, f);
            let mut name = id.clone();
            if runs.iter().any(|r| !r.complete) {
                name += " (incomplete)";
            }
            if let Some(n) = s.strategy_name(id).filter(|n| !n.is_empty()) {
                name = format!("{name} {n}");
            }
            let recovery = if !crate::trust::Trust::of(s).judges() && outage_edges(s).is_some() {
                // A stopped or unmatched run: no recovery verdict (see the banner).
                "n/a".into()
            } else if runs.iter().any(|r| r.recovered == Some(false)) {
                // Success never came back before the run's end: said, not shown as a number.
                let never = runs.iter().filter(|r| r.recovered == Some(false)).count();
                if never == runs.len() {
                    "not recovered".into()
                } else {
                    format!("not in {never} of {}", runs.len())
                }
            } else if runs.iter().all(|r| r.recovery_s.is_some()) {
                // The unit is in the header.
                cell(&sp(|r| r.recovery_s.unwrap_or(0) as f64), Unit::Seconds).replacen(" s", "", 1)
            } else if outage_edges(s).is_some() {
                // An outage, but no operation ended after it in some run: nothing measured.
                "n/a".into()
            } else {
                "-".into()
            };
            // No operation started during the incident (a run stopped before it): nothing
            // measured, not a 100% success.
            let success = if runs.iter().all(|r| r.affected_operations == Some(0)) {
                "n/a".to_string()
            } else {
                cell(&sp(SUCCESS.2), Unit::Share)
            };
            let mut row = vec![
                name,
                success,
                cell(&sp(TOTAL.2), Unit::Count),
                cell(&sp(RETRIES.2), Unit::Count),
                cell(&sp(|r| r.retries_denied as f64), Unit::Count),
                cell(&sp(|r| r.peak_1s as f64), Unit::Count),
                cell(&sp(PEAK_100MS.2), Unit::Count),
                // Whole milliseconds, the unit in the header.
                cell(&sp(|r| r.p95_ms), Unit::Count),
                cell(&sp(|r| r.p99_ms), Unit::Count),
                recovery,
            ];
            if failed_fast {
                row.push(cell(&sp(|r| r.failed_fast as f64), Unit::Count));
            }
            row
        })
        .collect();
    Table {
        headers: headers.into_iter().map(String::from).collect(),
        rows,
    }
}

/// The terminal's half of the comparison that says how operations fared: success, p95, p99,
/// recovery.
pub fn outcome_table(s: &ScenarioSummary) -> Table {
    main_table(s).select(&[0, 1, 7, 8, 9])
}

/// The terminal's half of the comparison that says what the dependency received: total,
/// retries, denied, peak 100 ms (peak 1 s is in `report.md`: the same spike averaged away).
pub fn load_table(s: &ScenarioSummary) -> Table {
    let main = main_table(s);
    if main.headers.len() > 10 {
        main.select(&[0, 2, 3, 4, 10, 6])
    } else {
        main.select(&[0, 2, 3, 4, 6])
    }
}

/// Sent attempts that got no HTTP answer, by class, per strategy (client logs, or the model; mean (min..max)
/// over seeds): a read timeout and each way a connection failed (issue 27's outcome classes).
/// Only when some attempt's connection failed or the timeline has a fault on the wire: timeouts
/// alone are the fault of E03-A's slow answers and need no table. With a wire fault, two more
/// columns ([`crate::wire`]): the read timeouts whose answer had already left the dependency
/// (the network's alone), and the operations whose work the dependency did twice.
pub fn no_answer_table(s: &ScenarioSummary) -> Option<Table> {
    let wire = !s.params.timeline(&s.scenario).wire.is_empty();
    if !wire && s.runs.iter().all(|r| r.no_answer.broken() == 0) {
        return None;
    }
    use e03_model::attempt::Broken;
    let mut headers = vec!["strategy".to_string(), "read timeout".to_string()];
    headers.extend(Broken::ALL.iter().map(|b| match b {
        Broken::ConnectRefused => "connect refused".to_string(),
        Broken::ConnectTimeout => "connect timeout".to_string(),
        Broken::ResetBeforeAnswer => "reset before answer".to_string(),
        Broken::ResetMidBody => "reset mid-body".to_string(),
        Broken::Other => "other".to_string(),
    }));
    // A wire fault's figures (issue 27): read timeouts whose answer had already left the
    // dependency, and operations whose work it did twice.
    let wire_figures = s.runs.iter().any(|r| r.wire.is_some());
    if wire_figures {
        headers.push("timed out, answer sent".to_string());
        headers.push("ops worked twice".to_string());
    }
    let rows = s
        .strategies()
        .iter()
        .map(|id| {
            let mut row = vec![id.clone()];
            row.push(cell(
                &spread_of(s, id, |r| r.no_answer.timeout as f64),
                Unit::Count,
            ));
            for b in Broken::ALL {
                let counts: Vec<f64> = s.runs_of(id).map(|r| r.no_answer.of(b) as f64).collect();
                row.push(cell(&Spread::of(&counts), Unit::Count));
            }
            if wire_figures {
                for f in [
                    |w: &crate::wire::WireFigures| w.network_timeouts,
                    |w: &crate::wire::WireFigures| w.done_twice,
                ] {
                    let counts: Vec<f64> = s
                        .runs_of(id)
                        .map(|r| r.wire.as_ref().map_or(0.0, |w| f(w) as f64))
                        .collect();
                    row.push(cell(&Spread::of(&counts), Unit::Count));
                }
            }
            row
        })
        .collect();
    Some(Table { headers, rows })
}

/// The connections callers opened to the proxy in front, per strategy (the proxy's log, or the
/// model; mean (min..max) over seeds): how many, how many it reset, and attempts sent per
/// connection (the mean over seeds). Only when a run counted a connection (a timeline with a wire phase).
pub fn connections_table(s: &ScenarioSummary) -> Option<Table> {
    if !s
        .runs
        .iter()
        .any(|r| r.wire.is_some_and(|w| w.connections > 0))
    {
        return None;
    }
    let headers = [
        "strategy",
        "connections opened",
        "reset by the proxy",
        "attempts per connection",
    ]
    .map(String::from)
    .to_vec();
    let rows = s
        .strategies()
        .iter()
        .map(|id| {
            let of = |f: fn(&RunMetrics) -> f64| -> Vec<f64> { s.runs_of(id).map(f).collect() };
            let opened = of(|r| r.wire.map_or(0, |w| w.connections) as f64);
            let reset = of(|r| r.wire.map_or(0, |w| w.connections_reset) as f64);
            let per = of(|r| {
                let n = r.wire.map_or(0, |w| w.connections);
                if n == 0 {
                    0.0
                } else {
                    (r.operations + r.retries_sent) as f64 / n as f64
                }
            });
            vec![
                id.clone(),
                cell(&Spread::of(&opened), Unit::Count),
                cell(&Spread::of(&reset), Unit::Count),
                format!("{:.1}", per.iter().sum::<f64>() / per.len().max(1) as f64),
            ]
        })
        .collect();
    Some(Table { headers, rows })
}

/// Most 100 ms windows the series table shows (15 s): an outage that lasts the whole run (the
/// `budget` scenario's hour) is shown from its start, not row by row to its end.
pub const SERIES_MAX_WINDOWS: usize = 150;

/// 100 ms windows shown around the outage: from half a second before the freeze to three
/// seconds after its end (8.0 s to 13.0 s by default), at most [`SERIES_MAX_WINDOWS`].
pub fn series_windows(s: &ScenarioSummary) -> std::ops::Range<usize> {
    match outage_edges(s) {
        Some((start, end)) => {
            let from = ((start - 0.5).max(0.0) * 10.0).floor() as usize;
            let to = ((end + 3.0) * 10.0).ceil() as usize;
            from..to.max(from).min(from + SERIES_MAX_WINDOWS)
        }
        None => 0..0,
    }
}

/// Start and end (s) of the scenario's outage: its freeze, else its first down phase.
fn outage_edges(s: &ScenarioSummary) -> Option<(f64, f64)> {
    let t = s.params.timeline(&s.scenario);
    let freeze = t.freeze.map(|f| (f.start, f.end));
    let (start, end) = freeze.or_else(|| t.down.first().map(|d| (d.start, d.end)))?;
    Some((start.as_secs_f64(), end.as_secs_f64()))
}

/// E03-B: arrivals per 100 ms window around the outage, first seed, with the retry share.
pub fn series_table(s: &ScenarioSummary) -> Option<Table> {
    outage_edges(s)?;
    let seed = *s.seeds().first()?;
    let runs: Vec<&RunMetrics> = s
        .strategies()
        .iter()
        .filter_map(|id| s.runs_of(id).find(|r| r.seed == seed))
        .collect();
    let mut headers = vec![format!("window (seed {seed})")];
    headers.extend(runs.iter().map(|r| r.strategy.clone()));
    let rows = series_windows(s)
        .map(|k| {
            let mut row = vec![format!("{:.1} s", k as f64 / 10.0)];
            for r in &runs {
                let n = r.arrivals_100ms.get(k).copied().unwrap_or(0);
                let retries = r.retries_100ms.get(k).copied().unwrap_or(0);
                row.push(if n == 0 {
                    "0".into()
                } else {
                    format!("{n} ({:.0}%)", 100.0 * retries as f64 / n as f64)
                });
            }
            row
        })
        .collect();
    Some(Table { headers, rows })
}

/// With two seeds or more: B vs C (total, peak 100 ms) and C vs D (success, total, peak 100 ms).
pub fn verdict_table(s: &ScenarioSummary) -> Option<Table> {
    if !crate::trust::Trust::of(s).judges() {
        return None;
    }
    if s.seeds().len() < 2 {
        return None;
    }
    let pairs: [(&str, &str, &[Metric]); 2] = [
        ("B", "C", &[TOTAL, PEAK_100MS]),
        ("C", "D", &[SUCCESS, TOTAL, PEAK_100MS]),
    ];
    let strategies = s.strategies();
    let mut rows = Vec::new();
    for (a, b, metrics) in pairs {
        if !strategies.iter().any(|x| x == a) || !strategies.iter().any(|x| x == b) {
            continue;
        }
        for (name, unit, f) in metrics {
            let (sa, sb) = (spread_of(s, a, *f), spread_of(s, b, *f));
            rows.push(vec![
                format!("{a} vs {b}"),
                name.to_string(),
                format_difference(*unit, sb.mean - sa.mean),
                format!(
                    "{} / {}",
                    format_width(*unit, sa.width()),
                    format_width(*unit, sb.width())
                ),
                Verdict::of(&sa, &sb).cell().to_string(),
            ]);
        }
    }
    (!rows.is_empty()).then(|| Table {
        headers: [
            "pair",
            "metric",
            "difference (2nd - 1st)",
            "spreads (max - min)",
            "verdict",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    })
}

/// What the `recovery (s)` column means for this scenario, or why it shows no figure: `-`
/// without a freeze or down phase (the model measures recovery from the end of one), `n/a` where
/// no operation ended after the outage.
pub fn recovery_note(s: &ScenarioSummary) -> Option<String> {
    let t = s.params.timeline(&s.scenario);
    t.incident()?;
    if outage_edges(s).is_none() {
        return Some(
            "Recovery (s) reads `-`: the scenario has no freeze or down phase, and the model \
             measures recovery from the end of one."
                .into(),
        );
    }
    let mut note = String::from(
        "Recovery (s) counts whole seconds from the outage's end (the freeze's end, else the last \
         down phase's end) until a 1 s window of operations succeeds at 99% again",
    );
    if s.runs.iter().any(|r| r.recovery_s.is_none()) {
        note += "; `n/a` where no operation ended after the outage (a run stopped before it, or \
                 an outage that lasts to the end): nothing was measured";
    }
    Some(note + ".")
}

/// Wraps `text` into lines of at most `width` characters at spaces.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line += word;
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// Prints the header, the comparison (outcome and load tables), its conclusion, the series
/// (E03-B), verdicts, and a compact fidelity table, all within [`TERMINAL_COLUMNS`] columns;
/// `report.md` has the full detail.
pub fn print_tables<W: Write>(w: &mut W, s: &ScenarioSummary) -> std::io::Result<()> {
    for line in header_lines(s) {
        for l in wrap(&line, TERMINAL_COLUMNS) {
            writeln!(w, "{l}")?;
        }
    }
    let many = s.seeds().len() > 1;
    writeln!(
        w,
        "\nHow operations fared{}:",
        if many {
            " (mean (min..max) over seeds)"
        } else {
            ""
        }
    )?;
    write!(w, "{}", outcome_table(s).markdown())?;
    writeln!(w, "\nWhat the dependency received (arrivals, server log):")?;
    write!(w, "{}", load_table(s).markdown())?;
    let words = conclusion(s);
    if !words.is_empty() {
        writeln!(w)?;
        for line in words {
            for l in wrap(&line, TERMINAL_COLUMNS) {
                writeln!(w, "{l}")?;
            }
        }
    }
    if let Some(t) = series_table(s) {
        writeln!(
            w,
            "\nArrivals per 100 ms window at the dependency (share of retries in brackets):"
        )?;
        write!(w, "{}", t.markdown())?;
    }
    if let Some(t) = verdict_table(s) {
        writeln!(
            w,
            "\nSeed-to-seed verdicts (measured = |mean difference| larger than both spreads):"
        )?;
        write!(w, "{}", t.markdown())?;
    }
    if let Some(t) = fidelity_table(s) {
        writeln!(
            w,
            "\nFidelity of the live runs (p99s; full figures in report.md):"
        )?;
        write!(w, "{}", t.markdown())?;
        for line in warning_lines(s) {
            for l in wrap(&line, TERMINAL_COLUMNS) {
                writeln!(w, "{l}")?;
            }
        }
    }
    if let Some(t) = shards_table(s) {
        writeln!(
            w,
            "\nShards of the live runs (each swarm process's attempts against its clients' arrivals):"
        )?;
        write!(w, "{}", t.markdown())?;
    }
    if let Some(log) = crate::checks::attempt_log_text(s) {
        writeln!(w, "\nAttempts of each caller (attempts.txt):")?;
        write!(w, "{log}")?;
    }
    if let Some(t) = crate::statuses::status_table(s) {
        writeln!(w, "\n{}:", crate::statuses::STATUS_CAPTION)?;
        write!(w, "{}", t.markdown())?;
    }
    if let Some(t) = no_answer_table(s) {
        writeln!(w, "\nAttempts without an answer, by how they ended:")?;
        write!(w, "{}", t.markdown())?;
    }
    if let Some(t) = connections_table(s) {
        writeln!(w, "\nConnections to the proxy in front:")?;
        write!(w, "{}", t.markdown())?;
    }
    if let Some(t) = crate::ledger::ledger_table(s) {
        writeln!(
            w,
            "\nCharges, lost answers and permanent errors (ledger and logs, the retry-logic article):"
        )?;
        write!(w, "{}", t.markdown())?;
    }
    if let Some(t) = crate::thresholds::threshold_table(s) {
        write!(
            w,
            "\n{}:\n{}",
            crate::thresholds::THRESHOLD_HEADING,
            t.markdown()
        )?;
    }
    if let Some(t) = crate::checks::check_table(s) {
        writeln!(w, "\n{}:", crate::checks::CHECK_HEADING)?;
        write!(w, "{}", t.markdown())?;
        for note in crate::checks::check_notes(s) {
            for line in wrap(&format!("- {note}"), TERMINAL_COLUMNS) {
                writeln!(w, "{line}")?;
            }
        }
    }
    crate::steps::print_step_tables(w, s)?;
    if let Some(t) = crate::openloop::open_loop_table(s) {
        writeln!(
            w,
            "\nOpen loop (latency from each operation's intended start; recovered = 5 windows of \
             1 s in a row with >= 95% of arrivals succeeding and the backlog drained):"
        )?;
        write!(w, "{}", t.markdown())?;
    }
    if let Some(t) = class_table(s) {
        writeln!(
            w,
            "\nBy class (E03_BEST_EFFORT_SHARE of the operations are best effort; priority \
             admission sheds them first):"
        )?;
        write!(w, "{}", t.markdown())?;
    }
    if let Some(t) = fanout_table(s) {
        writeln!(
            w,
            "\nFan-out requests (each calls the dependency E03_FANOUT times at once and ends \
             with its slowest call):"
        )?;
        write!(w, "{}", t.markdown())?;
    }
    if let Some(t) = dependency_table(s) {
        writeln!(
            w,
            "\nBy dependency (E03_BALANCER=partition: client c calls dependency c mod \
             E03_REPLICAS):"
        )?;
        write!(w, "{}", t.markdown())?;
    }
    if let Some(t) = hedge_table(s) {
        writeln!(w, "\n{HEDGE_CAPTION}")?;
        write!(w, "{}", t.markdown())?;
    }
    Ok(())
}

/// What [`hedge_table`] shows, in a sentence.
pub const HEDGE_CAPTION: &str = "Hedging (a copy of a slow attempt; the first good answer \
    wins, the others are cancelled and their work is wasted): the tail, and what it cost";

/// The tail and its price, one row per strategy and seed, when a strategy of the run hedges:
/// operations, p95, p99 and p99.9, the requests beyond one per operation (hedges and retries,
/// as a share of the operations), the attempts cancelled, and of those the ones the dependency
/// worked on, answered to nobody. `None` when no strategy hedges.
pub fn hedge_table(s: &ScenarioSummary) -> Option<Table> {
    if !s.params.strategies().iter().any(|st| st.hedge.is_some()) {
        return None;
    }
    let rows = s
        .runs
        .iter()
        .map(|r| {
            let extra = if r.operations == 0 {
                "-".to_string()
            } else {
                format!(
                    "{:.1}%",
                    100.0 * (r.total_requests as f64 / r.operations as f64 - 1.0)
                )
            };
            vec![
                r.strategy.clone(),
                r.seed.to_string(),
                r.operations.to_string(),
                format!("{:.0}", r.p95_ms),
                format!("{:.0}", r.p99_ms),
                format!("{:.0}", r.p999_ms),
                extra,
                r.cancelled.to_string(),
                // Live, a cancelled attempt may have been dropped before its request was
                // written: those the dependency never saw wasted nothing (the logs' matching
                // counts them; without another difference every unmatched attempt is one).
                r.matched
                    .as_ref()
                    .map_or(r.cancelled, |m| {
                        r.cancelled.saturating_sub(m.unmatched_client)
                    })
                    .to_string(),
            ]
        })
        .collect();
    Some(Table {
        headers: [
            "strategy",
            "seed",
            "operations",
            "p95 ms",
            "p99 ms",
            "p99.9 ms",
            "extra requests",
            "cancelled",
            "cancelled, worked on (wasted)",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    })
}

/// The fan-out workload's requests, one row per strategy and seed: how many ended, how many
/// succeeded (every call, or `E03_FANOUT_QUORUM` of them; a fallback's answer counts), the
/// share served degraded (with a fallback's answer), the share slower than
/// `E03_FANOUT_SLOW_MS`, p50 and p99; `None` without a fan-out run.
pub fn fanout_table(s: &ScenarioSummary) -> Option<Table> {
    let runs: Vec<_> = s
        .runs
        .iter()
        .filter_map(|r| r.fanout.as_ref().map(|f| (r, f)))
        .collect();
    let slow_ms = runs.first()?.1.slow_ms;
    let pct = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{:.1}%", 100.0 * v));
    let rows = runs
        .iter()
        .map(|(r, f)| {
            vec![
                r.strategy.clone(),
                r.seed.to_string(),
                f.requests.to_string(),
                pct(f.success()),
                pct(f.degraded_share()),
                pct(f.slow_share()),
                format!("{:.0}", f.p50_ms),
                format!("{:.0}", f.p99_ms),
            ]
        })
        .collect();
    let headers = [
        "strategy".to_string(),
        "seed".to_string(),
        "requests".to_string(),
        "succeeded".to_string(),
        "served degraded".to_string(),
        format!("slower than {slow_ms} ms"),
        "p50 ms".to_string(),
        "p99 ms".to_string(),
    ];
    Some(Table {
        headers: headers.to_vec(),
        rows,
    })
}

/// Each dependency's operations over a partition, one row per strategy, seed and dependency:
/// how many, their success, p50 and p99; `None` without a partition.
pub fn dependency_table(s: &ScenarioSummary) -> Option<Table> {
    let rows: Vec<Vec<String>> = s
        .runs
        .iter()
        .flat_map(|r| {
            r.dependencies.iter().map(|d| {
                vec![
                    r.strategy.clone(),
                    r.seed.to_string(),
                    d.dependency.to_string(),
                    d.operations.to_string(),
                    d.success()
                        .map_or("-".to_string(), |v| format!("{:.1}%", 100.0 * v)),
                    format!("{:.0}", d.p50_ms),
                    format!("{:.0}", d.p99_ms),
                ]
            })
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let headers = [
        "strategy",
        "seed",
        "dependency",
        "operations",
        "succeeded",
        "p50 ms",
        "p99 ms",
    ];
    Some(Table {
        headers: headers.iter().map(|h| h.to_string()).collect(),
        rows,
    })
}

/// Operations and their success by class (critical, best effort), one row per strategy and
/// seed; `None` when no run had a best-effort operation.
pub fn class_table(s: &ScenarioSummary) -> Option<Table> {
    if s.runs.iter().all(|r| r.best_effort.operations == 0) {
        return None;
    }
    let share = |t: crate::metrics::ClassTally| {
        t.success()
            .map_or("-".to_string(), |v| format!("{:.1}%", 100.0 * v))
    };
    let rows = s
        .runs
        .iter()
        .map(|r| {
            let critical = r.critical();
            vec![
                r.strategy.clone(),
                r.seed.to_string(),
                critical.operations.to_string(),
                share(critical),
                r.best_effort.operations.to_string(),
                share(r.best_effort),
            ]
        })
        .collect();
    let headers = [
        "strategy",
        "seed",
        "critical ops",
        "critical success",
        "best-effort ops",
        "best-effort success",
    ];
    Some(Table {
        headers: headers.iter().map(|h| h.to_string()).collect(),
        rows,
    })
}

#[cfg(test)]
mod tests {

    #[test]
    fn seed_lists_fold_consecutive_runs() {
        assert_eq!(seed_ranges(&[42, 7, 1, 2, 3]), "42,7,1-3");
        assert_eq!(seed_ranges(&[1, 2]), "1,2");
        assert_eq!(seed_ranges(&(1..=100).collect::<Vec<_>>()), "1-100");
        assert_eq!(seed_ranges(&[]), "");
    }
    use super::*;
}

#[cfg(test)]
mod terminal_tests {
    use e03_plan::{Params, Scenario};

    use super::*;
    use crate::metrics::RunAccumulator;
    use crate::test_summaries::{run, summary, wide_summary};

    #[test]
    fn a_failed_fast_column_appears_only_where_a_policy_refused_attempts() {
        let plain = summary(
            "C,D",
            vec![run("C", 1, 1.0, 10, 0, 1), run("D", 1, 1.0, 9, 0, 1)],
        );
        assert!(!main_table(&plain)
            .headers
            .iter()
            .any(|h| h == "failed fast"));
        let mut breaker = run("D", 1, 0.5, 9, 0, 1);
        breaker.failed_fast = 117;
        let s = summary("C,D", vec![run("C", 1, 1.0, 10, 0, 1), breaker]);
        let load = load_table(&s);
        assert_eq!(
            load.headers,
            [
                "strategy",
                "total",
                "retries",
                "denied",
                "failed fast",
                "peak 100 ms"
            ]
        );
        assert_eq!(load.rows[0][4], "0");
        assert_eq!(load.rows[1][4], "117");
    }

    #[test]
    fn an_outage_as_long_as_the_run_shows_at_most_the_series_cap() {
        // E03-B's freeze moved to cover an hour: the table stops after 15 s of windows.
        let raw = [
            ("E03_FREEZE_START_S", "1"),
            ("E03_FREEZE_END_S", "3600"),
            ("E03_RECOVERY_END_S", "3600"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let mut s = summary("A", vec![run("A", 1, 1.0, 10, 0, 1)]);
        s.params = Params::from_raw(&raw).unwrap();
        let w = series_windows(&s);
        assert_eq!((w.start, w.end), (5, 5 + SERIES_MAX_WINDOWS));
        // E03-B itself is far below the cap: 8.0 s to 13.0 s.
        let e03b = summary("A", vec![run("A", 1, 1.0, 10, 0, 1)]);
        assert_eq!(series_windows(&e03b), 80..130);
    }

    #[test]
    fn recovery_reads_n_a_when_nothing_ended_after_the_outage_and_the_note_says_why() {
        // No operation at all (a run stopped before the freeze): nothing measured.
        let s = summary("C", vec![run("C", 1, 1.0, 10, 0, 1)]);
        assert_eq!(main_table(&s).rows[0][9], "n/a");
        let note = recovery_note(&s).unwrap();
        assert!(
            note.contains("`n/a` where no operation ended after the outage"),
            "{note}"
        );
        let mut measured = run("C", 1, 1.0, 10, 0, 1);
        measured.recovery_s = Some(2);
        let s = summary("C", vec![measured]);
        assert_eq!(main_table(&s).rows[0][9], "2");
        assert!(!recovery_note(&s).unwrap().contains("n/a"));
    }

    #[test]
    fn a_run_stopped_before_the_freeze_reads_n_a_for_success_and_recovery() {
        // Issue 28's new user: SIGINT 5 s into `lab run e03b`, before the freeze (8.5 s): no
        // operation started in the incident, none ended after it.
        let mut acc = RunAccumulator::new(Scenario::e03b(), &Params::default(), "C", 42);
        for (op, start_us) in [(0, 1_000_000), (1, 4_000_000)] {
            acc.take(crate::facts::Fact::Operation(crate::facts::OperationEnd {
                client: 0,
                op,
                flow: None,
                start_us,
                end_us: start_us + 50_000,
                success: true,
                reason: None,
                class: Default::default(),
            }));
        }
        let mut m = acc.finish();
        m.complete = false;
        let mut s = summary("C", vec![m]);
        s.complete = false;
        let t = main_table(&s);
        assert_eq!(t.rows[0][0], "C (incomplete) backoff + full jitter");
        assert_eq!(t.rows[0][1], "n/a", "success (affected): {:?}", t.rows[0]);
        assert_eq!(t.rows[0][9], "n/a", "recovery (s): {:?}", t.rows[0]);
        assert!(header_lines(&s)[0].starts_with("INCOMPLETE RUN, NO VERDICTS"));
    }

    #[test]
    fn strategy_names_stand_next_to_their_letters() {
        let s = summary("C", vec![run("C", 1, 1.0, 3000, 220, 80)]);
        assert_eq!(main_table(&s).rows[0][0], "C backoff + full jitter");
        assert_eq!(s.strategy_label("Z"), "Z");
    }

    #[test]
    fn terminal_tables_fit_in_120_columns() {
        let s = wide_summary();
        let mut out = Vec::new();
        print_tables(&mut out, &s).unwrap();
        let text = String::from_utf8(out).unwrap();
        for line in text.lines() {
            assert!(
                line.chars().count() <= TERMINAL_COLUMNS,
                "{} columns: {line}",
                line.chars().count()
            );
        }
        // Everything is there: the banner first, both halves of the comparison, names,
        // fidelity; no verdict (the run is incomplete and its counts do not match).
        assert!(text.starts_with("INCOMPLETE RUN, NO VERDICTS"), "{text}");
        for needle in [
            "| A (incomplete) immediate retry",
            "F (incomplete) decorrelated jitter",
            "MISMATCH",
            "WARNING A seed 1",
        ] {
            assert!(text.contains(needle), "{needle} missing in\n{text}");
        }
        assert!(!text.contains("| C vs D | success_affected |"), "{text}");
        // The same runs whole and matched: the verdicts are there, and fit too.
        let mut whole = s.clone();
        whole.complete = true;
        for r in &mut whole.runs {
            r.complete = true;
            if let Some(m) = r.matched.as_mut() {
                m.unmatched_client = 0;
                m.client_attempts = m.matched;
            }
        }
        let mut out = Vec::new();
        print_tables(&mut out, &whole).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.lines().all(|l| l.chars().count() <= TERMINAL_COLUMNS));
        for needle in ["| C vs D | success_affected |", " pts"] {
            assert!(text.contains(needle), "{needle} missing in\n{text}");
        }
        assert!(!text.contains("NO VERDICTS"), "{text}");
        // One seed only: the same tables, no verdicts.
        let mut one = whole.clone();
        one.runs.retain(|r| r.seed == 1);
        let mut out = Vec::new();
        print_tables(&mut out, &one).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.lines().all(|l| l.chars().count() <= TERMINAL_COLUMNS));
        assert!(text.contains("One seed cannot tell"), "{text}");
    }
}
