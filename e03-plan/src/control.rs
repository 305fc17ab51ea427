//! The control protocol between the swarm (or the lab) and a dependency instance, and the
//! layout of a run's log files.
//!
//! `POST /control/start` with a [`StartRun`] resets the dependency: a fresh model with the
//! given parameters, a timeline whose time zero is `start_unix_ms`, and a new server log at
//! [`crate::log_names::server_log_path`]. `POST /control/stop` with a [`StopRun`] ends it: the log gets its
//! `run_end` record, is flushed and closed, and the answer is a [`RunCounts`].

use serde::{Deserialize, Serialize};

pub use crate::names::{valid_run_dir, valid_strategy_id};
use crate::scenario::Scenario;

pub use crate::control_error::ControlError;

pub const START_PATH: &str = "/control/start";
pub const STOP_PATH: &str = "/control/stop";
pub const HEALTH_PATH: &str = "/health";
/// The readiness probe of the callers' active health checks (`E03_HEALTH_INTERVAL_MS`), on the
/// work listener: `200` when the current run's timeline has the dependency serving, the down
/// phase's status when it is down, held while it is frozen
/// ([`e03_model::timeline::Timeline::readiness`]); `503` with no run. A probe is not an arrival:
/// the server log has no record of it, the client log has one `probe` record each.
pub const READY_PATH: &str = "/ready";
/// `POST` here ends the current run (not complete) and shuts the service down, so a compose
/// run ends when its swarm is done.
pub const SHUTDOWN_PATH: &str = "/control/shutdown";
/// `GET` here answers the dependency's wall clock ([`ClockReading`]), for the swarm's clock
/// offset ([`e03_model::clock`]).
pub const CLOCK_PATH: &str = "/control/clock";

/// The answer of [`CLOCK_PATH`]: the server's wall clock, in µs since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClockReading {
    pub unix_us: u64,
}

/// On the wire the scenario is its name plus its definition (`definition`), so that a
/// dependency that does not know a user's file can run it; see [`StartRunFields`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "StartRunFields", into = "StartRunFields")]
pub struct StartRun {
    pub run: String,
    pub scenario: Scenario,
    /// Strategy id the traffic will use (for the log only); letters, digits and '-'.
    pub strategy: String,
    pub seed: u64,
    /// The run's parameters, typed and already resolved (the scenario's settings under the
    /// user's values, the strategies by value): read back through `Params`' checked
    /// `serde(try_from)`, so a start call with a value out of range or a broken rule is refused.
    pub params: crate::Params,
    /// Time zero of the run, wall clock, ms since the Unix epoch. Usually a little in the
    /// future so that both sides are ready when it comes.
    pub start_unix_ms: u64,
    /// The run's own directory under the service's log directory (compose: the swarm's run id),
    /// one path component ([`valid_run_dir`]); the log then goes to
    /// `<log dir>/<run_dir>/<scenario>/server-..`. `None`: straight under the log directory.
    #[serde(default)]
    pub run_dir: Option<String>,
    /// The caller is shard `I/N` of a run split over N swarm processes ([`e03_model::shard`]): it
    /// registers for the run. The first shard's call starts it at its `start_unix_ms`; the
    /// others of the same run (scenario, strategy, seed, run directory and N) join it while its
    /// time zero has not come, and learn the run's id and time zero from the answer. The run
    /// ends when every shard that registered has stopped it. `None`: one swarm, as always.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<e03_model::shard::Shard>,
    /// The dependency is replica `r` of the run's `E03_REPLICAS` (0 is the first): it runs
    /// that replica's timeline and logs to [`crate::log_names::replica_log_path`]. `None`: the only one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica: Option<u32>,
}

/// The serialized shape of [`StartRun`]: its scenario as a name and, in `definition`, its data,
/// for a dependency that does not know the scenario (a user's file). Read back, `scenario` is
/// made from the definition when the call carries one (and must be its name); without it, only
/// a built-in name is known. Sent, the definition is always there.
#[derive(Serialize, Deserialize)]
struct StartRunFields {
    run: String,
    scenario: String,
    strategy: String,
    seed: u64,
    params: crate::Params,
    start_unix_ms: u64,
    #[serde(default)]
    definition: Option<crate::scenario::ScenarioDef>,
    #[serde(default)]
    run_dir: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    shard: Option<e03_model::shard::Shard>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    replica: Option<u32>,
}

impl TryFrom<StartRunFields> for StartRun {
    type Error = ControlError;

