//! `lab map`'s phase map: each cell of load and outage length coloured by how the run ended.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::canvas::{both_sized, draw_strip, strip_lines, DrawResult, Swatch, STRIP_LINE};
use crate::draw_error::err;
use crate::AnalyzeError;
use e03_metrics::openloop::{MapCell, PhaseMap};

/// `phase-map.{svg,png}`: one heat map per strategy, offered load (share of capacity) across,
/// freeze length up; a cell is green when every seed recovered (darker: slower), red when every
/// seed stayed metastable, orange when the seeds disagree, with its label (median recovery time,
/// `M`, or seeds recovered). The dashed line is the predicted boundary ([`PhaseMap::boundary_rule`]).
pub fn write_phase_map(dir: &Path, map: &PhaseMap) -> Result<(), AnalyzeError> {
    let n = map.strategies.len().max(1);
    let cols = n.min(3);
    let rows = n.div_ceil(cols);
    let width = cols as u32 * 560;
    let legend = phase_map_legend(map);
    let size = (
        width,
        rows as u32 * 430 + 50 + strip_lines(&legend, width) * STRIP_LINE + 6,
    );
    both_sized(
        dir,
        "phase-map",
        size,
        |r| draw_phase_map(r, map, cols, &legend),
        |r| draw_phase_map(r, map, cols, &legend),
    )
}

/// The phase map's legend: the cell colours, the `M` and number labels, the dashed line.
fn phase_map_legend(map: &PhaseMap) -> Vec<(Swatch, String)> {
    vec![
        (
            Swatch::Box(RGBColor(120, 190, 120)),
            "recovered in every seed (darker: slower)".into(),
        ),
        (
            Swatch::Box(RGBColor(245, 160, 50)),
            "seeds disagree (label 3/5: seeds recovered)".into(),
        ),
        (Swatch::Box(RGBColor(200, 40, 40)), "never recovered".into()),
        (Swatch::Text("M"), "metastable in every seed".into()),
        (Swatch::Text("4 s"), "median recovery time".into()),
        (
            Swatch::Dashed,
            format!("predicted boundary: {}", map.boundary_rule()),
        ),
    ]
}

/// The colour of a cell.
fn cell_colour(c: &MapCell, horizon_s: f64) -> RGBColor {
    let m = c.metastable_share();
    if m >= 1.0 {
        RGBColor(200, 40, 40)
    } else if m > 0.0 {
        RGBColor(245, 160, 50)
    } else {
        // Recovered: light green when at once, darker the longer it took.
        let f = (c.median_recovery_s().unwrap_or(0.0) / horizon_s.max(1.0)).clamp(0.0, 1.0);
        let mix = |a: f64, b: f64| (a + (b - a) * f.sqrt()) as u8;
        RGBColor(mix(200.0, 30.0), mix(235.0, 120.0), mix(200.0, 60.0))
    }
}

/// Where `value` falls on an axis whose cell `k` spans `[k, k + 1)` and is centred on
/// `values[k]`: linear between the centres, clamped to the axis.
fn axis_position(values: &[f64], value: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    if value <= values[0] {
        return 0.0;
    }
    for (k, w) in values.windows(2).enumerate() {
        if value <= w[1] {
            return k as f64 + 0.5 + (value - w[0]) / (w[1] - w[0]);
        }
    }
    values.len() as f64
}

fn draw_phase_map<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    map: &PhaseMap,
    cols: usize,
    legend: &[(Swatch, String)],
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(err)?;
    let (w, h) = root.dim_in_pixel();
    let strip = strip_lines(legend, w) * STRIP_LINE + 6;
    let (root, bottom) = root.split_vertically(h.saturating_sub(strip));
    draw_strip(&bottom, legend)?;
    let root = root
        .titled(
            &format!(
                "SIMULATED: phase map of {} ({} seeds, capacity {:.0}/s, horizon {:.0} s)",
                map.scenario,
                map.seeds.len(),
                map.capacity_per_s,
                map.horizon_s
            ),
            ("sans-serif", 22),
        )
        .map_err(err)?;
    let n = map.strategies.len().max(1);
    let panels = root.split_evenly((n.div_ceil(cols), cols));
    let (nl, nt) = (map.loads.len(), map.triggers_s.len());
    let boundary = axis_position(&map.loads, map.predicted_boundary());
    for ((id, label), area) in map.strategies.iter().zip(panels.iter()) {
        let mut chart = ChartBuilder::on(area)
            .caption(label, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(42)
            .y_label_area_size(56)
            // Cell k spans [k - 0.5, k + 0.5]: the ticks fall on whole numbers, the centres.
            .build_cartesian_2d(-0.5f64..nl as f64 - 0.5, -0.5f64..nt as f64 - 0.5)
            .map_err(err)?;
        let loads = map.loads.clone();
        let triggers = map.triggers_s.clone();
        chart
            .configure_mesh()
            .disable_mesh()
            .x_labels(nl + 1)
            .y_labels(nt + 1)
            .x_desc(map.axis_names().0)
            .y_desc(map.axis_names().1)
            .x_label_formatter(&move |v| {
                let k = v.round();
                if (v - k).abs() < 0.01 && k >= 0.0 && (k as usize) < loads.len() {
                    format!("{:.0}%", loads[k as usize] * 100.0)
                } else {
                    String::new()
                }
            })
            .y_label_formatter(&move |v| {
                let k = v.round();
                if (v - k).abs() < 0.01 && k >= 0.0 && (k as usize) < triggers.len() {
                    format!("{}", triggers[k as usize])
                } else {
                    String::new()
                }
            })
            .label_style(("sans-serif", 13))
            .axis_desc_style(("sans-serif", 14))
            .draw()
            .map_err(err)?;
        for i in 0..nl {
            for j in 0..nt {
                let Some(c) = map.cell(id, i, j) else {
                    continue;
                };
                let (x, y) = (i as f64 - 0.5, j as f64 - 0.5);
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(x, y), (x + 1.0, y + 1.0)],
                        cell_colour(c, map.horizon_s).filled(),
                    )))
                    .map_err(err)?;
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(x, y), (x + 1.0, y + 1.0)],
                        WHITE.stroke_width(1),
                    )))
                    .map_err(err)?;
                let style = ("sans-serif", 12)
                    .into_font()
                    .color(&BLACK)
                    .pos(Pos::new(HPos::Center, VPos::Center));
                chart
                    .draw_series(std::iter::once(Text::new(
                        c.label(),
                        (x + 0.5, y + 0.5),
                        style,
                    )))
                    .map_err(err)?;
            }
        }
        chart
            .draw_series(DashedLineSeries::new(
                vec![(boundary - 0.5, -0.5), (boundary - 0.5, nt as f64 - 0.5)],
                6,
                4,
                BLACK.stroke_width(2),
            ))
            .map_err(err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_predicted_boundary_sits_between_the_cell_centres_it_falls_between() {
        let loads = [0.1, 0.2, 0.3, 0.5];
        assert_eq!(axis_position(&loads, 0.05), 0.0);
        assert!((axis_position(&loads, 0.25) - 2.0).abs() < 1e-9);
        assert!((axis_position(&loads, 0.4) - 3.0).abs() < 1e-9);
        assert_eq!(axis_position(&loads, 0.9), 4.0);
    }
}
