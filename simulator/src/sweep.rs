//! Parameter sweeps: a grid over one or more parameters, every point simulated for every seed
//! and strategy.
//!
//! An axis is written `NAME=V1,V2,...` with NAME an env var (`E03_QUEUE`) or a flag name
//! (`queue`). The grid is the cartesian product of the axes (the first axis varies slowest).
//! Every point is validated with [`Params::from_raw`] before anything runs, so a bad value is
//! reported at once, naming its parameter; then all (point, seed, strategy) runs are spread over
//! the machine's threads.

use std::collections::BTreeMap;

use e03_metrics::metrics::RunMetrics;
use e03_model::Strategy;
use e03_plan::params::spec;
use e03_plan::{ParamError, Params, Scenario};

use crate::run::{par_map, simulate_run};
use e03_metrics::tables::Table;

use crate::stats::{format_spread, spread_of, unit_label, METRICS};

/// What `--sweep` accepts, for errors.
const SWEEP_ACCEPTS: &str =
    "PARAM=V1,V2,... with PARAM an env var (E03_QUEUE) or a flag name (queue)";
/// Grids larger than this are refused (each point is every seed times every strategy).
pub const MAX_POINTS: usize = 10_000;

/// One parameter of a sweep and the values it takes.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SweepAxis {
    /// Env var name (a flag name given by the user is turned into it).
    pub name: String,
    pub values: Vec<String>,
}

/// One point of the grid and its runs.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepPoint {
    /// (env var name, value) for every axis, in axis order.
    pub values: Vec<(String, String)>,
    pub params: Params,
    /// Every (seed, strategy) run of this point, seed-major.
    pub runs: Vec<RunMetrics>,
}

/// A whole sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepResult {
    pub scenario: Scenario,
    pub axes: Vec<SweepAxis>,
    /// Grid points, first axis slowest.
    pub points: Vec<SweepPoint>,
}

/// `E03_QUEUE=50,100,200` or `queue=50,100,200` into an axis.
pub fn parse_sweep(arg: &str) -> Result<SweepAxis, ParamError> {
    let invalid = |name: &str, value: &str, accepts: &str| ParamError::Invalid {
        name: name.to_string(),
        value: value.to_string(),
        accepts: accepts.to_string(),
    };
    let Some((name, list)) = arg.split_once('=') else {
        return Err(invalid("--sweep", arg, SWEEP_ACCEPTS));
    };
    let name = name.trim().trim_start_matches("--");
    if name.is_empty() {
        return Err(invalid("--sweep", arg, SWEEP_ACCEPTS));
    }
    let spec = spec(name).ok_or_else(|| ParamError::Unknown {
        name: name.to_string(),
    })?;
    let values: Vec<String> = list.split(',').map(|v| v.trim().to_string()).collect();
    if values.iter().any(String::is_empty) {
        let accepts = format!("a comma-separated list of values, each {}", spec.accepts);
        return Err(invalid(spec.env, list, &accepts));
    }
    Ok(SweepAxis {
        name: spec.env.to_string(),
        values,
    })
}

/// Every point of the grid as (name, value) assignments, first axis slowest.
pub fn grid(axes: &[SweepAxis]) -> Vec<Vec<(String, String)>> {
    let mut points: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for axis in axes {
        points = points
            .iter()
            .flat_map(|p| {
                axis.values.iter().map(move |v| {
                    let mut p = p.clone();
                    p.push((axis.name.clone(), v.clone()));
                    p
                })
            })
            .collect();
    }
    points
}

