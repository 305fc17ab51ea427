//! Raw arguments to a validated plan: every parameter is checked here, before anything starts,
//! and a bad one ends the program with a message naming it and exit code 2.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Arg, ArgAction, ArgMatches, Command as Clap};
use e03_plan::cli::{
    did_you_mean, params_for_scenario, raw_params, unknown_env, unknown_env_message,
    with_param_args,
};
use e03_plan::{ParamError, Params, Scenario};

use crate::front::Show;
use crate::outdir::RunChoice;
use crate::EXIT_USAGE;

/// A validated live run: everything the children get, typed (they read no env var).
#[derive(Debug, Clone)]
pub struct RunPlan {
    pub scenarios: Vec<Scenario>,
    /// What each scenario was named by on the command line (a built-in name or a file path).
    pub scenario_args: Vec<String>,
    /// The text of each scenario's definition (same order), kept beside its logs.
    pub definitions: Vec<String>,
    /// The parameters of each scenario (same order): its file's settings under the user's values.
    pub params: Vec<Params>,
    /// `E03_PROGRESS`, when the user set it (else each swarm chooses, see `live`).
    pub progress: Option<e03_io::progress::ProgressMode>,
    /// `E03_ANSWER_SPIN_US`, when the user set it (else the dependencies' default, or 0 beside
    /// other lanes).
    pub answer_spin: Option<std::time::Duration>,
    /// `E03_METRICS_LISTEN`: the swarm's Prometheus metrics.
    pub metrics_listen: Option<std::net::SocketAddr>,
    pub out: PathBuf,
    /// One strategy at a time instead of all at once.
    pub sequential: bool,
    /// How many scenarios run at the same time, each against dependencies of its own (1: one
    /// after the other). `--sequential` runs them one after the other too.
    pub scenarios_at_once: usize,
    /// The run directory under `out`.
    pub choice: RunChoice,
    /// The user's policy file (`--policies`, `E03_POLICIES`), absolute, and its text (kept beside
    /// the logs; its strategies reach the children by value, in the parameters).
    pub policies: Option<(PathBuf, String)>,
    /// `--swarm-shards N` (`E03_SWARM_SHARDS`): the swarm of each group as N processes, shard
    /// `i/N` each (1: one swarm process).
    pub swarm_shards: u32,
    /// `--upstream URL`: each strategy's dependency is `lab proxy --http` in front of this
    /// service, applying the scenario's timeline, instead of the lab's own service.
    pub upstream: Option<dependency_service::http_proxy::Upstream>,
    /// `--junit FILE`: every check and threshold as a JUnit test case ([`crate::gate`]).
    pub junit: Option<PathBuf>,
}

/// The settings of `lab run`'s children that only env vars give, read once: `E03_PROGRESS`,
/// `E03_ANSWER_SPIN_US` and `E03_METRICS_LISTEN` (`None`: not set).
pub struct ChildSettings {
    pub progress: Option<e03_io::progress::ProgressMode>,
    pub answer_spin: Option<std::time::Duration>,
    pub metrics_listen: Option<std::net::SocketAddr>,
}

/// [`ChildSettings`] from environment variables (`env` reads one); `Err` names the variable.
pub fn child_settings(env: &dyn Fn(&str) -> Option<String>) -> Result<ChildSettings, String> {
    let progress = env("E03_PROGRESS")
        .map(|v| {
            v.parse().map_err(|e: e03_io::error::InputError| {
                e.to_string()
                    .replace("--progress (E03_PROGRESS)", "E03_PROGRESS")
            })
        })
        .transpose()?;
    let answer_spin = env("E03_ANSWER_SPIN_US")
        .map(|v| dependency_service::answer_spin_us(&v).map_err(|e| e.to_string()))
        .transpose()?;
    let metrics_listen = client_swarm::metrics_listen(env("E03_METRICS_LISTEN").as_deref())
        .map_err(|e| e.to_string())?;
    Ok(ChildSettings {
        progress,
        answer_spin,
        metrics_listen,
    })
}

