//! End-to-end on small hand-made logs: reading a scenario directory, the outputs written beside
//! it, and the command line's exit codes.

use std::fs;
use std::path::{Path, PathBuf};

use analyzer::{analyze_dir_with_warnings, main_entry, print_tables, write_outputs};
use e03_metrics::no_model;

/// The plain front, with no model: these logs' scenarios have no `live_model` check.
fn main_entry_plain(args: Vec<std::ffi::OsString>) -> i32 {
    main_entry(args, no_model)
}
use e03_model::events::*;
use e03_model::GiveUp;
use e03_plan::Scenario;

fn tmp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("analyzer-test-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

fn tag(s: &str, seed: u64) -> RunTag {
    RunTag {
        run: format!("e03b-{s}-seed{seed}-1"),
        seed,
        strategy: s.into(),
    }
}

fn start(s: &str, seed: u64, source: Source) -> Event {
    Event::RunStart(RunStart {
        tag: tag(s, seed),
        source,
        scenario: "e03b".into(),
        start_unix_ms: 1,
        params: serde_json::json!({"E03_STRATEGIES": "B,C", "E03_SEEDS": "42,7", "E03_WORKERS": "10"}),
        // An older log's record: raw parameters only.
        typed_params: None,
        clock: None,
        shard: None,
    })
}

fn end(s: &str, seed: u64, source: Source) -> Event {
    Event::RunEnd(RunEnd {
        tag: tag(s, seed),
        source,
        t_us: 30_000_000,
        complete: true,
        records: 0,
    })
}

/// One run: `n` operations of one attempt each at 9.0 s + i ms (inside the affected window),
/// plus `extra` retries arriving in the 100 ms window starting at 10.0 s. Operation 0 fails
/// (budget denied) when `fail_first`.
fn write_run(dir: &Path, s: &str, seed: u64, n: u32, extra: u32, fail_first: bool) {
    let mut server = vec![start(s, seed, Source::Server)];
    let mut client = vec![start(s, seed, Source::Client)];
    let mut seq = 0;
    let mut push = |client_id: u32,
                    op: u32,
                    attempt: u32,
                    t: u64,
                    server: &mut Vec<Event>,
                    client: &mut Vec<Event>| {
        server.push(Event::Arrival(Arrival {
            tag: tag(s, seed),
            seq,
            t_us: t,
            client: Some(client_id),
            op: Some(op),
            attempt: Some(attempt),
            class: Default::default(),
        }));
        server.push(Event::Response(Response {
            tag: tag(s, seed),
            seq,
            t_us: t + 40_000,
            status: 200,
            cause: Cause::Ok,
            admit_us: Some(t + 100),
            immediate: true,
            cost: None,
        }));
        client.push(Event::Attempt(Attempt {
            tag: tag(s, seed),
            client: client_id,
            op,
            attempt,
            due_us: t,
            sent_us: t + 50,
            end_us: t + 40_000,
            end: AttemptEnd::Status,
            status: Some(200),
            rejection: None,
            flow: None,
            step: None,
            retry_after_us: None,
        }));
        seq += 1;
    };
    for i in 0..n {
        let t = 9_000_000 + u64::from(i) * 1000;
        push(i, 0, 1, t, &mut server, &mut client);
        let failed = fail_first && i == 0;
        client.push(Event::Operation(OperationRecord {
            tag: tag(s, seed),
            client: i,
            op: 0,
            start_us: t,
            end_us: t + 1_500_000,
            attempts: 1,
            outcome: if failed {
                Outcome::Failed
            } else {
                Outcome::Success
            },
            reason: failed.then_some(GiveUp::BudgetDenied),
            flow: None,
            class: Default::default(),
        }));
    }
    for j in 0..extra {
        push(j, 0, 2, 10_000_000 + u64::from(j), &mut server, &mut client);
    }
    server.push(end(s, seed, Source::Server));
    client.push(end(s, seed, Source::Client));
    for (name, events) in [
        (format!("server-{s}-seed{seed}.jsonl"), server),
        (format!("client-{s}-seed{seed}.jsonl"), client),
    ] {
        let text: String = events.iter().map(|e| e.to_line() + "\n").collect();
        fs::write(dir.join(name), text).unwrap();
    }
}

fn scenario_dir(name: &str) -> PathBuf {
    let dir = tmp_dir(name).join("e03b");
    fs::create_dir_all(&dir).unwrap();
    write_run(&dir, "B", 42, 10, 20, false);
    write_run(&dir, "B", 7, 10, 22, false);
    write_run(&dir, "C", 42, 10, 5, true);
    write_run(&dir, "C", 7, 10, 6, true);
    dir
}

fn args(a: &[&str]) -> Vec<std::ffi::OsString> {
    std::iter::once("analyzer")
        .chain(a.iter().copied())
        .map(Into::into)
        .collect()
}

#[test]
fn a_scenario_directory_gives_every_metric_in_strategy_and_seed_order() {
    let dir = scenario_dir("metrics");
    let (s, warnings) = analyze_dir_with_warnings(&dir, Scenario::e03b(), no_model).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(s.complete && !s.simulated);
    let order: Vec<(String, u64)> = s
        .runs
        .iter()
        .map(|r| (r.strategy.clone(), r.seed))
        .collect();
    assert_eq!(
        order,
        [
            ("B".into(), 42),
            ("B".into(), 7),
            ("C".into(), 42),
            ("C".into(), 7)
        ]
    );
    assert_eq!(s.params.seeds(), vec![42, 7]);
    let c42 = &s.runs[2];
    assert_eq!(
        (
            c42.total_requests,
            c42.operations,
            c42.retries_sent,
            c42.retries_denied
        ),
        (15, 10, 5, 1)
    );
    assert_eq!(
        (
            c42.peak_100ms,
            c42.arrivals_100ms[100],
            c42.retries_100ms[100]
        ),
        (10, 5, 5)
    );
    assert!((c42.success_affected - 0.9).abs() < 1e-12);
    // C: 1 of the 10 operations ending in [10 s, 11 s) failed and no later window exists, so
    // it did not recover before the run's end: no figure, and `recovered` says so (issue
    // "Outputs that never overstate"; it read one window, the data's end). B: every operation
    // succeeded.
    assert_eq!((c42.recovery_s, s.runs[0].recovery_s), (None, Some(0)));
    assert_eq!(
        (c42.recovered, s.runs[0].recovered),
        (Some(false), Some(true))
    );
    let m = c42.matched.as_ref().unwrap();
    assert!(m.ok() && m.matched == 15, "{m:?}");
    let f = c42.fidelity.as_ref().unwrap();
    assert!(
        (f.lateness_p99_ms - 0.05).abs() < 0.001 && (f.queueing_max_ms - 0.1).abs() < 0.001,
        "{f:?}"
    );

    let mut out = Vec::new();
    print_tables(&mut out, &s).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("seeds 42,7, live HTTP run"), "{text}");
    assert!(text.contains("| B vs C | peak_100ms |"), "{text}");
    assert!(!text.contains("INCOMPLETE"));
}