/// Simulates every point of the grid over `base_raw` (env name to value) with all seeds and
/// strategies of each point.
pub fn sweep(
    scenario: Scenario,
    base_raw: &BTreeMap<String, String>,
    axes: &[SweepAxis],
) -> Result<SweepResult, ParamError> {
    for (i, axis) in axes.iter().enumerate() {
        let canonical = spec(&axis.name).ok_or_else(|| ParamError::Unknown {
            name: axis.name.clone(),
        })?;
        if axes[..i]
            .iter()
            .any(|a| spec(&a.name).is_some_and(|s| s.env == canonical.env))
        {
            return Err(ParamError::Invalid {
                name: canonical.env.to_string(),
                value: axis.values.join(","),
                accepts: "one sweep axis per parameter".to_string(),
            });
        }
    }
    let size = axes
        .iter()
        .try_fold(1usize, |n, a| n.checked_mul(a.values.len()));
    if size.is_none_or(|n| n > MAX_POINTS) {
        return Err(ParamError::Invalid {
            name: "--sweep".to_string(),
            value: axes
                .iter()
                .map(|a| format!("{}={}", a.name, a.values.join(",")))
                .collect::<Vec<_>>()
                .join(" "),
            accepts: format!("a grid of at most {MAX_POINTS} points"),
        });
    }
    let mut points = Vec::new();
    for values in grid(axes) {
        let mut raw = base_raw.clone();
        for (name, value) in &values {
            let env = spec(name).map_or(name.as_str(), |s| s.env);
            raw.insert(env.to_string(), value.clone());
        }
        let params = Params::for_scenario(&scenario, &raw)?;
        points.push(SweepPoint {
            values,
            params,
            runs: Vec::new(),
        });
    }
    let jobs: Vec<(usize, u64, &Strategy)> = points
        .iter()
        .enumerate()
        .flat_map(|(i, p)| {
            p.params
                .seeds()
                .iter()
                .flat_map(move |seed| p.params.strategies().iter().map(move |s| (i, *seed, s)))
        })
        .collect();
    let runs = par_map(&jobs, |(i, seed, strategy)| {
        simulate_run(scenario.clone(), &points[*i].params, strategy, *seed)
    });
    let owners: Vec<usize> = jobs.iter().map(|(i, _, _)| *i).collect();
    for (i, run) in owners.into_iter().zip(runs) {
        points[i].runs.push(run);
    }
    Ok(SweepResult {
        scenario,
        axes: axes.to_vec(),
        points,
    })
}

/// Strategy ids of the sweep in order of first appearance.
fn strategy_ids(r: &SweepResult) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for s in r.points.iter().flat_map(|p| p.params.strategies()) {
        if !ids.contains(&s.id) {
            ids.push(s.id.clone());
        }
    }
    ids
}

/// One table per figure: a row per grid point, a column per strategy, each cell
/// `mean (min..max)` over the point's seeds.
pub fn print_sweep<W: std::io::Write>(w: &mut W, r: &SweepResult) -> std::io::Result<()> {
    let ids = strategy_ids(r);
    let seeds = r.points.first().map_or(0, |p| p.params.seeds().len());
    let axes: Vec<&str> = r.axes.iter().map(|a| a.name.as_str()).collect();
    writeln!(
        w,
        "{} sweep over {} ({} points, {} seed(s) each, simulated)",
        r.scenario.title(),
        if axes.is_empty() {
            "nothing".to_string()
        } else {
            axes.join(" x ")
        },
        r.points.len(),
        seeds
    )?;
    let names: Vec<String> = ids
        .iter()
        .filter_map(|id| {
            r.points
                .iter()
                .flat_map(|p| p.params.strategies())
                .find(|s| &s.id == id)
                .map(|s| format!("{} {}", s.id, s.name))
        })
        .collect();
    for line in e03_metrics::tables::wrap(
        &format!("strategies: {}", names.join(", ")),
        e03_metrics::tables::TERMINAL_COLUMNS,
    ) {
        writeln!(w, "{line}")?;
    }
    for metric in METRICS {
        let cell = |p: &SweepPoint, id: &str| {
            spread_of(metric, p.runs.iter().filter(|m| m.strategy == id))
                .map(|s| format_spread(metric.unit, &s))
        };
        if r.points
            .iter()
            .all(|p| ids.iter().all(|id| cell(p, id).is_none()))
        {
            continue;
        }
        writeln!(w)?;
        writeln!(
            w,
            "{} ({}; mean (min..max) over seeds)",
            metric.name,
            unit_label(metric.unit)
        )?;
        let mut header: Vec<String> = axes.iter().map(|a| a.to_string()).collect();
        header.extend(ids.iter().cloned());
        let mut rows = Vec::new();
        for p in &r.points {
            let mut row: Vec<String> = p.values.iter().map(|(_, v)| v.clone()).collect();
            row.extend(
                ids.iter()
                    .map(|id| cell(p, id).unwrap_or_else(|| "-".into())),
            );
            rows.push(row);
        }
        write!(
            w,
            "{}",
            Table {
                headers: header,
                rows
            }
            .markdown()
        )?;
    }
    print_breaker_sweep(w, r, &axes, &ids)
}

