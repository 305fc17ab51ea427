//! What the client sees when the connection fails, classed (issue 27's outcome classes), with
//! real processes only: `lab client` (the swarm's own HTTP client and operation loop) against a
//! port where nothing listens, against `lab serve` losing every answer after the commit, and
//! through `lab proxy` with Toxiproxy's `reset_peer` and `limit_data` toxics in front of
//! `lab serve`. Each attempt's class is read from `lab client`'s lines.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;

use common::{http, lab, lab_proxy, spawn_first_line as start, temp, text, Running};

/// `lab serve` with `scenario` and `extra` flags; its work address.
fn serve(name: &str, scenario: &str, extra: &[&str]) -> (Running, String) {
    let logs = temp("wire", name);
    let logs = logs.to_str().unwrap();
    let mut args = vec![
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--control-listen",
        "127.0.0.1:0",
        "--log-dir",
        logs,
        "--scenario",
        scenario,
    ];
    args.extend_from_slice(extra);
    let (child, line) = start(&args);
    let work = line
        .split("work=")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("no work address in {line:?}"))
        .to_string();
    (child, work)
}

/// `lab client` (strategy A, 2 attempts) against `url`; the class of each attempt.
fn client(url: &str, post: bool) -> Vec<String> {
    client_with(url, post, &[])
}

/// [`client`] with more flags.
fn client_with(url: &str, post: bool, flags: &[&str]) -> Vec<String> {
    let o = lab()
        .args(["client", "--strategies", "A", "--max-attempts", "2"])
        .args(flags)
        .env("E03_TARGET_URL", url)
        .env("E03_TARGET_METHOD", if post { "POST" } else { "GET" })
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}{stderr}");
    let ends: Vec<String> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("attempt "))
        .map(|l| l.split_whitespace().nth(1).unwrap().to_string())
        .collect();
    assert_eq!(ends.len(), 2, "{stdout}");
    assert!(
        stdout.contains("Failed(AttemptsExhausted) after 2 attempt(s)"),
        "{stdout}"
    );
    ends
}

#[test]
fn nothing_listening_is_a_refused_connect() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let ends = client(&format!("http://127.0.0.1:{port}/work"), false);
    assert_eq!(ends, ["connect_refused", "connect_refused"]);
}

#[test]
fn a_connect_that_stalls_is_a_connect_timeout_with_one_and_a_timeout_without() {
    // A listener whose accept queue is full and never drained: the kernel drops further SYNs,
    // so a connect neither succeeds nor is refused (Python, as any other program would do it).
    let script = "import socket, sys, time\n\
                  l = socket.socket(); l.bind(('127.0.0.1', 0)); l.listen(0)\n\
                  port = l.getsockname()[1]\n\
                  fill = []\n\
                  for _ in range(4):\n\
                  \x20   c = socket.socket(); c.setblocking(False)\n\
                  \x20   try: c.connect(('127.0.0.1', port))\n\
                  \x20   except BlockingIOError: pass\n\
                  \x20   fill.append(c)\n\
                  print(port, flush=True)\n\
                  time.sleep(60)\n";
    let mut child = std::process::Command::new("python3")
        .args(["-c", script])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut port = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut port,
    )
    .unwrap();
    let _stalled = Running(child);
    let url = format!("http://127.0.0.1:{}/work", port.trim());
    assert_eq!(
        client_with(&url, false, &["--connect-timeout-ms", "200"]),
        ["connect_timeout", "connect_timeout"]
    );
    // Without a connect timeout, the attempt's timeout ends it.
    assert_eq!(
        client_with(&url, false, &["--attempt-timeout-ms", "300"]),
        ["timeout", "timeout"]
    );
}

#[test]
fn a_lost_answer_is_a_reset_before_the_answer_as_the_simulator_models_it() {
    // Every answer lost after its commit: the service aborts the connection before the head.
    let (_serve, work) = serve("lost", "idempotency", &["--lost-rate", "1"]);
    let ends = client(&format!("http://{work}/charge"), true);
    let lost = e03_model::cause::LOST_ANSWER.name();
    assert_eq!(ends, [lost, lost]);
    assert_eq!(lost, "reset_before_answer");
}

