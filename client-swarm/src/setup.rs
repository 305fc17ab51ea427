//! The plan a `client-swarm` command line resolves to: a validated [`Setup`], from the flags
//! and env vars ([`setup`]) or from a plan file's [`SwarmRunPlan`] ([`Setup::from_plan`]), and
//! back to the plan it stands for ([`Setup::to_plan`]).
//!
//! Everything that can be wrong with the input (a flag, an env var, a target URL, a strategy
//! without a target, a shard that cannot be split) is found here, before anything is sent, and
//! said on one line naming the flag or env var, the value and what is accepted.

use std::path::PathBuf;

use clap::ArgMatches;
use e03_plan::cli::unknown_env;
use e03_plan::{ParamError, Params, Scenario};

use e03_io::scenario_files::ScenarioArg;

use crate::flags::{chain_hops, metrics_listen, shard_arg};
use crate::plan::{parse_targets, HostSettings, PlannedScenario, SwarmRunPlan, Target};
use crate::usage_error::UsageError;

/// A validated command line.
#[derive(Debug)]
pub(crate) struct Setup {
    pub(crate) targets: Vec<Target>,
    pub(crate) scenarios: Vec<Scenario>,
    /// The parameters of each scenario (same order): its file's settings under the user's values.
    pub(crate) params: Vec<Params>,
    /// The text of each scenario's file (same order), kept beside its logs.
    pub(crate) definitions: Vec<String>,
    pub(crate) out: PathBuf,
    /// `--claim-run-dir`: claim `out/<run id>/` first (the id from `--run-id`/`E03_RUN_ID`).
    pub(crate) claim: Option<Option<String>>,
    /// The run directory's name once claimed (sent in every `StartRun`).
    pub(crate) run_dir: Option<String>,
    /// Shut every target down at the end (`--shutdown-targets`).
    pub(crate) shutdown_targets: bool,
    /// `--chain-hops`: the hop services (shut down with the targets).
    pub(crate) chain_hops: Vec<String>,
    /// The text of the user's policy file (`E03_POLICIES`), kept beside the logs.
    pub(crate) policies: Option<String>,
    /// `--metrics-listen`: where to serve `GET /metrics` (off when `None`).
    pub(crate) metrics_listen: Option<std::net::SocketAddr>,
    /// `--progress`: how the progress of a run is shown.
    pub(crate) progress: crate::progress::ProgressMode,
    /// `E03_UID`, `E03_GID`, `E03_ALLOW_ROOT`, `E03_OVERWRITE`, read once.
    pub(crate) host: HostSettings,
    /// Whether `lab swarm` analyses the logs after a signal stopped it.
    pub(crate) report_when_stopped: bool,
    /// `--shard I/N` (`E03_SHARD`): one shard of each run.
    pub(crate) shard: Option<e03_model::shard::Shard>,
    /// `--send-logs URL` (`E03_SEND_LOGS`): the analyzer's collector.
    pub(crate) send_logs: Option<String>,
}

