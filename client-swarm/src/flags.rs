//! The `client-swarm` flags: clap's [`Command`] (every flag with its env var, default and help,
//! and the run parameters of `e03_plan::cli`), and the readers of the values clap cannot check
//! alone (`--metrics-listen`, `--shard`, `--chain-hops`), each `Err` a one-line message naming
//! the flag and its env var.
//!
//! On its own so that what reads a command line (the plan resolved from it, the chain
//! scenarios' arguments, the lab's wrapper) reads it one way; it names nothing else of the crate.

use crate::usage_error::UsageError;
use clap::{Arg, ArgMatches, Command};
use e03_plan::cli::with_param_args;

pub(crate) fn command() -> Command {
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

/// `--shard I/N` (`E03_SHARD`) given as text, checked: `None` when not given or empty.
pub(crate) fn shard_arg(
    value: Option<&str>,
) -> Result<Option<e03_model::shard::Shard>, UsageError> {
    match value.map(str::trim) {
        None | Some("") => Ok(None),
        Some(v) => v.parse().map(Some).map_err(UsageError::Shard),
    }
}

/// `--metrics-listen` (`E03_METRICS_LISTEN`), checked: `None` when not given or empty.
pub fn metrics_listen(value: Option<&str>) -> Result<Option<std::net::SocketAddr>, UsageError> {
    match value.map(str::trim) {
        None | Some("") => Ok(None),
        Some(v) => Ok(Some(v.parse::<std::net::SocketAddr>().map_err(|_| {
            UsageError::MetricsListen {
                value: v.to_string(),
            }
        })?)),
    }
}

/// `--chain-hops`: comma-separated base URLs (`http://HOST:PORT`).
pub(crate) fn chain_hops(m: &ArgMatches) -> Result<Vec<String>, UsageError> {
    let Some(value) = m.get_one::<String>("chain-hops") else {
        return Ok(Vec::new());
    };
    let mut hops = Vec::new();
    for part in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let ok = reqwest::Url::parse(part)
            .is_ok_and(|u| u.scheme() == "http" && u.host_str().is_some_and(|h| !h.is_empty()));
        if !ok {
            return Err(UsageError::ChainHops {
                value: value.clone(),
                part: part.to_string(),
            });
        }
        hops.push(part.trim_end_matches('/').to_string());
    }
    Ok(hops)
}
