//! What a swarm run is asked to do ([`SeedRun`]) and what it reports ([`SwarmReport`]),
//! plus the `--targets` syntax that names each strategy's dependency.

use std::path::PathBuf;
use std::time::Duration;

use e03_plan::control::{valid_strategy_id, RunCounts};
use e03_plan::{Params, Scenario};

use crate::http::endpoint;

/// One strategy's dependency: where its work goes and where its run is controlled.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Target {
    pub strategy: String,
    /// Base URL of the work listener, e.g. `http://127.0.0.1:8080` (`/work` is appended).
    pub work_url: String,
    /// Base URL of the control listener (`/control/start`, `/control/stop`, `/health`).
    pub control_url: String,
    /// Which replica of the strategy's dependency it is (`E03_REPLICAS`; 0, the first, when
    /// there is one): `--targets C:1=...` names replica 1.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub replica: u32,
}

fn is_zero(r: &u32) -> bool {
    *r == 0
}

/// Everything a swarm process does, resolved once, before it starts: the scenarios by value
/// with their typed parameters, the targets and every setting that used to come from the
/// environment. `lab run` writes it as JSON and starts `lab swarm --plan FILE`, which reads
/// nothing else (no flag, no `E03_*` variable); `lab swarm` started alone (compose) resolves
/// the same plan from its own flags and env vars, at start, once.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SwarmRunPlan {
    /// Each strategy's dependency.
    pub targets: Vec<Target>,
    /// The scenarios, run one after the other, every seed of each.
    pub scenarios: Vec<PlannedScenario>,
    /// The run directory (or, with `claim`, the results root).
    pub out: PathBuf,
    /// Claim `out/<run id>/` first (the id when given): compose's `--claim-run-dir`.
    pub claim: Option<Option<String>>,
    /// Ask every target (and hop) to shut down at the end.
    pub shutdown_targets: bool,
    /// The hop services (shut down with the targets).
    pub chain_hops: Vec<String>,
    /// The text of the user's policy file, kept beside the logs (its strategies are in the
    /// parameters, by value).
    pub policies: Option<String>,
    /// Where to serve `GET /metrics` (off when `None`).
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// How the progress of a run is shown.
    pub progress: crate::progress::ProgressMode,
    /// The container's user and the run directory's rules (compose's `E03_UID`, ...).
    pub host: HostSettings,
    /// When a signal stops the swarm, `lab swarm` analyses what the logs hold (compose has no
    /// analyzer after Ctrl-C); `lab run` analyses itself and says `false`.
    pub report_when_stopped: bool,
    /// `--shard I/N` (`E03_SHARD`): this swarm runs one shard of each run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<e03_model::shard::Shard>,
    /// `--send-logs URL` (`E03_SEND_LOGS`): the analyzer's collector, to which each client log
    /// (and each kept scenario file) is sent when its run ends (`e03_io::ship`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_logs: Option<String>,
}

/// One scenario of a [`SwarmRunPlan`], by value.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PlannedScenario {
    /// The scenario's data (made a `Scenario` value by the process that reads it).
    pub definition: e03_plan::scenario::ScenarioDef,
    /// Its definition's text, kept beside its logs (`scenario.toml`).
    pub text: String,
    /// Its parameters: its settings under the user's values, the strategies this swarm runs.
    pub params: Params,
}

/// The settings of the host a swarm writes on (compose's environment), resolved once.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HostSettings {
    /// `E03_UID`, `E03_GID`: the containers' user (named in the fix of an unwritable folder).
    pub uid: Option<String>,
    pub gid: Option<String>,
    /// `E03_ALLOW_ROOT=1`: uid 0 on purpose.
    pub allow_root: bool,
    /// `E03_OVERWRITE=1`: replace an earlier run's logs.
    pub overwrite: bool,
    /// `E03_HOST_RESULTS`: the host's path of `/results`, for the paths the swarm prints.
    #[serde(default)]
    pub host_results: Option<String>,
}

