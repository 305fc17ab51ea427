//! `lab proxy --http` as a program, in front of a real upstream (a `lab serve` of a plain
//! scenario, whose own log says which requests reached it): each fault of a phase as the caller
//! sees it and as both logs record it, Envoy's fault headers, `lab analyze --server-log` of the
//! proxy's log, and bad input (exit 2 naming the flag or the file's key).

mod common;

use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;

use common::{lab, serve_standalone, spawn_first_line, temp, terminate, text, Running};

const PLAIN: &str = "name = \"plain\"\ntitle = \"Plain\"\ndescription = \"no fault\"\n";

/// A `lab serve` of a scenario with no phase and no fault, logging into `dir`: the child and
/// its work address.
fn upstream(dir: &Path) -> (Running, String) {
    let file = dir.join("plain.toml");
    std::fs::write(&file, PLAIN).unwrap();
    let mut cmd = lab();
    cmd.args(["serve", "--scenario", file.to_str().unwrap()])
        .args(["--log-dir", dir.join("up").to_str().unwrap()]);
    serve_standalone(cmd)
}

/// The upstream's arrivals, once it stopped.
fn upstream_arrivals(dir: &Path, up: Running) -> usize {
    assert_eq!(terminate(up), Some(0));
    let log = dir.join("up/standalone/server-standalone.jsonl");
    std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| l.contains(r#""type":"arrival""#))
        .count()
}

/// `lab proxy --http` in front of `upstream` with one phase (`phase`, from 0 to an hour) of a
/// scenario file, logging into `log`: the child and its address.
fn proxy(dir: &Path, upstream: &str, phase: &str, log: &str, more: &[&str]) -> (Running, String) {
    let mut args = vec![
        "proxy".to_string(),
        "--http".into(),
        "--listen".into(),
        "127.0.0.1:0".into(),
        "--upstream".into(),
        format!("http://{upstream}"),
        "--log".into(),
        dir.join(log).to_str().unwrap().into(),
    ];
    if !phase.is_empty() {
        let file = dir.join(format!("{log}.toml"));
        std::fs::write(
            &file,
            format!("{PLAIN}\n[[timeline]]\nstart_s = 0\nend_s = 3600\n{phase}\n"),
        )
        .unwrap();
        args.extend(["--scenario".into(), file.to_str().unwrap().into()]);
    }
    args.extend(more.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (child, line) = spawn_first_line(&args);
    let addr = line
        .strip_prefix("listening http=")
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    (child, addr)
}

/// One `GET /work` with `headers`, on a connection of its own: the answer as read (`Err`: the
/// connection failed or was reset; an empty `Ok`: closed before any answer).
fn get(addr: &str, headers: &[&str], timeout: Duration) -> Result<String, String> {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(timeout)).unwrap();
    let extra: String = headers.iter().map(|h| format!("{h}\r\n")).collect();
    write!(
        s,
        "GET /work HTTP/1.1\r\nHost: x\r\n{extra}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer)
        .map(|_| answer)
        .map_err(|e| e.to_string())
}

fn records(log: &Path, kind: &str) -> Vec<serde_json::Value> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["type"] == kind)
        .map(|v| v["data"].clone())
        .collect()
}

const SECOND: Duration = Duration::from_secs(1);

