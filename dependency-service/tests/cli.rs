//! The binary: bad input exits 2 naming what was wrong and writes nothing; a good start prints
//! its addresses, serves, answers its own healthcheck and shuts down cleanly on SIGTERM.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use e03_model::events::Event;

const BIN: &str = env!("CARGO_BIN_EXE_dependency-service");

/// Runs the binary with only the given E03_* env vars; exit code and stderr.
fn run(args: &[&str], env: &[(&str, &str)], log_dir: &std::path::Path) -> (i32, String) {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .args(["--listen", "127.0.0.1:0", "--control-listen", "127.0.0.1:0"])
        .arg("--log-dir")
        .arg(log_dir);
    clear_e03_env(&mut cmd);
    let out = cmd.envs(env.iter().copied()).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn clear_e03_env(cmd: &mut Command) {
    for (k, _) in std::env::vars() {
        if k.starts_with("E03_") {
            cmd.env_remove(k);
        }
    }
}

/// Arguments, env vars, and what stderr must mention.
type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a [&'a str]);

#[test]
fn bad_values_exit_2_naming_the_setting_and_write_nothing() {
    let dir = common::temp_dir("cli-bad");
    let cases: &[Case] = &[
        (
            &[],
            &[("E03_WORKERS", "abc")],
            &["E03_WORKERS", "abc", "whole number"],
        ),
        (
            &["--service-ms", "-1"],
            &[],
            // Named as typed: the flag, not its env var (issue "A newcomer's first hour").
            &["invalid --service-ms=\"-1\"", "milliseconds"],
        ),
        (
            &["--scenario", "e03z"],
            &[],
            &[
                "--scenario",
                "e03z",
                "a built-in scenario with a single dependency",
            ],
        ),
        // A chain is several services (issue 26): `lab run` starts its hops.
        (
            &["--scenario", "amplification"],
            &[],
            &["--scenario", "amplification", "a chain of services"],
        ),
        (
            &["--scenario", "e03a,e03b"],
            &[],
            &["one dependency serves one scenario"],
        ),
        (
            &["--scenario", "all"],
            &[],
            &["one dependency serves one scenario"],
        ),
        (
            &["--timeline-start", "later"],
            &[],
            &["--timeline-start", "later", "process or first-request"],
        ),
        (&[], &[("E03_WORKER", "5")], &["E03_WORKER"]),
        (&["--bogus"], &[], &["--bogus"]),
        // The fault proxy as a process of its own (compose's wire-* services).
        (
            &["--wire-proxy", "ftp://wire-a:8474"],
            &[],
            &[
                "--wire-proxy (env E03_WIRE_PROXY)",
                "ftp://wire-a:8474",
                "`lab proxy` API",
            ],
        ),
        (
            &["--wire-upstream", "dep-a:8080"],
            &[],
            &["--wire-proxy (env E03_WIRE_PROXY)", "with --wire-upstream"],
        ),
        (
            &[
                "--wire-proxy",
                "http://wire-a:8474",
                "--wire-upstream",
                "dep-a",
            ],
            &[],
            &[
                "--wire-upstream (env E03_WIRE_UPSTREAM)",
                "\"dep-a\"",
                "HOST:PORT",
            ],
        ),
        (
            &["--proxy-api", "127.0.0.1:0"],
            &[("E03_WIRE_PROXY", "http://wire-a:8474")],
            &[
                "--proxy-api (env E03_PROXY_API)",
                "nothing with --wire-proxy",
            ],
        ),
    ];
    for (args, env, needles) in cases {
        let (code, stderr) = run(args, env, &dir);
        assert_eq!(code, 2, "{args:?} {env:?}: {stderr}");
        for n in *needles {
            assert!(stderr.contains(n), "{args:?} {env:?}: {stderr:?} lacks {n}");
        }
        assert!(!dir.exists(), "nothing may be written on bad input");
    }
    // On every address, the proxy cannot guess where to reach the dependency.
    let mut cmd = Command::new(BIN);
    clear_e03_env(&mut cmd);
    let out = cmd
        .args([
            "--listen",
            "0.0.0.0:0",
            "--wire-proxy",
            "http://wire-a:8474",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--wire-upstream (env E03_WIRE_UPSTREAM)") && stderr.contains("0.0.0.0"),
        "{stderr}"
    );
    let mut cmd = Command::new(BIN);
    clear_e03_env(&mut cmd);
    let out = cmd.args(["--listen", "nowhere:port"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("--listen (env E03_LISTEN) value \"nowhere:port\""));
}

#[test]
fn the_binary_serves_checks_its_health_and_stops_cleanly_on_sigterm() {
    let dir = common::temp_dir("cli-serve");
    let (child, work, control) = serve_alone(&["--scenario", "e03a", "--workers", "3"], &dir);
    assert!(
        work.starts_with("127.0.0.1:") && !work.ends_with(":0"),
        "{work}"
    );

    let health = |url: String| {
        let mut cmd = Command::new(BIN);
        clear_e03_env(&mut cmd);
        cmd.args(["health", &url]).status().unwrap().code()
    };
    assert_eq!(health(format!("http://{control}/health")), Some(0));
    assert_eq!(health(format!("http://{work}/health")), Some(0));
    assert_eq!(health(format!("http://{work}/nope")), Some(1));

    // One request of the standalone run, then SIGTERM.
    let status = get_work(&work);
    assert!(status == 200 || status == 503, "{status}");
    assert_eq!(stop(child), Some(0));
    let (log, start) = standalone_log(&dir);
    assert_eq!(
        (start.scenario.as_str(), start.tag.strategy.as_str()),
        ("e03a", "standalone")
    );
    assert_eq!(start.params["E03_WORKERS"], "3");
    assert!(matches!(log.last(), Some(Event::RunEnd(e)) if !e.complete && e.records == 3));
    let _ = std::fs::remove_dir_all(dir);
}

/// Starts the binary alone with `args` on free ports; the child, its work and control addresses.
fn serve_alone(args: &[&str], dir: &std::path::Path) -> (std::process::Child, String, String) {
    let mut cmd = Command::new(BIN);
    clear_e03_env(&mut cmd);
    let mut child = cmd
        .args(["--listen", "127.0.0.1:0", "--control-listen", "127.0.0.1:0"])
        .arg("--log-dir")
        .arg(dir)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let rest = line.trim().strip_prefix("listening work=").expect(&line);
    let (work, control) = rest.split_once(" control=").expect(&line);
    (child, work.to_string(), control.to_string())
}

/// SIGTERM, then the exit code (within 15 s).
fn stop(mut child: std::process::Child) -> Option<i32> {
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("no exit within 15 s of SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The standalone run's log and its `run_start` (its first record).
fn standalone_log(dir: &std::path::Path) -> (Vec<Event>, e03_model::events::RunStart) {
    let log = common::read_log(&dir.join(common::STANDALONE_LOG));
    let Some(Event::RunStart(start)) = log.first().cloned() else {
        panic!("no run_start first: {:?}", log.first())
    };
    (log, start)
}

fn get_work(work: &str) -> u16 {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        common::client()
            .get(format!("http://{work}/work"))
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    })
}

/// Issue 26, tried as a new user would: `--scenario budget` ran with E03-A's parameters and was
/// logged as "standalone". Now any single-dependency scenario runs with its own parameters
/// (under the flags given), and its log names it.
#[test]
fn a_built_in_scenario_is_served_alone_with_its_own_parameters() {
    let dir = common::temp_dir("cli-budget");
    let (child, work, _) = serve_alone(&["--scenario", "budget", "--workers", "3"], &dir);
    // budget's dependency is down from 0 s: 503 at once.
    assert_eq!(get_work(&work), 503);
    assert_eq!(stop(child), Some(0));
    let (log, start) = standalone_log(&dir);
    assert_eq!(
        (start.scenario.as_str(), start.tag.strategy.as_str()),
        ("budget", "standalone")
    );
    // The scenario's own setting (service_ms = 1, not E03's 40), the flag over it (workers),
    // and no E03-A fault rate (budget has no [faults]).
    assert_eq!(start.params["E03_SERVICE_MS"], "1");
    assert_eq!(start.params["E03_WORKERS"], "3");
    assert!(log
        .iter()
        .any(|e| matches!(e, Event::Response(r) if r.status == 503
        && r.cause == e03_model::events::Cause::Down)));
    let _ = std::fs::remove_dir_all(dir);
}

/// A scenario file, its timeline starting at the first request: the file is kept beside the
/// log (so `lab analyze` knows it), and a request 1.5 s after the start still meets the
/// timeline's first instant.
#[test]
fn a_scenario_file_is_served_alone_from_its_first_request() {
    let dir = common::temp_dir("cli-file");
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/blip.toml");
    let (child, work, _) = serve_alone(
        &["--scenario", file, "--timeline-start", "first-request"],
        &dir,
    );
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        !dir.join(common::STANDALONE_LOG).exists()
            || common::read_log(&dir.join(common::STANDALONE_LOG)).is_empty(),
        "no run before the first request"
    );
    let status = get_work(&work);
    assert!(status == 200 || status == 503, "{status}");
    assert_eq!(stop(child), Some(0));
    let kept = std::fs::read_to_string(dir.join("standalone/scenario.toml")).unwrap();
    assert_eq!(kept, std::fs::read_to_string(file).unwrap());
    let (log, start) = standalone_log(&dir);
    assert_eq!(start.scenario, "blip");
    let Event::Arrival(first) = &log[1] else {
        panic!("{:?}", log[1])
    };
    // Time zero is the first request's arrival, not the process's start 1.5 s before.
    assert!(first.t_us < 200_000, "first arrival at {} µs", first.t_us);
    let _ = std::fs::remove_dir_all(dir);
}