    fn try_from(f: StartRunFields) -> Result<StartRun, ControlError> {
        let scenario = match f.definition {
            Some(def) => {
                if def.name != f.scenario {
                    return Err(ControlError::DefinitionOf {
                        given: f.scenario,
                        defined: def.name,
                    });
                }
                def.check()?;
                Scenario::from_def(def)?
            }
            None => Scenario::named(&f.scenario).ok_or_else(|| ControlError::UnknownScenario {
                name: f.scenario.clone(),
                known: Scenario::known_names().join(", "),
            })?,
        };
        if let Some(r) = f.replica.filter(|&r| r >= f.params.replicas()) {
            return Err(ControlError::Replica {
                replica: r,
                replicas: f.params.replicas(),
            });
        }
        Ok(StartRun {
            run: f.run,
            scenario,
            strategy: f.strategy,
            seed: f.seed,
            params: f.params,
            start_unix_ms: f.start_unix_ms,
            run_dir: f.run_dir,
            shard: f.shard,
            replica: f.replica,
        })
    }
}

impl From<StartRun> for StartRunFields {
    fn from(s: StartRun) -> StartRunFields {
        StartRunFields {
            run: s.run,
            scenario: s.scenario.name().to_string(),
            definition: Some(s.scenario.def().clone()),
            strategy: s.strategy,
            seed: s.seed,
            params: s.params,
            start_unix_ms: s.start_unix_ms,
            run_dir: s.run_dir,
            shard: s.shard,
            replica: s.replica,
        }
    }
}

/// The answer to a start call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StartAnswer {
    /// The run's id.
    pub run: String,
    /// Its server log, relative to the service's log directory.
    pub log_file: String,
    /// Where the run's callers send their work instead of the address they know: the fault
    /// proxy in front of the dependency, when it is a service of its own that carries this
    /// run (compose's `wire-*`, `lab serve --wire-proxy`). `None`: the known address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work: Option<String>,
    /// The run's time zero, ms since the Unix epoch on the service's clock: the start call's
    /// own, or, for a shard that joined a run, the time zero the first shard's call set.
    pub start_unix_ms: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StopRun {
    /// False when the run is being stopped early (signal).
    pub complete: bool,
    /// The caller is this shard of a run split over swarm processes (see [`StartRun::shard`]):
    /// the run ends when every shard that registered has stopped it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<e03_model::shard::Shard>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunCounts {
    pub arrivals: u64,
    pub responses: u64,
    /// Log file, relative to the service's log directory.
    pub log_file: String,
}

/// The run id used in every record: `<scenario>-<strategy>-seed<seed>-<start_unix_ms>`.
pub fn run_id(scenario: &Scenario, strategy: &str, seed: u64, start_unix_ms: u64) -> String {
    format!("{}-{strategy}-seed{seed}-{start_unix_ms}", scenario.name())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log_names::{replica_log_path, server_log_path};

    #[test]
    fn run_dirs_are_one_safe_component() {
        for good in [
            "20261130-141224",
            "20261130-141224-2",
            "my_run.v2",
            "compose",
        ] {
            assert!(valid_run_dir(good), "{good:?}");
        }
        let long = "a".repeat(256);
        for bad in [
            "",
            ".",
            "..",
            ".hidden",
            "a/b",
            "../x",
            "/abs",
            "a b",
            "é",
            long.as_str(),
        ] {
            assert!(!valid_run_dir(bad), "{bad:?}");
        }
    }

    #[test]
    fn a_start_call_without_run_dir_still_parses() {
        let params = serde_json::to_string(&crate::Params::default()).unwrap();
        let json = format!(
            r#"{{"run":"r","scenario":"e03b","strategy":"A","seed":1,"params":{params},"start_unix_ms":5}}"#
        );
        let start: StartRun = serde_json::from_str(&json).unwrap();
        assert_eq!(start.run_dir, None);
    }

    #[test]
    fn a_start_call_names_a_replica_the_run_has_and_its_log() {
        let two = crate::Params::from_raw(&std::collections::BTreeMap::from([(
            "E03_REPLICAS".to_string(),
            "2".to_string(),
        )]))
        .unwrap();
        let call = |params: &crate::Params, replica: u32| {
            let params = serde_json::to_string(params).unwrap();
            format!(
                r#"{{"run":"r","scenario":"e03b","strategy":"A","seed":1,"params":{params},"start_unix_ms":5,"replica":{replica}}}"#
            )
        };
        let start: StartRun = serde_json::from_str(&call(&two, 1)).unwrap();
        assert_eq!(start.replica, Some(1));
        let e = serde_json::from_str::<StartRun>(&call(&two, 2)).unwrap_err();
        assert!(
            e.to_string().contains(
                "replica 2: expected a replica of the run's E03_REPLICAS = 2, from 0 to 1"
            ),
            "{e}"
        );
        let e = serde_json::from_str::<StartRun>(&call(&crate::Params::default(), 1));
        assert!(e.is_err(), "a run of one replica has no replica 1");
        assert_eq!(
            replica_log_path(&Scenario::e03b(), "C", 42, Some(1)),
            "e03b/server-C-seed42-replica1.jsonl"
        );
        assert_eq!(
            replica_log_path(&Scenario::e03b(), "C", 42, None),
            server_log_path(&Scenario::e03b(), "C", 42)
        );
    }
}