#[test]
fn outputs_have_the_contracted_shape() {
    let dir = scenario_dir("outputs");
    let (s, _) = analyze_dir_with_warnings(&dir, Scenario::e03b(), no_model).unwrap();
    write_outputs(&dir, &s).unwrap();
    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(json["scenario"], "e03b");
    assert_eq!(json["simulated"], false);
    assert_eq!(json["complete"], true);
    assert_eq!(json["params"]["E03_WORKERS"], "10");
    let run = json["runs"][0].as_object().unwrap();
    for field in [
        "strategy",
        "seed",
        "success_affected",
        "operations",
        "total_requests",
        "retries_sent",
        "retries_denied",
        "peak_1s",
        "peak_100ms",
        "p95_ms",
        "p99_ms",
        "recovery_s",
        "complete",
        "fidelity",
        "matched",
    ] {
        assert!(
            run.contains_key(field),
            "summary run lacks {field}: {run:?}"
        );
    }
    assert!(
        !run.contains_key("arrivals_100ms"),
        "series stay out of the summary"
    );
    assert_eq!(json["runs"].as_array().unwrap().len(), 4);
    let csv = fs::read_to_string(dir.join("arrivals_100ms.csv")).unwrap();
    assert!(
        csv.starts_with("seed,window_start_s,B,C,B_retries,C_retries\n42,0.0,0,0,0,0\n"),
        "{}",
        &csv[..80]
    );
    assert!(csv.contains("\n42,10.0,20,5,20,5\n") && csv.contains("\n7,10.0,22,6,22,6\n"));
    let csv1 = fs::read_to_string(dir.join("arrivals_1s.csv")).unwrap();
    assert!(
        csv1.contains("\n42,9,10,10,0,0\n42,10,20,5,20,5\n"),
        "{csv1}"
    );
    for f in ["arrivals_100ms", "arrivals_1s", "comparison"] {
        for ext in ["svg", "png"] {
            assert!(
                fs::metadata(dir.join(format!("{f}.{ext}"))).unwrap().len() > 1000,
                "{f}.{ext}"
            );
        }
    }
    let report = fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        report.contains("![arrivals per 100 ms](arrivals_100ms.svg)")
            && report.contains("| strategy ")
    );
    assert!(!dir.join("summary.json.tmp").exists());
    // report.html: the same blocks, the three figures inlined as SVG, nothing loaded.
    let html = fs::read_to_string(dir.join("report.html")).unwrap();
    for f in ["arrivals_100ms", "arrivals_1s", "comparison"] {
        let at = html
            .find(&format!("data-figure=\"{f}\"><svg"))
            .unwrap_or_else(|| panic!("{f} inlined"));
        assert!(html[at..].contains("</svg>"));
    }
    assert!(html.contains("<table class=\"comparison\">") && html.contains("<th>strategy</th>"));
    for external in ["<script", "<link", "src=\"http", "@import", "url("] {
        assert!(!html.contains(external), "{external}");
    }
    assert!(html.contains("@media print"));
}

