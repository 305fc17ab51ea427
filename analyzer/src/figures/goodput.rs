//! The open loop's work done against its useful work per second.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::canvas::{both_sized, colour, DrawResult, SIZE};
use crate::draw_error::err;
use crate::{AnalyzeError, ScenarioSummary};

/// One open-loop run for the goodput figure: id, work done and useful work per 1 s window.
type WorkRun = (String, Vec<u64>, Vec<u64>);

fn draw_goodput<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    runs: &[WorkRun],
    capacity: f64,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(err)?;
    let root = root.titled(title, ("sans-serif", 20)).map_err(err)?;
    let width = runs.iter().map(|r| r.1.len()).max().unwrap_or(1).max(1) as f64;
    let top = runs
        .iter()
        .flat_map(|r| r.1.iter())
        .copied()
        .max()
        .unwrap_or(0) as f64;
    let top = top.max(capacity) * 1.15 + 1.0;
    let panels = [
        "work done per second (throughput)",
        "useful work per second (goodput): successes for a client still waiting",
    ];
    for (p, (area, caption)) in root.split_evenly((2, 1)).iter().zip(panels).enumerate() {
        let mut chart = ChartBuilder::on(area)
            .caption(caption, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(50)
            .build_cartesian_2d(0f64..width, 0f64..top)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("time (s)")
            .y_desc("answers per second")
            .draw()
            .map_err(err)?;
        chart
            .draw_series(LineSeries::new(
                vec![(0.0, capacity), (width, capacity)],
                BLACK.stroke_width(1),
            ))
            .map_err(err)?
            .label(format!("capacity: {capacity:.0}/s"))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.stroke_width(1)));
        for (i, (id, worked, useful)) in runs.iter().enumerate() {
            let c = colour(id, i);
            let series = if p == 0 { worked } else { useful };
            chart
                .draw_series(LineSeries::new(
                    series
                        .iter()
                        .enumerate()
                        .map(|(k, v)| (k as f64 + 0.5, *v as f64)),
                    c.stroke_width(2),
                ))
                .map_err(err)?
                .label(id.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;
    }
    Ok(())
}

/// `goodput.{svg,png}` of an open-loop scenario: for each strategy (the first seed), the work
/// the dependency did per second above and the useful part of it below, against its capacity.
/// Throughput without goodput (AWS's "Using load shedding to avoid overload") is the gap.
pub fn write_goodput(dir: &Path, s: &ScenarioSummary) -> Result<(), AnalyzeError> {
    let Some(&seed) = s.seeds().first() else {
        return Ok(());
    };
    let mut capacity: f64 = 0.0;
    let runs: Vec<WorkRun> = s
        .strategies()
        .into_iter()
        .filter_map(|id| {
            let o = s
                .runs_of(&id)
                .find(|r| r.seed == seed)?
                .open_loop
                .as_ref()?;
            capacity = capacity.max(o.capacity_per_s);
            Some((id, o.worked_1s.clone(), o.useful_1s.clone()))
        })
        .collect();
    if runs.is_empty() {
        return Ok(());
    }
    let title = format!(
        "{}: work done and useful work, seed {seed}{}",
        s.scenario.name(),
        if s.simulated { " (simulated)" } else { "" }
    );
    let size = (SIZE.0, 760);
    both_sized(
        dir,
        "goodput",
        size,
        |r| draw_goodput(r, &title, &runs, capacity),
        |r| draw_goodput(r, &title, &runs, capacity),
    )
}
