//! `lab soak --minutes M`: E03-A's traffic against one dependency for M minutes, watching both
//! processes for leaks.
//!
//! The live run's own machinery ([`crate::live`]): one `lab serve` and one `lab swarm`, with
//! E03-A's workload (200 closed-loop clients, 5% of requests failing, 1% answered late) for
//! strategy A (immediate retry: the most requests per operation of the E03 strategies) and
//! `E03_DURATION_S` = M minutes. Every second the lab samples each process's resident memory
//! (`VmRSS` of `/proc/PID/status`, and its anonymous and file-backed parts, `RssAnon` and
//! `RssFile`), open file descriptors (the entries of `/proc/PID/fd`) and tasks (threads, the
//! entries of `/proc/PID/task`) into `OUT/<run id>/soak.csv`. At the end it prints their growth
//! (and which part of the RSS grew) and analyses the logs as `lab run` does.
//!
//! It fails (exit 1) when a process's RSS at the end is more than 10% above its RSS after the
//! warm-up (the first minute; the first third of a soak shorter than 3 minutes, so that a short
//! test soak still checks something), when a log is incomplete, or when a child fails. Bad input:
//! exit 2. Stopped by a signal: exit 130.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use e03_plan::Scenario;

use crate::child::child_command;
use crate::live::write_plan;
use crate::outdir::{self, RunChoice};
use crate::services::{loopback_serve_plan, start_service, terminate, wait_bounded};
use crate::{EXIT_STOPPED, EXIT_USAGE};

/// The strategy of the soak (see the module doc).
const STRATEGY: &str = "A";
/// Largest RSS growth after the warm-up that passes, in percent.
const MAX_RSS_GROWTH_PERCENT: u64 = 10;
/// Longest soak accepted (one day).
const MAX_MINUTES: f64 = 1440.0;

/// One sample of one process.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// Seconds since the soak started.
    pub t_s: f64,
    pub rss_kib: u64,
    pub fds: u64,
    pub tasks: u64,
    /// The anonymous part of the RSS (`RssAnon`: the heap, thread stacks), in KiB.
    pub rss_anon_kib: u64,
    /// The file-backed part of the RSS (`RssFile`: mostly the binary's own pages), in KiB.
    pub rss_file_kib: u64,
}

/// `/proc/PID`'s resident memory, descriptors and tasks; `None` once the process is gone.
pub fn sample(pid: u32, t_s: f64) -> Option<Sample> {
    let proc = PathBuf::from(format!("/proc/{pid}"));
    let status = std::fs::read_to_string(proc.join("status")).ok()?;
    let kib = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
    };
    let rss_kib = kib("VmRSS:")?;
    let count = |dir: &str| std::fs::read_dir(proc.join(dir)).map(|d| d.count() as u64);
    Some(Sample {
        t_s,
        rss_kib,
        fds: count("fd").ok()?,
        tasks: count("task").ok()?,
        // Linux 4.5 and later; 0 before.
        rss_anon_kib: kib("RssAnon:").unwrap_or(0),
        rss_file_kib: kib("RssFile:").unwrap_or(0),
    })
}

/// The warm-up before RSS growth is measured: the first minute, or the first third of a soak
/// shorter than 3 minutes.
pub fn warm_up_s(total_s: f64) -> f64 {
    (total_s / 3.0).min(60.0)
}

/// One process's figures over the soak.
#[derive(Debug, Clone, PartialEq)]
pub struct Growth {
    pub first: Sample,
    /// The first sample at or after the warm-up.
    pub baseline: Sample,
    pub last: Sample,
    pub max_rss_kib: u64,
}

impl Growth {
    /// From one process's samples (in time order); `None` when none reached the warm-up's end.
    pub fn of(samples: &[Sample], warm_up_s: f64) -> Option<Growth> {
        let baseline = *samples.iter().find(|s| s.t_s >= warm_up_s)?;
        Some(Growth {
            first: *samples.first()?,
            baseline,
            last: *samples.last()?,
            max_rss_kib: samples.iter().map(|s| s.rss_kib).max()?,
        })
    }

    /// RSS at the end relative to after the warm-up (0.05: 5% more).
    pub fn rss_growth(&self) -> f64 {
        self.last.rss_kib as f64 / self.baseline.rss_kib.max(1) as f64 - 1.0
    }

