//! Chain scenarios (a `[chain]` table, see [`e03_model::chain`]): `lab run` starts one hop
//! process per layer on loopback port 0 (`lab hop`, the dependency service in proxy mode), the
//! bottom first, each hop told its upstream's address; the lab is the top caller (the swarm's
//! live driver, driving the core's top-caller workload). `lab
//! simulate` runs the same variants on the simulator's event queue and writes the same logs.
//! The analyzer reads both the same way.
//!
//! In compose the hops are containers (`hop-1`, `hop-2`, ...) started without a role (`lab hop
//! --listen .. --log-dir /results`); `lab swarm --chain-hops URL,...` with chain scenarios
//! ([`swarm`]) configures them per variant through their control call, the bottom first, with
//! the same roles `lab run` gives its processes, and is the top caller. The compose analyzer
//! (`lab report`) prints the same tables from their logs.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use dependency_service::hop::{self, HopConfig, HopSetup, Role};
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
/// [`stopped`], and no tables are made).
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

/// Runs `fut` to its end, or until `stop` is set (then `None`; `fut` is dropped).
async fn until_stopped<T>(
    stop: &AtomicBool,
    fut: impl std::future::Future<Output = T>,
) -> Option<T> {
    let stopped = async {
        while !stop.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::select! {
        r = fut => Some(r),
        () = stopped => None,
    }
}

/// Marks the variant in `dir` incomplete: the top requests that finished go to `top.jsonl`,
/// and [`e03_plan::log_names::STOPPED_MARKER`] says why the rest is missing (the analyzer then
/// refuses to make tables of it). The calls the hops answered are in their logs.
fn stopped(dir: &Path, tops: &[e03_model::chain::TopRecord], requests: u32) -> anyhow::Result<()> {
    e03_io::logs::write_jsonl(&dir.join(e03_plan::log_names::TOP_LOG), tops)?;
    let marker = dir.join(e03_plan::log_names::STOPPED_MARKER);
    std::fs::write(
        &marker,
        format!(
            "stopped by a signal after {} of {requests} top requests; the hops' logs hold the calls \
             they answered before they were stopped\n",
            tops.len()
        ),
    )
    .with_context(|| format!("writing {}", marker.display()))
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

/// The role of `layer` (1 to the bottom layer) of variant `v`: the bottom, or a proxy towards
/// `upstream` (the base URL of the layer below) with its hop's policy. Loopback processes and
/// compose's hop containers get the same roles.
fn role_of(chain: &ChainDef, v: &ChainVariant, layer: u32, upstream: &str) -> Role {
    if layer == v.bottom_layer() {
        Role::Bottom {
            bottom: chain.bottom,
        }
    } else {
        Role::Proxy {
            spec: v.hops[layer as usize - 1].clone(),
            upstream: upstream.to_string(),
            propagate: v.propagate,
        }
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
                role: role_of(chain, v, layer, &entry),
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
    let complete = tokio::runtime::Runtime::new()?
        .block_on(drive_variant(dir, chain, v, &entry, &bases, stop))?;
    drop(hops);
    Ok(complete)
}

/// The top caller's part of a variant, the same on loopback and in compose: the swarm's live
/// driver makes the top requests to `entry` (the top hop, or the proxy in front of it,
/// [`client_swarm::drive_top_caller`]), then this waits (at most 300 s) until no hop of `bases` has a
/// call in flight, so every call is in their logs (work below a caller that left goes on), and
/// writes `top.jsonl` in `dir`. Whether it ran to its end: when `stop` is set first, the
/// variant is marked incomplete ([`stopped`]) instead.
async fn drive_variant(
    dir: &Path,
    chain: &ChainDef,
    v: &ChainVariant,
    entry: &str,
    bases: &[String],
    stop: &AtomicBool,
) -> anyhow::Result<bool> {
    let mut tops = Vec::new();
    let stopped_flag = async {
        while !stop.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    let complete =
        client_swarm::drive_top_caller(v, chain.requests, 1, entry, stopped_flag, &mut tops)
            .await?;
    let idle = if complete {
        until_stopped(stop, hop::wait_idle(bases, Duration::from_secs(300))).await
    } else {
        None
    };
    let Some(idle) = idle else {
        stopped(dir, &tops, chain.requests)?;
        return Ok(false);
    };
    if !idle? {
        bail!("the hops were still working after 300 s; their logs are incomplete");
    }
    e03_io::logs::write_jsonl(&dir.join(e03_plan::log_names::TOP_LOG), &tops)?;
    Ok(true)
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
        checked_hops(a)?;
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
        Some(Ok(run_dir)) => match rt.block_on(swarm_run(a, &run_dir, &stop)) {
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

/// Every scenario is a chain scenario, and every variant has a hop service for each of its
/// layers.
fn checked_hops(a: &client_swarm::ChainArgs) -> Result<(), String> {
    if let Some(other) = a.scenarios.iter().find(|s| !is_chain(&s.scenario)) {
        return Err(format!(
            "invalid --scenarios (E03_SCENARIOS): {} is not a chain scenario (the lab's swarm \
             runs the others first, then the chains)",
            other.scenario.name()
        ));
    }
    if a.hops.is_empty() {
        return Err(
            "chain scenarios need the hop services: --chain-hops http://hop-1:8080,... \
                    (compose passes them); on one machine `lab run amplification` starts its \
                    own"
            .into(),
        );
    }
    for s in &a.scenarios {
        let chain = s.scenario.def().chain.as_ref().expect("a chain scenario");
        for v in &chain.variants {
            if !v.proxies.is_empty() {
                return Err(format!(
                    "invalid --scenarios (E03_SCENARIOS): {} variant {} has a fault proxy in \
                     front of a layer ([[chain.variant.proxy]]): compose's hop services have no \
                     proxy between them; run it with lab run or lab simulate",
                    s.scenario.name(),
                    v.id
                ));
            }
            let need = v.bottom_layer() as usize;
            if need > a.hops.len() {
                return Err(format!(
                    "invalid --chain-hops: {} variant {} needs {need} hop services ({} hops and \
                     the bottom), --chain-hops names {}",
                    s.scenario.name(),
                    v.id,
                    v.hops.len(),
                    a.hops.len()
                ));
            }
        }
    }
    Ok(())
}

/// The path of `file` in `dir` relative to `root` (the hops' log directory), `/`-separated.
fn relative_log(root: &Path, dir: &Path, file: &str) -> anyhow::Result<String> {
    let rel = dir.strip_prefix(root).with_context(|| {
        format!(
            "{} is not under {}, the hops' log directory",
            dir.display(),
            root.display()
        )
    })?;
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    parts.push(file.to_string());
    Ok(parts.join("/"))
}

/// A variant's directory, made ready for its logs: a directory that holds an earlier run's
/// logs of this variant is refused, unless `overwrite`, which removes exactly those files.
fn prepare_variant_dir(dir: &Path, v: &ChainVariant, overwrite: bool) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut ours: Vec<PathBuf> = vec![
        dir.join(e03_plan::log_names::TOP_LOG),
        dir.join(e03_plan::log_names::STOPPED_MARKER),
    ];
    ours.extend(
        (1..=v.bottom_layer()).map(|l| dir.join(e03_plan::log_names::layer_log_name(v, l))),
    );
    let earlier: Vec<&PathBuf> = ours.iter().filter(|p| p.exists()).collect();
    if earlier.is_empty() {
        return Ok(());
    }
    if !overwrite {
        bail!(
            "{} already holds the logs of an earlier run; give this run a directory of its own \
             (--claim-run-dir, as compose does) or set E03_OVERWRITE=1 to replace them",
            dir.display()
        );
    }
    for p in earlier {
        std::fs::remove_file(p).with_context(|| format!("removing {}", p.display()))?;
    }
    Ok(())
}

/// Whether every variant ran to its end (`false`: `stop` was set; that variant is marked
/// incomplete and the rest are not run).
async fn swarm_run(
    a: &client_swarm::ChainArgs,
    run_dir: &Path,
    stop: &AtomicBool,
) -> anyhow::Result<bool> {
    let client = reqwest::Client::new();
    for hop in &a.hops {
        client_swarm::wait_healthy(hop, 30, Duration::from_secs(1))
            .await
            .with_context(|| format!("hop {hop}"))?;
    }
    // The hops' --log-dir is the swarm's --out: with --claim-run-dir the results root.
    let root = if a.claim.is_some() {
        a.out.as_path()
    } else {
        run_dir
    };
    for s in &a.scenarios {
        let chain = s.scenario.def().chain.as_ref().expect("a chain scenario");
        let dir = run_dir.join(s.scenario.name());
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        e03_io::scenario_files::keep(&dir, &s.text).map_err(anyhow::Error::msg)?;
        for v in &chain.variants {
            let started = Instant::now();
            let vdir = dir.join(&v.id);
            prepare_variant_dir(&vdir, v, a.overwrite)?;
            // Bottom first: every proxy's upstream is configured before it can be called.
            for layer in (1..=v.bottom_layer()).rev() {
                let below = a.hops.get(layer as usize).cloned().unwrap_or_default();
                let setup = HopSetup {
                    layer,
                    role: role_of(chain, v, layer, &below),
                    log: relative_log(root, &vdir, &e03_plan::log_names::layer_log_name(v, layer))?,
                };
                hop::configure_hop(&client, &a.hops[layer as usize - 1], &setup)
                    .await
                    .with_context(|| format!("{} variant {}", s.scenario.name(), v.id))?;
            }
            let used = &a.hops[..v.bottom_layer() as usize];
            let complete = drive_variant(&vdir, chain, v, &used[0], used, stop)
                .await
                .with_context(|| format!("{} variant {}", s.scenario.name(), v.id))?;
            if !complete {
                eprintln!(
                    "lab: stopped: {} variant {} is incomplete; no tables",
                    s.scenario.name(),
                    v.id
                );
                return Ok(false);
            }
            eprintln!(
                "lab: {} {}: {} top requests through {} hop services in {:.1} s",
                s.scenario.name(),
                v.id,
                chain.requests,
                used.len(),
                started.elapsed().as_secs_f64()
            );
        }
    }
    Ok(true)
}
