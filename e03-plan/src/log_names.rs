//! The names of every log and file a run leaves in its folder, in one place: the dependency's
//! and the swarm's logs of a run (per replica and per shard), the wire proxy's beside a server
//! log, the ledger's, the list of a scenario's logs (`logs.toml`), the scenario kept beside them,
//! and a chain variant's (`top.jsonl`, `layer-<L>-<name>.jsonl`, the proxies', the stopped
//! marker). The drivers write them, the analyzer and `lab report` read them, by these names.

use e03_model::chain::ChainVariant;

use crate::control::valid_run_dir;
use crate::control_error::ControlError;
use crate::scenario::Scenario;

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

/// The top caller's log in a chain variant's directory.
pub const TOP_LOG: &str = "top.jsonl";

/// The file a stopped chain run leaves in the variant it was running: why it is incomplete.
pub const STOPPED_MARKER: &str = "STOPPED.txt";

/// The name of the log of layer `layer` of `variant`.
pub fn layer_log_name(variant: &ChainVariant, layer: u32) -> String {
    format!("layer-{layer}-{}.jsonl", variant.layer_name(layer))
}

/// The name of the log of the fault proxy in front of layer `layer` of `variant`
/// (`[[chain.variant.proxy]]`): `lab proxy --http`'s log, the server log schema with a
/// `proxied` record per call.
pub fn proxy_log_name(variant: &ChainVariant, layer: u32) -> String {
    format!("proxy-{layer}-{}.jsonl", variant.layer_name(layer))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::valid_strategy_id;

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
}
