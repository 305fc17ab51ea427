//! The live experiment over loopback: real processes talking real HTTP.
//!
//! For each group of strategies (all of them at once by default, or one at a time with
//! `--sequential`) the lab starts one dependency-service process per strategy on loopback port 0
//! (reading the bound addresses from the child's first stdout line), then one client-swarm process
//! that runs every scenario and seed against them, each strategy against its own dependency. When
//! the swarm is done the services are stopped, and the analyzer computes everything from the logs
//! they wrote. Ctrl-C or SIGTERM stops the children gracefully: logs are flushed and the summary is
//! marked incomplete.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use e03_core::{Scenario, Strategy};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::args::RunPlan;
use crate::outdir::{self, RunDir};

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

/// An error and its causes, each cause once.
pub fn chain(e: &anyhow::Error) -> String {
    e03_core::cli::error_chain(AsRef::<dyn std::error::Error + 'static>::as_ref(e))
}

/// Runs the live experiment and the analysis; the exit code says whether it is trustworthy.
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
    for scenario in &plan.scenarios {
        prepare_scenario_dir(&run.dir.join(scenario.name()), plan.choice.overwrite)?;
    }
    let started = Instant::now();
    // Every strategy of any scenario of the run (a file may choose its own), in order.
    let mut all: Vec<Strategy> = Vec::new();
    for s in plan.params.iter().flat_map(|p| p.strategies()) {
        if !all.iter().any(|a| a.id == s.id) {
            all.push(s.clone());
        }
    }
    for batch in batches(plan, &all) {
        run_batch(plan, &run.dir, &batch, &stop)?;
        if stop.load(Ordering::SeqCst) {
            break;
        }
    }
    eprintln!(
        "lab: live traffic done in {:.1} s; analysing the logs",
        started.elapsed().as_secs_f64()
    );
    let code = report_scenarios(&run.dir, &plan.scenarios)?;
    Ok(if stop.load(Ordering::SeqCst) {
        EXIT_STOPPED
    } else {
        code
    })
}

/// Analyses each scenario's logs under `out`, prints the tables and writes the results.
/// Exit code 0 when every run is complete, its counts match and its checks pass; 1 when a run
/// is incomplete or its counts do not match; 3 when the runs are sound but a check against the
/// source's figures failed ([`CHECK_FAILED`]).
pub fn report_scenarios(out: &Path, scenarios: &[Scenario]) -> anyhow::Result<i32> {
    let mut code = 0;
    for scenario in scenarios {
        let dir = out.join(scenario.name());
        if crate::chain::is_chain(*scenario) {
            // A chain scenario's logs (docs/chains.md): its own table and checks.
            if !crate::chain::report_dir(&dir, *scenario, true)? && code == 0 {
                code = CHECK_FAILED;
            }
            continue;
        }
        let summary = analyzer::analyze_dir(&dir, *scenario)
            .with_context(|| format!("analysing {}", dir.display()))?;
        analyzer::print_tables(&mut std::io::stdout().lock(), &summary)?;
        analyzer::write_outputs(&dir, &summary)
            .with_context(|| format!("writing results into {}", dir.display()))?;
        if summary.params.is_steps() && summary.complete {
            step_check(&dir, *scenario, &summary)?;
        }
        println!("results: {}", outdir::shown(&dir));
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
        if e03_metrics::checks::any_failed(&summary) {
            eprintln!(
                "lab: {}: a check against the source's figures FAILED (see the check table)",
                scenario.name()
            );
            if code == 0 {
                code = CHECK_FAILED;
            }
        }
    }
    Ok(code)
}