/// A validated simulation (or comparison).
#[derive(Debug, Clone)]
pub struct SimPlan {
    pub scenarios: Vec<Scenario>,
    /// What each scenario was named by on the command line.
    pub scenario_args: Vec<String>,
    /// The text of each scenario's definition, kept beside its simulated outputs.
    pub definitions: Vec<String>,
    /// The parameters of each scenario (same order).
    pub params: Vec<Params>,
    /// Raw parameters as given (sweeps vary them).
    pub raw: std::collections::BTreeMap<String, String>,
    pub sweeps: Vec<simulator::SweepAxis>,
    pub out: PathBuf,
    pub sequential: bool,
    pub choice: RunChoice,
    /// The user's policy file and its text, kept beside the outputs.
    pub policies: Option<(PathBuf, String)>,
    /// `lab compare --swarm-shards N`: its live part's swarms as N processes (1 otherwise).
    pub swarm_shards: u32,
    /// `lab simulate --junit FILE` ([`crate::gate`]).
    pub junit: Option<PathBuf>,
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
        .help(
            "e03a (transient faults), e03b (outage), all (E03-A then E03-B), or a scenario file \
             (FILE.toml, see docs/scenarios.md); `lab list` shows the catalogue",
        )
}

fn out_arg() -> Arg {
    Arg::new("out")
        .long("out")
        .env("E03_OUT")
        .value_name("DIR")
        .default_value("results")
        // `--out ''` is refused (exit 2) rather than writing into the current directory.
        .value_parser(clap::builder::NonEmptyStringValueParser::new())
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

fn policies_arg() -> Arg {
    Arg::new("policies")
        .long("policies")
        .env("E03_POLICIES")
        .value_name("FILE.toml")
        .help(
            "a policy file: [[strategy]] tables (as in a scenario file, see docs/scenarios.md) \
             defining strategies --strategies can name beside A to F and the presets",
        )
}

/// Default of `--scenarios-at-once`: E03-A and E03-B together.
const SCENARIOS_AT_ONCE: &str = "2";

/// Most scenarios at once (each starts a swarm and a dependency per strategy).
const MAX_SCENARIOS_AT_ONCE: usize = 16;

fn scenarios_at_once_arg() -> Arg {
    Arg::new("scenarios-at-once")
        .long("scenarios-at-once")
        .env("E03_SCENARIOS_AT_ONCE")
        .value_name("N")
        .default_value(SCENARIOS_AT_ONCE)
        .help(
            "how many scenarios run at the same time, each with its own dependencies and swarm \
             (1: one after the other); a whole number from 1 to 16",
        )
}

/// `--scenarios-at-once`, checked.
fn scenarios_at_once(sub: &ArgMatches) -> Result<usize, String> {
    let v = sub
        .get_one::<String>("scenarios-at-once")
        .map_or(SCENARIOS_AT_ONCE, String::as_str);
    v.trim()
        .parse::<usize>()
        .ok()
        .filter(|n| (1..=MAX_SCENARIOS_AT_ONCE).contains(n))
        .ok_or_else(|| {
            format!(
                "invalid --scenarios-at-once (E03_SCENARIOS_AT_ONCE) {v:?}: expected a whole \
                 number from 1 to {MAX_SCENARIOS_AT_ONCE}"
            )
        })
}

/// Most swarm processes of one `lab run` group.
pub const MAX_SWARM_SHARDS: u32 = 64;

fn upstream_arg() -> Arg {
    Arg::new("upstream")
        .long("upstream")
        .value_name("URL")
        .help(
            "drive the run at your own HTTP service: each strategy's dependency is `lab proxy \
             --http` in front of URL, applying the scenario's timeline (docs/http-proxy.md)",
        )
}

/// `--upstream`, checked against the run: one swarm per run, and scenarios a proxy can apply
/// (not a chain, no fault on the wire).
fn upstream(
    sub: &ArgMatches,
    params: &[Params],
    scenarios: &[Scenario],
    shards: u32,
) -> Result<Option<dependency_service::http_proxy::Upstream>, String> {
    let Some(v) = sub.try_get_one::<String>("upstream").ok().flatten() else {
        return Ok(None);
    };
    let up = dependency_service::http_proxy::Upstream::parse(v).map_err(|e| e.to_string())?;
    if shards > 1 {
        return Err("--upstream with --swarm-shards: a proxy takes one swarm per run".into());
    }
    for (p, s) in params.iter().zip(scenarios) {
        if s.def().chain.is_some() {
            return Err(format!(
                "--upstream with {}: a chain's hops are the lab's own services",
                s.name()
            ));
        }
        for r in 0..p.replicas() {
            if let Some((phase, why)) =
                e03_model::fault_proxy::FaultProxy::cannot_apply(&p.timeline_of(s, r))
            {
                return Err(format!(
                    "--upstream with {}: its {phase} phase cannot be applied by a proxy: {why}",
                    s.name()
                ));
            }
        }
    }
    Ok(Some(up))
}

fn swarm_shards_arg() -> Arg {
    Arg::new("swarm-shards")
        .long("swarm-shards")
        .env("E03_SWARM_SHARDS")
        .value_name("N")
        .help(
            "run each swarm as N processes, shard i/N each (clients i, i+N, ...), registering \
             with the dependencies for one run [default: 1]",
        )
}

/// `--swarm-shards` checked against every scenario that is not a chain; `Err` is the message.
fn swarm_shards(
    sub: &ArgMatches,
    params: &[Params],
    scenarios: &[Scenario],
) -> Result<u32, String> {
    let Some(v) = sub.try_get_one::<String>("swarm-shards").ok().flatten() else {
        return Ok(1);
    };
    let n = v
        .trim()
        .parse::<u32>()
        .ok()
        .filter(|n| (1..=MAX_SWARM_SHARDS).contains(n))
        .ok_or_else(|| {
            format!(
                "invalid --swarm-shards (E03_SWARM_SHARDS) {v:?}: expected a whole number from \
                 1 to {MAX_SWARM_SHARDS}"
            )
        })?;
    for (p, s) in params.iter().zip(scenarios) {
        if s.def().chain.is_some() {
            continue;
        }
        if let Some(why) = p.unshardable(n) {
            return Err(format!(
                "invalid --swarm-shards (E03_SWARM_SHARDS) {n} for {}: {why}",
                s.name()
            ));
        }
    }
    Ok(n)
}

fn sequential_arg() -> Arg {
    Arg::new("sequential")
        .long("sequential")
        .env("E03_SEQUENTIAL")
        .action(ArgAction::SetTrue)
        .help("run the strategies one after the other instead of at the same time")
}

fn series_arg() -> Arg {
    Arg::new("series")
        .long("series")
        .action(ArgAction::SetTrue)
        .help(
            "print the series of 100 ms windows around the outage on the terminal too (always in \
             arrivals_100ms.csv and report.md)",
        )
}

fn junit_arg() -> Arg {
    Arg::new("junit").long("junit").value_name("FILE").help(
        "write every check and threshold as a JUnit XML test case to FILE, whatever the \
             verdicts (docs/ci-gates.md)",
    )
}

/// `--junit FILE`, checked (a file in a folder that exists); `None` when not given.
fn junit(sub: &ArgMatches) -> Result<Option<PathBuf>, String> {
    match sub.try_get_one::<String>("junit").ok().flatten() {
        Some(v) => crate::gate::junit_path(v).map(Some),
        None => Ok(None),
    }
}

fn json_arg() -> Arg {
    Arg::new("json")
        .long("json")
        .action(ArgAction::SetTrue)
        .help(
            "print each scenario's summary.json on stdout, one line each (JSON Lines), and \
             nothing else there: tables and progress go to stderr",
        )
}

/// `--series` and `--json` as given (`false` for a command without them).
fn show(sub: &ArgMatches) -> Show {
    let flag = |name| {
        sub.try_get_one::<bool>(name)
            .ok()
            .flatten()
            .copied()
            .unwrap_or(false)
    };
    Show {
        series: flag("series"),
        json: flag("json"),
    }
}

/// `--json` prints summaries: refused for what has none (a chain's variants, a sweep's grid).
fn check_json(scenarios: &[Scenario], sweeping: bool) -> Result<(), String> {
    if let Some(chain) = scenarios.iter().find(|s| s.def().chain.is_some()) {
        return Err(format!(
            "invalid --json: {} is a chain scenario, whose results are chain.json and chain.md, \
             not a summary.json; run it without --json",
            chain.name()
        ));
    }
    if sweeping {
        return Err(
            "invalid --json with --sweep: a sweep's results are sweep.csv, not a summary.json"
                .into(),
        );
    }
    Ok(())
}

/// What `--help` shows of `lab run`, `simulate` and `compare`; `--help-all` shows every flag.
const SHORT_HELP: &[&str] = &[
    "scenario",
    "seed",
    "seeds",
    "strategies",
    "clients",
    "duration-s",
    "out",
    "sweep",
    "series",
    "json",
    "junit",
    "help",
    "help-all",
];

/// `--help` short (the common flags, a line each), `--help-all` every flag.
fn short_help(cmd: Clap) -> Clap {
    cmd.disable_help_flag(true)
        .arg(
            Arg::new("help")
                .short('h')
                .long("help")
                .action(ArgAction::HelpShort)
                .help("the common flags (--help-all: every flag)"),
        )
        .arg(
            Arg::new("help-all")
                .long("help-all")
                .action(ArgAction::HelpLong)
                .help("every flag, with its env var and default"),
        )
        .mut_args(|a| {
            let name = a.get_long().unwrap_or(a.get_id().as_str());
            let common = SHORT_HELP.contains(&name);
            a.hide_short_help(!common)
        })
        .after_help(
            "Every parameter: --help-all, or docs/parameters.md (also as env vars E03_*, and \
             as keys of a scenario file).",
        )
}

fn cli() -> Clap {
    Clap::new("lab")
        .about("E03: when retries help and when they hurt, measured with real HTTP traffic")
        .after_help(
            "`lab SUBCOMMAND --help` describes each one. Results: OUT/<run id>/<scenario>/, \
             with OUT/latest pointing at the newest run.",
        )
        .subcommand_required(true)
        .subcommand(short_help(with_param_args(run_id_args(
            Clap::new("run")
                .about("run the live experiment over loopback and print its tables")
                .arg(scenario_arg())
                .arg(policies_arg())
                .arg(out_arg())
                .arg(sequential_arg())
                .arg(scenarios_at_once_arg())
                .arg(swarm_shards_arg())
                .arg(upstream_arg())
                .arg(series_arg())
                .arg(json_arg())
                .arg(junit_arg()),
        ))))
        .subcommand(short_help(with_param_args(run_id_args(
            Clap::new("simulate")
                .about("run the same model on a virtual clock (fast, deterministic)")
                .arg(scenario_arg())
                .arg(policies_arg())
                .arg(out_arg())
                .arg(
                    Arg::new("sweep")
                        .long("sweep")
                        .action(ArgAction::Append)
                        .value_name("NAME=V1,V2,..")
                        .help("vary a parameter over values (repeatable: the grid of all axes)"),
                )
                .arg(series_arg())
                .arg(json_arg())
                .arg(junit_arg()),
        ))))
        .subcommand(short_help(with_param_args(run_id_args(
            Clap::new("compare")
                .about("run live and simulated and print them side by side")
                .arg(scenario_arg())
                .arg(policies_arg())
                .arg(out_arg())
                .arg(sequential_arg())
                .arg(swarm_shards_arg())
                .arg(series_arg()),
        ))))
        // Dispatched in main before this parser; listed here for `lab --help`.
        .subcommand(Clap::new("list").about(
            "print the scenario catalogue (built-in scenarios; scenario files given are checked)",
        ))
        .subcommand(Clap::new("report").about(
            "analyse the logs of a finished run (OUT/latest by default) and print its tables",
        ))
        .subcommand(
            Clap::new("serve").about(
                "the dependency service alone (one strategy's server; any client can use it)",
            ),
        )
        .subcommand(
            Clap::new("swarm").about("the client swarm alone, against running `lab serve`s"),
        )
        .subcommand(Clap::new("map").about(
            "the phase map of an open-loop scenario (load x freeze length, recovered or \
             metastable) on the simulator; --verify K checks K boundary cells live",
        ))
        .subcommand(Clap::new("soak").about(
            "E03-A's traffic against one dependency for --minutes M, sampling both processes' \
             RSS, descriptors and tasks every second; fails on RSS growth or an incomplete log",
        ))
        .subcommand(
            Clap::new("analyze")
                .about("analyse one scenario folder, or a `lab serve` log alone (--server-log)"),
        )
        .subcommand(Clap::new("audit").about(
            "grade any HTTP client against the retry-logic article's checklist: `lab audit -- \
             COMMAND` runs it against a battery of probes and prints a PASS/WARN/FAIL scorecard",
        ))
        .subcommand(Clap::new("proxy").about(
            "a TCP fault proxy with Toxiproxy's HTTP API: latency, bandwidth, resets, \
             blackholes, refused connections; every connection logged",
        ))
        .subcommand(Clap::new("client").about(
            "one of the lab's strategies as a plain HTTP client of E03_TARGET_URL (for `lab \
             audit`)",
        ))
}

/// Why `lab run`, `lab simulate` or `lab compare` does not start: clap's own outcome (a usage
/// error, or the help and version it prints) or a usage error of the lab's, naming the flag,
/// variable or file key as the user typed it. Nothing is printed until [`Refused::exit`].
#[derive(Debug)]
pub enum Refused {
    /// Clap's error, help or version.
    Clap(clap::Error),
    /// The lab's usage error (exit 2).
    Usage(String),
}

impl Refused {
    /// Prints the reason (help and version on stdout, errors on stderr as `lab: ...`) and
    /// gives the exit code: clap's (0 for help and version, 2 for a usage error), or 2.
    pub fn exit(&self) -> i32 {
        match self {
            Refused::Clap(e) => e03_plan::cli::clap_exit("lab", e),
            Refused::Usage(message) => {
                eprintln!("lab: {message}");
                EXIT_USAGE
            }
        }
    }
}

fn usage_error(e: impl std::fmt::Display) -> Refused {
    Refused::Usage(e.to_string())
}

/// A `--sweep` that does not parse, with a suggestion for a misspelled name.
fn sweep_error(arg: &str, e: ParamError) -> Refused {
    match &e {
        ParamError::Unknown { name } => usage_error(format!(
            "invalid --sweep {arg:?}: unknown parameter {name:?}{}",
            did_you_mean(name).map_or(String::new(), |c| format!("; did you mean {c}?"))
        )),
        _ => usage_error(format!("invalid --sweep {arg:?}: {e}")),
    }
}

/// Each value of one `--sweep NAME=V1,V2` on its own: the error names the value as typed.
fn check_axis(
    raw: &std::collections::BTreeMap<String, String>,
    arg: &str,
    axis: &simulator::SweepAxis,
) -> Result<(), String> {
    for value in &axis.values {
        let mut r = raw.clone();
        r.insert(axis.name.clone(), value.clone());
        if let Err(ParamError::Invalid { name, accepts, .. }) = Params::from_raw(&r) {
            if name == axis.name {
                return Err(format!(
                    "invalid --sweep {arg:?}: the value {value:?} is not {accepts}"
                ));
            }
        }
    }
    Ok(())
}

/// Every point of the sweep grid must be a valid parameter set, checked before anything runs.
fn check_sweep(
    raw: &std::collections::BTreeMap<String, String>,
    sweeps: &[simulator::SweepAxis],
    scenarios: &[Scenario],
) -> Result<(), String> {
    for point in simulator::grid(sweeps) {
        let mut r = raw.clone();
        r.extend(point.iter().cloned());
        for scenario in scenarios {
            if let Err(e) = Params::for_scenario(scenario, &r) {
                let at: Vec<String> = point.iter().map(|(n, v)| format!("{n}={v}")).collect();
                let which = if scenarios.len() > 1 {
                    format!(" ({})", scenario.name())
                } else {
                    String::new()
                };
                return Err(format!("--sweep {}{which}: {e}", at.join(" ")));
            }
        }
    }
    Ok(())
}

/// Parses and validates, with how the results are shown; [`Refused`] says why not, printed by
/// its caller.
pub fn parse(args: Vec<OsString>) -> Result<(Command, Show), Refused> {
    parse_with_env_names(
        args,
        std::env::vars_os().filter_map(|(k, _)| k.into_string().ok()),
    )
}

/// [`parse`], with the names of the environment's variables given (`E03_*` names the lab does
/// not know are refused): a test names none, whatever the environment it runs in.
fn parse_with_env_names(
    args: Vec<OsString>,
    env_names: impl Iterator<Item = String>,
) -> Result<(Command, Show), Refused> {
    let m = cli().try_get_matches_from(args).map_err(Refused::Clap)?;
    let typos = unknown_env(env_names);
    if let Some(name) = typos.first() {
        return Err(usage_error(unknown_env_message(name)));
    }
    let (name, sub) = m.subcommand().expect("subcommand required");
    let show = show(sub);
    // A user's strategies first: a scenario file may name them.
    let policies = match sub.get_one::<String>("policies").filter(|p| !p.is_empty()) {
        Some(p) => {
            let path = std::path::absolute(p).unwrap_or_else(|_| PathBuf::from(p));
            let text = e03_io::scenario_files::load_policies(&path).map_err(usage_error)?;
            Some((path, text))
        }
        None => None,
    };
    let specs = policies
        .as_ref()
        .map(|(_, p)| p.specs.clone())
        .unwrap_or_default();
    let policies = policies.map(|(path, p)| (path, p.text));
    let scenario = sub.get_one::<String>("scenario").expect("required");
    let args = e03_io::scenario_files::resolve_with(scenario, &specs).map_err(usage_error)?;
    let scenarios: Vec<Scenario> = args.iter().map(|a| a.scenario.clone()).collect();
    let scenario_args: Vec<String> = args
        .iter()
        .map(|a| match &a.file {
            // Children run from the same directory, but an absolute path is safer.
            Some(f) => std::path::absolute(f)
                .unwrap_or_else(|_| f.clone())
                .display()
                .to_string(),
            None => a.scenario.name().to_string(),
        })
        .collect();
    let raw = raw_params(sub);
    let params = scenarios
        .iter()
        .map(|s| params_for_scenario(sub, s))
        .collect::<Result<Vec<Params>, ParamError>>()
        .map_err(usage_error)?;
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
    if name != "simulate" {
        // The swarm child reads it; checked here so that nothing is created for a bad value.
        client_swarm::metrics_listen(std::env::var("E03_METRICS_LISTEN").ok().as_deref())
            .map_err(usage_error)?;
    }
    match name {
        "run" => {
            if show.json {
                check_json(&scenarios, false).map_err(usage_error)?;
            }
            let ChildSettings {
                progress,
                answer_spin,
                metrics_listen,
            } = child_settings(&|k| std::env::var(k).ok()).map_err(usage_error)?;
            let swarm_shards = swarm_shards(sub, &params, &scenarios).map_err(usage_error)?;
            let upstream = upstream(sub, &params, &scenarios, swarm_shards).map_err(usage_error)?;
            let plan = RunPlan {
                junit: junit(sub).map_err(usage_error)?,
                upstream,
                progress,
                answer_spin,
                metrics_listen,
                out,
                sequential,
                scenarios_at_once: scenarios_at_once(sub).map_err(usage_error)?,
                swarm_shards,
                definitions: args.iter().map(|a| a.text.clone()).collect(),
                scenarios,
                scenario_args,
                params,
                choice,
                policies,
            };
            Ok((Command::Run(plan), show))
        }
        "simulate" | "compare" => {
            let mut sweeps = Vec::new();
            if let Ok(Some(values)) = sub.try_get_many::<String>("sweep") {
                for v in values {
                    let axis = simulator::parse_sweep(v).map_err(|e| sweep_error(v, e))?;
                    check_axis(&raw, v, &axis).map_err(usage_error)?;
                    sweeps.push(axis);
                }
            }
            check_sweep(&raw, &sweeps, &scenarios).map_err(usage_error)?;
            if show.json {
                check_json(&scenarios, !sweeps.is_empty()).map_err(usage_error)?;
            }
            if let (Some(first), Some(chain)) = (
                sweeps.first(),
                scenarios.iter().find(|s| s.def().chain.is_some()),
            ) {
                return Err(usage_error(format!(
                    "invalid --sweep {}=...: {} is a chain scenario, whose variants are its \
                     comparison; a sweep varies run parameters, which a chain does not read: \
                     sweep the other scenarios without it",
                    first.name,
                    chain.name()
                )));
            }
            let plan = SimPlan {
                junit: junit(sub).map_err(usage_error)?,
                swarm_shards: swarm_shards(sub, &params, &scenarios).map_err(usage_error)?,
                definitions: args.iter().map(|a| a.text.clone()).collect(),
                scenarios,
                scenario_args,
                params,
                raw,
                sweeps,
                out,
                sequential,
                choice,
                policies,
            };
            let command = if name == "simulate" {
                Command::Simulate(plan)
            } else {
                Command::Compare(plan)
            };
            Ok((command, show))
        }
        _ => unreachable!("clap knows the subcommands"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `lab run e03b` reads the user's input into typed parameters once (issue 50): one raw map
    /// per scenario, and nothing after it is turned into text and read again.
    #[test]
    fn run_e03b_reads_the_users_input_once() {
        let out = std::env::temp_dir().join(format!("e03-args-once-{}", std::process::id()));
        // The built-in scenario files are read (and their settings checked) once per process,
        // the first time a scenario is named: not the user's input, so not counted.
        assert!(Scenario::builtins().len() > 20);
        let before = e03_plan::params::raw_reads();
        let args = ["lab", "run", "e03b", "--out"].map(OsString::from);
        // The suite's own variables (E03_TEST_METRICS_DUMP) are not the user's input.
        let args = args.into_iter().chain([out.clone().into()]).collect();
        let (command, _) = parse_with_env_names(args, std::iter::empty()).unwrap();
        assert_eq!(e03_plan::params::raw_reads() - before, 1);
        let Command::Run(plan) = command else {
            panic!("not a run")
        };
        // Writing the plans the children read (the service's and the swarm's) reads no raw map.
        let before = e03_plan::params::raw_reads();
        let json = serde_json::to_string(&plan.params).unwrap();
        let back: Vec<Params> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, plan.params);
        assert_eq!(e03_plan::params::raw_reads(), before);
        assert!(!out.exists(), "parsing made {}", out.display());
    }

    fn refused(args: &[&str]) -> Refused {
        let args = args.iter().map(OsString::from).collect();
        match parse_with_env_names(args, std::iter::empty()) {
            Ok(_) => panic!("accepted"),
            Err(refused) => refused,
        }
    }

    /// A refusal is a value that names what the user typed; its caller prints it and exits 2
    /// (clap's own usage errors too; its help exits 0).
    #[test]
    fn bad_input_is_a_refusal_naming_what_was_typed() {
        let sweep = refused(&["lab", "simulate", "e03b", "--sweep", "E03_WORKRES=1,2"]);
        let Refused::Usage(message) = &sweep else {
            panic!("{sweep:?}")
        };
        assert!(message.contains("--sweep \"E03_WORKRES=1,2\""), "{message}");
        assert!(message.contains("did you mean E03_WORKERS?"), "{message}");
        let value = refused(&["lab", "run", "e03b", "--workers", "lots"]);
        let Refused::Usage(message) = &value else {
            panic!("{value:?}")
        };
        assert!(message.contains("--workers"), "{message}");
        assert!(matches!(
            refused(&["lab", "run", "e03b", "--no-such-flag"]),
            Refused::Clap(_)
        ));
        assert_eq!(refused(&["lab", "run", "e03b", "--workers", "0"]).exit(), 2);
        let help = refused(&["lab", "run", "--help"]);
        assert!(
            matches!(&help, Refused::Clap(e) if !e.use_stderr()),
            "{help:?}"
        );
    }
}
