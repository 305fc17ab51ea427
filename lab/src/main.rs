//! `lab`: the E03 retry lab's one command.
//!
//! - `lab run e03b --seed 42 --out results`: the live experiment over loopback. A fresh
//!   dependency-service process for each strategy, one client-swarm process driving every strategy
//!   at once, then the analyzer over the logs they wrote (see [`live`]).
//! - `lab simulate e03b --seeds 1-100 [--sweep E03_QUEUE=50,100]`: the same model on a virtual
//!   clock (see [`sim`]).
//! - `lab compare e03b --seed 42`: live and simulated side by side.
//! - `lab serve`, `lab swarm`, `lab analyze`: the three parts' own command lines; `run` starts
//!   its children through them, so `cargo run --release -- run ...` needs no other binary.
//! - `lab replica ratelimit`: the rate-limit article's published table beside a port of its own simulation,
//!   PASS per cell (exit 0 when all pass, 3 otherwise).
//! - `lab report --out DIR [SCENARIO]`: analyse the logs a swarm left in DIR and print the
//!   tables (the compose analyzer container runs this).

mod abort;
mod analyze;
mod args;
mod audit;
mod chain;
mod child;
mod errors;
mod front;
mod gate;
mod live;
mod map;
mod outdir;
mod progress;
mod report;
mod require;
mod services;
mod sim;
mod sim_stop;
mod soak;
mod swarm;

use std::ffi::OsString;
use std::time::Duration;

use e03_io::exit::{STOPPED as EXIT_STOPPED, USAGE as EXIT_USAGE};

fn main() {
    let args: Vec<OsString> = std::env::args_os().collect();
    std::process::exit(dispatch(args));
}

/// Runs the command `args` names (`args[0]` is the program) and returns its exit code.
fn dispatch(args: Vec<OsString>) -> i32 {
    match args.get(1).and_then(|a| a.to_str()) {
        Some("--version" | "-V") => {
            println!("lab {}", env!("CARGO_PKG_VERSION"));
            0
        }
        // `lab help CMD` is `lab CMD --help`, for every command.
        Some("help") if args.len() == 3 => dispatch(vec![
            args[0].clone(),
            args[2].clone(),
            OsString::from("--help"),
        ]),
        Some("serve") => dependency_service::main_entry(child_args("lab serve", &args)),
        Some("hop") => dependency_service::hop::main_entry(child_args("lab hop", &args)),
        // `lab proxy --http`: the HTTP fault proxy (docs/http-proxy.md); else the TCP one.
        Some("proxy") if args.iter().skip(2).any(|a| a == "--http") => {
            dependency_service::http_proxy::main_entry(child_args("lab proxy", &args))
        }
        Some("proxy") => dependency_service::proxy::main_entry(child_args("lab proxy", &args)),
        Some("swarm") => swarm::swarm(&args),
        Some("analyze") => analyze::main(child_args("lab analyze", &args)),
        Some("report") => report::report(child_args("lab report", &args)),
        Some("list") => list(&args),
        Some("replica") => replica(&args),
        Some("map") => map::main(&args),
        Some("soak") => soak::main(&args),
        Some("audit") => audit::main(&args),
        Some("client") => client_swarm::client_entry(child_args("lab client", &args)),
        // Checked before any run starts: `lab simulate` shows progress itself, `lab run`'s
        // swarm child reads the same variable.
        // The timers' scheduling (precise_timer::realtime), read once by every process.
        _ if realtime_env().is_err() => {
            eprintln!("lab: {}", realtime_env().unwrap_err());
            EXIT_USAGE
        }
        _ if progress::mode_from_env().is_err() => {
            eprintln!("lab: {}", progress::mode_from_env().unwrap_err());
            EXIT_USAGE
        }
        _ => match args::parse(args) {
            Ok((command, show)) => {
                if let Err(e) = front::set(show) {
                    eprintln!("lab: --json: keeping stdout for the summaries: {e}");
                    return 1;
                }
                match command {
                    args::Command::Run(plan) => {
                        gate::start();
                        gate::finish(plan.junit.as_deref(), live::run(&plan))
                    }
                    args::Command::Simulate(plan) => sim::simulate(&plan),
                    args::Command::Compare(plan) => sim::compare(&plan),
                }
            }
            Err(refused) => refused.exit(),
        },
    }
}