/// For strategies with a circuit breaker: per point and strategy, the calls sent, the calls
/// failed fast and the breaker's transitions (first seed), so a sweep shows where the
/// breaker's timing moves (`lab simulate breaker --sweep E03_DOWN_LATENCY_MS=0,0.5,1`).
fn print_breaker_sweep<W: std::io::Write>(
    w: &mut W,
    r: &SweepResult,
    axes: &[&str],
    ids: &[String],
) -> std::io::Result<()> {
    let with_breaker: Vec<&String> = ids
        .iter()
        .filter(|id| {
            r.points
                .iter()
                .flat_map(|p| &p.runs)
                .any(|m| &&m.strategy == id && !m.breaker.is_empty())
        })
        .collect();
    if with_breaker.is_empty() {
        return Ok(());
    }
    writeln!(w)?;
    writeln!(
        w,
        "circuit breaker (first seed): calls sent, failed fast, transitions (s)"
    )?;
    let mut header: Vec<String> = axes.iter().map(|a| a.to_string()).collect();
    header.extend(["strategy", "calls sent", "failed fast", "transitions (s)"].map(String::from));
    let mut rows = Vec::new();
    for p in &r.points {
        for id in &with_breaker {
            let Some(m) = p.runs.iter().find(|m| &&m.strategy == id) else {
                continue;
            };
            let mut row: Vec<String> = p.values.iter().map(|(_, v)| v.clone()).collect();
            row.extend([
                (*id).clone(),
                m.total_requests.to_string(),
                m.failed_fast.to_string(),
                m.breaker
                    .iter()
                    .map(|b| format!("{:.3}", b.t_us as f64 / 1e6))
                    .collect::<Vec<_>>()
                    .join(" "),
            ]);
            rows.push(row);
        }
    }
    write!(
        w,
        "{}",
        Table {
            headers: header,
            rows
        }
        .markdown()
    )
}

