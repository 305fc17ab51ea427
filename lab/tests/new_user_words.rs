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

/// The item of `report`'s list of pairs that compares `pair` ("no-hedge vs hedge-50ms:").
fn pair_line<'a>(report: &'a str, pair: &str) -> &'a str {
    report
        .lines()
        .find_map(|l| l.strip_prefix("- ").filter(|l| l.starts_with(pair)))
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

/// `ratelimit`: at six items a step the rate limit answers 429 hundreds of times, and the
/// rejections appeared in no table and no summary field. The clients' answers are counted per
/// status and strategy: in the report's table and in `summary.json`'s `runs[].statuses`.
#[test]
fn a_rate_limit_s_429s_are_counted_per_strategy_in_a_table_and_the_summary() {
    let dir = simulate("ratelimit", &["ratelimit", "--seeds", "1"]);
    let report = read(&dir, "report.md");
    let at = report.find("## Answers by status").expect("a status table");
    let table: Vec<&str> = report[at..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .collect();
    let cells = |l: &str| -> Vec<String> { l.split('|').map(|c| c.trim().to_string()).collect() };
    let head = cells(table[0]);
    let col = head.iter().position(|h| h == "429").expect("a 429 column");
    assert!(head.iter().any(|h| h == "200"), "{head:?}");
    let row = table
        .iter()
        .find(|l| l.starts_with("| fixed-L6 "))
        .expect("fixed-L6's row");
    let shown: u64 = cells(row)[col].parse().unwrap();
    let summary: serde_json::Value = serde_json::from_str(&read(&dir, "summary.json")).unwrap();
    let run = summary["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["strategy"] == "fixed-L6")
        .unwrap();
    let in_summary = run["statuses"]["429"].as_u64().expect("statuses.429");
    assert_eq!(shown, in_summary);
    assert!(in_summary > 100, "{in_summary}");
    // Every answer is counted once: the statuses sum to the attempts that got one.
    let answered: u64 = run["statuses"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    let unanswered: u64 = run["no_answer"]
        .as_object()
        .map_or(0, |o| o.values().map(|v| v.as_u64().unwrap()).sum());
    assert_eq!(
        answered + unanswered,
        run["total_requests"].as_u64().unwrap(),
        "{run}"
    );
    // A scenario whose answers are all 200s has no table (nothing to tell apart).
    let hedge = read(
        &simulate("hedge-ok", &["hedge", "--seeds", "1"]),
        "report.md",
    );
    assert!(!hedge.contains("Answers by status"), "{hedge}");
}

/// `lab analyze --server-log` gave arrivals and peaks only: what the dependency answered
/// appeared nowhere. It prints the responses per status and the time from each arrival to its
/// response (matched by `seq`), and writes both into `load.json`.
#[test]
fn a_server_log_s_answers_are_counted_by_status_with_latency_percentiles() {
    let logs = temp("words", "serve");
    let mut serve = lab();
    serve
        .args(["serve", "--scenario", "budget", "--log-dir"])
        .arg(&logs);
    let (child, work) = common::serve_standalone(serve);
    for _ in 0..3 {
        let answer = common::http(&work, "GET", "/work", "");
        assert!(answer.starts_with("HTTP/1.1 503"), "{answer:.80}");
    }
    assert_eq!(common::terminate(child), Some(0));
    let out = temp("words", "serve-out");
    let o = lab()
        .args(["analyze", "--server-log"])
        .arg(logs.join("standalone/server-standalone.jsonl"))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains("What it answered, by HTTP status:"),
        "{stdout}"
    );
    assert!(stdout.contains("| 503    |       3 | 100.0% |"), "{stdout}");
    assert!(
        stdout.contains("Arrival to response (matched by seq)"),
        "{stdout}"
    );
    let load: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("load.json")).unwrap()).unwrap();
    let answers = &load["answers"];
    assert_eq!(answers["statuses"]["503"], 3, "{load}");
    assert_eq!(answers["answered"], 3, "{load}");
    assert_eq!(answers["unmatched"], 0, "{load}");
    let p50 = answers["p50_ms"].as_f64().unwrap();
    let max = answers["max_ms"].as_f64().unwrap();
    assert!(p50 > 0.0 && p50 <= max, "{load}");
    let _ = std::fs::remove_dir_all(logs);
    let _ = std::fs::remove_dir_all(out);
}

