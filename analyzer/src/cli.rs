//! The command line (the lab's `analyze` subcommand calls [`main_entry`] too).
//!
//! ```text
//! analyzer DIR [--scenario e03a|e03b]     read OUT/<scenario>/, print tables, write outputs
//! analyzer --server-log FILE --out DIR    load figures from a dependency-service log alone
//! ```
//!
//! Exit codes: 0 fine; 1 outputs could not be written, or client and server logs of a complete
//! run disagree on which attempts were sent; 2 bad input (flags, missing or malformed logs).

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Parser;

use e03_core::Scenario;

use crate::{analyze_dir_with_warnings, standalone, tables, write_outputs, AnalyzeError};

#[derive(Debug, Parser)]
#[command(
    name = "analyzer",
    about = "Computes the E03 metrics from a run's JSON Lines logs: tables, summary.json, CSVs, figures, report.md, report.html"
)]
struct Args {
    /// Scenario directory holding server-S-seedN.jsonl and client-S-seedN.jsonl (e.g. results/e03b)
    dir: Option<PathBuf>,
    /// Scenario of DIR: e03a or e03b [default: DIR's name]
    #[arg(long, value_name = "SCENARIO")]
    scenario: Option<String>,
    /// A dependency-service log to measure alone (any client); needs --out
    #[arg(long, value_name = "FILE", conflicts_with = "dir", requires = "out")]
    server_log: Option<PathBuf>,
    /// Output directory for --server-log
    #[arg(long, value_name = "DIR", requires = "server_log")]
    out: Option<PathBuf>,
}

/// A usage error: message and exit code 2.
struct Usage(String);

/// `value` as one scenario: the one a folder keeps (`kept`), or a built-in one.
fn parse_scenario(flag: &str, value: &str, kept: Option<&Scenario>) -> Result<Scenario, Usage> {
    crate::kept::scenario_named(value, kept)
        .map_err(|e| Usage(format!("invalid {flag} {value:?}: {e}")))
}

fn exit_code(e: &AnalyzeError) -> i32 {
    if e.is_bad_input() {
        2
    } else {
        1
    }
}

/// Runs the whole CLI on `args` (program name first); returns the exit code.
pub fn main_entry(args: Vec<OsString>) -> i32 {
    let args = match Args::try_parse_from(args) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    let result = match (&args.dir, &args.server_log) {
        (Some(dir), None) => run_dir(dir, args.scenario.as_deref()),
        (None, Some(log)) => run_server_log(
            log,
            args.out.as_deref().expect("clap requires --out"),
            args.scenario.as_deref(),
        ),
        _ => Err(Usage(
            "expected a scenario directory DIR, or --server-log FILE --out DIR (see --help)".into(),
        )),
    };
    match result {
        Ok(code) => code,
        Err(Usage(message)) => {
            eprintln!("error: {message}");
            2
        }
    }
}

fn report_error(e: &AnalyzeError) -> i32 {
    eprintln!("error: {e}");
    exit_code(e)
}

fn run_dir(dir: &Path, scenario: Option<&str>) -> Result<i32, Usage> {
    if !dir.is_dir() {
        let why = if dir.exists() {
            "not a directory"
        } else {
            "no such directory"
        };
        return Err(Usage(format!(
            "invalid DIR {:?}: {why} (give a scenario folder of a run, e.g. results/latest/e03b)",
            dir.display().to_string()
        )));
    }
    let kept = crate::kept::kept_scenario(dir).map_err(Usage)?;
    let scenario = match scenario {
        Some(v) => parse_scenario("--scenario", v, kept.as_ref())?,
        None => {
            let name = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            parse_scenario("scenario from DIR's name", &name, kept.as_ref()).map_err(
                |Usage(m)| {
                    Usage(format!(
                        "{m}; pass --scenario e03a|e03b for {}",
                        dir.display()
                    ))
                },
            )?
        }
    };
    let (summary, warnings) = match analyze_dir_with_warnings(dir, scenario) {
        Ok(s) => s,
        Err(e) => return Ok(report_error(&e)),
    };
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    let mut out = std::io::stdout().lock();
    let _ = tables::print_tables(&mut out, &summary);
    let _ = out.flush();
    if let Err(e) = write_outputs(dir, &summary) {
        return Ok(report_error(&e));
    }
    println!(
        "\nwrote {}/{{summary.json, arrivals_100ms.csv, arrivals_1s.csv, *.svg, *.png, report.md, report.html}}",
        dir.display()
    );
    let bad = tables::mismatched_complete_runs(&summary);
    if !bad.is_empty() {
        for r in bad {
            eprintln!(
                "ERROR: {} seed {}: client attempts and server arrivals do not match ({:?}); the logs of this run cannot be trusted",
                r.strategy, r.seed, r.matched
            );
        }
        return Ok(1);
    }
    Ok(0)
}

fn run_server_log(log: &Path, out: &Path, scenario: Option<&str>) -> Result<i32, Usage> {
    // A standalone `lab serve --scenario FILE` keeps the file beside its log.
    let kept = match log.parent() {
        Some(dir) => crate::kept::kept_scenario(dir).map_err(Usage)?,
        None => None,
    };
    let scenario = scenario
        .map(|v| parse_scenario("--scenario", v, kept.as_ref()))
        .transpose()?;
    if !log.is_file() {
        return Err(Usage(format!(
            "invalid --server-log {:?}: not a file",
            log.display().to_string()
        )));
    }
    let (mut summary, answers, mut warnings) =
        match standalone::analyze_server_log(log, scenario, kept.as_ref()) {
            Ok(s) => s,
            Err(e) => return Ok(report_error(&e)),
        };
    // A standalone `lab serve` has no end of its own: stopping it (Ctrl-C, kill) is how its run
    // ends. A log whose only flaw is that stop is whole, not an incomplete run.
    let standalone = crate::reader::read_run_start(log)
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
                "note: the standalone service was stopped, which is how its run ends; the log is whole"
            );
        }
        warnings.clear();
        summary.complete = true;
        for r in &mut summary.runs {
            r.complete = true;
        }
    }
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    let load = standalone::load_of(log, &summary, answers);
    println!(
        "Load at the dependency ({}), from its log alone:\n",
        summary.scenario.title()
    );
    print!("{}", standalone::load_table(&load).markdown());
    println!("\nWhat it answered, by HTTP status:\n");
    print!(
        "{}",
        e03_metrics::statuses::server_answers_table(&load.answers).markdown()
    );
    println!("\nArrival to response (matched by seq), in ms:\n");
    print!(
        "{}",
        e03_metrics::statuses::server_latency_table(&load.answers).markdown()
    );
    if let Err(e) = standalone::write_load_outputs(out, &load, &summary) {
        return Ok(report_error(&e));
    }
    println!("\nwrote {}/{{load.json, arrivals_100ms.csv, arrivals_1s.csv, arrivals_*.svg, arrivals_*.png}}", out.display());
    Ok(0)
}
