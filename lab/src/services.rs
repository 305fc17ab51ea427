//! The dependencies of a live run as child processes: `lab serve --plan FILE` (the lab's own
//! dependency) or `lab proxy --http` with a control listener in front of a user's service
//! (`lab run --upstream URL`), the addresses each prints first, and their stop.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::bail;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::child::child_command;

/// The plan of a `lab serve` child of a loopback run: both listeners on port 0, logs into
/// `log_dir`, no scenario of its own (each run's comes in its start call); `wire_front`: a fault
/// proxy in front of it, for runs with wire phases.
pub(crate) fn loopback_serve_plan(
    log_dir: &Path,
    answer_spin: Duration,
    wire_front: bool,
) -> dependency_service::ServePlan {
    dependency_service::ServePlan {
        listen: "127.0.0.1:0".parse().expect("an address"),
        control_listen: "127.0.0.1:0".parse().expect("an address"),
        log_dir: log_dir.to_path_buf(),
        scenario: None,
        scenario_text: None,
        policies_text: None,
        timeline_start: Default::default(),
        params: e03_plan::Params::default(),
        answer_spin,
        wire_front,
        proxy_api: None,
        wire_proxy: None,
        send_logs: None,
    }
}

/// Starts `lab serve --plan FILE` (loopback port 0) and reads the addresses it bound.
pub(crate) fn start_service(
    exe: &Path,
    plan_file: &Path,
) -> anyhow::Result<(Child, String, String)> {
    let mut child = child_command(exe, "serve")
        .arg("--plan")
        .arg(plan_file)
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

/// Starts `lab proxy --http --upstream URL` with a control listener (loopback port 0), its runs'
/// logs under `log_dir`, and reads the addresses it bound: the dependency of a strategy of
/// `lab run --upstream URL`.
pub(crate) fn start_proxy(
    exe: &Path,
    upstream: &dependency_service::http_proxy::Upstream,
    log_dir: &Path,
) -> anyhow::Result<(Child, String, String)> {
    let mut child = child_command(exe, "proxy")
        .args([
            "--http",
            "--listen",
            "127.0.0.1:0",
            "--control-listen",
            "127.0.0.1:0",
        ])
        .arg("--upstream")
        .arg(upstream.to_string())
        .arg("--log-dir")
        .arg(log_dir)
        .stdout(Stdio::piped())
        .spawn()?;
    let stdout = child.stdout.take().expect("piped");
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line)?;
    // `listening http=IP:PORT control=IP:PORT`
    let field = |key: &str| {
        line.split_whitespace()
            .find_map(|p| p.strip_prefix(key))
            .map(str::to_string)
    };
    match (field("http="), field("control=")) {
        (Some(w), Some(c)) => Ok((child, w, c)),
        _ => {
            terminate(&mut child);
            bail!("the HTTP fault proxy did not report its addresses (got {line:?})")
        }
    }
}
