//! "Any client": load figures from a dependency-service log alone.
//!
//! A dependency started without a control call logs every arrival, whoever sends it. Without a
//! client log there are no operations, so only the server's side is reported: total arrivals,
//! the peaks and the 100 ms / 1 s series (CSVs and figures), the answers per HTTP status and
//! their latency from arrival to response (matched by `seq`), all in `load.json`.

use std::path::Path;

use serde::Serialize;

use e03_metrics::facts::Fact;
use e03_metrics::statuses::{ServerAnswers, ServerTally};
use e03_model::events::Event;
use e03_plan::{Params, Scenario};

use crate::outputs::{write_atomic, write_series_csv};
use crate::tables::Table;
use crate::{figures, reader, AnalyzeError, RunAccumulator, ScenarioSummary};

/// The load figures of one server log.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Load {
    pub log: String,
    pub scenario: Scenario,
    pub strategy: String,
    pub total_requests: u64,
    pub peak_1s: u64,
    pub peak_100ms: u64,
    pub complete: bool,
    /// What the dependency answered: per status, and arrival to response.
    pub answers: ServerAnswers,
}

/// Reads a server log alone. `scenario` overrides the one in its `run_start` (a standalone
/// service names its scenario; an older one said "standalone", and E03-B's timeline is then
/// assumed for the shading of the figures). `kept`: the scenario kept beside the log (a
/// standalone `lab serve --scenario FILE`), which the record may name.
pub fn analyze_server_log(
    path: &Path,
    scenario: Option<Scenario>,
    kept: Option<&Scenario>,
) -> Result<(ScenarioSummary, ServerAnswers, Vec<String>), AnalyzeError> {
    let name = path.display().to_string();
    let mut warnings = Vec::new();
    let start = reader::read_run_start(path)?;
    let scenario = scenario
        .or_else(|| {
            start
                .as_ref()
                .and_then(|s| crate::kept::scenario_named(&s.scenario, kept).ok())
        })
        .unwrap_or(Scenario::e03b());
    let params = match &start {
        Some(s) => reader::params_of(s, &name, &mut warnings, Some(&scenario))?,
        None => {
            warnings.push(format!(
                "{name}: no run_start record; using default parameters"
            ));
            Params::default()
        }
    };
    let strategy = start
        .as_ref()
        .map(|s| s.tag.strategy.clone())
        .filter(|s| e03_plan::control::valid_strategy_id(s))
        .unwrap_or_else(|| "server".into());
    let seed = start.as_ref().map_or(params.seed(), |s| s.tag.seed);
    // No list of every arrival, as for a whole run (the checks' peaks are counted instead).
    let mut acc =
        RunAccumulator::new(scenario.clone(), &params, &strategy, seed).without_arrival_list();
    let mut answers = ServerTally::default();
    let status = reader::read_log_file(path, |e| match e {
        Event::Arrival(a) => {
            acc.take(Fact::Load {
                t_us: a.t_us,
                attempt: a.attempt,
            });
            answers.arrival(a.seq, a.t_us);
        }
        Event::Response(r) => answers.response(r.seq, r.t_us, r.status),
        _ => {}
    })?;
    warnings.extend(status.warnings.iter().cloned());
    let mut run = acc.finish();
    run.complete = status.complete();
    let params = params
        .with_seeds(vec![seed])
        .expect("one seed is a valid seed list");
    let summary = ScenarioSummary {
        scenario,
        model: None,
        machine: None,
        params,
        simulated: false,
        complete: run.complete,
        runs: vec![run],
    };
    Ok((summary, answers.finish(), warnings))
}

/// The load figures of a summary built by [`analyze_server_log`], with its answers.
pub fn load_of(log: &Path, s: &ScenarioSummary, answers: ServerAnswers) -> Load {
    let r = &s.runs[0];
    Load {
        log: log.display().to_string(),
        scenario: s.scenario.clone(),
        strategy: r.strategy.clone(),
        total_requests: r.total_requests,
        peak_1s: r.peak_1s,
        peak_100ms: r.peak_100ms,
        complete: r.complete,
        answers,
    }
}

/// The load table.
pub fn load_table(load: &Load) -> Table {
    Table {
        headers: ["log", "total", "peak 1 s", "peak 100 ms", "complete"]
            .map(String::from)
            .to_vec(),
        rows: vec![vec![
            load.log.clone(),
            load.total_requests.to_string(),
            load.peak_1s.to_string(),
            load.peak_100ms.to_string(),
            if load.complete {
                "yes"
            } else {
                "NO (incomplete run)"
            }
            .into(),
        ]],
    }
}

/// Writes `load.json`, the series CSVs and the arrivals figures into `out`.
pub fn write_load_outputs(
    out: &Path,
    load: &Load,
    s: &ScenarioSummary,
) -> Result<(), AnalyzeError> {
    std::fs::create_dir_all(out).map_err(|e| AnalyzeError::Output {
        path: out.into(),
        message: e.to_string(),
    })?;
    let json = serde_json::to_string_pretty(load).expect("load figures serialise") + "\n";
    write_atomic(&out.join("load.json"), json.as_bytes())?;
    write_series_csv(&out.join("arrivals_100ms.csv"), s, false)?;
    write_series_csv(&out.join("arrivals_1s.csv"), s, true)?;
    figures::write_arrivals_any_client(out, s)
}
