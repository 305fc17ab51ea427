//! `lab analyze`: the analyzer's command line as the lab's front shows it, on the analyzer's
//! library: its errors and warnings start with `lab:` like every other command's, and the
//! series of 100 ms windows stays in the files unless `--series` ([`crate::front`]). The
//! `analyzer` binary keeps its own front (`analyzer::cli`); the flags, the figures and the exit
//! codes are the same: 0 fine; 1 outputs could not be written, or client and server logs of a
//! complete run disagree; 2 bad input (flags, missing or malformed logs).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::{Arg, ArgAction, Command};
use e03_core::Scenario;

use crate::front::Show;
use crate::EXIT_USAGE;

fn command() -> Command {
    Command::new("lab analyze")
        .about(
            "Computes the E03 metrics from a run's JSON Lines logs: tables, summary.json, CSVs, \
             figures, report.md, report.html",
        )
        .arg(Arg::new("dir").value_name("DIR").help(
            "Scenario directory holding server-S-seedN.jsonl and client-S-seedN.jsonl (e.g. \
             results/latest/e03b)",
        ))
        .arg(
            Arg::new("scenario")
                .long("scenario")
                .value_name("SCENARIO")
                .help("Scenario of DIR [default: the scenario.toml kept in DIR, else DIR's name]"),
        )
        .arg(
            Arg::new("server-log")
                .long("server-log")
                .value_name("FILE")
                .conflicts_with("dir")
                .requires("out")
                .help("A dependency-service log to measure alone (any client); needs --out"),
        )
        .arg(
            Arg::new("out")
                .long("out")
                .value_name("DIR")
                .requires("server-log")
                .help("Output directory for --server-log"),
        )
        .arg(
            Arg::new("series")
                .long("series")
                .action(ArgAction::SetTrue)
                .help("print the series of 100 ms windows around the outage too (always in the files)"),
        )
}

/// A message and its exit code.
struct Failed(String, i32);

fn usage(message: String) -> Failed {
    Failed(message, EXIT_USAGE)
}

fn analysis(e: &analyzer::AnalyzeError) -> Failed {
    Failed(e.to_string(), if e.is_bad_input() { EXIT_USAGE } else { 1 })
}

/// `lab analyze ARGS` (`args[0]` is `lab analyze`); the exit code.
pub fn main(args: Vec<OsString>) -> i32 {
    let m = match command().try_get_matches_from(args) {
        Ok(m) => m,
        Err(e) => return e03_core::cli::clap_exit("lab", &e),
    };
    let path = |name: &str| m.get_one::<String>(name).map(PathBuf::from);
    let scenario = m.get_one::<String>("scenario").map(String::as_str);
    let series = m.get_flag("series");
    let _ = crate::front::set(Show {
        series,
        json: false,
    });
    let result = match (path("dir"), path("server-log"), path("out")) {
        (Some(dir), None, _) => dir_tables(&dir, scenario),
        (None, Some(log), Some(out)) => server_log(&log, &out, scenario),
        _ => Err(usage(
            "expected a scenario directory DIR, or --server-log FILE --out DIR (see --help)".into(),
        )),
    };
    match result {
        Ok(code) => code,
        Err(Failed(message, code)) => {
            eprintln!("lab: {message}");
            code
        }
    }
}

/// `value` as one scenario: the one a folder keeps (`kept`), or a built-in one.
fn named(flag: &str, value: &str, kept: Option<&Scenario>) -> Result<Scenario, Failed> {
    analyzer::kept::scenario_named(value, kept)
        .map_err(|e| usage(format!("invalid {flag} {value:?}: {e}")))
}

fn dir_tables(dir: &Path, scenario: Option<&str>) -> Result<i32, Failed> {
    if !dir.is_dir() {
        let why = if dir.exists() {
            "not a directory"
        } else {
            "no such directory"
        };
        return Err(usage(format!(
            "invalid DIR {:?}: {why} (give a scenario folder of a run, e.g. results/latest/e03b)",
            dir.display().to_string()
        )));
    }
    let kept = analyzer::kept::kept_scenario(dir).map_err(usage)?;
    let scenario = match scenario {
        Some(v) => named("--scenario", v, kept.as_ref())?,
        None => {
            let name = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            named("scenario from DIR's name", &name, kept.as_ref()).map_err(|Failed(m, c)| {
                Failed(
                    format!("{m}; pass --scenario e03a|e03b for {}", dir.display()),
                    c,
                )
            })?
        }
    };
    let (summary, warnings) =
        analyzer::analyze_dir_with_warnings(dir, scenario).map_err(|e| analysis(&e))?;
    for w in &warnings {
        eprintln!("lab: warning: {w}");
    }
    let written = |e: std::io::Error| Failed(format!("writing to stdout: {e}"), 1);
    crate::front::print_tables(&summary, dir).map_err(written)?;
    analyzer::write_outputs(dir, &summary).map_err(|e| analysis(&e))?;
    println!(
        "\nwrote {}/{{summary.json, arrivals_100ms.csv, arrivals_1s.csv, *.svg, *.png, report.md, \
         report.html}}",
        dir.display()
    );
    let bad = analyzer::tables::mismatched_complete_runs(&summary);
    for r in &bad {
        eprintln!(
            "lab: {} seed {}: client attempts and server arrivals do not match ({:?}); the logs \
             of this run cannot be trusted",
            r.strategy, r.seed, r.matched
        );
    }
    Ok(if bad.is_empty() { 0 } else { 1 })
}

fn server_log(log: &Path, out: &Path, scenario: Option<&str>) -> Result<i32, Failed> {
    use analyzer::standalone;
    // A standalone `lab serve --scenario FILE` keeps the file beside its log.
    let kept = match log.parent() {
        Some(dir) => analyzer::kept::kept_scenario(dir).map_err(usage)?,
        None => None,
    };
    let scenario = scenario
        .map(|v| named("--scenario", v, kept.as_ref()))
        .transpose()?;
    if !log.is_file() {
        return Err(usage(format!(
            "invalid --server-log {:?}: not a file",
            log.display().to_string()
        )));
    }
    let (mut summary, mut warnings) =
        standalone::analyze_server_log(log, scenario, kept.as_ref()).map_err(|e| analysis(&e))?;
    // A standalone `lab serve` has no end of its own: stopping it (Ctrl-C, kill) is how its run
    // ends. A log whose only flaw is that stop is whole, not an incomplete run.
    let standalone = analyzer::reader::read_run_start(log)
        .ok()
        .flatten()
        .is_some_and(|s| s.scenario == "standalone" || s.tag.strategy == "standalone");
    if standalone
        && warnings
            .iter()
            .all(|w| w.ends_with("run was stopped early"))
    {
        if !warnings.is_empty() {
            println!(
                "note: the standalone service was stopped, which is how its run ends; the log \
                 is whole"
            );
        }
        warnings.clear();
        summary.complete = true;
        for r in &mut summary.runs {
            r.complete = true;
        }
    }
    for w in &warnings {
        eprintln!("lab: warning: {w}");
    }
    let load = standalone::load_of(log, &summary);
    println!(
        "Load at the dependency ({}), from its log alone:\n",
        summary.scenario.title()
    );
    print!("{}", standalone::load_table(&load).markdown());
    standalone::write_load_outputs(out, &load, &summary).map_err(|e| analysis(&e))?;
    println!(
        "\nwrote {}/{{load.json, arrivals_100ms.csv, arrivals_1s.csv, arrivals_*.svg, \
         arrivals_*.png}}",
        out.display()
    );
    Ok(0)
}
