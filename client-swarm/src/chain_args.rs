//! A swarm command line whose scenarios are chain scenarios (amplification, deadline): the lab
//! runs them through the hop services (`lab swarm` in compose), from the same flags and env vars
//! as the swarm's own runs. [`chain_args_with`] reads them, [`claim_chain_run`] claims the run
//! directory as the swarm claims its own (the hops' calls are in `crate::hops`).

use std::path::PathBuf;

use e03_io::rundir as outdir;
use e03_plan::Scenario;

use clap::ArgMatches;

use crate::flags::chain_hops;
use crate::plan::{parse_targets, HostSettings};
use crate::run_dir::{claim_run_dir, preflight, refuse_root};
use crate::usage_error::UsageError;

/// A swarm command line whose scenarios are chain scenarios: the lab runs them through the hop
/// services (`lab swarm` in compose), from the same flags and env vars as the swarm's.
#[derive(Debug, Clone)]
pub struct ChainArgs {
    /// `--out`: with `--claim-run-dir` the results root, else the run directory.
    pub out: PathBuf,
    pub scenarios: Vec<ScenarioArgs>,
    /// `--claim-run-dir` (and the run id asked for).
    pub claim: Option<Option<String>>,
    /// `--chain-hops`.
    pub hops: Vec<String>,
    /// `--shutdown-targets`: every target's control URL (the hops are in `hops`).
    pub shutdown: Option<Vec<String>>,
    /// `E03_OVERWRITE=1`.
    pub overwrite: bool,
    /// `E03_UID`, `E03_GID`, `E03_ALLOW_ROOT`, `E03_OVERWRITE`, `E03_HOST_RESULTS`, read once.
    pub host: HostSettings,
}

/// One scenario of [`ChainArgs`] and its definition's text (kept beside its logs).
#[derive(Debug, Clone)]
pub struct ScenarioArgs {
    pub scenario: Scenario,
    pub text: String,
}

/// The chain scenarios `scenarios` of a swarm command line `m` (read once with the others,
/// [`crate::resolve_swarm`]) with its flags for them; `Err` is the one-line message (exit 2).
pub(crate) fn chain_args_with(
    m: &ArgMatches,
    scenarios: Vec<ScenarioArgs>,
) -> Result<ChainArgs, UsageError> {
    let value = |id: &str| m.get_one::<String>(id).cloned().unwrap_or_default();
    let targets = parse_targets(&value("targets"))?;
    let run_id = m.get_one::<String>("run-id").filter(|v| !v.is_empty());
    let claim = m.get_flag("claim-run-dir");
    let host = HostSettings::from_env(&|k| std::env::var(k).ok());
    Ok(ChainArgs {
        out: PathBuf::from(value("out")),
        scenarios,
        claim: claim.then(|| run_id.cloned()),
        hops: chain_hops(m)?,
        shutdown: m
            .get_flag("shutdown-targets")
            .then(|| targets.into_iter().map(|t| t.control_url).collect()),
        overwrite: host.overwrite,
        host,
    })
}

/// Claims the run directory of [`ChainArgs`] as the swarm claims its own (`--claim-run-dir`:
/// `OUT/<run id>/`, `OUT/latest`; uid 0 refused) and checks it can be written; the run
/// directory. `Err` is the one-line message (exit 2).
pub fn claim_chain_run(a: &ChainArgs) -> Result<PathBuf, UsageError> {
    let env = |k: &str| a.host.var(k);
    let scenarios: Vec<Scenario> = a.scenarios.iter().map(|s| s.scenario.clone()).collect();
    let dir = match &a.claim {
        Some(id) => {
            let run = claim_run_dir(&a.out, id.clone(), &scenarios, &env)?;
            eprintln!(
                "{}: run {} writes into {}",
                crate::program::name(),
                run.id,
                outdir::shown_under(&run.dir, a.host.host_results.as_deref())
            );
            run.dir
        }
        None => {
            refuse_root(&env)?;
            a.out.clone()
        }
    };
    preflight(&dir, &scenarios, &env)?;
    Ok(dir)
}