/// The step workload's check (seed 002): the same parameters and seeds simulated, beside the
/// live figures: batch calls and 429s within 5%, and the heavy-load ordering on both sides.
/// Printed and written to `live_vs_simulated.csv`; it does not change the exit code.
fn step_check(
    dir: &Path,
    scenario: Scenario,
    live: &analyzer::ScenarioSummary,
) -> anyhow::Result<()> {
    use e03_metrics::steps::{heavy_ordering, step_comparison};
    let sim = simulator::simulate(scenario, &live.params);
    let t = step_comparison(live, &sim, 0.05);
    println!(
        "\nCheck: live against simulated (same parameters and seeds; batch calls and 429s, \
         means over seeds):"
    );
    print!("{}", t.markdown());
    let rows: Vec<Vec<String>> = std::iter::once(t.headers).chain(t.rows).collect();
    analyzer::outputs::write_csv_rows(&dir.join("live_vs_simulated.csv"), &rows)?;
    if let (Some(l), Some(s)) = (heavy_ordering(live), heavy_ordering(&sim)) {
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

/// Exit code of a run whose figures are sound but fail a check against the source's figures.
pub const CHECK_FAILED: i32 = 3;

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

/// What a lane's children (swarm and dependencies) get, besides the user's values, when other
/// lanes run at the same time (`beside_others`); `user_set` says which env vars the user set,
/// and those are left alone:
/// - `E03_PROGRESS=lines`: the swarms share the terminal, each line names its scenario;
/// - `E03_ANSWER_SPIN_US=0`: the dependencies' timers sleep until each due instant (eight
///   spinning services on two cores starved the swarms, docs/measurements.md).
fn beside_others_env(
    beside_others: bool,
    user_set: impl Fn(&str) -> bool,
) -> Vec<(&'static str, &'static str)> {
    if !beside_others {
        return Vec::new();
    }
    [("E03_PROGRESS", "lines"), ("E03_ANSWER_SPIN_US", "0")]
        .into_iter()
        .filter(|(name, _)| !user_set(name))
        .collect()
}

/// One dependency per strategy of the lane, one swarm over its scenarios and seeds;
/// `beside_others`: other lanes run at the same time ([`beside_others_env`]).
fn run_group(
    plan: &RunPlan,
    out: &Path,
    lane: &Lane,
    stop: &AtomicBool,
    beside_others: bool,
) -> anyhow::Result<()> {
    let extra = beside_others_env(beside_others, |name| std::env::var_os(name).is_some());
    let group = &lane.strategies;
    let exe = std::env::current_exe().context("locating the lab binary")?;
    let mut services = Vec::new();
    let mut targets = Vec::new();
    for strategy in group {
        let (child, work, control) =
            start_service(&exe, out, plan.policies.as_ref().map(|p| &p.0), &extra)
                .with_context(|| format!("starting the dependency for strategy {}", strategy.id))?;
        services.push(child);
        targets.push(format!("{}=http://{work}@http://{control}", strategy.id));
    }
    // The user's own values only: each scenario's file supplies the rest in the swarm.
    let mut raw = plan.raw.clone();
    let ids: Vec<&str> = group.iter().map(|s| s.id.as_str()).collect();
    raw.insert("E03_STRATEGIES".into(), ids.join(","));
    let scenarios = lane.scenario_args.join(",");
    if let Some((path, _)) = &plan.policies {
        raw.insert("E03_POLICIES".into(), path.display().to_string());
    }
    let mut swarm = child_command(&exe, "swarm", &raw)
        .envs(extra.iter().copied())
        .env("E03_SWARM_REPORT", "0")
        // The lab owns this run directory; with --sequential each group adds its own logs.
        .env("E03_OVERWRITE", "1")
        .arg("--targets")
        .arg(targets.join(","))
        .arg("--scenarios")
        .arg(&scenarios)
        .arg("--out")
        .arg(out)
        .stdout(Stdio::inherit())
        .spawn()
        .context("starting the client swarm")?;
    let swarm_status = wait_forwarding(&mut swarm, stop)?;
    for service in &mut services {
        terminate(service);
    }
    for service in &mut services {
        wait_bounded(service, Duration::from_secs(10));
    }
    if !swarm_status.success() && !stop.load(Ordering::SeqCst) {
        bail!("the client swarm failed ({swarm_status})");
    }
    Ok(())
}

/// `lab <sub>` with the parameters the user gave in its environment: `raw` only, the values
/// the lab validated (a flag wins over its env var: `E03_SEED=abc lab run --seed 5` runs seed 5,
/// and the children do not see the `abc` the flag replaced).
pub(crate) fn child_command(exe: &Path, sub: &str, raw: &BTreeMap<String, String>) -> Command {
    let mut cmd = Command::new(exe);
    for p in e03_core::params::PARAMS {
        cmd.env_remove(p.env);
    }
    cmd.arg(sub).envs(raw);
    if std::env::var_os("RUST_LOG").is_none() {
        cmd.env("RUST_LOG", "warn");
    }
    cmd
}

/// Starts `lab serve` on loopback port 0 and reads the addresses it bound.
pub(crate) fn start_service(
    exe: &Path,
    log_dir: &Path,
    policies: Option<&std::path::PathBuf>,
    extra: &[(&str, &str)],
) -> anyhow::Result<(Child, String, String)> {
    let mut raw = BTreeMap::new();
    if let Some(path) = policies {
        raw.insert("E03_POLICIES".to_string(), path.display().to_string());
    }
    let mut child = child_command(exe, "serve", &raw)
        .envs(extra.iter().copied())
        .env("E03_LISTEN", "127.0.0.1:0")
        .env("E03_CONTROL_LISTEN", "127.0.0.1:0")
        .env("E03_LOG_DIR", log_dir)
        .env("E03_SCENARIO", "none")
        .stdout(Stdio::piped())
        .spawn()?;
    let stdout = child.stdout.take().expect("piped");
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line)?;
    // `listening work=IP:PORT control=IP:PORT`
    let mut work = None;
    let mut control = None;
    for part in line.split_whitespace() {
        if let Some(v) = part.strip_prefix("work=") {
            work = Some(v.to_string());
        } else if let Some(v) = part.strip_prefix("control=") {
            control = Some(v.to_string());
        }
    }
    match (work, control) {
        (Some(w), Some(c)) => Ok((child, w, c)),
        _ => {
            terminate(&mut child);
            bail!("the dependency service did not report its addresses (got {line:?})")
        }
    }
}

/// Waits for `child`; if the lab is asked to stop meanwhile, passes SIGTERM on and keeps waiting.
pub(crate) fn wait_forwarding(
    child: &mut Child,
    stop: &AtomicBool,
) -> anyhow::Result<std::process::ExitStatus> {
    let mut forwarded = false;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        if stop.load(Ordering::SeqCst) && !forwarded {
            terminate(child);
            forwarded = true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub(crate) fn terminate(child: &mut Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
    }
}

/// Waits up to `limit` for a child that was asked to stop, then kills it.
pub(crate) fn wait_bounded(child: &mut Child, limit: Duration) {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// `lab report [--out DIR] [SCENARIO]`: the analysis step alone (compose's analyzer container).
pub fn report(args: Vec<std::ffi::OsString>) -> i32 {
    let cmd = clap::Command::new("lab report")
        .bin_name("lab report")
        .about(
            "analyse the logs of a finished run and print its tables; the results (summary.json, \
             CSVs, figures, report.md) are written beside the logs",
        )
        .arg(
            clap::Arg::new("out")
                .long("out")
                .env("E03_OUT")
                .default_value("results")
                .value_name("DIR")
                .help(
                    "the run directory holding <scenario>/server-*.jsonl and client-*.jsonl \
                     (e.g. results/20261130-141224); an OUT with a `latest` link means its \
                     latest run",
                ),
        )
        .arg(
            clap::Arg::new("scenario")
                .default_value("all")
                .value_name("SCENARIO")
                .help("a scenario the run holds (e03a, e03b, a user scenario's name), or all: every scenario folder of the run"),
        );
    let m = match cmd.try_get_matches_from(args) {
        Ok(m) => m,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { crate::EXIT_USAGE } else { 0 };
        }
    };
    let out = std::path::PathBuf::from(m.get_one::<String>("out").expect("default"));
    let arg = m.get_one::<String>("scenario").expect("default");
    // The scenarios the run kept (a user's file among them), known before the argument is read.
    let latest = out.join(outdir::LATEST);
    let run = if latest.is_dir() { latest } else { out.clone() };
    let kept = match analyzer::kept::scenarios_in(&run) {
        Ok(k) => k,
        Err(e) => {
            eprintln!("lab report: {e}");
            return crate::EXIT_USAGE;
        }
    };
    if arg == "all" && kept.is_empty() && run.is_dir() {
        eprintln!(
            "lab report: invalid --out {:?}: {} holds no scenario folder of a live run (simulated \
             results are printed when they are made); give the folder of a `lab run`, e.g. \
             {}/<run id>",
            out.display().to_string(),
            run.display(),
            out.display()
        );
        return crate::EXIT_USAGE;
    }
    let scenarios = match Scenario::parse_list(arg) {
        Ok(_) if arg == "all" && !kept.is_empty() => kept,
        Ok(s) => s,
        Err(e) => {
            eprintln!("lab report: {e}");
            return crate::EXIT_USAGE;
        }
    };
    let Some(dir) = run_dir_of(&out, &scenarios) else {
        eprintln!(
            "lab report: invalid --out {:?}: no such directory {} (give the run directory a \
             `lab run` printed, e.g. results/latest)",
            out.display().to_string(),
            scenarios
                .iter()
                .map(|s| out.join(s.name()).display().to_string())
                .collect::<Vec<_>>()
                .join(" or ")
        );
        return crate::EXIT_USAGE;
    };
    match report_scenarios(&dir, &scenarios) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("lab report: {}", chain(&e));
            1
        }
    }
}

