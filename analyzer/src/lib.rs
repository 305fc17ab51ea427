//! The analyzer: from a run's JSON Lines logs to the lab's metrics, tables, CSVs, figures and
//! report.
//!
//! Map of the modules:
//!
//! - `e03-metrics` (re-exported as [`metrics`], [`fidelity`], [`tables`], [`stats`]): the pure
//!   accumulator, spreads, verdicts, summary type and tables, shared with the simulator.
//! - [`reader`]: streaming JSON Lines reader (truncated last line = warning, other bad lines =
//!   error with file:line, missing `run_end` = incomplete).
//! - `records`: the reader's fast path for the four frequent records, read in place from the
//!   bytes the lab writes (serde parses any other line, as before).
//! - `blocks`: the report's blocks ([`outputs::Block`], [`outputs::report_blocks`]), the one
//!   report that `report.md` and `report.html` both render.
//! - [`outputs`]: `summary.json` (atomic), the arrival CSVs, `report.md` and `report.html`.
//! - [`figures`]: SVG and PNG figures (plotters).
//! - [`html`]: `report.html` (the report's blocks, figures inlined) and `OUT/index.html`.
//! - `names`: the names of the files one module writes and another reads back (`chain.json`).
//! - [`cli`]: the whole command line, [`main_entry`] (`lab analyze` is its front).
//!
//! [`analyze_dir`] reads a scenario directory `OUT/<scenario>/` holding one server and one client
//! log per strategy and seed, and returns a [`ScenarioSummary`]; [`print_tables`] and
//! [`write_outputs`] present it. The simulator builds a `ScenarioSummary` from its own
//! accumulators and uses the same two functions.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use e03_metrics::fidelity::REPLICA_SEQ_SHIFT;
use e03_model::shard::Shard;
use e03_plan::log_names::{client_log_path, ledger_log_path, server_log_path, shard_log_name};
use e03_plan::{ParamError, Params, Scenario};

pub mod audit;
mod blocks;
pub mod chain;
pub mod cli;
mod draw_error;
pub mod figures;
pub mod html;
pub mod junit;
pub mod kept;
mod names;
pub mod outputs;
pub mod reader;
mod records;
mod shades;
pub mod standalone;

pub use cli::main_entry;
/// The pure metrics live in `e03-metrics`; re-exported so that `analyzer::metrics::...` and
/// `analyzer::tables::...` keep working.
pub use e03_metrics::{
    feed, fidelity, metrics, stats, tables, RunAccumulator, RunMetrics, ScenarioSummary,
};
pub use outputs::write_outputs;
pub use tables::print_tables;

/// Why a scenario could not be analysed or written.
#[derive(Debug, thiserror::Error)]
pub enum AnalyzeError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}:{line}: malformed record: {message}", path.display())]
    Malformed {
        path: PathBuf,
        line: u64,
        message: String,
    },
    #[error("{}: bad parameters in run_start: {source}", path.display())]
    Params { path: PathBuf, source: ParamError },
    #[error("{}: no logs found (expected server-<strategy>-seed<seed>.jsonl and client-<strategy>-seed<seed>.jsonl)", dir.display())]
    NoRuns { dir: PathBuf },
    #[error("{}: {message}", path.display())]
    Output { path: PathBuf, message: String },
    #[error("{}: this run was stopped before it finished ({note}); an incomplete run gets no tables", dir.display())]
    Incomplete { dir: PathBuf, note: String },
}

impl AnalyzeError {
    /// Whether the error is the input's fault (exit 2) rather than the output's (exit 1).
    pub fn is_bad_input(&self) -> bool {
        !matches!(
            self,
            AnalyzeError::Output { .. } | AnalyzeError::Incomplete { .. }
        )
    }
}

