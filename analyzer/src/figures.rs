//! Figures: arrivals per 100 ms and per 1 s around the outage, and a comparison of strategies.
//!
//! Each figure is drawn once by a function generic over the plotters backend and rendered twice:
//! SVG (text stays text) and PNG (bitmap). The PNG needs glyphs: DejaVu Sans is embedded in the
//! binary and registered once as "sans-serif" with plotters' `ab_glyph` font support, so no
//! system font library is needed.

use std::path::Path;
use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{register_font, FontStyle};

use crate::metrics::RunMetrics;
use crate::tables::Spread;
use crate::{AnalyzeError, ScenarioSummary};

const FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");
const SIZE: (u32, u32) = (1000, 560);
static REGISTER: Once = Once::new();

fn register() {
    REGISTER.call_once(|| {
        register_font("sans-serif", FontStyle::Normal, FONT)
            .unwrap_or_else(|_| panic!("the embedded DejaVu Sans font is valid"));
    });
}

/// The colour of a strategy: A red, B blue, C green, D purple, others from a palette.
fn colour(id: &str, i: usize) -> RGBColor {
    match id {
        "A" => RGBColor(214, 39, 40),
        "B" => RGBColor(31, 119, 180),
        "C" => RGBColor(44, 160, 44),
        "D" => RGBColor(148, 103, 189),
        _ => [
            RGBColor(255, 127, 14),
            RGBColor(140, 86, 75),
            RGBColor(23, 190, 207),
        ][i % 3],
    }
}

type DrawResult = Result<(), String>;

fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("{e:?}")
}

/// Draws into an SVG and a PNG named `<stem>.svg` / `<stem>.png` in `dir`.
fn both(
    dir: &Path,
    stem: &str,
    draw_svg: impl Fn(&DrawingArea<SVGBackend, Shift>) -> DrawResult,
    draw_png: impl Fn(&DrawingArea<BitMapBackend, Shift>) -> DrawResult,
) -> Result<(), AnalyzeError> {
    register();
    let svg = dir.join(format!("{stem}.svg"));
    let png = dir.join(format!("{stem}.png"));
    let fail = |path: &Path, message: String| AnalyzeError::Output {
        path: path.into(),
        message,
    };
    {
        let root = SVGBackend::new(&svg, SIZE).into_drawing_area();
        draw_svg(&root)
            .and_then(|_| root.present().map_err(err))
            .map_err(|m| fail(&svg, m))?;
    }
    let root = BitMapBackend::new(&png, SIZE).into_drawing_area();
    draw_png(&root)
        .and_then(|_| root.present().map_err(err))
        .map_err(|m| fail(&png, m))
}