#[test]
fn the_proxy_s_resets_and_cut_bodies_are_told_apart() {
    let (_serve, work) = serve("proxied", "e03a", &["--fail-rate", "0", "--slow-rate", "0"]);
    let log = temp("wire", "proxy-log").join("proxy.jsonl");
    let (_proxy, api) = lab_proxy(&log);
    let created = http(
        &api,
        "POST",
        "/proxies",
        &format!(r#"{{"name":"dep","listen":"127.0.0.1:0","upstream":"{work}"}}"#),
    );
    assert!(created.starts_with("HTTP/1.1 201"), "{created}");
    let body = &created[created.find("\r\n\r\n").unwrap() + 4..];
    let listen = serde_json::from_str::<serde_json::Value>(body).unwrap()["listen"]
        .as_str()
        .unwrap()
        .to_string();
    let url = format!("http://{listen}/work");

    // Untouched, the answer is a 200 whose head is this long (the proxy passes it whole; asked
    // on a kept-alive connection, as the client asks, so the head has no `connection: close`).
    let head = {
        let mut s = TcpStream::connect(&listen).unwrap();
        s.write_all(b"GET /work HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let mut answer = Vec::new();
        let mut buf = [0u8; 1024];
        while !answer.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = s.read(&mut buf).unwrap();
            assert!(n > 0, "closed before the head: {answer:?}");
            answer.extend_from_slice(&buf[..n]);
        }
        let text = String::from_utf8_lossy(&answer).to_string();
        assert!(text.starts_with("HTTP/1.1 200"), "{text}");
        assert!(
            !text.to_lowercase().contains("content-length: 0\r\n"),
            "{text}"
        );
        text.find("\r\n\r\n").unwrap() + 4
    };

    // The head and one byte of the body, then the connection closes: a cut body.
    let toxic = |json: String| {
        let a = http(&api, "POST", "/proxies/dep/toxics", &json);
        assert!(a.starts_with("HTTP/1.1 200"), "{a}");
    };
    toxic(format!(
        r#"{{"name":"cut","type":"limit_data","attributes":{{"bytes":{}}}}}"#,
        head + 1
    ));
    assert_eq!(client(&url, false), ["reset_mid_body", "reset_mid_body"]);
    let removed = http(&api, "DELETE", "/proxies/dep/toxics/cut", "");
    assert!(removed.starts_with("HTTP/1.1 204"), "{removed}");

    // Reset at once: the request left, no answer came back.
    toxic(r#"{"name":"rst","type":"reset_peer","attributes":{"timeout":0}}"#.to_string());
    assert_eq!(
        client(&url, false),
        ["reset_before_answer", "reset_before_answer"]
    );
}

/// `lab run SCENARIO --seed 42` (exit 0) whose two check rows starting with `check` (A's and
/// C's) PASS; the scenario's folder of the run.
fn run_checked(scenario: &str, check: &str) -> std::path::PathBuf {
    let out = temp("wire", &format!("{scenario}-run"));
    let o = lab()
        .args(["run", scenario, "--seed", "42", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}{stderr}");
    let checks: Vec<&str> = stdout.lines().filter(|l| l.starts_with(check)).collect();
    assert_eq!(checks.len(), 2, "{stdout}");
    // Every check of the scenario, these two among them, passes.
    let verdicts: Vec<&str> = stdout
        .lines()
        .filter(|l| l.ends_with("PASS |") || l.ends_with("FAIL |"))
        .collect();
    assert!(verdicts.len() >= 2, "{stdout}");
    assert!(verdicts.iter().all(|l| l.ends_with("PASS |")), "{stdout}");
    out.join("latest").join(scenario)
}

/// `lab simulate SCENARIO --seeds 1` (exit 0): A's row of the no-answer table, its cells.
fn simulated_no_answer_of_a(scenario: &str) -> Vec<String> {
    let o = lab()
        .args(["simulate", scenario, "--seeds", "1", "--out"])
        .arg(temp("wire", &format!("{scenario}-sim")))
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}{stderr}");
    let row = stdout
        .lines()
        .skip_while(|l| !l.starts_with("Attempts without an answer"))
        .find(|l| l.starts_with("| A "))
        .unwrap_or_else(|| panic!("no row of A in the no-answer table: {stdout}"));
    row.split('|').map(|c| c.trim().to_string()).collect()
}

/// The run of strategy `id` in the `summary.json` of the scenario folder `dir`.
fn summary_run(dir: &std::path::Path, id: &str) -> serde_json::Value {
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    summary["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["strategy"] == id)
        .unwrap_or_else(|| panic!("no run of {id} in {summary}"))
        .clone()
}

/// The built-in `refused` scenario, live: a fault proxy in front of each dependency is taken
/// down from 3 s to 5 s; the refused attempts are counted from the client logs, checked against
/// the model at the latency measured, and the proxy's log holds both edges.
#[test]
fn lab_run_refused_puts_a_proxy_in_front_and_counts_the_refused_connects() {
    let dir = run_checked("refused", "| connects refused");
    let run = |id: &str| summary_run(&dir, id);
    let (a, c) = (run("A"), run("C"));
    let refused = |r: &serde_json::Value| r["no_answer"]["connect_refused"].as_u64().unwrap();
    // Immediate retry spends its 4 attempts at once, operation after operation.
    assert!(refused(&a) > 3 * refused(&c), "A {a}\nC {c}");
    // What never connected never arrived: the dependency saw fewer than were sent.
    let sent = a["total_requests"].as_u64().unwrap();
    assert!(sent < refused(&a), "{a}");
    // The proxy was taken down at 3 s and brought back at 5 s, and it logged so.
    let wire = std::fs::read_to_string(dir.join("wire-A-seed42.jsonl")).unwrap();
    let changes = wire
        .lines()
        .filter(|l| l.contains(r#""what":"proxy_updated""#))
        .count();
    assert_eq!(changes, 2, "{wire}");
    assert!(wire.contains(r#""event":"connection""#), "{wire}");
}

/// Simulated, a refused phase ends attempts as refused connects that never reach the
/// dependency, a blackhole times them out, and a `limit_data` on the requests (every toxic is
/// modelled now) of 100 bytes cuts every request of its phase (a request is 106 bytes): they
/// end as resets before an answer.
#[test]
fn the_simulator_models_refused_blackhole_and_limit_data_on_the_requests() {
    // "", strategy, read timeout, connect refused, ...
    let refused = simulated_no_answer_of_a("refused");
    assert_eq!(
        refused[3].parse::<u64>().map(|n| n > 400),
        Ok(true),
        "{refused:?}"
    );
    // A blackhole (timeout 0) is modelled: the answers of the phase are dropped, so its
    // attempts end at their timeout.
    let blackhole = simulated_no_answer_of_a("blackhole");
    assert_eq!(
        blackhole[2].parse::<u64>().map(|n| n > 10),
        Ok(true),
        "{blackhole:?}"
    );

    let file = temp("wire", "toxic-file").join("slow.toml");
    std::fs::write(
        &file,
        "name = \"slow-test\"\ntitle = \"S\"\ndescription = \"d\"\n\
         [[timeline]]\nphase = \"toxic\"\nstart_s = 1\nend_s = 3\ntoxic = \"limit_data\"\n\
         attributes = { bytes = 100 }\nstream = \"upstream\"\n",
    )
    .unwrap();
    let toxic_out = temp("wire", "toxic-out");
    let o = lab()
        .args(["simulate"])
        .arg(&file)
        .args(["--seeds", "1", "--out"])
        .arg(&toxic_out)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}{stderr}");
    // "", strategy, read timeout, connect refused, connect timeout, reset before answer, ...
    let row: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("Attempts without an answer"))
        .find(|l| l.starts_with("| A "))
        .unwrap_or_else(|| panic!("no row of A in the no-answer table: {stdout}"))
        .split('|')
        .map(str::trim)
        .collect();
    assert_eq!(row[5].parse::<u64>().map(|n| n > 0), Ok(true), "{row:?}");
}

/// A toxic phase, live: 300 ms of latency on the wire from 1 s to 2.5 s against attempts that
/// time out after 250 ms. The proxy's log holds the toxic added and removed 1.5 s apart, and
/// the attempts of the phase are read timeouts.
#[test]
fn a_toxic_phase_runs_live_through_the_proxy_in_front() {
    let dir = temp("wire", "toxic-live");
    let file = dir.join("slow-wire.toml");
    std::fs::write(
        &file,
        "name = \"slow-wire-test\"\ntitle = \"S\"\ndescription = \"d\"\n\
         [[timeline]]\nphase = \"toxic\"\nstart_s = 1.0\nend_s = 2.5\ntoxic = \"latency\"\n\
         attributes = { latency = 300 }\n\
         [workload]\nclients = 5\nduration_s = 3.5\nthink_min_ms = 100\nthink_max_ms = 200\n\
         [policy]\nstrategies = [\"C\"]\nattempt_timeout_ms = 250\n",
    )
    .unwrap();
    let out = dir.join("out");
    let o = lab()
        .arg("run")
        .arg(&file)
        .args(["--seed", "1", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains("Attempts without an answer, by how they ended:"),
        "{stdout}"
    );
    let run = out.join("latest").join("slow-wire-test");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    let timeouts = summary["runs"][0]["no_answer"]["timeout"].as_u64().unwrap();
    assert!(timeouts > 0, "{summary}");
    let wire = std::fs::read_to_string(run.join("wire-C-seed1.jsonl")).unwrap();
    let at = |what: &str| -> u64 {
        let line = wire
            .lines()
            .find(|l| l.contains(&format!(r#""what":"{what}""#)))
            .unwrap_or_else(|| panic!("no {what} in {wire}"));
        serde_json::from_str::<serde_json::Value>(line).unwrap()["at_us"]
            .as_u64()
            .unwrap()
    };
    let held = at("toxic_removed") - at("toxic_added");
    assert!((1_450_000..1_600_000).contains(&held), "{held} µs: {wire}");
    assert!(wire.contains(r#""type":"latency""#), "{wire}");
}

/// The built-in `blackhole` scenario, live: the proxy in front drops every answer from 3 s to
/// 5 s; the read timeouts equal the model's, and the proxy's log holds the toxic's edges.
#[test]
fn lab_run_blackhole_times_out_what_the_model_times_out() {
    let dir = run_checked("blackhole", "| read timeouts");
    let wire = std::fs::read_to_string(dir.join("wire-A-seed42.jsonl")).unwrap();
    for what in ["toxic_added", "toxic_removed"] {
        assert!(wire.contains(&format!(r#""what":"{what}""#)), "{wire}");
    }
    assert!(wire.contains(r#""type":"timeout""#), "{wire}");
}

/// The built-in `slow-network` scenario, live: a latency on the wire (50 ms, 300 ms from 3 s to
/// 8 s, 50 ms) in front of a dependency that answers in 40 ms, attempts of 250 ms. The read
/// timeouts, those whose answer had already left the dependency, and the operations worked
/// twice all pass their checks against the model; the proxy logged the three toxics.
#[test]
fn lab_run_slow_network_times_out_answers_the_dependency_already_sent() {
    let dir = run_checked("slow-network", "| read timeouts, answer sent");
    let a = summary_run(&dir, "A");
    let timeouts = a["no_answer"]["timeout"].as_u64().unwrap();
    let network = a["wire"]["network_timeouts"].as_u64().unwrap();
    // The dependency answers in 40 ms: nearly every timeout is the network's alone.
    assert!(timeouts > 100, "{a}");
    assert!(network * 10 >= timeouts * 9, "{a}");
    assert!(a["wire"]["done_twice"].as_u64().unwrap() > 10, "{a}");
    let wire = std::fs::read_to_string(dir.join("wire-A-seed42.jsonl")).unwrap();
    let added = wire
        .lines()
        .filter(|l| l.contains(r#""what":"toxic_added""#))
        .count();
    assert_eq!(added, 3, "{wire}");
}

/// The built-in `reset-storm` scenario, live: the proxy in front resets 30% of connections for
/// 3 s; the client that opens a connection per attempt meets the resets on every attempt, the one
/// that keeps its connection hardly at all. The resets and the connections opened pass their
/// checks against the model; the proxy's log holds every connection accepted.
#[test]
fn lab_run_reset_storm_resets_the_clients_that_open_a_connection_per_attempt() {
    let dir = run_checked("reset-storm", "| resets before the answer");
    let run = |id: &str| summary_run(&dir, id);
    let (reuse, new) = (run("reuse"), run("new"));
    let opened = |r: &serde_json::Value| r["wire"]["connections"].as_u64().unwrap();
    // An empty no-answer table is not written: no reset at all.
    let resets =
        |r: &serde_json::Value| r["no_answer"]["reset_before_answer"].as_u64().unwrap_or(0);
    assert!(opened(&new) > 10 * opened(&reuse), "{reuse}\n{new}");
    assert!(resets(&new) > 5 * resets(&reuse).max(1), "{reuse}\n{new}");
    let wire = std::fs::read_to_string(dir.join("wire-new-seed42.jsonl")).unwrap();
    let accepted = wire
        .lines()
        .filter(|l| l.contains(r#""event":"accepted""#))
        .count() as u64;
    assert_eq!(accepted, opened(&new), "{wire}");
    assert!(wire.contains(r#""end":"reset""#), "{wire}");
}
