//! Arrivals per 100 ms and per 1 s around the outage, one line per strategy, the phases shaded.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::canvas::{both, colour, DrawResult};
use crate::draw_error::err;
use crate::metrics::RunMetrics;
use crate::shades::{phase_shades, PhaseShade};
use crate::{AnalyzeError, ScenarioSummary};

/// What an arrivals figure shows.
struct ArrivalsView<'a> {
    runs: Vec<&'a RunMetrics>,
    /// "C backoff + full jitter" per run.
    labels: Vec<String>,
    simulated: bool,
    /// False for a server log read alone (any client): no seed in the title.
    seeded: bool,
    one_second: bool,
    /// Seconds shown.
    from_s: f64,
    to_s: f64,
    /// Every phase of the timeline that is not normal service: start and end (s), and its kind.
    phases: Vec<(f64, f64, PhaseShade)>,
    /// Some run was stopped early or its logs are cut.
    incomplete: bool,
    seed: u64,
}

/// The phases of every replica's timeline (`E03_REPLICAS`: a `[[timeline]]` phase may be one
/// replica's), each once: a phase of every replica is in each replica's timeline.
fn every_replica_s_phases(s: &ScenarioSummary) -> Vec<(f64, f64, PhaseShade)> {
    let mut v: Vec<(f64, f64, PhaseShade)> = Vec::new();
    for r in 0..s.params.replicas() {
        for p in phase_shades(&s.params.timeline_of(&s.scenario, r)) {
            if !v.contains(&p) {
                v.push(p);
            }
        }
    }
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v
}

/// Window `k` of `width_s` seconds overlaps `[from_s, to_s)`.
fn in_view(k: usize, width_s: f64, from_s: f64, to_s: f64) -> bool {
    let t = k as f64 * width_s;
    t + width_s > from_s && t < to_s
}

/// The legend of one line: its label and the peak *of the plotted windows*, so that the legend
/// never names a value the plot does not reach; the run's peak is added when it lies outside
/// the plotted span ("C backoff + full jitter (peak 94; 120 outside the plot)").
fn legend_text(label: &str, series: &[u64], width_s: f64, from_s: f64, to_s: f64) -> String {
    let shown = series
        .iter()
        .enumerate()
        .filter(|(k, _)| in_view(*k, width_s, from_s, to_s))
        .map(|(_, &n)| n)
        .max()
        .unwrap_or(0);
    let all = series.iter().copied().max().unwrap_or(0);
    if all > shown {
        format!("{label} (peak {shown}; {all} outside the plot)")
    } else {
        format!("{label} (peak {shown})")
    }
}

/// The title of an arrivals figure.
fn arrivals_title(label: &str, seed: Option<u64>, simulated: bool, incomplete: bool) -> String {
    let mut t = format!("Arrivals at the dependency per {label} window");
    if let Some(seed) = seed {
        t += &format!(" (seed {seed})");
    }
    if simulated {
        t = format!("SIMULATED: {t}");
    }
    if incomplete {
        t = format!("INCOMPLETE RUN: {t}");
    }
    t
}

fn draw_arrivals<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, v: &ArrivalsView) -> DrawResult
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(err)?;
    let width_s = if v.one_second { 1.0 } else { 0.1 };
    let series = |r: &RunMetrics| -> Vec<u64> {
        if v.one_second {
            r.arrivals_1s.clone()
        } else {
            r.arrivals_100ms.clone()
        }
    };
    let in_view = |k: usize| in_view(k, width_s, v.from_s, v.to_s);
    let ymax = v
        .runs
        .iter()
        .flat_map(|r| {
            series(r)
                .into_iter()
                .enumerate()
                .filter(|(k, _)| in_view(*k))
                .map(|(_, c)| c)
        })
        .max()
        .unwrap_or(0)
        .max(1) as f64
        * 1.12;
    let label = if v.one_second { "1 s" } else { "100 ms" };
    let mut chart = ChartBuilder::on(root)
        .caption(
            arrivals_title(label, v.seeded.then_some(v.seed), v.simulated, v.incomplete),
            ("sans-serif", 24),
        )
        .margin(14)
        .x_label_area_size(48)
        .y_label_area_size(70)
        .build_cartesian_2d(v.from_s..v.to_s, 0f64..ymax)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("time since the run's start (s)")
        .y_desc(format!("arrivals per {label}"))
        .y_label_formatter(&|v| format!("{v:.0}"))
        .x_label_formatter(&|v| format!("{v:.1}"))
        .light_line_style(RGBColor(235, 235, 235))
        .label_style(("sans-serif", 15))
        .axis_desc_style(("sans-serif", 17))
        .draw()
        .map_err(err)?;
    // Each phase shaded; each kind named once in the legend.
    let mut named: Vec<String> = Vec::new();
    for &(a, b, kind) in &v.phases {
        let (a, b) = (a.max(v.from_s), b.min(v.to_s));
        if b <= a {
            continue;
        }
        let c = kind.colour();
        let drawn = chart
            .draw_series(std::iter::once(Rectangle::new(
                [(a, 0.0), (b, ymax)],
                c.filled(),
            )))
            .map_err(err)?;
        let name = kind.name();
        if !named.contains(&name) {
            drawn
                .label(format!("shaded: {name}"))
                .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 18, y + 6)], c.filled()));
            named.push(name);
        }
    }
    for (i, r) in v.runs.iter().enumerate() {
        let c = colour(&r.strategy, i);
        // A step line: each window's count held across the window.
        let points: Vec<(f64, f64)> = series(r)
            .into_iter()
            .enumerate()
            .filter(|(k, _)| in_view(*k))
            .flat_map(|(k, n)| {
                let t = k as f64 * width_s;
                [
                    (t.max(v.from_s), n as f64),
                    ((t + width_s).min(v.to_s), n as f64),
                ]
            })
            .collect();
        chart
            .draw_series(LineSeries::new(points, c.stroke_width(2)))
            .map_err(err)?
            .label(legend_text(
                &v.labels[i],
                &series(r),
                width_s,
                v.from_s,
                v.to_s,
            ))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(3)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .label_font(("sans-serif", 15))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(err)
}

