//! `lab audit -- COMMAND [ARGS...]`: the retry-logic article's checklist measured on any HTTP client.
//!
//! The lab serves the probes of [`e03_model::audit::battery`] on loopback
//! ([`dependency_service::audit::AuditServer`]) and runs the client once per probe instance,
//! with the probe's URL in `E03_TARGET_URL`, the method in `E03_TARGET_METHOD` and the number
//! of operations to run one after another in `E03_OPERATIONS`. A client still running at its
//! probe's limit is stopped (SIGKILL to its process group). With `--wait`, the lab runs nothing:
//! it prints each probe's URL and waits for the user's client.
//!
//! Then it writes `OUT/<run id>/audit.jsonl` (every request and every client run), grades that
//! log alone ([`analyzer::audit`]) and prints the scorecard, also kept as `scorecard.json` and
//! `scorecard.md`. Exit 0 when nothing FAILs, 1 on any FAIL, 2 on bad input, 130 when stopped
//! (the log is kept, marked incomplete with `STOPPED.txt`, and no scorecard is written).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use dependency_service::audit::AuditServer;
use e03_io::rundir::RunChoice;
use e03_model::audit::{battery, AuditRecord, Probe};

use crate::outdir;
use crate::{EXIT_STOPPED, EXIT_USAGE};

const HELP: &str = "\
Usage: lab audit [OPTIONS] -- COMMAND [ARGS...]
       lab audit [OPTIONS] --wait

Grades an HTTP client against the checklist of the retry-logic article (docs/scenarios.md, \"The
source articles\"): classification, idempotency, attempt timeout, deadline, backoff (growth, cap,
jitter), Retry-After (ms early or late), attempts per operation in an outage, a retry budget,
other layers that retry.

The lab serves a battery of probes on loopback and runs COMMAND once per probe instance (20 copies
at once for the backoff probe, one operation each; 5 for each Retry-After probe), with:
  E03_TARGET_URL     the probe's URL: do one operation against it, as your service would
  E03_TARGET_METHOD  GET, or POST for the idempotency probe
  E03_OPERATIONS     operations to run one after another (10 for the outage probe, else 1)
A client may name its operations with the header x-e03-op (same value on every attempt
of one operation). A client still running at its probe's limit (10 to 20 s) is stopped.