/// The cells of the check table's rows in `report.md`, the header first.
fn check_rows(report: &str) -> Vec<Vec<String>> {
    let at = report
        .find("## Checks: ours against a source's published figure, the model's, or a threshold")
        .expect("a check table");
    report[at..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .filter(|l| !l.starts_with("|:"))
        .map(|l| {
            let cells: Vec<String> = l.split('|').map(|c| c.trim().to_string()).collect();
            cells[1..cells.len() - 1].to_vec()
        })
        .collect()
}

/// `failover`'s check rows read `goodput / capacity | 0.30 | published 0.60 | <= 0.5 | PASS`:
/// 0.60 was the load offered, no source's figure, and the recovery verdicts were the model's.
/// Each row names what ours is compared with: `threshold` for a bound alone, `model` for the
/// model's figure, `published` only for a source's (hedge: Tail at Scale's 24.3).
#[test]
fn a_check_names_whose_figure_it_compares_with() {
    let rows = check_rows(&read(
        &simulate("failover", &["failover", "--seeds", "1"]),
        "report.md",
    ));
    assert_eq!(
        rows[0],
        ["metric", "strategy", "ours", "against", "band", "check"]
    );
    let row = |metric: &str, strategy: &str| {
        rows.iter()
            .find(|r| r[0] == metric && r[1] == strategy)
            .unwrap_or_else(|| panic!("no row {metric} / {strategy}: {rows:?}"))
            .clone()
    };
    assert_eq!(
        row("goodput / capacity", "no-retry")[3..],
        ["threshold", "<= 0.5", "PASS"]
    );
    assert_eq!(
        row("recovered after the trigger (1) or not (0)", "C")[3..],
        ["model 0", "exact", "PASS"]
    );
    assert!(
        rows.iter().all(|r| !r[3].contains("published")),
        "failover has no source's figure: {rows:?}"
    );
    let hedge = check_rows(&read(
        &simulate("hedge-checks", &["hedge", "--seeds", "1"]),
        "report.md",
    ));
    let tail = hedge
        .iter()
        .find(|r| r[0] == "no-hedge's p99.9 / this p99.9")
        .expect("hedge's p99.9 row");
    assert_eq!(tail[3..], ["published 24.30", ">= 5", "PASS"]);
}

/// report.html had ten near-identical "A vs B" paragraphs, each highlighted as the conclusion,
/// and no single conclusion at the top. It opens with one: what the run shows in two or three
/// sentences (the best on each measure, the scenario's own finding, how many differences the
/// seeds settle), before the tables; the pairs are one list below the comparison.
#[test]
fn report_html_opens_with_one_conclusion_and_lists_the_pairs_below() {
    let dir = simulate("e03b", &["e03b", "--seeds", "1-3"]);
    let html = read(&dir, "report.html");
    assert_eq!(html.matches("class=\"conclusion\"").count(), 1, "{html}");
    let top = html.find("<p class=\"conclusion\">").unwrap();
    let comparison = html.find("<h2>Comparison</h2>").expect("a comparison");
    assert!(top < comparison, "the conclusion opens the page");
    let conclusion = &html[top..top + html[top..].find("</p>").unwrap()];
    let sentences = conclusion.matches(". ").count() + 1;
    assert!((2..=3).contains(&sentences), "{conclusion}");
    assert!(
        conclusion.starts_with("<p class=\"conclusion\">Best success: B"),
        "{conclusion}"
    );
    assert!(
        conclusion.contains("C cuts B&#39;s 100 ms peak"),
        "{conclusion}"
    );
    assert!(
        conclusion.ends_with(
            "Over 3 seeds, of the 24 differences compared below, 22 measured, 2 not settled."
        ),
        "{conclusion}"
    );
    // No pair is a paragraph of its own: they are items of one list, after the comparison.
    assert!(!html.contains("<p>A vs B"), "{html}");
    let list = html.find("<ul><li>A vs B: ").expect("the pairs as a list");
    assert!(list > comparison);
    assert_eq!(html.matches("<ul><li>A vs B: ").count(), 1);
    // One seed: the conclusion says the differences have no verdict.
    let one = read(&simulate("e03b1", &["e03b", "--seeds", "1"]), "report.html");
    assert_eq!(one.matches("class=\"conclusion\"").count(), 1);
    assert!(
        one.contains("One seed: none of the differences below has a verdict"),
        "{one}"
    );
}