/// `(strategy, seed)` of a log file name `server-S-seedN.jsonl` or `client-S-seedN.jsonl`.
fn run_of_file_name(name: &str) -> Option<(String, u64)> {
    // A replica's server log (`E03_REPLICAS`) names its replica after the run.
    let rest = match e03_plan::log_names::server_log_run(name) {
        Some((run, _)) => run,
        None => name.strip_prefix("client-")?.strip_suffix(".jsonl")?,
    };
    let (strategy, seed) = rest.rsplit_once("-seed")?;
    e03_plan::control::valid_strategy_id(strategy)
        .then_some(())
        .and(seed.parse().ok().map(|s| (strategy.to_string(), s)))
}

fn file_name(relative: &str) -> String {
    Path::new(relative)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Reads every run of a scenario directory; prints warnings to stderr. See
/// [`analyze_dir_with_warnings`].
pub fn analyze_dir(
    dir: &Path,
    scenario: Scenario,
    model: e03_metrics::ModelOf,
) -> Result<ScenarioSummary, AnalyzeError> {
    let (summary, warnings) = analyze_dir_with_warnings(dir, scenario, model)?;
    for w in warnings {
        eprintln!("warning: {w}");
    }
    Ok(summary)
}

/// Reads every run of a scenario directory and returns the summary and the warnings (cut last
/// lines, missing logs, runs stopped early). `model` gives what the scenario's `live_model`
/// checks are judged against (the lab passes the simulator's; the analyzer runs no model).
pub fn analyze_dir_with_warnings(
    dir: &Path,
    scenario: Scenario,
    model: e03_metrics::ModelOf,
) -> Result<(ScenarioSummary, Vec<String>), AnalyzeError> {
    let io = |source| AnalyzeError::Io {
        path: dir.into(),
        source,
    };
    let mut found = BTreeSet::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let name = entry.map_err(io)?.file_name();
        if let Some(run) = run_of_file_name(&name.to_string_lossy()) {
            found.insert(run);
        }
    }
    if found.is_empty() {
        return Err(AnalyzeError::NoRuns { dir: dir.into() });
    }
    let mut warnings = Vec::new();
    // Parameters from the first run_start found; they order strategies and seeds.
    let mut params = None;
    for (s, n) in &found {
        for rel in [
            server_log_path(&scenario, s, *n),
            client_log_path(&scenario, s, *n),
        ] {
            let path = dir.join(file_name(&rel));
            if params.is_none() && path.exists() {
                if let Some(start) = reader::read_run_start(&path)? {
                    params = Some(reader::params_of(
                        &start,
                        &path.display().to_string(),
                        &mut warnings,
                        Some(&scenario),
                    )?);
                }
            }
        }
    }
    let params = params.unwrap_or_else(|| {
        warnings.push(format!(
            "{}: no run_start record found; using default parameters",
            dir.display()
        ));
        Params::default()
    });
    let mut runs: Vec<(String, u64)> = found.into_iter().collect();
    let pos_s = |s: &str| {
        params
            .strategies()
            .iter()
            .position(|x| x.id == s)
            .unwrap_or(usize::MAX)
    };
    let pos_n = |n: u64| {
        params
            .seeds()
            .iter()
            .position(|&x| x == n)
            .unwrap_or(usize::MAX)
    };
    runs.sort_by(|a, b| {
        (pos_s(&a.0), &a.0, pos_n(a.1), a.1).cmp(&(pos_s(&b.0), &b.0, pos_n(b.1), b.1))
    });
    let mut metrics = Vec::new();
    for (strategy, seed) in &runs {
        metrics.push(analyze_run(
            dir,
            scenario.clone(),
            &params,
            strategy,
            *seed,
            &mut warnings,
        )?);
    }
    let mut seeds: Vec<u64> = Vec::new();
    for (_, n) in &runs {
        if !seeds.contains(n) {
            seeds.push(*n);
        }
    }
    seeds.sort_by_key(|&n| (pos_n(n), n));
    let params = params
        .with_seeds(seeds)
        .map_err(|source| AnalyzeError::Params {
            path: dir.to_path_buf(),
            source,
        })?;
    let mut summary = ScenarioSummary {
        scenario,
        model: None,
        machine: machine_floor(dir, &mut warnings),
        params,
        simulated: false,
        complete: metrics.iter().all(|m| m.complete),
        runs: metrics,
    };
    summary.model = model(&summary);
    Ok((summary, warnings))
}

