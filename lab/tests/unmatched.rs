//! Issue 54: an overloaded run was a full report. `lab run e03b --clients 20000` exited 1
//! ("client attempts and server arrivals do not match") but wrote a report whose headline gave
//! 4.8% success, with the warning at line 83 of report.md. Here the same disagreement is made
//! on purpose (one arrival taken out of a finished run's server log, as an overloaded machine
//! loses one), and the run's analysis must say it first and judge nothing: a banner at the top
//! of the terminal, report.md and report.html, `trust: "unmatched"` in summary.json, exit 1.

mod common;

use common::{lab, temp, text};

#[test]
fn a_run_whose_attempts_and_arrivals_disagree_gives_no_verdict_and_says_so_first() {
    let out = temp("unmatched", "run");
    let o = lab()
        .args(["run", "e03a", "--clients", "10", "--duration-s", "2"])
        .args(["--strategies", "B,C", "--seeds", "1,2", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    let dir = out.join("latest/e03a");
    // One arrival of C's seed 2 lost between the swarm and the log, the log otherwise whole
    // (its run_end counts one record fewer).
    let log = dir.join("server-C-seed2.jsonl");
    let lines: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let lost = lines
        .iter()
        .rposition(|l| l.contains(r#""type":"arrival""#))
        .expect("an arrival");
    let kept: Vec<String> = lines
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != lost)
        .map(|(_, l)| {
            if l.contains(r#""type":"run_end""#) {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                let n = v["data"]["records"].as_u64().unwrap();
                l.replace(
                    &format!(r#""records":{n}"#),
                    &format!(r#""records":{}"#, n - 1),
                )
            } else {
                l.clone()
            }
        })
        .collect();
    std::fs::write(&log, kept.join("\n") + "\n").unwrap();
    let o = lab().arg("analyze").arg(&dir).output().unwrap();
    let (stdout, stderr) = text(&o);
    let context = format!("stdout:\n{stdout}\nstderr:\n{stderr}");
    assert_eq!(o.status.code(), Some(1), "{context}");
    assert!(stderr.contains("do not match"), "{context}");
    let first = stdout.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    assert!(
        first.starts_with("UNMATCHED RUN, NO VERDICTS"),
        "first line: {first}\n{context}"
    );
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    let lines: Vec<&str> = report.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(
        lines[1].starts_with("UNMATCHED RUN, NO VERDICTS"),
        "{report}"
    );
    for (what, text) in [
        ("stdout", &stdout),
        ("report.md", &report),
        ("report.html", &html),
    ] {
        assert!(text.contains("UNMATCHED RUN, NO VERDICTS"), "{what}");
        for verdict in [
            ", measured)",
            "within run-to-run noise",
            "PASS",
            "Best success",
        ] {
            assert!(
                !text.contains(verdict),
                "{what} judges ({verdict}):\n{text}"
            );
        }
    }
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["trust"], "unmatched");
    let _ = std::fs::remove_dir_all(&out);
}
