//! A chain's calls per top request at each layer (log scale), one line per variant.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::canvas::{both, colour, DrawResult};
use crate::draw_error::err;
use crate::AnalyzeError;

/// Calls per top request at each layer of a chain (log scale), one line per variant.
fn draw_calls_per_layer<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    runs: &[e03_metrics::chain::ChainRun],
) -> DrawResult {
    root.fill(&WHITE).map_err(err)?;
    let layers = runs
        .iter()
        .map(|r| r.calls_per_layer.len())
        .max()
        .unwrap_or(1)
        .max(2);
    let per_request =
        |r: &e03_metrics::chain::ChainRun, n: u64| n as f64 / r.requests.max(1) as f64;
    let top = runs
        .iter()
        .flat_map(|r| r.calls_per_layer.iter().map(move |n| per_request(r, *n)))
        .fold(1.0, f64::max);
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0..(layers as i32 - 1), (0.5f64..top * 2.0).log_scale())
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("layer (0 = top caller, last = bottom)")
        .y_desc("calls per top request")
        .x_labels(layers)
        .draw()
        .map_err(err)?;
    for (i, r) in runs.iter().enumerate() {
        let c = colour(&r.variant.id, i);
        // Variants share their top layers: the first ones are drawn wider, underneath.
        let width = 2 + 3 * (runs.len() - 1 - i) as u32;
        let points: Vec<(i32, f64)> = r
            .calls_per_layer
            .iter()
            .enumerate()
            .map(|(l, n)| (l as i32, per_request(r, *n).max(0.5)))
            .collect();
        let bottom = r.bottom_per_request();
        chart
            .draw_series(LineSeries::new(points.clone(), c.stroke_width(width)))
            .map_err(err)?
            .label(format!("{} (bottom {bottom}/request)", r.variant.id))
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(width))
            });
        chart
            .draw_series(points.iter().map(|&p| Circle::new(p, 4, c.filled())))
            .map_err(err)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(err)
}

/// `calls_per_layer.{svg,png}` of a chain scenario.
pub fn write_calls_per_layer(
    dir: &Path,
    title: &str,
    runs: &[e03_metrics::chain::ChainRun],
) -> Result<(), AnalyzeError> {
    both(
        dir,
        "calls_per_layer",
        |r| draw_calls_per_layer(r, title, runs),
        |r| draw_calls_per_layer(r, title, runs),
    )
}
