//! The live experiment over loopback: real processes talking real HTTP.
//!
//! For each group of strategies (all of them at once by default, or one at a time with
//! `--sequential`) the lab starts one dependency-service process per strategy on loopback port 0
//! (reading the bound addresses from the child's first stdout line), then one client-swarm process
//! that runs every scenario and seed against them, each strategy against its own dependency. When
//! the swarm is done the services are stopped, and the analyzer computes everything from the logs
//! they wrote. Ctrl-C or SIGTERM stops the children gracefully: logs are flushed and the summary is
//! marked incomplete.

use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use e03_model::Strategy;
use e03_plan::Scenario;

use e03_io::progress::ProgressMode;

use crate::args::RunPlan;
use crate::child::child_command;
use crate::errors::chain;
use crate::outdir::{self, RunDir};
use crate::services::{
    loopback_serve_plan, start_proxy, start_service, terminate, wait_bounded, wait_forwarding,
};

use crate::EXIT_STOPPED;

pub fn run(plan: &RunPlan) -> i32 {
    match outdir::claim_undoable(&plan.out, &plan.choice) {
        Ok(claim) => {
            let code = run_in(plan, &claim.run);
            if code != 0 {
                claim.abandon_if_empty(&plan.out);
            }
            code
        }
        Err(e) => crate::outdir::fail("lab", &e),
    }
}

/// The live run into the run directory `run` (already claimed).
pub fn run_in(plan: &RunPlan, run: &RunDir) -> i32 {
    match run_live(plan, run) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("lab: {}", chain(&e));
            1
        }
    }
}

/// Runs the live experiment and the analysis; the exit code says whether it is trustworthy.
/// A scenario's topology decides its processes: one dependency process per strategy for most,
/// one hop process per layer for a chain scenario ([`crate::chain`]). Chain scenarios run after
/// the others, into the same run directory.
fn run_live(plan: &RunPlan, run: &RunDir) -> anyhow::Result<i32> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))?;
    }
    eprintln!(
        "lab: run {} writes into {}",
        run.id,
        outdir::shown(&run.dir)
    );
    let (chains, rest) = split_chains(plan);
    let mut code = 0;
    // A threshold with abort_after_s: the client logs followed while the run goes on.
    let watch = crate::abort::watch(&rest, &run.dir, &stop);
    if !rest.scenarios.is_empty() {
        code = run_dependencies(&rest, run, &stop)?;
    }
    if let Some(aborted) = watch.and_then(|w| w.finish(&run.dir)) {
        return Ok(aborted);
    }
    for scenario in &chains {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        match crate::chain::run_scenario(&run.dir, scenario, &stop, true)? {
            Some(true) => {}
            Some(false) if code == 0 => code = CHECK_FAILED,
            Some(false) => {}
            None => break,
        }
    }
    Ok(if stop.load(Ordering::SeqCst) {
        EXIT_STOPPED
    } else {
        code
    })
}

/// The chain scenarios of `plan`, and the plan of the others (the same plan without them).
fn split_chains(plan: &RunPlan) -> (Vec<Scenario>, RunPlan) {
    let is_chain: Vec<bool> = plan.scenarios.iter().map(crate::chain::is_chain).collect();
    let keep = |i: usize| !is_chain[i];
    let pick = |v: &[String]| -> Vec<String> {
        v.iter()
            .enumerate()
            .filter(|(i, _)| keep(*i))
            .map(|(_, x)| x.clone())
            .collect()
    };
    let mut rest = plan.clone();
    rest.scenario_args = pick(&plan.scenario_args);
    rest.definitions = pick(&plan.definitions);
    rest.scenarios = (0..plan.scenarios.len())
        .filter(|&i| keep(i))
        .map(|i| plan.scenarios[i].clone())
        .collect();
    rest.params = (0..plan.params.len())
        .filter(|&i| keep(i))
        .map(|i| plan.params[i].clone())
        .collect();
    let chains = (0..plan.scenarios.len())
        .filter(|&i| is_chain[i])
        .map(|i| plan.scenarios[i].clone())
        .collect();
    (chains, rest)
}