/// What an arrivals figure shows.
struct ArrivalsView<'a> {
    runs: Vec<&'a RunMetrics>,
    one_second: bool,
    /// Seconds shown.
    from_s: f64,
    to_s: f64,
    /// Freeze and degraded windows, seconds.
    freeze: Option<(f64, f64)>,
    degraded: Option<(f64, f64)>,
    seed: u64,
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
    let in_view = |k: usize| {
        let t = k as f64 * width_s;
        t + width_s > v.from_s && t < v.to_s
    };
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
            format!(
                "Arrivals at the dependency per {label} window (seed {})",
                v.seed
            ),
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
    let shade = |span: Option<(f64, f64)>, c: RGBAColor, name: &'static str| (span, c, name);
    for (span, c, name) in [
        shade(v.freeze, RGBColor(220, 50, 50).mix(0.16), "freeze"),
        shade(
            v.degraded,
            RGBColor(240, 160, 40).mix(0.14),
            "degraded (half capacity)",
        ),
    ] {
        if let Some((a, b)) = span {
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(a, 0.0), (b, ymax)],
                    c.filled(),
                )))
                .map_err(err)?
                .label(name)
                .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 18, y + 6)], c.filled()));
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
            .label(format!(
                "{} (peak {})",
                r.strategy,
                if v.one_second {
                    r.peak_1s
                } else {
                    r.peak_100ms
                }
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
    let Some(&seed) = s.seeds().first() else {
        return Ok(());
    };
    let runs: Vec<&RunMetrics> = s.runs.iter().filter(|r| r.seed == seed).collect();
    let timeline = s.params.timeline(s.scenario);
    let window = |start: std::time::Duration, end: std::time::Duration| {
        (start.as_secs_f64(), end.as_secs_f64())
    };
    let (from_s, to_s, freeze, degraded) = match timeline.incident() {
        Some((start, end)) => (
            (start.as_secs_f64() - 2.5).max(0.0),
            end.as_secs_f64() + 1.0,
            timeline.freeze.map(|f| window(f.start, f.end)),
            timeline.degraded.map(|d| window(d.start, d.end)),
        ),
        None => {
            let last = runs
                .iter()
                .map(|r| r.arrivals_100ms.len())
                .max()
                .unwrap_or(0);
            (0.0, (last as f64 / 10.0).ceil().max(1.0), None, None)
        }
    };
    for one_second in [false, true] {
        let view = ArrivalsView {
            runs: runs.clone(),
            one_second,
            from_s,
            to_s,
            freeze,
            degraded,
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

/// One panel of the comparison: a bar per strategy (mean over seeds).
struct Panel {
    title: &'static str,
    values: Vec<f64>,
    fmt: fn(f64) -> String,
}

fn draw_comparison<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    ids: &[String],
    panels: &[Panel],
    title: &str,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(err)?;
    let root = root.titled(title, ("sans-serif", 24)).map_err(err)?;
    // A segmented range `0..m` has m + 1 segments: one per strategy with m = n - 1.
    let last = (ids.len() as u32).saturating_sub(1);
    for (area, panel) in root.split_evenly((2, 2)).iter().zip(panels) {
        let ymax = panel.values.iter().copied().fold(0.0, f64::max).max(1e-9) * 1.2;
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
            .draw_series(panel.values.iter().enumerate().map(|(i, &v)| {
                let i = i as u32;
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
            .draw_series(panel.values.iter().enumerate().map(|(i, &v)| {
                Text::new(
                    fmt(v),
                    (SegmentValue::CenterOf(i as u32), v + ymax * 0.02),
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

/// `comparison.{svg,png}`: success, total requests, peak 100 ms and p99 per strategy.
pub fn write_comparison(dir: &Path, s: &ScenarioSummary) -> Result<(), AnalyzeError> {
    let ids = s.strategies();
    let mean = |f: fn(&RunMetrics) -> f64| -> Vec<f64> {
        ids.iter()
            .map(|id| Spread::of(&s.runs_of(id).map(f).collect::<Vec<_>>()).mean)
            .collect()
    };
    let panels = [
        Panel {
            title: "success (share of operations)",
            values: mean(|r| r.success_affected),
            fmt: |v| format!("{:.0}%", v * 100.0),
        },
        Panel {
            title: "total requests (server)",
            values: mean(|r| r.total_requests as f64),
            fmt: |v| format!("{v:.0}"),
        },
        Panel {
            title: "peak arrivals per 100 ms",
            values: mean(|r| r.peak_100ms as f64),
            fmt: |v| format!("{v:.0}"),
        },
        Panel {
            title: "p99 latency (ms)",
            values: mean(|r| r.p99_ms),
            fmt: |v| format!("{v:.0}"),
        },
    ];
    let seeds = s.seeds().len();
    let title = format!(
        "{}: strategies compared ({}{})",
        s.scenario.title(),
        if seeds > 1 {
            format!("mean of {seeds} seeds")
        } else {
            "one seed".into()
        },
        if s.simulated { ", simulated" } else { "" }
    );
    both(
        dir,
        "comparison",
        |r| draw_comparison(r, &ids, &panels, &title),
        |r| draw_comparison(r, &ids, &panels, &title),
    )
}