impl HostSettings {
    /// The settings from environment variables (`env` reads one).
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> HostSettings {
        let on = |name: &str| env(name).is_some_and(|v| v == "1" || v == "true");
        let set = |name: &str| env(name).filter(|v| !v.is_empty());
        HostSettings {
            uid: set("E03_UID"),
            gid: set("E03_GID"),
            allow_root: on("E03_ALLOW_ROOT"),
            overwrite: on("E03_OVERWRITE"),
            host_results: set("E03_HOST_RESULTS"),
        }
    }

    /// The settings seen as the environment variables they stand for.
    pub fn var(&self, name: &str) -> Option<String> {
        let flag = |on: bool| on.then(|| "1".to_string());
        match name {
            "E03_UID" => self.uid.clone(),
            "E03_GID" => self.gid.clone(),
            "E03_ALLOW_ROOT" => flag(self.allow_root),
            "E03_OVERWRITE" => flag(self.overwrite),
            "E03_HOST_RESULTS" => self.host_results.clone(),
            _ => None,
        }
    }
}

/// One scenario x seed: every target's strategy runs AT THE SAME TIME, each against its own
/// dependency, all with the same time zero.
#[derive(Debug, Clone)]
pub struct SeedRun {
    pub scenario: Scenario,
    pub seed: u64,
    /// `params.strategies` says which strategies run; each needs a [`Target`].
    pub params: Params,
    pub targets: Vec<Target>,
    /// Client logs go to `out_dir/<e03_plan::log_names::client_log_path(..)>`.
    pub out_dir: PathBuf,
    /// Sent in every `StartRun` (`run_dir`): the dependencies log into `<log dir>/<run_dir>/`.
    /// `Some` when the swarm claimed `out_dir` = `OUT/<run id>` itself (compose).
    pub run_dir: Option<String>,
    /// Time zero = now + this, so every dependency and client is ready when it comes.
    pub start_delay: Duration,
    /// This swarm is one shard of a run split over swarm processes (`--shard I/N`): it runs
    /// that shard's clients, registers with each dependency for the run, and logs into
    /// `client-<strategy>-seed<seed>-shard<I>of<N>.jsonl`. `None`: the whole run.
    pub shard: Option<e03_model::shard::Shard>,
    /// The analyzer's collector, to which each client log is sent when its run ends.
    pub send_logs: Option<String>,
}

/// The default [`SeedRun::start_delay`].
pub const DEFAULT_START_DELAY: Duration = Duration::from_secs(1);

/// [`DEFAULT_START_DELAY`] of a shard: the shards of a run register within it (a shard that
/// registers after the run's time zero is refused, and the run marked incomplete).
pub const SHARD_START_DELAY: Duration = Duration::from_secs(2);

/// What one strategy's run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StrategyReport {
    pub strategy: String,
    /// Operations started (each has an operation record in the client log).
    pub operations: u64,
    /// Attempts sent (each has an attempt record in the client log).
    pub attempts: u64,
    /// The dependency's own counts, from its answer to `/control/stop`.
    pub server: RunCounts,
    /// False when the run was stopped before its natural end.
    pub complete: bool,
}

/// What a whole swarm run did, one report per strategy in `params.strategies` order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwarmReport {
    pub runs: Vec<StrategyReport>,
    pub complete: bool,
}

/// A `--targets` value that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid --targets (E03_TARGETS) entry {entry:?}: {problem}; expected a comma-separated list like A=http://HOST:PORT@http://HOST:PORT (strategy=WORK_URL@CONTROL_URL)")]
pub struct TargetsError {
    pub entry: String,
    pub problem: &'static str,
}

