//! `lab report`: the analysis step alone, as compose's analyzer container runs it: it waits
//! until every log of the run has ended (or collects them over HTTP, `--listen`), then writes
//! and prints what `lab run` would ([`crate::live::report_scenarios`]).

use std::path::Path;
use std::time::{Duration, Instant};

use e03_plan::Scenario;

use crate::errors::chain;
use crate::outdir::{self};

use crate::live::report_scenarios;

/// `lab report [--out DIR] [SCENARIO]`: the analysis step alone (compose's analyzer container).
pub fn report(args: Vec<std::ffi::OsString>) -> i32 {
    let cmd = clap::Command::new("lab report")
        .bin_name("lab report")
        .about(
            "analyse the logs of a finished run and print its tables; the results (summary.json, \
             CSVs, figures, report.md, report.html) are written beside the logs",
        )
        .arg(
            clap::Arg::new("out")
                .long("out")
                .env("E03_OUT")
                .default_value("results")
                .value_name("DIR")
                .help(
                    "the run directory holding <scenario>/server-*.jsonl and client-*.jsonl \
                     (e.g. results/20261130-141224); an OUT with a `latest` link means its \
                     latest run",
                ),
        )
        .arg(
            clap::Arg::new("scenario")
                .default_value("all")
                .value_name("SCENARIO")
                .help("a scenario the run holds (e03a, e03b, a user scenario's name or file), a comma-separated list of them, or all: every scenario folder of the run"),
        )
        .arg(
            clap::Arg::new("wait-s")
                .long("wait-s")
                .value_name("SECONDS")
                .help(
                    "first wait, at most this long, until each named scenario's folder holds \
                     server logs that all end with their run_end (an orchestrator's analyzer, \
                     started beside the run: docs/shards.md); then analyse what is there",
                ),
        )
        .arg(
            clap::Arg::new("listen")
                .long("listen")
                .value_name("IP:PORT")
                .requires("wait-s")
                .help(
                    "while it waits, collect the logs the shards and dependencies send \
                     (their --send-logs http://THIS-HOST:PORT) into --out: PUT \
                     /logs/<scenario>/<file> with a CRC-32, so that they share no folder \
                     (docs/shards.md)",
                ),
        );
    let m = match cmd.try_get_matches_from(args) {
        Ok(m) => m,
        Err(e) => return e03_plan::cli::clap_exit("lab", &e),
    };
    let out = std::path::PathBuf::from(m.get_one::<String>("out").expect("default"));
    let arg = m.get_one::<String>("scenario").expect("default");
    if let Some(v) = m.get_one::<String>("wait-s") {
        let Some(limit) = v
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|s| (1..=86_400).contains(s))
        else {
            eprintln!(
                "lab: invalid --wait-s {v:?}: expected a whole number of seconds from 1 \
                 to 86400"
            );
            return crate::EXIT_USAGE;
        };
        if let Some(listen) = m.get_one::<String>("listen") {
            let Ok(addr) = listen.trim().parse::<std::net::SocketAddr>() else {
                eprintln!(
                    "lab: invalid --listen {listen:?}: expected IP:PORT, for example \
                     0.0.0.0:9100 (port 0: any free port)"
                );
                return crate::EXIT_USAGE;
            };
            match collect(addr, &out) {
                Ok(bound) => eprintln!(
                    "lab: collecting logs at http://{bound}/logs/ into {}",
                    out.display()
                ),
                Err(e) => {
                    eprintln!("lab: cannot collect logs on {addr}: {e}");
                    return 1;
                }
            }
        }
        let names: Vec<&str> = arg
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .collect();
        let end = Instant::now() + Duration::from_secs(limit);
        while !runs_ended(&out, &names) {
            if Instant::now() >= end {
                let awaited: Vec<String> = names
                    .iter()
                    .flat_map(|n| {
                        let latest = out.join(outdir::LATEST).join(n);
                        logs_awaited(&if latest.is_dir() { latest } else { out.join(n) })
                    })
                    .collect();
                eprintln!(
                    "lab: the runs of {arg} had not all ended after {limit} s; analysing \
                     what is there{}",
                    if awaited.is_empty() {
                        String::new()
                    } else {
                        format!(" (not come or not ended: {})", awaited.join(", "))
                    }
                );
                break;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }
    // The scenarios the run kept (a user's file among them), known before the argument is read.
    let latest = out.join(outdir::LATEST);
    let run = if latest.is_dir() { latest } else { out.clone() };
    let kept = match analyzer::kept::scenarios_in(&run) {
        Ok(k) => k,
        Err(e) => {
            eprintln!("lab: {e}");
            return crate::EXIT_USAGE;
        }
    };
    if arg == "all" && kept.is_empty() && run.is_dir() {
        eprintln!(
            "lab: invalid --out {:?}: {} holds no scenario folder of a live run (simulated \
             results are printed when they are made); give the folder of a `lab run`, e.g. \
             {}/<run id>",
            out.display().to_string(),
            run.display(),
            out.display()
        );
        return crate::EXIT_USAGE;
    }
    let scenarios = match report_list(arg, &kept) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("lab: {e}");
            return crate::EXIT_USAGE;
        }
    };
    let Some(dir) = run_dir_of(&out, &scenarios) else {
        eprintln!(
            "lab: invalid --out {:?}: no such directory {} (give the run directory a \
             `lab run` printed, e.g. results/latest)",
            out.display().to_string(),
            scenarios
                .iter()
                .map(|s| out.join(s.name()).display().to_string())
                .collect::<Vec<_>>()
                .join(" or ")
        );
        return crate::EXIT_USAGE;
    };
    match report_scenarios(&dir, &scenarios) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("lab: {}", chain(&e));
            1
        }
    }
}

