//! The seed scenarios simulated: each reproduces its source's set-up, prints its check table
//! with ours beside the published figures, and passes (exit 0). The figures asserted here are
//! the lab's own, on the virtual clock, for seed 42.

mod common;

use std::path::PathBuf;

use common::lab;

fn temp(name: &str) -> PathBuf {
    common::temp("seeds", name)
}

/// `lab simulate NAME --seed 42`: its stdout, after asserting exit 0.
fn simulate(name: &str) -> (String, PathBuf) {
    let dir = temp(name);
    let o = lab()
        .args(["simulate", name, "--seed", "42", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    (out, dir)
}

/// The cells of the check table's row whose metric and strategy start as given.
fn check_row(out: &str, metric: &str, strategy: &str) -> Vec<String> {
    let table = out
        .split("Checks: ours against a source's published figure, the model's, or a threshold:")
        .nth(1)
        .expect("a check table");
    table
        .lines()
        .filter(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<String> = l.split('|').map(|c| c.trim().to_string()).collect();
            cells[1..cells.len() - 1].to_vec()
        })
        .find(|cells| cells.len() >= 2 && cells[0] == metric && cells[1] == strategy)
        .unwrap_or_else(|| panic!("no check row {metric} / {strategy} in\n{out}"))
}

#[test]
fn breaker_reproduces_the_published_run_exactly() {
    let (out, _) = simulate("breaker");
    let sent = check_row(&out, "attempts", "breaker");
    assert_eq!(sent[2..], ["123", "published 123", "exact", "PASS"]);
    let fast = check_row(&out, "failed fast", "breaker");
    assert_eq!(fast[2..], ["117", "published 117", "exact", "PASS"]);
    let t = check_row(&out, "breaker transitions (s)", "breaker");
    assert!(
        t[2].starts_with("0.450 2.450 2.450 4.450 4.450 6.450 6.45")
            && t[3].starts_with("published 0.450 2.450"),
        "{t:?}"
    );
    assert_eq!(t[5], "PASS");
}

#[test]
fn herd_peaks_without_and_with_jitter() {
    let (out, _) = simulate("herd");
    let b = check_row(&out, "peak retries per 10 ms", "B");
    assert_eq!(b[2..], ["1000", "published 1000", "exact", "PASS"]);
    let c = check_row(&out, "peak retries per 10 ms", "C");
    let peak: u64 = c[2].parse().unwrap();
    assert!((120..=200).contains(&peak), "{c:?}");
    assert_eq!(c[5], "PASS");
    // Equal and decorrelated jitter are reported beside them, without a verdict.
    assert_eq!(
        check_row(&out, "peak retries per 10 ms", "E")[5],
        "reported"
    );
    assert_eq!(
        check_row(&out, "peak retries per 10 ms", "F")[5],
        "reported"
    );
}

#[test]
fn budget_without_a_budget_sends_three_attempts_per_request() {
    let (out, _) = simulate("budget");
    let a = check_row(&out, "attempts", "A");
    assert_eq!(a[2..], ["30000", "published 30000", "exact", "PASS"]);
}

#[test]
fn gateway4_is_inside_its_bands_and_prints_each_callers_attempts() {
    let (out, dir) = simulate("gateway4");
    let rows = [
        ("attempts", "immediate-20ms"),
        ("peak arrivals per 200 ms", "immediate-20ms"),
        ("accepted", "immediate-20ms"),
        ("attempts", "jitter-60ms"),
        ("peak per 200 ms / immediate-20ms's", "jitter-60ms"),
        ("accepted", "jitter-60ms"),
        ("attempts / jitter-60ms's", "immediate-20ms"),
        ("distinct retry waits", "jitter-60ms"),
    ];
    for (metric, strategy) in rows {
        let row = check_row(&out, metric, strategy);
        assert_eq!(row[5], "PASS", "{row:?}");
    }
    // The model of the set-up: 17 attempts per caller, every 46 ms (20 ms wait + 26 ms DOWN).
    assert_eq!(check_row(&out, "attempts", "immediate-20ms")[2], "68");
    assert!(
        out.contains("  caller 1 attempt 1: straight away -> DOWN at 26ms"),
        "{out}"
    );
    assert!(
        out.contains("  caller 1 attempt 2: after 20ms -> DOWN at 72ms"),
        "{out}"
    );
    assert!(
        out.contains("  caller 4 attempt 17: after 20ms -> ACCEPTED at"),
        "{out}"
    );
    let kept = dir.join("latest/simulated/gateway4/attempts.txt");
    let text = std::fs::read_to_string(&kept).expect("attempts.txt");
    assert!(
        text.contains("caller 2 attempt 16: after 20ms -> DOWN at 716ms"),
        "{text}"
    );
}

#[test]
fn a_failed_check_is_shown_and_exits_3() {
    // Two callers instead of four: 34 attempts, outside the 56..76 band of the source.
    let dir = temp("fail");
    let o = lab()
        .args([
            "simulate",
            "gateway4",
            "--seed",
            "42",
            "--clients",
            "2",
            "--out",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{out}\n{err}");
    let row = check_row(&out, "attempts", "immediate-20ms");
    assert_eq!(row[2..], ["34", "published 64", "56..76", "FAIL"]);
    // The FAIL line names the cell: metric, strategy, ours, the published figure and the band.
    assert!(
        err.contains(
            "gateway4: FAIL attempts of immediate-20ms: ours 34, published 64, band 56..76\n"
        ),
        "{err}"
    );
}

#[test]
fn gateway4_runs_live_with_its_own_strategies_and_attempt_log() {
    // Live over loopback: the scenario's own strategy ids travel to the swarm, the services
    // and the analyzer; the DOWN answers come after their 26 ms; the checks are printed. The
    // bands are the source's, and a loaded machine may miss one (exit 3): the shape is what is
    // asserted here, the figures are in the report of the lab's own runs.
    let dir = temp("live");
    let o = lab()
        .args(["run", "gateway4", "--seed", "3", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(matches!(o.status.code(), Some(0 | 3)), "{out}\n{err}");
    assert_eq!(
        check_row(&out, "accepted", "immediate-20ms")[2..],
        ["4", "published 4", "exact", "PASS"]
    );
    assert_eq!(
        check_row(&out, "accepted", "jitter-60ms")[2..],
        ["4", "published 4", "exact", "PASS"]
    );
    let live = dir.join("latest/gateway4");
    let server = std::fs::read_to_string(live.join("server-immediate-20ms-seed3.jsonl")).unwrap();
    assert!(
        server.contains("\"down\""),
        "no down answers in the server log"
    );
    let log = std::fs::read_to_string(live.join("attempts.txt")).expect("attempts.txt");
    assert!(
        log.contains("  caller 4 attempt 1: straight away -> DOWN at "),
        "{log}"
    );
    // Each DOWN takes at least its 26 ms.
    let first: u64 = log
        .lines()
        .find(|l| l.starts_with("  caller 1 attempt 1:"))
        .and_then(|l| l.rsplit("at ").next())
        .and_then(|t| t.trim_end_matches("ms").parse().ok())
        .unwrap();
    assert!(first >= 26, "{log}");
}

#[test]
fn the_breaker_sweep_shows_the_knife_edge_of_its_break() {
    // Any latency before a failure is known moves each half-open probe one period later:
    // 123 sent / 117 failed fast on the virtual clock, 120 / 120 from 0.5 ms on (README).
    let dir = temp("sweep");
    let o = lab()
        .args([
            "simulate",
            "breaker",
            "--sweep",
            "E03_DOWN_LATENCY_MS=0,0.5",
            "--out",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    let row = |first: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("| {first} ")) && l.contains("breaker"))
            .map(|l| l.split('|').map(str::trim).collect::<Vec<_>>())
            .unwrap_or_else(|| panic!("no breaker row for {first}: {out}"))
    };
    assert_eq!(row("0")[3..5], ["123", "117"]);
    assert!(row("0")[5].starts_with("0.450 2.450 2.450 4.450"), "{out}");
    assert_eq!(row("0.5")[3..5], ["120", "120"]);
    assert!(
        row("0.5")[5].contains(" 2.500 ") && row("0.5")[5].contains(" 6.600 "),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
