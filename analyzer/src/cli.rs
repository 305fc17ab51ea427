//! The command line, once for both fronts: a plain one ([`main_entry`], every table on stdout)
//! and `lab analyze` ([`main_entry_with`] and the lab's [`Front`]: its `lab:` prefix, its series
//! kept in the files unless `--series`, the simulator as the model of `live_model` checks). The
//! analyzer has no binary of its own: it reads logs and runs no model, and `lab analyze` is the
//! command.
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

use e03_plan::Scenario;

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
    /// Print the series of 100 ms windows around the outage too (always in the files)
    #[arg(long)]
    series: bool,
}

/// How a front shows the command: its name, the prefixes of its errors and warnings, and how it
/// prints the tables (`series`: `--series` was given).
pub struct Front<'a> {
    /// Its name in usage errors and help (`analyzer`, `lab analyze`).
    pub name: &'static str,
    /// Before an error (`error: `, `lab: `) and a warning (`warning: `, `lab: warning: `).
    pub error: &'a str,
    pub warning: &'a str,
    /// Prints clap's usage error or help; its exit code.
    pub clap_error: &'a dyn Fn(&clap::Error) -> i32,
    pub print_tables: &'a dyn Fn(&crate::ScenarioSummary, &Path, bool) -> std::io::Result<()>,
    /// What the scenario's `live_model` checks are judged against ([`e03_metrics::ModelOf`]).
    pub model: e03_metrics::ModelOf,
}

/// The plain front: every table printed, series included, `model` for `live_model` checks.
fn own_front(model: e03_metrics::ModelOf) -> Front<'static> {
    Front {
        name: "analyzer",
        model,
        error: "error: ",
        warning: "warning: ",
        clap_error: &|e: &clap::Error| {
            let _ = e.print();
            if e.use_stderr() {
                2
            } else {
                0
            }
        },
        print_tables: &|summary, _dir, _series| {
            let mut out = std::io::stdout().lock();
            tables::print_tables(&mut out, summary)?;
            out.flush()
        },
    }
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

/// Runs the whole CLI on `args` (program name first) with the plain front; returns the exit
/// code.
pub fn main_entry(args: Vec<OsString>, model: e03_metrics::ModelOf) -> i32 {
    main_entry_with(args, &own_front(model))
}

/// [`main_entry`] as `front` shows it.
pub fn main_entry_with(args: Vec<OsString>, front: &Front) -> i32 {
    use clap::{CommandFactory, FromArgMatches};
    let parsed = Args::command()
        .name(front.name)
        .bin_name(front.name)
        .try_get_matches_from(args)
        .and_then(|m| Args::from_arg_matches(&m));
    let args = match parsed {
        Ok(a) => a,
        Err(e) => return (front.clap_error)(&e),
    };
    let result = match (&args.dir, &args.server_log) {
        (Some(dir), None) => run_dir(front, dir, args.scenario.as_deref(), args.series),
        (None, Some(log)) => run_server_log(
            front,
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
            eprintln!("{}{message}", front.error);
            2
        }
    }
}

fn report_error(front: &Front, e: &AnalyzeError) -> i32 {
    eprintln!("{}{e}", front.error);
    exit_code(e)
}

fn run_dir(front: &Front, dir: &Path, scenario: Option<&str>, series: bool) -> Result<i32, Usage> {
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
    let kept = crate::kept::kept_scenario(dir).map_err(|e| Usage(e.to_string()))?;
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
    let (summary, warnings) = match analyze_dir_with_warnings(dir, scenario, front.model) {
        Ok(s) => s,
        Err(e) => return Ok(report_error(front, &e)),
    };
    for w in &warnings {
        eprintln!("{}{w}", front.warning);
    }
    // The outputs are written whatever became of stdout (`lab analyze DIR | head` closes it
    // early): the tables first, for a quick look, then the files, then what failed.
    let shown = (front.print_tables)(&summary, dir, series);
    if let Err(e) = write_outputs(dir, &summary) {
        return Ok(report_error(front, &e));
    }
    let shown = shown.and_then(|()| {
        writeln!(
            std::io::stdout().lock(),
            "\nwrote {}/{{summary.json, arrivals_100ms.csv, arrivals_1s.csv, *.svg, *.png, report.md, report.html}}",
            dir.display()
        )
    });
    if let Err(e) = shown {
        eprintln!(
            "{}writing to stdout: {e} (the outputs are written whole)",
            front.error
        );
        return Ok(1);
    }
    let bad = tables::mismatched_complete_runs(&summary);
    if !bad.is_empty() {
        for r in bad {
            eprintln!(
                "{}{} seed {}: client attempts and server arrivals do not match ({:?}); the logs of this run cannot be trusted",
                front.error, r.strategy, r.seed, r.matched
            );
        }
        return Ok(1);
    }
    Ok(0)
}

fn run_server_log(
    front: &Front,
    log: &Path,
    out: &Path,
    scenario: Option<&str>,
) -> Result<i32, Usage> {
    // A standalone `lab serve --scenario FILE` keeps the file beside its log.
    let kept = match log.parent() {
        Some(dir) => crate::kept::kept_scenario(dir).map_err(|e| Usage(e.to_string()))?,
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
            Err(e) => return Ok(report_error(front, &e)),
        };
    let mut text = String::new();
    // A standalone `lab serve` (or `lab proxy --http` without a control listener) has no end of
    // its own: stopping it (Ctrl-C, kill) is how its run ends. A log whose only flaw is that
    // stop is whole, not an incomplete run.
    let standalone = crate::reader::read_run_start(log)
        .ok()
        .flatten()
        .is_some_and(|s| {
            s.scenario == "standalone" || ["standalone", "proxy"].contains(&s.tag.strategy.as_str())
        });
    if standalone
        && warnings
            .iter()
            .all(|w| w.ends_with("run was stopped early"))
    {
        if !warnings.is_empty() {
            text.push_str(
                "note: the standalone service (or proxy) was stopped, which is how its run ends; \
                 the log is whole\n",
            );
        }
        warnings.clear();
        summary.complete = true;
        for r in &mut summary.runs {
            r.complete = true;
        }
    }
    for w in &warnings {
        eprintln!("{}{w}", front.warning);
    }
    let load = standalone::load_of(log, &summary, answers);
    text.push_str(&format!(
        "Load at the dependency ({}), from its log alone:\n\n{}\nWhat it answered, by HTTP \
         status:\n\n{}\nArrival to response (matched by seq), in ms:\n\n{}",
        summary.scenario.title(),
        standalone::load_table(&load).markdown(),
        e03_metrics::statuses::server_answers_table(&load.answers).markdown(),
        e03_metrics::statuses::server_latency_table(&load.answers).markdown()
    ));
    // The outputs first: a closed stdout (`| head`) must not cost them.
    if let Err(e) = standalone::write_load_outputs(out, &load, &summary) {
        return Ok(report_error(front, &e));
    }
    text.push_str(&format!(
        "\nwrote {}/{{load.json, arrivals_100ms.csv, arrivals_1s.csv, arrivals_*.svg, \
         arrivals_*.png}}\n",
        out.display()
    ));
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        eprintln!(
            "{}writing to stdout: {e} (the outputs are written whole)",
            front.error
        );
        return Ok(1);
    }
    Ok(0)
}
