//! `lab client`: one of the lab's own strategies as a plain HTTP client of any URL, so that
//! `lab audit` can grade it like any other client:
//!
//! ```text
//! lab audit --attempts 4 -- lab client --strategies C
//! ```
//!
//! It runs `E03_OPERATIONS` operations (default 1) one after another against `E03_TARGET_URL`,
//! with `E03_TARGET_METHOD` (`GET`, or `POST` with the strategy's `Idempotency-Key` if it has a
//! key policy), through the same session and live driver as the swarm
//! ([`crate::drive`]). The run parameters (`--strategies` with exactly one id,
//! `--attempt-timeout-ms`, `--deadline-ms`, the backoff and budget settings, `--seed`) are read
//! once, like every other program of the lab. Without `--seed`, each process draws its own (the
//! copies `lab audit` starts at once must not share their jitter). On stdout, one line per attempt (its
//! status, or how it ended without one: `timeout`, `connect_refused`, `reset_before_answer`, ...),
//! then one per operation: its outcome and attempts. Exit 0 when it ran, 2 on bad input.

use std::ffi::OsString;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::{Arg, Command};
use e03_io::exit::{OK as EXIT_OK, USAGE as EXIT_USAGE};
use e03_model::events::RunTag;
use e03_model::session::{ClientSession, SessionConfig, Starts};
use e03_model::workload::Clients;
use precise_timer::PreciseTimer;
use tokio::sync::mpsc;

use crate::client::StrategyRun;
use crate::http::{build_client, endpoint, WorkEndpoint};
use crate::usage_error::UsageError;

/// The settings `lab client` reads besides the run parameters.
#[derive(Debug, Clone, PartialEq)]
struct Target {
    url: reqwest::Url,
    post: bool,
    operations: u32,
}

fn command() -> Command {
    let cmd = Command::new("lab client")
        .about(
            "One of the lab's strategies as a plain HTTP client of E03_TARGET_URL (for lab \
             audit): E03_OPERATIONS operations, one after another, with E03_TARGET_METHOD.",
        )
        .arg(
            Arg::new("E03_TARGET_URL")
                .long("url")
                .env("E03_TARGET_URL")
                .value_name("URL")
                .help("where to send the operations (http only)"),
        )
        .arg(
            Arg::new("E03_TARGET_METHOD")
                .long("method")
                .env("E03_TARGET_METHOD")
                .value_name("GET|POST")
                .help("GET, or POST (with the strategy's Idempotency-Key if it has a key policy) [default: GET]"),
        )
        .arg(
            Arg::new("E03_OPERATIONS")
                .long("operations")
                .env("E03_OPERATIONS")
                .value_name("N")
                .help("operations to run one after another, 1 to 10000 [default: 1]"),
        );
    e03_plan::cli::with_param_args(cmd)
}

fn target(m: &clap::ArgMatches) -> Result<Target, UsageError> {
    let given = |k: &str| m.get_one::<String>(k).map(|s| s.trim().to_string());
    let url_text = given("E03_TARGET_URL").ok_or(UsageError::NoTargetUrl)?;
    let url = endpoint(&url_text, "").ok_or_else(|| UsageError::Invalid {
        name: "E03_TARGET_URL",
        value: url_text.clone(),
        accepts: "an http:// URL",
    })?;
    let post = match given("E03_TARGET_METHOD").as_deref() {
        None | Some("GET") => false,
        Some("POST") => true,
        Some(v) => {
            return Err(UsageError::Invalid {
                name: "E03_TARGET_METHOD",
                value: v.to_string(),
                accepts: "GET or POST",
            })
        }
    };
    let operations = match given("E03_OPERATIONS") {
        None => 1,
        Some(v) => v
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=10_000).contains(n))
            .ok_or_else(|| UsageError::Invalid {
                name: "E03_OPERATIONS",
                value: v.clone(),
                accepts: "a number of operations, 1 to 10000",
            })?,
    };
    Ok(Target {
        url,
        post,
        operations,
    })
}