/// The scenarios against dependency processes (no chain): traffic, then the analysis.
fn run_dependencies(plan: &RunPlan, run: &RunDir, stop: &Arc<AtomicBool>) -> anyhow::Result<i32> {
    for scenario in &plan.scenarios {
        prepare_scenario_dir(&run.dir.join(scenario.name()), plan.choice.overwrite)?;
    }
    machine_floor(&run.dir)?;
    let started = Instant::now();
    // Every strategy of any scenario of the run (a file may choose its own), in order.
    let mut all: Vec<Strategy> = Vec::new();
    for s in plan.params.iter().flat_map(|p| p.strategies()) {
        if !all.iter().any(|a| a.id == s.id) {
            all.push(s.clone());
        }
    }
    for batch in batches(plan, &all) {
        run_batch(plan, &run.dir, &batch, stop)?;
        if stop.load(Ordering::SeqCst) {
            break;
        }
    }
    eprintln!(
        "lab: live traffic done in {:.1} s; analysing the logs",
        started.elapsed().as_secs_f64()
    );
    report_scenarios(&run.dir, &plan.scenarios)
}

use e03_metrics::fidelity::{MachineFloor, MACHINE_FILE};

/// Before a live run: which scheduling the timers get (real-time when the process may have it,
/// [`precise_timer::realtime`]), and how late this machine wakes a sleeping thread at that
/// scheduling (1 s of 1 ms sleeps, as `cyclictest` measures), printed and kept in
/// `OUT/<run id>/machine.json` so the tables can show the machine's floor beside the lab's
/// lateness.
fn machine_floor(run_dir: &Path) -> anyhow::Result<()> {
    use precise_timer::realtime;
    let sched = realtime::scheduling();
    let w = realtime::measure_wake_latency(Duration::from_secs(1), Duration::from_millis(1));
    eprintln!(
        "lab: {}; this machine wakes a sleeping thread {:.2} ms late at p99 ({:.3} ms mean, \
         {} wake-ups of 1 ms, measured just now)",
        sched.describe(),
        w.p99.as_secs_f64() * 1000.0,
        w.mean.as_secs_f64() * 1000.0,
        w.samples
    );
    let floor = MachineFloor {
        scheduling: w.scheduling.to_string(),
        why: match sched {
            realtime::Scheduling::Realtime => String::new(),
            realtime::Scheduling::Normal { why } => why.clone(),
        },
        wake_samples: w.samples as u64,
        wake_p99_ms: w.p99.as_secs_f64() * 1000.0,
        wake_mean_ms: w.mean.as_secs_f64() * 1000.0,
        wake_max_ms: w.max.as_secs_f64() * 1000.0,
    };
    let json = serde_json::to_string_pretty(&floor)?;
    let path = run_dir.join(MACHINE_FILE);
    std::fs::write(&path, format!("{json}\n"))
        .with_context(|| format!("writing {}", path.display()))
}

/// After a live scenario's tables: the machine's own wake-up latency beside the lab's send and
/// answer lateness, and whose lateness it is when the lab warned
/// ([`e03_metrics::fidelity::MachineFloor::verdict`]; nothing when the run has no machine
/// floor: a compose run, or a run of an older lab).
fn print_machine_beside(summary: &e03_metrics::ScenarioSummary) {
    let Some(m) = &summary.machine else {
        return;
    };
    let worst = |f: fn(&e03_metrics::fidelity::Fidelity) -> f64| {
        summary
            .runs
            .iter()
            .filter_map(|r| r.fidelity.as_ref().map(f))
            .fold(0.0_f64, f64::max)
    };
    let send = worst(|f| f.lateness_p99_ms);
    let answer = worst(|f| f.answer_lateness_p99_ms);
    println!(
        "Machine floor ({}): a sleeping thread wakes {:.2} ms late at p99; the lab's worst send \
         lateness p99 {send:.2} ms, answer lateness p99 {answer:.2} ms.",
        m.scheduling, m.wake_p99_ms
    );
    let warned = summary.runs.iter().any(|r| {
        r.fidelity
            .as_ref()
            .is_some_and(|f| !f.warnings().is_empty())
    });
    if warned {
        println!("The lateness WARNING is {}.", m.verdict(send.max(answer)));
    }
}