/// The run directory that holds a folder of `scenarios`: the run `out/latest` points at when
/// `out` is an output directory the lab has run into (named by its run id, so that the printed
/// `results:` path stays the run's own), else `out` itself.
fn run_dir_of(out: &Path, scenarios: &[Scenario]) -> Option<std::path::PathBuf> {
    let holds = |d: &Path| scenarios.iter().any(|s| d.join(s.name()).is_dir());
    let latest = out.join(outdir::LATEST);
    if holds(&latest) {
        return Some(match std::fs::read_link(&latest) {
            Ok(id) if id.is_relative() => out.join(id),
            _ => latest,
        });
    }
    holds(out).then(|| out.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plan of `lab run SCENARIO` with these settings (built here rather than parsed from a
    /// command line: the parser also checks the test process's own environment).
    fn plan(scenario: &str, strategies: &str, sequential: bool, at_once: usize) -> RunPlan {
        let scenarios = Scenario::parse_list(scenario).unwrap();
        let raw: BTreeMap<String, String> =
            [("E03_STRATEGIES".to_string(), strategies.to_string())].into();
        RunPlan {
            scenario_args: scenarios.iter().map(|s| s.name().to_string()).collect(),
            params: scenarios
                .iter()
                .map(|s| e03_core::Params::for_scenario(*s, &raw).unwrap())
                .collect(),
            scenarios,
            raw,
            out: "unused".into(),
            sequential,
            scenarios_at_once: at_once,
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
    fn lanes_beside_others_print_lines_and_do_not_spin_unless_the_user_chose() {
        assert!(beside_others_env(false, |_| false).is_empty());
        assert_eq!(
            beside_others_env(true, |_| false),
            vec![("E03_PROGRESS", "lines"), ("E03_ANSWER_SPIN_US", "0")]
        );
        assert_eq!(
            beside_others_env(true, |name| name == "E03_ANSWER_SPIN_US"),
            vec![("E03_PROGRESS", "lines")]
        );
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