/// Parses `A=WORK_URL@CONTROL_URL,B=...`.
pub fn parse_targets(value: &str) -> Result<Vec<Target>, TargetsError> {
    let mut targets: Vec<Target> = Vec::new();
    for entry in value.split(',').map(str::trim) {
        let err = |problem| TargetsError {
            entry: entry.to_string(),
            problem,
        };
        let (strategy, urls) = entry.split_once('=').ok_or_else(|| err("no '='"))?;
        // `ID:R`: replica R of the strategy's dependency.
        let (strategy, replica) = match strategy.split_once(':') {
            None => (strategy, 0),
            Some((id, r)) => match r.trim().parse::<u32>() {
                Ok(r) if r < 16 => (id, r),
                _ => {
                    return Err(err(
                        "the replica after ':' must be a whole number from 0 to 15",
                    ))
                }
            },
        };
        // The lab's own ids (A to F) in any case; a scenario's own ids as written.
        let strategy = strategy.trim();
        let strategy = if strategy.len() == 1 {
            strategy.to_ascii_uppercase()
        } else {
            strategy.to_string()
        };
        if !valid_strategy_id(&strategy) {
            return Err(err("the strategy id must be letters, digits and '-'"));
        }
        let (work, control) = urls.split_once('@').ok_or_else(|| err("no '@'"))?;
        let (work, control) = (work.trim(), control.trim());
        if endpoint(work, "/work").is_none() {
            return Err(err("the work URL is not an http:// URL with a host"));
        }
        if endpoint(control, "/health").is_none() {
            return Err(err("the control URL is not an http:// URL with a host"));
        }
        if targets
            .iter()
            .any(|t| t.strategy == strategy && t.replica == replica)
        {
            return Err(err("the strategy has a target already (for this replica)"));
        }
        targets.push(Target {
            strategy,
            work_url: work.to_string(),
            control_url: control.to_string(),
            replica,
        });
    }
    Ok(targets)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scenarios_own_strategy_ids_keep_their_case() {
        let t =
            parse_targets("immediate-20ms=http://h:1@http://h:2,c=http://h:3@http://h:4").unwrap();
        assert_eq!(t[0].strategy, "immediate-20ms");
        assert_eq!(t[1].strategy, "C");
        // Replicas: `ID:R`.
        let t = parse_targets("C=http://h:1@http://h:2,C:1=http://g:3@http://g:4").unwrap();
        assert_eq!((t[0].replica, t[1].replica), (0, 1));
        assert_eq!(
            (t[1].strategy.as_str(), t[1].work_url.as_str()),
            ("C", "http://g:3")
        );
    }

    #[test]
    fn targets_parse() {
        let t = parse_targets(
            "A=http://127.0.0.1:1@http://127.0.0.1:2, d=http://dep-d:8080/@http://dep-d:8081",
        )
        .unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].strategy, "A");
        assert_eq!(t[0].work_url, "http://127.0.0.1:1");
        assert_eq!(t[0].control_url, "http://127.0.0.1:2");
        assert_eq!(t[1].strategy, "D");
        assert_eq!(t[1].work_url, "http://dep-d:8080/");
    }

    #[test]
    fn bad_targets_name_the_entry() {
        for (value, problem) in [
            ("A", "no '='"),
            ("A=http://x:1", "no '@'"),
            ("A=x:1@http://x:2", "work URL"),
            ("A=http://x:1@https://x:2", "control URL"),
            ("../A=http://x:1@http://x:2", "letters, digits and '-'"),
            ("A=http://x:1@http://x:2,a=http://x:3@http://x:4", "already"),
            (
                "A=http://x:1@http://x:2,A:0=http://x:3@http://x:4",
                "already",
            ),
            ("A:x=http://x:1@http://x:2", "replica after ':'"),
            ("A:16=http://x:1@http://x:2", "replica after ':'"),
        ] {
            let e = parse_targets(value).unwrap_err().to_string();
            assert!(
                e.contains(problem) && e.contains("--targets"),
                "{value}: {e}"
            );
        }
    }
}
