//! Chain scenarios (a `[chain]` table, see [`e03_model::chain`]): `lab run` starts one hop
//! process per layer on loopback port 0 (`lab hop`, the dependency service in proxy mode), the
//! bottom first, each hop told its upstream's address; the lab is the top caller (the swarm's
//! live driver, driving the core's top-caller workload, [`client_swarm::drive_variant`]). `lab
//! simulate` runs the same variants on the simulator's event queue and writes the same logs.
//! The analyzer reads both the same way.
//!
//! In compose the hops are containers (`hop-1`, `hop-2`, ...) started without a role (`lab hop
//! --listen .. --log-dir /results`); `lab swarm --chain-hops URL,...` with chain scenarios
//! ([`swarm`], the swarm's [`client_swarm::run_chains`]) configures them per variant through
//! their control call, the bottom first, with the same roles `lab run` gives its processes
//! ([`client_swarm::role_of`]), and is the top caller. The compose analyzer
//! (`lab report`) prints the same tables from their logs.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use dependency_service::hop::HopConfig;
use e03_model::chain::{ChainDef, ChainProxy, ChainVariant};
use e03_plan::Scenario;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::outdir;

/// Whether `scenario` is a chain scenario.
pub fn is_chain(scenario: &Scenario) -> bool {
    scenario.def().chain.is_some()
}

/// One chain scenario of a `lab run` (`live`) or a `lab simulate`, into the run directory
/// `run_dir` (claimed by the caller): every variant, then its tables. Whether every check
/// passed; `None` when `stop` was set during a live variant (it is marked incomplete, see
/// [`client_swarm::drive_variant`], and no tables are made).
pub fn run_scenario(
    run_dir: &Path,
    scenario: &Scenario,
    stop: &AtomicBool,
    live: bool,
) -> anyhow::Result<Option<bool>> {
    let chain = scenario.def().chain.as_ref().expect("a chain scenario");
    let dir = if live {
        run_dir.join(scenario.name())
    } else {
        run_dir.join("simulated").join(scenario.name())
    };
    for v in &chain.variants {
        let vdir = dir.join(&v.id);
        std::fs::create_dir_all(&vdir).with_context(|| format!("creating {}", vdir.display()))?;
        if live {
            let started = Instant::now();
            let complete = live_variant(&vdir, chain, v, stop)
                .with_context(|| format!("{}: variant {}", scenario.name(), v.id))?;
            if !complete {
                eprintln!(
                    "lab: stopped: {} variant {} is incomplete ({}); no tables",
                    scenario.name(),
                    v.id,
                    outdir::shown(&vdir)
                );
                return Ok(None);
            }
            eprintln!(
                "lab: {} {}: {} top requests in {:.1} s",
                scenario.name(),
                v.id,
                chain.requests,
                started.elapsed().as_secs_f64()
            );
        } else {
            simulated_variant(&vdir, chain, v)?;
        }
    }
    let passed = report_dir(&dir, scenario.clone(), live)?;
    outdir::index_beside(run_dir);
    Ok(Some(passed))
}

/// A flag that SIGINT and SIGTERM set instead of ending the process: a chain run then stops
/// its hops, keeps the records it has and marks its variant incomplete.
pub(crate) fn stop_on_signals() -> anyhow::Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop)).context("handling signals")?;
    }
    Ok(stop)
}

