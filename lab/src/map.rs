//! `lab map`: the phase map of an open-loop scenario (offered load against freeze length, each
//! cell recovered or metastable, per strategy), computed on the simulator over every core, drawn
//! as a heat map; `--verify K` runs the K cells nearest the boundary live and says whether the
//! live verdict agrees with the simulated one.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use clap::{Arg, Command as Clap};
use e03_metrics::openloop::PhaseMap;
use e03_plan::cli::{raw_params, unknown_env, unknown_env_message, with_param_args};

use crate::args::RunPlan;
use crate::outdir::{self, RunChoice};
use crate::EXIT_USAGE;

/// Default offered loads, shares of capacity.
const LOADS: &str = "0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9";
/// Default freeze lengths, seconds.
const TRIGGERS: &str = "0.5,1,2,3,5,8";

fn cli() -> Clap {
    with_param_args(
        Clap::new("lab map")
            .about(
                "the phase map of an open-loop scenario on the simulator: offered load (share \
                 of capacity) against freeze length, each cell recovered or metastable, per \
                 strategy; writes phase-map.svg/.png, map.csv and map.json. Each cell sets \
                 E03_WORKLOAD=open_loop, E03_RATE, the freeze's end and E03_DURATION_S itself; \
                 the other run parameters apply as given. A scenario with replicas and a down \
                 phase of one of them, and no freeze (failover), is mapped by the load on the \
                 survivors (a share of their capacity) against that outage's length (--freezes)",
            )
            .arg(
                Arg::new("scenario")
                    .value_name("SCENARIO")
                    .default_value("metastable")
                    .help(
                        "a scenario with a freeze phase, or with replicas and a down phase of \
                         one of them (built-in name or FILE.toml)",
                    ),
            )
            .arg(
                Arg::new("loads")
                    .long("loads")
                    .value_name("LIST")
                    .default_value(LOADS)
                    .help("offered loads as shares of capacity, each greater than 0 and at most 4"),
            )
            .arg(
                Arg::new("freezes")
                    .long("freezes")
                    .value_name("LIST")
                    .default_value(TRIGGERS)
                    .help(
                        "freeze lengths (a lost replica's outage lengths) in seconds, each \
                         greater than 0 and at most 600",
                    ),
            )
            .arg(
                Arg::new("horizon-s")
                    .long("horizon-s")
                    .value_name("SECONDS")
                    .default_value("60")
                    .help("seconds after the freeze's end a run has to recover (1 to 3600)"),
            )
            .arg(
                Arg::new("verify")
                    .long("verify")
                    .value_name("K")
                    .default_value("0")
                    .help(
                        "run the K cells nearest the boundary live (one seed each) and compare \
                         their verdicts with the simulator's (0 to 20)",
                    ),
            )
            .arg(
                Arg::new("out")
                    .long("out")
                    .env("E03_OUT")
                    .value_name("DIR")
                    .default_value("results")
                    .help("output directory: OUT/<run id>/map/ (nothing already there is deleted)"),
            )
            .arg(
                Arg::new("run-id")
                    .long("run-id")
                    .env("E03_RUN_ID")
                    .value_name("NAME")
                    .help("name of the run directory OUT/NAME [default: the UTC start time]"),
            ),
    )
}

fn usage(e: impl std::fmt::Display) -> i32 {
    eprintln!("lab: {e}");
    EXIT_USAGE
}

/// A comma-separated list of numbers, each in `(lo, hi]`.
fn numbers(flag: &str, text: &str, lo: f64, hi: f64) -> Result<Vec<f64>, String> {
    let bad = || {
        format!(
            "invalid --{flag} {text:?}: expected a comma-separated list of numbers, each greater \
             than {lo} and at most {hi}"
        )
    };
    let v: Vec<f64> = text
        .split(',')
        .map(|p| p.trim().parse::<f64>().map_err(|_| bad()))
        .collect::<Result<_, _>>()?;
    if v.is_empty() || v.iter().any(|x| !x.is_finite() || *x <= lo || *x > hi) {
        return Err(bad());
    }
    let mut sorted = v.clone();
    sorted.sort_by(f64::total_cmp);
    sorted.dedup();
    Ok(sorted)
}