impl Setup {
    /// The plan this setup stands for (what `--plan FILE` holds).
    pub(crate) fn to_plan(&self) -> SwarmRunPlan {
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
    pub(crate) fn from_plan(plan: SwarmRunPlan) -> Result<Setup, UsageError> {
        let mut scenarios = Vec::new();
        for s in &plan.scenarios {
            let scenario = Scenario::from_def(s.definition.clone())?;
            // A built-in definition is the compiled-in one (`from_def` refuses any other under
            // its name), checked when the catalogue was read: only a user's is checked here.
            if Scenario::named(scenario.name()).is_none() {
                s.definition.check()?;
            }
            scenarios.push(scenario);
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
fn check_targets(params: &[Params], targets: &[Target], given: &str) -> Result<(), UsageError> {
    for p in params {
        let ids: Vec<&str> = p.strategies().iter().map(|s| s.id.as_str()).collect();
        if let Some(missing) = ids
            .iter()
            .find(|id| !targets.iter().any(|t| t.strategy == **id))
        {
            return Err(UsageError::NoTarget {
                given: given.to_string(),
                missing: missing.to_string(),
                ids: ids.join(","),
            });
        }
        // A run over replicas needs each strategy's every replica (`ID:R`).
        for id in &ids {
            if let Some(r) = (1..p.replicas())
                .find(|&r| !targets.iter().any(|t| t.strategy == *id && t.replica == r))
            {
                return Err(UsageError::NoReplicaTarget {
                    given: given.to_string(),
                    id: id.to_string(),
                    replica: r,
                    replicas: p.replicas(),
                });
            }
        }
    }
    Ok(())
}

/// A shard's runs can be split over processes (a closed loop's clients, no budget shared by the
/// whole fleet: [`Params::unshardable`]), and it does not claim a run directory of its own
/// (every shard writes into the one `--out`).
fn check_shard(
    shard: Option<e03_model::shard::Shard>,
    params: &[Params],
    claim: bool,
) -> Result<(), UsageError> {
    let Some(shard) = shard.filter(|s| !s.is_whole()) else {
        return Ok(());
    };
    if let Some(why) = params.iter().find_map(|p| p.unshardable(shard.count)) {
        return Err(UsageError::Unshardable {
            shard,
            why: why.to_string(),
        });
    }
    if claim {
        return Err(UsageError::ShardClaims { shard });
    }
    Ok(())
}

/// Checks everything, in the order a user would fix it; `Err` is the one-line message.
pub(crate) fn setup(
    m: &ArgMatches,
    env_names: Vec<String>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Setup, UsageError> {
    check_env(env_names)?;
    let (policies, args) = scenario_list(m)?;
    setup_with(m, env, policies, args)
}

/// An `E03_*` variable that is not one of the lab's is refused (a typo must not run the default).
pub(crate) fn check_env(env_names: Vec<String>) -> Result<(), UsageError> {
    match unknown_env(env_names).into_iter().next() {
        Some(name) => Err(UsageError::UnknownEnv(name)),
        None => Ok(()),
    }
}

/// The user's policy file's text (`E03_POLICIES`), and the scenarios of `--scenarios`, read once
/// (a scenario file may name the policy file's strategies).
pub(crate) fn scenario_list(
    m: &ArgMatches,
) -> Result<(Option<String>, Vec<ScenarioArg>), UsageError> {
    let policies = e03_io::scenario_files::load_policies_from_env()?;
    let value = |id: &str| m.get_one::<String>(id).cloned().unwrap_or_default();
    let specs = policies
        .as_ref()
        .map(|p| p.specs.clone())
        .unwrap_or_default();
    let args = e03_io::scenario_files::resolve_with(&value("scenarios"), &specs).map_err(|e| {
        UsageError::Scenarios {
            value: value("scenarios"),
            error: e,
        }
    })?;
    Ok((policies.map(|p| p.text), args))
}

/// The setup of the scenarios `args` (read by [`scenario_list`]) under the flags `m`.
pub(crate) fn setup_with(
    m: &ArgMatches,
    env: &dyn Fn(&str) -> Option<String>,
    policies: Option<String>,
    args: Vec<ScenarioArg>,
) -> Result<Setup, UsageError> {
    let value = |id: &str| m.get_one::<String>(id).cloned().unwrap_or_default();
    let definitions: Vec<String> = args.iter().map(|a| a.text.clone()).collect();
    let scenarios: Vec<Scenario> = args.iter().map(|a| a.scenario.clone()).collect();
    let params = scenarios
        .iter()
        .map(|s| e03_plan::cli::params_for_scenario(m, s))
        .collect::<Result<Vec<Params>, ParamError>>()?;
    let targets = parse_targets(&value("targets"))?;
    check_targets(&params, &targets, &value("targets"))?;
    let metrics_listen = metrics_listen(m.get_one::<String>("metrics-listen").map(String::as_str))?;
    let progress = m
        .get_one::<String>("progress")
        .map_or(Ok(crate::progress::ProgressMode::Auto), |v| v.parse())?;
    let run_id = m.get_one::<String>("run-id").filter(|v| !v.is_empty());
    let claim = m.get_flag("claim-run-dir");
    let shard = shard_arg(m.get_one::<String>("shard").map(String::as_str))?;
    check_shard(shard, &params, claim)?;
    let send_logs =
        e03_io::ship::collector_url(&value("send-logs")).map_err(UsageError::SendLogs)?;
    if !claim
        && run_id.is_some()
        && m.value_source("run-id") == Some(clap::parser::ValueSource::CommandLine)
    {
        return Err(UsageError::RunIdAlone);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flags::command;

    fn parse(args: &[&str]) -> Result<Setup, UsageError> {
        let m = command()
            .try_get_matches_from(args.iter().copied())
            .map_err(|e| UsageError::Clap(e.to_string()))?;
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
        .unwrap_err()
        .to_string();
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
        let e = with("fancy").unwrap_err().to_string();
        assert!(e.contains("--progress (E03_PROGRESS) \"fancy\""), "{e}");
    }

    #[test]
    fn every_strategy_needs_a_target() {
        let e = parse(&["cs", "--targets", T, "--strategies", "A,C"])
            .unwrap_err()
            .to_string();
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
        .unwrap_err()
        .to_string();
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
        .unwrap_err()
        .to_string();
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
        .unwrap_err()
        .to_string();
        assert!(e.contains("E03_SCENARIOS") && e.contains("e03z"), "{e}");
        let e = parse(&["cs", "--targets", T, "--strategies", "A", "--clients", "0"])
            .unwrap_err()
            .to_string();
        // Named as typed: the flag, not its env var.
        assert!(e.contains("invalid --clients=\"0\""), "{e}");
        assert!(!e.contains("E03_CLIENTS"), "{e}");
    }

    #[test]
    fn unknown_e03_env_vars_are_refused() {
        let m = command()
            .try_get_matches_from(["cs", "--targets", T, "--strategies", "A"])
            .unwrap();
        let e = setup(&m, vec!["E03_CLIENT".into(), "HOME".into()], &|_| None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("E03_CLIENT:"), "{e}");
        assert!(e.contains("did you mean E03_CLIENTS?"), "{e}");
    }

    #[test]
    fn a_run_id_without_claim_run_dir_is_a_usage_error() {
        let err = parse(&["cs", "--targets", T, "--strategies", "A,B", "--run-id", "x"])
            .unwrap_err()
            .to_string();
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