/// Analyses a chain scenario's directory (live or simulated logs, the same files), prints its
/// tables and writes its outputs (`chain.md`, `report.html`, ...); whether every check passed.
/// The caller rewrites `OUT/index.html` ([`crate::outdir::index_beside`]).
pub fn report_dir(dir: &Path, scenario: Scenario, live: bool) -> anyhow::Result<bool> {
    let def = scenario.def();
    let chain = def.chain.as_ref().expect("a chain scenario");
    let runs = analyzer::chain::analyze_chain(dir, chain)?;
    let rows = analyzer::chain::checks_of(&def.checks, &runs, live);
    analyzer::chain::print_chain(
        &mut std::io::stdout().lock(),
        &def.title,
        live,
        &runs,
        &rows,
    )?;
    analyzer::chain::write_chain_outputs(dir, scenario.name(), &def.title, live, &runs, &rows)?;
    println!("results: {}\n", outdir::shown(dir));
    let failed = e03_metrics::chain::any_failed(&rows);
    for r in rows.iter().filter(|r| r.pass == Some(false)) {
        eprintln!(
            "lab: {}: FAIL {} of {}: ours {}, published {}, band {}",
            scenario.name(),
            r.metric,
            r.strategy,
            r.ours,
            r.published,
            r.band
        );
    }
    Ok(!failed)
}

/// The simulator's records, written as the live hops write theirs.
fn simulated_variant(dir: &Path, chain: &ChainDef, v: &ChainVariant) -> anyhow::Result<()> {
    let logs = simulator::chain::simulate_chain(v, chain.bottom, chain.requests, 1);
    e03_io::logs::write_chain_logs(dir, v, &logs.tops, &logs.calls, &logs.proxied)
        .with_context(|| format!("writing the simulated logs into {}", dir.display()))
}

/// The hop processes of one variant; stopped (SIGTERM, then bounded wait) when dropped.
struct Hops(Vec<Child>);