/// `lab client [FLAGS]`.
pub fn client_entry(args: Vec<OsString>) -> i32 {
    let name = e03_plan::cli::program_name(args.first().map_or("lab".as_ref(), |a| a.as_os_str()));
    let m = match command().try_get_matches_from(args) {
        Ok(m) => m,
        Err(e) => return e03_plan::cli::clap_exit(&name, &e),
    };
    let fail = |msg: String| {
        eprintln!("{name}: {msg}");
        EXIT_USAGE
    };
    let env_names = std::env::vars_os().filter_map(|(k, _)| k.into_string().ok());
    if let Some(name) = e03_plan::cli::unknown_env(env_names).first() {
        return fail(e03_plan::cli::unknown_env_message(name));
    }
    let target = match target(&m) {
        Ok(t) => t,
        Err(e) => return fail(e.to_string()),
    };
    let params = match e03_plan::cli::params_from_matches(&m) {
        Ok(p) => p,
        Err(e) => return fail(e03_plan::cli::error_chain(&e)),
    };
    let [strategy] = params.strategies() else {
        return fail(format!(
            "E03_STRATEGIES (--strategies): lab client runs exactly one strategy, not {:?}",
            params
                .strategies()
                .iter()
                .map(|s| s.id.as_str())
                .collect::<Vec<_>>()
                .join(",")
        ));
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(format!("starting the runtime: {e}")),
    };
    let http = match build_client(1, params.connect_timeout(), strategy.connections) {
        Ok(h) => h,
        Err(e) => return fail(e.to_string()),
    };
    // Copies of a client started together must not share their jitter: without a seed given,
    // each process draws its own.
    let raw = e03_plan::cli::raw_params(&m);
    let seed = if raw.contains_key("E03_SEED") || raw.contains_key("E03_SEEDS") {
        params.seed()
    } else {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos() as u64;
        nanos ^ (u64::from(std::process::id()) << 32)
    };
    let run = StrategyRun {
        tag: RunTag {
            run: "lab-client".into(),
            seed,
            strategy: strategy.id.clone(),
        },
        budget: Arc::new(Mutex::new(params.policies(strategy, seed))),
        strategy: strategy.clone(),
        work: WorkEndpoint {
            http,
            url: target.url,
        },
        replicas: Vec::new(),
        t0: tokio::time::Instant::now(),
        seed,
        session: SessionConfig {
            limits: params.limits(),
            duration: Duration::MAX,
            think: (Duration::ZERO, Duration::ZERO),
            starts: Starts::AtZero,
            max_ops: Some(target.operations),
            best_effort_ppm: 0,
        },
        timer: PreciseTimer::start(),
        post: target.post,
        deadline_header: false,
    };
    rt.block_on(async {
        // Each attempt's end is printed before its operation's line; the receiving side logs
        // every request.
        let (log, mut drain) = mpsc::unbounded_channel();
        let log = crate::log::LogTx::Memory(log);
        let (_trigger, stop) = crate::stop::stop_pair();
        let run = Arc::new(run);
        // One client, its operations back to back (no think time), from now.
        let session = ClientSession::new(seed, 0, run.session_config());
        let workload = Box::new(Clients::of([session], &run.strategy));
        let driver = tokio::spawn(crate::drive::drive(run.clone(), workload, log, stop));
        while let Some(event) = drain.recv().await {
            if let Some(line) = attempt_line(&event) {
                println!("{line}");
            }
            if let e03_model::events::Event::Operation(op) = &event {
                let outcome = match op.reason {
                    None => "Success".to_string(),
                    Some(why) => format!("Failed({why:?})"),
                };
                println!("{outcome} after {} attempt(s)", op.attempts);
            }
        }
        let _ = driver.await;
    });
    EXIT_OK
}

/// `attempt 2: 503 after 1.2 ms`, or the way it ended without an answer
/// (`attempt 1: connect_refused after 0.2 ms`); nothing for an operation record.
fn attempt_line(event: &e03_model::events::Event) -> Option<String> {
    let e03_model::events::Event::Attempt(a) = event else {
        return None;
    };
    Some(format!(
        "attempt {}: {} after {:.1} ms",
        a.attempt,
        crate::metrics::attempt_outcome(a.end, a.status),
        a.end_us.saturating_sub(a.sent_us) as f64 / 1000.0
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(args: &[&str]) -> clap::ArgMatches {
        command()
            .try_get_matches_from(std::iter::once("lab client").chain(args.iter().copied()))
            .unwrap()
    }

    #[test]
    fn the_target_is_read_once_and_bad_values_name_their_variable() {
        let t = target(&matches(&[
            "--url",
            "http://127.0.0.1:9/audit/x/0",
            "--method",
            "POST",
            "--operations",
            "10",
        ]))
        .unwrap();
        assert_eq!(
            (t.url.path(), t.post, t.operations),
            ("/audit/x/0", true, 10)
        );
        for (args, said) in [
            (
                &["--method", "GET"][..],
                "E03_TARGET_URL (--url): not given",
            ),
            (
                &["--url", "ftp://x"][..],
                "invalid E03_TARGET_URL \"ftp://x\"",
            ),
            (
                &["--url", "http://x", "--method", "PUT"][..],
                "invalid E03_TARGET_METHOD \"PUT\"",
            ),
            (
                &["--url", "http://x", "--operations", "0"][..],
                "invalid E03_OPERATIONS \"0\"",
            ),
        ] {
            let e = target(&matches(args)).unwrap_err().to_string();
            assert!(e.contains(said), "{args:?}: {e}");
        }
    }
}
