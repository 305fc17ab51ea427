//! A live run stopped by SIGTERM says it is incomplete, and what it logged is still whole.
//!
//! `lab run e03b` with a short run (6 s of operations, freeze at 2 s) gets SIGTERM about 2.5 s
//! after it started, in the middle of its traffic. The contract (spec: Ctrl-C or SIGTERM stops
//! the children gracefully, logs are flushed, the summary is marked incomplete):
//!
//! - exit code 130;
//! - every line of every log is a whole event (nothing torn by the stop);
//! - each log ends with `run_end` whose `complete` is false;
//! - `summary.json` exists and says `"complete": false`;
//! - every attempt the swarm logged reached its dependency: the lab stops the swarm first and the
//!   dependencies only after it, so no attempt can be logged that the server never saw.
//!
//! Timing is loose on purpose: the signal only has to land somewhere in the 6 s of operations.
//! It goes 2.5 s after the start, or, if starting the processes took longer on a loaded 2-core
//! machine, 1 s after all eight logs exist (each run's traffic has begun), so it never lands
//! before the traffic; 1 s of 30 clients thinking 0.2 to 0.4 s gives some hundred attempts. A
//! watchdog kills the lab if it has not exited 90 s after the signal.

mod common;

use std::collections::HashSet;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::lab;
use e03_model::events::{Event, Source};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// The signal is sent this long after the lab starts at the earliest ...
const STOP_AFTER: Duration = Duration::from_millis(2500);
/// ... and this long after every run's log exists (all runs started), at the earliest: the
/// traffic starts at time zero, the swarm's start delay (1 s) after the logs exist, and runs
/// about 1 s before the stop (the lab measures the machine's floor for 1 s before it starts
/// its children, so the lab's own start no longer hides that delay).
const TRAFFIC_BEFORE_STOP: Duration = Duration::from_millis(2000);
/// How long the runs may take to start.
const START_LIMIT: Duration = Duration::from_secs(30);
/// How long the lab may take to wind down before the watchdog kills it.
const WATCHDOG: Duration = Duration::from_secs(90);

/// Number of `*.jsonl` files in `dir` (0 while it does not exist).
fn log_count(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| {
        d.filter_map(Result::ok)
            .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
            .count()
    })
}

/// Every event of one log file, each line parsed (panics naming the file and line otherwise).
fn events(path: &Path) -> Vec<Event> {
    let text = std::fs::read_to_string(path).expect("log readable");
    assert!(text.ends_with('\n'), "{} ends mid-line", path.display());
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{} line {}: {e}: {line:?}", path.display(), i + 1))
        })
        .collect()
}