/// Analyses each scenario's logs under `out`, prints the tables and writes the results.
/// Exit code 0 when every run is complete, its counts match and its checks pass; 1 when a run
/// is incomplete or its counts do not match; 3 when the runs are sound but a check against the
/// source's figures failed ([`CHECK_FAILED`]); 99 when a threshold broke ([`crate::gate`]).
pub fn report_scenarios(out: &Path, scenarios: &[Scenario]) -> anyhow::Result<i32> {
    let mut code = 0;
    for scenario in scenarios {
        let dir = out.join(scenario.name());
        if crate::chain::is_chain(scenario) {
            // A chain scenario's logs (docs/chains.md): its own table and checks.
            if !crate::chain::report_dir(&dir, scenario.clone(), true)? && code == 0 {
                code = CHECK_FAILED;
            }
            outdir::index_beside(out);
            continue;
        }
        let summary = analyzer::analyze_dir(&dir, scenario.clone(), simulator::model_run)
            .with_context(|| format!("analysing {}", dir.display()))?;
        crate::front::print_tables(&summary, &dir)?;
        print_machine_beside(&summary);
        analyzer::write_outputs(&dir, &summary)
            .with_context(|| format!("writing results into {}", dir.display()))?;
        if summary.params.is_steps() && summary.complete {
            step_check(&dir, &summary)?;
        }
        crate::front::results(&dir, &outdir::shown(&dir))?;
        outdir::index_beside(out);
        if !summary.complete {
            eprintln!("lab: the run in {} is incomplete", dir.display());
            code = 1;
        }
        if !counts_match(&summary) {
            eprintln!(
                "lab: client attempts and server arrivals do not match in {}",
                dir.display()
            );
            code = 1;
        }
        // Checks and thresholds: 3 for a check, 99 for a threshold (docs/ci-gates.md).
        code = crate::gate::judge(&summary, &dir, code);
    }
    Ok(code)
}

/// The step workload's check (the rate-limit article): the run's model ([`simulator::Beside`]: the
/// parameters and seeds its logs recorded, simulated) beside the live figures: batch calls and 429s within 5%, and the heavy-load ordering on both sides.
/// Printed and written to `live_vs_simulated.csv`; it does not change the exit code.
fn step_check(dir: &Path, live: &analyzer::ScenarioSummary) -> anyhow::Result<()> {
    let steps = simulator::Beside::of(live).steps(0.05);
    let t = steps.table;
    println!(
        "\nCheck: live against simulated (same parameters and seeds; batch calls and 429s, \
         means over seeds):"
    );
    print!("{}", t.markdown());
    let rows: Vec<Vec<String>> = std::iter::once(t.headers).chain(t.rows).collect();
    analyzer::outputs::write_csv_rows(&dir.join("live_vs_simulated.csv"), &rows)?;
    if let Some((l, s)) = steps.ordering {
        let agree = l.iter().zip(&s).all(|(a, b)| a.1 == b.1);
        println!(
            "The heavy-load ordering live: {}; simulated: {}; {}",
            l.iter()
                .map(|(_, ok)| if *ok { "yes" } else { "no" })
                .collect::<Vec<_>>()
                .join("/"),
            s.iter()
                .map(|(_, ok)| if *ok { "yes" } else { "no" })
                .collect::<Vec<_>>()
                .join("/"),
            if agree { "they agree" } else { "they DISAGREE" }
        );
    }
    Ok(())
}

pub use e03_io::exit::CHECK_FAILED;

/// True when every run's client attempts and server arrivals matched one to one.
fn counts_match(summary: &analyzer::ScenarioSummary) -> bool {
    summary
        .runs
        .iter()
        .all(|r| r.matched.as_ref().is_none_or(|m| m.ok()))
}

/// Creates a scenario directory of the run; with `--overwrite`, an earlier run's logs in it are
/// removed (they would mix into the analysis), and nothing else.
fn prepare_scenario_dir(dir: &Path, overwrite: bool) -> anyhow::Result<()> {
    if overwrite {
        outdir::remove_old_logs(dir)?;
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(())
}

/// One swarm and its dependencies: the scenarios it runs (by their command-line names, one
/// after the other) and the strategies it runs them with (all at once).
#[derive(Debug, Clone, PartialEq)]
struct Lane {
    scenario_args: Vec<String>,
    strategies: Vec<Strategy>,
}

/// The lanes of the run, in batches: the lanes of a batch run at the same time, the batches
/// one after the other.
/// - `--sequential`: one strategy at a time, each over every scenario (one lane a batch);
/// - `--scenarios-at-once 1`: one lane over every scenario with every strategy;
/// - `--scenarios-at-once N`: N scenarios at a time, each in a lane of its own with its own
///   strategies (and so its own dependencies and swarm).
fn batches(plan: &RunPlan, all: &[Strategy]) -> Vec<Vec<Lane>> {
    let every = || plan.scenario_args.clone();
    if plan.sequential {
        return all
            .iter()
            .map(|s| {
                vec![Lane {
                    scenario_args: every(),
                    strategies: vec![s.clone()],
                }]
            })
            .collect();
    }
    if plan.scenarios_at_once <= 1 || plan.scenarios.len() <= 1 {
        return vec![vec![Lane {
            scenario_args: every(),
            strategies: all.to_vec(),
        }]];
    }
    let lanes: Vec<Lane> = plan
        .scenario_args
        .iter()
        .zip(&plan.params)
        .map(|(arg, params)| Lane {
            scenario_args: vec![arg.clone()],
            strategies: params.strategies().to_vec(),
        })
        .collect();
    lanes
        .chunks(plan.scenarios_at_once)
        .map(<[Lane]>::to_vec)
        .collect()
}

/// Runs the lanes of one batch at the same time; the first error, if any, once all are done.
fn run_batch(plan: &RunPlan, out: &Path, batch: &[Lane], stop: &AtomicBool) -> anyhow::Result<()> {
    if let [lane] = batch {
        return run_group(plan, out, lane, stop, false);
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> = batch
            .iter()
            .map(|lane| scope.spawn(move || run_group(plan, out, lane, stop, true)))
            .collect();
        let mut first = Ok(());
        for h in handles {
            let r = h.join().expect("a lane's thread does not panic");
            if first.is_ok() {
                first = r;
            }
        }
        first
    })
}

