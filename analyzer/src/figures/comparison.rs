//! The comparison of strategies: one panel per figure of the summary, a bar and its spread per
//! strategy.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::canvas::{
    both_sized, colour, draw_strip, strip_lines, DrawResult, Swatch, SIZE, STRIP_LINE,
};
use crate::draw_error::err;
use crate::metrics::RunMetrics;
use crate::tables::Spread;
use crate::{AnalyzeError, ScenarioSummary};

/// The comparison's legend: each strategy's colour and name; the error bars when drawn.
fn comparison_legend(s: &ScenarioSummary) -> Vec<(Swatch, String)> {
    let mut v: Vec<(Swatch, String)> = s
        .strategies()
        .iter()
        .enumerate()
        .map(|(i, id)| (Swatch::Box(colour(id, i)), s.strategy_label(id)))
        .collect();
    if s.seeds().len() > 1 {
        v.push((Swatch::ErrorBar, "min..max over seeds (bar: mean)".into()));
    }
    v
}

/// One panel of the comparison: a bar per strategy (mean over seeds) with its min..max over
/// seeds when there are several.
struct Panel {
    title: &'static str,
    spreads: Vec<Spread>,
    fmt: fn(f64) -> String,
    /// A fixed top of the y axis (success: 100% in every scenario), else from the data.
    ymax: Option<f64>,
}

/// Rows and columns of the comparison's panels: 2 x 2 for E03's four, 3 wide beyond.
fn grid(panels: usize) -> (usize, usize) {
    let cols = if panels <= 4 { 2 } else { 3 };
    (panels.div_ceil(cols).max(2), cols)
}

fn draw_comparison<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    ids: &[String],
    panels: &[Panel],
    title: &str,
    legend: &[(Swatch, String)],
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(err)?;
    let root = root.titled(title, ("sans-serif", 24)).map_err(err)?;
    let (w, h) = root.dim_in_pixel();
    let strip = strip_lines(legend, w) * STRIP_LINE + 6;
    let (root, bottom) = root.split_vertically(h.saturating_sub(strip));
    draw_strip(&bottom, legend)?;
    // A segmented range `0..m` has m + 1 segments: one per strategy with m = n - 1.
    // One strategy alone gets a second, empty segment: a range of one segment gives its bar a
    // negative width (an SVG error in the browser's console).
    let last = (ids.len() as u32).saturating_sub(1).max(1);
    for (area, panel) in root.split_evenly(grid(panels.len())).iter().zip(panels) {
        let top = panel.spreads.iter().map(|s| s.max).fold(0.0, f64::max);
        let ymax = panel.ymax.unwrap_or(top.max(1e-9) * 1.2);
        let mut chart = ChartBuilder::on(area)
            .caption(panel.title, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(60)
            .build_cartesian_2d((0u32..last).into_segmented(), 0f64..ymax)
            .map_err(err)?;
        let fmt = panel.fmt;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(RGBColor(240, 240, 240))
            .x_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => {
                    ids.get(*i as usize).cloned().unwrap_or_default()
                }
                SegmentValue::Last => String::new(),
            })
            .y_label_formatter(&|v| fmt(*v))
            .label_style(("sans-serif", 14))
            .draw()
            .map_err(err)?;
        chart
            .draw_series(panel.spreads.iter().enumerate().map(|(i, sp)| {
                let (i, v) = (i as u32, sp.mean);
                let mut bar = Rectangle::new(
                    [
                        (SegmentValue::Exact(i), 0.0),
                        (SegmentValue::Exact(i + 1), v),
                    ],
                    colour(&ids[i as usize], i as usize).filled(),
                );
                bar.set_margin(0, 0, 12, 12);
                bar
            }))
            .map_err(err)?;
        chart
            .draw_series(
                panel
                    .spreads
                    .iter()
                    .enumerate()
                    .filter(|(_, sp)| sp.n > 1 && sp.max > sp.min)
                    .map(|(i, sp)| {
                        ErrorBar::new_vertical(
                            SegmentValue::CenterOf(i as u32),
                            sp.min,
                            sp.mean,
                            sp.max,
                            BLACK.stroke_width(2),
                            10,
                        )
                    }),
            )
            .map_err(err)?;
        chart
            .draw_series(panel.spreads.iter().enumerate().map(|(i, sp)| {
                let v = sp.mean;
                let above = if sp.n > 1 { sp.max } else { v };
                Text::new(
                    fmt(v),
                    (SegmentValue::CenterOf(i as u32), above + ymax * 0.02),
                    ("sans-serif", 14)
                        .into_font()
                        .color(&BLACK)
                        .pos(Pos::new(HPos::Center, VPos::Bottom)),
                )
            }))
            .map_err(err)?;
    }
    Ok(())
}

/// The comparison figure's title: scenario, seeds (with "bars: min..max" when several),
/// SIMULATED for the simulator's figures.
fn comparison_title(s: &ScenarioSummary) -> String {
    let seeds = s.seeds().len();
    let t = format!(
        "{}: strategies compared ({})",
        s.scenario.title(),
        if seeds > 1 {
            format!("mean of {seeds} seeds, bars min..max")
        } else {
            "one seed".into()
        },
    );
    let t = if s.simulated {
        format!("SIMULATED: {t}")
    } else {
        t
    };
    if s.complete {
        t
    } else {
        format!("INCOMPLETE RUN: {t}")
    }
}

