//! Raw arguments to a validated plan: every parameter is checked here, before anything starts,
//! and a bad one ends the program with a message naming it and exit code 2.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Arg, ArgAction, Command as Clap};
use e03_core::cli::{raw_params, unknown_env, with_param_args};
use e03_core::{ParamError, Params, Scenario};

use crate::outdir::RunChoice;
use crate::EXIT_USAGE;

/// A validated live run.
#[derive(Debug, Clone)]
pub struct RunPlan {
    pub scenarios: Vec<Scenario>,
    pub params: Params,
    pub out: PathBuf,
    /// One strategy at a time instead of all at once.
    pub sequential: bool,
    /// The run directory under `out`.
    pub choice: RunChoice,
}

/// A validated simulation (or comparison).
#[derive(Debug, Clone)]
pub struct SimPlan {
    pub scenarios: Vec<Scenario>,
    pub params: Params,
    /// Raw parameters as given (sweeps vary them).
    pub raw: std::collections::BTreeMap<String, String>,
    pub sweeps: Vec<simulator::SweepAxis>,
    pub out: PathBuf,
    pub sequential: bool,
    pub choice: RunChoice,
}

pub enum Command {
    Run(RunPlan),
    Simulate(SimPlan),
    Compare(SimPlan),
}

fn scenario_arg() -> Arg {
    Arg::new("scenario")
        .required(true)
        .value_name("SCENARIO")
        .help("e03a (transient faults), e03b (outage) or all (E03-A then E03-B)")
}

fn out_arg() -> Arg {
    Arg::new("out")
        .long("out")
        .env("E03_OUT")
        .value_name("DIR")
        .default_value("results")
        .help(
            "output directory; each run writes OUT/<run id>/<scenario>/ and points OUT/latest at it \
             (nothing already in OUT is deleted)",
        )
}

fn run_id_args(cmd: Clap) -> Clap {
    cmd.arg(
        Arg::new("run-id")
            .long("run-id")
            .env("E03_RUN_ID")
            .value_name("NAME")
            .help("name of the run directory OUT/NAME [default: the UTC start time, 20261130-141224]"),
    )
    .arg(
        Arg::new("overwrite")
            .long("overwrite")
            .env("E03_OVERWRITE")
            .action(ArgAction::SetTrue)
            .help("reuse an existing OUT/NAME of --run-id: its old logs are replaced, other files kept"),
    )
}

fn sequential_arg() -> Arg {
    Arg::new("sequential")
        .long("sequential")
        .env("E03_SEQUENTIAL")
        .action(ArgAction::SetTrue)
        .help("run the strategies one after the other instead of at the same time")
}

fn cli() -> Clap {
    Clap::new("lab")
        .about("E03: when retries help and when they hurt, measured with real HTTP traffic")
        .after_help(
            "Also: `lab serve ...` (dependency-service), `lab swarm ...` (client-swarm), \
             `lab analyze ...` (analyzer): the parts' own command lines.",
        )
        .subcommand_required(true)
        .subcommand(with_param_args(run_id_args(
            Clap::new("run")
                .about("run the live experiment over loopback and print its tables")
                .arg(scenario_arg())
                .arg(out_arg())
                .arg(sequential_arg()),
        )))
        .subcommand(with_param_args(run_id_args(
            Clap::new("simulate")
                .about("run the same model on a virtual clock (fast, deterministic)")
                .arg(scenario_arg())
                .arg(out_arg())
                .arg(
                    Arg::new("sweep")
                        .long("sweep")
                        .action(ArgAction::Append)
                        .value_name("NAME=V1,V2,..")
                        .help("vary a parameter over values (repeatable: the grid of all axes)"),
                ),
        )))
        .subcommand(with_param_args(run_id_args(
            Clap::new("compare")
                .about("run live and simulated and print them side by side")
                .arg(scenario_arg())
                .arg(out_arg())
                .arg(sequential_arg()),
        )))
}

fn usage_error(e: impl std::fmt::Display) -> i32 {
    eprintln!("lab: {e}");
    EXIT_USAGE
}

/// Parses and validates; `Err(exit code)` after printing the reason (or help).
pub fn parse(args: Vec<OsString>) -> Result<Command, i32> {
    let m = match cli().try_get_matches_from(args) {
        Ok(m) => m,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_USAGE } else { 0 };
            let _ = e.print();
            return Err(code);
        }
    };
    let typos = unknown_env(std::env::vars().map(|(k, _)| k));
    if let Some(name) = typos.first() {
        return Err(usage_error(ParamError::Unknown { name: name.clone() }));
    }
    let (name, sub) = m.subcommand().expect("subcommand required");
    let scenario = sub.get_one::<String>("scenario").expect("required");
    let scenarios = Scenario::parse_list(scenario).map_err(usage_error)?;
    let raw = raw_params(sub);
    let params = Params::from_raw(&raw).map_err(usage_error)?;
    let out = PathBuf::from(sub.get_one::<String>("out").expect("has default"));
    let sequential = sub
        .try_get_one::<bool>("sequential")
        .ok()
        .flatten()
        .copied()
        .unwrap_or(false);
    let choice = RunChoice {
        id: sub.get_one::<String>("run-id").cloned(),
        overwrite: sub.get_flag("overwrite"),
    };
    crate::outdir::check_choice(&out, &choice, "--run-id").map_err(usage_error)?;
    match name {
        "run" => Ok(Command::Run(RunPlan {
            scenarios,
            params,
            out,
            sequential,
            choice,
        })),
        "simulate" | "compare" => {
            let mut sweeps = Vec::new();
            if let Ok(Some(values)) = sub.try_get_many::<String>("sweep") {
                for v in values {
                    sweeps.push(simulator::parse_sweep(v).map_err(usage_error)?);
                }
            }
            let plan = SimPlan {
                scenarios,
                params,
                raw,
                sweeps,
                out,
                sequential,
                choice,
            };
            Ok(if name == "simulate" {
                Command::Simulate(plan)
            } else {
                Command::Compare(plan)
            })
        }
        _ => unreachable!("clap knows the subcommands"),
    }
}
