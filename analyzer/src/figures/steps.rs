//! The step workload's calls per step and the endpoint's limit, per strategy.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::canvas::{both_sized, DrawResult, SIZE};
use crate::draw_error::err;
use crate::{AnalyzeError, ScenarioSummary};

/// Colours of the step figure's policies, in the scenario's order.
const STEP_COLOURS: [RGBColor; 6] = [
    RGBColor(110, 110, 110),
    RGBColor(214, 39, 40),
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
];

/// One panel of the step figure: a load level's runs (first seed), the limit and the window.
struct StepPanel {
    load: u32,
    /// (policy, calls per step, steps of the interactive failures).
    runs: Vec<(String, Vec<u32>, Vec<u32>)>,
}

/// Calls in the sliding window (the step and the ones before it, `window` steps in all).
fn window_sums(calls: &[u32], window: usize) -> Vec<u32> {
    (0..calls.len())
        .map(|i| calls[i.saturating_sub(window - 1)..=i].iter().sum())
        .collect()
}

fn draw_steps<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    panels: &[StepPanel],
    limit: u32,
    window: usize,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(err)?;
    let root = root.titled(title, ("sans-serif", 20)).map_err(err)?;
    for (area, panel) in root.split_evenly((panels.len(), 1)).iter().zip(panels) {
        let steps = panel.runs.iter().map(|r| r.1.len()).max().unwrap_or(1) as i32;
        let sums: Vec<Vec<u32>> = panel
            .runs
            .iter()
            .map(|r| window_sums(&r.1, window))
            .collect();
        let top = sums.iter().flatten().copied().max().unwrap_or(0).max(limit) as f64 * 1.15;
        let mut chart = ChartBuilder::on(area)
            .caption(
                format!(
                    "burst of {}/step: calls in the last {window} steps",
                    panel.load
                ),
                ("sans-serif", 16),
            )
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(50)
            .build_cartesian_2d(0..steps, 0f64..top)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("step")
            .y_desc("calls in the window")
            .draw()
            .map_err(err)?;
        chart
            .draw_series(LineSeries::new(
                vec![(0, limit as f64), (steps, limit as f64)],
                BLACK.stroke_width(2),
            ))
            .map_err(err)?
            .label(format!("limit: {limit} calls (rejected calls count)"))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.stroke_width(2)));
        for (i, ((id, _, failed), sum)) in panel.runs.iter().zip(&sums).enumerate() {
            let c = STEP_COLOURS[i % STEP_COLOURS.len()];
            chart
                .draw_series(LineSeries::new(
                    sum.iter().enumerate().map(|(k, v)| (k as i32, *v as f64)),
                    c.stroke_width(2),
                ))
                .map_err(err)?
                .label(format!("{id} ({} interactive failures, x)", failed.len()))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                });
            chart
                .draw_series(failed.iter().map(|&st| {
                    let y = sum.get(st as usize).copied().unwrap_or(0) as f64;
                    Cross::new((st as i32, y), 6, c.stroke_width(2))
                }))
                .map_err(err)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;
    }
    Ok(())
}

/// `calls_per_step.{svg,png}` of a step-workload scenario (the rate-limit article): for each load level, the
/// calls the dependency received in the sliding window at each step (every policy, the first
/// seed) against the rate limit, with a cross where an interactive query failed.
pub fn write_steps(dir: &Path, s: &ScenarioSummary) -> Result<(), AnalyzeError> {
    let Some(&seed) = s.seeds().first() else {
        return Ok(());
    };
    let timeline = s.params.timeline(&s.scenario);
    let Some(limit) = timeline.rate_limited.first() else {
        return Ok(());
    };
    let step = std::time::Duration::from_secs_f64(s.params.steps().step_ms / 1000.0);
    let window = (limit.window.as_nanos().div_ceil(step.as_nanos().max(1)) as usize).max(1);
    let mut panels: Vec<StepPanel> = Vec::new();
    for strategy in s.params.strategies() {
        let Some(load) = strategy.load else { continue };
        let Some(f) = s
            .runs_of(&strategy.id)
            .find(|r| r.seed == seed)
            .and_then(|r| r.steps.as_ref())
        else {
            continue;
        };
        let run = (
            strategy.base_id().to_string(),
            f.calls_per_step.clone(),
            f.interactive_failed_at.clone(),
        );
        match panels.iter_mut().find(|p| p.load == load) {
            Some(p) => p.runs.push(run),
            None => panels.push(StepPanel {
                load,
                runs: vec![run],
            }),
        }
    }
    if panels.is_empty() {
        return Ok(());
    }
    panels.sort_by_key(|p| p.load);
    let title = format!(
        "{}: calls against the limit, seed {seed}{}",
        s.scenario.name(),
        if s.simulated { " (simulated)" } else { "" }
    );
    let size = (SIZE.0, 380 * panels.len() as u32 + 40);
    let calls = limit.calls;
    both_sized(
        dir,
        "calls_per_step",
        size,
        |r| draw_steps(r, &title, &panels, calls, window),
        |r| draw_steps(r, &title, &panels, calls, window),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_sums_add_the_step_and_the_ones_before_it() {
        assert_eq!(window_sums(&[1, 2, 3, 4], 3), [1, 3, 6, 9]);
        assert_eq!(window_sums(&[5, 0, 1], 1), [5, 0, 1]);
    }
}