/// The sweep as CSV rows, header first: one row per (grid point, strategy) with the axis
/// values, the strategy, the number of seeds, then `<figure>_mean`, `<figure>_min`,
/// `<figure>_max` for every figure (empty if absent). The analyzer writes them
/// (`analyzer::outputs::write_csv_rows`): the simulator does no file IO.
pub fn sweep_csv_rows(r: &SweepResult) -> Vec<Vec<String>> {
    let mut header: Vec<String> = r.axes.iter().map(|a| a.name.clone()).collect();
    header.push("strategy".into());
    header.push("seeds".into());
    for m in METRICS {
        for stat in ["mean", "min", "max"] {
            header.push(format!("{}_{stat}", m.name));
        }
    }
    let mut rows = vec![header];
    for p in &r.points {
        for s in p.params.strategies() {
            let runs: Vec<&RunMetrics> = p.runs.iter().filter(|m| m.strategy == s.id).collect();
            let mut row: Vec<String> = p.values.iter().map(|(_, v)| v.clone()).collect();
            row.push(s.id.clone());
            row.push(runs.len().to_string());
            for m in METRICS {
                match spread_of(m, runs.iter().copied()) {
                    Some(sp) => row.extend([sp.mean, sp.min, sp.max].map(|v| v.to_string())),
                    None => row.extend(std::iter::repeat_n(String::new(), 3)),
                }
            }
            rows.push(row);
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_parse_from_env_or_flag_names() {
        let a = parse_sweep("E03_QUEUE=50,100, 200").unwrap();
        assert_eq!(a.name, "E03_QUEUE");
        assert_eq!(a.values, ["50", "100", "200"]);
        assert_eq!(parse_sweep("clients=100,200").unwrap().name, "E03_CLIENTS");
        assert_eq!(parse_sweep("--workers=5").unwrap().name, "E03_WORKERS");
    }

    #[test]
    fn parse_errors_name_the_parameter() {
        let e = parse_sweep("E03_QUEU=1,2").unwrap_err().to_string();
        assert!(e.starts_with("unknown parameter \"E03_QUEU\""), "{e}");
        let e = parse_sweep("queue=1,,2").unwrap_err().to_string();
        assert!(
            e.starts_with("invalid E03_QUEUE=\"1,,2\": expected a comma-separated list"),
            "{e}"
        );
        let e = parse_sweep("queue").unwrap_err().to_string();
        assert!(
            e.starts_with("invalid --sweep=\"queue\": expected PARAM=V1,V2"),
            "{e}"
        );
        let e = parse_sweep("=1,2").unwrap_err().to_string();
        assert!(e.starts_with("invalid --sweep"), "{e}");
    }

    #[test]
    fn grid_is_the_cartesian_product_first_axis_slowest() {
        let axes = [
            parse_sweep("queue=1,2,3").unwrap(),
            parse_sweep("workers=4,5").unwrap(),
        ];
        let g = grid(&axes);
        assert_eq!(g.len(), 6);
        let flat: Vec<String> = g
            .iter()
            .map(|p| {
                p.iter()
                    .map(|(_, v)| v.as_str())
                    .collect::<Vec<_>>()
                    .join("/")
            })
            .collect();
        assert_eq!(flat, ["1/4", "1/5", "2/4", "2/5", "3/4", "3/5"]);
        assert_eq!(grid(&[]).len(), 1, "no axis: the base point alone");
    }

    fn small_base() -> BTreeMap<String, String> {
        [
            ("E03_CLIENTS", "20"),
            ("E03_DURATION_S", "12"),
            ("E03_SEEDS", "1,2"),
            ("E03_STRATEGIES", "A,C"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    #[test]
    fn sweep_validates_every_point_naming_the_parameter() {
        let axes = [parse_sweep("think-min-ms=1000,3000").unwrap()];
        let e = sweep(Scenario::e03b(), &small_base(), &axes).unwrap_err();
        // 3000 ms is above the default think max: the later parameter of the pair is named.
        assert!(e.to_string().starts_with("invalid E03_THINK_MAX_MS"), "{e}");
        let axes = [parse_sweep("queue=10,-1").unwrap()];
        let e = sweep(Scenario::e03b(), &small_base(), &axes).unwrap_err();
        assert!(e.to_string().starts_with("invalid E03_QUEUE=\"-1\""), "{e}");
        let twice = [
            parse_sweep("queue=1").unwrap(),
            parse_sweep("E03_QUEUE=2").unwrap(),
        ];
        let e = sweep(Scenario::e03b(), &small_base(), &twice).unwrap_err();
        assert!(e.to_string().starts_with("invalid E03_QUEUE"), "{e}");
    }

    #[test]
    fn sweep_runs_every_point_seed_and_strategy() {
        let axes = [
            parse_sweep("queue=0,100").unwrap(),
            parse_sweep("workers=2,5,10").unwrap(),
        ];
        let r = sweep(Scenario::e03b(), &small_base(), &axes).unwrap();
        assert_eq!(r.points.len(), 2 * 3);
        for p in &r.points {
            assert_eq!(p.runs.len(), 2 * 2);
            let order: Vec<(u64, &str)> = p
                .runs
                .iter()
                .map(|m| (m.seed, m.strategy.as_str()))
                .collect();
            assert_eq!(order, [(1, "A"), (1, "C"), (2, "A"), (2, "C")]);
        }
        assert_eq!(r.points[5].params.service().workers, 10);
        assert_eq!(r.points[5].params.service().queue, 100);
        // Each point really ran with its own parameters: the same point alone gives the same runs.
        let alone = simulate_run(
            Scenario::e03b(),
            &r.points[1].params,
            &r.points[1].params.strategies()[1],
            2,
        );
        assert_eq!(r.points[1].runs[3], alone);

        let mut text = Vec::new();
        print_sweep(&mut text, &r).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains("peak_100ms"), "{text}");
        assert!(
            text.contains("strategies: A immediate retry, C backoff + full jitter"),
            "{text}"
        );
        let table = text.split("\ntotal_requests").nth(1).unwrap();
        let header = table.lines().nth(1).unwrap();
        assert!(
            header.starts_with("| E03_QUEUE") && header.trim_end().ends_with("C |"),
            "{header}"
        );
        // Header + 6 points in the first table (up to the blank line), plus the markdown
        // separator line.
        assert_eq!(
            table.lines().skip(1).take_while(|l| !l.is_empty()).count(),
            7 + 1
        );

        let csv: String = sweep_csv_rows(&r)
            .iter()
            .map(|row| row.join(",") + "\n")
            .collect();
        let mut lines = csv.lines();
        assert!(lines
            .next()
            .unwrap()
            .starts_with("E03_QUEUE,E03_WORKERS,strategy,seeds,success_affected_mean"));
        assert_eq!(lines.count(), 6 * 2);
    }
}