#[test]
fn an_abort_of_the_first_attempt_of_each_operation_then_the_upstream_s_answer() {
    let dir = temp("http-proxy", "abort");
    let (up, work) = upstream(&dir);
    let phase = "phase = \"abort\"\nstatus = 429\nretry_after_s = 1\nfirst = 1\n\
                 operation_key = \"idempotency-key\"";
    let (px, addr) = proxy(&dir, &work, phase, "abort.jsonl", &[]);
    let first = get(&addr, &["Idempotency-Key: k1"], SECOND).unwrap();
    assert!(first.starts_with("HTTP/1.1 429"), "{first}");
    assert!(
        first.to_ascii_lowercase().contains("retry-after: 1\r\n"),
        "{first}"
    );
    let again = get(&addr, &["Idempotency-Key: k1"], SECOND).unwrap();
    assert!(again.starts_with("HTTP/1.1 200"), "{again}");
    let other = get(&addr, &["Idempotency-Key: k2"], SECOND).unwrap();
    assert!(other.starts_with("HTTP/1.1 429"), "{other}");
    // No key: this rule cannot tell its operation, so it is forwarded, and the record says so.
    let keyless = get(&addr, &[], SECOND).unwrap();
    assert!(keyless.starts_with("HTTP/1.1 200"), "{keyless}");
    assert_eq!(terminate(px), Some(0));
    assert_eq!(upstream_arrivals(&dir, up), 2, "the two forwarded requests");
    let log = dir.join("abort.jsonl");
    assert_eq!(records(&log, "arrival").len(), 4);
    let proxied = records(&log, "proxied");
    let faults: Vec<_> = proxied.iter().map(|p| p["fault"].clone()).collect();
    assert_eq!(
        faults,
        [
            serde_json::json!("abort 429"),
            serde_json::Value::Null,
            serde_json::json!("abort 429"),
            serde_json::Value::Null
        ]
    );
    assert_eq!(proxied[1]["upstream_status"], 200);
    assert!(
        proxied[3]["notes"][0]
            .as_str()
            .unwrap()
            .contains("no operation key (idempotency-key)"),
        "{:?}",
        proxied[3]
    );
    let causes: Vec<_> = records(&log, "response")
        .iter()
        .map(|r| r["cause"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(causes, ["injected", "upstream", "injected", "upstream"]);
    // The log reads as a dependency's, titled with the scenario kept beside it.
    let out = dir.join("analysis");
    let o = lab()
        .args(["analyze", "--server-log", log.to_str().unwrap(), "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("abort.jsonl |     4 |"), "{stdout}");
    assert!(stdout.contains("(Plain)"), "{stdout}");
}

#[test]
fn resets_before_and_after_the_upstream_and_a_hang_the_caller_leaves() {
    let dir = temp("http-proxy", "reset");
    let (up, work) = upstream(&dir);
    let (before, at_before) = proxy(&dir, &work, "phase = \"reset\"", "before.jsonl", &[]);
    let (after, at_after) = proxy(
        &dir,
        &work,
        "phase = \"reset\"\nwhen = \"after\"",
        "after.jsonl",
        &[],
    );
    let (hang, at_hang) = proxy(&dir, &work, "phase = \"hang\"", "hang.jsonl", &[]);
    for addr in [&at_before, &at_after] {
        let answer = get(addr, &[], SECOND);
        assert!(
            answer.as_ref().is_err() || answer.as_ref().is_ok_and(|a| a.is_empty()),
            "{addr}: no answer expected, got {answer:?}"
        );
    }
    let held = get(&at_hang, &[], Duration::from_millis(300));
    assert!(held.is_err(), "a hang answers nothing: {held:?}");
    // The caller left; give the proxy a moment to see its connection close.
    std::thread::sleep(Duration::from_millis(200));
    for p in [before, after, hang] {
        assert_eq!(terminate(p), Some(0));
    }
    assert_eq!(
        upstream_arrivals(&dir, up),
        1,
        "only the reset after reached it"
    );
    let before = records(&dir.join("before.jsonl"), "proxied");
    assert_eq!(
        (before[0]["fault"].as_str(), before[0]["end"].as_str()),
        (Some("reset before"), Some("reset"))
    );
    assert!(before[0]["upstream_status"].is_null());
    let after = records(&dir.join("after.jsonl"), "proxied");
    assert_eq!(
        (after[0]["fault"].as_str(), after[0]["end"].as_str()),
        (Some("reset after"), Some("reset"))
    );
    assert_eq!(after[0]["upstream_status"], 200);
    let lost = records(&dir.join("after.jsonl"), "response");
    assert_eq!(lost[0]["cause"], "lost", "the work done, the answer lost");
    let hung = records(&dir.join("hang.jsonl"), "proxied");
    assert_eq!(
        (hung[0]["fault"].as_str(), hung[0]["end"].as_str()),
        (Some("hang"), Some("left"))
    );
    assert!(records(&dir.join("hang.jsonl"), "response").is_empty());
}

#[test]
fn envoy_s_fault_headers_choose_a_fault_per_request() {
    let dir = temp("http-proxy", "envoy");
    let (up, work) = upstream(&dir);
    let (px, addr) = proxy(&dir, &work, "", "envoy.jsonl", &["--fault-headers"]);
    let started = std::time::Instant::now();
    let aborted = get(
        &addr,
        &[
            "x-envoy-fault-abort-request: 503",
            "x-envoy-fault-delay-request: 250",
        ],
        Duration::from_secs(5),
    )
    .unwrap();
    assert!(aborted.starts_with("HTTP/1.1 503"), "{aborted}");
    assert!(
        started.elapsed() >= Duration::from_millis(250),
        "delayed first"
    );
    // Envoy's range is [200, 600): 600 is not applied, and the record says why.
    let ignored = get(&addr, &["x-envoy-fault-abort-request: 600"], SECOND).unwrap();
    assert!(ignored.starts_with("HTTP/1.1 200"), "{ignored}");
    let none = get(
        &addr,
        &[
            "x-envoy-fault-abort-request-percentage: 0",
            "x-envoy-fault-abort-request: 500",
        ],
        SECOND,
    )
    .unwrap();
    assert!(none.starts_with("HTTP/1.1 200"), "0 percent: {none}");
    assert_eq!(terminate(px), Some(0));
    assert_eq!(upstream_arrivals(&dir, up), 2);
    let proxied = records(&dir.join("envoy.jsonl"), "proxied");
    assert_eq!(proxied[0]["fault"], "header delay 250 ms, header abort 503");
    assert!(
        proxied[1]["notes"][0]
            .as_str()
            .unwrap()
            .contains("x-envoy-fault-abort-request"),
        "{:?}",
        proxied[1]
    );
}

#[test]
fn bad_input_names_the_flag_or_the_key_and_exits_2() {
    let dir = temp("http-proxy", "bad");
    let file = |name: &str, body: &str| {
        let p = dir.join(name);
        std::fs::write(
            &p,
            format!("{PLAIN}\n[[timeline]]\nstart_s = 1\nend_s = 2\n{body}\n"),
        )
        .unwrap();
        p.to_str().unwrap().to_string()
    };
    let refused = file("refused.toml", "phase = \"refused\"");
    let bad_key = file(
        "bad-key.toml",
        "phase = \"abort\"\nstatus = 503\npercent = 101",
    );
    let aborts = file("aborts.toml", "phase = \"abort\"\nstatus = 503");
    let existing = dir.join("existing.jsonl");
    std::fs::write(&existing, "mine\n").unwrap();
    let up = ["--upstream", "http://127.0.0.1:9"];
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["proxy", "--http"], "--upstream URL is required"),
        (
            vec!["proxy", "--http", "--upstream", "ftp://x"],
            "invalid --upstream \"ftp://x\": expected an http:// URL",
        ),
        (
            [&["proxy", "--http", "--listen", "nowhere"][..], &up].concat(),
            "invalid --listen \"nowhere\"",
        ),
        (
            [
                &["proxy", "--http", "--scenario", refused.as_str()][..],
                &up,
            ]
            .concat(),
            "its refused phase cannot be applied by a proxy: a fault on the wire",
        ),
        (
            [
                &["proxy", "--http", "--scenario", bad_key.as_str()][..],
                &up,
            ]
            .concat(),
            "percent = 101: expected a share of the requests from 0 to 100",
        ),
        (
            [
                &["proxy", "--http", "--log", existing.to_str().unwrap()][..],
                &up,
            ]
            .concat(),
            "the proxy never writes over a file",
        ),
        (
            [&["proxy", "--http", "--timeline-start", "later"][..], &up].concat(),
            "invalid --timeline-start \"later\": expected process or first-request",
        ),
        (
            vec!["simulate", aborts.as_str()],
            "its abort phase at 1 s is an HTTP fault of `lab proxy --http`",
        ),
    ];
    for (args, said) in cases {
        let o = lab().args(&args).output().unwrap();
        let (_, stderr) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(said), "{args:?}: {stderr}");
    }
    assert_eq!(std::fs::read_to_string(&existing).unwrap(), "mine\n");
}
