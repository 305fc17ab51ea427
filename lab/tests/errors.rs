//! Errors that point at the cause: the name the user typed (flag or env var), exit code 2 for bad
//! input, the cause printed once, and no colour codes in redirected output.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};

use common::lab;

fn run(cmd: &mut Command) -> (Option<i32>, String) {
    let Output { status, stderr, .. } = cmd.output().expect("lab runs");
    (status.code(), String::from_utf8_lossy(&stderr).into_owned())
}

fn temp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("e03-lab-err-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Flags, env vars, the text the error must hold once, and a name it must not mention.
type Case = (
    &'static [&'static str],
    &'static [(&'static str, &'static str)],
    &'static str,
    &'static str,
);

#[test]
fn bad_values_name_what_the_user_typed_and_exit_2() {
    let out = temp("bad");
    let cases: &[Case] = &[
        (
            &["--clients", "-5"],
            &[],
            "invalid --clients=\"-5\"",
            "E03_CLIENTS",
        ),
        (
            &[],
            &[("E03_CLIENTS", "-5")],
            "invalid E03_CLIENTS=\"-5\"",
            "--clients",
        ),
        (
            &["--seeds", "100-1"],
            &[],
            "100-1 is reversed (1-100?)",
            "E03_SEEDS",
        ),
        (
            &[],
            &[("E03_CLIENT", "5")],
            "did you mean E03_CLIENTS?",
            "--clients",
        ),
        (
            &["--scenarios-at-once", "0"],
            &[],
            "invalid --scenarios-at-once (E03_SCENARIOS_AT_ONCE) \"0\": expected a whole number from 1 to 16",
            "E03_CLIENTS",
        ),        (
            &["--workload", "fan_out", "--fanout", "10", "--fanout-quorum", "11"],
            &[],
            "invalid --fanout-quorum=\"11\": expected a whole number from 0 to E03_FANOUT",
            "--seeds",
        ),
        (
            &["--workload", "fan_out", "--clients", "2000"],
            &[],
            "(E03_CLIENTS x E03_FANOUT at most 100000)",
            "--seeds",
        ),
    ];
    for (flags, env, expected, absent) in cases {
        let (code, stderr) = run(lab()
            .args(["run", "e03b", "--out"])
            .arg(&out)
            .args(*flags)
            .envs(env.iter().copied()));
        assert_eq!(code, Some(2), "{flags:?} {env:?}: {stderr}");
        assert_eq!(
            stderr.matches(expected).count(),
            1,
            "{expected:?} in {stderr}"
        );
        assert!(!stderr.contains(absent), "{absent:?} in {stderr}");
        assert!(!out.exists(), "nothing may be written for bad input");
    }
}

#[test]
fn a_bad_sweep_value_exits_2_naming_the_value() {
    let out = temp("sweep");
    let (code, stderr) = run(lab()
        .args(["simulate", "e03b", "--sweep", "queue=50,abc", "--out"])
        .arg(&out));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("\"queue=50,abc\""), "{stderr}");
    assert!(stderr.contains("the value \"abc\" is not"), "{stderr}");
    let (code, stderr) = run(lab()
        .args(["simulate", "e03b", "--sweep", "queu=50", "--out"])
        .arg(&out));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("did you mean queue?"), "{stderr}");
    assert!(!out.exists(), "nothing may be written for bad input");
}

#[test]
fn analyze_of_a_missing_folder_says_so() {
    let (code, stderr) = run(lab().args(["analyze", "does-not-exist"]));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("invalid DIR \"does-not-exist\": no such directory"),
        "{stderr}"
    );
    assert!(!stderr.contains("invalid scenario"), "{stderr}");
    let (code, stderr) = run(lab().args(["report", "--out", "does-not-exist"]));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("no such directory"), "{stderr}");
}

