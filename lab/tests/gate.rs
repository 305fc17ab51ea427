//! The CI gate (issue 53, items 3 and 4; docs/ci-gates.md), end to end with real processes:
//!
//! - a `[[threshold]]` that breaks ends `lab run` (live, loopback HTTP) and `lab simulate` with
//!   99, names the threshold, its bound and the value measured, and is in report.md,
//!   summary.json and the `--junit` file, written even though the threshold failed;
//! - one that holds leaves the exit code 0 and is a passed test case;
//! - an `abort_after_s` threshold stops a live run early (long before its scenario ends): 99,
//!   every log kept and ending `complete: false`, the summary marked incomplete, `ABORTED.txt`
//!   naming the threshold;
//! - a bad threshold exits 2 naming the file and the key, and writes nothing;
//! - `lab audit --require` of a row the client does not meet exits 99, with the row a failed
//!   test case of the JUnit file.
//!
//! The scenarios are tiny files written here (3 to 8 s of scenario, 10 clients).

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{lab, temp, text};

/// A short outage: 10 clients, 3 s, down from 1 s to 2 s; strategies A and C; the thresholds
/// given.
fn scenario(dir: &Path, name: &str, thresholds: &str) -> PathBuf {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(
        &path,
        format!(
            "name = \"{name}\"\ntitle = \"Gate\"\ndescription = \"A short outage.\"\n\n\
             [[timeline]]\nphase = \"down\"\nstart_s = 1.0\nend_s = 2.0\n\n\
             [workload]\nclients = 10\nduration_s = 3\n\n\
             [policy]\nstrategies = [\"A\", \"C\"]\n\n{thresholds}"
        ),
    )
    .unwrap();
    path
}

/// A threshold that holds (C's success stays above 0) and one that breaks (A's p99 under 1 ms:
/// loopback answers take more).
const ONE_HOLDS_ONE_BREAKS: &str = "[[threshold]]\nstrategy = \"C\"\nmetric = \
                                    \"success_affected\"\nmore_than = 0\n\n[[threshold]]\n\
                                    strategy = \"A\"\nmetric = \"p99_ms\"\nless_than = 1\n";

fn context(o: &Output) -> String {
    let (out, err) = text(o);
    format!("exit {:?}\nstdout:\n{out}\nstderr:\n{err}", o.status.code())
}

fn latest(out: &Path) -> PathBuf {
    out.join(std::fs::read_link(out.join("latest")).expect("latest is a symlink"))
}

/// The `<testcase>` elements of a JUnit file: (name, failure message if failed).
fn cases(junit: &Path) -> Vec<(String, Option<String>)> {
    let x = std::fs::read_to_string(junit).unwrap();
    assert!(
        x.starts_with("<?xml") && x.ends_with("</testsuites>\n"),
        "{x}"
    );
    let attr = |s: &str, name: &str| -> Option<String> {
        let at = s.find(&format!(" {name}=\""))? + name.len() + 3;
        Some(s[at..at + s[at..].find('"')?].to_string())
    };
    x.split("<testcase ")
        .skip(1)
        .map(|c| {
            let c = format!(" {}", &c[..c.find("<testcase").unwrap_or(c.len())]);
            let failure = c.find("<failure ").and_then(|at| attr(&c[at..], "message"));
            (attr(&c, "name").unwrap(), failure)
        })
        .collect()
}

fn judged_outputs_name_the_broken_threshold(dir: &Path, o: &Output, junit: &Path) {
    assert_eq!(o.status.code(), Some(99), "{}", context(o));
    let (_, err) = text(o);
    assert!(
        err.contains("threshold p99 (ms) of A < 1 broken: measured "),
        "{}",
        context(o)
    );
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("## Thresholds"), "{report}");
    assert!(report.contains("| p99 (ms)"), "{report}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    let rows = summary["thresholds"]
        .as_array()
        .expect("thresholds in summary.json");
    let verdict = |label: &str| {
        rows.iter()
            .find(|r| r["threshold"] == label)
            .unwrap_or_else(|| panic!("{label} in {rows:?}"))["pass"]
            .clone()
    };
    assert_eq!(verdict("p99 (ms) of A < 1"), serde_json::json!(false));
    assert_eq!(
        verdict("success (affected) of C > 0"),
        serde_json::json!(true)
    );
    let cases = cases(junit);
    let case = |name: &str| cases.iter().find(|c| c.0.starts_with(name)).cloned();
    let failed = case("p99 (ms) of A &lt; 1").expect("the broken threshold's case");
    assert!(
        failed
            .1
            .as_deref()
            .is_some_and(|m| m.starts_with("bound &lt; 1, measured ")),
        "{failed:?}"
    );
    assert_eq!(case("success (affected) of C &gt; 0").unwrap().1, None);
}