#[test]
fn the_attempt_logs_peak_is_counted_as_the_logs_stream_by() {
    use e03_metrics::checks::{attempt_log_text, peak_per_window};
    let dir = scenario_dir("peaks");
    let (s, _) = analyze_dir_with_warnings(&dir, Scenario::e03b(), no_model).unwrap();
    for run in &s.runs {
        // The reader keeps no list of arrivals; the reference is the same server log fed to
        // an accumulator that keeps one.
        assert!(run.arrivals.is_empty());
        let mut acc =
            analyzer::RunAccumulator::new(Scenario::e03b(), &s.params, &run.strategy, run.seed);
        let log = dir.join(format!("server-{}-seed{}.jsonl", run.strategy, run.seed));
        analyzer::reader::read_log_file(&log, |e| analyzer::feed(&mut acc, e)).unwrap();
        let listed = acc.finish();
        assert_eq!(listed.arrivals.len() as u64, run.total_requests);
        assert_eq!(
            peak_per_window(run, 200, false),
            peak_per_window(&listed, 200, false)
        );
    }
    // B seed 42: 20 retries within 20 µs of 10.0 s.
    let text = attempt_log_text(&s).unwrap();
    assert!(text.contains("peak 20 per 200 ms"), "{text}");
}

#[test]
fn a_log_without_run_end_makes_the_run_and_summary_incomplete() {
    let dir = scenario_dir("incomplete");
    let path = dir.join("server-C-seed7.jsonl");
    let text = fs::read_to_string(&path).unwrap();
    let cut: Vec<&str> = text.lines().collect();
    // Drop run_end and leave half a line, as a kill would.
    let mut t = cut[..cut.len() - 1].join("\n");
    t += "\n{\"type\":\"arri";
    fs::write(&path, t).unwrap();
    let (s, warnings) = analyze_dir_with_warnings(&dir, Scenario::e03b(), no_model).unwrap();
    assert!(!s.complete);
    assert!(!s.runs[3].complete && s.runs[0].complete);
    assert!(
        warnings.iter().any(|w| w.contains("cut short")),
        "{warnings:?}"
    );
    let mut out = Vec::new();
    print_tables(&mut out, &s).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains("INCOMPLETE RUN") && text.contains("C (incomplete)"),
        "{text}"
    );
    write_outputs(&dir, &s).unwrap();
    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(json["complete"], false);
}

