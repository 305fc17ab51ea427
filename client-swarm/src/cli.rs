//! The `client-swarm` command line: raw arguments, then a validated [`Setup`], then work.
//!
//! Everything that can be wrong with the input (a flag, an env var, a target URL, a strategy
//! without a target) is found before anything is sent, reported on one line naming the flag or
//! env var, the value and what is accepted, with exit code 2. Then the swarm waits for every
//! target's health, runs every scenario x seed in order (one [`run_swarm`] each, one progress
//! line each on stderr), and exits 0; Ctrl-C or SIGTERM stops the current run cleanly (logs
//! closed with `complete: false`, dependencies told) and exits 130.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Arg, ArgMatches, Command};
use e03_core::cli::{unknown_env, with_param_args};
use e03_core::{Params, Scenario};
use tokio::sync::watch;

use crate::http::wait_healthy;
use crate::plan::{
    parse_targets, HostSettings, PlannedScenario, SwarmPlan, SwarmRunPlan, Target,
    DEFAULT_START_DELAY,
};
use crate::run::run_swarm;
use e03_io::rundir::{self as outdir, RunChoice, RunDir};

/// Health checks before the first run: tries and the pause between them (30 s in all).
const HEALTH_TRIES: u32 = 60;
const HEALTH_INTERVAL: Duration = Duration::from_millis(500);

/// Runtime worker threads per core (see [`worker_threads`]).
const WORKERS_PER_CORE: usize = 4;
/// tokio's own name for a worker count override, honoured (and checked) here.
const TOKIO_WORKER_THREADS: &str = "TOKIO_WORKER_THREADS";

/// The swarm's runtime worker threads: `TOKIO_WORKER_THREADS` when set, else four per core
/// instead of tokio's one.
///
/// Why more than one per core: the swarm shares its cores with the dependencies, and at a
/// burst (the freeze's end answers every held request at once) a client woken by the timer
/// waits in its runtime's queue behind the burst's tasks until a worker of its process runs
/// and polls it. More workers give the swarm a fairer share of the CPU against the
/// dependencies' threads and drain its queues in parallel. Measured on 2 cores (e03b, seed 42,
/// all four strategies at once, lateness p99 of C, the worst strategy): 1,000 clients: 2
/// workers 17-20 ms, 4 workers 1.8 ms, 8 workers 0.8-3.0 ms (five runs); 2,000 clients: 2
/// workers 88 ms, 4 workers 64 ms, 8 workers 17-22 ms (the rest is CPU at the freeze's end).
fn worker_threads(env: Option<OsString>, cores: usize) -> Result<usize, String> {
    let Some(value) = env else {
        return Ok(cores.max(1) * WORKERS_PER_CORE);
    };
    value
        .to_str()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n >= 1)
        .ok_or_else(|| {
            format!(
                "invalid {TOKIO_WORKER_THREADS} {value:?}: expected a whole number of runtime worker threads, at least 1"
            )
        })
}

use e03_io::exit::{
    FAILED as EXIT_FAILED, OK as EXIT_OK, STOPPED as EXIT_STOPPED, USAGE as EXIT_USAGE,
};

fn command() -> Command {
    let cmd = Command::new("client-swarm")
        .about("Closed-loop HTTP clients that retry with each strategy against its own dependency (E03).")
        .after_help(
            "Or: --plan FILE alone runs the plan in FILE (JSON, as `lab run` writes it for its \
             swarm) and reads no other flag and no E03_* variable.",
        )
        .arg(
            Arg::new("targets")
                .long("targets")
                .env("E03_TARGETS")
                .value_name("A=WORK_URL@CONTROL_URL,...")
                .required(true)
                .help("each strategy's dependency: work and control base URLs"),
        )
        .arg(
            Arg::new("scenarios")
                .long("scenarios")
                .env("E03_SCENARIOS")
                .value_name("SCENARIOS")
                .default_value("all")
                .help(
                    "scenarios to run, in order: e03a, e03b, all (the built-ins), scenario files \
                     (FILE.toml), comma-separated",
                ),
        )
        .arg(
            Arg::new("out")
                .long("out")
                .env("E03_OUT")
                .value_name("DIR")
                .default_value("results")
                .help(
                    "output directory (client logs go to DIR/<scenario>/client-*.jsonl; with \
                     --claim-run-dir to DIR/<run id>/<scenario>/)",
                ),
        )
        .arg(
            Arg::new("claim-run-dir")
                .long("claim-run-dir")
                .action(clap::ArgAction::SetTrue)
                .help(
                    "treat --out as the results root: write into OUT/<run id>/ (E03_RUN_ID, else \
                     a fresh UTC time stamp), point OUT/latest at it and tell the dependencies \
                     (compose)",
                ),
        )
        .arg(
            Arg::new("run-id")
                .long("run-id")
                .env("E03_RUN_ID")
                .value_name("NAME")
                .help(
                    "with --claim-run-dir: the run directory's name; an existing one is refused \
                     unless E03_OVERWRITE=1",
                ),
        )
        .arg(
            Arg::new("metrics-listen")
                .long("metrics-listen")
                .env("E03_METRICS_LISTEN")
                .value_name("IP:PORT")
                .help(
                    "serve Prometheus metrics at http://IP:PORT/metrics while the swarm runs \
                     (port 0: any free port, printed); off when not given",
                ),
        )
        .arg(
            Arg::new("progress")
                .long("progress")
                .env("E03_PROGRESS")
                .value_name("MODE")
                .help(
                    "progress once a second on stderr while traffic runs: auto (a bar on a \
                     terminal, lines otherwise), bar, lines or off [default: auto]",
                ),
        )
        .arg(
            Arg::new("shutdown-targets")
                .long("shutdown-targets")
                .action(clap::ArgAction::SetTrue)
                .help(
                    "when done (or stopped), ask every target's dependency (and every \
                     --chain-hops hop) to shut down (compose)",
                ),
        )
        .arg(
            Arg::new("shard")
                .long("shard")
                .env("E03_SHARD")
                .value_name("I/N")
                .help(
                    "run shard I of N (from 0) of each run: clients I, I+N, I+2N, ...; N swarms \
                     with the same flags, one per shard, make the run together (each registers \
                     with the dependencies, which start the run at one instant)",
                ),
        )
        .arg(
            Arg::new("send-logs")
                .long("send-logs")
                .env(e03_io::ship::SEND_LOGS_ENV)
                .value_name("URL")
                .help(e03_io::ship::SEND_LOGS_HELP),
        )
        .arg(
            Arg::new("chain-hops")
                .long("chain-hops")
                .value_name("URL,...")
                .help(
                    "base URLs of hop services started with `lab hop --listen .. --log-dir \
                     OUT` (compose: http://hop-1:8080,...): chain scenarios (amplification, \
                     deadline) run through them, the first hop called by the swarm, the last \
                     used one as the bottom",
                ),
        );
    // Negative numbers reach the parameter validation, which names the parameter, instead of
    // clap's "unexpected argument '-1'".
    with_param_args(cmd).mut_args(|a| {
        if a.get_help_heading() == Some("Run parameters") {
            a.allow_negative_numbers(true)
        } else {
            a
        }
    })
}

