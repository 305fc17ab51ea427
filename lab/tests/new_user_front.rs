//! Issue 54, item 6, "a quiet, even front", as a new user met it: error prefixes that varied
//! (`dependency-service:`, `error:`, `lab list:`), `lab simulate failover` printing 150 rows of
//! 100 ms windows, and no way for a script to take a run's summary from stdout. Beside
//! `new_user.rs`, which pins the rest of what that user found.

mod common;

use std::path::Path;
use std::process::Output;

use common::{lab, temp, text};

/// A short live E03-B (2 s, 20 clients, strategies A and C) with the flags given.
const SHORT: &[&str] = &[
    "--seed",
    "1",
    "--strategies",
    "A,C",
    "--clients",
    "20",
    "--duration-s",
    "2",
    "--think-min-ms",
    "200",
    "--think-max-ms",
    "400",
    "--freeze-start-s",
    "0.8",
    "--freeze-end-s",
    "1.2",
    "--recovery-end-s",
    "1.5",
];

/// The lines of `stderr` that name a program the user did not type, or clap's own `error:`.
fn foreign_prefixes(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| {
            ["error:", "ERROR:", "warning:", "dependency-service:", "client-swarm:", "health:"]
                .iter()
                .any(|p| l.starts_with(p))
                || l.starts_with("lab: lab")
                || l.starts_with("lab: error")
                // `lab list: `, `lab serve: `: a prefix of its own per command.
                || l.split_once(':').is_some_and(|(head, _)| {
                    head.starts_with("lab ") && head.split(' ').count() == 2
                })
        })
        .collect()
}

/// Before: `lab list nope.toml` said `lab list: ...`, `lab serve --listen nope` said
/// `dependency-service: ...`, `lab analyze /nowhere` and every bad flag said `error: ...`,
/// `lab swarm` said `client-swarm: ...`. Now every command's error starts with `lab: `, once,
/// and the exit codes are as before (bad input 2); `lab proxy` and `lab proxy --http` too
/// (they said `lab proxy: ...`).
#[test]
fn every_command_says_its_errors_after_one_lab_prefix() {
    let out = temp("front", "prefix");
    let missing = out.join("missing");
    let missing = missing.to_str().unwrap();
    let cases: &[&[&str]] = &[
        &["bogus"],
        &["run", "--bogus"],
        &["run", "e03b", "--seeds", "abc", "--out", missing],
        &["simulate", "e03b", "--strategies", "Z", "--out", missing],
        &["compare", "e03b", "--bogus"],
        &["list", "nope.toml"],
        &["replica", "nope"],
        &["report", "--out", missing],
        &["map", "--bogus"],
        &["soak", "--bogus"],
        &["audit", "--bogus"],
        &["serve", "--listen", "nope"],
        &["serve", "--bogus"],
        &["hop", "--bogus"],
        &["swarm", "--bogus"],
        &["swarm", "--targets", "x", "--out", missing],
        &["client", "--bogus"],
        &["analyze", missing],
        &["analyze", "--bogus"],
        &["proxy", "--bogus", "1"],
        &["proxy", "--http", "--bogus"],
    ];
    for args in cases {
        let o = lab().args(*args).output().unwrap();
        let (_, stderr) = text(&o);
        assert_eq!(o.status.code(), Some(2), "lab {args:?}: {stderr}");
        assert!(stderr.starts_with("lab: "), "lab {args:?}: {stderr}");
        assert_eq!(
            foreign_prefixes(&stderr),
            Vec::<&str>::new(),
            "lab {args:?}"
        );
    }
    // A failure inside `lab run`'s swarm child (its metrics port is taken): the child's error
    // and the lab's each start with `lab: `, none twice, and the run fails with 1.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let o = lab()
        .args(["run", "e03b", "--seed", "1", "--strategies", "A", "--out"])
        .arg(&out)
        .env("E03_METRICS_LISTEN", &addr)
        .output()
        .unwrap();
    let (_, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "\nlab: cannot listen on --metrics-listen (E03_METRICS_LISTEN) {addr}"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("\nlab: the client swarm failed"),
        "{stderr}"
    );
    assert_eq!(foreign_prefixes(&stderr), Vec::<&str>::new());
    let _ = std::fs::remove_dir_all(&out);
}

/// The rows of the 100 ms series table in `stdout` (`| 8.5 s | ...`).
fn series_rows(stdout: &str) -> usize {
    stdout
        .lines()
        .filter(|l| {
            l.strip_prefix("| ")
                .and_then(|r| r.split_once(" s "))
                .is_some_and(|(t, _)| t.trim().parse::<f64>().is_ok())
        })
        .count()
}

/// The one line that says where the series went, and the file it names.
fn series_pointer(stdout: &str) -> Option<String> {
    let joined = stdout.replace('\n', " ");
    let at = joined.find("Arrivals per 100 ms window around the outage (")?;
    let rest = &joined[at..];
    let file = rest.split(": in ").nth(1)?.split(" and report.md").next()?;
    Some(file.to_string())
}