    /// At most [`MAX_RSS_GROWTH_PERCENT`] more RSS at the end than after the warm-up (in whole
    /// KiB, so that exactly 10% passes).
    pub fn passes(&self) -> bool {
        self.last.rss_kib * 100 <= self.baseline.rss_kib * (100 + MAX_RSS_GROWTH_PERCENT)
    }
}

fn usage(msg: &str) -> i32 {
    eprintln!("lab: {msg}");
    EXIT_USAGE
}

const HELP: &str = "Usage: lab soak [--minutes M] [--out DIR]

Runs E03-A's traffic (200 closed-loop clients, 5% of requests failing, 1% late) against one
dependency with strategy A for M minutes, samples the dependency's and the swarm's RSS, open file
descriptors and tasks every second into OUT/<run id>/soak.csv, prints their growth, and analyses
the logs. Exit 1 when a process's RSS grows more than 10% after the first minute (the first third
of a soak shorter than 3 minutes), when a log is incomplete, or when a child fails.

Options:
  --minutes M  how long the traffic runs, in minutes (fractions allowed: 0.2) [default: 1]
  --out DIR    output directory; the run writes OUT/<run id>/ [default: results] (env E03_OUT)";

/// `lab soak ...`: the exit code.
pub fn main(args: &[std::ffi::OsString]) -> i32 {
    let mut minutes = "1".to_string();
    let mut out = std::env::var("E03_OUT").unwrap_or_else(|_| "results".into());
    let mut rest = args
        .iter()
        .skip(2)
        .map(|a| a.to_string_lossy().into_owned());
    while let Some(a) = rest.next() {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) => (f.to_string(), Some(v.to_string())),
            None => (a.clone(), None),
        };
        match flag.as_str() {
            "-h" | "--help" => {
                println!("{HELP}");
                return 0;
            }
            "--minutes" | "--out" => {
                let Some(v) = inline.or_else(|| rest.next()) else {
                    return usage(&format!("{flag} needs a value"));
                };
                if flag == "--minutes" {
                    minutes = v;
                } else {
                    out = v;
                }
            }
            _ => return usage(&format!("unknown argument {a:?}; see `lab soak --help`")),
        }
    }
    let minutes = match minutes.trim().parse::<f64>() {
        Ok(m) if m > 0.0 && m <= MAX_MINUTES => m,
        _ => {
            return usage(&format!(
                "invalid --minutes {minutes:?}: expected a number of minutes greater than 0 and at \
                 most {MAX_MINUTES} (fractions allowed: 0.2)"
            ))
        }
    };
    if out.trim().is_empty() {
        return usage("invalid --out \"\": expected a folder");
    }
    let out = PathBuf::from(out);
    let claim = match outdir::claim_undoable(&out, &RunChoice::default()) {
        Ok(c) => c,
        Err(e) => return outdir::fail("lab", &e),
    };
    match soak(&claim.run.dir, minutes * 60.0) {
        Ok(code) => {
            if code != 0 {
                claim.abandon_if_empty(&out);
            }
            code
        }
        Err(e) => {
            claim.abandon_if_empty(&out);
            outdir::fail("lab", &e)
        }
    }
}

