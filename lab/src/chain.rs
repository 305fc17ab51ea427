//! Chain scenarios (a `[chain]` table, see [`e03_core::chain`]): `lab run` starts one hop
//! process per layer on loopback port 0 (`lab hop`, the dependency service in proxy mode), the
//! bottom first, each hop told its upstream's address; the lab is the top caller. `lab
//! simulate` runs the same variants on the simulator's event queue and writes the same logs.
//! The analyzer reads both the same way.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use dependency_service::hop::{self, HopConfig, Role};
use e03_core::chain::{ChainDef, ChainVariant};
use e03_core::Scenario;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::outdir;

/// Whether `scenario` is a chain scenario.
pub fn is_chain(scenario: Scenario) -> bool {
    scenario.def().chain.is_some()
}

/// `lab run` of chain scenarios (live). Exit 0, 1 on an error, 3 when a check failed.
pub fn run(scenarios: &[Scenario], out: &Path, choice: &outdir::RunChoice) -> i32 {
    finish(run_inner(scenarios, out, choice, true))
}

/// `lab simulate` of chain scenarios.
pub fn simulate(scenarios: &[Scenario], out: &Path, choice: &outdir::RunChoice) -> i32 {
    finish(run_inner(scenarios, out, choice, false))
}

fn finish(r: anyhow::Result<bool>) -> i32 {
    match r {
        Ok(true) => 0,
        Ok(false) => crate::live::CHECK_FAILED,
        Err(e) => {
            eprintln!("lab: {}", crate::live::chain(&e));
            1
        }
    }
}

fn run_inner(
    scenarios: &[Scenario],
    out: &Path,
    choice: &outdir::RunChoice,
    live: bool,
) -> anyhow::Result<bool> {
    let run = outdir::claim(out, choice)?;
    eprintln!(
        "lab: run {} writes into {}",
        run.id,
        outdir::shown(&run.dir)
    );
    let mut passed = true;
    for scenario in scenarios {
        let chain = scenario.def().chain.as_ref().expect("a chain scenario");
        let dir = if live {
            run.dir.join(scenario.name())
        } else {
            run.dir.join("simulated").join(scenario.name())
        };
        for v in &chain.variants {
            let vdir = dir.join(&v.id);
            std::fs::create_dir_all(&vdir)
                .with_context(|| format!("creating {}", vdir.display()))?;
            if live {
                let started = Instant::now();
                live_variant(&vdir, chain, v)
                    .with_context(|| format!("{}: variant {}", scenario.name(), v.id))?;
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
        passed &= report_dir(&dir, *scenario, live)?;
    }
    Ok(passed)
}

/// Analyses a chain scenario's directory (live or simulated logs, the same files), prints its
/// tables and writes its outputs; whether every check passed.
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
    analyzer::chain::write_chain_outputs(dir, &def.title, live, &runs, &rows)?;
    println!("results: {}\n", outdir::shown(dir));
    let failed = e03_metrics::chain::any_failed(&rows);
    if failed {
        eprintln!(
            "lab: {}: a check against the source's figures FAILED (see the check table)",
            scenario.name()
        );
    }
    Ok(!failed)
}

/// The simulator's records, written as the live hops write theirs.
fn simulated_variant(dir: &Path, chain: &ChainDef, v: &ChainVariant) -> anyhow::Result<()> {
    let (tops, calls) = simulator::chain::simulate_chain(v, chain.bottom, chain.requests, 1);
    analyzer::chain::write_records(&dir.join("top.jsonl"), &tops)?;
    for layer in 1..=v.bottom_layer() {
        let mine: Vec<_> = calls.iter().filter(|c| c.layer == layer).collect();
        if !mine.is_empty() {
            analyzer::chain::write_records(
                &dir.join(analyzer::chain::layer_log_name(v, layer)),
                &mine,
            )?;
        }
    }
    Ok(())
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
    let mut cmd = Command::new(exe);
    cmd.arg("hop")
        .arg("--config")
        .arg(serde_json::to_string(config)?)
        .stdout(Stdio::piped());
    if std::env::var_os("RUST_LOG").is_none() {
        cmd.env("RUST_LOG", "warn");
    }
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

/// Starts the chain bottom first, sends the top requests, waits until every hop is idle.
fn live_variant(dir: &Path, chain: &ChainDef, v: &ChainVariant) -> anyhow::Result<()> {
    let mut hops = Hops(Vec::new());
    let mut addrs = Vec::new();
    let bottom_layer = v.bottom_layer();
    let mut upstream = start_hop(
        &mut hops,
        &HopConfig {
            layer: bottom_layer,
            role: Role::Bottom {
                bottom: chain.bottom,
            },
            log: dir.join(analyzer::chain::layer_log_name(v, bottom_layer)),
            listen: "127.0.0.1:0".into(),
        },
    )?;
    addrs.push(upstream.clone());
    for layer in (1..bottom_layer).rev() {
        upstream = start_hop(
            &mut hops,
            &HopConfig {
                layer,
                role: Role::Proxy {
                    spec: v.hops[layer as usize - 1].clone(),
                    upstream: format!("http://{upstream}"),
                    propagate: v.propagate,
                },
                log: dir.join(analyzer::chain::layer_log_name(v, layer)),
                listen: "127.0.0.1:0".into(),
            },
        )?;
        addrs.push(upstream.clone());
    }
    let tops = hop::top_requests_blocking(
        &v.top,
        &format!("http://{upstream}"),
        v.propagate,
        chain.requests,
    )?;
    analyzer::chain::write_records(&dir.join("top.jsonl"), &tops)?;
    // Work below a caller that left goes on: wait for it, so every call is logged.
    if !hop::wait_idle_blocking(&addrs, Duration::from_secs(300))? {
        bail!("the hops were still working after 300 s; their logs are incomplete");
    }
    drop(hops);
    Ok(())
}