/// A validated command line.
#[derive(Debug)]
struct Setup {
    targets: Vec<Target>,
    scenarios: Vec<Scenario>,
    /// The parameters of each scenario (same order): its file's settings under the user's values.
    params: Vec<Params>,
    /// The text of each scenario's file (same order), kept beside its logs.
    definitions: Vec<String>,
    out: PathBuf,
    /// `--claim-run-dir`: claim `out/<run id>/` first (the id from `--run-id`/`E03_RUN_ID`).
    claim: Option<Option<String>>,
    /// The run directory's name once claimed (sent in every `StartRun`).
    run_dir: Option<String>,
    /// Shut every target down at the end (`--shutdown-targets`).
    shutdown_targets: bool,
    /// `--chain-hops`: the hop services (shut down with the targets).
    chain_hops: Vec<String>,
    /// The text of the user's policy file (`E03_POLICIES`), kept beside the logs.
    policies: Option<String>,
    /// `--metrics-listen`: where to serve `GET /metrics` (off when `None`).
    metrics_listen: Option<std::net::SocketAddr>,
    /// `--progress`: how the progress of a run is shown.
    progress: crate::progress::ProgressMode,
    /// `E03_UID`, `E03_GID`, `E03_ALLOW_ROOT`, `E03_OVERWRITE`, read once.
    host: HostSettings,
    /// Whether `lab swarm` analyses the logs after a signal stopped it.
    report_when_stopped: bool,
    /// `--shard I/N` (`E03_SHARD`): one shard of each run.
    shard: Option<e03_core::shard::Shard>,
    /// `--send-logs URL` (`E03_SEND_LOGS`): the analyzer's collector.
    send_logs: Option<String>,
}

impl Setup {
    /// The plan this setup stands for (what `--plan FILE` holds).
    fn to_plan(&self) -> SwarmRunPlan {
        SwarmRunPlan {
            targets: self.targets.clone(),
            scenarios: self
                .scenarios
                .iter()
                .zip(&self.params)
                .zip(&self.definitions)
                .map(|((s, params), text)| PlannedScenario {
                    definition: s.def().clone(),
                    text: text.clone(),
                    params: params.clone(),
                })
                .collect(),
            out: self.out.clone(),
            claim: self.claim.clone(),
            shutdown_targets: self.shutdown_targets,
            chain_hops: self.chain_hops.clone(),
            policies: self.policies.clone(),
            metrics_listen: self.metrics_listen,
            progress: self.progress,
            host: self.host.clone(),
            report_when_stopped: self.report_when_stopped,
            shard: self.shard,
            send_logs: self.send_logs.clone(),
        }
    }

    /// A plan made ready to run: its scenarios made `Scenario` values, every
    /// strategy given a target. `Err` is the one-line message.
    fn from_plan(plan: SwarmRunPlan) -> Result<Setup, String> {
        let mut scenarios = Vec::new();
        for s in &plan.scenarios {
            s.definition.check()?;
            scenarios.push(Scenario::from_def(s.definition.clone()).map_err(|e| e.to_string())?);
        }
        let params: Vec<Params> = plan.scenarios.iter().map(|s| s.params.clone()).collect();
        check_targets(&params, &plan.targets, "")?;
        check_shard(plan.shard, &params, plan.claim.is_some())?;
        Ok(Setup {
            targets: plan.targets,
            scenarios,
            params,
            definitions: plan.scenarios.into_iter().map(|s| s.text).collect(),
            out: plan.out,
            claim: plan.claim,
            run_dir: None,
            shutdown_targets: plan.shutdown_targets,
            chain_hops: plan.chain_hops,
            policies: plan.policies,
            metrics_listen: plan.metrics_listen,
            progress: plan.progress,
            host: plan.host,
            report_when_stopped: plan.report_when_stopped,
            shard: plan.shard,
            send_logs: plan.send_logs,
        })
    }
}

/// Every strategy of every scenario needs a target; `given` is the `--targets` text, if any.
fn check_targets(params: &[Params], targets: &[Target], given: &str) -> Result<(), String> {
    for p in params {
        let ids: Vec<&str> = p.strategies().iter().map(|s| s.id.as_str()).collect();
        if let Some(missing) = ids
            .iter()
            .find(|id| !targets.iter().any(|t| t.strategy == **id))
        {
            return Err(format!(
                "invalid --targets (E03_TARGETS) {given:?}: strategy {missing} of E03_STRATEGIES={} has \
                 no target; expected one entry {missing}=WORK_URL@CONTROL_URL per strategy",
                ids.join(",")
            ));
        }
        // A run over replicas needs each strategy's every replica (`ID:R`).
        for id in &ids {
            if let Some(r) = (1..p.replicas())
                .find(|&r| !targets.iter().any(|t| t.strategy == *id && t.replica == r))
            {
                return Err(format!(
                    "invalid --targets (E03_TARGETS) {given:?}: strategy {id} has no target for \
                     replica {r} of E03_REPLICAS={}; expected one entry {id}:{r}=WORK_URL@CONTROL_URL \
                     per replica after the first",
                    p.replicas()
                ));
            }
        }
    }
    Ok(())
}

/// `--shard I/N` (`E03_SHARD`) given as text, checked: `None` when not given or empty.
fn shard_arg(value: Option<&str>) -> Result<Option<e03_core::shard::Shard>, String> {
    match value.map(str::trim) {
        None | Some("") => Ok(None),
        Some(v) => v
            .parse()
            .map(Some)
            .map_err(|e| format!("invalid --shard (E03_SHARD) {e}")),
    }
}