/// Serves the log collector ([`e03_io::ship::collector`]) on `addr`, storing into `out`, on a
/// thread of its own for the rest of the process; the address it bound.
fn collect(addr: std::net::SocketAddr, out: &Path) -> std::io::Result<std::net::SocketAddr> {
    std::fs::create_dir_all(out)?;
    let listener = std::net::TcpListener::bind(addr)?;
    listener.set_nonblocking(true)?;
    let bound = listener.local_addr()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let dir = out.to_path_buf();
    std::thread::spawn(move || {
        runtime.block_on(async move {
            let served = match tokio::net::TcpListener::from_std(listener) {
                Ok(l) => e03_io::ship::serve(l, dir).await,
                Err(e) => Err(e),
            };
            if let Err(e) = served {
                eprintln!("lab: the log collector stopped: {e}");
            }
        });
    });
    Ok(bound)
}

/// Whether the last record of the JSON Lines file `log` is a `run_end`. Only the file's last
/// 64 KiB are read (a `run_end` line is a few hundred bytes): the wait asks every 500 ms, and a
/// fleet's logs are large.
fn ends_with_run_end(log: &Path) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    const TAIL: u64 = 64 * 1024;
    let Ok(mut file) = std::fs::File::open(log) else {
        return false;
    };
    let len = file.metadata().map_or(0, |m| m.len());
    let mut tail = Vec::new();
    if file
        .seek(SeekFrom::Start(len.saturating_sub(TAIL)))
        .is_err()
        || file.read_to_end(&mut tail).is_err()
    {
        return false;
    }
    tail.split(|&b| b == b'\n')
        .rev()
        .find(|l| !l.trim_ascii().is_empty())
        .is_some_and(|l| l.starts_with(b"{\"type\":\"run_end\""))
}

/// Whether the client side of the run whose server log is `server` (in `dir`) has ended: the
/// client log `client-S-seedN.jsonl`, or every shard's `client-S-seedN-shard<i>of<M>.jsonl` of
/// some M, is there and ends with its `run_end`.
fn clients_ended(dir: &Path, server: &str) -> bool {
    // A replica's server log shares its run's client logs.
    let Some((run, _)) = e03_plan::log_names::server_log_run(server) else {
        return false;
    };
    if ends_with_run_end(&dir.join(format!("client-{run}.jsonl"))) {
        return true;
    }
    let prefix = format!("client-{run}-shard");
    let counts: std::collections::BTreeSet<u32> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|e| {
                    let n = e.file_name().to_string_lossy().into_owned();
                    let rest = n.strip_prefix(&prefix)?.strip_suffix(".jsonl")?;
                    rest.split_once("of")?.1.parse().ok()
                })
                .collect()
        })
        .unwrap_or_default();
    counts
        .iter()
        .any(|&m| (0..m).all(|i| ends_with_run_end(&dir.join(format!("{prefix}{i}of{m}.jsonl")))))
}