/// `comparison.{svg,png}`: success, total requests, peak 100 ms and p99 per strategy; with a
/// budget that denied retries or a policy that failed attempts fast (the budget shoot-out), also
/// retries denied, attempts failed fast and the recovery time.
pub fn write_comparison(dir: &Path, s: &ScenarioSummary) -> Result<(), AnalyzeError> {
    let ids = s.strategies();
    let spread = |f: fn(&RunMetrics) -> f64| -> Vec<Spread> {
        ids.iter()
            .map(|id| Spread::of(&s.runs_of(id).map(f).collect::<Vec<_>>()))
            .collect()
    };
    let mut panels = vec![
        Panel {
            title: match s.params.timeline(&s.scenario).incident() {
                None => "success of all operations",
                Some(_) => "success of affected operations",
            },
            spreads: spread(|r| r.success_affected),
            fmt: |v| format!("{:.1}%", v * 100.0),
            ymax: Some(1.15),
        },
        Panel {
            title: "total requests (server)",
            spreads: spread(|r| r.total_requests as f64),
            fmt: |v| format!("{:.0}", v.round()),
            ymax: None,
        },
        Panel {
            title: "peak arrivals per 100 ms",
            spreads: spread(|r| r.peak_100ms as f64),
            fmt: |v| format!("{:.0}", v.round()),
            ymax: None,
        },
        Panel {
            title: "p99 latency (ms)",
            spreads: spread(|r| r.p99_ms),
            fmt: |v| format!("{:.0}", v.round()),
            ymax: None,
        },
    ];
    // The budget shoot-out's other columns, where they say something.
    if s.runs.iter().any(|r| r.retries_denied > 0) {
        panels.push(Panel {
            title: "retries denied by the budget",
            spreads: spread(|r| r.retries_denied as f64),
            fmt: |v| format!("{:.0}", v.round()),
            ymax: None,
        });
    }
    if s.runs.iter().any(|r| r.failed_fast > 0) {
        panels.push(Panel {
            title: "attempts failed fast (breaker, throttle)",
            spreads: spread(|r| r.failed_fast as f64),
            fmt: |v| format!("{:.0}", v.round()),
            ymax: None,
        });
    }
    if s.runs.iter().all(|r| r.recovery_s.is_some()) && panels.len() > 4 {
        panels.push(Panel {
            title: "recovery after the outage (s)",
            spreads: spread(|r| r.recovery_s.unwrap_or(0) as f64),
            fmt: |v| format!("{v:.1}"),
            ymax: None,
        });
    }
    // The retry-logic article's figures (idempotency, classification), where the runs have them.
    if s.runs.iter().any(|r| {
        r.ledger
            .as_ref()
            .is_some_and(|l| l.charges > 0 || l.lost_responses > 0)
    }) {
        panels.push(Panel {
            title: "duplicate charges (ledger)",
            spreads: spread(|r| {
                r.ledger
                    .as_ref()
                    .map_or(0.0, |l| l.duplicate_charges as f64)
            }),
            fmt: |v| format!("{:.0}", v.round()),
            ymax: None,
        });
        panels.push(Panel {
            title: "retried lost answers (logs)",
            spreads: spread(|r| r.ledger.as_ref().map_or(0.0, |l| l.retried_lost as f64)),
            fmt: |v| format!("{:.0}", v.round()),
            ymax: None,
        });
    }
    if s.runs
        .iter()
        .any(|r| r.ledger.as_ref().is_some_and(|l| l.permanent_ops > 0))
    {
        panels.push(Panel {
            title: "retries after a permanent error",
            spreads: spread(|r| {
                r.ledger
                    .as_ref()
                    .map_or(0.0, |l| l.retries_after_permanent as f64)
            }),
            fmt: |v| format!("{:.0}", v.round()),
            ymax: None,
        });
        panels.push(Panel {
            title: "permanent failures' mean latency (ms)",
            spreads: spread(|r| r.ledger.as_ref().map_or(0.0, |l| l.permanent_op_mean_ms)),
            fmt: |v| format!("{v:.0}"),
            ymax: None,
        });
    }
    let title = comparison_title(s);
    // About 70 px per bar, so ids like aws-standard stay readable in the budget shoot-out.
    let (rows, cols) = grid(panels.len());
    let width = SIZE.0.max(cols as u32 * (ids.len() as u32 * 70 + 90));
    let legend = comparison_legend(s);
    let height = SIZE.1 / 2 * rows as u32 + strip_lines(&legend, width) * STRIP_LINE + 6;
    both_sized(
        dir,
        "comparison",
        (width, height),
        |r| draw_comparison(r, &ids, &panels, &title, &legend),
        |r| draw_comparison(r, &ids, &panels, &title, &legend),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_comparison_grid_grows_a_column_beyond_e03s_four_panels() {
        assert_eq!(grid(4), (2, 2));
        // The budget shoot-out: success, total, peak, p99, denied, failed fast, recovery.
        assert_eq!(grid(7), (3, 3));
        assert_eq!(grid(5), (2, 3));
    }

    #[test]
    fn a_stopped_runs_comparison_title_says_incomplete() {
        let params = e03_plan::Params::default();
        let mut s = ScenarioSummary {
            scenario: e03_plan::Scenario::e03b(),
            params,
            simulated: false,
            complete: true,
            runs: Vec::new(),
            model: None,
            machine: None,
        };
        assert!(!comparison_title(&s).contains("INCOMPLETE"));
        s.complete = false;
        assert!(comparison_title(&s).starts_with("INCOMPLETE RUN: E03-B"));
    }
}
