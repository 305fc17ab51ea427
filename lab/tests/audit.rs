//! `lab audit` end to end (issue 26): real client processes (Python, standard library) against the
//! lab's probes over loopback, graded from the log alone. A client that breaks every item of seed
//! 004's checklist gets FAIL on every row and exit 1; one that follows it gets PASS everywhere and
//! exit 0; a stopped audit keeps its log, says it is incomplete and grades nothing.

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use common::{lab, temp, text};

fn client(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/audit_clients")
        .join(name)
        .display()
        .to_string()
}

/// The one run folder `lab audit` made under `out`.
fn run_dir(out: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() && !p.ends_with("latest"))
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs[0].clone()
}

fn verdicts(dir: &Path) -> Vec<(String, String)> {
    let card: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("scorecard.json")).unwrap())
            .unwrap();
    card["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["check"].as_str().unwrap().to_string(),
                r["verdict"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

const CHECKS: [&str; 9] = [
    "classification",
    "idempotency",
    "attempt timeout",
    "deadline",
    "backoff",
    "Retry-After",
    "amplification",
    "budget",
    "other layers",
];

fn audit(name: &str, attempts: &str) -> (Option<i32>, String, PathBuf) {
    let out = temp("audit", name);
    let o = lab()
        .args(["audit", "--out"])
        .arg(&out)
        .args(["--attempts", attempts, "--", "python3"])
        .arg(client(&format!("{name}.py")))
        .output()
        .expect("lab runs");
    let (stdout, stderr) = text(&o);
    (
        o.status.code(),
        format!("{stdout}\n{stderr}"),
        run_dir(&out),
    )
}

#[test]
fn a_client_that_breaks_the_checklist_fails_every_row() {
    let (code, said, dir) = audit("bad", "5");
    assert_eq!(code, Some(1), "{said}");
    // Nothing was required (no --require): no line says a requirement was not met.
    assert!(!said.contains("required"), "{said}");
    let got = verdicts(&dir);
    // The budget row never FAILs (a missing budget is advice): WARN.
    let want: Vec<(String, String)> = CHECKS
        .iter()
        .map(|&c| {
            let v = if c == "budget" { "WARN" } else { "FAIL" };
            (c.to_string(), v.to_string())
        })
        .collect();
    assert_eq!(got, want, "{said}");
    // The evidence names what the client did.
    for words in [
        "404: 5 attempts (retried)",
        "a new key per attempt",
        "stopped at the probe's limit (12 s)",
        "immediate retries",
        "early (more than 5 ms before): 20 of 20 (100%)",
        "10.0 per operation",
        "operations told apart by process",
        "no budget or breaker seen",
        "the client claims 5: another layer retries too",
    ] {
        assert!(said.contains(words), "{words:?} not in\n{said}");
    }
    assert!(std::fs::read_to_string(dir.join("scorecard.md"))
        .unwrap()
        .contains("Make the idempotency key once per operation"));
}

#[test]
fn a_client_that_follows_the_checklist_passes_every_row() {
    let (code, said, dir) = audit("good", "4");
    assert_eq!(code, Some(0), "{said}");
    let got = verdicts(&dir);
    let want: Vec<(String, String)> = CHECKS
        .iter()
        .map(|c| (c.to_string(), "PASS".to_string()))
        .collect();
    assert_eq!(got, want, "{said}");
    // Every request is in the log, and the client's own output is kept.
    let log = std::fs::read_to_string(dir.join("audit.jsonl")).unwrap();
    assert!(log
        .lines()
        .next()
        .unwrap()
        .contains(r#""event":"audit_start""#));
    assert!(log.lines().last().unwrap().contains(r#""complete":true"#));
    let requests = log
        .lines()
        .filter(|l| l.contains(r#""event":"request""#))
        .count();
    assert!(requests >= 13, "{requests} requests");
    let out = std::fs::read_to_string(dir.join("clients/timeout-0.log")).unwrap();
    assert_eq!(out.trim(), "ok");
}

#[test]
fn a_stopped_audit_keeps_its_log_marked_incomplete_and_grades_nothing() {
    let out = temp("audit", "stopped");
    let child = lab()
        .args(["audit", "--out"])
        .arg(&out)
        .args(["--", "python3"])
        .arg(client("bad.py"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The bad client hangs on the timeout probe for 12 s; stop the audit before that ends.
    let dir = loop {
        std::thread::sleep(Duration::from_millis(200));
        if let Ok(d) = std::fs::read_dir(&out) {
            if let Some(d) = d
                .map(|e| e.unwrap().path())
                .find(|p| p.is_dir() && !p.ends_with("latest"))
            {
                if d.join("clients/timeout-0.log").exists() {
                    break d;
                }
            }
        }
    };
    std::thread::sleep(Duration::from_millis(500));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{:?}", text(&o));
    assert!(!dir.join("scorecard.json").exists());
    assert!(dir.join("STOPPED.txt").exists());
    let log = std::fs::read_to_string(dir.join("audit.jsonl")).unwrap();
    assert!(log.lines().last().unwrap().contains(r#""complete":false"#));
    // The held request of the timeout probe is logged too, given up when the client was stopped.
    assert!(log.contains(r#""probe":"timeout""#), "{log}");
}

#[test]
fn bad_input_exits_2_and_writes_nothing() {
    let out = temp("audit", "badinput").join("out");
    for args in [
        &["--attempts", "many", "--", "true"][..],
        &["--", "no-such-client-e03"][..],
        &[][..],
    ] {
        let o = lab()
            .args(["audit", "--out"])
            .arg(&out)
            .args(args)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {:?}", text(&o));
    }
    assert!(!out.exists(), "nothing is created on bad input");
}

#[test]
fn lab_client_runs_one_strategy_and_names_what_is_wrong() {
    for (args, env, said) in [
        (
            &["client", "--strategies", "C,D"][..],
            &[("E03_TARGET_URL", "http://127.0.0.1:9/x")][..],
            "E03_STRATEGIES (--strategies): lab client runs exactly one strategy",
        ),
        (
            &["client", "--strategies", "C"][..],
            &[][..],
            "E03_TARGET_URL (--url): not given",
        ),
        (
            &["client", "--strategies", "C"][..],
            &[
                ("E03_TARGET_URL", "http://127.0.0.1:9/x"),
                ("E03_TARGET_METHD", "POST"),
            ][..],
            "E03_TARGET_METHD",
        ),
    ] {
        let o = lab()
            .args(args)
            .env_remove("E03_TARGET_URL")
            .envs(env.iter().copied())
            .output()
            .unwrap();
        let (_, stderr) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(said), "{args:?}: {stderr}");
    }
}

/// `--wait`: the lab runs nothing; the user's client is pointed at each URL the lab prints. Here
/// the test plays the user: it reads each probe's line and runs the good client at its URLs.
#[test]
fn with_wait_the_user_drives_the_client_at_the_printed_urls() {
    use std::io::{BufRead, BufReader};
    let out = temp("audit", "wait");
    let mut child = lab()
        .args(["audit", "--wait", "--attempts", "4", "--out"])
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let mut probes = 0;
    for line in stderr.lines() {
        let line = line.unwrap();
        // lab: probe NAME: point N client(s) at URL.. (method M, K operation(s) each)
        let Some(rest) = line.strip_prefix("lab: probe ") else {
            continue;
        };
        let (urls, how) = rest
            .split_once(" at ")
            .unwrap()
            .1
            .split_once(" (method ")
            .unwrap();
        let (method, ops) = how.split_once(", ").unwrap();
        let ops = ops.split(' ').next().unwrap();
        let clients: Vec<_> = urls
            .split(' ')
            .map(|url| {
                std::process::Command::new("python3")
                    .arg(client("good.py"))
                    .env("E03_TARGET_URL", url)
                    .env("E03_TARGET_METHOD", method)
                    .env("E03_OPERATIONS", ops)
                    .stdout(Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for mut c in clients {
            c.wait().unwrap();
        }
        probes += 1;
    }
    let o = child.wait_with_output().unwrap();
    assert_eq!(probes, 13);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let got = verdicts(&run_dir(&out));
    assert!(got.iter().all(|(_, v)| v == "PASS"), "{got:?}");
    let log = std::fs::read_to_string(run_dir(&out).join("audit.jsonl")).unwrap();
    assert!(
        log.contains(r#""command":[]"#),
        "the user's client is no command of the lab's"
    );
}
