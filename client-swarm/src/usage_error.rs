//! What the swarm refuses before any traffic: [`UsageError`], the error of its flags, env vars,
//! plan file and run directory (exit 2). Its text names the flag, the env var or the file, and
//! what it accepts. (A run that fails once started is a [`crate::error::SwarmError`].)

use std::ffi::OsString;
use std::path::PathBuf;

use e03_io::error::InputError;
use e03_model::shard::{Shard, ShardError};
use e03_model::spec_error::SpecError;
use e03_plan::scenario::ScenarioError;
use e03_plan::ParamError;

use crate::plan::TargetsError;

/// A swarm command line, plan or output directory that cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum UsageError {
    /// Clap's refusal of the command line: its text without `error: `.
    #[error("{0}")]
    Clap(String),
    /// An `E03_*` variable the swarm does not know.
    #[error("{}", e03_plan::cli::unknown_env_message(.0))]
    UnknownEnv(String),
    /// `--plan` with other flags.
    #[error("--plan FILE takes no other flag: the plan is the whole setting")]
    PlanAlone,
    /// `--plan FILE` that cannot be read (`error`: the system's reason).
    #[error("invalid --plan {:?}: cannot read it: {error}", path.display())]
    PlanRead { path: PathBuf, error: String },
    /// `--plan FILE` whose plan cannot be used.
    #[error("invalid --plan {:?}: {error}", path.display())]
    Plan {
        path: PathBuf,
        error: Box<UsageError>,
    },
    /// A plan's text that is not a plan: the JSON reader's message.
    #[error("{json}")]
    PlanJson { json: String },
    /// A plan's scenario definition that breaks a rule.
    #[error(transparent)]
    Definition(#[from] SpecError),
    /// A plan's scenario definition that cannot be a scenario.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// A parameter (flag or `E03_*` variable).
    #[error(transparent)]
    Param(#[from] ParamError),
    /// A user's policy file (`E03_POLICIES`), or `--progress`.
    #[error(transparent)]
    Input(#[from] InputError),
    /// `--scenarios` (`E03_SCENARIOS`) that cannot be used.
    #[error("invalid --scenarios (E03_SCENARIOS) {value:?}: {error}")]
    Scenarios { value: String, error: InputError },
    /// A `--targets` entry that cannot be used.
    #[error(transparent)]
    Targets(#[from] TargetsError),
    /// A strategy without a target.
    #[error(
        "invalid --targets (E03_TARGETS) {given:?}: strategy {missing} of E03_STRATEGIES={ids} \
         has no target; expected one entry {missing}=WORK_URL@CONTROL_URL per strategy"
    )]
    NoTarget {
        given: String,
        missing: String,
        ids: String,
    },
    /// A replica of a strategy's run without a target.
    #[error(
        "invalid --targets (E03_TARGETS) {given:?}: strategy {id} has no target for replica \
         {replica} of E03_REPLICAS={replicas}; expected one entry \
         {id}:{replica}=WORK_URL@CONTROL_URL per replica after the first"
    )]
    NoReplicaTarget {
        given: String,
        id: String,
        replica: u32,
        replicas: u32,
    },
    /// `--shard` (`E03_SHARD`) that is not a shard.
    #[error("invalid --shard (E03_SHARD) {0}")]
    Shard(ShardError),
    /// A shard of runs that cannot be split (`why`: the parameter that shares state).
    #[error("invalid --shard (E03_SHARD) {shard}: {why}")]
    Unshardable { shard: Shard, why: String },
    /// A shard that would claim a run directory of its own.
    #[error(
        "invalid --shard (E03_SHARD) {shard} with --claim-run-dir: every shard writes into the \
         one --out; claim the run directory once, before the shards start"
    )]
    ShardClaims { shard: Shard },
    /// `--send-logs` (`E03_SEND_LOGS`) that is not a collector URL.
    #[error("invalid --send-logs (E03_SEND_LOGS) {0}")]
    SendLogs(InputError),
    /// `--run-id` without `--claim-run-dir`.
    #[error("--run-id needs --claim-run-dir (without it, --out is the run directory)")]
    RunIdAlone,
    /// Chain scenarios given to the bare swarm binary: they run through the hop services.
    #[error(
        "invalid --scenarios (E03_SCENARIOS): {names} are chain scenarios, which run through the \
         hop services: run them with `lab swarm --chain-hops URL,...` (compose) or `lab run`"
    )]
    ChainsNeedLab { names: String },
    /// A scenario of a chain run that is not a chain scenario.
    #[error(
        "invalid --scenarios (E03_SCENARIOS): {name} is not a chain scenario (the lab's swarm \
         runs the others first, then the chains)"
    )]
    NotAChain { name: String },
    /// Chain scenarios without `--chain-hops`.
    #[error(
        "chain scenarios need the hop services: --chain-hops http://hop-1:8080,... (compose \
         passes them); on one machine `lab run amplification` starts its own"
    )]
    NoHops,
    /// A chain variant with a fault proxy between layers, which compose's hops do not have.
    #[error(
        "invalid --scenarios (E03_SCENARIOS): {scenario} variant {variant} has a fault proxy in \
         front of a layer ([[chain.variant.proxy]]): compose's hop services have no proxy \
         between them; run it with lab run or lab simulate"
    )]
    ProxyInChain { scenario: String, variant: String },
    /// Fewer hop services than a variant's layers.
    #[error(
        "invalid --chain-hops: {scenario} variant {variant} needs {need} hop services ({hops} \
         hops and the bottom), --chain-hops names {given}"
    )]
    TooFewHops {
        scenario: String,
        variant: String,
        need: usize,
        hops: usize,
        given: usize,
    },
    /// `--metrics-listen` (`E03_METRICS_LISTEN`) that is not an address.
    #[error(
        "invalid --metrics-listen (E03_METRICS_LISTEN) {value:?}: expected IP:PORT, for example \
         127.0.0.1:9464 (port 0: any free port)"
    )]
    MetricsListen { value: String },
    /// A `--chain-hops` entry that is not a base URL.
    #[error(
        "invalid --chain-hops {value:?}: entry {part:?} is not a base URL; expected a \
         comma-separated list like http://hop-1:8080,http://hop-2:8080"
    )]
    ChainHops { value: String, part: String },
    /// `TOKIO_WORKER_THREADS` that is not a number of threads.
    #[error(
        "invalid TOKIO_WORKER_THREADS {value:?}: expected a whole number of runtime worker \
         threads, at least 1"
    )]
    WorkerThreads { value: OsString },
    /// `lab client` without `E03_TARGET_URL`.
    #[error("E03_TARGET_URL (--url): not given: the URL to send the operations to")]
    NoTargetUrl,
    /// A `lab client` variable's value (`name`) it does not accept.
    #[error("invalid {name} {value:?}: expected {accepts}")]
    Invalid {
        name: &'static str,
        value: String,
        accepts: &'static str,
    },
    /// uid 0 in compose, without `E03_ALLOW_ROOT=1`.
    #[error(
        "E03_UID=0 runs the containers as root; keep the default non-root user and give it the \
         results folder instead (on the host: sudo chown -R 1000:1000 results), or set \
         E03_ALLOW_ROOT=1 to run as root on purpose"
    )]
    Root,
    /// An output folder the swarm cannot write (`error`: the system's reason; `fix`: in
    /// compose, how to give the container user the folder, else empty).
    #[error("cannot write into {} (--out): {error}{fix}", dir.display())]
    Unwritable {
        dir: PathBuf,
        error: String,
        fix: String,
    },
    /// A scenario folder with an earlier run's logs, without `E03_OVERWRITE=1`.
    #[error(
        "{} already holds the logs of an earlier run; give this run a directory of its own (a \
         new --out, or --claim-run-dir for a fresh DIR/<run id>/ as compose does), or set \
         E03_OVERWRITE=1 to replace them",
        dir.display()
    )]
    EarlierRun { dir: PathBuf },
    /// An earlier run's logs that could not be removed: the reasons, outermost first.
    #[error("{0}")]
    OldLogs(String),
}