/// A shard's runs can be split over processes (a closed loop's clients, no budget shared by the
/// whole fleet: [`Params::unshardable`]), and it does not claim a run directory of its own
/// (every shard writes into the one `--out`).
fn check_shard(
    shard: Option<e03_core::shard::Shard>,
    params: &[Params],
    claim: bool,
) -> Result<(), String> {
    let Some(shard) = shard.filter(|s| !s.is_whole()) else {
        return Ok(());
    };
    if let Some(why) = params.iter().find_map(|p| p.unshardable(shard.count)) {
        return Err(format!("invalid --shard (E03_SHARD) {shard}: {why}"));
    }
    if claim {
        return Err(format!(
            "invalid --shard (E03_SHARD) {shard} with --claim-run-dir: every shard writes into \
             the one --out; claim the run directory once, before the shards start"
        ));
    }
    Ok(())
}

/// `--metrics-listen` (`E03_METRICS_LISTEN`), checked: `None` when not given or empty.
pub fn metrics_listen(value: Option<&str>) -> Result<Option<std::net::SocketAddr>, String> {
    match value.map(str::trim) {
        None | Some("") => Ok(None),
        Some(v) => Ok(Some(v.parse::<std::net::SocketAddr>().map_err(|_| {
            format!(
                "invalid --metrics-listen (E03_METRICS_LISTEN) {v:?}: expected IP:PORT, \
                 for example 127.0.0.1:9464 (port 0: any free port)"
            )
        })?)),
    }
}

/// `--plan FILE`: the whole command line when it is `PROGRAM --plan FILE`; `Err` when `--plan`
/// comes with anything else (a plan is the whole setting).
fn plan_arg(args: &[OsString]) -> Result<Option<PathBuf>, String> {
    match args {
        [_, flag, file] if flag == "--plan" => Ok(Some(PathBuf::from(file))),
        _ if args.iter().skip(1).any(|a| a == "--plan") => {
            Err("--plan FILE takes no other flag: the plan is the whole setting".into())
        }
        _ => Ok(None),
    }
}

/// Reads a plan file ([`SwarmRunPlan`] as JSON) into a setup; `Err` names `--plan`.
fn load_plan(path: &Path) -> Result<Setup, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("invalid --plan {:?}: cannot read it: {e}", path.display()))?;
    setup_of_plan_text(&text).map_err(|e| format!("invalid --plan {:?}: {e}", path.display()))
}

/// A plan's text, parsed and checked into a setup; `Err` is the message without the file's name.
fn setup_of_plan_text(text: &str) -> Result<Setup, String> {
    let plan: SwarmRunPlan = serde_json::from_str(text).map_err(|e| e.to_string())?;
    Setup::from_plan(plan)
}

/// A plan file's text read and checked as `lab swarm --plan FILE` reads it (its scenarios are
/// made `Scenario` values); the plan as it will run. `Err` is the message without the
/// file's name (the fuzz target `plan` drives it, see docs/fuzzing.md).
pub fn check_plan_text(text: &str) -> Result<SwarmRunPlan, String> {
    setup_of_plan_text(text).map(|s| s.to_plan())
}

/// The plan of a command line, resolved from its flags and env vars as `main_entry` resolves
/// it (for a look at it, or to write it as `--plan FILE`); `Err` is the one-line message.
pub fn resolve_plan(args: &[OsString]) -> Result<SwarmRunPlan, String> {
    if let Some(path) = plan_arg(args)? {
        return load_plan(&path).map(|s| s.to_plan());
    }
    let m = command()
        .try_get_matches_from(args)
        .map_err(|e| e.to_string())?;
    let env_names = std::env::vars_os().filter_map(|(k, _)| k.into_string().ok());
    setup(&m, env_names.collect(), &|k| std::env::var(k).ok()).map(|s| s.to_plan())
}

