//! Running a validated plan: wait for every target's (and the analyzer's) health, then every
//! scenario x seed in order, one [`run_swarm`] each, its definitions and the names of its logs
//! kept beside them first, and one done line each on stderr. Ctrl-C or SIGTERM stops the
//! current run cleanly (logs closed with `complete: false`, dependencies told): exit 130.

use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::watch;

use crate::http::wait_healthy;
use crate::plan::{SeedRun, Target, DEFAULT_START_DELAY};
use crate::run::run_swarm;
use crate::setup::Setup;
use crate::signal::shutdown_signal;
use e03_io::exit::{FAILED as EXIT_FAILED, OK as EXIT_OK, STOPPED as EXIT_STOPPED};

/// Health checks before the first run: tries and the pause between them (30 s in all).
const HEALTH_TRIES: u32 = 60;
const HEALTH_INTERVAL: Duration = Duration::from_millis(500);

pub(crate) async fn run_all(setup: Setup) -> i32 {
    let (signal_tx, signal_rx) = watch::channel(false);
    tokio::spawn(async move {
        shutdown_signal().await;
        signal_tx.send_replace(true);
        // Keep the sender alive so that receivers never mistake its drop for a signal.
        std::future::pending::<()>().await;
    });
    let signalled = move || {
        let mut rx = signal_rx.clone();
        async move {
            let _ = rx.wait_for(|s| *s).await;
        }
    };
    let used: Vec<&Target> = setup
        .targets
        .iter()
        .filter(|t| {
            setup
                .params
                .iter()
                .any(|p| p.strategy(&t.strategy).is_some())
        })
        .collect();
    for target in used {
        for base in [&target.control_url, &target.work_url] {
            tokio::select! {
                r = wait_healthy(base, HEALTH_TRIES, HEALTH_INTERVAL) => if let Err(e) = r {
                    eprintln!("{}: strategy {}: {e}", crate::program::name(), target.strategy);
                    return EXIT_FAILED;
                },
                _ = signalled() => return EXIT_STOPPED,
            }
        }
    }
    // The analyzer that takes the logs is up too (an orchestrator starts them all at once).
    if let Some(url) = &setup.send_logs {
        tokio::select! {
            r = wait_healthy(url, HEALTH_TRIES, HEALTH_INTERVAL) => if let Err(e) = r {
                eprintln!("{}: the analyzer (--send-logs): {e}", crate::program::name());
                return EXIT_FAILED;
            },
            _ = signalled() => return EXIT_STOPPED,
        }
    }
    for (i, (scenario, params)) in setup.scenarios.iter().zip(&setup.params).enumerate() {
        let dir = setup.out.join(scenario.name());
        if let Err(e) = e03_io::scenario_files::keep(&dir, &setup.definitions[i]) {
            eprintln!("{}: {e}", crate::program::name());
            return EXIT_FAILED;
        }
        if let Some(text) = &setup.policies {
            if let Err(e) = e03_io::scenario_files::keep_policies(&dir, text) {
                eprintln!("{}: {e}", crate::program::name());
                return EXIT_FAILED;
            }
        }
        // The logs these runs will write, so that an analyzer waits for all of them.
        let shards = setup.shard.map_or(1, |s| s.count);
        let logs: Vec<String> = params
            .strategies()
            .iter()
            .flat_map(|s| {
                params.seeds().iter().flat_map(move |&seed| {
                    e03_plan::log_names::run_log_names(&s.id, seed, params.replicas(), shards)
                })
            })
            .collect();
        if let Err(e) = e03_io::scenario_files::keep_run_logs(&dir, &logs) {
            eprintln!("{}: {e}", crate::program::name());
            return EXIT_FAILED;
        }
        // Without a shared folder the analyzer gets the kept definitions first.
        if let Some(url) = &setup.send_logs {
            let kept: Vec<PathBuf> = [
                e03_io::scenario_files::SCENARIO_FILE,
                e03_io::scenario_files::POLICIES_FILE,
                e03_plan::log_names::RUN_LOGS_FILE,
            ]
            .iter()
            .map(|f| dir.join(f))
            .filter(|p| p.is_file())
            .collect();
            if let Err(e) = e03_io::ship::send_files(&reqwest::Client::new(), url, &kept).await {
                eprintln!("{}: {e}", crate::program::name());
                return EXIT_FAILED;
            }
        }
        for &seed in params.seeds() {
            let plan = SeedRun {
                scenario: scenario.clone(),
                seed,
                params: params.clone(),
                targets: setup.targets.clone(),
                out_dir: setup.out.clone(),
                run_dir: setup.run_dir.clone(),
                // Shards started together register within this: the first one's time zero
                // must leave the others time to join.
                start_delay: match setup.shard.filter(|s| !s.is_whole()) {
                    None => DEFAULT_START_DELAY,
                    Some(_) => crate::plan::SHARD_START_DELAY,
                },
                shard: setup.shard,
                send_logs: setup.send_logs.clone(),
            };
            let began = std::time::Instant::now();
            let report = match run_swarm(plan, signalled()).await {
                Ok(r) => r,
                Err(e) => {
                    eprintln!(
                        "{}: {} seed {seed}: {}",
                        crate::program::name(),
                        scenario.name(),
                        e03_plan::cli::error_chain(AsRef::<dyn std::error::Error>::as_ref(&e))
                    );
                    return EXIT_FAILED;
                }
            };
            // A shard sent part of what its dependency received: the analyzer matches them.
            let shard = setup.shard.filter(|s| !s.is_whole());
            let runs: Vec<String> = report
                .runs
                .iter()
                .map(|r| match shard {
                    None => format!(
                        "{} {} ops, {}/{}",
                        r.strategy, r.operations, r.attempts, r.server.arrivals
                    ),
                    Some(_) => format!("{} {} ops, {}", r.strategy, r.operations, r.attempts),
                })
                .collect();
            let what = match shard {
                None => "attempts sent/arrived".to_string(),
                Some(s) => format!("shard {s}, attempts sent"),
            };
            let head = format!(
                "{}: {} seed {seed} {} in {:.1} s ({what}):",
                crate::program::name(),
                scenario.name(),
                if report.complete { "done" } else { "STOPPED" },
                began.elapsed().as_secs_f64(),
            );
            eprintln!("{}", wrap_list(&head, &runs, 120));
            if !report.complete {
                return EXIT_STOPPED;
            }
        }
    }
    EXIT_OK
}

/// `head item; item; ...`, continued on indented lines so that no line is wider than `width`
/// (an item wider than that stands alone on its line).
fn wrap_list(head: &str, items: &[String], width: usize) -> String {
    let mut out = head.to_string();
    let mut line = head.len();
    for (i, item) in items.iter().enumerate() {
        let sep = if i == 0 { " " } else { "; " };
        if line + sep.len() + item.len() > width && line > 2 {
            out.push_str(if i == 0 { "\n  " } else { ";\n  " });
            line = 2;
        } else {
            out.push_str(sep);
            line += sep.len();
        }
        out.push_str(item);
        line += item.len();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_done_line_wraps_within_its_width() {
        let items: Vec<String> = (0..6).map(|i| format!("{i} 1234 ops, 3095/3095")).collect();
        let text = wrap_list(
            "client-swarm: e03b seed 42 done in 31.2 s (attempts sent/arrived):",
            &items,
            120,
        );
        assert!(text.lines().all(|l| l.len() <= 120), "{text}");
        assert_eq!(text.matches("ops").count(), 6);
        assert!(text.contains(";\n  "), "{text}");
    }
}