#[test]
fn sigterm_mid_run_exits_130_with_whole_logs_marked_incomplete() {
    let out = std::env::temp_dir().join(format!("e03-lab-stop-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let child = lab()
        .args(["run", "e03b", "--seed", "42", "--out"])
        .arg(&out)
        .args(["--clients", "30", "--duration-s", "6"])
        .args(["--freeze-start-s", "2", "--freeze-end-s", "2.5"])
        .args(["--recovery-end-s", "3"])
        .args(["--think-min-ms", "200", "--think-max-ms", "400"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("lab starts");
    let pid = Pid::from_raw(i32::try_from(child.id()).expect("pid fits"));
    let done = Arc::new(AtomicBool::new(false));
    let signaller = {
        let done = Arc::clone(&done);
        let dir = out.join("latest/e03b");
        std::thread::spawn(move || {
            let started = Instant::now();
            while log_count(&dir) < 8 && started.elapsed() < START_LIMIT {
                std::thread::sleep(Duration::from_millis(50));
            }
            std::thread::sleep(TRAFFIC_BEFORE_STOP);
            std::thread::sleep(STOP_AFTER.saturating_sub(started.elapsed()));
            kill(pid, Signal::SIGTERM).expect("SIGTERM sent");
            let deadline = Instant::now() + WATCHDOG;
            while !done.load(Ordering::SeqCst) {
                if Instant::now() > deadline {
                    let _ = kill(pid, Signal::SIGKILL);
                    return false;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            true
        })
    };
    let output = child.wait_with_output().expect("lab ends");
    done.store(true, Ordering::SeqCst);
    let in_time = signaller.join().expect("signaller");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let context = format!("stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(
        in_time,
        "the lab did not stop within {WATCHDOG:?}\n{context}"
    );
    assert_eq!(output.status.code(), Some(130), "{context}");

    let dir = out.join("latest/e03b");
    let mut logs: Vec<_> = std::fs::read_dir(&dir)
        .expect("scenario dir")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    logs.sort();
    // One client and one server log per strategy.
    assert_eq!(logs.len(), 8, "{logs:?}\n{context}");

    // (run, client, op, attempt) seen by the clients and by the servers.
    let mut attempts: HashSet<(String, u32, u32, u32)> = HashSet::new();
    let mut arrivals: HashSet<(String, u32, u32, u32)> = HashSet::new();
    let (mut clients, mut servers) = (0, 0);
    for log in &logs {
        let events = events(log);
        let Some(Event::RunStart(start)) = events.first() else {
            panic!("{} does not start with run_start", log.display());
        };
        match start.source {
            Source::Client => clients += 1,
            Source::Server => servers += 1,
        }
        match events.last() {
            Some(Event::RunEnd(end)) => assert!(
                !end.complete,
                "{} says complete after SIGTERM",
                log.display()
            ),
            other => panic!("{} ends with {other:?}, not run_end", log.display()),
        }
        for e in &events {
            match e {
                Event::Attempt(a) => {
                    attempts.insert((a.tag.run.clone(), a.client, a.op, a.attempt));
                }
                Event::Arrival(a) => {
                    if let (Some(c), Some(o), Some(n)) = (a.client, a.op, a.attempt) {
                        arrivals.insert((a.tag.run.clone(), c, o, n));
                    }
                }
                _ => {}
            }
        }
    }
    assert_eq!((clients, servers), (4, 4));
    // The stop came mid-traffic: there is something to compare.
    assert!(attempts.len() >= 30, "only {} attempts", attempts.len());
    let missing: Vec<_> = attempts.difference(&arrivals).take(5).collect();
    assert!(
        missing.is_empty(),
        "client attempts the servers never saw, e.g. {missing:?}"
    );

    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("summary.json")).expect("summary written"),
    )
    .expect("summary is JSON");
    assert_eq!(summary["complete"], false, "{summary}");
    // Analysed once: the lab tells its swarm child (E03_SWARM_REPORT=0) to leave it the report.
    assert_eq!(stdout.matches("INCOMPLETE RUN").count(), 1, "{context}");
    let _ = std::fs::remove_dir_all(&out);
}

/// Issue 28's new user: SIGINT a few seconds into `lab run e03b`, before the freeze. Nothing
/// was measured about the outage, so the tables say `n/a` for success (affected) and recovery
/// (they said 100.0% and 0), and every figure's title says INCOMPLETE RUN (also in the
/// inlined SVGs of report.html).
#[test]
fn sigint_before_the_freeze_reads_n_a_and_marks_every_figure_incomplete() {
    let out = std::env::temp_dir().join(format!("e03-lab-stop-early-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let child = lab()
        .args(["run", "e03b", "--seed", "42", "--out"])
        .arg(&out)
        .args(["--clients", "20", "--duration-s", "30"])
        .args(["--freeze-start-s", "25", "--freeze-end-s", "26"])
        .args(["--recovery-end-s", "28"])
        .args(["--think-min-ms", "200", "--think-max-ms", "400"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("lab starts");
    let pid = Pid::from_raw(i32::try_from(child.id()).expect("pid fits"));
    let done = Arc::new(AtomicBool::new(false));
    let signaller = {
        let done = Arc::clone(&done);
        let dir = out.join("latest/e03b");
        std::thread::spawn(move || {
            let started = Instant::now();
            while log_count(&dir) < 8 && started.elapsed() < START_LIMIT {
                std::thread::sleep(Duration::from_millis(50));
            }
            std::thread::sleep(TRAFFIC_BEFORE_STOP);
            kill(pid, Signal::SIGINT).expect("SIGINT sent");
            let deadline = Instant::now() + WATCHDOG;
            while !done.load(Ordering::SeqCst) {
                if Instant::now() > deadline {
                    let _ = kill(pid, Signal::SIGKILL);
                    return false;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            true
        })
    };
    let output = child.wait_with_output().expect("lab ends");
    done.store(true, Ordering::SeqCst);
    let in_time = signaller.join().expect("signaller");
    let context = format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(in_time, "the lab did not stop\n{context}");
    assert_eq!(output.status.code(), Some(130), "{context}");
    let dir = out.join("latest/e03b");
    let report = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    let rows: Vec<&str> = report
        .lines()
        .filter(|l| l.starts_with("| ") && l.contains("(incomplete)"))
        .collect();
    assert_eq!(rows.len(), 4, "{report}");
    for row in rows {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        // | strategy | success (affected) | ... | recovery (s) |
        assert_eq!(cells[2], "n/a", "success (affected): {row}");
        assert_eq!(cells[10], "n/a", "recovery (s): {row}");
    }
    for figure in ["comparison", "arrivals_100ms", "arrivals_1s"] {
        let svg = std::fs::read_to_string(dir.join(format!("{figure}.svg"))).expect("figure");
        assert!(svg.contains("INCOMPLETE RUN"), "{figure}.svg is not marked");
    }
    let html = std::fs::read_to_string(dir.join("report.html")).expect("report.html");
    // Each inlined figure is marked.
    for figure in ["comparison", "arrivals_100ms", "arrivals_1s"] {
        let at = html
            .find(&format!("data-figure=\"{figure}\""))
            .unwrap_or_else(|| panic!("{figure} in report.html"));
        let end = at + html[at..].find("</figure>").expect("figure ends");
        assert!(
            html[at..end].contains("INCOMPLETE RUN"),
            "{figure} in report.html is not marked"
        );
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// Processes whose command line mentions `needle` (the test's own directory).
fn processes_mentioning(needle: &str) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(Result::ok)
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(needle))
        .collect()
}

/// A chain run (`lab run deadline`: its first variant's top request waits up to 9 s on a bottom
/// that hangs) stopped by SIGINT while a top request is in flight: exit 130, the variant marked
/// incomplete (`STOPPED.txt`, `top.jsonl` with the requests that finished: none), no hop process
/// left behind, and `lab report` refuses to make tables of it (exit 1, saying why).
#[test]
fn a_chain_run_stopped_mid_variant_is_marked_incomplete_and_leaves_no_hop_running() {
    let out = std::env::temp_dir().join(format!("e03-lab-stop-chain-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let child = lab()
        .args(["run", "deadline", "--out"])
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("lab starts");
    let pid = Pid::from_raw(i32::try_from(child.id()).expect("pid fits"));
    // The bottom's log exists once the chain is up; the first top request then waits on it.
    let bottom = out.join("latest/deadline/no-deadline/layer-1-bottom.jsonl");
    let started = Instant::now();
    while !bottom.exists() && started.elapsed() < START_LIMIT {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        bottom.exists(),
        "the chain did not start in {START_LIMIT:?}"
    );
    std::thread::sleep(Duration::from_millis(500));
    kill(pid, Signal::SIGINT).expect("SIGINT sent");
    let done = Arc::new(AtomicBool::new(false));
    let watchdog = {
        let done = done.clone();
        std::thread::spawn(move || {
            let end = Instant::now() + WATCHDOG;
            while Instant::now() < end && !done.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(100));
            }
            if !done.load(Ordering::SeqCst) {
                let _ = kill(pid, Signal::SIGKILL);
            }
        })
    };
    let o = child.wait_with_output().expect("lab ends");
    done.store(true, Ordering::SeqCst);
    watchdog.join().unwrap();
    let (_, err) = common::text(&o);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(
        err.contains("stopped: deadline variant no-deadline is incomplete"),
        "{err}"
    );
    let vdir = out.join("latest/deadline/no-deadline");
    let marker = std::fs::read_to_string(vdir.join("STOPPED.txt")).expect("marker written");
    assert!(
        marker.starts_with("stopped by a signal after 0 of 2 top requests"),
        "{marker}"
    );
    assert_eq!(std::fs::read_to_string(vdir.join("top.jsonl")).unwrap(), "");
    assert!(
        !vdir.parent().unwrap().join("deadline").exists(),
        "no variant runs after the stop"
    );
    let left = processes_mentioning(&out.display().to_string());
    assert!(left.is_empty(), "processes left running: {left:?}");
    let r = lab()
        .args(["report", "--out"])
        .arg(&out)
        .arg("deadline")
        .output()
        .unwrap();
    let (_, err) = common::text(&r);
    assert_eq!(r.status.code(), Some(1), "{err}");
    assert!(
        err.contains("this run was stopped before it finished"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&out);
}

/// Issue 54: Ctrl-C on `lab run failover` before its outage (replica 0 down from 10 s) printed
/// `recovered in 1 s` and a check FAIL, and wrote them into report.html and summary.json. A run
/// stopped before its outage now says first that it is incomplete and gives no verdict: no
/// check, no recovery verdict, no conclusion, in the terminal, report.md, report.html and
/// summary.json (`complete: false`, `trust: "incomplete"`); exit 130.
#[test]
fn a_failover_run_stopped_before_its_outage_gives_no_verdict_and_says_so_first() {
    let out = std::env::temp_dir().join(format!("e03-lab-stop-failover-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let child = lab()
        .args(["run", "failover", "--out"])
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("lab starts");
    let pid = Pid::from_raw(i32::try_from(child.id()).expect("pid fits"));
    let done = Arc::new(AtomicBool::new(false));
    let signaller = {
        let done = Arc::clone(&done);
        let dir = out.join("latest/failover");
        std::thread::spawn(move || {
            // Three strategies, each a client log and two replicas' server logs.
            let started = Instant::now();
            while log_count(&dir) < 9 && started.elapsed() < START_LIMIT {
                std::thread::sleep(Duration::from_millis(50));
            }
            // Some 2 s of traffic, far from the outage at 10 s.
            std::thread::sleep(TRAFFIC_BEFORE_STOP + Duration::from_secs(1));
            kill(pid, Signal::SIGINT).expect("SIGINT sent");
            let deadline = Instant::now() + WATCHDOG;
            while !done.load(Ordering::SeqCst) {
                if Instant::now() > deadline {
                    let _ = kill(pid, Signal::SIGKILL);
                    return false;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            true
        })
    };
    let output = child.wait_with_output().expect("lab ends");
    done.store(true, Ordering::SeqCst);
    let in_time = signaller.join().expect("signaller");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let context = format!(
        "stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(in_time, "the lab did not stop\n{context}");
    assert_eq!(output.status.code(), Some(130), "{context}");
    // The first thing the tables say is the banner.
    let first = stdout.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    assert!(
        first.starts_with("INCOMPLETE RUN, NO VERDICTS"),
        "first line: {first}\n{context}"
    );
    let dir = out.join("latest/failover");
    let report = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    let html = std::fs::read_to_string(dir.join("report.html")).expect("report.html");
    for (what, text) in [
        ("stdout", &stdout),
        ("report.md", &report),
        ("report.html", &html),
    ] {
        // (report.html lists the parameters, E03_FAIL_RATE among them.)
        let words = text.replace("E03_FAIL_RATE", "");
        for verdict in ["PASS", "FAIL", "recovered in", "metastable (not recovered"] {
            assert!(
                !words.contains(verdict),
                "{what} gives a verdict ({verdict}):\n{text}"
            );
        }
        assert!(
            text.contains("INCOMPLETE RUN, NO VERDICTS"),
            "{what} has no banner"
        );
    }
    // In report.md the banner comes right under the title.
    let after_title: Vec<&str> = report.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(
        after_title[1].starts_with("INCOMPLETE RUN, NO VERDICTS"),
        "{report}"
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["complete"], false);
    assert_eq!(summary["trust"], "incomplete");
    let _ = std::fs::remove_dir_all(&out);
}

/// Issue 54: Ctrl-C on `lab simulate` of a large run was not handled: it left a run folder
/// holding only `scenario.toml`, and `latest` pointed at it. Stopped before its scenario is
/// simulated whole, it exits 130, says so, and leaves OUT as it found it (the earlier run and
/// `latest` pointing at it).
#[test]
fn a_simulation_stopped_before_its_end_leaves_nothing_behind() {
    let out = std::env::temp_dir().join(format!("e03-lab-stop-sim-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(out.join("old/e03b")).unwrap();
    std::fs::write(out.join("old/e03b/summary.json"), "{}").unwrap();
    std::os::unix::fs::symlink("old", out.join("latest")).unwrap();
    let child = lab()
        .args(["simulate", "e03b", "--seeds", "1-2000", "--out"])
        .arg(&out)
        .env("E03_PROGRESS", "off")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("lab starts");
    let pid = Pid::from_raw(i32::try_from(child.id()).expect("pid fits"));
    // The run folder is claimed (latest moves to it) before the simulation starts.
    let started = Instant::now();
    while std::fs::read_link(out.join("latest")).is_ok_and(|l| l == Path::new("old"))
        && started.elapsed() < START_LIMIT
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    kill(pid, Signal::SIGINT).expect("SIGINT sent");
    let output = child.wait_with_output().expect("lab ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("stopped before any scenario was simulated whole"),
        "{stderr}"
    );
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["latest", "old"], "{stderr}");
    assert_eq!(
        std::fs::read_link(out.join("latest")).unwrap(),
        Path::new("old")
    );
    let _ = std::fs::remove_dir_all(&out);
}