#[test]
fn a_broken_threshold_ends_a_live_run_with_99_and_is_in_every_output() {
    let dir = temp("gate", "live");
    let file = scenario(&dir, "gatelive", ONE_HOLDS_ONE_BREAKS);
    let junit = dir.join("junit.xml");
    let o = lab()
        .args(["run"])
        .arg(&file)
        .args(["--seed", "42", "--out"])
        .arg(dir.join("out"))
        .arg("--junit")
        .arg(&junit)
        .env("E03_PROGRESS", "off")
        .output()
        .unwrap();
    let run = latest(&dir.join("out")).join("gatelive");
    judged_outputs_name_the_broken_threshold(&run, &o, &junit);
    // `lab analyze` of the same folder judges the same thresholds the same way.
    let again = dir.join("again.xml");
    let a = lab()
        .args(["analyze"])
        .arg(&run)
        .arg("--junit")
        .arg(&again)
        .output()
        .unwrap();
    assert_eq!(a.status.code(), Some(99), "{}", context(&a));
    assert_eq!(cases(&again), cases(&junit));
}

#[test]
fn a_broken_threshold_ends_a_simulation_with_99_and_one_that_holds_with_0() {
    let dir = temp("gate", "sim");
    let file = scenario(&dir, "gatesim", ONE_HOLDS_ONE_BREAKS);
    let junit = dir.join("junit.xml");
    let o = lab()
        .args(["simulate"])
        .arg(&file)
        .args(["--out"])
        .arg(dir.join("out"))
        .arg("--junit")
        .arg(&junit)
        .output()
        .unwrap();
    let run = latest(&dir.join("out")).join("simulated").join("gatesim");
    judged_outputs_name_the_broken_threshold(&run, &o, &junit);
    let holds = scenario(
        &dir,
        "gateholds",
        "[[threshold]]\nstrategy = \"C\"\nmetric = \"peak_100ms\"\nmax = 100000\n",
    );
    let o = lab()
        .args(["simulate"])
        .arg(&holds)
        .args(["--out"])
        .arg(dir.join("out"))
        .arg("--junit")
        .arg(&junit)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", context(&o));
    assert_eq!(
        cases(&junit),
        [("peak 100 ms of C &lt;= 100000 (seed 42)".to_string(), None)]
    );
}

#[test]
fn an_abort_after_s_threshold_stops_a_live_run_early_and_keeps_every_log() {
    let dir = temp("gate", "abort");
    // Down from 1 s to 7 s of a 10 s scenario: A's operations fail from the first second.
    let file = dir.join("gateabort.toml");
    std::fs::write(
        &file,
        "name = \"gateabort\"\ntitle = \"Gate\"\ndescription = \"A long outage.\"\n\n\
         [[timeline]]\nphase = \"down\"\nstart_s = 1.0\nend_s = 7.0\n\n\
         [workload]\nclients = 10\nduration_s = 10\n\n[policy]\nstrategies = [\"A\"]\n\n\
         [[threshold]]\nstrategy = \"A\"\nmetric = \"success_affected\"\nmore_than = 0.9\n\
         abort_after_s = 1\n",
    )
    .unwrap();
    let junit = dir.join("junit.xml");
    let o = lab()
        .args(["run"])
        .arg(&file)
        .args(["--seed", "42", "--out"])
        .arg(dir.join("out"))
        .arg("--junit")
        .arg(&junit)
        .env("E03_PROGRESS", "off")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(99), "{}", context(&o));
    let (_, err) = text(&o);
    assert!(
        err.contains(
            "run aborted by threshold success (affected) of A > 0.9: bound > 0.9, measured "
        ),
        "{}",
        context(&o)
    );
    let run = latest(&dir.join("out")).join("gateabort");
    assert!(std::fs::read_to_string(run.join("ABORTED.txt"))
        .unwrap()
        .contains("success (affected) of A > 0.9"));
    // Every log kept, whole, ending with run_end complete: false, well before the scenario's
    // 10 s: the abort came from the figures, not from the end of the run.
    for prefix in ["client-A-seed42", "server-A-seed42"] {
        let records = common::log_records(&run, prefix);
        let end = records.last().unwrap();
        assert_eq!(end["type"], "run_end", "{prefix}: {end}");
        assert_eq!(end["data"]["complete"], false, "{prefix}: {end}");
        if prefix.starts_with("client") {
            let t = end["data"]["t_us"].as_u64().unwrap();
            assert!(t < 7_000_000, "{prefix} ended at {t} us: not stopped early");
        }
    }
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["complete"], false);
    let cases = cases(&junit);
    assert!(
        cases
            .iter()
            .any(|c| c.0 == "success (affected) of A &gt; 0.9 (seed 42)"
                && c.1
                    .as_deref()
                    .is_some_and(|m| m.starts_with("run aborted by threshold"))),
        "{cases:?}"
    );
}