impl Drop for Hops {
    fn drop(&mut self) {
        for c in &mut self.0 {
            if let Ok(pid) = i32::try_from(c.id()) {
                let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
            }
        }
        for c in &mut self.0 {
            let end = Instant::now() + Duration::from_secs(5);
            loop {
                if let Ok(Some(_)) = c.try_wait() {
                    break;
                }
                if Instant::now() >= end {
                    let _ = c.kill();
                    let _ = c.wait();
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

/// Starts `lab hop` with `config`; its address (from its first stdout line).
fn start_hop(hops: &mut Hops, config: &HopConfig) -> anyhow::Result<String> {
    let exe = std::env::current_exe().context("finding the lab's own executable")?;
    let mut cmd = crate::child::child_command(&exe, "hop");
    cmd.arg("--config")
        .arg(serde_json::to_string(config)?)
        .stdout(Stdio::piped());
    let mut child = cmd.spawn().context("starting a hop")?;
    let stdout = child.stdout.take().expect("piped");
    hops.0.push(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line)?;
    match line.trim().strip_prefix("listening work=") {
        Some(addr) => Ok(addr.to_string()),
        None => bail!("a hop did not report its address (got {line:?})"),
    }
}

/// Starts `lab proxy --http` in front of `upstream` (a layer's base URL) with `proxy`'s
/// timeline, logging to `log`; its address (from its first stdout line).
fn start_fault_proxy(
    hops: &mut Hops,
    proxy: &ChainProxy,
    upstream: &str,
    log: &Path,
) -> anyhow::Result<String> {
    let exe = std::env::current_exe().context("finding the lab's own executable")?;
    let mut cmd = crate::child::child_command(&exe, "proxy");
    cmd.arg("--http")
        .args(["--listen", "127.0.0.1:0", "--upstream", upstream])
        .arg("--timeline-json")
        .arg(serde_json::to_string(&proxy.timeline)?)
        .arg("--log")
        .arg(log)
        // The callers' attempt timeouts bound a call, not the proxy.
        .args(["--upstream-timeout-ms", "3600000"])
        .stdout(Stdio::piped());
    let mut child = cmd.spawn().context("starting a layer's fault proxy")?;
    let stdout = child.stdout.take().expect("piped");
    hops.0.push(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line)?;
    match line.trim().strip_prefix("listening http=") {
        Some(addr) => Ok(addr.to_string()),
        None => bail!("a layer's fault proxy did not report its address (got {line:?})"),
    }
}

/// Starts the chain bottom first (each layer's fault proxy, if it has one, after the layer and
/// before its caller), sends the top requests, waits until every hop is idle. Whether it ran
/// to its end (`false`: `stop` was set, the variant is marked incomplete).
fn live_variant(
    dir: &Path,
    chain: &ChainDef,
    v: &ChainVariant,
    stop: &AtomicBool,
) -> anyhow::Result<bool> {
    let mut hops = Hops(Vec::new());
    let mut addrs: Vec<String> = Vec::new();
    // The base URL a caller of the layer just started calls: the layer, or its proxy.
    let mut entry = String::new();
    for layer in (1..=v.bottom_layer()).rev() {
        let addr = start_hop(
            &mut hops,
            &HopConfig {
                layer,
                role: client_swarm::role_of(chain, v, layer, &entry),
                log: dir.join(e03_plan::log_names::layer_log_name(v, layer)),
                listen: "127.0.0.1:0".into(),
            },
        )?;
        entry = format!("http://{addr}");
        if let Some(proxy) = v.proxy_before(layer) {
            let log = dir.join(e03_plan::log_names::proxy_log_name(v, layer));
            entry = format!(
                "http://{}",
                start_fault_proxy(&mut hops, proxy, &entry, &log)?
            );
        }
        addrs.push(addr);
    }
    // Layer 1 (the top hop) first.
    let bases: Vec<String> = addrs.iter().rev().map(|a| format!("http://{a}")).collect();
    let complete = tokio::runtime::Runtime::new()?.block_on(client_swarm::drive_variant(
        dir, chain, v, &entry, &bases, stop,
    ))?;
    drop(hops);
    Ok(complete)
}

/// `lab swarm` with chain scenarios (compose): claims the run directory as the swarm does, then
/// for every variant configures the hop services of `--chain-hops` bottom first (layer L is the
/// L-th hop, the bottom the one after the last proxy), sends the top requests to the first,
/// waits until the hops are idle and writes `top.jsonl`. The hops' logs go to the same run
/// directory: their `--log-dir` is the swarm's `--out`. With `--shutdown-targets` every target
/// and every hop is shut down at the end, whatever happened. Exit 0, 1 on an error, 2 on bad
/// input; the checks are the analyzer's (`lab report`).
///
/// After the other scenarios of a mixed list (`claimed`: the run directory they claimed, which
/// the chains then write into; the hops' logs stay relative to `--out`), and without `run`
/// (those failed or were stopped) it only shuts the services down.
pub fn swarm(a: &client_swarm::ChainArgs, run: bool, claimed: Option<PathBuf>) -> i32 {
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("lab: cannot start the tokio runtime: {e}");
            return 1;
        }
    };
    let stop = match stop_on_signals() {
        Ok(stop) => stop,
        Err(e) => {
            eprintln!("lab: {e}");
            return 1;
        }
    };
    let checked = || {
        client_swarm::check_hops(a).map_err(|e| e.to_string())?;
        match claimed {
            Some(dir) => Ok(dir),
            None => client_swarm::claim_chain_run(a).map_err(|e| e.to_string()),
        }
    };
    let code = match run.then(checked) {
        None => 0,
        Some(Err(e)) => {
            eprintln!("lab: {e}");
            crate::EXIT_USAGE
        }
        Some(Ok(run_dir)) => match rt.block_on(client_swarm::run_chains(a, &run_dir, &stop)) {
            Ok(true) => 0,
            Ok(false) => crate::EXIT_STOPPED,
            Err(e) => {
                eprintln!("lab: {}", crate::errors::chain(&e));
                1
            }
        },
    };
    if let Some(targets) = &a.shutdown {
        rt.block_on(async {
            for control in targets {
                if let Err(e) = client_swarm::shutdown_target(control).await {
                    eprintln!("lab: {control}: {e}");
                }
            }
            client_swarm::shutdown_hops(&a.hops).await;
        });
    }
    code
}