#[test]
fn a_cause_is_printed_once() {
    let dir = temp("cause");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("a-file");
    std::fs::write(&file, "").unwrap();
    let (code, stderr) = run(lab()
        .args(["simulate", "e03b", "--seeds", "1", "--out"])
        .arg(file.join("sub")));
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(stderr.matches("(os error").count(), 1, "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn help_lists_every_subcommand_under_the_labs_name() {
    let out = lab().arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for sub in [
        "run", "simulate", "compare", "list", "report", "serve", "swarm", "analyze",
    ] {
        assert!(
            help.lines().any(|l| l.trim_start().starts_with(sub)),
            "{sub} missing from\n{help}"
        );
    }
    for (sub, usage) in [
        ("serve", "Usage: lab serve"),
        ("swarm", "Usage: lab swarm"),
        ("analyze", "Usage: lab analyze"),
        ("report", "Usage: lab report"),
    ] {
        let out = lab().args([sub, "--help"]).output().unwrap();
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(help.contains(usage), "{usage:?} not in\n{help}");
        for part in ["dependency-service", "client-swarm", "analyzer"] {
            assert!(!help.contains(&format!("Usage: {part}")), "{help}");
        }
    }
    let out = lab().args(["report", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("the run directory holding"), "{help}");
    assert!(
        help.contains(
            "a scenario the run holds (e03a, e03b, a user scenario's name or file), a \
             comma-separated list of them, or all"
        ),
        "{help}"
    );
}

/// `lab serve` on the given addresses; the first stdout line (its addresses) and the child.
fn serve(listen: &str, control: &str, logs: &std::path::Path) -> (std::process::Child, String) {
    let mut child = lab()
        .args([
            "serve",
            "--listen",
            listen,
            "--control-listen",
            control,
            "--log-dir",
        ])
        .arg(logs)
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    (child, line)
}

fn stop(child: std::process::Child) -> String {
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn serve_resolves_names_says_which_flag_moves_a_taken_port_and_does_not_colour_a_pipe() {
    let logs = temp("serve");
    let (child, line) = serve("localhost:0", "localhost:0", &logs);
    assert!(line.starts_with("listening work=127.0.0.1:"), "{line}");
    // Its standalone run has started (and logged so) once its log file exists.
    let started = std::time::Instant::now();
    while !logs.join("standalone/server-standalone.jsonl").exists()
        && started.elapsed() < std::time::Duration::from_secs(20)
    {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    let stderr = stop(child);
    assert!(stderr.contains("INFO"), "no log line to check: {stderr}");
    assert!(
        !stderr.contains('\u{1b}'),
        "colour codes in a pipe: {stderr:?}"
    );

    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let (code, stderr) = run(lab()
        .args(["serve", "--listen", "127.0.0.1:0", "--control-listen"])
        .arg(format!("127.0.0.1:{port}"))
        .arg("--log-dir")
        .arg(&logs));
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(stderr.matches("in use").count(), 1, "{stderr}");
    assert!(stderr.contains("--control-listen"), "{stderr}");
    assert!(stderr.contains("127.0.0.1:0 for any free port"), "{stderr}");
    let _ = std::fs::remove_dir_all(&logs);
}

#[test]
fn a_stopped_standalone_service_is_an_expected_end_not_an_incomplete_run() {
    let logs = temp("standalone");
    let (child, _) = serve("127.0.0.1:0", "127.0.0.1:0", &logs);
    let log = logs.join("standalone/server-standalone.jsonl");
    let started = std::time::Instant::now();
    while !log.exists() && started.elapsed() < std::time::Duration::from_secs(20) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    stop(child);
    let out = lab()
        .args(["analyze", "--server-log"])
        .arg(&log)
        .arg("--out")
        .arg(logs.join("load"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("the standalone service (or proxy) was stopped, which is how its run ends"),
        "{stdout}"
    );
    assert!(!stderr.contains("warning"), "{stderr}");
    assert!(!stdout.contains("incomplete"), "{stdout}");
    let _ = std::fs::remove_dir_all(&logs);
}

#[test]
fn report_of_a_simulated_only_run_says_what_it_needs() {
    let out = temp("report-sim");
    let (code, stderr) = run(lab()
        .args(["simulate", "e03b", "--seeds", "1", "--out"])
        .arg(&out));
    assert_eq!(code, Some(0), "{stderr}");
    let (code, stderr) = run(lab().args(["report", "--out"]).arg(&out));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("holds no scenario folder of a live run"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("e03a or"),
        "no guessed folder names: {stderr}"
    );
    std::fs::remove_dir_all(&out).unwrap();
}