#[test]
fn cli_exit_codes() {
    let dir = scenario_dir("cli");
    let d = dir.to_str().unwrap();
    assert_eq!(main_entry_plain(args(&[d])), 0);
    assert_eq!(main_entry_plain(args(&[d, "--scenario", "e03c"])), 2);
    assert_eq!(main_entry_plain(args(&["/nonexistent/e03b"])), 2);
    assert_eq!(main_entry_plain(args(&[])), 2);
    assert_eq!(
        main_entry_plain(args(&["--server-log", "x.jsonl"])),
        2,
        "--out is required"
    );
    // A malformed middle line: bad input.
    let path = dir.join("client-B-seed7.jsonl");
    let good = fs::read_to_string(&path).unwrap();
    fs::write(&path, good.replacen('\n', "\nnot json\n", 1)).unwrap();
    assert_eq!(main_entry_plain(args(&[d])), 2);
    // An attempt the server never saw, on a complete run: exit 1.
    let mut lines: Vec<&str> = good.lines().collect();
    let extra = Event::Attempt(Attempt {
        tag: tag("B", 7),
        client: 999,
        op: 0,
        attempt: 1,
        due_us: 0,
        sent_us: 0,
        end_us: 1,
        end: AttemptEnd::ConnectionError,
        status: None,
        rejection: None,
        flow: None,
        step: None,
        retry_after_us: None,
    })
    .to_line();
    lines.insert(1, &extra);
    fs::write(&path, lines.join("\n") + "\n").unwrap();
    assert_eq!(main_entry_plain(args(&[d])), 1);
}

#[test]
fn a_server_log_alone_gives_the_load_figures() {
    let dir = scenario_dir("standalone");
    let out = dir.parent().unwrap().join("load");
    let log = dir.join("server-B-seed42.jsonl");
    assert_eq!(
        main_entry_plain(args(&[
            "--server-log",
            log.to_str().unwrap(),
            "--out",
            out.to_str().unwrap()
        ])),
        0
    );
    let load: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(out.join("load.json")).unwrap()).unwrap();
    assert_eq!(
        (
            load["total_requests"].as_u64(),
            load["peak_100ms"].as_u64(),
            load["peak_1s"].as_u64()
        ),
        (Some(30), Some(20), Some(20))
    );
    assert!(out.join("arrivals_100ms.png").exists() && out.join("arrivals_1s.csv").exists());
}