/// The logs the scenario folder `dir` is still waiting for: of those its
/// [`RUN_LOGS_FILE`](e03_plan::log_names::RUN_LOGS_FILE) names (the swarm writes it before the
/// runs start), each one not there or not ended with its `run_end`. Empty when the folder has
/// no such file.
fn logs_awaited(dir: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(dir.join(e03_plan::log_names::RUN_LOGS_FILE)) else {
        return Vec::new();
    };
    // The collector took the file whole (its CRC-32 checked); one that does not parse was not
    // the swarm's, and waits for nothing.
    e03_plan::log_names::parse_run_logs(&text)
        .unwrap_or_default()
        .into_iter()
        .filter(|l| !ends_with_run_end(&dir.join(l)))
        .collect()
}

/// Whether every run of the scenarios `names` under `out` (or the run `out/latest` points at)
/// has ended: each folder holds a server log, each server log's last record is its `run_end`
/// (the dependency wrote it when the swarm, or every shard of it, stopped the run), and so is
/// each of its client logs' ([`clients_ended`]: with logs sent over HTTP, they may come after
/// the server's). With logs sent over HTTP, those of a run that ended late may not have come
/// at all: every log the folder's list names ([`logs_awaited`]) must be there and ended too.
fn runs_ended(out: &Path, names: &[&str]) -> bool {
    let ended = |log: &Path| {
        ends_with_run_end(log)
            && log.parent().is_some_and(|dir| {
                clients_ended(dir, &log.file_name().unwrap_or_default().to_string_lossy())
            })
    };
    names.iter().all(|name| {
        [out.join(outdir::LATEST).join(name), out.join(name)]
            .iter()
            .any(|dir| {
                if !logs_awaited(dir).is_empty() {
                    return false;
                }
                let logs: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
                    .map(|entries| {
                        entries
                            .filter_map(Result::ok)
                            .map(|e| e.path())
                            .filter(|p| {
                                p.file_name().is_some_and(|n| {
                                    let n = n.to_string_lossy();
                                    n.starts_with("server-") && n.ends_with(".jsonl")
                                })
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                !logs.is_empty() && logs.iter().all(|l| ended(l))
            })
    })
}

/// The scenarios of `lab report`'s argument: a comma-separated list (compose passes
/// `E03_SCENARIOS` as it is) of names, scenario files and `all` (every scenario the run kept,
/// or E03-A and E03-B). A scenario the run kept (its own copy, a user's file among them) is
/// found by its name.
fn report_list(arg: &str, kept: &[Scenario]) -> Result<Vec<Scenario>, String> {
    let mut out: Vec<Scenario> = Vec::new();
    for token in arg.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let found: Vec<Scenario> = if token == "all" && !kept.is_empty() {
            kept.to_vec()
        } else if let Some(k) = kept.iter().find(|k| k.name() == token) {
            vec![k.clone()]
        } else {
            e03_io::scenario_files::resolve(token)
                .map_err(|e| e.to_string())?
                .into_iter()
                .map(|a| {
                    let same = kept.iter().find(|k| k.name() == a.scenario.name());
                    same.cloned().unwrap_or(a.scenario)
                })
                .collect()
        };
        for s in found {
            if !out.contains(&s) {
                out.push(s);
            }
        }
    }
    if out.is_empty() {
        return Err(format!(
            "no scenario in {arg:?}: expected e03a, e03b, all, a scenario's name or file"
        ));
    }
    Ok(out)
}

/// The run directory that holds a folder of `scenarios`: the run `out/latest` points at when
/// `out` is an output directory the lab has run into (named by its run id, so that the printed
/// `results:` path stays the run's own), else `out` itself.
fn run_dir_of(out: &Path, scenarios: &[Scenario]) -> Option<std::path::PathBuf> {
    let holds = |d: &Path| scenarios.iter().any(|s| d.join(s.name()).is_dir());
    let latest = out.join(outdir::LATEST);
    if holds(&latest) {
        return Some(match std::fs::read_link(&latest) {
            Ok(id) if id.is_relative() => out.join(id),
            _ => latest,
        });
    }
    holds(out).then(|| out.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_has_ended_when_every_server_and_client_log_ends_with_its_run_end() {
        let out = std::env::temp_dir().join(format!("e03-ended-{}", std::process::id()));
        let dir = out.join("e03b");
        std::fs::create_dir_all(&dir).unwrap();
        assert!(!runs_ended(&out, &["e03b"]), "no server log yet");
        let end = "{\"type\":\"run_end\",\"data\":{}}\n";
        let arrival = "{\"type\":\"arrival\",\"data\":{}}\n";
        let write = |name: &str, text: String| std::fs::write(dir.join(name), text).unwrap();
        write("server-A-seed42.jsonl", format!("{arrival}{end}"));
        write("client-A-seed42.jsonl", format!("{arrival}{end}"));
        write("server-B-seed42.jsonl", arrival.to_string());
        assert!(!runs_ended(&out, &["e03b"]), "B's run goes on");
        write("server-B-seed42.jsonl", format!("{arrival}{end}\n"));
        // B's run was split over two shards: both client logs must have ended too (logs sent
        // over HTTP may come after the server's).
        assert!(!runs_ended(&out, &["e03b"]), "no client log of B yet");
        write("client-B-seed42-shard1of2.jsonl", format!("{arrival}{end}"));
        assert!(!runs_ended(&out, &["e03b"]), "shard 0 of 2 missing");
        write("client-B-seed42-shard0of2.jsonl", arrival.to_string());
        assert!(!runs_ended(&out, &["e03b"]), "shard 0 goes on");
        write("client-B-seed42-shard0of2.jsonl", format!("{arrival}{end}"));
        assert!(runs_ended(&out, &["e03b"]));
        assert!(!runs_ended(&out, &["e03b", "e03a"]), "no e03a folder");
        // A log longer than the tail read: its last record decides.
        let long = arrival.repeat(5_000);
        write("server-A-seed42.jsonl", format!("{end}{long}"));
        assert!(
            !runs_ended(&out, &["e03b"]),
            "A's log goes on past an early run_end"
        );
        write("server-A-seed42.jsonl", format!("{long}{end}"));
        assert!(runs_ended(&out, &["e03b"]));
        // The swarm's list of the runs' logs: C's have not come yet (sent over HTTP, a run's
        // logs come when it ends), so the runs have not all ended.
        let list: Vec<String> = ["A", "C"]
            .iter()
            .flat_map(|s| e03_plan::log_names::run_log_names(s, 42, 1, 1))
            .collect();
        write(
            e03_plan::log_names::RUN_LOGS_FILE,
            e03_plan::log_names::run_logs_toml(&list),
        );
        assert!(!runs_ended(&out, &["e03b"]), "C's logs have not come");
        assert_eq!(
            logs_awaited(&dir),
            ["server-C-seed42.jsonl", "client-C-seed42.jsonl"]
        );
        write("server-C-seed42.jsonl", format!("{arrival}{end}"));
        assert!(!runs_ended(&out, &["e03b"]), "C's client log has not come");
        write("client-C-seed42.jsonl", format!("{arrival}{end}"));
        assert!(logs_awaited(&dir).is_empty());
        assert!(runs_ended(&out, &["e03b"]));
        let _ = std::fs::remove_dir_all(&out);
    }

    #[test]
    fn lab_report_takes_a_comma_list_as_compose_passes_it() {
        let names = |list: &[Scenario]| {
            list.iter()
                .map(|s| s.name().to_string())
                .collect::<Vec<_>>()
        };
        let none: Vec<Scenario> = Vec::new();
        assert_eq!(
            names(&report_list("e03b, amplification", &none).unwrap()),
            ["e03b", "amplification"]
        );
        assert_eq!(names(&report_list("all", &none).unwrap()), ["e03a", "e03b"]);
        // `all` is what the run kept; a name twice is one scenario.
        let kept = vec![Scenario::named("deadline").unwrap()];
        assert_eq!(
            names(&report_list("all,deadline", &kept).unwrap()),
            ["deadline"]
        );
        let e = report_list("e03b,nope", &none).unwrap_err();
        assert!(e.contains("nope"), "{e}");
        assert!(report_list(" , ", &none)
            .unwrap_err()
            .contains("no scenario"));
    }
}