/// The machine's floor that `lab run` measured before the traffic: `machine.json` in the run's
/// folder, the parent of the scenario's. `None` when there is none (a compose run, or
/// `lab analyze` on logs copied elsewhere); a file that does not parse is named in a warning and
/// left out, never guessed.
fn machine_floor(
    dir: &Path,
    warnings: &mut Vec<String>,
) -> Option<e03_metrics::fidelity::MachineFloor> {
    let path = dir.parent()?.join(e03_metrics::fidelity::MACHINE_FILE);
    let text = std::fs::read_to_string(&path).ok()?;
    match serde_json::from_str(&text) {
        Ok(floor) => Some(floor),
        Err(e) => {
            warnings.push(format!(
                "{}: not the machine's floor the lab writes ({e}); the tables leave it out",
                path.display()
            ));
            None
        }
    }
}

/// The shards of a run split over swarm processes that left a client log (`-shard<I>of<N>`, in
/// shard order), and the shards of that `N` that left none.
fn shard_logs(dir: &Path, strategy: &str, seed: u64) -> std::io::Result<(Vec<Shard>, Vec<Shard>)> {
    let prefix = format!("client-{strategy}-seed{seed}-shard");
    let mut found: Vec<Shard> = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        let Some(rest) = name
            .strip_prefix(&prefix)
            .and_then(|r| r.strip_suffix(".jsonl"))
        else {
            continue;
        };
        let shard = rest
            .split_once("of")
            .and_then(|(i, n)| Shard::new(i.parse().ok()?, n.parse().ok()?));
        found.extend(shard);
    }
    found.sort();
    let count = found.iter().map(|s| s.count).max().unwrap_or(0);
    let missing = (0..count)
        .filter_map(|i| Shard::new(i, count))
        .filter(|s| !found.contains(s))
        .collect();
    Ok((found, missing))
}

