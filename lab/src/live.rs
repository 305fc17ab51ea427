//! The live experiment over loopback: real processes talking real HTTP.
//!
//! For each group of strategies (all of them at once by default, or one at a time with
//! `--sequential`) the lab starts one dependency-service process per strategy on loopback port 0
//! (reading the bound addresses from the child's first stdout line), then one client-swarm process
//! that runs every scenario and seed against them, each strategy against its own dependency. When
//! the swarm is done the services are stopped, and the analyzer computes everything from the logs
//! they wrote. Ctrl-C or SIGTERM stops the children gracefully: logs are flushed and the summary is
//! marked incomplete.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use e03_core::{Params, Scenario, Strategy};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::args::RunPlan;

use crate::EXIT_STOPPED;

pub fn run(plan: &RunPlan) -> i32 {
    match run_live(plan) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("lab: {e:#}");
            1
        }
    }
}

/// Runs the live experiment and the analysis; the exit code says whether it is trustworthy.
fn run_live(plan: &RunPlan) -> anyhow::Result<i32> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))?;
    }
    for scenario in &plan.scenarios {
        clear_scenario_dir(&plan.out.join(scenario.name()))?;
    }
    let started = Instant::now();
    let groups: Vec<Vec<Strategy>> = if plan.sequential {
        plan.params
            .strategies
            .iter()
            .map(|s| vec![s.clone()])
            .collect()
    } else {
        vec![plan.params.strategies.clone()]
    };
    for group in &groups {
        run_group(plan, group, &stop)?;
        if stop.load(Ordering::SeqCst) {
            break;
        }
    }
    eprintln!(
        "lab: live traffic done in {:.1} s; analysing the logs",
        started.elapsed().as_secs_f64()
    );
    let code = report_scenarios(&plan.out, &plan.scenarios)?;
    Ok(if stop.load(Ordering::SeqCst) {
        EXIT_STOPPED
    } else {
        code
    })
}

/// Analyses each scenario's logs under `out`, prints the tables and writes the results.
/// Exit code 0 when every run is complete and its counts match, 1 otherwise.
pub fn report_scenarios(out: &Path, scenarios: &[Scenario]) -> anyhow::Result<i32> {
    let mut code = 0;
    for scenario in scenarios {
        let dir = out.join(scenario.name());
        let summary = analyzer::analyze_dir(&dir, *scenario)
            .with_context(|| format!("analysing {}", dir.display()))?;
        analyzer::print_tables(&mut std::io::stdout().lock(), &summary)?;
        analyzer::write_outputs(&dir, &summary)
            .with_context(|| format!("writing results into {}", dir.display()))?;
        println!("results: {}", dir.display());
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
    }
    Ok(code)
}

/// True when every run's client attempts and server arrivals matched one to one.
fn counts_match(summary: &analyzer::ScenarioSummary) -> bool {
    summary
        .runs
        .iter()
        .all(|r| r.matched.as_ref().is_none_or(|m| m.ok()))
}

/// A scenario directory holds only the lab's own files; old logs would mix into the analysis.
fn clear_scenario_dir(dir: &Path) -> anyhow::Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("clearing {}", dir.display()))?;
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(())
}

/// One dependency per strategy of `group`, one swarm over all scenarios and seeds.
fn run_group(plan: &RunPlan, group: &[Strategy], stop: &AtomicBool) -> anyhow::Result<()> {
    let exe = std::env::current_exe().context("locating the lab binary")?;
    let mut services = Vec::new();
    let mut targets = Vec::new();
    for strategy in group {
        let (child, work, control) = start_service(&exe, &plan.out)
            .with_context(|| format!("starting the dependency for strategy {}", strategy.id))?;
        services.push(child);
        targets.push(format!("{}=http://{work}@http://{control}", strategy.id));
    }
    let mut params = plan.params.clone();
    params.strategies = group.to_vec();
    let scenarios: Vec<&str> = plan.scenarios.iter().map(|s| s.name()).collect();
    let scenarios = if scenarios.len() == 2 {
        "all".to_string()
    } else {
        scenarios[0].to_string()
    };
    let mut swarm = child_command(&exe, "swarm", &params)
        .env("E03_SWARM_REPORT", "0")
        .arg("--targets")
        .arg(targets.join(","))
        .arg("--scenarios")
        .arg(&scenarios)
        .arg("--out")
        .arg(&plan.out)
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

/// `lab <sub>` with the run's parameters in its environment.
fn child_command(exe: &Path, sub: &str, params: &Params) -> Command {
    let mut cmd = Command::new(exe);
    cmd.arg(sub).envs(params.to_raw());
    if std::env::var_os("RUST_LOG").is_none() {
        cmd.env("RUST_LOG", "warn");
    }
    cmd
}

/// Starts `lab serve` on loopback port 0 and reads the addresses it bound.
fn start_service(exe: &Path, log_dir: &Path) -> anyhow::Result<(Child, String, String)> {
    let mut child = child_command(exe, "serve", &Params::default())
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
fn wait_forwarding(
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

fn terminate(child: &mut Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
    }
}

/// Waits up to `limit` for a child that was asked to stop, then kills it.
fn wait_bounded(child: &mut Child, limit: Duration) {
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
        .about("analyse the logs of a finished run and print the tables")
        .arg(
            clap::Arg::new("out")
                .long("out")
                .env("E03_OUT")
                .default_value("results")
                .value_name("DIR"),
        )
        .arg(
            clap::Arg::new("scenario")
                .default_value("all")
                .value_name("SCENARIO"),
        );
    let m = match cmd.try_get_matches_from(args) {
        Ok(m) => m,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { crate::EXIT_USAGE } else { 0 };
        }
    };
    let scenarios = match Scenario::parse_list(m.get_one::<String>("scenario").expect("default")) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("lab report: {e}");
            return crate::EXIT_USAGE;
        }
    };
    let out = std::path::PathBuf::from(m.get_one::<String>("out").expect("default"));
    match report_scenarios(&out, &scenarios) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("lab report: {e:#}");
            1
        }
    }
}
