//! The control protocol between the swarm (or the lab) and a dependency instance, and the
//! layout of a run's log files.
//!
//! `POST /control/start` with a [`StartRun`] resets the dependency: a fresh model with the
//! given parameters, a timeline whose time zero is `start_unix_ms`, and a new server log at
//! [`server_log_path`]. `POST /control/stop` with a [`StopRun`] ends it: the log gets its
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
    /// that replica's timeline and logs to [`replica_log_path`]. `None`: the only one.
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

/// File name of the scenario definition a run keeps beside its logs, `<scenario>/scenario.toml`,
/// so that a run folder explains itself and can be analysed without the user's file.
pub const SCENARIO_FILE: &str = "scenario.toml";

/// `<scenario>/server-<strategy>-seed<seed>.jsonl`, relative to a log directory.
pub fn server_log_path(scenario: &Scenario, strategy: &str, seed: u64) -> String {
    format!("{}/server-{strategy}-seed{seed}.jsonl", scenario.name())
}

/// The server log of replica `replica` (`E03_REPLICAS`):
/// `<scenario>/server-<strategy>-seed<seed>-replica<r>.jsonl`; `None` (the only one):
/// [`server_log_path`]'s.
pub fn replica_log_path(
    scenario: &Scenario,
    strategy: &str,
    seed: u64,
    replica: Option<u32>,
) -> String {
    match replica {
        None => server_log_path(scenario, strategy, seed),
        Some(r) => format!(
            "{}/{}",
            scenario.name(),
            replica_log_name(strategy, seed, r)
        ),
    }
}

/// The file name of [`replica_log_path`] for replica `r`.
pub fn replica_log_name(strategy: &str, seed: u64, r: u32) -> String {
    format!("server-{strategy}-seed{seed}-replica{r}.jsonl")
}

/// The run a server log's file name belongs to (`<strategy>-seed<seed>`) and its replica, if
/// the name is one of [`server_log_path`]'s (`server-<run>.jsonl`) or [`replica_log_name`]'s
/// (`server-<run>-replica<r>.jsonl`: a replica's log shares its run's client logs).
pub fn server_log_run(name: &str) -> Option<(&str, Option<u32>)> {
    let run = name.strip_prefix("server-")?.strip_suffix(".jsonl")?;
    Some(match run.rsplit_once("-replica") {
        Some((run, r)) if r.parse::<u32>().is_ok() => (run, r.parse().ok()),
        _ => (run, None),
    })
}

/// The file, in a scenario folder, that names the logs of the runs the swarm starts there, one
/// file name a line ([`run_log_names`]). The swarm writes it (and sends it, without a shared
/// folder) before the runs start, so that an analyzer started beside them (`lab report
/// --wait-s`) waits for every log, not only for those that have come.
pub const RUN_LOGS_FILE: &str = "logs.toml";

/// The text of [`RUN_LOGS_FILE`]: `logs = [...]`, the file names in order.
pub fn run_logs_toml(names: &[String]) -> String {
    let mut text = String::from(
        "# The logs of the runs of this folder, listed by the swarm before they started:\n\
         # `lab report --wait-s` waits for each of them.\nlogs = [\n",
    );
    for n in names {
        text.push_str(&format!("    {},\n", toml::Value::String(n.clone())));
    }
    text.push_str("]\n");
    text
}

/// The file names a [`RUN_LOGS_FILE`] lists ([`run_logs_toml`]'s inverse); an error names what
/// is wrong.
pub fn parse_run_logs(text: &str) -> Result<Vec<String>, ControlError> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct RunLogs {
        logs: Vec<String>,
    }
    let list: RunLogs = toml::from_str(text).map_err(|e| ControlError::LogList {
        message: e.message().to_string(),
    })?;
    match list
        .logs
        .iter()
        .find(|n| !(n.ends_with(".jsonl") && valid_run_dir(n)))
    {
        Some(bad) => Err(ControlError::LogName { name: bad.clone() }),
        None => Ok(list.logs),
    }
}

/// The logs one run of `strategy` and `seed` writes, by file name: the dependency's server log,
/// or one per replica when there are `replicas` > 1 ([`replica_log_name`]), and the swarm's
/// client log, or one per shard when it is split over `shards` > 1 processes
/// ([`shard_log_name`]).
pub fn run_log_names(strategy: &str, seed: u64, replicas: u32, shards: u32) -> Vec<String> {
    let mut names: Vec<String> = if replicas > 1 {
        (0..replicas)
            .map(|r| replica_log_name(strategy, seed, r))
            .collect()
    } else {
        vec![format!("server-{strategy}-seed{seed}.jsonl")]
    };
    if shards > 1 {
        names.extend(
            (0..shards)
                .filter_map(|i| e03_model::shard::Shard::new(i, shards))
                .map(|shard| shard_log_name(strategy, seed, shard)),
        );
    } else {
        names.push(format!("client-{strategy}-seed{seed}.jsonl"));
    }
    names
}

/// The log of the fault proxy in front of a dependency (issue 27), beside its server log:
/// `[dir/]server-X.jsonl` gives `[dir/]wire-X.jsonl`. The service writes it, the analyzer reads
/// it.
pub fn wire_log_beside(server_log: &str) -> String {
    let (dir, file) = match server_log.rsplit_once('/') {
        Some((dir, file)) => (format!("{dir}/"), file),
        None => (String::new(), server_log),
    };
    let name = file.strip_prefix("server-").unwrap_or(file);
    format!("{dir}wire-{name}")
}

