//! What a swarm run is asked to do ([`SwarmPlan`]) and what it reports ([`SwarmReport`]),
//! plus the `--targets` syntax that names each strategy's dependency.

use std::path::PathBuf;
use std::time::Duration;

use e03_core::control::{valid_strategy_id, RunCounts};
use e03_core::{Params, Scenario};

use crate::http::endpoint;

/// One strategy's dependency: where its work goes and where its run is controlled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub strategy: String,
    /// Base URL of the work listener, e.g. `http://127.0.0.1:8080` (`/work` is appended).
    pub work_url: String,
    /// Base URL of the control listener (`/control/start`, `/control/stop`, `/health`).
    pub control_url: String,
}

/// One scenario x seed: every target's strategy runs AT THE SAME TIME, each against its own
/// dependency, all with the same time zero.
#[derive(Debug, Clone)]
pub struct SwarmPlan {
    pub scenario: Scenario,
    pub seed: u64,
    /// `params.strategies` says which strategies run; each needs a [`Target`].
    pub params: Params,
    pub targets: Vec<Target>,
    /// Client logs go to `out_dir/<e03_core::control::client_log_path(..)>`.
    pub out_dir: PathBuf,
    /// Sent in every `StartRun` (`run_dir`): the dependencies log into `<log dir>/<run_dir>/`.
    /// `Some` when the swarm claimed `out_dir` = `OUT/<run id>` itself (compose).
    pub run_dir: Option<String>,
    /// Time zero = now + this, so every dependency and client is ready when it comes.
    pub start_delay: Duration,
}

/// The default [`SwarmPlan::start_delay`].
pub const DEFAULT_START_DELAY: Duration = Duration::from_secs(1);

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
        if targets.iter().any(|t| t.strategy == strategy) {
            return Err(err("the strategy has a target already"));
        }
        targets.push(Target {
            strategy,
            work_url: work.to_string(),
            control_url: control.to_string(),
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
        ] {
            let e = parse_targets(value).unwrap_err().to_string();
            assert!(
                e.contains(problem) && e.contains("--targets"),
                "{value}: {e}"
            );
        }
    }
}