/// `lab map ...`: exit 0, 1 on an error, 2 on bad input, 4 when `--verify` found a cell whose
/// live verdict differs from the simulated one.
pub fn main(args: &[OsString]) -> i32 {
    let argv: Vec<OsString> = std::iter::once(OsString::from("lab map"))
        .chain(args.iter().skip(2).cloned())
        .collect();
    let m = match cli().try_get_matches_from(argv) {
        Ok(m) => m,
        Err(e) => return e03_plan::cli::clap_exit("lab", &e),
    };
    if let Some(name) = unknown_env(std::env::vars().map(|(k, _)| k)).first() {
        return usage(unknown_env_message(name));
    }
    let get = |id: &str| m.get_one::<String>(id).cloned().unwrap_or_default();
    let found = match e03_io::scenario_files::resolve(&get("scenario")) {
        Ok(f) if f.len() == 1 => f.into_iter().next().expect("one"),
        Ok(_) => return usage("expected one scenario"),
        Err(e) => return usage(e),
    };
    let scenario_arg = match &found.file {
        Some(f) => std::path::absolute(f)
            .unwrap_or_else(|_| f.clone())
            .display()
            .to_string(),
        None => found.scenario.name().to_string(),
    };
    let loads = match numbers("loads", &get("loads"), 0.0, 4.0) {
        Ok(v) => v,
        Err(e) => return usage(e),
    };
    let triggers = match numbers("freezes", &get("freezes"), 0.0, 600.0) {
        Ok(v) => v,
        Err(e) => return usage(e),
    };
    let horizon = match get("horizon-s").parse::<f64>() {
        Ok(h) if (1.0..=3600.0).contains(&h) => h,
        _ => {
            return usage(format!(
                "invalid --horizon-s {:?}: expected a number of seconds from 1 to 3600",
                get("horizon-s")
            ))
        }
    };
    let verify = match get("verify").parse::<usize>() {
        Ok(k) if k <= 20 => k,
        _ => {
            return usage(format!(
                "invalid --verify {:?}: expected a whole number from 0 to 20",
                get("verify")
            ))
        }
    };
    let mut raw = raw_params(&m);
    if !raw.contains_key("E03_SEEDS") && !raw.contains_key("E03_SEED") {
        raw.insert("E03_SEEDS".into(), "1-3".into());
    }
    let spec = simulator::MapSpec {
        scenario: found.scenario.clone(),
        raw,
        loads,
        triggers_s: triggers,
        horizon_s: horizon,
    };
    // Every cell's parameters are checked before anything runs, the scenario's trigger first.
    let trigger = match spec.trigger() {
        Ok(t) => t,
        Err(e) => return usage(e),
    };
    if verify > 0 && trigger != simulator::map::Trigger::Freeze {
        return usage(format!(
            "invalid --verify {verify} for {}: live verification runs a freeze's cells only; \
             a lost replica's map is simulated (expected --verify 0)",
            found.scenario.name()
        ));
    }
    if let Err(e) = e03_plan::cli::params_for_scenario(&m, &spec.scenario) {
        return usage(e);
    }
    for &l in &spec.loads {
        for &t in &spec.triggers_s {
            if let Err(e) = spec.cell_params(l, t) {
                return usage(format!("the cell at load {l} and freeze {t} s: {e}"));
            }
        }
    }
    let out = PathBuf::from(get("out"));
    let choice = RunChoice {
        id: m.get_one::<String>("run-id").cloned(),
        overwrite: false,
    };
    if let Err(e) = outdir::check_choice(&out, &choice, "--run-id") {
        return usage(e);
    }
    match run(&spec, &scenario_arg, &out, &choice, verify) {
        Ok(code) => code,
        Err(e) => crate::outdir::fail("lab", &e),
    }
}

fn run(
    spec: &simulator::MapSpec,
    scenario_arg: &str,
    out: &std::path::Path,
    choice: &RunChoice,
    verify: usize,
) -> anyhow::Result<i32> {
    let run = outdir::claim(out, choice)?;
    let dir = run.dir.join("map");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let started = Instant::now();
    let cpu0 = cpu_seconds();
    let map = simulator::phase_map(spec).map_err(anyhow::Error::msg)?;
    let wall = started.elapsed().as_secs_f64();
    let cpu = cpu_seconds().zip(cpu0).map(|(a, b)| a - b);
    let mut stdout = std::io::stdout().lock();
    map.print(&mut stdout)?;
    use std::io::Write;
    writeln!(
        stdout,
        "\nPredicted boundary: {} = {:.0}% of capacity (dashed line).",
        map.boundary_rule(),
        map.predicted_boundary() * 100.0
    )?;
    let runs = map.cells.len() * map.seeds.len();
    writeln!(
        stdout,
        "{runs} simulated runs in {wall:.1} s wall{} on {} threads",
        cpu.map_or(String::new(), |c| format!(", {c:.1} s user+sys")),
        simulator::run::threads()
    )?;
    analyzer::figures::write_phase_map(&dir, &map)?;
    analyzer::outputs::write_csv_rows(&dir.join("map.csv"), &map.csv_rows())?;
    std::fs::write(
        dir.join("map.json"),
        serde_json::to_string_pretty(&map)? + "\n",
    )
    .with_context(|| format!("writing {}", dir.display()))?;
    writeln!(stdout, "results: {}", outdir::shown(&dir))?;
    drop(stdout);
    if verify == 0 {
        return Ok(0);
    }
    verify_cells(spec, scenario_arg, &map, &dir, verify)
}