Options:
  --attempts N    the most attempts per operation the client says it makes (checks for
                  another layer that retries; without it that row is a WARN)
  --wait          run nothing: print each probe's URL and wait for your client
  --listen ADDR   where the probes listen [default: 127.0.0.1:0, any free port]
  --upstream URL  the probes in front of your service: what a probe answers with success is
                  forwarded to URL (and the idempotency probe's lost answer commits there); the
                  faults stay the probes' own
  --out DIR       results folder [default: results/audit]; the audit writes OUT/<run id>/
  --require ROW=VERDICT
                  the worst verdict a row may get (PASS, WARN or FAIL; repeatable); a row not
                  named must not FAIL. Unmet: exit 99 (see docs/ci-gates.md)
  --junit FILE    every scorecard row as a JUnit XML test case, failed when unmet
  -h, --help      this help

Writes OUT/<run id>/audit.jsonl, scorecard.json and scorecard.md, and the client's output in
clients/. Exit 0: no FAIL; 1: a FAIL; 2: bad input; 99: with --require, a row worse than
required; 130: stopped. See docs/audit.md.";

/// How long `--wait` waits for the first request of a probe.
const WAIT_FOR_FIRST: Duration = Duration::from_secs(120);
/// With `--wait`, a probe ends once no request has come or been open for this long.
const WAIT_QUIET: Duration = Duration::from_secs(3);

#[derive(Debug, Clone)]
struct AuditArgs {
    command: Vec<String>,
    wait: bool,
    attempts: Option<u32>,
    listen: SocketAddr,
    out: PathBuf,
    upstream: Option<dependency_service::http_proxy::Upstream>,
    /// `--require ROW=VERDICT` ([`crate::require`]).
    require: Vec<crate::require::Requirement>,
    junit: Option<PathBuf>,
}

fn usage(msg: &str) -> i32 {
    eprintln!("lab: {msg}");
    EXIT_USAGE
}

fn parse(args: &[std::ffi::OsString]) -> Result<Option<AuditArgs>, String> {
    let mut a = AuditArgs {
        command: Vec::new(),
        wait: false,
        attempts: None,
        listen: "127.0.0.1:0".parse().expect("an address"),
        out: PathBuf::from("results/audit"),
        upstream: None,
        require: Vec::new(),
        junit: None,
    };
    let mut rest = args
        .iter()
        .skip(2)
        .map(|a| a.to_string_lossy().into_owned());
    while let Some(arg) = rest.next() {
        if arg == "--" {
            a.command = rest.by_ref().collect();
            break;
        }
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let mut value = |what: &str| {
            inline
                .clone()
                .or_else(|| rest.next())
                .ok_or(format!("{flag} needs a value: {what}"))
        };
        match flag.as_str() {
            "-h" | "--help" => return Ok(None),
            "--wait" => a.wait = true,
            "--attempts" => {
                let v = value("a number of attempts, 1 to 100")?;
                a.attempts = Some(
                    v.trim()
                        .parse::<u32>()
                        .ok()
                        .filter(|n| (1..=100).contains(n))
                        .ok_or(format!(
                            "invalid --attempts {v:?}: expected a number of attempts, 1 to 100"
                        ))?,
                );
            }
            "--listen" => {
                let v = value("an address, such as 127.0.0.1:8099")?;
                a.listen = v.trim().parse().map_err(|_| {
                    format!("invalid --listen {v:?}: expected an address such as 127.0.0.1:8099")
                })?;
            }
            "--upstream" => {
                let v = value("an http:// URL of your service")?;
                // Checked as the proxy checks it; sent to exactly the URL given.
                dependency_service::http_proxy::Upstream::parse(&v).map_err(|e| e.to_string())?;
                let url = reqwest::Url::parse(v.trim()).map_err(|e| e.to_string())?;
                a.upstream = Some(dependency_service::http_proxy::Upstream(url));
            }
            "--require" => {
                let v = value("ROW=VERDICT, such as idempotency=PASS")?;
                a.require
                    .push(crate::require::parse(&v, &crate::require::row_names())?);
            }
            "--junit" => a.junit = Some(crate::gate::junit_path(&value("a file to write")?)?),
            "--out" => {
                let v = value("a folder")?;
                if v.trim().is_empty() {
                    return Err("invalid --out \"\": expected a folder".into());
                }
                a.out = PathBuf::from(v);
            }
            _ => {
                return Err(format!(
                    "unknown argument {arg:?}: the client's command goes after `--`; see \
                     `lab audit --help`"
                ))
            }
        }
    }
    match (a.wait, a.command.is_empty()) {
        (false, true) => {
            return Err(
                "COMMAND: no client to audit: give its command after `--` (lab audit -- python3 \
                 my_client.py), or --wait to drive it yourself"
                    .to_string(),
            )
        }
        (true, false) => return Err("--wait runs no command: give one or the other".to_string()),
        _ => {}
    }
    if let Some(program) = a.command.first() {
        if !runnable(program) {
            return Err(format!(
                "COMMAND: {program:?} is not a program found on PATH or an executable file"
            ));
        }
    }
    Ok(Some(a))
}

/// Whether `program` names an executable file, directly or on PATH.
fn runnable(program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        return executable(Path::new(program));
    }
    std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|dir| executable(&dir.join(program)))
    })
}

pub fn main(args: &[std::ffi::OsString]) -> i32 {
    let a = match parse(args) {
        Ok(Some(a)) => a,
        Ok(None) => {
            println!("{HELP}");
            return 0;
        }
        Err(e) => return usage(&e),
    };
    let claim = match outdir::claim_undoable(&a.out, &RunChoice::default()) {
        Ok(c) => c,
        Err(e) => return outdir::fail("lab", &e),
    };
    match audit(&a, &claim.run.dir) {
        Ok(code) => code,
        Err(e) => {
            claim.abandon_if_empty(&a.out);
            outdir::fail("lab", &e)
        }
    }
}

