//! The lab's client swarm: closed-loop HTTP clients that retry with a strategy against a
//! dependency that may freeze, logging every attempt and operation.
//!
//! One [`run_swarm`] call runs one scenario x seed: every strategy of the plan at the same
//! time, each against its own dependency, all with the same time zero. The retry decisions come
//! from the pure core (`e03_model::Operation`, strategies and budgets as data); this crate only
//! supplies the clock, the sockets and the log files.
//!
//! Map of the modules:
//!
//! - `plan`: what a run is asked to do, what it reports, `--targets` syntax.
//! - `run`: one run: control start, clients, control stop, logs opened and closed.
//! - `client`: what a strategy run's clients share, and what they did.
//! - `drive`: the one live driver of the core's workloads (closed loop, group, fixed rate,
//!   open loop, steps, the chain's top caller), the same for every strategy.
//! - `top`: the chain's top caller, driven by `drive` against the first hop.
//! - `http`: the reqwest client, work attempts, control calls and health checks.
//! - `log`: the client log, through the lab's one writer (`e03_io::sink`).
//! - `metrics`: the Prometheus metrics of the process, served by `--metrics-listen`.
//! - `progress`: the once-a-second progress line (or bar) on stderr (`--progress`).
//! - `stop`: the stop signal every client watches.
//! - `command`: a swarm command line resolved once ([`resolve_swarm`]) into the ordinary
//!   scenarios' [`Swarm`] and the chain scenarios' [`ChainArgs`].
//! - `cli`: running a resolved swarm with its own runtime, and [`resolve_plan`].
//! - `flags`: the flags (clap's command) and the readers of the values clap cannot check.
//! - `setup`: the plan a command line resolves to, from flags and env vars or a plan.
//! - `plan_file`: `--plan FILE`, a plan that is the whole setting ([`check_plan_text`]).
//! - `run_dir`: where a swarm writes, checked and claimed (`--claim-run-dir`) before traffic.
//! - `run_all`: running the plan: health checks, then every scenario x seed.
//! - `chain_args`: a command line of chain scenarios, which the lab runs through the hops.
//! - `chain_run`: chain scenarios through hop services, the top caller's side.
//! - `hops`: the hops' control calls (configure, in flight, idle, shut down).
//! - `signal`: Ctrl-C or SIGTERM ([`shutdown_signal`]).
//!
//! The run directory, scenario files and the progress setting are the `e03-io` crate's,
//! shared with `lab` and its simulated path.

mod chain_args;
mod chain_run;
mod cli;
mod client;
mod command;
mod drive;
mod error;
mod flags;
mod hops;
mod http;
mod log;
mod metrics;
mod plan;
mod plan_file;
mod program;
pub mod progress;
mod run;
mod run_all;
mod run_dir;
mod setup;
mod signal;
mod single;
mod stop;
mod top;
mod usage_error;

pub use chain_args::{claim_chain_run, ChainArgs, ScenarioArgs};
pub use chain_run::{check_hops, drive_variant, role_of, run_chains};
pub use cli::{resolve_plan, SwarmEnd};
pub use command::{main_entry, resolve_swarm, Refused, Swarm, SwarmCommand};
pub use error::SwarmError;
pub use flags::metrics_listen;
pub use hops::{configure_hop, inflight_at, shutdown_hops, wait_idle};
pub use http::{shutdown_target, wait_healthy};
pub use metrics::{serve_metrics, METRICS_PATH};
pub use plan::{
    parse_targets, HostSettings, PlannedScenario, SeedRun, StrategyReport, SwarmReport,
    SwarmRunPlan, Target, TargetsError, DEFAULT_START_DELAY,
};
pub use plan_file::check_plan_text;
pub use run::run_swarm;
pub use signal::shutdown_signal;
pub use single::client_entry;
pub use top::drive_top_caller;
pub use usage_error::UsageError;
