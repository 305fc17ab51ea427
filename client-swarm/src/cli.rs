//! Running a resolved swarm ([`crate::command`]) with its own tokio runtime, and
//! [`resolve_plan`], a command line's plan for a look at it.
//!
//! Everything that can be wrong with the input (a flag, an env var, a target URL, a strategy
//! without a target) is found before anything is sent, reported on one line naming the flag or
//! env var, the value and what is accepted, with exit code 2. Then the swarm waits for every
//! target's health, runs every scenario x seed in order (one [`crate::run_swarm`] each, one
//! progress line each on stderr), and exits 0; Ctrl-C or SIGTERM stops the current run cleanly
//! (logs closed with `complete: false`, dependencies told) and exits 130.
//!
//! The parts, each in a file of its own: the command line resolved once (`command.rs`), the
//! flags (`flags.rs`), the plan they resolve to (`setup.rs`), a plan file (`plan_file.rs`), the
//! run directory (`run_dir.rs`), running the plan (`run_all.rs`), the chain scenarios' command
//! line (`chain_args.rs`) and the stop signal (`signal.rs`).

use std::ffi::OsString;
use std::path::PathBuf;

use crate::flags::command;
use crate::hops::shutdown_hops;
use crate::plan::SwarmRunPlan;
use crate::plan_file::{load_plan, plan_arg};
use crate::run_all::run_all;
use crate::run_dir::{claim_if_asked, preflight_shard};
use crate::setup::{setup, Setup};
use crate::usage_error::UsageError;
use e03_io::exit::{FAILED as EXIT_FAILED, USAGE as EXIT_USAGE};

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
fn worker_threads(env: Option<OsString>, cores: usize) -> Result<usize, UsageError> {
    let Some(value) = env else {
        return Ok(cores.max(1) * WORKERS_PER_CORE);
    };
    value
        .to_str()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n >= 1)
        .ok_or_else(|| UsageError::WorkerThreads {
            value: value.clone(),
        })
}

/// The plan of a command line, resolved from its flags and env vars as [`crate::resolve_swarm`]
/// resolves it (for a look at it, or to write it as `--plan FILE`); `Err` is the one-line message.
pub fn resolve_plan(args: &[OsString]) -> Result<SwarmRunPlan, UsageError> {
    if let Some(path) = plan_arg(args)? {
        return load_plan(&path).map(|s| s.to_plan());
    }
    let m = command()
        .try_get_matches_from(args)
        .map_err(|e| UsageError::Clap(e03_plan::cli::clap_body(&e)))?;
    let env_names = std::env::vars_os().filter_map(|(k, _)| k.into_string().ok());
    setup(&m, env_names.collect(), &|k| std::env::var(k).ok()).map(|s| s.to_plan())
}

/// How a swarm ended: its exit code, and the run directory it wrote into (the one it claimed
/// with `--claim-run-dir`, else `--out`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwarmEnd {
    pub code: i32,
    pub run_dir: PathBuf,
}

/// Runs a resolved setup with its own tokio runtime: how it ended, and the run directory it
/// wrote into (the one it claimed with `--claim-run-dir`, else `--out`).
pub(crate) fn run_setup(mut setup: Setup) -> SwarmEnd {
    let end = |code: i32, setup: &Setup| SwarmEnd {
        code,
        run_dir: setup.out.clone(),
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
            eprintln!("{}: {msg}", crate::program::name());
            return end(EXIT_USAGE, &setup);
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
            eprintln!(
                "{}: cannot start the tokio runtime: {e}",
                crate::program::name()
            );
            return end(EXIT_FAILED, &setup);
        }
    };
    crate::progress::set_mode(setup.progress);
    let out = setup.out.clone();
    runtime.block_on(async {
        let targets = setup.targets.clone();
        let shutdown_targets = setup.shutdown_targets;
        let chain_hops = setup.chain_hops.clone();
        if let Some(addr) = setup.metrics_listen {
            let listener = match tokio::net::TcpListener::bind(addr).await {
                Ok(l) => l,
                Err(e) => {
                    eprintln!(
                        "{}: cannot listen on --metrics-listen (E03_METRICS_LISTEN) \
                         {addr}: {e}",
                        crate::program::name()
                    );
                    return SwarmEnd {
                        code: EXIT_USAGE,
                        run_dir: out,
                    };
                }
            };
            match listener.local_addr() {
                Ok(bound) => eprintln!(
                    "{}: metrics at http://{bound}/metrics",
                    crate::program::name()
                ),
                Err(e) => eprintln!("{}: metrics listener: {e}", crate::program::name()),
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
        // Claimed: the run directory.
        let run_dir = setup.out.clone();
        let code = match checked {
            Ok(()) => run_all(setup).await,
            Err(msg) => {
                eprintln!("{}: {msg}", crate::program::name());
                EXIT_USAGE
            }
        };
        if shutdown_targets {
            for target in &targets {
                if let Err(e) = crate::http::shutdown_target(&target.control_url).await {
                    eprintln!(
                        "{}: strategy {}: {e}",
                        crate::program::name(),
                        target.strategy
                    );
                }
            }
            shutdown_hops(&chain_hops).await;
        }
        SwarmEnd { code, run_dir }
    })
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
            let e = worker_threads(Some(bad.into()), 2).unwrap_err().to_string();
            assert!(
                e.contains("TOKIO_WORKER_THREADS") && e.contains(&format!("{bad:?}")),
                "{e}"
            );
        }
    }
}