fn audit(a: &AuditArgs, dir: &Path) -> anyhow::Result<i32> {
    crate::gate::start();
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))?;
    }
    let probes = battery();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let server = rt
        .block_on(AuditServer::start_in_front(
            a.listen,
            &probes,
            a.upstream.clone(),
        ))
        .with_context(|| format!("listening on {}", a.listen))?;
    server.record(AuditRecord::AuditStart {
        probes: probes.clone(),
        command: a.command.clone(),
        claimed_attempts: a.attempts,
    });
    let clients = dir.join("clients");
    std::fs::create_dir_all(&clients)?;
    eprintln!(
        "lab: {} probes at http://{}/audit/<probe>/<instance>; writing {}",
        probes.len(),
        server.addr(),
        e03_io::rundir::shown(dir)
    );
    let mut complete = true;
    for p in &probes {
        if stop.load(Ordering::SeqCst) {
            complete = false;
            break;
        }
        let done = if a.wait {
            rt.block_on(wait_for_user(&server, p, &stop))
        } else {
            rt.block_on(run_probe(&server, p, &a.command, &clients, &stop))?
        };
        if !done {
            complete = false;
            break;
        }
    }
    server.record(AuditRecord::AuditEnd { complete });
    rt.block_on(server.stop_listening());
    // Dropping the runtime drops every held request: each writes its record.
    rt.shutdown_timeout(Duration::from_secs(2));
    let mut records = server.take_records();
    records.sort_by_key(order);
    let log = dir.join("audit.jsonl");
    e03_io::logs::write_jsonl(&log, &records)
        .with_context(|| format!("writing {}", log.display()))?;
    if !complete {
        e03_io::logs::write_atomic(
            &dir.join(e03_plan::log_names::STOPPED_MARKER),
            b"lab audit was stopped before its battery ended: audit.jsonl is incomplete and was \
              not graded.\n",
        )?;
        eprintln!(
            "lab: stopped; the log so far is in {} (incomplete, not graded)",
            e03_io::rundir::shown(&log)
        );
        return Ok(EXIT_STOPPED);
    }
    // The scorecard comes from the log as written, nothing else.
    let card = analyzer::audit::grade(&analyzer::audit::read_log(&log)?);
    e03_io::logs::write_atomic(
        &dir.join("scorecard.json"),
        serde_json::to_string_pretty(&card)?.as_bytes(),
    )?;
    e03_io::logs::write_atomic(&dir.join("scorecard.md"), card.markdown().as_bytes())?;
    println!("{}", card.table());
    println!(
        "scorecard: {} (advice for each row in scorecard.md)",
        e03_io::rundir::shown(&dir.join("scorecard.json"))
    );
    Ok(crate::require::gate(
        &card,
        &a.require,
        a.junit.as_deref(),
        dir,
    ))
}

/// Log order: the start, then everything by its time, then the end.
fn order(r: &AuditRecord) -> (u8, u64) {
    match r {
        AuditRecord::AuditStart { .. } => (0, 0),
        AuditRecord::Request(q) => (1, q.arrived_us),
        AuditRecord::ClientRun { started_us, .. } => (1, *started_us),
        AuditRecord::AuditEnd { .. } => (2, 0),
    }
}