/// This process's user+sys CPU seconds (children included), from /proc; None elsewhere.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // Fields 14-17 of stat (utime, stime, cutime, cstime), 0-based 11..15 after the name.
    let ticks: f64 = f
        .get(11..15)?
        .iter()
        .filter_map(|v| v.parse::<f64>().ok())
        .sum();
    Some(ticks / 100.0)
}

/// `--verify K`: the K cells nearest the boundary, each live with its first seed.
fn verify_cells(
    spec: &simulator::MapSpec,
    scenario_arg: &str,
    map: &PhaseMap,
    dir: &std::path::Path,
    k: usize,
) -> anyhow::Result<i32> {
    let cells = map.boundary_cells(k);
    let seed = map.seeds[0];
    let mut rows = Vec::new();
    for (n, cell) in cells.iter().enumerate() {
        // The cell's typed parameters with its first seed and its strategy only (checked
        // setters: the rules of typed values still apply).
        let params = spec
            .cell_params(cell.load, cell.trigger_s)?
            .with_seeds(vec![seed])?
            .with_strategies_where(|s| s.id == cell.strategy)
            .with_context(|| format!("the map has no strategy {}", cell.strategy))?;
        let name = format!("verify-{}", n + 1);
        eprintln!(
            "lab: verify {}/{}: {} at {:.0}% load, freeze {} s, seed {seed}, live for {:.0} s",
            n + 1,
            cells.len(),
            cell.strategy,
            cell.load * 100.0,
            cell.trigger_s,
            params.swarm().duration_s
        );
        let plan = RunPlan {
            junit: None,
            scenarios: vec![spec.scenario.clone()],
            scenario_args: vec![scenario_arg.to_string()],
            // The definition's text, kept beside the cell's logs (as `lab run` keeps it).
            definitions: e03_io::scenario_files::resolve(scenario_arg)
                .map_err(anyhow::Error::msg)?
                .into_iter()
                .map(|a| a.text)
                .collect(),
            params: vec![params.clone()],
            progress: None,
            answer_spin: None,
            metrics_listen: None,
            out: dir.to_path_buf(),
            sequential: false,
            scenarios_at_once: 1,
            swarm_shards: 1,
            upstream: None,
            choice: RunChoice {
                id: Some(name.clone()),
                overwrite: true,
            },
            policies: None,
        };
        let code = crate::live::run(&plan);
        let scen_dir = dir.join(&name).join(spec.scenario.name());
        let summary = analyzer::analyze_dir(&scen_dir, spec.scenario.clone(), simulator::model_run)
            .with_context(|| format!("analysing {}", scen_dir.display()))?;
        // The cell's one run (its strategy, its first seed) beside its model.
        let beside = simulator::Beside::of(&summary)
            .open_loop()
            .into_iter()
            .next()
            .context("the live run has no run")?;
        let live = beside
            .live
            .context("the live run has no open-loop figures")?;
        let sim = beside
            .model
            .context("the simulated run has no open-loop figures")?;
        rows.push((
            cell.strategy.clone(),
            cell.load,
            cell.trigger_s,
            sim,
            live,
            code,
        ));
    }
    let mut disagree = 0;
    println!(
        "\nVerify: {} boundary cells live (seed {seed}) against the simulator",
        rows.len()
    );
    println!(
        "{:<10} {:>6} {:>8}  {:<34} {:<34} {:>9} {:>9} {:>7}",
        "strategy", "load", "freeze", "simulated", "live", "wasted s", "wasted l", "dropped"
    );
    for (id, load, t, sim, live, code) in &rows {
        let same = sim.recovery_s.is_some() == live.recovery_s.is_some();
        disagree += usize::from(!same);
        println!(
            "{:<10} {:>5.0}% {:>6} s  {:<34} {:<34} {:>9} {:>9} {:>7}{}{}",
            id,
            load * 100.0,
            t,
            sim.verdict_text(),
            live.verdict_text(),
            sim.wasted,
            live.wasted,
            live.dropped,
            if same { "" } else { "  DIFFERENT" },
            if *code == 0 {
                ""
            } else {
                "  (live run exit code not 0)"
            }
        );
    }
    println!(
        "{} of {} cells give the same verdict live and simulated; per-second series of each \
         live run: {}/verify-N/{}/summary.json (open_loop)",
        rows.len() - disagree,
        rows.len(),
        outdir::shown(dir),
        spec.scenario.name()
    );
    Ok(if disagree == 0 { 0 } else { 4 })
}
