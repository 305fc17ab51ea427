//! A swarm command line resolved once ([`resolve_swarm`]): the flags and env vars (or a plan
//! file, `--plan FILE`) become a typed [`SwarmCommand`], the ordinary scenarios' [`Swarm`] and
//! the chain scenarios' [`ChainArgs`], split by kind. The lab's `swarm` wrapper runs the one, the
//! other or both from it; nothing reads the command line again.

use std::ffi::OsString;

use e03_plan::Scenario;

use crate::chain_args::{chain_args_with, ChainArgs, ScenarioArgs};
use crate::cli::{run_setup, SwarmEnd};
use crate::flags::command;
use crate::plan_file::{load_plan, plan_arg};
use crate::setup::{check_env, scenario_list, setup_with, Setup};
use crate::usage_error::UsageError;
use e03_io::exit::USAGE as EXIT_USAGE;

/// A swarm command line, resolved: at least one of the two is there (a list of no scenario is
/// refused when it is read).
#[derive(Debug)]
pub struct SwarmCommand {
    /// The scenarios the swarm runs against the dependencies (all but the chains).
    pub swarm: Option<Swarm>,
    /// The chain scenarios, which the lab runs through the hop services.
    pub chains: Option<ChainArgs>,
}

/// The ordinary scenarios of a command line, checked and ready to run ([`Swarm::run`]).
#[derive(Debug)]
pub struct Swarm(Setup);

impl Swarm {
    pub fn scenarios(&self) -> &[Scenario] {
        &self.0.scenarios
    }

    /// Whether `lab swarm` analyses the logs after a signal stopped it (`lab run`'s plan says
    /// no: it analyses itself).
    pub fn report_when_stopped(&self) -> bool {
        self.0.report_when_stopped
    }

    /// The same swarm leaving its targets up at its end (the chains that follow it shut them
    /// down, with the hops).
    pub fn keeping_targets_up(mut self) -> Swarm {
        self.0.shutdown_targets = false;
        self
    }

    /// Runs it with its own tokio runtime (the module doc of `cli.rs`).
    pub fn run(self) -> SwarmEnd {
        run_setup(self.0)
    }
}

/// Why a command line was not resolved.
#[derive(Debug)]
pub enum Refused {
    /// Clap's own answer (`--help`, `--version`, an unknown flag).
    Clap(clap::Error),
    Usage(UsageError),
}

impl Refused {
    /// Says it where it belongs (help on stdout, an error on stderr, named by the program);
    /// the exit code.
    pub fn exit(&self) -> i32 {
        match self {
            Refused::Clap(e) => e03_plan::cli::clap_exit(crate::program::name(), e),
            Refused::Usage(e) => {
                eprintln!("{}: {e}", crate::program::name());
                EXIT_USAGE
            }
        }
    }
}

impl From<UsageError> for Refused {
    fn from(e: UsageError) -> Self {
        Refused::Usage(e)
    }
}

/// Resolves a swarm command line once: `PROGRAM --plan FILE` (the plan in FILE, no flag and no
/// `E03_*` variable read), or the flags and env vars. The scenarios are read once and split:
/// the chain scenarios ([`ChainArgs`]) from the others ([`Swarm`]).
pub fn resolve_swarm(args: &[OsString]) -> Result<SwarmCommand, Refused> {
    crate::program::set(args.first());
    if let Some(path) = plan_arg(args)? {
        return Ok(SwarmCommand {
            swarm: Some(Swarm(load_plan(&path)?)),
            chains: None,
        });
    }
    let m = command()
        .try_get_matches_from(args)
        .map_err(Refused::Clap)?;
    check_env(
        std::env::vars_os()
            .filter_map(|(k, _)| k.into_string().ok())
            .collect(),
    )?;
    let (policies, list) = scenario_list(&m)?;
    let (chains, others): (Vec<_>, Vec<_>) = list
        .into_iter()
        .partition(|a| a.scenario.def().chain.is_some());
    let swarm = if others.is_empty() {
        None
    } else {
        let env = |k: &str| std::env::var(k).ok();
        Some(Swarm(setup_with(&m, &env, policies, others)?))
    };
    let chains = if chains.is_empty() {
        None
    } else {
        let scenarios = chains
            .into_iter()
            .map(|a| ScenarioArgs {
                scenario: a.scenario,
                text: a.text,
            })
            .collect();
        Some(chain_args_with(&m, scenarios)?)
    };
    Ok(SwarmCommand { swarm, chains })
}

/// The `client-swarm` binary: a resolved command line run; returns the exit code. Chain
/// scenarios need the hop services, which `lab swarm` drives: refused here, exit 2.
pub fn main_entry(args: Vec<OsString>) -> i32 {
    let command = match resolve_swarm(&args) {
        Ok(c) => c,
        Err(refused) => return refused.exit(),
    };
    if let Some(chains) = &command.chains {
        let names: Vec<&str> = chains.scenarios.iter().map(|s| s.scenario.name()).collect();
        return Refused::Usage(UsageError::ChainsNeedLab {
            names: names.join(","),
        })
        .exit();
    }
    command.swarm.map_or(0, |s| s.run().code)
}