/// Runs the client on every instance of `p` at once and waits for them, stopping those still
/// running at the probe's limit. False when the audit was stopped by a signal.
async fn run_probe(
    server: &AuditServer,
    p: &Probe,
    command: &[String],
    clients: &Path,
    stop: &AtomicBool,
) -> anyhow::Result<bool> {
    let started = Instant::now();
    let started_us = server.now_us();
    let limit = Duration::from_millis(p.limit_ms);
    let mut children = Vec::new();
    for i in 0..p.instances {
        let out_path = clients.join(format!("{}-{i}.log", p.name));
        let out = std::fs::File::create(&out_path)
            .with_context(|| format!("creating {}", out_path.display()))?;
        let child = tokio::process::Command::new(&command[0])
            .args(&command[1..])
            .env("E03_TARGET_URL", server.url(&p.name, i))
            .env("E03_TARGET_METHOD", &p.method)
            .env("E03_OPERATIONS", p.operations.to_string())
            .env("E03_AUDIT_PROBE", &p.name)
            .stdin(std::process::Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting the client {:?}", command[0]))?;
        children.push(child);
    }
    let mut exits: Vec<Option<(Option<i32>, u64)>> = vec![None; children.len()];
    let mut stopped_at_limit = false;
    let mut signalled = false;
    while exits.iter().any(Option::is_none) {
        for (i, c) in children.iter_mut().enumerate() {
            if exits[i].is_none() {
                if let Some(status) = c.try_wait()? {
                    exits[i] = Some((status.code(), server.now_us()));
                }
            }
        }
        if exits.iter().all(Option::is_some) {
            break;
        }
        signalled = stop.load(Ordering::SeqCst);
        if signalled || started.elapsed() >= limit {
            stopped_at_limit = !signalled;
            for c in &children {
                if let Some(pid) = c.id() {
                    let _ = nix::sys::signal::killpg(
                        nix::unistd::Pid::from_raw(pid as i32),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
            }
            for (i, c) in children.iter_mut().enumerate() {
                if exits[i].is_none() {
                    let status = c.wait().await?;
                    exits[i] = Some((status.code(), server.now_us()));
                }
            }
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for (i, e) in exits.into_iter().enumerate() {
        let (exit, ended_us) = e.expect("every child was waited for");
        server.record(AuditRecord::ClientRun {
            probe: p.name.clone(),
            instance: i as u32,
            started_us,
            ended_us,
            exit,
            stopped_at_limit,
        });
    }
    // The connections of a stopped client close now: give the server a moment to see them.
    settle(server, &p.name).await;
    let verdict = if stopped_at_limit {
        " (stopped at its limit)"
    } else {
        ""
    };
    eprintln!(
        "lab: {:24} {} request(s) in {:.1} s{verdict}",
        p.name,
        server.activity(&p.name).0,
        started.elapsed().as_secs_f64()
    );
    Ok(!signalled)
}

/// Waits (at most 1 s) until no request of `probe` is still open.
async fn settle(server: &AuditServer, probe: &str) {
    let until = Instant::now() + Duration::from_secs(1);
    while server.activity(probe).1 > 0 && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// `--wait`: prints the probe's URL(s) and waits for the user's client: for its first request
/// (at most [`WAIT_FOR_FIRST`]), then until nothing has come or been open for [`WAIT_QUIET`], or
/// the probe's limit. False when the audit was stopped by a signal or no request came.
async fn wait_for_user(server: &AuditServer, p: &Probe, stop: &AtomicBool) -> bool {
    let urls: Vec<String> = (0..p.instances).map(|i| server.url(&p.name, i)).collect();
    eprintln!(
        "lab: probe {}: point {} client(s) at {} (method {}, {} operation(s) each)",
        p.name,
        p.instances,
        urls.join(" "),
        p.method,
        p.operations
    );
    let asked = Instant::now();
    let started_us = server.now_us();
    let mut first: Option<Instant> = None;
    let mut last_change = Instant::now();
    let mut seen = (0, 0);
    let mut stopped_at_limit = false;
    loop {
        if stop.load(Ordering::SeqCst) {
            return false;
        }
        let now = server.activity(&p.name);
        if now != seen {
            seen = now;
            last_change = Instant::now();
            first.get_or_insert_with(Instant::now);
        }
        match first {
            None if asked.elapsed() > WAIT_FOR_FIRST => {
                eprintln!(
                    "lab: no request on {} within {} s",
                    p.name,
                    WAIT_FOR_FIRST.as_secs()
                );
                return false;
            }
            Some(f) if f.elapsed() >= Duration::from_millis(p.limit_ms) => {
                stopped_at_limit = seen.1 > 0;
                break;
            }
            Some(_) if seen.1 == 0 && last_change.elapsed() >= WAIT_QUIET => break,
            _ => {}
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for i in 0..p.instances {
        server.record(AuditRecord::ClientRun {
            probe: p.name.clone(),
            instance: i,
            started_us,
            ended_us: server.now_us(),
            exit: None,
            stopped_at_limit,
        });
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<std::ffi::OsString> {
        ["lab", "audit"]
            .iter()
            .chain(v)
            .map(std::ffi::OsString::from)
            .collect()
    }

    #[test]
    fn bad_input_names_the_flag_and_what_it_accepts() {
        for (argv, said) in [
            (&[][..], "COMMAND: no client to audit"),
            (
                &["--attempts", "0", "--", "true"][..],
                "invalid --attempts \"0\"",
            ),
            (
                &["--listen", "here", "--", "true"][..],
                "invalid --listen \"here\"",
            ),
            (&["--wait", "--", "true"][..], "--wait runs no command"),
            (
                &["--upstream", "ftp://x", "--", "true"][..],
                "invalid --upstream \"ftp://x\": expected an http:// URL",
            ),
            (&["--frobnicate"][..], "unknown argument \"--frobnicate\""),
            (
                &["--", "no-such-program-e03"][..],
                "COMMAND: \"no-such-program-e03\" is not",
            ),
        ] {
            let e = parse(&args(argv)).unwrap_err();
            assert!(e.contains(said), "{argv:?}: {e}");
        }
        // The URL given is where a probe's success goes, as given (no path added).
        let a = parse(&args(&[
            "--upstream",
            "http://127.0.0.1:9/api/charge",
            "--",
            "true",
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(
            a.upstream.map(|u| u.0.to_string()).as_deref(),
            Some("http://127.0.0.1:9/api/charge")
        );
        let a = parse(&args(&["--attempts=3", "--", "true", "x"]))
            .unwrap()
            .unwrap();
        assert_eq!((a.attempts, a.command.len()), (Some(3), 2));
    }
}