/// How a lane's children show progress and time answers: the user's choice (`E03_PROGRESS`,
/// `E03_ANSWER_SPIN_US`, in the run's plan) when given; else, when other lanes run at the same
/// time (`beside_others`):
/// - progress as lines: the swarms share the terminal, each line names its scenario;
/// - no answer spin: the dependencies' timers sleep until each due instant (eight spinning
///   services on two cores starved the swarms, docs/measurements.md);
///
/// and alone: the swarm's `auto` and the service's default spin, unless the lane starts more
/// than [`MAX_SPINNING`] dependency processes (a strategy's replicas each count): then no
/// spin either.
fn lane_settings(plan: &RunPlan, beside_others: bool, services: usize) -> (ProgressMode, Duration) {
    let default_spin = dependency_service::answer_spin_us(dependency_service::ANSWER_SPIN_US)
        .expect("the default is valid");
    let progress = plan.progress.unwrap_or(if beside_others {
        ProgressMode::Lines
    } else {
        ProgressMode::Auto
    });
    let spin = plan
        .answer_spin
        .unwrap_or(if beside_others || services > MAX_SPINNING {
            Duration::ZERO
        } else {
            default_spin
        });
    (progress, spin)
}

/// The most dependency processes of one lane whose timers spin before each due instant: E03-B's
/// four, measured. `failover`'s six (three strategies, two replicas each) spinning on this
/// 2-core machine left a survivor's accept loop without a core for 0.6 s (no arrival logged
/// from 17.8 s to 18.4 s, in two runs of four), and attempts sent then never arrived.
const MAX_SPINNING: usize = 4;

/// Numbers the plan files of a run's lanes (`plan-lane<N>-swarm.json`, `-serve.json`).
static LANES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Writes a child's plan, as JSON, into the run directory (it explains the run).
pub(crate) fn write_plan(path: &Path, plan: serde_json::Result<String>) -> anyhow::Result<()> {
    let json = plan.context("serialising a plan")?;
    std::fs::write(path, json + "\n").with_context(|| format!("writing {}", path.display()))
}

/// The swarm's plan for one lane: its scenarios by value, each with the lane's strategies.
fn swarm_plan(
    plan: &RunPlan,
    out: &Path,
    lane: &Lane,
    targets: Vec<client_swarm::Target>,
    progress: ProgressMode,
) -> client_swarm::SwarmRunPlan {
    let in_lane = |s: &Strategy| lane.strategies.iter().any(|l| l.id == s.id);
    let scenarios = lane
        .scenario_args
        .iter()
        .filter_map(|arg| plan.scenario_args.iter().position(|a| a == arg))
        .filter_map(|i| {
            Some(client_swarm::PlannedScenario {
                definition: plan.scenarios[i].def().clone(),
                text: plan.definitions[i].clone(),
                params: plan.params[i].with_strategies_where(in_lane)?,
            })
        })
        .collect();
    client_swarm::SwarmRunPlan {
        targets,
        scenarios,
        out: out.to_path_buf(),
        claim: None,
        shutdown_targets: false,
        chain_hops: Vec::new(),
        policies: plan.policies.as_ref().map(|p| p.1.clone()),
        metrics_listen: plan.metrics_listen,
        progress,
        // The lab owns this run directory; with --sequential each group adds its own logs.
        host: client_swarm::HostSettings {
            overwrite: true,
            ..Default::default()
        },
        // The lab analyses after its swarm itself.
        report_when_stopped: false,
        shard: None,
        send_logs: None,
    }
}