#[test]
fn a_bad_threshold_exits_2_naming_the_file_and_the_key() {
    let dir = temp("gate", "bad");
    for (threshold, said) in [
        (
            "[[threshold]]\nstrategy = \"C\"\nmetric = \"p99_ms\"\nbelow = 5\n",
            "key `below`: unknown key `below` in [[threshold]]",
        ),
        (
            "[[threshold]]\nstrategy = \"C\"\nmetric = \"p99_ms\"\nmax = 5\nabort_after_s = \"soon\"\n",
            "key `abort_after_s`: abort_after_s = \"soon\": expected a number of seconds",
        ),
        (
            "[[threshold]]\nstrategy = \"Z\"\nmetric = \"p99_ms\"\nmax = 5\n",
            "key `strategy`: strategy = \"Z\": expected a strategy the scenario runs (A, C)",
        ),
    ] {
        let file = scenario(&dir, "gatebad", threshold);
        let junit = dir.join("junit.xml");
        let out = dir.join("out");
        for cmd in ["run", "simulate"] {
            let o = lab()
                .arg(cmd)
                .arg(&file)
                .arg("--out")
                .arg(&out)
                .arg("--junit")
                .arg(&junit)
                .output()
                .unwrap();
            assert_eq!(o.status.code(), Some(2), "{}", context(&o));
            let (_, err) = text(&o);
            assert!(
                err.starts_with(&format!("lab: scenario file {}:", file.display()))
                    && err.contains(said),
                "{cmd}: {}",
                context(&o)
            );
            assert!(!out.exists() && !junit.exists(), "{cmd} wrote something");
        }
    }
}

#[test]
fn an_unmet_audit_requirement_exits_99_with_its_row_a_failed_case() {
    let dir = temp("gate", "audit");
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/audit_clients/good.py");
    let junit = dir.join("junit.xml");
    // Without --attempts the last row is a WARN: required PASS, it is not met.
    let o = lab()
        .args(["audit", "--out"])
        .arg(dir.join("out"))
        .args([
            "--require",
            "other-layers=PASS",
            "--require",
            "idempotency=pass",
        ])
        .arg("--junit")
        .arg(&junit)
        .arg("--")
        .arg("python3")
        .arg(&client)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(99), "{}", context(&o));
    let (_, err) = text(&o);
    assert!(
        err.contains("lab: audit: required other layers=PASS not met: WARN ("),
        "{}",
        context(&o)
    );
    let cases = cases(&junit);
    assert_eq!(cases.len(), 9, "one case per scorecard row: {cases:?}");
    for (name, failure) in &cases {
        assert_eq!(
            failure.is_some(),
            name == "5. other layers",
            "{name}: {failure:?}"
        );
    }
    // A row the scorecard does not have is bad input, before anything runs.
    let o = lab()
        .args(["audit", "--require", "jitter=PASS", "--out"])
        .arg(dir.join("out2"))
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", context(&o));
    assert!(text(&o)
        .1
        .contains("invalid --require \"jitter=PASS\": no scorecard row"));
    assert!(!dir.join("out2").exists());
}