/// Exit code of `lab replica` when a published cell is not reproduced.
const EXIT_REPLICA_MISMATCH: i32 = e03_io::exit::CHECK_FAILED;

/// `lab replica ratelimit [--seed N ...]`: every published figure of the rate-limit article beside the
/// replica's ([`simulator::replica002`]), PASS or FAIL per cell; with `--seed`, the main table
/// of a run with each seed given, the published figure beside ours where the article ran that
/// seed (`-` and no verdict elsewhere). Exit 0 when every published cell passes, 3 otherwise.
fn replica(args: &[OsString]) -> i32 {
    let rest: Vec<String> = args
        .iter()
        .skip(2)
        .map(|a| a.to_string_lossy().into())
        .collect();
    if rest.iter().any(|a| a == "--help" || a == "-h") {
        println!(
            "Usage: lab replica ratelimit [--seed N]...\n\nRuns a port of the rate-limit article's \
             own simulation (its generator, tokenizer and 160 tickets) and prints every \
             figure the article publishes beside ours, PASS per cell. With --seed N (repeatable, \
             0 to 4294967295), prints the main table of a run with each seed: the article ran \
             20260218 (every column published) and 20260219 (completion and interactive); any \
             other seed prints ours with no published column. Exit 0 when every published cell \
             passes, 3 otherwise."
        );
        return 0;
    }
    let seeds = match replica_seeds(&rest) {
        Ok(seeds) => seeds,
        Err(e) => {
            eprintln!("lab: {e}");
            return EXIT_USAGE;
        }
    };
    let mut cells = Vec::new();
    if seeds.is_empty() {
        cells = simulator::replica002::cells();
    } else {
        for seed in seeds {
            cells.extend(simulator::replica002::seed_cells(seed));
        }
    }
    use std::fmt::Write;
    let mut o = String::new();
    let width = cells.iter().map(|c| c.name.len()).max().unwrap_or(0);
    let _ = writeln!(
        o,
        "{:<width$}  {:>9}  {:>9}  check  where in the article",
        "figure", "published", "ours"
    );
    for c in &cells {
        let _ = writeln!(
            o,
            "{:<width$}  {:>9}  {:>9}  {:<5}  {}",
            c.name,
            c.published.unwrap_or("-"),
            c.ours,
            c.verdict(),
            c.source
        );
    }
    let judged = cells.iter().filter(|c| c.published.is_some()).count();
    let failed = cells.iter().filter(|c| !c.pass()).count();
    if judged == 0 {
        let _ = writeln!(
            o,
            "{} figures; none published for these seeds (the article ran 20260218 and 20260219)",
            cells.len()
        );
    } else {
        let _ = writeln!(
            o,
            "{} of {judged} published cells reproduced",
            judged - failed
        );
    }
    if let Some(code) = print_out(&o) {
        return code;
    }
    if failed == 0 {
        0
    } else {
        EXIT_REPLICA_MISMATCH
    }
}

/// `ratelimit` and any number of `--seed N` / `--seed=N` (0 to 4294967295, no repeats).
fn replica_seeds(rest: &[String]) -> Result<Vec<u32>, String> {
    let usage = "expected `lab replica ratelimit [--seed N]...` (ratelimit is the only replica)";
    let mut seeds: Vec<u32> = Vec::new();
    let mut named = false;
    let mut it = rest.iter();
    while let Some(a) = it.next() {
        let value = if a == "--seed" {
            Some(
                it.next()
                    .ok_or("--seed: expected a seed (0 to 4294967295)")?
                    .as_str(),
            )
        } else {
            a.strip_prefix("--seed=")
        };
        match value {
            Some(v) => {
                let seed: u32 = v.trim().parse().map_err(|_| {
                    format!("--seed {v:?}: expected a whole number from 0 to 4294967295")
                })?;
                if seeds.contains(&seed) {
                    return Err(format!("--seed {seed} is given twice"));
                }
                seeds.push(seed);
            }
            None if a == "ratelimit" && !named => named = true,
            None => return Err(format!("{usage}, got {a:?}")),
        }
    }
    if !named {
        return Err(format!("{usage}, got {rest:?}"));
    }
    Ok(seeds)
}