/// `<scenario>/ledger-<strategy>-seed<seed>.jsonl`, relative to a log directory: the charges the
/// service committed (`POST /charge`), one `charge` record a line.
pub fn ledger_log_path(scenario: &Scenario, strategy: &str, seed: u64) -> String {
    format!("{}/ledger-{strategy}-seed{seed}.jsonl", scenario.name())
}

/// `<scenario>/client-<strategy>-seed<seed>.jsonl`, relative to an output directory.
pub fn client_log_path(scenario: &Scenario, strategy: &str, seed: u64) -> String {
    format!("{}/client-{strategy}-seed{seed}.jsonl", scenario.name())
}

/// The client log of shard `shard` of a run split over swarm processes:
/// `<scenario>/client-<strategy>-seed<seed>-shard<I>of<N>.jsonl`; a whole run's is
/// [`client_log_path`]'s.
pub fn shard_log_path(
    scenario: &Scenario,
    strategy: &str,
    seed: u64,
    shard: e03_model::shard::Shard,
) -> String {
    if shard.is_whole() {
        return client_log_path(scenario, strategy, seed);
    }
    format!(
        "{}/{}",
        scenario.name(),
        shard_log_name(strategy, seed, shard)
    )
}

/// The file name of [`shard_log_path`].
pub fn shard_log_name(strategy: &str, seed: u64, shard: e03_model::shard::Shard) -> String {
    format!(
        "client-{strategy}-seed{seed}-shard{}of{}.jsonl",
        shard.index, shard.count
    )
}

/// The run id used in every record: `<scenario>-<strategy>-seed<seed>-<start_unix_ms>`.
pub fn run_id(scenario: &Scenario, strategy: &str, seed: u64, start_unix_ms: u64) -> String {
    format!("{}-{strategy}-seed{seed}-{start_unix_ms}", scenario.name())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runs_logs_are_named_by_replica_and_shard_and_read_back() {
        assert_eq!(
            run_log_names("C", 42, 1, 1),
            ["server-C-seed42.jsonl", "client-C-seed42.jsonl"]
        );
        assert_eq!(
            run_log_names("no-retry", 7, 2, 3),
            [
                "server-no-retry-seed7-replica0.jsonl",
                "server-no-retry-seed7-replica1.jsonl",
                "client-no-retry-seed7-shard0of3.jsonl",
                "client-no-retry-seed7-shard1of3.jsonl",
                "client-no-retry-seed7-shard2of3.jsonl",
            ]
        );
        assert_eq!(
            server_log_run("server-no-retry-seed7-replica1.jsonl"),
            Some(("no-retry-seed7", Some(1)))
        );
        assert_eq!(
            server_log_run("server-C-seed42.jsonl"),
            Some(("C-seed42", None))
        );
        // A strategy id may hold '-replica': only a number after it names a replica.
        assert_eq!(
            server_log_run("server-x-replicaB-seed1.jsonl"),
            Some(("x-replicaB-seed1", None))
        );
        assert_eq!(server_log_run("client-C-seed42.jsonl"), None);
        let names = run_log_names("C", 42, 2, 2);
        assert_eq!(parse_run_logs(&run_logs_toml(&names)), Ok(names));
        assert!(parse_run_logs("logs = [\"../x.jsonl\"]")
            .unwrap_err()
            .to_string()
            .contains("expected a log's file name"));
        assert!(parse_run_logs("log = []").is_err());
        assert_eq!(server_log_run("server-C-seed42.json"), None);
        for name in run_log_names("A", 1, 3, 1)
            .iter()
            .filter(|n| n.starts_with("server-"))
        {
            assert_eq!(server_log_run(name).map(|r| r.0), Some("A-seed1"));
        }
    }

    #[test]
    fn the_proxy_log_sits_beside_the_server_log() {
        assert_eq!(
            wire_log_beside("run-1/e03b/server-C-seed42.jsonl"),
            "run-1/e03b/wire-C-seed42.jsonl"
        );
        assert_eq!(
            wire_log_beside("standalone/server-standalone.jsonl"),
            "standalone/wire-standalone.jsonl"
        );
        assert_eq!(
            wire_log_beside("server-A-seed1.jsonl"),
            "wire-A-seed1.jsonl"
        );
        // A directory named server-... is not renamed: only the file is.
        assert_eq!(
            wire_log_beside("server-x/server-A-seed1.jsonl"),
            "server-x/wire-A-seed1.jsonl"
        );
    }

    #[test]
    fn layout_names() {
        assert_eq!(
            server_log_path(&Scenario::e03b(), "C", 42),
            "e03b/server-C-seed42.jsonl"
        );
        assert_eq!(
            client_log_path(&Scenario::e03a(), "D", 7),
            "e03a/client-D-seed7.jsonl"
        );
        assert!(valid_strategy_id("D"));
        assert!(!valid_strategy_id("../x"));
        assert!(!valid_strategy_id(""));
        assert!(valid_strategy_id("immediate-20ms"));
        assert!(!valid_strategy_id("-x") && !valid_strategy_id("a/b"));
    }

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
