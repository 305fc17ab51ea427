//! What a new user found (issue 54, "Outputs that never overstate"): words that say more than
//! the figures do. Each case is a simulated run (deterministic, in a fraction of a second)
//! whose outputs are read as the user reads them: `report.md`, `report.html`, `summary.json`.

mod common;

use std::path::{Path, PathBuf};

use common::{lab, temp, text};

/// `lab simulate ARGS --out OUT`: the scenario's output folder, after a run that exited 0 or
/// 3 (a failed check still writes every output).
fn simulate(tag: &str, args: &[&str]) -> PathBuf {
    let out = temp("words", tag);
    let o = lab()
        .arg("simulate")
        .args(args)
        .arg("--out")
        .arg(&out)
        .output()
        .expect("lab runs");
    let (stdout, stderr) = text(&o);
    assert!(
        matches!(o.status.code(), Some(0 | 3)),
        "{args:?}: {stdout}{stderr}"
    );
    let dir = out.join("latest/simulated").join(args[0]);
    assert!(dir.join("report.md").is_file(), "{stdout}{stderr}");
    dir
}

fn read(dir: &Path, file: &str) -> String {
    std::fs::read_to_string(dir.join(file)).unwrap()
}

/// The line of `report` that compares `pair` ("no-hedge vs hedge-50ms:").
fn pair_line<'a>(report: &'a str, pair: &str) -> &'a str {
    report
        .lines()
        .find(|l| l.starts_with(pair))
        .unwrap_or_else(|| panic!("no line {pair:?} in {report}"))
}

/// `hedge` over seeds 1-5: no hedging's p99 is 20 ms in some seeds and 1,000 ms in others, a
/// hedge's 20 to 70 ms. A 558 ms difference inside the first spread and outside the second was
/// called "within run-to-run noise"; it is neither measured nor noise.
#[test]
fn a_difference_inside_one_spread_only_is_not_called_noise() {
    let dir = simulate("hedge", &["hedge", "--seeds", "1-5"]);
    let report = read(&dir, "report.md");
    let line = pair_line(&report, "no-hedge vs hedge-50ms:");
    let p99 = &line[line.find("p99 latency").expect(line)..];
    assert!(p99.starts_with("p99 latency 608 ms vs 50 ms"), "{line}");
    assert!(!p99.contains("noise"), "{line}");
    assert!(!p99.contains("measured"), "{line}");
    assert!(
        p99.contains("not settled: one strategy's seeds vary more than the difference"),
        "{line}"
    );
    // Both spreads wider than the difference: noise, as before.
    let both = pair_line(&report, "hedge-50ms vs hedge-p95:");
    assert!(
        both.contains(
            "p99 latency 50 ms vs 32 ms (-18 ms, hedge-p95 better, within run-to-run noise)"
        ),
        "{both}"
    );
    // One seed gives no verdict at all: neither measured, noise nor unsettled.
    let one = read(&simulate("hedge1", &["hedge", "--seeds", "1"]), "report.md");
    let line = pair_line(&one, "no-hedge vs hedge-50ms:");
    for word in ["measured", "noise", "settled"] {
        assert!(!line.contains(word), "{word}: {line}");
    }
    assert!(one.contains("One seed cannot tell a difference"), "{one}");
}
