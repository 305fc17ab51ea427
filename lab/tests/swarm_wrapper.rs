//! `lab swarm` as compose runs it: against a `lab serve` started on its own (no standalone run,
//! `--scenario none`), with `--shutdown-targets` the dependency exits when the swarm is done,
//! and a swarm stopped by SIGTERM still leaves a summary of what was logged, marked incomplete.

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{exit_within, http, lab, spawn_first_line, Running};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// A `lab serve` on loopback port 0 logging into `dir`, and its `A=WORK@CONTROL` target.
fn serve(dir: &Path) -> (Running, String) {
    serve_with(dir, &[])
}

/// [`serve`] with more arguments.
fn serve_with(dir: &Path, more: &[&str]) -> (Running, String) {
    common::serve_dependency(dir, more)
}

/// Runs a `lab swarm` command to its end: exit 0, or its stderr.
fn swarm_ok(cmd: &mut std::process::Command) {
    let run = cmd.output().expect("lab swarm runs");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stderr}");
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("e03-lab-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn swarm_args(target: &str, out: &Path, duration_s: &str) -> Vec<String> {
    [
        "swarm",
        "--targets",
        target,
        "--strategies",
        "A",
        "--scenarios",
        "e03b",
        "--clients",
        "10",
        "--duration-s",
        duration_s,
        "--freeze-start-s",
        "0.3",
        "--freeze-end-s",
        "0.5",
        "--recovery-end-s",
        "0.7",
        "--think-min-ms",
        "100",
        "--think-max-ms",
        "200",
        "--out",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([out.display().to_string()])
    .collect()
}

#[test]
fn shutdown_targets_ends_the_dependency_when_the_swarm_is_done() {
    let dir = temp_dir("shutdown-targets");
    let (mut service, target) = serve(&dir);
    let status = lab()
        .args(swarm_args(&target, &dir, "1"))
        .arg("--shutdown-targets")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("lab swarm runs");
    assert_eq!(status.code(), Some(0));
    // Nobody signals the service: the swarm's shutdown call alone must end it.
    assert_eq!(
        exit_within(&mut service.0, Duration::from_secs(15)),
        Some(0)
    );
    assert!(dir.join("e03b/server-A-seed42.jsonl").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_stopped_swarm_leaves_a_summary_marked_incomplete() {
    let dir = temp_dir("swarm-stopped");
    let (mut service, target) = serve(&dir);
    let mut swarm = lab()
        .args(swarm_args(&target, &dir, "8"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("lab swarm starts");
    // Stop it once traffic flows (its client log exists), well before its 8 s are over.
    let log = dir.join("e03b/client-A-seed42.jsonl");
    let started = Instant::now();
    while !log.exists() && started.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1500));
    kill(Pid::from_raw(swarm.id() as i32), Signal::SIGTERM).expect("SIGTERM sent");
    assert_eq!(exit_within(&mut swarm, Duration::from_secs(60)), Some(130));

    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("e03b/summary.json")).expect("summary written"),
    )
    .expect("summary is JSON");
    assert_eq!(summary["complete"], false, "{summary}");
    assert_eq!(summary["runs"][0]["strategy"], "A", "{summary}");

    let _ = kill(Pid::from_raw(service.0.id() as i32), Signal::SIGTERM);
    assert_eq!(
        exit_within(&mut service.0, Duration::from_secs(15)),
        Some(0)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Compose's flow, twice: the dependency logs under the results root, the swarm claims a fresh
/// run directory there (no E03_RUN_ID) and tells the dependency, so each run's server and
/// client logs land together in `ROOT/<run id>/`; `lab report --out ROOT` analyses the newest
/// and names it by its run id; a user's file in ROOT survives.
#[test]
fn two_compose_style_runs_get_their_own_run_directories() {
    let root = temp_dir("claim-run-dir");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("notes.txt"), "mine").unwrap();
    let (mut service, target) = serve(&root);
    let mut ids = Vec::new();
    for _ in 0..2 {
        let run = lab()
            .args(swarm_args(&target, &root, "1"))
            .arg("--claim-run-dir")
            .env_remove("E03_RUN_ID")
            .env_remove("E03_OVERWRITE")
            .output()
            .expect("lab swarm runs");
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(0), "{stderr}");
        let latest = std::fs::read_link(root.join("latest")).expect("latest link");
        let id = latest.display().to_string();
        assert!(
            stderr.contains(&format!("run {id} writes into")),
            "{stderr}"
        );
        for log in ["server-A-seed42.jsonl", "client-A-seed42.jsonl"] {
            assert!(root.join(&id).join("e03b").join(log).exists(), "{id}/{log}");
        }
        ids.push(id);
    }
    assert_ne!(ids[0], ids[1]);
    assert!(
        !root.join("e03b").exists(),
        "a log outside the run directories"
    );

    let report = lab()
        .args(["report", "--out"])
        .arg(&root)
        .arg("e03b")
        .env_remove("E03_HOST_RESULTS")
        .output()
        .expect("lab report runs");
    let stdout = String::from_utf8_lossy(&report.stdout);
    assert_eq!(report.status.code(), Some(0), "{stdout}");
    let shown = format!("results: {}", root.join(&ids[1]).join("e03b").display());
    assert!(stdout.contains(&shown), "{shown:?} not in {stdout}");
    assert!(root.join(&ids[1]).join("e03b/summary.json").exists());
    assert!(!root.join(&ids[0]).join("e03b/summary.json").exists());
    assert_eq!(
        std::fs::read_to_string(root.join("notes.txt")).unwrap(),
        "mine"
    );

    let _ = kill(Pid::from_raw(service.0.id() as i32), Signal::SIGTERM);
    assert_eq!(
        exit_within(&mut service.0, Duration::from_secs(15)),
        Some(0)
    );
    let _ = std::fs::remove_dir_all(&root);
}

/// Compose's fault proxy as a service of its own (issue 27, item 5): `lab proxy --log-dir ROOT`
/// and a `lab serve --wire-proxy` in front of which it stands. A run without wire phases goes to
/// the dependency directly and leaves no proxy log; a `slow-network` run goes through the proxy
/// (the start call's answer names it): its toxics are applied over the proxy's API, its proxy
/// log is written by the proxy process beside the server log, the network's timeouts show in
/// the summary, and the proxy ends when the dependency does.
#[test]
fn a_proxy_of_its_own_carries_the_wire_runs_and_ends_with_the_dependency() {
    let root = temp_dir("wire-remote");
    std::fs::create_dir_all(&root).unwrap();
    let (mut proxy, line) = spawn_first_line(&[
        "proxy",
        "--api",
        "127.0.0.1:0",
        "--log-dir",
        root.to_str().unwrap(),
    ]);
    let api = line.strip_prefix("listening api=").unwrap().to_string();
    // A proxy `dependency` a previous dependency left: the new one makes its own again.
    let left = http(
        &api,
        "POST",
        "/proxies",
        r#"{"name":"dependency","listen":"127.0.0.1:0","upstream":"127.0.0.1:1"}"#,
    );
    assert!(left.starts_with("HTTP/1.1 201"), "{left}");
    let (mut service, target) = serve_with(&root, &["--wire-proxy", &format!("http://{api}")]);

    // E03-B, short: straight to the dependency.
    swarm_ok(lab().args(swarm_args(&target, &root, "1")));
    let plain = root.join("e03b");
    assert!(plain.join("server-A-seed42.jsonl").exists());
    assert!(
        !plain.join("wire-A-seed42.jsonl").exists(),
        "a run without wire phases went through the proxy"
    );

    // slow-network: through the proxy.
    swarm_ok(
        lab()
            .args(["swarm", "--targets", &target, "--strategies", "A"])
            .args(["--scenarios", "slow-network", "--shutdown-targets", "--out"])
            .arg(&root),
    );
    let dir = root.join("slow-network");
    let analyzed = lab()
        .arg("analyze")
        .arg(&dir)
        .output()
        .expect("lab analyze runs");
    let stdout = String::from_utf8_lossy(&analyzed.stdout);
    assert_eq!(analyzed.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("read timeouts, answer sent"), "{stdout}");
    let wire = std::fs::read_to_string(dir.join("wire-A-seed42.jsonl")).expect("the proxy's log");
    let added = wire
        .lines()
        .filter(|l| l.contains(r#""what":"toxic_added""#))
        .count();
    assert_eq!(added, 3, "{wire}");
    let accepted = wire
        .lines()
        .filter(|l| l.contains(r#""event":"accepted""#))
        .count();
    assert!(accepted >= 1, "{wire}");
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("summary.json")).expect("summary written"),
    )
    .unwrap();
    let a = &summary["runs"][0];
    assert!(a["wire"]["network_timeouts"].as_u64().unwrap() > 50, "{a}");
    assert_eq!(
        a["wire"]["connections"].as_u64().unwrap(),
        accepted as u64,
        "{a}"
    );

    // The swarm's shutdown call ends the dependency, and the dependency ends its proxy.
    assert_eq!(
        exit_within(&mut service.0, Duration::from_secs(15)),
        Some(0)
    );
    assert_eq!(exit_within(&mut proxy.0, Duration::from_secs(15)), Some(0));
    let _ = std::fs::remove_dir_all(&root);
}