/// The idempotency scenario's logs, by hand: one operation whose first answer was lost after
/// its commit and was retried (two charges without a key), one whose last answer was lost and
/// not retried (one charge).
#[test]
fn the_ledger_gives_duplicate_charges_and_the_logs_the_retried_lost_answers() {
    let dir = tmp_dir("ledger").join("idempotency");
    fs::create_dir_all(&dir).unwrap();
    let (s, seed) = ("no-key", 1);
    let tag = RunTag {
        run: "idempotency-no-key-seed1-1".into(),
        seed,
        strategy: s.into(),
    };
    let start = |source| {
        Event::RunStart(RunStart {
            tag: tag.clone(),
            source,
            scenario: "idempotency".into(),
            start_unix_ms: 1,
            params: serde_json::json!({"E03_STRATEGIES": "no-key", "E03_SEEDS": "1"}),
            typed_params: None,
            clock: None,
            shard: None,
        })
    };
    let end = |source| {
        Event::RunEnd(RunEnd {
            tag: tag.clone(),
            source,
            t_us: 1_000_000,
            complete: true,
            records: 0,
        })
    };
    let mut server = vec![start(Source::Server)];
    let mut client = vec![start(Source::Client)];
    let mut ledger = Vec::new();
    // (seq, client, op, attempt, cause)
    let attempts = [
        (0, 0, 0, 1, Cause::Lost),
        (1, 0, 0, 2, Cause::Ok),
        (2, 1, 0, 1, Cause::Lost),
    ];
    for (i, (seq, c, op, attempt, cause)) in attempts.into_iter().enumerate() {
        let t = 1000 * (i as u64 + 1);
        server.push(Event::Arrival(Arrival {
            tag: tag.clone(),
            seq,
            t_us: t,
            client: Some(c),
            op: Some(op),
            attempt: Some(attempt),
            class: Default::default(),
        }));
        server.push(Event::Response(Response {
            tag: tag.clone(),
            seq,
            t_us: t + 20,
            status: 200,
            cause,
            admit_us: Some(t),
            immediate: true,
            cost: None,
        }));
        ledger.push(Event::Charge(ChargeRecord {
            tag: tag.clone(),
            seq,
            charge: e03_model::ledger::Charge {
                charge: i as u64 + 1,
                t_us: t + 20,
                key: None,
                amount: 1,
                client: Some(c),
                op: Some(op),
                attempt: Some(attempt),
            },
        }));
        let lost = cause == Cause::Lost;
        client.push(Event::Attempt(Attempt {
            tag: tag.clone(),
            client: c,
            op,
            attempt,
            due_us: t,
            sent_us: t,
            end_us: t + 20,
            end: if lost {
                // As the live client logs a lost answer (lab/tests/wire_outcomes.rs).
                AttemptEnd::of(&e03_model::AttemptResult::ConnectionError(
                    e03_model::cause::LOST_ANSWER,
                ))
                .0
            } else {
                AttemptEnd::Status
            },
            status: (!lost).then_some(200),
            rejection: None,
            flow: None,
            step: None,
            retry_after_us: None,
        }));
    }
    server.push(end(Source::Server));
    client.push(end(Source::Client));
    for (name, events) in [
        ("server-no-key-seed1.jsonl", server),
        ("client-no-key-seed1.jsonl", client),
        ("ledger-no-key-seed1.jsonl", ledger),
    ] {
        let text: String = events.iter().map(|e| e.to_line() + "\n").collect();
        fs::write(dir.join(name), text).unwrap();
    }
    let (summary, warnings) =
        analyze_dir_with_warnings(&dir, Scenario::named("idempotency").unwrap(), no_model).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let l = summary.runs[0].ledger.clone().expect("ledger figures");
    assert_eq!(
        (
            l.charges,
            l.duplicate_charges,
            l.lost_responses,
            l.retried_lost
        ),
        (3, 1, 2, 1)
    );
    // The check table says so, and the ledger table and CSV are written.
    let rows = e03_metrics::checks::evaluate(&summary);
    let row = rows
        .iter()
        .find(|r| {
            r.strategy == "no-key" && r.metric == "duplicate charges - retried lost responses"
        })
        .unwrap();
    assert_eq!((row.ours.as_str(), row.pass), ("0", Some(true)));
    let out = dir.join("out");
    write_outputs(&out, &summary).unwrap();
    let csv = fs::read_to_string(out.join("ledger.csv")).unwrap();
    // No permanent error in these runs: the table keeps the charge columns only.
    assert_eq!(
        csv.lines().collect::<Vec<_>>(),
        [
            "strategy,seed,operations,charges,duplicate charges,lost answers,retried lost",
            "no-key,1,0,3,1,2,1"
        ],
        "{csv}"
    );
    assert!(fs::read_to_string(out.join("report.md"))
        .unwrap()
        .contains("## Charges, lost answers and permanent errors"));
    // The two lost answers are counted by how the client saw them, in the summary, the table
    // and its CSV.
    let no_answer = &summary.runs[0].no_answer;
    assert_eq!(
        (
            no_answer.reset_before_answer,
            no_answer.broken(),
            no_answer.timeout
        ),
        (2, 2, 0)
    );
    let csv = fs::read_to_string(out.join("no_answer.csv")).unwrap();
    assert_eq!(
        csv.lines().collect::<Vec<_>>(),
        [
            "strategy,read timeout,connect refused,connect timeout,reset before answer,reset mid-body,other",
            "no-key,0,0,0,2,0,0"
        ],
        "{csv}"
    );
    let json = fs::read_to_string(out.join("summary.json")).unwrap();
    assert!(json.contains(r#""reset_before_answer": 2"#), "{json}");
    let mut printed = Vec::new();
    print_tables(&mut printed, &summary).unwrap();
    let printed = String::from_utf8(printed).unwrap();
    assert!(
        printed.contains("Attempts without an answer, by how they ended:"),
        "{printed}"
    );
}
