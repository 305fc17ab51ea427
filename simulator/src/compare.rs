//! Live against simulated: for each strategy, every figure's mean over the seeds of each side,
//! side by side, with the relative difference `(simulated - live) / live` (success in percentage
//! points).
//!
//! The simulator claims to model the live lab; this table is how a user checks the claim on
//! their machine. A difference of a few percent on totals and peaks is the expected noise of
//! real timers and sockets; a large one points at a modelling gap (or an overloaded machine).

use std::io::Write;

use e03_metrics::metrics::RunMetrics;
use e03_metrics::ScenarioSummary;

use e03_metrics::tables::Table;

use crate::stats::{format_difference, format_value, spread_of, Spread, Unit, METRICS};

/// Relative difference of `sim` to `live`, printed: `+3.2%`, `0.0%`, or `n/a` when `live` is
/// zero and `sim` is not.
pub fn relative_difference(live: f64, sim: f64) -> String {
    if live == sim {
        return "0.0%".to_string();
    }
    if live == 0.0 {
        return "n/a".to_string();
    }
    format!("{:+.1}%", (sim - live) / live.abs() * 100.0)
}

/// Strategy ids of both sides, live's order first.
fn strategy_ids(live: &[RunMetrics], sim: &[RunMetrics]) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for m in live.iter().chain(sim) {
        if !ids.contains(&m.strategy) {
            ids.push(m.strategy.clone());
        }
    }
    ids
}

/// The comparison of two sets of runs of one scenario; `title` heads it. Strategies are named
/// by their id alone; [`print_comparison`] adds their names.
pub fn print_run_comparison<W: Write>(
    w: &mut W,
    title: &str,
    live: &[RunMetrics],
    sim: &[RunMetrics],
) -> std::io::Result<()> {
    print_labelled_comparison(w, title, live, sim, &|id| id.to_string())
}

/// [`print_run_comparison`] with `label` naming each strategy ("C backoff + full jitter").
fn print_labelled_comparison<W: Write>(
    w: &mut W,
    title: &str,
    live: &[RunMetrics],
    sim: &[RunMetrics],
    label: &dyn Fn(&str) -> String,
) -> std::io::Result<()> {
    writeln!(w, "{title}: live vs simulated (means over seeds)")?;
    for id in strategy_ids(live, sim) {
        let l: Vec<&RunMetrics> = live.iter().filter(|m| m.strategy == id).collect();
        let s: Vec<&RunMetrics> = sim.iter().filter(|m| m.strategy == id).collect();
        writeln!(w)?;
        writeln!(
            w,
            "strategy {} ({} live run(s), {} simulated run(s))",
            label(&id),
            l.len(),
            s.len()
        )?;
        let mut rows = Vec::new();
        for metric in METRICS {
            let ls = spread_of(metric, l.iter().copied());
            let ss = spread_of(metric, s.iter().copied());
            if ls.is_none() && ss.is_none() {
                continue;
            }
            let show = |x: &Option<Spread>| {
                x.map_or("-".to_string(), |x| {
                    format_value(metric.unit, x.mean, x.n > 1)
                })
            };
            let diff = match (ls, ss) {
                // A share's difference in points: "+0.7 pts", never a relative "%".
                (Some(a), Some(b)) if metric.unit == Unit::Share => {
                    format_difference(Unit::Share, b.mean - a.mean)
                }
                (Some(a), Some(b)) => relative_difference(a.mean, b.mean),
                _ => "-".to_string(),
            };
            rows.push(vec![metric.name.to_string(), show(&ls), show(&ss), diff]);
        }
        let table = Table {
            headers: ["figure", "live", "simulated", "difference"]
                .map(String::from)
                .to_vec(),
            rows,
        };
        write!(w, "{}", table.markdown())?;
    }
    Ok(())
}

/// Side by side live vs simulated, relative difference per figure (per strategy).
pub fn print_comparison<W: Write>(
    w: &mut W,
    live: &ScenarioSummary,
    sim: &ScenarioSummary,
) -> std::io::Result<()> {
    let label = |id: &str| {
        let l = live.strategy_label(id);
        if l != id {
            l
        } else {
            sim.strategy_label(id)
        }
    };
    print_labelled_comparison(w, live.scenario.title(), &live.runs, &sim.runs, &label)?;
    if live.scenario != sim.scenario {
        writeln!(
            w,
            "note: the live runs are {} and the simulated runs {}",
            live.scenario.name(),
            sim.scenario.name()
        )?;
    }
    if live.seeds() != sim.seeds() {
        writeln!(
            w,
            "note: the two sides ran different seeds (live {:?}, simulated {:?})",
            live.seeds(),
            sim.seeds()
        )?;
    }
    let (l, s) = (&live.params, &sim.params);
    if l.service() != s.service() || l.swarm() != s.swarm() {
        writeln!(w, "note: the two sides ran with different parameters")?;
    }
    if !live.complete {
        writeln!(
            w,
            "note: some live runs were stopped early or their logs are cut"
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_differences() {
        assert_eq!(relative_difference(100.0, 103.2), "+3.2%");
        assert_eq!(relative_difference(200.0, 100.0), "-50.0%");
        assert_eq!(relative_difference(0.0, 0.0), "0.0%");
        assert_eq!(relative_difference(0.0, 5.0), "n/a");
    }

    #[test]
    fn comparison_shows_each_strategy_side_by_side() {
        let raw = [("E03_STRATEGIES", "A,C"), ("E03_CLIENTS", "50")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let p = e03_plan::Params::from_raw(&raw).unwrap();
        let sim = crate::simulate(e03_plan::Scenario::e03b(), &p);
        let mut live = sim.clone();
        live.simulated = false;
        live.runs[1].total_requests = sim.runs[1].total_requests * 2;
        let mut out = Vec::new();
        print_comparison(&mut out, &live, &sim).unwrap();
        let text = String::from_utf8(out).unwrap();
        let c = text.split("strategy C").nth(1).unwrap();
        let total = c
            .lines()
            .find(|l| l.starts_with("| total_requests"))
            .unwrap();
        assert!(total.trim_end().ends_with("-50.0% |"), "{total}");
        let a = text.split("strategy A").nth(1).unwrap();
        let peak = a.lines().find(|l| l.starts_with("| peak_100ms")).unwrap();
        assert!(peak.trim_end().ends_with(" 0.0% |"), "{peak}");
        assert!(!text.contains("note:"), "{text}");
    }

    #[test]
    fn six_simulated_strategies_fit_in_a_terminal() {
        let raw = [("E03_STRATEGIES", "A,B,C,D,E,F"), ("E03_SEEDS", "1,2,3")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let p = e03_plan::Params::from_raw(&raw).unwrap();
        let sim = crate::simulate(e03_plan::Scenario::e03b(), &p);
        let mut live = sim.clone();
        live.simulated = false;
        let mut out = Vec::new();
        e03_metrics::print_tables(&mut out, &sim).unwrap();
        print_comparison(&mut out, &live, &sim).unwrap();
        let text = String::from_utf8(out).unwrap();
        let widest = text.lines().map(|l| l.chars().count()).max().unwrap();
        assert!(
            widest <= e03_metrics::tables::TERMINAL_COLUMNS,
            "{widest} columns:\n{text}"
        );
        assert!(text.contains("| F decorrelated jitter"), "{text}");
        assert!(
            text.contains("strategy E backoff + equal jitter (3 live run(s)"),
            "{text}"
        );
    }
}