/// Checks everything, in the order a user would fix it; `Err` is the one-line message.
fn setup(
    m: &ArgMatches,
    env_names: Vec<String>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Setup, String> {
    if let Some(name) = unknown_env(env_names).into_iter().next() {
        return Err(e03_core::cli::unknown_env_message(&name));
    }
    // A user's strategies first: a scenario (file) may name them.
    let policies = e03_io::scenario_files::load_policies_from_env()?;
    let value = |id: &str| m.get_one::<String>(id).cloned().unwrap_or_default();
    let specs = policies
        .as_ref()
        .map(|p| p.specs.clone())
        .unwrap_or_default();
    let policies = policies.map(|p| p.text);
    let args = e03_io::scenario_files::resolve_with(&value("scenarios"), &specs).map_err(|e| {
        format!(
            "invalid --scenarios (E03_SCENARIOS) {:?}: {e}",
            value("scenarios")
        )
    })?;
    let definitions: Vec<String> = args.iter().map(|a| a.text.clone()).collect();
    let scenarios: Vec<Scenario> = args.iter().map(|a| a.scenario.clone()).collect();
    let params = scenarios
        .iter()
        .map(|s| e03_core::cli::params_for_scenario(m, s).map_err(|e| e.to_string()))
        .collect::<Result<Vec<Params>, String>>()?;
    let targets = parse_targets(&value("targets")).map_err(|e| e.to_string())?;
    check_targets(&params, &targets, &value("targets"))?;
    let metrics_listen = metrics_listen(m.get_one::<String>("metrics-listen").map(String::as_str))?;
    let progress = m
        .get_one::<String>("progress")
        .map_or(Ok(crate::progress::ProgressMode::Auto), |v| v.parse())?;
    let run_id = m.get_one::<String>("run-id").filter(|v| !v.is_empty());
    let claim = m.get_flag("claim-run-dir");
    let shard = shard_arg(m.get_one::<String>("shard").map(String::as_str))?;
    check_shard(shard, &params, claim)?;
    let send_logs = e03_io::ship::collector_url(&value("send-logs"))
        .map_err(|e| format!("invalid --send-logs (E03_SEND_LOGS) {e}"))?;
    if !claim
        && run_id.is_some()
        && m.value_source("run-id") == Some(clap::parser::ValueSource::CommandLine)
    {
        return Err(
            "--run-id needs --claim-run-dir (without it, --out is the run directory)".into(),
        );
    }
    Ok(Setup {
        targets,
        scenarios,
        claim: claim.then(|| run_id.cloned()),
        run_dir: None,
        params,
        definitions,
        out: PathBuf::from(value("out")),
        shutdown_targets: m.get_flag("shutdown-targets"),
        chain_hops: chain_hops(m)?,
        policies,
        metrics_listen,
        progress,
        host: HostSettings::from_env(env),
        report_when_stopped: true,
        shard,
        send_logs,
    })
}

/// Checks, before any traffic, what would otherwise fail in the middle of a run: uid 0 in compose
/// (refused unless `E03_ALLOW_ROOT=1`), an output directory the swarm cannot write (with the
/// command that fixes it), and an earlier run's logs that this run would mix with (refused unless
/// `E03_OVERWRITE=1`). `env` reads an environment variable.
fn preflight(
    out: &Path,
    scenarios: &[Scenario],
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(), String> {
    preflight_shard(out, scenarios, None, env)
}

/// [`preflight`] for one shard of a run split over swarm processes: the logs of the run's other
/// shards (written at the same time into the same folder) are not an earlier run's.
fn preflight_shard(
    out: &Path,
    scenarios: &[Scenario],
    shard: Option<e03_core::shard::Shard>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(), String> {
    let shard = shard.filter(|s| !s.is_whole());
    let sibling = |name: &str| {
        shard.is_some_and(|s| {
            (0..s.count)
                .filter(|&i| i != s.index)
                .any(|i| name.ends_with(&format!("-shard{i}of{}.jsonl", s.count)))
        })
    };
    refuse_root(env)?;
    let on = |name: &str| env(name).is_some_and(|v| v == "1" || v == "true");
    for scenario in scenarios {
        let dir = out.join(scenario.name());
        let probe = dir.join(format!(".e03-write-check-{}", std::process::id()));
        let written = std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::write(&probe, b""))
            .and_then(|()| std::fs::remove_file(&probe));
        if let Err(e) = written {
            return Err(format!(
                "cannot write into {} (--out): {e}{}",
                dir.display(),
                chown_fix(env)
            ));
        }
        let earlier = std::fs::read_dir(&dir)
            .map(|entries| {
                entries.filter_map(Result::ok).any(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    name.starts_with("client-") && name.ends_with(".jsonl") && !sibling(&name)
                })
            })
            .unwrap_or(false);
        if earlier && !on("E03_OVERWRITE") {
            return Err(format!(
                "{} already holds the logs of an earlier run; give this run a directory of its \
                 own (a new --out, or --claim-run-dir for a fresh DIR/<run id>/ as compose \
                 does), or set E03_OVERWRITE=1 to replace them",
                dir.display()
            ));
        }
    }
    Ok(())
}

/// uid 0 in compose is refused unless `E03_ALLOW_ROOT=1`.
fn refuse_root(env: &dyn Fn(&str) -> Option<String>) -> Result<(), String> {
    let on = |name: &str| env(name).is_some_and(|v| v == "1" || v == "true");
    if env("E03_UID").as_deref() == Some("0") && !on("E03_ALLOW_ROOT") {
        return Err(
            "E03_UID=0 runs the containers as root; keep the default non-root user and give it \
             the results folder instead (on the host: sudo chown -R 1000:1000 results), or set \
             E03_ALLOW_ROOT=1 to run as root on purpose"
                .into(),
        );
    }
    Ok(())
}

/// In compose (`E03_UID` set): how to give the container user the results folder.
fn chown_fix(env: &dyn Fn(&str) -> Option<String>) -> String {
    let uid = env("E03_UID").filter(|v| !v.is_empty());
    let gid = env("E03_GID").filter(|v| !v.is_empty());
    match (&uid, &gid) {
        (Some(u), g) => {
            let g = g.as_deref().unwrap_or(u);
            format!(
                "; the containers run as {u}:{g} (E03_UID:E03_GID); on the host, give them the \
                 results folder: sudo chown -R {u}:{g} results"
            )
        }
        (None, _) => String::new(),
    }
}

/// `--claim-run-dir`: claims `out/<id>/` (the given id, refused when it exists unless
/// `E03_OVERWRITE=1`, whose earlier logs are then removed; else a fresh time stamp) and points
/// `out/latest` at it. Every error is a usage error, said on one line.
fn claim_run_dir(
    out: &Path,
    id: Option<String>,
    scenarios: &[Scenario],
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<RunDir, String> {
    refuse_root(env)?;
    let choice = RunChoice {
        id,
        overwrite: env("E03_OVERWRITE").is_some_and(|v| v == "1" || v == "true"),
    };
    outdir::check_choice(out, &choice, "--run-id (E03_RUN_ID)")?;
    let run = outdir::claim(out, &choice).map_err(|e| {
        format!(
            "cannot write into {} (--out): {}{}",
            out.display(),
            e.root_cause(),
            chown_fix(env)
        )
    })?;
    if choice.id.is_some() {
        for scenario in scenarios {
            outdir::remove_old_logs(&run.dir.join(scenario.name()))
                .map_err(|e| format!("{e:#}"))?;
        }
    }
    Ok(run)
}

/// The run directory this process claimed (`--claim-run-dir`), for [`out_and_scenarios`].
static CLAIMED: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// The output directory and scenarios a command line asks for, parsed exactly as
/// [`main_entry`] parses them (flags, env vars, defaults); `None` if it does not parse. The lab's
/// `swarm` wrapper uses it to analyse what a stopped swarm logged.
pub fn out_and_scenarios(args: &[OsString]) -> Option<(PathBuf, Vec<Scenario>)> {
    if let Some(path) = plan_arg(args).ok()? {
        let setup = load_plan(&path).ok()?;
        let out = CLAIMED.get().cloned().unwrap_or(setup.out);
        return Some((out, setup.scenarios));
    }
    let m = command().try_get_matches_from(args).ok()?;
    let out = match CLAIMED.get() {
        Some(dir) => dir.clone(),
        None => PathBuf::from(m.get_one::<String>("out")?),
    };
    let scenarios = e03_io::scenario_files::resolve(m.get_one::<String>("scenarios")?).ok()?;
    Some((out, scenarios.into_iter().map(|a| a.scenario).collect()))
}

/// The scenarios a command line names (`--scenarios` or `E03_SCENARIOS`), as typed; `None` if
/// it does not parse. The lab's `swarm` wrapper splits a list that mixes chain scenarios with
/// others by it.
pub fn scenarios_value(args: &[OsString]) -> Option<String> {
    let m = command().try_get_matches_from(args).ok()?;
    m.get_one::<String>("scenarios").cloned()
}

/// Whether a signal-stopped swarm of this command line should be analysed by `lab swarm`: the
/// plan's word with `--plan FILE` (`lab run` analyses itself), else yes.
pub fn report_when_stopped(args: &[OsString]) -> bool {
    match plan_arg(args) {
        Ok(Some(path)) => load_plan(&path).is_ok_and(|s| s.report_when_stopped),
        _ => true,
    }
}

/// The whole CLI with its own tokio runtime; returns the exit code. `PROGRAM --plan FILE` runs
/// the plan in FILE and reads no flag and no `E03_*` variable; otherwise the flags and env vars
/// are resolved into the same plan, once, here.
pub fn main_entry(args: Vec<OsString>) -> i32 {
    let resolved = match plan_arg(&args) {
        Ok(Some(path)) => load_plan(&path),
        Ok(None) => {
            let m = match command().try_get_matches_from(args) {
                Ok(m) => m,
                Err(e) => {
                    let _ = e.print();
                    return if e.use_stderr() { EXIT_USAGE } else { EXIT_OK };
                }
            };
            let env_names = std::env::vars_os()
                .filter_map(|(k, _)| k.into_string().ok())
                .collect();
            setup(&m, env_names, &|k| std::env::var(k).ok())
        }
        Err(msg) => Err(msg),
    };
    let mut setup = match resolved {
        Ok(s) => s,
        Err(msg) => {
            eprintln!("client-swarm: {msg}");
            return EXIT_USAGE;
        }
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let workers = match worker_threads(std::env::var_os(TOKIO_WORKER_THREADS), cores) {
        Ok(n) => n,
        Err(msg) => {
            eprintln!("client-swarm: {msg}");
            return EXIT_USAGE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .on_thread_start(precise_timer::realtime::on_worker_start)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("client-swarm: cannot start the tokio runtime: {e}");
            return EXIT_FAILED;
        }
    };
    crate::progress::set_mode(setup.progress);
    runtime.block_on(async {
        let targets = setup.targets.clone();
        let shutdown_targets = setup.shutdown_targets;
        let chain_hops = setup.chain_hops.clone();
        if let Some(addr) = setup.metrics_listen {
            let listener = match tokio::net::TcpListener::bind(addr).await {
                Ok(l) => l,
                Err(e) => {
                    eprintln!(
                        "client-swarm: cannot listen on --metrics-listen (E03_METRICS_LISTEN) \
                         {addr}: {e}"
                    );
                    return EXIT_USAGE;
                }
            };
            match listener.local_addr() {
                Ok(bound) => eprintln!("client-swarm: metrics at http://{bound}/metrics"),
                Err(e) => eprintln!("client-swarm: metrics listener: {e}"),
            }
            // Called here, not in the task: collecting starts before any client runs.
            let serving = crate::metrics::serve_metrics(listener);
            tokio::spawn(async move {
                if let Err(e) = serving.await {
                    tracing::error!("metrics listener failed: {e}");
                }
            });
        }
        let host = setup.host.clone();
        let env = move |k: &str| host.var(k);
        let checked = claim_if_asked(&mut setup, &env)
            .and_then(|()| preflight_shard(&setup.out, &setup.scenarios, setup.shard, &env));
        let code = match checked {
            Ok(()) => run_all(setup).await,
            Err(msg) => {
                eprintln!("client-swarm: {msg}");
                EXIT_USAGE
            }
        };
        if shutdown_targets {
            for target in &targets {
                if let Err(e) = crate::http::shutdown_target(&target.control_url).await {
                    eprintln!("client-swarm: strategy {}: {e}", target.strategy);
                }
            }
            shutdown_hops(&chain_hops).await;
        }
        code
    })
}

/// `--chain-hops`: comma-separated base URLs (`http://HOST:PORT`).
fn chain_hops(m: &ArgMatches) -> Result<Vec<String>, String> {
    let Some(value) = m.get_one::<String>("chain-hops") else {
        return Ok(Vec::new());
    };
    let mut hops = Vec::new();
    for part in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let ok = reqwest::Url::parse(part)
            .is_ok_and(|u| u.scheme() == "http" && u.host_str().is_some_and(|h| !h.is_empty()));
        if !ok {
            return Err(format!(
                "invalid --chain-hops {value:?}: entry {part:?} is not a base URL; expected a \
                 comma-separated list like http://hop-1:8080,http://hop-2:8080"
            ));
        }
        hops.push(part.trim_end_matches('/').to_string());
    }
    Ok(hops)
}

/// Asks every hop to shut down (`POST /control/shutdown`); one that is gone already is said.
pub async fn shutdown_hops(hops: &[String]) {
    for hop in hops {
        if let Err(e) = crate::http::shutdown_target(hop).await {
            eprintln!("client-swarm: hop {hop}: {e}");
        }
    }
}

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

/// Reads a swarm command line for chain scenarios; `Err` is the one-line message (exit 2).
pub fn chain_args(args: &[OsString]) -> Result<ChainArgs, String> {
    let m = command()
        .try_get_matches_from(args)
        .map_err(|e| e.to_string())?;
    let env_names = std::env::vars_os().filter_map(|(k, _)| k.into_string().ok());
    if let Some(name) = unknown_env(env_names).into_iter().next() {
        return Err(e03_core::cli::unknown_env_message(&name));
    }
    let value = |id: &str| m.get_one::<String>(id).cloned().unwrap_or_default();
    let scenarios = e03_io::scenario_files::resolve(&value("scenarios"))
        .map_err(|e| {
            format!(
                "invalid --scenarios (E03_SCENARIOS) {:?}: {e}",
                value("scenarios")
            )
        })?
        .into_iter()
        .map(|a| ScenarioArgs {
            scenario: a.scenario,
            text: a.text,
        })
        .collect();
    let targets = parse_targets(&value("targets")).map_err(|e| e.to_string())?;
    let run_id = m.get_one::<String>("run-id").filter(|v| !v.is_empty());
    let claim = m.get_flag("claim-run-dir");
    let host = HostSettings::from_env(&|k| std::env::var(k).ok());
    Ok(ChainArgs {
        out: PathBuf::from(value("out")),
        scenarios,
        claim: claim.then(|| run_id.cloned()),
        hops: chain_hops(&m)?,
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
pub fn claim_chain_run(a: &ChainArgs) -> Result<PathBuf, String> {
    let env = |k: &str| a.host.var(k);
    let scenarios: Vec<Scenario> = a.scenarios.iter().map(|s| s.scenario.clone()).collect();
    let dir = match &a.claim {
        Some(id) => {
            let run = claim_run_dir(&a.out, id.clone(), &scenarios, &env)?;
            eprintln!(
                "client-swarm: run {} writes into {}",
                run.id,
                outdir::shown_under(&run.dir, a.host.host_results.as_deref())
            );
            let _ = CLAIMED.set(run.dir.clone());
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

/// With `--claim-run-dir`: claims the run directory and makes it the setup's output directory.
fn claim_if_asked(setup: &mut Setup, env: &dyn Fn(&str) -> Option<String>) -> Result<(), String> {
    let Some(id) = setup.claim.take() else {
        return Ok(());
    };
    let run = claim_run_dir(&setup.out, id, &setup.scenarios, env)?;
    eprintln!(
        "client-swarm: run {} writes into {}",
        run.id,
        outdir::shown_under(&run.dir, setup.host.host_results.as_deref())
    );
    let _ = CLAIMED.set(run.dir.clone());
    setup.out = run.dir;
    setup.run_dir = Some(run.id);
    Ok(())
}

async fn run_all(setup: Setup) -> i32 {
    let (signal_tx, signal_rx) = watch::channel(false);
    tokio::spawn(async move {
        shutdown_signal().await;
        signal_tx.send_replace(true);
        // Keep the sender alive so that receivers never mistake its drop for a signal.
        std::future::pending::<()>().await;
    });
    let signalled = move || {
        let mut rx = signal_rx.clone();
        async move {
            let _ = rx.wait_for(|s| *s).await;
        }
    };
    let used: Vec<&Target> = setup
        .targets
        .iter()
        .filter(|t| {
            setup
                .params
                .iter()
                .any(|p| p.strategy(&t.strategy).is_some())
        })
        .collect();
    for target in used {
        for base in [&target.control_url, &target.work_url] {
            tokio::select! {
                r = wait_healthy(base, HEALTH_TRIES, HEALTH_INTERVAL) => if let Err(e) = r {
                    eprintln!("client-swarm: strategy {}: {e}", target.strategy);
                    return EXIT_FAILED;
                },
                _ = signalled() => return EXIT_STOPPED,
            }
        }
    }
    // The analyzer that takes the logs is up too (an orchestrator starts them all at once).
    if let Some(url) = &setup.send_logs {
        tokio::select! {
            r = wait_healthy(url, HEALTH_TRIES, HEALTH_INTERVAL) => if let Err(e) = r {
                eprintln!("client-swarm: the analyzer (--send-logs): {e}");
                return EXIT_FAILED;
            },
            _ = signalled() => return EXIT_STOPPED,
        }
    }
    for (i, (scenario, params)) in setup.scenarios.iter().zip(&setup.params).enumerate() {
        let dir = setup.out.join(scenario.name());
        if let Err(e) = e03_io::scenario_files::keep(&dir, &setup.definitions[i]) {
            eprintln!("client-swarm: {e}");
            return EXIT_FAILED;
        }
        if let Some(text) = &setup.policies {
            if let Err(e) = e03_io::scenario_files::keep_policies(&dir, text) {
                eprintln!("client-swarm: {e}");
                return EXIT_FAILED;
            }
        }
        // The logs these runs will write, so that an analyzer waits for all of them.
        let shards = setup.shard.map_or(1, |s| s.count);
        let logs: Vec<String> = params
            .strategies()
            .iter()
            .flat_map(|s| {
                params.seeds().iter().flat_map(move |&seed| {
                    e03_core::control::run_log_names(&s.id, seed, params.replicas(), shards)
                })
            })
            .collect();
        if let Err(e) = e03_io::scenario_files::keep_run_logs(&dir, &logs) {
            eprintln!("client-swarm: {e}");
            return EXIT_FAILED;
        }
        // Without a shared folder the analyzer gets the kept definitions first.
        if let Some(url) = &setup.send_logs {
            let kept: Vec<PathBuf> = [
                e03_io::scenario_files::SCENARIO_FILE,
                e03_io::scenario_files::POLICIES_FILE,
                e03_core::control::RUN_LOGS_FILE,
            ]
            .iter()
            .map(|f| dir.join(f))
            .filter(|p| p.is_file())
            .collect();
            if let Err(e) = e03_io::ship::send_files(&reqwest::Client::new(), url, &kept).await {
                eprintln!("client-swarm: {e}");
                return EXIT_FAILED;
            }
        }
        for &seed in params.seeds() {
            let plan = SwarmPlan {
                scenario: scenario.clone(),
                seed,
                params: params.clone(),
                targets: setup.targets.clone(),
                out_dir: setup.out.clone(),
                run_dir: setup.run_dir.clone(),
                // Shards started together register within this: the first one's time zero
                // must leave the others time to join.
                start_delay: match setup.shard.filter(|s| !s.is_whole()) {
                    None => DEFAULT_START_DELAY,
                    Some(_) => crate::plan::SHARD_START_DELAY,
                },
                shard: setup.shard,
                send_logs: setup.send_logs.clone(),
            };
            let began = std::time::Instant::now();
            let report = match run_swarm(plan, signalled()).await {
                Ok(r) => r,
                Err(e) => {
                    eprintln!(
                        "client-swarm: {} seed {seed}: {}",
                        scenario.name(),
                        e03_core::cli::error_chain(AsRef::<dyn std::error::Error>::as_ref(&e))
                    );
                    return EXIT_FAILED;
                }
            };
            // A shard sent part of what its dependency received: the analyzer matches them.
            let shard = setup.shard.filter(|s| !s.is_whole());
            let runs: Vec<String> = report
                .runs
                .iter()
                .map(|r| match shard {
                    None => format!(
                        "{} {} ops, {}/{}",
                        r.strategy, r.operations, r.attempts, r.server.arrivals
                    ),
                    Some(_) => format!("{} {} ops, {}", r.strategy, r.operations, r.attempts),
                })
                .collect();
            let what = match shard {
                None => "attempts sent/arrived".to_string(),
                Some(s) => format!("shard {s}, attempts sent"),
            };
            let head = format!(
                "client-swarm: {} seed {seed} {} in {:.1} s ({what}):",
                scenario.name(),
                if report.complete { "done" } else { "STOPPED" },
                began.elapsed().as_secs_f64(),
            );
            eprintln!("{}", wrap_list(&head, &runs, 120));
            if !report.complete {
                return EXIT_STOPPED;
            }
        }
    }
    EXIT_OK
}

/// `head item; item; ...`, continued on indented lines so that no line is wider than `width`
/// (an item wider than that stands alone on its line).
fn wrap_list(head: &str, items: &[String], width: usize) -> String {
    let mut out = head.to_string();
    let mut line = head.len();
    for (i, item) in items.iter().enumerate() {
        let sep = if i == 0 { " " } else { "; " };
        if line + sep.len() + item.len() > width && line > 2 {
            out.push_str(if i == 0 { "\n  " } else { ";\n  " });
            line = 2;
        } else {
            out.push_str(sep);
            line += sep.len();
        }
        out.push_str(item);
        line += item.len();
    }
    out
}

/// Resolves on Ctrl-C or SIGTERM (never, if neither can be listened to).
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_swarm_runs_four_workers_per_core_unless_told_otherwise() {
        assert_eq!(worker_threads(None, 0), Ok(4));
        assert_eq!(worker_threads(None, 2), Ok(8));
        assert_eq!(worker_threads(Some("3".into()), 2), Ok(3));
        for bad in ["0", "-1", "many", ""] {
            let e = worker_threads(Some(bad.into()), 2).unwrap_err();
            assert!(
                e.contains("TOKIO_WORKER_THREADS") && e.contains(&format!("{bad:?}")),
                "{e}"
            );
        }
    }

    fn parse(args: &[&str]) -> Result<Setup, String> {
        let m = command()
            .try_get_matches_from(args.iter().copied())
            .map_err(|e| e.to_string())?;
        setup(&m, Vec::new(), &|_| None)
    }

    const T: &str =
        "A=http://127.0.0.1:1@http://127.0.0.1:2,B=http://127.0.0.1:3@http://127.0.0.1:4";

    #[test]
    fn a_good_command_line_is_validated_into_a_setup() {
        let s = parse(&[
            "cs",
            "--targets",
            T,
            "--strategies",
            "B,A",
            "--scenarios",
            "e03b",
            "--seeds",
            "1-3",
        ])
        .unwrap();
        assert_eq!(s.scenarios, vec![Scenario::e03b()]);
        assert_eq!(s.params[0].seeds(), vec![1, 2, 3]);
        assert_eq!(s.targets.len(), 2);
        assert_eq!(s.out, PathBuf::from("results"));
    }

    #[test]
    fn the_metrics_address_is_off_by_default_and_checked() {
        assert_eq!(
            parse(&["cs", "--targets", T, "--strategies", "A,B"])
                .unwrap()
                .metrics_listen,
            None
        );
        let s = parse(&[
            "cs",
            "--targets",
            T,
            "--strategies",
            "A,B",
            "--metrics-listen",
            "127.0.0.1:0",
        ])
        .unwrap();
        assert_eq!(s.metrics_listen, Some("127.0.0.1:0".parse().unwrap()));
        let e = parse(&[
            "cs",
            "--targets",
            T,
            "--strategies",
            "A,B",
            "--metrics-listen",
            "localhost",
        ])
        .unwrap_err();
        assert!(
            e.contains("--metrics-listen (E03_METRICS_LISTEN) \"localhost\"")
                && e.contains("IP:PORT"),
            "{e}"
        );
    }

    #[test]
    fn the_progress_mode_is_auto_by_default_and_checked() {
        use crate::progress::ProgressMode;
        let base = ["cs", "--targets", T, "--strategies", "A,B"];
        assert_eq!(parse(&base).unwrap().progress, ProgressMode::Auto);
        let with = |v: &'static str| {
            let mut a = base.to_vec();
            a.extend(["--progress", v]);
            parse(&a)
        };
        assert_eq!(with("lines").unwrap().progress, ProgressMode::Lines);
        assert_eq!(with("off").unwrap().progress, ProgressMode::Off);
        let e = with("fancy").unwrap_err();
        assert!(e.contains("--progress (E03_PROGRESS) \"fancy\""), "{e}");
    }

    #[test]
    fn every_strategy_needs_a_target() {
        let e = parse(&["cs", "--targets", T, "--strategies", "A,C"]).unwrap_err();
        assert!(e.contains("strategy C") && e.contains("E03_TARGETS"), "{e}");
    }

    #[test]
    fn a_run_over_replicas_needs_every_replica_s_target() {
        let e = parse(&[
            "cs",
            "--targets",
            T,
            "--strategies",
            "A,B",
            "--replicas",
            "2",
        ])
        .unwrap_err();
        assert!(
            e.contains("strategy A has no target for replica 1 of E03_REPLICAS=2")
                && e.contains("A:1=WORK_URL@CONTROL_URL"),
            "{e}"
        );
        let both = format!("{T},A:1=http://x:5@http://x:6,B:1=http://x:7@http://x:8");
        let s = parse(&[
            "cs",
            "--targets",
            &both,
            "--strategies",
            "A,B",
            "--replicas",
            "2",
        ])
        .unwrap();
        assert_eq!(s.targets.iter().filter(|t| t.replica == 1).count(), 2);
    }

    #[test]
    fn the_done_line_wraps_within_its_width() {
        let items: Vec<String> = (0..6).map(|i| format!("{i} 1234 ops, 3095/3095")).collect();
        let text = wrap_list(
            "client-swarm: e03b seed 42 done in 31.2 s (attempts sent/arrived):",
            &items,
            120,
        );
        assert!(text.lines().all(|l| l.len() <= 120), "{text}");
        assert_eq!(text.matches("ops").count(), 6);
        assert!(text.contains(";\n  "), "{text}");
    }

    #[test]
    fn chain_hops_are_base_urls() {
        let s = parse(&[
            "cs",
            "--targets",
            T,
            "--strategies",
            "A",
            "--chain-hops",
            "http://hop-1:8080/, http://hop-2:8080",
        ])
        .unwrap();
        assert_eq!(s.chain_hops, ["http://hop-1:8080", "http://hop-2:8080"]);
        let e = parse(&[
            "cs",
            "--targets",
            T,
            "--strategies",
            "A",
            "--chain-hops",
            "hop-1:8080",
        ])
        .unwrap_err();
        assert!(
            e.contains("--chain-hops") && e.contains("\"hop-1:8080\""),
            "{e}"
        );
        let s = parse(&["cs", "--targets", T, "--strategies", "A"]).unwrap();
        assert!(s.chain_hops.is_empty());
    }

    #[test]
    fn bad_scenarios_and_params_name_their_variable() {
        let e = parse(&[
            "cs",
            "--targets",
            T,
            "--strategies",
            "A",
            "--scenarios",
            "e03z",
        ])
        .unwrap_err();
        assert!(e.contains("E03_SCENARIOS") && e.contains("e03z"), "{e}");
        let e = parse(&["cs", "--targets", T, "--strategies", "A", "--clients", "0"]).unwrap_err();
        // Named as typed: the flag, not its env var.
        assert!(e.contains("invalid --clients=\"0\""), "{e}");
        assert!(!e.contains("E03_CLIENTS"), "{e}");
    }

    #[test]
    fn unknown_e03_env_vars_are_refused() {
        let m = command()
            .try_get_matches_from(["cs", "--targets", T, "--strategies", "A"])
            .unwrap();
        let e = setup(&m, vec!["E03_CLIENT".into(), "HOME".into()], &|_| None).unwrap_err();
        assert!(e.contains("E03_CLIENT:"), "{e}");
        assert!(e.contains("did you mean E03_CLIENTS?"), "{e}");
    }

    #[test]
    fn preflight_refuses_root_unwritable_and_mixing_before_any_traffic() {
        use std::collections::HashMap;
        let dir = std::env::temp_dir().join(format!("swarm-preflight-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let vars = |pairs: &[(&str, &str)]| -> HashMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let check = |env: HashMap<String, String>| {
            preflight(&dir, &[Scenario::e03b()], &move |k| env.get(k).cloned())
        };
        let err = check(vars(&[("E03_UID", "0")])).unwrap_err();
        assert!(
            err.contains("E03_ALLOW_ROOT=1") && err.contains("chown"),
            "{err}"
        );
        check(vars(&[("E03_UID", "0"), ("E03_ALLOW_ROOT", "1")])).unwrap();
        assert!(dir.join("e03b").is_dir());

        std::fs::write(dir.join("e03b/client-A-seed42.jsonl"), "").unwrap();
        let err = check(vars(&[])).unwrap_err();
        assert!(err.contains("E03_OVERWRITE=1"), "{err}");
        check(vars(&[("E03_OVERWRITE", "1")])).unwrap();

        // A file where the scenario folder should be: nothing can be written there.
        let blocked = dir.join("blocked");
        std::fs::write(&blocked, "").unwrap();
        let env = vars(&[("E03_UID", "1000"), ("E03_GID", "1000")]);
        let err =
            preflight(&blocked, &[Scenario::e03b()], &move |k| env.get(k).cloned()).unwrap_err();
        assert!(err.contains("cannot write into"), "{err}");
        assert!(err.contains("sudo chown -R 1000:1000 results"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_swarm_claims_a_run_directory_of_its_own_under_out() {
        use std::collections::HashMap;
        let out = std::env::temp_dir().join(format!("swarm-claim-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(out.join("notes.txt"), "mine").unwrap();
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            let map: HashMap<&str, &str> = pairs.iter().copied().collect();
            move |k: &str| map.get(k).map(|v| v.to_string())
        };
        let none = env(&[]);
        let scenarios = [Scenario::e03a(), Scenario::e03b()];

        // Two plain runs (no E03_RUN_ID): two directories, latest at the second.
        let first = claim_run_dir(&out, None, &scenarios, &none).unwrap();
        let second = claim_run_dir(&out, None, &scenarios, &none).unwrap();
        assert_ne!(first.dir, second.dir);
        assert!(first.dir.is_dir() && second.dir.is_dir());
        assert!(
            e03_core::control::valid_run_dir(&second.id),
            "{}",
            second.id
        );
        assert_eq!(
            std::fs::read_link(out.join(outdir::LATEST)).unwrap(),
            PathBuf::from(&second.id)
        );
        assert_eq!(
            std::fs::read_to_string(out.join("notes.txt")).unwrap(),
            "mine"
        );

        // A given id: used as is; again only with E03_OVERWRITE=1, which removes only the
        // lab's logs.
        let named = claim_run_dir(&out, Some("named".into()), &scenarios, &none).unwrap();
        assert_eq!(named.dir, out.join("named"));
        std::fs::create_dir_all(named.dir.join("e03b")).unwrap();
        std::fs::write(named.dir.join("e03b/client-A-seed42.jsonl"), "").unwrap();
        std::fs::write(named.dir.join("e03b/mine.txt"), "").unwrap();
        let err = claim_run_dir(&out, Some("named".into()), &scenarios, &none).unwrap_err();
        assert!(
            err.contains("already exists") && err.contains("E03_OVERWRITE=1"),
            "{err}"
        );
        assert!(named.dir.join("e03b/client-A-seed42.jsonl").exists());
        let overwrite = env(&[("E03_OVERWRITE", "1")]);
        claim_run_dir(&out, Some("named".into()), &scenarios, &overwrite).unwrap();
        assert!(!named.dir.join("e03b/client-A-seed42.jsonl").exists());
        assert!(named.dir.join("e03b/mine.txt").exists());

        let err = claim_run_dir(&out, Some("../up".into()), &scenarios, &none).unwrap_err();
        assert!(err.contains("--run-id (E03_RUN_ID)"), "{err}");
        let root = env(&[("E03_UID", "0")]);
        let err = claim_run_dir(&out, None, &scenarios, &root).unwrap_err();
        assert!(err.contains("E03_ALLOW_ROOT=1"), "{err}");

        // An --out that cannot be created: the fix is named.
        let blocked = out.join("notes.txt").join("results");
        let compose = env(&[("E03_UID", "1000"), ("E03_GID", "1000")]);
        let err = claim_run_dir(&blocked, None, &scenarios, &compose).unwrap_err();
        assert!(
            err.contains("cannot write into") && err.contains("sudo chown -R 1000:1000 results"),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(&out);
    }

    #[test]
    fn a_run_id_without_claim_run_dir_is_a_usage_error() {
        let err =
            parse(&["cs", "--targets", T, "--strategies", "A,B", "--run-id", "x"]).unwrap_err();
        assert!(err.contains("--run-id needs --claim-run-dir"), "{err}");
        let s = parse(&[
            "cs",
            "--targets",
            T,
            "--strategies",
            "A,B",
            "--claim-run-dir",
            "--run-id",
            "x",
        ])
        .unwrap();
        assert_eq!(s.claim, Some(Some("x".into())));
        let s = parse(&[
            "cs",
            "--targets",
            T,
            "--strategies",
            "A,B",
            "--claim-run-dir",
        ])
        .unwrap();
        assert_eq!(s.claim, Some(None));
    }
}