/// `arrivals_100ms.{svg,png}` and `arrivals_1s.{svg,png}`: first seed, one line per strategy.
pub fn write_arrivals(dir: &Path, s: &ScenarioSummary) -> Result<(), AnalyzeError> {
    arrivals(dir, s, false)
}

/// The arrivals figures of a server log read alone (any client): the whole run is plotted
/// (the client's traffic need not follow the lab's timeline; the freeze and degraded windows
/// are still shaded), and the title names no seed.
pub fn write_arrivals_any_client(dir: &Path, s: &ScenarioSummary) -> Result<(), AnalyzeError> {
    arrivals(dir, s, true)
}

fn arrivals(dir: &Path, s: &ScenarioSummary, any_client: bool) -> Result<(), AnalyzeError> {
    let Some(&seed) = s.seeds().first() else {
        return Ok(());
    };
    let runs: Vec<&RunMetrics> = s.runs.iter().filter(|r| r.seed == seed).collect();
    let timeline = s.params.timeline(&s.scenario);
    let phases = every_replica_s_phases(s);
    let (from_s, to_s) = match timeline.incident() {
        Some((start, end)) => (
            (start.as_secs_f64() - 2.5).max(0.0),
            end.as_secs_f64() + 1.0,
        ),
        None => (0.0, 0.0),
    };
    let (from_s, to_s) = if any_client || timeline.incident().is_none() {
        let last = runs
            .iter()
            .map(|r| r.arrivals_100ms.len())
            .max()
            .unwrap_or(0);
        (0.0, (last as f64 / 10.0).ceil().max(1.0))
    } else {
        (from_s, to_s)
    };
    for one_second in [false, true] {
        let view = ArrivalsView {
            labels: runs.iter().map(|r| s.strategy_label(&r.strategy)).collect(),
            simulated: s.simulated,
            seeded: !any_client,
            runs: runs.clone(),
            one_second,
            from_s,
            to_s,
            phases: phases.clone(),
            incomplete: !s.complete,
            seed,
        };
        let stem = if one_second {
            "arrivals_1s"
        } else {
            "arrivals_100ms"
        };
        both(
            dir,
            stem,
            |r| draw_arrivals(r, &view),
            |r| draw_arrivals(r, &view),
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legend_peak_is_the_peak_of_the_plotted_windows() {
        // 1 s windows; the plot shows 6 s..16 s; the busiest second (120) is the run's first.
        let mut series = vec![10u64; 30];
        series[0] = 120;
        series[10] = 94;
        assert_eq!(
            legend_text("C backoff + full jitter", &series, 1.0, 6.0, 16.0),
            "C backoff + full jitter (peak 94; 120 outside the plot)"
        );
        // The whole run plotted (any client): the legend's peak is the run's.
        assert_eq!(
            legend_text("server", &series, 1.0, 0.0, 30.0),
            "server (peak 120)"
        );
        // A window that only partly overlaps the span is plotted, so it counts.
        assert_eq!(legend_text("A", &series, 1.0, 0.5, 5.0), "A (peak 120)");
    }

    #[test]
    fn titles_say_simulated_and_any_client_names_no_seed() {
        assert_eq!(
            arrivals_title("1 s", Some(42), true, false),
            "SIMULATED: Arrivals at the dependency per 1 s window (seed 42)"
        );
        assert_eq!(
            arrivals_title("1 s", None, false, false),
            "Arrivals at the dependency per 1 s window"
        );
        // A stopped run (issue 28: SIGINT before the freeze): every figure says so.
        assert_eq!(
            arrivals_title("100 ms", Some(42), false, true),
            "INCOMPLETE RUN: Arrivals at the dependency per 100 ms window (seed 42)"
        );
    }
}
