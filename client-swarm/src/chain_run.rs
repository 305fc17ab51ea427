//! Chain scenarios through hop services, the top caller's side: for every variant, each hop
//! configured bottom first ([`role_of`], [`configure_hop`]), the top requests sent by the
//! swarm's live driver ([`drive_top_caller`]), the hops waited for until idle, and `top.jsonl`
//! written ([`drive_variant`]). `lab swarm --chain-hops` (compose) runs [`run_chains`]; `lab
//! run` starts its own hop processes on loopback and drives each variant with
//! [`drive_variant`]. A stop marks the variant incomplete
//! ([`e03_plan::log_names::STOPPED_MARKER`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use e03_model::chain::{ChainDef, ChainVariant};
use e03_plan::hop_control::{HopSetup, Role};

use crate::chain_args::ChainArgs;
use crate::hops::{configure_hop, wait_idle};
use crate::http::wait_healthy;
use crate::top::drive_top_caller;
use crate::usage_error::UsageError;

/// Whether every variant ran to its end (`false`: `stop` was set; that variant is marked
/// incomplete and the rest are not run).
pub async fn run_chains(a: &ChainArgs, run_dir: &Path, stop: &AtomicBool) -> anyhow::Result<bool> {
    let client = reqwest::Client::new();
    for hop in &a.hops {
        wait_healthy(hop, 30, Duration::from_secs(1))
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
                configure_hop(&client, &a.hops[layer as usize - 1], &setup)
                    .await
                    .with_context(|| format!("{} variant {}", s.scenario.name(), v.id))?;
            }
            let used = &a.hops[..v.bottom_layer() as usize];
            let complete = drive_variant(&vdir, chain, v, &used[0], used, stop)
                .await
                .with_context(|| format!("{} variant {}", s.scenario.name(), v.id))?;
            if !complete {
                eprintln!(
                    "{}: stopped: {} variant {} is incomplete; no tables",
                    crate::program::name(),
                    s.scenario.name(),
                    v.id
                );
                return Ok(false);
            }
            eprintln!(
                "{}: {} {}: {} top requests through {} hop services in {:.1} s",
                crate::program::name(),
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

/// The top caller's part of a variant, the same on loopback and in compose: the swarm's live
/// driver makes the top requests to `entry` (the top hop, or the proxy in front of it,
/// [`drive_top_caller`]), then this waits (at most 300 s) until no hop of `bases` has a
/// call in flight, so every call is in their logs (work below a caller that left goes on), and
/// writes `top.jsonl` in `dir`. Whether it ran to its end: when `stop` is set first, the
/// variant is marked incomplete (its stopped marker, [`e03_plan::log_names::STOPPED_MARKER`]) instead.
pub async fn drive_variant(
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
    let complete = drive_top_caller(v, chain.requests, 1, entry, stopped_flag, &mut tops).await?;
    let idle = if complete {
        until_stopped(stop, wait_idle(bases, Duration::from_secs(300))).await
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

/// The role of `layer` (1 to the bottom layer) of variant `v`: the bottom, or a proxy towards
/// `upstream` (the base URL of the layer below) with its hop's policy. Loopback processes and
/// compose's hop containers get the same roles.
pub fn role_of(chain: &ChainDef, v: &ChainVariant, layer: u32, upstream: &str) -> Role {
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

/// Every scenario is a chain scenario, and every variant has a hop service for each of its
/// layers.
pub fn check_hops(a: &ChainArgs) -> Result<(), UsageError> {
    if let Some(other) = a
        .scenarios
        .iter()
        .find(|s| s.scenario.def().chain.is_none())
    {
        return Err(UsageError::NotAChain {
            name: other.scenario.name().to_string(),
        });
    }
    if a.hops.is_empty() {
        return Err(UsageError::NoHops);
    }
    for s in &a.scenarios {
        let chain = s.scenario.def().chain.as_ref().expect("a chain scenario");
        for v in &chain.variants {
            if !v.proxies.is_empty() {
                return Err(UsageError::ProxyInChain {
                    scenario: s.scenario.name().to_string(),
                    variant: v.id.clone(),
                });
            }
            let need = v.bottom_layer() as usize;
            if need > a.hops.len() {
                return Err(UsageError::TooFewHops {
                    scenario: s.scenario.name().to_string(),
                    variant: v.id.clone(),
                    need,
                    hops: v.hops.len(),
                    given: a.hops.len(),
                });
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