fn soak(dir: &Path, total_s: f64) -> anyhow::Result<i32> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))?;
    }
    let scenario = Scenario::e03a();
    eprintln!(
        "lab: {:.1} min of {} traffic, strategy {STRATEGY}, into {}",
        total_s / 60.0,
        scenario.name(),
        outdir::shown(dir)
    );
    std::fs::create_dir_all(dir.join(scenario.name()))
        .with_context(|| format!("creating {}", dir.display()))?;
    let exe = std::env::current_exe().context("locating the lab binary")?;
    // One typed plan per child, as `lab run` gives them (docs/plan.md).
    let mut raw = BTreeMap::new();
    raw.insert("E03_STRATEGIES".to_string(), STRATEGY.to_string());
    raw.insert("E03_DURATION_S".to_string(), format!("{total_s}"));
    let params = e03_plan::Params::for_scenario(&scenario, &raw)
        .map_err(|e| anyhow::anyhow!("the soak's parameters: {e}"))?;
    let serve_plan = loopback_serve_plan(dir, Duration::ZERO, false);
    let serve_file = dir.join("plan-soak-serve.json");
    write_plan(&serve_file, serde_json::to_string_pretty(&serve_plan))?;
    let (mut service, work, control) =
        start_service(&exe, &serve_file).context("starting the dependency")?;
    let text = e03_plan::scenario::BUILTIN_FILES
        .iter()
        .find(|(file, _)| file.trim_end_matches(".toml") == scenario.name())
        .map(|(_, text)| text.to_string())
        .unwrap_or_default();
    let swarm_plan = client_swarm::SwarmRunPlan {
        targets: vec![client_swarm::Target {
            replica: 0,
            strategy: STRATEGY.to_string(),
            work_url: format!("http://{work}"),
            control_url: format!("http://{control}"),
        }],
        scenarios: vec![client_swarm::PlannedScenario {
            definition: scenario.def().clone(),
            text,
            params,
        }],
        out: dir.to_path_buf(),
        claim: None,
        shutdown_targets: false,
        chain_hops: Vec::new(),
        policies: None,
        metrics_listen: None,
        progress: e03_io::progress::ProgressMode::Lines,
        host: client_swarm::HostSettings {
            overwrite: true,
            ..Default::default()
        },
        report_when_stopped: false,
        shard: None,
        send_logs: None,
    };
    let swarm_file = dir.join("plan-soak-swarm.json");
    write_plan(&swarm_file, serde_json::to_string_pretty(&swarm_plan))?;
    let swarm = child_command(&exe, "swarm")
        .arg("--plan")
        .arg(&swarm_file)
        .stdout(Stdio::inherit())
        .spawn();
    let mut swarm = match swarm {
        Ok(s) => s,
        Err(e) => {
            terminate(&mut service);
            wait_bounded(&mut service, Duration::from_secs(10));
            return Err(e).context("starting the client swarm");
        }
    };
    let csv_path = dir.join("soak.csv");
    let mut csv = std::io::BufWriter::new(
        std::fs::File::create(&csv_path)
            .with_context(|| format!("creating {}", csv_path.display()))?,
    );
    writeln!(
        csv,
        "t_s,process,pid,rss_kib,fds,tasks,rss_anon_kib,rss_file_kib"
    )?;
    let procs = [("dependency", service.id()), ("swarm", swarm.id())];
    let mut samples: [Vec<Sample>; 2] = [Vec::new(), Vec::new()];
    let started = Instant::now();
    let mut forwarded = false;
    let mut tick = 0u32;
    let swarm_status = loop {
        if let Some(status) = swarm.try_wait()? {
            break status;
        }
        if stop.load(Ordering::SeqCst) && !forwarded {
            terminate(&mut swarm);
            forwarded = true;
        }
        let t = started.elapsed().as_secs_f64();
        // No sample in the instant the swarm was started: a process just past `exec` has not
        // loaded its binary yet (4 KiB resident, no file-backed page, one task), which is no
        // figure of the lab's. Samples start a second later, then every second.
        let procs = if tick == 0 { &procs[..0] } else { &procs[..] };
        for (i, (name, pid)) in procs.iter().enumerate() {
            if let Some(s) = sample(*pid, t) {
                writeln!(
                    csv,
                    "{:.3},{name},{pid},{},{},{},{},{}",
                    s.t_s, s.rss_kib, s.fds, s.tasks, s.rss_anon_kib, s.rss_file_kib
                )?;
                samples[i].push(s);
            }
        }
        csv.flush()?;
        tick += 1;
        let next = started + Duration::from_secs(u64::from(tick));
        // Short steps, so that the swarm's end and a signal are seen promptly.
        while Instant::now() < next && !stop.load(Ordering::SeqCst) {
            if swarm.try_wait()?.is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50).min(next - Instant::now()));
        }
    };
    terminate(&mut service);
    wait_bounded(&mut service, Duration::from_secs(10));
    csv.flush()?;
    if stop.load(Ordering::SeqCst) {
        eprintln!(
            "lab: stopped; the samples so far are in {}",
            csv_path.display()
        );
        return Ok(EXIT_STOPPED);
    }
    if !swarm_status.success() {
        bail!("the client swarm failed ({swarm_status})");
    }
    let report = crate::live::report_scenarios(dir, &[scenario])?;
    let warm_up = warm_up_s(total_s);
    let mut stdout = std::io::stdout().lock();
    writeln!(
        stdout,
        "\nSoak: {} s sampled every second ({}); RSS growth is the end against after the \
         warm-up ({warm_up:.0} s)",
        started.elapsed().as_secs(),
        outdir::shown(&csv_path)
    )?;
    writeln!(
        stdout,
        "| process | RSS KiB start | after warm-up | end | max | growth | fds start -> end | \
         tasks start -> end |"
    )?;
    writeln!(stdout, "|---|---|---|---|---|---|---|---|")?;
    let mut passed = report != 1;
    for ((name, _), s) in procs.iter().zip(&samples) {
        let Some(g) = Growth::of(s, warm_up) else {
            writeln!(
                stdout,
                "| {name} | no sample after the warm-up | | | | | | |"
            )?;
            passed = false;
            continue;
        };
        writeln!(
            stdout,
            "| {name} | {} | {} | {} | {} | {:+.1}% | {} -> {} | {} -> {} |",
            g.first.rss_kib,
            g.baseline.rss_kib,
            g.last.rss_kib,
            g.max_rss_kib,
            100.0 * g.rss_growth(),
            g.first.fds,
            g.last.fds,
            g.first.tasks,
            g.last.tasks
        )?;
        if !g.passes() {
            passed = false;
            writeln!(
                stdout,
                "FAIL: the {name}'s RSS grew {:.1}% after the warm-up (at most {}% passes)",
                100.0 * g.rss_growth(),
                MAX_RSS_GROWTH_PERCENT
            )?;
        }
    }
    // What grew: the anonymous part (heap, thread stacks) or the file-backed part (the
    // binary's pages, touched as code runs for the first time).
    for ((name, _), s) in procs.iter().zip(&samples) {
        if let Some(g) = Growth::of(s, warm_up) {
            writeln!(
                stdout,
                "{name}: RSS after the warm-up -> end: anonymous (heap, stacks) {} -> {} KiB \
                 ({:+} KiB), file-backed (the binary's pages) {} -> {} KiB ({:+} KiB)",
                g.baseline.rss_anon_kib,
                g.last.rss_anon_kib,
                g.last.rss_anon_kib as i64 - g.baseline.rss_anon_kib as i64,
                g.baseline.rss_file_kib,
                g.last.rss_file_kib,
                g.last.rss_file_kib as i64 - g.baseline.rss_file_kib as i64
            )?;
        }
    }
    if report == 1 {
        writeln!(stdout, "FAIL: a log of the soak is incomplete (see above)")?;
    }
    writeln!(stdout, "soak: {}", if passed { "PASS" } else { "FAIL" })?;
    Ok(if passed { 0 } else { 1 })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(t_s: f64, rss_kib: u64) -> Sample {
        Sample {
            t_s,
            rss_kib,
            fds: 10,
            tasks: 4,
            rss_anon_kib: rss_kib / 4,
            rss_file_kib: rss_kib - rss_kib / 4,
        }
    }

    #[test]
    fn growth_is_measured_from_the_end_of_the_warm_up() {
        assert_eq!(warm_up_s(1800.0), 60.0);
        assert_eq!(warm_up_s(12.0), 4.0);
        let samples = [
            s(0.0, 1000),
            s(30.0, 5000),
            s(60.0, 10_000),
            s(90.0, 11_000),
        ];
        let g = Growth::of(&samples, 60.0).unwrap();
        assert_eq!(g.first.rss_kib, 1000);
        assert_eq!(g.baseline.rss_kib, 10_000);
        assert!((g.rss_growth() - 0.10).abs() < 1e-12);
        assert!(g.passes(), "10% exactly passes");
        let g = Growth::of(&[s(60.0, 10_000), s(61.0, 11_001)], 60.0).unwrap();
        assert!(!g.passes());
        assert_eq!(Growth::of(&[s(0.0, 1)], 60.0), None);
    }

    #[test]
    fn this_process_can_be_sampled() {
        let me = sample(std::process::id(), 0.0).expect("/proc/self");
        assert!(me.rss_kib > 0 && me.fds >= 3 && me.tasks >= 1, "{me:?}");
        assert_eq!(sample(u32::MAX, 0.0), None);
    }
}