/// `lab list`: the scenario catalogue, one line each (name, source, description); with a
/// scenario file, that file's line after the built-in ones (and its errors, exit 2).
fn list(args: &[OsString]) -> i32 {
    let mut scenarios = e03_plan::Scenario::builtins();
    for a in args.iter().skip(2) {
        let a = a.to_string_lossy();
        if a == "--help" || a == "-h" {
            println!(
                "Usage: lab list [FILE.toml ...]\n\nPrints the scenario catalogue: every built-in \
                 scenario, and the scenario files given (checked as `lab run` checks them), each \
                 with its source in brackets (the articles the sources name are listed in \
                 docs/scenarios.md, \"The source articles\"); then the strategies --strategies \
                 accepts besides a scenario's own: A to F and the presets of well-known \
                 libraries."
            );
            return 0;
        }
        match e03_io::scenario_files::resolve(&a) {
            Ok(found) => scenarios.extend(found.into_iter().map(|f| f.scenario)),
            Err(e) => {
                eprintln!("lab: {e}");
                return EXIT_USAGE;
            }
        }
    }
    use std::fmt::Write;
    let mut o = String::new();
    let width = scenarios.iter().map(|s| s.name().len()).max().unwrap_or(4);
    for s in scenarios {
        let def = s.def();
        let source = if def.source.is_empty() {
            String::new()
        } else {
            format!(" [{}]", def.source)
        };
        let _ = writeln!(o, "{:width$}  {}{source}", s.name(), def.description);
    }
    let _ = writeln!(
        o,
        "\nStrategies (--strategies; a scenario file may define its own with [[strategy]]):"
    );
    let (base, cap) = (Duration::from_millis(200), Duration::from_millis(2000));
    let budget = e03_model::budget::BudgetSpec::token_bucket(10.0, 0.1);
    let lab: Vec<(String, String)> = ["A", "B", "C", "D", "E", "F"]
        .iter()
        .filter_map(|id| e03_model::Strategy::standard(id, base, cap, budget))
        .map(|s| (s.id, format!("{} (E03)", s.name)))
        .collect();
    let presets = e03_plan::presets::names()
        .iter()
        .map(|(n, d)| (n.to_string(), d.to_string()));
    let all: Vec<(String, String)> = lab.into_iter().chain(presets).collect();
    let width = all.iter().map(|(n, _)| n.len()).max().unwrap_or(4);
    for (name, what) in all {
        let _ = writeln!(o, "{name:width$}  {what}");
    }
    print_out(&o).unwrap_or(0)
}

/// `E03_REALTIME` checked: `auto` (the default) or `off`.
fn realtime_env() -> Result<bool, String> {
    precise_timer::realtime::parse_mode(
        std::env::var(precise_timer::realtime::REALTIME_ENV)
            .ok()
            .as_deref(),
    )
    .map_err(|e| e.to_string())
}

/// `lab serve --x` becomes `dependency-service --x`.
pub(crate) fn child_args(program: &str, args: &[OsString]) -> Vec<OsString> {
    std::iter::once(OsString::from(program))
        .chain(args.iter().skip(2).cloned())
        .collect()
}

/// Writes `text` to stdout; `Some(exit code)` when that failed: quietly
/// [`outdir::EXIT_BROKEN_PIPE`] when the reader went away (`lab list | head -3`), else 1.
fn print_out(text: &str) -> Option<i32> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => None,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Some(outdir::EXIT_BROKEN_PIPE),
        Err(e) => {
            eprintln!("lab: writing to stdout: {e}");
            Some(1)
        }
    }
}
