//! Files written beside the logs: `summary.json` (spec section 8), the arrival series CSVs, the
//! figures and `report.md`.
//!
//! `summary.json` is written to a temporary file and renamed over the old one, so a reader never
//! sees half a summary. Its runs carry every field of spec section 6 plus `complete`, `fidelity`
//! and `matched` (null for the simulator).

use std::fs;
use std::io::Write;
use std::path::Path;

use crate::metrics::RunMetrics;
use crate::{figures, tables, AnalyzeError, ScenarioSummary};

fn out_err(path: &Path, e: impl std::fmt::Display) -> AnalyzeError {
    AnalyzeError::Output {
        path: path.into(),
        message: e.to_string(),
    }
}

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), AnalyzeError> {
    let tmp = path.with_extension("json.tmp");
    let write = || -> std::io::Result<()> {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    };
    write().map_err(|e| {
        let _ = fs::remove_file(&tmp);
        out_err(path, e)
    })
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

/// `report.md`: the tables as markdown and the figures, for reading on GitHub.
pub fn report_markdown(s: &ScenarioSummary) -> String {
    let mut md = format!("# {} ({})\n\n", s.scenario.title(), s.scenario.name());
    for line in tables::header_lines(s) {
        md += &format!("{line}\n\n");
    }
    md += "## Comparison\n\n";
    md += &tables::main_table(s).markdown();
    md += if s.params.timeline(s.scenario).incident().is_some() {
        "\nSuccess is the share of operations started during the incident (from the first down, \
         freeze or degraded phase to the end of the last one) that succeeded; "
    } else {
        "\nSuccess is the share of all operations that succeeded (the scenario has no incident); "
    };
    md += "total and peaks count arrivals at the dependency (server log); p95/p99 are latencies \
           of all operations, failures included. With several seeds a cell reads mean (min..max) \
           over seeds.\n\n";
    for line in tables::conclusion(s) {
        md += &format!("{line}\n\n");
    }
    md += "![comparison](comparison.svg)\n\n## Arrivals at the dependency\n\n";
    md += "Per 100 ms window ([CSV](arrivals_100ms.csv)):\n\n![arrivals per 100 ms](arrivals_100ms.svg)\n\n";
    md += "Per 1 s window ([CSV](arrivals_1s.csv)): the same traffic, with the spike averaged away:\n\n![arrivals per 1 s](arrivals_1s.svg)\n\n";
    if let Some(t) = tables::series_table(s) {
        md += "Arrivals per 100 ms window around the outage (share of retries in brackets):\n\n";
        md += &t.markdown();
        md += "\n";
    }
    if let Some(t) = tables::verdict_table(s) {
        md += "## Seed-to-seed verdicts\n\nA difference is *measured* only when it is larger than \
               the spread (max - min across seeds) of both strategies.\n\n";
        md += &t.markdown();
        md += "\n";
    }
    let extra: Vec<String> = tables::fidelity_lines(s)
        .into_iter()
        .chain(tables::matched_lines(s))
        .collect();
    if !extra.is_empty() {
        md += "## Fidelity of the live run\n\n";
        for line in extra {
            md += &format!("- {line}\n");
        }
    }
    if let Some(log) = e03_metrics::checks::attempt_log_text(s) {
        md += "\n## Attempts of each caller\n\n([attempts.txt](attempts.txt))\n\n```text\n";
        md += &log;
        md += "```\n";
    }
    if let Some(t) = e03_metrics::ledger::ledger_table(s) {
        md += "\n## Charges, lost answers and permanent errors\n\n";
        md += "From the ledger (`ledger-*.jsonl`: every committed charge) and the logs. A \
               *duplicate charge* is a charge beyond the first of its operation; a *retried lost \
               answer* is an answer lost after its commit (connection reset) whose operation \
               sent another attempt; *retries after permanent* counts the attempts sent after \
               an operation's first 400/401/403/404/409/422 ([CSV](ledger.csv)).\n\n";
        md += &t.markdown();
    }
    if let Some(t) = e03_metrics::checks::check_table(s) {
        md += "\n## Check against the source's published figures\n\n";
        md += &t.markdown();
        let notes = e03_metrics::checks::check_notes(s);
        if !notes.is_empty() {
            md += "\n";
            for note in notes {
                md += &format!("- {note}\n");
            }
        }
    }
    if let Some(t) = e03_metrics::steps::step_table(s) {
        md += "\n## Who pays for a retry (seed 002)\n\nMeans over the seeds ([CSV](steps.csv)); \
               calls, 429s and content failures (504 and 502) of the batch flow, tokens of both \
               flows, wasted tokens paid for answers that were not a success. A difference from \
               `none` is *measured* only when it exceeds the seed-to-seed difference of `none`.\n\n";
        md += &t.markdown();
        if let Some(t) = e03_metrics::steps::step_seed_table(s) {
            md += "\nCompletion / interactive completion per seed:\n\n";
            md += &t.markdown();
        }
        md += "\n![calls in the rate limit's window per step](calls_per_step.svg)\n";
    }
    if let Some(t) = e03_metrics::openloop::open_loop_table(s) {
        md += "\n## Open loop\n\nLatency from each operation's intended start; per-second \
               series in open_loop_1s.csv; the verdict's rule in docs/metastability.md.\n\n";
        md += &t.markdown();
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
    if let Some(t) = e03_metrics::steps::step_table(s) {
        let rows: Vec<Vec<String>> = std::iter::once(t.headers).chain(t.rows).collect();
        write_csv_rows(&dir.join("steps.csv"), &rows)?;
        figures::write_steps(dir, s)?;
    }
    if s.runs.iter().any(|r| r.open_loop.is_some()) {
        let rows = e03_metrics::openloop::open_loop_csv_rows(s);
        write_csv_rows(&dir.join("open_loop_1s.csv"), &rows)?;
    }
    if let Some(log) = e03_metrics::checks::attempt_log_text(s) {
        let path = dir.join("attempts.txt");
        fs::write(&path, log).map_err(|e| out_err(&path, e))?;
    }
    let report = dir.join("report.md");
    fs::write(&report, report_markdown(s)).map_err(|e| out_err(&report, e))
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