/// One dependency per strategy of the lane, one swarm over its scenarios and seeds;
/// `beside_others`: other lanes run at the same time ([`lane_settings`]).
fn run_group(
    plan: &RunPlan,
    out: &Path,
    lane: &Lane,
    stop: &AtomicBool,
    beside_others: bool,
) -> anyhow::Result<()> {
    // Each dependency as many times as a scenario of the lane has replicas (`E03_REPLICAS`),
    // each a process of its own.
    let replicas = lane
        .scenario_args
        .iter()
        .filter_map(|arg| plan.scenario_args.iter().position(|a| a == arg))
        .map(|i| plan.params[i].replicas())
        .max()
        .unwrap_or(1);
    let group = &lane.strategies;
    let (progress, answer_spin) =
        lane_settings(plan, beside_others, group.len() * replicas as usize);
    let n = LANES.fetch_add(1, Ordering::SeqCst) + 1;
    let exe = std::env::current_exe().context("locating the lab binary")?;
    // A fault proxy in front of each dependency when a scenario of the lane has wire phases.
    let wire_front = lane
        .scenario_args
        .iter()
        .filter_map(|arg| plan.scenario_args.iter().position(|a| a == arg))
        .any(|i| !plan.params[i].timeline(&plan.scenarios[i]).wire.is_empty());
    let serve_plan = loopback_serve_plan(out, answer_spin, wire_front);
    let serve_file = out.join(format!("plan-lane{n}-serve.json"));
    write_plan(&serve_file, serde_json::to_string_pretty(&serve_plan))?;
    let mut services = Vec::new();
    let mut targets = Vec::new();
    for strategy in group {
        for replica in 0..replicas {
            let started = match &plan.upstream {
                Some(up) => start_proxy(&exe, up, out),
                None => start_service(&exe, &serve_file),
            };
            let (child, work, control) = started
                .with_context(|| format!("starting the dependency for strategy {}", strategy.id))?;
            services.push(child);
            let which = match replicas {
                1 => String::new(),
                _ => format!(" replica {replica}"),
            };
            // Where to scrape it (GET /metrics on the work port): Prometheus, curl.
            eprintln!(
                "lab: strategy {}'s dependency{which}: work http://{work} (GET /metrics), control http://{control}",
                strategy.id
            );
            targets.push(client_swarm::Target {
                strategy: strategy.id.clone(),
                work_url: format!("http://{work}"),
                control_url: format!("http://{control}"),
                replica,
            });
        }
    }
    // One swarm process, or one per shard (`--swarm-shards`): the same plan, shard i/N each;
    // the first shows the progress and serves the metrics.
    let count = plan.swarm_shards.max(1);
    let mut swarms = Vec::new();
    for i in 0..count {
        let shard = (count > 1).then(|| e03_model::shard::Shard::new(i, count).expect("i < count"));
        let (file, shown) = match shard {
            None => (format!("plan-lane{n}-swarm.json"), progress),
            Some(_) => (format!("plan-lane{n}-swarm-shard{i}.json"), {
                if i == 0 {
                    progress
                } else {
                    ProgressMode::Off
                }
            }),
        };
        let swarm_file = out.join(file);
        let mut swarm_plan = swarm_plan(plan, out, lane, targets.clone(), shown);
        swarm_plan.shard = shard;
        if i > 0 {
            swarm_plan.metrics_listen = None;
        }
        write_plan(&swarm_file, serde_json::to_string_pretty(&swarm_plan))?;
        let swarm = child_command(&exe, "swarm")
            .arg("--plan")
            .arg(&swarm_file)
            .stdout(Stdio::inherit())
            .spawn()
            .context("starting the client swarm")?;
        swarms.push(swarm);
    }
    // A stop reaches each: a swarm waited for after the stop is sent it by its own wait.
    let mut failed = None;
    for swarm in &mut swarms {
        let status = wait_forwarding(swarm, stop)?;
        if !status.success() {
            failed.get_or_insert(status);
        }
    }
    for service in &mut services {
        terminate(service);
    }
    for service in &mut services {
        wait_bounded(service, Duration::from_secs(10));
    }
    if let Some(status) = failed.filter(|_| !stop.load(Ordering::SeqCst)) {
        bail!("the client swarm failed ({status})");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plan of `lab run SCENARIO` with these settings (built here rather than parsed from a
    /// command line: the parser also checks the test process's own environment).
    fn plan(scenario: &str, strategies: &str, sequential: bool, at_once: usize) -> RunPlan {
        let scenarios = Scenario::parse_list(scenario).unwrap();
        let raw: std::collections::BTreeMap<String, String> =
            [("E03_STRATEGIES".to_string(), strategies.to_string())].into();
        RunPlan {
            junit: None,
            scenario_args: scenarios.iter().map(|s| s.name().to_string()).collect(),
            definitions: scenarios.iter().map(|s| s.name().to_string()).collect(),
            params: scenarios
                .iter()
                .map(|s| e03_plan::Params::for_scenario(s, &raw).unwrap())
                .collect(),
            scenarios,
            progress: None,
            answer_spin: None,
            metrics_listen: None,
            out: "unused".into(),
            sequential,
            scenarios_at_once: at_once,
            swarm_shards: 1,
            upstream: None,
            choice: crate::outdir::RunChoice {
                id: None,
                overwrite: false,
            },
            policies: None,
        }
    }

    fn shape(batches: &[Vec<Lane>]) -> Vec<Vec<(String, Vec<String>)>> {
        batches
            .iter()
            .map(|b| {
                b.iter()
                    .map(|l| {
                        let ids = l.strategies.iter().map(|s| s.id.clone()).collect();
                        (l.scenario_args.join(","), ids)
                    })
                    .collect()
            })
            .collect()
    }

    fn strategies(p: &RunPlan) -> Vec<Strategy> {
        p.params[0].strategies().to_vec()
    }

    #[test]
    fn lanes_beside_others_or_with_many_dependencies_do_not_spin_unless_the_user_chose() {
        let spin = Duration::from_micros(200);
        let mut p = plan("e03b", "A", false, 2);
        assert_eq!(lane_settings(&p, false, 4), (ProgressMode::Auto, spin));
        assert_eq!(
            lane_settings(&p, true, 4),
            (ProgressMode::Lines, Duration::ZERO)
        );
        // Alone, but six dependency processes (failover's three strategies, two replicas each).
        assert_eq!(
            lane_settings(&p, false, 6),
            (ProgressMode::Auto, Duration::ZERO)
        );
        p.answer_spin = Some(Duration::from_micros(50));
        p.progress = Some(ProgressMode::Off);
        assert_eq!(
            lane_settings(&p, true, 6),
            (ProgressMode::Off, Duration::from_micros(50))
        );
    }

    #[test]
    fn a_lanes_swarm_plan_holds_each_scenario_with_the_lanes_strategies_only() {
        let p = plan("all", "A,B,C", true, 1);
        let lane = Lane {
            scenario_args: vec!["e03b".into()],
            strategies: vec![p.params[1].strategies()[1].clone()],
        };
        let s = swarm_plan(&p, Path::new("out"), &lane, Vec::new(), ProgressMode::Off);
        assert_eq!(s.scenarios.len(), 1);
        assert_eq!(s.scenarios[0].definition.name, "e03b");
        let ids: Vec<&str> = s.scenarios[0]
            .params
            .strategies()
            .iter()
            .map(|s| s.id.as_str())
            .collect();
        assert_eq!(ids, ["B"]);
        assert!(s.host.overwrite && !s.report_when_stopped);
    }

    #[test]
    fn scenarios_run_at_once_each_with_its_own_dependencies_unless_told_otherwise() {
        let ids = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let abcd = ids(&["A", "B", "C", "D"]);
        let p = plan("all", "A,B,C,D", false, 2);
        assert_eq!(
            shape(&batches(&p, &strategies(&p))),
            vec![vec![
                ("e03a".to_string(), abcd.clone()),
                ("e03b".to_string(), abcd.clone())
            ]]
        );
        let p = plan("all", "A,B,C,D", false, 1);
        assert_eq!(
            shape(&batches(&p, &strategies(&p))),
            vec![vec![("e03a,e03b".to_string(), abcd.clone())]]
        );
        let p = plan("all", "A,C", true, 2);
        assert_eq!(
            shape(&batches(&p, &strategies(&p))),
            vec![
                vec![("e03a,e03b".to_string(), ids(&["A"]))],
                vec![("e03a,e03b".to_string(), ids(&["C"]))]
            ]
        );
        let p = plan("e03b", "A,B,C,D", false, 2);
        assert_eq!(
            shape(&batches(&p, &strategies(&p))),
            vec![vec![("e03b".to_string(), abcd)]]
        );
    }
}
