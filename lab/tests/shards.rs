//! Shards (issue "The lab on an orchestrator", items 1 and 2): a run's swarm as N processes,
//! shard i/N each (clients i, i+N, ...), registering with each dependency for one run that
//! starts at one instant. `lab run --swarm-shards 4` makes one run per strategy from four
//! processes, every attempt matched; a run that cannot be split is refused before anything is
//! written; a shard killed mid-run leaves the run marked incomplete, the shard named; with
//! logs sent over HTTP (item 3) the processes need no shared folder, and a killed shard that
//! never sends its log is named.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use common::lab;

/// A short E03-B: the freeze from 1 s to 1.5 s, recovery to 2 s, 3 s in all.
const SHORT: [&str; 14] = [
    "--clients",
    "40",
    "--duration-s",
    "3",
    "--freeze-start-s",
    "1",
    "--freeze-end-s",
    "1.5",
    "--recovery-end-s",
    "2",
    "--think-min-ms",
    "100",
    "--think-max-ms",
    "300",
];

/// The records of a JSON Lines file.
fn records(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `lab swarm` as shard `i` of 2 of a short E03-B run of strategy C against `target` (a
/// dependency's `A=...` target from `common::serve_dependency`), writing into `out`, with
/// `more` flags; its stderr piped.
fn shard_of_two(target: &str, i: u32, out: &Path, more: &[&str]) -> std::process::Child {
    let target = target.replacen("A=", "C=", 1);
    lab()
        .args(["swarm", "--targets", &target, "--strategies", "C"])
        .args(["--scenarios", "e03b", "--seed", "7"])
        .args(SHORT)
        .args(["--shard", &format!("{i}/2")])
        .args(more)
        .arg("--out")
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits until the client log `log` holds an attempt (its run is under way).
fn wait_for_an_attempt(log: &Path) {
    let mut waited = 0;
    while std::fs::read_to_string(log).map_or(true, |t| !t.contains("\"attempt\"")) {
        assert!(waited < 500, "{} never had an attempt", log.display());
        std::thread::sleep(Duration::from_millis(20));
        waited += 1;
    }
}

#[test]
fn four_shard_processes_make_one_run_per_strategy_with_every_attempt_matched() {
    let dir = common::temp("shards", "four");
    let o = lab()
        .args(["run", "e03b", "--strategies", "A,D", "--seed", "7"])
        .args(SHORT)
        .args([
            "--swarm-shards",
            "4",
            "--budget-scope",
            "shard",
            "--shards",
            "4",
            "--out",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    let (out, err) = common::text(&o);
    // The tables are made (a check of this short run may fail: exit 3).
    assert!(matches!(o.status.code(), Some(0 | 3)), "{out}\n{err}");
    assert!(err.contains("shard 3/4"), "{err}");
    let run = dir.join(std::fs::read_link(dir.join("latest")).unwrap());
    let scenario = run.join("e03b");
    for strategy in ["A", "D"] {
        let server = records(&scenario.join(format!("server-{strategy}-seed7.jsonl")));
        let id = server[0]["data"]["run"].as_str().unwrap().to_string();
        let arrivals = server.iter().filter(|r| r["type"] == "arrival").count();
        let mut sent = 0;
        let mut clients = BTreeSet::new();
        for i in 0..4u64 {
            let log = scenario.join(format!("client-{strategy}-seed7-shard{i}of4.jsonl"));
            let recs = records(&log);
            assert_eq!(recs[0]["type"], "run_start", "{}", log.display());
            assert_eq!(recs[0]["data"]["shard"]["index"], i);
            // One run: every shard's records carry the dependency's run id.
            assert!(
                recs.iter().all(|r| r["data"]["run"] == id.as_str()),
                "{}",
                log.display()
            );
            assert_eq!(recs.last().unwrap()["data"]["complete"], true);
            for r in recs.iter().filter(|r| r["type"] == "attempt") {
                let c = r["data"]["client"].as_u64().unwrap();
                assert_eq!(c % 4, i, "shard {i} sent for client {c}");
                clients.insert(c);
                sent += 1;
            }
        }
        assert_eq!(
            sent, arrivals,
            "strategy {strategy}: every attempt arrived, no other"
        );
        assert_eq!(clients.len(), 40, "every client ran, in one shard");
        assert_eq!(
            server.last().unwrap()["data"]["complete"],
            true,
            "the dependency ended the run complete once all four stopped it"
        );
    }
    // The analyzer merged the shards: every run's attempts matched.
    let matched = out
        .lines()
        .filter(|l| l.contains(" seed 7 ") && l.trim_end().ends_with("ok |"))
        .count();
    assert_eq!(matched, 2, "{out}");
    // And each shard's attempts against its own clients' arrivals.
    let shard_rows: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("| A seed 7") || l.starts_with("| D seed 7"))
        .filter(|l| l.contains("/4 "))
        .collect();
    assert_eq!(shard_rows.len(), 8, "{out}");
    assert!(shard_rows.iter().all(|l| l.contains(" ok |")), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_run_that_cannot_be_split_is_refused_before_anything_is_written() {
    let dir = common::temp("shards", "refused");
    let o = lab()
        .args(["run", "e03b", "--swarm-shards", "4", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    let (_, err) = common::text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--swarm-shards") && err.contains("E03_BUDGET_SCOPE=fleet"),
        "{err}"
    );
    let o = lab()
        .args(["run", "e03b", "--swarm-shards", "0", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    let (_, err) = common::text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("expected a whole number from 1 to 64"),
        "{err}"
    );
    assert!(std::fs::read_dir(&dir).unwrap().next().is_none());
    // `lab swarm --shard` says what it accepts.
    let o = lab()
        .args([
            "swarm",
            "--targets",
            "C=http://127.0.0.1:9@http://127.0.0.1:9",
            "--strategies",
            "C",
            "--shard",
            "4/4",
            "--out",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    let (_, err) = common::text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--shard (E03_SHARD)") && err.contains("expected I/N"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two shards against one dependency, as an orchestrator starts them; one is killed mid-run.
/// The other runs to its end, and the run is marked incomplete, the killed shard's log named.
#[test]
fn a_shard_killed_mid_run_leaves_the_run_incomplete_and_named() {
    let dir = common::temp("shards", "killed");
    let (dependency, target) = common::serve_dependency(&dir, &[]);
    let mut killed = shard_of_two(&target, 1, &dir, &[]);
    let kept = shard_of_two(&target, 0, &dir, &[]);
    // Killed once its log has attempts in it (the run is under way).
    wait_for_an_attempt(&dir.join("e03b/client-C-seed7-shard1of2.jsonl"));
    killed.kill().unwrap();
    killed.wait().unwrap();
    let o = kept.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("shard 0/2"), "{err}");
    // The dependency still waits for shard 1 to stop the run; ending it (a signal, as the
    // orchestrator does at the end) marks it incomplete.
    assert_eq!(common::terminate(dependency), Some(0));
    let o = lab()
        .args(["report", "--out"])
        .arg(&dir)
        .arg("e03b")
        .output()
        .unwrap();
    let (out, err) = common::text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    assert!(err.contains("client-C-seed7-shard1of2.jsonl"), "{err}");
    assert!(err.contains("incomplete"), "{err}");
    // The shard that ran to its end kept every attempt it sent.
    let kept = records(&dir.join("e03b/client-C-seed7-shard0of2.jsonl"));
    assert_eq!(kept.last().unwrap()["data"]["complete"], true);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `lab report --listen` on a free loopback port, waiting at most `wait_s` for the runs of
/// e03b, collecting into `dir`: the child, its collector's base URL, and a thread reading the
/// rest of its stderr.
fn collector(
    dir: &Path,
    wait_s: &str,
) -> (std::process::Child, String, std::thread::JoinHandle<String>) {
    use std::io::{BufRead, Read};
    let mut report = lab()
        .args([
            "report",
            "--listen",
            "127.0.0.1:0",
            "--wait-s",
            wait_s,
            "--out",
        ])
        .arg(dir)
        .arg("e03b")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(report.stderr.take().unwrap());
    let mut first = String::new();
    stderr.read_line(&mut first).unwrap();
    let url = first
        .split_whitespace()
        .find_map(|w| w.strip_prefix("http://"))
        .and_then(|w| w.strip_suffix("/logs/"))
        .map(|a| format!("http://{a}"))
        .unwrap_or_else(|| panic!("no collector address in {first:?}"));
    let rest = std::thread::spawn(move || {
        let mut text = String::new();
        stderr.read_to_string(&mut text).unwrap();
        text
    });
    (report, url, rest)
}

/// No shared folder (item 3): the dependency and two shards each write into a folder of their
/// own and send their logs to `lab report --listen`, which stores them (checked by CRC-32) into
/// a third folder and analyses them there: one run, every attempt matched, each file the same
/// bytes as the one its process wrote.
#[test]
fn logs_sent_over_http_make_the_run_without_a_shared_folder() {
    let dir = common::temp("shards", "http");
    let folder = |n: &str| {
        let d = dir.join(n);
        std::fs::create_dir_all(&d).unwrap();
        d
    };
    let (dep_dir, analyzer_dir) = (folder("dependency"), folder("analyzer"));
    let (report, url, rest) = collector(&analyzer_dir, "120");
    let (_dependency, target) = common::serve_dependency(&dep_dir, &["--send-logs", &url]);
    let shards: Vec<_> = (0..2u32)
        .map(|i| {
            let out = folder(&format!("shard{i}"));
            let child = shard_of_two(&target, i, &out, &["--send-logs", &url]);
            (out, child)
        })
        .collect();
    let mut outs = Vec::new();
    for (out, child) in shards {
        let o = child.wait_with_output().unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        outs.push(out);
    }
    let o = report.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let err = rest.join().unwrap();
    // The tables are made (a check of this short run may fail: exit 3).
    assert!(matches!(o.status.code(), Some(0 | 3)), "{out}\n{err}");
    // Every file arrived whole, the same bytes as its writer's.
    let got = analyzer_dir.join("e03b");
    let same = |from: &Path, name: &str| {
        assert_eq!(
            std::fs::read(got.join(name)).unwrap_or_else(|e| panic!("{name}: {e}")),
            std::fs::read(from.join("e03b").join(name)).unwrap(),
            "{name}"
        );
    };
    same(&dep_dir, "server-C-seed7.jsonl");
    for (i, shard) in outs.iter().enumerate() {
        same(shard, &format!("client-C-seed7-shard{i}of2.jsonl"));
        same(shard, "scenario.toml");
        // The list of the run's logs the analyzer waited for: the same from each shard.
        same(shard, e03_plan::log_names::RUN_LOGS_FILE);
    }
    let listed = std::fs::read_to_string(got.join(e03_plan::log_names::RUN_LOGS_FILE)).unwrap();
    assert_eq!(
        e03_plan::log_names::parse_run_logs(&listed).unwrap(),
        e03_plan::log_names::run_log_names("C", 7, 1, 2),
        "the swarm lists the logs of its runs"
    );
    // One run, complete, and the analyzer matched every attempt, per run and per shard.
    let server = records(&got.join("server-C-seed7.jsonl"));
    assert_eq!(server.last().unwrap()["data"]["complete"], true);
    let run_rows = out
        .lines()
        .filter(|l| l.contains(" seed 7 ") && l.trim_end().ends_with("ok |"))
        .count();
    assert_eq!(run_rows, 1, "{out}");
    let shard_rows: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("| C seed 7") && l.contains("/2 "))
        .collect();
    assert_eq!(shard_rows.len(), 2, "{out}");
    assert!(shard_rows.iter().all(|l| l.contains(" ok |")), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A collector address that is not one: exit 2, naming the flag, nothing written.
#[test]
fn a_bad_collector_address_is_refused_naming_the_flag() {
    let base = common::temp("shards", "bad-collector");
    let dir = base.join("out");
    let target = "A=http://127.0.0.1:9@http://127.0.0.1:9";
    let cases: [(Vec<&str>, &str); 4] = [
        (
            vec![
                "swarm",
                "--strategies",
                "A",
                "--targets",
                target,
                "--send-logs",
                "ftp://x",
            ],
            "invalid --send-logs (E03_SEND_LOGS)",
        ),
        (
            vec![
                "serve",
                "--scenario",
                "none",
                "--send-logs",
                "analyzer:9100",
            ],
            "invalid --send-logs (env E03_SEND_LOGS)",
        ),
        (
            vec!["report", "--listen", "nope", "--wait-s", "1", "e03b"],
            "invalid --listen",
        ),
        (
            vec!["report", "--listen", "127.0.0.1:0", "e03b"],
            "--wait-s",
        ),
    ];
    for (args, says) in cases {
        let out_flag = if args[0] == "serve" {
            "--log-dir"
        } else {
            "--out"
        };
        let o = lab().args(&args).arg(out_flag).arg(&dir).output().unwrap();
        let (_, err) = common::text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!dir.exists(), "{args:?} wrote {}", dir.display());
    }
    let _ = std::fs::remove_dir_all(&base);
}

/// No shared folder, and a shard killed mid-run: its log never reaches the analyzer, which
/// waits to its limit, then names the shard and marks the run incomplete; the other shard's
/// log and the dependency's arrived whole.
#[test]
fn a_killed_shard_that_never_sends_its_log_is_named_by_the_collector() {
    let dir = common::temp("shards", "http-killed");
    let folder = |n: &str| {
        let d = dir.join(n);
        std::fs::create_dir_all(&d).unwrap();
        d
    };
    let (dep_dir, analyzer_dir) = (folder("dependency"), folder("analyzer"));
    let (report, url, rest) = collector(&analyzer_dir, "20");
    let (dependency, target) = common::serve_dependency(&dep_dir, &["--send-logs", &url]);
    let swarm = |i: u32| {
        let out = folder(&format!("shard{i}"));
        let child = shard_of_two(&target, i, &out, &["--send-logs", &url]);
        (out, child)
    };
    let (killed_out, mut killed) = swarm(1);
    let (kept_out, kept) = swarm(0);
    wait_for_an_attempt(&killed_out.join("e03b/client-C-seed7-shard1of2.jsonl"));
    killed.kill().unwrap();
    killed.wait().unwrap();
    let o = kept.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    // The orchestrator ends the dependency; it sends its log (the run incomplete) first.
    assert_eq!(common::terminate(dependency), Some(0));
    let o = report.wait_with_output().unwrap();
    let (out, err) = (String::from_utf8_lossy(&o.stdout), rest.join().unwrap());
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    assert!(err.contains("had not all ended"), "{err}");
    assert!(
        err.contains("(not come or not ended: client-C-seed7-shard1of2.jsonl)"),
        "{err}"
    );
    assert!(
        err.contains("shard1of2.jsonl: shard 1/2 of the run has no client log"),
        "{err}"
    );
    assert!(err.contains("incomplete"), "{err}");
    let got = analyzer_dir.join("e03b");
    assert_eq!(
        std::fs::read(got.join("client-C-seed7-shard0of2.jsonl")).unwrap(),
        std::fs::read(kept_out.join("e03b/client-C-seed7-shard0of2.jsonl")).unwrap()
    );
    let server = records(&got.join("server-C-seed7.jsonl"));
    assert_eq!(server.last().unwrap()["data"]["complete"], false);
    assert!(!got.join("client-C-seed7-shard1of2.jsonl").exists());
    let _ = std::fs::remove_dir_all(&dir);
}