/// Before: `lab simulate failover` printed 184 lines, 135 of them 100 ms windows. Now the
/// terminal says in one line where the series is (the CSV exists) and prints it with
/// `--series`.
#[test]
fn a_simulation_keeps_its_long_series_in_the_files_unless_asked() {
    let out = temp("front", "series-sim");
    let o = lab()
        .args(["simulate", "failover", "--seeds", "1", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert_eq!(series_rows(&stdout), 0, "{stdout}");
    assert!(stdout.lines().count() < 80, "{stdout}");
    let csv = series_pointer(&stdout).expect("a line says where the series is");
    assert!(Path::new(&csv).is_file(), "{csv}: {stdout}");
    let o = lab()
        .args(["simulate", "failover", "--seeds", "1", "--series", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let (stdout, _) = text(&o);
    assert!(series_rows(&stdout) >= 100, "{stdout}");
    assert_eq!(series_pointer(&stdout), None);
    let _ = std::fs::remove_dir_all(&out);
}

/// `lab run`, `lab analyze` of its folder and `lab compare` leave the series in the files too,
/// and print it with `--series`.
#[test]
fn live_runs_and_their_analysis_keep_the_series_in_the_files_unless_asked() {
    let out = temp("front", "series-live");
    let run = |extra: &[&str]| -> Output {
        lab()
            .arg("run")
            .arg("e03b")
            .args(SHORT)
            .args(extra)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap()
    };
    let o = run(&[]);
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert_eq!(series_rows(&stdout), 0, "{stdout}");
    let csv = series_pointer(&stdout).expect("a line says where the series is");
    assert!(Path::new(&csv).is_file(), "{csv}");
    let dir = out.join("latest/e03b");
    let o = lab().arg("analyze").arg(&dir).output().unwrap();
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert_eq!(series_rows(&stdout), 0, "{stdout}");
    assert!(series_pointer(&stdout).is_some(), "{stdout}");
    let o = lab()
        .arg("analyze")
        .arg(&dir)
        .arg("--series")
        .output()
        .unwrap();
    let (stdout, _) = text(&o);
    assert!(series_rows(&stdout) >= 10, "{stdout}");
    let o = run(&["--series"]);
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(series_rows(&stdout) >= 10, "{stdout}");
    let o = lab()
        .arg("compare")
        .arg("e03b")
        .args(SHORT)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert_eq!(series_rows(&stdout), 0, "{stdout}");
    let _ = std::fs::remove_dir_all(&out);
}

/// Every line of `stdout` as JSON; the test fails on any line that is not.
fn json_lines(stdout: &str) -> Vec<serde_json::Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// Before: a script had to read `summary.json` from a folder whose name it parsed from the
/// terminal. Now `--json` prints each scenario's summary.json on a line of stdout, and nothing
/// else there; the tables go to stderr.
#[test]
fn json_prints_each_summary_on_stdout_and_nothing_else() {
    let out = temp("front", "json");
    let o = lab()
        .args(["simulate", "e03a,e03b", "--seeds", "1", "--json", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    let lines = json_lines(&stdout);
    assert_eq!(lines.len(), 2, "{stdout}");
    for (line, name) in lines.iter().zip(["e03a", "e03b"]) {
        assert_eq!(line["scenario"], name, "{line}");
        let file = out.join("latest/simulated").join(name).join("summary.json");
        let kept: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
        assert_eq!(line, &kept);
    }
    assert!(stderr.contains("How operations fared"), "{stderr}");
    let o = lab()
        .arg("run")
        .arg("e03b")
        .args(SHORT)
        .arg("--json")
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    let lines = json_lines(&stdout);
    assert_eq!(lines.len(), 1, "{stdout}");
    let kept: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("latest/e03b/summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(lines[0], kept);
    assert_eq!(lines[0]["simulated"], false);
    // What has no summary.json is refused before anything runs.
    for args in [
        &["simulate", "amplification", "--json"][..],
        &["simulate", "e03b", "--json", "--sweep", "clients=10,20"][..],
    ] {
        let o = lab()
            .args(args)
            .arg("--out")
            .arg(out.join("x"))
            .output()
            .unwrap();
        let (stdout, stderr) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.starts_with("lab: invalid --json"), "{stderr}");
        assert!(stdout.is_empty() && !out.join("x").exists(), "{stdout}");
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// Before: `lab run --help` was 89 lines, every run parameter with its env var. Now `--help`
/// shows the common flags, a line each, and points at `--help-all` and docs/parameters.md;
/// `--help-all` shows every flag.
#[test]
fn help_is_short_and_help_all_has_every_flag() {
    for cmd in ["run", "simulate", "compare"] {
        let o = lab().args([cmd, "--help"]).output().unwrap();
        let (short, _) = text(&o);
        assert_eq!(o.status.code(), Some(0), "lab {cmd} --help");
        assert!(short.lines().count() <= 30, "lab {cmd} --help:\n{short}");
        for needed in [
            "--help-all",
            "docs/parameters.md",
            "--seeds",
            "--strategies",
            "--out",
        ] {
            assert!(
                short.contains(needed),
                "lab {cmd} --help lacks {needed}:\n{short}"
            );
        }
        assert!(!short.contains("--workers"), "lab {cmd} --help:\n{short}");
        let o = lab().args([cmd, "--help-all"]).output().unwrap();
        let (all, _) = text(&o);
        assert_eq!(o.status.code(), Some(0), "lab {cmd} --help-all");
        for needed in [
            "--workers",
            "--queue",
            "--run-id",
            "--policies",
            "E03_WORKERS",
        ] {
            assert!(all.contains(needed), "lab {cmd} --help-all lacks {needed}");
        }
    }
}