/// Reads the server and client logs of one run.
fn analyze_run(
    dir: &Path,
    scenario: Scenario,
    params: &Params,
    strategy: &str,
    seed: u64,
    warnings: &mut Vec<String>,
) -> Result<RunMetrics, AnalyzeError> {
    // No list of every arrival: the checks' peaks are counted as the log streams by.
    let mut acc =
        RunAccumulator::new(scenario.clone(), params, strategy, seed).without_arrival_list();
    let mut complete = true;
    let server = dir.join(file_name(&server_log_path(&scenario, strategy, seed)));
    let whole = dir.join(file_name(&client_log_path(&scenario, strategy, seed)));
    // Each log, with the shard whose it is (the server log: none). A run over replicas
    // (`E03_REPLICAS`) has a server log per replica, read one after the other like shards'.
    // Each replica numbers its requests from 0: its sequence numbers are moved to a range
    // of their own (`r << 48`), so that no two requests of the run share one.
    let mut logs: Vec<(std::path::PathBuf, Option<Shard>, u64)> = match params.replicas() {
        1 => vec![(server, None, 0)],
        n => (0..n)
            .map(|r| {
                let name = e03_plan::log_names::replica_log_name(strategy, seed, r);
                (dir.join(name), None, u64::from(r) << REPLICA_SEQ_SHIFT)
            })
            .collect(),
    };
    let mut tally = None;
    if whole.exists() {
        logs.push((whole, None, 0));
    } else {
        // A run split over swarm processes: every shard's log, one after the other (the
        // metrics do not need them merged in time order); a shard without one is named.
        let (shards, missing) =
            shard_logs(dir, strategy, seed).map_err(|source| AnalyzeError::Io {
                path: dir.into(),
                source,
            })?;
        if shards.is_empty() {
            logs.push((whole, None, 0));
        }
        let count = shards.iter().chain(&missing).map(|s| s.count).max();
        tally = count.map(e03_metrics::shards::ShardTally::new);
        for s in missing {
            warnings.push(format!(
                "{}: shard {s} of the run has no client log (it never started, or registered \
                 late): the run is incomplete",
                dir.join(shard_log_name(strategy, seed, s)).display()
            ));
            complete = false;
        }
        logs.extend(
            shards
                .into_iter()
                .map(|s| (dir.join(shard_log_name(strategy, seed, s)), Some(s), 0)),
        );
    }
    for (path, shard, seq_base) in logs {
        if !path.exists() {
            warnings.push(format!(
                "{}: missing: the run is incomplete",
                path.display()
            ));
            complete = false;
            continue;
        }
        let status = reader::read_log_file(&path, |e| {
            let moved;
            let e = match e {
                e03_model::events::Event::Arrival(a) if seq_base > 0 => {
                    let mut a = a.clone();
                    a.seq += seq_base;
                    moved = e03_model::events::Event::Arrival(a);
                    &moved
                }
                e03_model::events::Event::Response(r) if seq_base > 0 => {
                    let mut r = r.clone();
                    r.seq += seq_base;
                    moved = e03_model::events::Event::Response(r);
                    &moved
                }
                e => e,
            };
            feed(&mut acc, e);
            match (tally.as_mut(), e, shard) {
                (Some(t), e03_model::events::Event::Arrival(a), None) => t.arrival(a),
                (Some(t), e03_model::events::Event::Attempt(a), Some(s)) => t.attempt(s.index, a),
                _ => {}
            }
        })?;
        complete &= status.complete();
        warnings.extend(status.warnings);
    }
    // The ledger (the retry-logic article): the charges the service committed, when it took any. It has no
    // run_start or run_end of its own (the server log's say whether the run was complete).
    let ledger = dir.join(file_name(&ledger_log_path(&scenario, strategy, seed)));
    if ledger.exists() {
        let status = reader::read_log_file(&ledger, |e| {
            if let e03_model::events::Event::Charge(_) = e {
                feed(&mut acc, e)
            }
        })?;
        warnings.extend(
            status
                .warnings
                .into_iter()
                .filter(|w| !w.contains("run_end")),
        );
    }
    // The proxy in front (issue 27): its connections, and the ones it reset. Written beside the
    // server log when the run had one; a line that is not a record is named in a warning.
    let wire = dir.join(file_name(&e03_plan::log_names::wire_log_beside(
        &server_log_path(&scenario, strategy, seed),
    )));
    if acc.counts_wire() && wire.exists() {
        let text = std::fs::read_to_string(&wire).map_err(|source| AnalyzeError::Io {
            path: wire.clone(),
            source,
        })?;
        for (i, line) in text.lines().enumerate() {
            match serde_json::from_str::<e03_model::wire::ProxyRecord>(line) {
                Ok(r) => acc.take(e03_metrics::facts::Fact::Proxy(&r)),
                Err(e) => warnings.push(format!("{}:{}: {e}", wire.display(), i + 1)),
            }
        }
    }
    let mut m = acc.finish();
    m.complete = complete;
    m.shards = tally
        .map(e03_metrics::shards::ShardTally::finish)
        .unwrap_or_default();
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_file_names_give_strategy_and_seed() {
        assert_eq!(
            run_of_file_name("server-C-seed42.jsonl"),
            Some(("C".into(), 42))
        );
        assert_eq!(
            run_of_file_name("client-D1-seed7.jsonl"),
            Some(("D1".into(), 7))
        );
        assert_eq!(
            run_of_file_name("server-C-seed42-replica1.jsonl"),
            Some(("C".into(), 42))
        );
        assert_eq!(run_of_file_name("client-C-seed42-replica1.jsonl"), None);
        assert_eq!(run_of_file_name("summary.json"), None);
        assert_eq!(run_of_file_name("server-C-seedx.jsonl"), None);
        assert_eq!(run_of_file_name("server-../x-seed1.jsonl"), None);
    }
}
