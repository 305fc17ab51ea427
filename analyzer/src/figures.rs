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

use crate::draw_error::err;
use crate::metrics::RunMetrics;
use crate::shades::{phase_shades, PhaseShade};
use crate::tables::Spread;
use crate::{AnalyzeError, ScenarioSummary};
use e03_metrics::openloop::{MapCell, PhaseMap};

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
        // Ten (matplotlib's tab10, the four above last), so that a chain's four variants
        // (`deadline`), `shedding`'s seven rows or a user's strategies get colours of their own.
        _ => [
            RGBColor(255, 127, 14),
            RGBColor(140, 86, 75),
            RGBColor(23, 190, 207),
            RGBColor(227, 119, 194),
            RGBColor(188, 189, 34),
            RGBColor(127, 127, 127),
            RGBColor(31, 119, 180),
            RGBColor(44, 160, 44),
            RGBColor(148, 103, 189),
            RGBColor(214, 39, 40),
        ][i % 10],
    }
}

type DrawResult = Result<(), String>;

/// Draws into an SVG and a PNG named `<stem>.svg` / `<stem>.png` in `dir`.
fn both(
    dir: &Path,
    stem: &str,
    draw_svg: impl Fn(&DrawingArea<SVGBackend, Shift>) -> DrawResult,
    draw_png: impl Fn(&DrawingArea<BitMapBackend, Shift>) -> DrawResult,
) -> Result<(), AnalyzeError> {
    both_sized(dir, stem, SIZE, draw_svg, draw_png)
}

/// [`both`] on a canvas of `size` pixels.
fn both_sized(
    dir: &Path,
    stem: &str,
    size: (u32, u32),
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
        let root = SVGBackend::new(&svg, size).into_drawing_area();
        draw_svg(&root)
            .and_then(|_| root.present().map_err(err))
            .map_err(|m| fail(&svg, m))?;
    }
    let root = BitMapBackend::new(&png, size).into_drawing_area();
    draw_png(&root)
        .and_then(|_| root.present().map_err(err))
        .map_err(|m| fail(&png, m))
}

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

/// The mark of one entry of a legend strip.
#[derive(Debug, Clone, Copy)]
enum Swatch {
    Box(RGBColor),
    Dashed,
    ErrorBar,
    Text(&'static str),
}

/// Height of one line of a legend strip, pixels.
const STRIP_LINE: u32 = 26;

/// Where each entry of a legend strip `width` pixels wide goes: (line, x) per entry.
fn strip_layout(entries: &[(Swatch, String)], width: u32) -> Vec<(u32, u32)> {
    let (mut line, mut x) = (0u32, 10u32);
    entries
        .iter()
        .map(|(_, label)| {
            let w = 34 + 8 * label.chars().count() as u32 + 18;
            if x + w > width && x > 10 {
                line += 1;
                x = 10;
            }
            let at = (line, x);
            x += w;
            at
        })
        .collect()
}

/// Lines a legend strip needs.
fn strip_lines(entries: &[(Swatch, String)], width: u32) -> u32 {
    strip_layout(entries, width)
        .last()
        .map_or(0, |(line, _)| line + 1)
}

/// Draws a legend strip (a mark and a label per entry, wrapped into lines) filling `area`.
fn draw_strip<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[(Swatch, String)],
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let width = area.dim_in_pixel().0;
    let font = ("sans-serif", 15).into_font().color(&BLACK);
    for ((swatch, label), (line, x)) in entries.iter().zip(strip_layout(entries, width)) {
        let (x, y) = (x as i32, (line * STRIP_LINE + STRIP_LINE / 2) as i32);
        match *swatch {
            Swatch::Box(c) => area
                .draw(&Rectangle::new([(x, y - 7), (x + 24, y + 7)], c.filled()))
                .map_err(err)?,
            Swatch::Dashed => {
                for k in 0..3 {
                    area.draw(&PathElement::new(
                        vec![(x + k * 9, y), (x + k * 9 + 5, y)],
                        BLACK.stroke_width(2),
                    ))
                    .map_err(err)?;
                }
            }
            Swatch::ErrorBar => {
                let st = BLACK.stroke_width(2);
                area.draw(&PathElement::new(
                    vec![(x + 12, y - 8), (x + 12, y + 8)],
                    st,
                ))
                .map_err(err)?;
                area.draw(&PathElement::new(vec![(x + 6, y - 8), (x + 18, y - 8)], st))
                    .map_err(err)?;
                area.draw(&PathElement::new(vec![(x + 6, y + 8), (x + 18, y + 8)], st))
                    .map_err(err)?;
            }
            Swatch::Text(t) => area
                .draw(&Text::new(
                    t,
                    (x + 12, y),
                    font.clone().pos(Pos::new(HPos::Center, VPos::Center)),
                ))
                .map_err(err)?,
        }
        area.draw(&Text::new(
            label.clone(),
            (x + 32, y),
            font.clone().pos(Pos::new(HPos::Left, VPos::Center)),
        ))
        .map_err(err)?;
    }
    Ok(())
}

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
    // Seed 004's figures (idempotency, classification), where the runs have them.
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

/// `calls_per_step.{svg,png}` of a step-workload scenario (seed 002): for each load level, the
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
    fn up_to_ten_strategies_beside_a_to_d_get_colours_of_their_own() {
        let ids = [
            "fifo",
            "codel",
            "lifo",
            "deadline",
            "aimd",
            "gradient2",
            "priority",
            "x",
            "y",
            "z",
        ];
        let colours: Vec<(u8, u8, u8)> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| {
                let c = colour(id, i);
                (c.0, c.1, c.2)
            })
            .collect();
        for (i, c) in colours.iter().enumerate() {
            assert!(!colours[..i].contains(c), "{} repeats a colour", ids[i]);
        }
    }

    #[test]
    fn the_predicted_boundary_sits_between_the_cell_centres_it_falls_between() {
        let loads = [0.1, 0.2, 0.3, 0.5];
        assert_eq!(axis_position(&loads, 0.05), 0.0);
        assert!((axis_position(&loads, 0.25) - 2.0).abs() < 1e-9);
        assert!((axis_position(&loads, 0.4) - 3.0).abs() < 1e-9);
        assert_eq!(axis_position(&loads, 0.9), 4.0);
    }

    #[test]
    fn legend_strips_wrap_into_lines_that_fit() {
        let e = |n: usize| (Swatch::Dashed, "x".repeat(n));
        assert_eq!(strip_lines(&[], 1000), 0);
        assert_eq!(strip_lines(&[e(10), e(10)], 1000), 1);
        // 34 + 8 * 60 + 18 = 532 px each: two do not fit in 1000.
        assert_eq!(strip_lines(&[e(60), e(60), e(60)], 1000), 3);
    }

    #[test]
    fn window_sums_add_the_step_and_the_ones_before_it() {
        assert_eq!(window_sums(&[1, 2, 3, 4], 3), [1, 3, 6, 9]);
        assert_eq!(window_sums(&[5, 0, 1], 1), [5, 0, 1]);
    }

    #[test]
    fn the_comparison_grid_grows_a_column_beyond_e03s_four_panels() {
        assert_eq!(grid(4), (2, 2));
        // The budget shoot-out: success, total, peak, p99, denied, failed fast, recovery.
        assert_eq!(grid(7), (3, 3));
        assert_eq!(grid(5), (2, 3));
    }

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

    #[test]
    fn a_stopped_runs_comparison_title_says_incomplete() {
        let params = e03_core::Params::default();
        let mut s = ScenarioSummary {
            scenario: e03_core::Scenario::e03b(),
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
