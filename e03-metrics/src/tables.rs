//! The comparison tables: one row per strategy (spec section 7's layout), the 100 ms series
//! around the outage, the seed-to-seed verdicts, and the fidelity and matching lines.
//!
//! Every table is built once as a [`Table`] and rendered as an aligned markdown pipe table, which
//! reads well in a terminal and renders on GitHub, so `print_tables` and `report.md` show the
//! very same figures.

use std::io::Write;

use e03_core::Scenario;

use crate::metrics::{Fidelity, RunMetrics};
use crate::ScenarioSummary;

/// Headers and rows of cells.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// An aligned markdown pipe table (first column left-aligned, others right-aligned).
    pub fn markdown(&self) -> String {
        let cols = self.headers.len();
        let mut width: Vec<usize> = self
            .headers
            .iter()
            .map(|h| h.chars().count().max(3))
            .collect();
        for row in &self.rows {
            for (i, c) in row.iter().enumerate().take(cols) {
                width[i] = width[i].max(c.chars().count());
            }
        }
        let line = |cells: &[String]| {
            let mut s = String::from("|");
            for (i, w) in width.iter().enumerate() {
                let c = cells.get(i).map(String::as_str).unwrap_or("");
                if i == 0 {
                    s += &format!(" {c:<w$} |");
                } else {
                    s += &format!(" {c:>w$} |");
                }
            }
            s + "\n"
        };
        let mut out = line(&self.headers);
        out += "|";
        for (i, w) in width.iter().enumerate() {
            out += &if i == 0 {
                format!(":{}|", "-".repeat(w + 1))
            } else {
                format!("{}:|", "-".repeat(w + 1))
            };
        }
        out += "\n";
        for row in &self.rows {
            out += &line(row);
        }
        out
    }
}

/// Mean, min and max of one metric across seeds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    pub n: usize,
}

impl Spread {
    pub fn of(values: &[f64]) -> Spread {
        let n = values.len();
        let mean = if n == 0 {
            0.0
        } else {
            values.iter().sum::<f64>() / n as f64
        };
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Spread {
            mean,
            min: if n == 0 { 0.0 } else { min },
            max: if n == 0 { 0.0 } else { max },
            n,
        }
    }

    /// max - min across seeds.
    pub fn width(&self) -> f64 {
        self.max - self.min
    }
}

/// Whether a difference between two strategies stands out of the seed-to-seed noise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// |mean difference| is larger than both strategies' spreads.
    Measured,
    WithinNoise,
}

impl Verdict {
    pub fn of(a: &Spread, b: &Spread) -> Verdict {
        let diff = (a.mean - b.mean).abs();
        if diff > a.width() && diff > b.width() {
            Verdict::Measured
        } else {
            Verdict::WithinNoise
        }
    }

    pub fn text(self) -> &'static str {
        match self {
            Verdict::Measured => "measured",
            Verdict::WithinNoise => "within run-to-run noise",
        }
    }
}

/// A metric of the tables: name and how to read it from a run.
type Metric = (&'static str, fn(&RunMetrics) -> f64);

const SUCCESS: Metric = ("success_affected", |r| r.success_affected);
const TOTAL: Metric = ("total", |r| r.total_requests as f64);
const PEAK_100MS: Metric = ("peak_100ms", |r| r.peak_100ms as f64);

fn spread_of(s: &ScenarioSummary, strategy: &str, metric: fn(&RunMetrics) -> f64) -> Spread {
    Spread::of(&s.runs_of(strategy).map(metric).collect::<Vec<_>>())
}

fn number(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// One cell: the value for a single seed, else mean (min..max).
fn cell(sp: &Spread, fmt: fn(f64) -> String) -> String {
    if sp.n <= 1 {
        fmt(sp.mean)
    } else {
        format!("{} ({}..{})", fmt(sp.mean), fmt(sp.min), fmt(sp.max))
    }
}

fn pct(v: f64) -> String {
    format!("{:.1}%", v * 100.0)
}

fn ms(v: f64) -> String {
    format!("{v:.0} ms")
}

/// Seeds as a short list, consecutive runs folded: `42,7,1-3`.
pub fn seed_ranges(seeds: &[u64]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < seeds.len() {
        let mut j = i;
        while j + 1 < seeds.len() && seeds[j + 1] == seeds[j] + 1 {
            j += 1;
        }
        parts.push(if j - i >= 2 {
            format!("{}-{}", seeds[i], seeds[j])
        } else {
            seeds[i..=j]
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(",")
        });
        i = j + 1;
    }
    parts.join(",")
}

/// The lines above the tables: scenario, seeds, live or simulated, completeness.
pub fn header_lines(s: &ScenarioSummary) -> Vec<String> {
    let mut lines = vec![format!(
        "{} ({}): seeds {}, {}",
        s.scenario.title(),
        s.scenario.name(),
        seed_ranges(&s.seeds()),
        if s.simulated {
            "SIMULATED (discrete-event model, no HTTP)"
        } else {
            "live HTTP run"
        }
    )];
    if !s.complete {
        lines.push("INCOMPLETE RUN: at least one run was stopped early or its logs are cut; figures cover what was logged".into());
    }
    lines
}

/// One row per strategy, spec section 7's columns.
pub fn main_table(s: &ScenarioSummary) -> Table {
    let success = match s.scenario {
        Scenario::E03A => "success (all ops)",
        Scenario::E03B => "success (affected)",
    };
    let headers = [
        "strategy",
        success,
        "total",
        "retries",
        "denied",
        "peak 1 s",
        "peak 100 ms",
        "p95",
        "p99",
        "recovery",
    ];
    let rows = s
        .strategies()
        .iter()
        .map(|id| {
            let runs: Vec<&RunMetrics> = s.runs_of(id).collect();
            let sp = |f: fn(&RunMetrics) -> f64| spread_of(s, id, f);
            let mut name = id.clone();
            if runs.iter().any(|r| !r.complete) {
                name += " (incomplete)";
            }
            let recovery = if runs.iter().all(|r| r.recovery_s.is_some()) {
                cell(&sp(|r| r.recovery_s.unwrap_or(0) as f64), |v| {
                    format!("{} s", number(v))
                })
            } else {
                "-".into()
            };
            vec![
                name,
                cell(&sp(SUCCESS.1), pct),
                cell(&sp(TOTAL.1), number),
                cell(&sp(|r| r.retries_sent as f64), number),
                cell(&sp(|r| r.retries_denied as f64), number),
                cell(&sp(|r| r.peak_1s as f64), number),
                cell(&sp(PEAK_100MS.1), number),
                cell(&sp(|r| r.p95_ms), ms),
                cell(&sp(|r| r.p99_ms), ms),
                recovery,
            ]
        })
        .collect();
    Table {
        headers: headers.map(String::from).to_vec(),
        rows,
    }
}

/// 100 ms windows shown around the outage: from half a second before the freeze to three
/// seconds after its end (8.0 s to 13.0 s by default).
pub fn series_windows(s: &ScenarioSummary) -> std::ops::Range<usize> {
    let p = &s.params.service;
    let from = ((p.freeze_start_s - 0.5).max(0.0) * 10.0).floor() as usize;
    let to = ((p.freeze_end_s + 3.0) * 10.0).ceil() as usize;
    from..to.max(from)
}

/// E03-B: arrivals per 100 ms window around the outage, first seed, with the retry share.
pub fn series_table(s: &ScenarioSummary) -> Option<Table> {
    if s.scenario != Scenario::E03B {
        return None;
    }
    let seed = *s.seeds().first()?;
    let runs: Vec<&RunMetrics> = s
        .strategies()
        .iter()
        .filter_map(|id| s.runs_of(id).find(|r| r.seed == seed))
        .collect();
    let mut headers = vec![format!("window (seed {seed})")];
    headers.extend(
        runs.iter()
            .map(|r| format!("{} arrivals (retries)", r.strategy)),
    );
    let rows = series_windows(s)
        .map(|k| {
            let mut row = vec![format!("{:.1} s", k as f64 / 10.0)];
            for r in &runs {
                let n = r.arrivals_100ms.get(k).copied().unwrap_or(0);
                let retries = r.retries_100ms.get(k).copied().unwrap_or(0);
                row.push(if n == 0 {
                    "0".into()
                } else {
                    format!("{n} ({:.0}%)", 100.0 * retries as f64 / n as f64)
                });
            }
            row
        })
        .collect();
    Some(Table { headers, rows })
}

/// With two seeds or more: B vs C (total, peak 100 ms) and C vs D (success, total, peak 100 ms).
pub fn verdict_table(s: &ScenarioSummary) -> Option<Table> {
    if s.seeds().len() < 2 {
        return None;
    }
    let pairs: [(&str, &str, &[Metric]); 2] = [
        ("B", "C", &[TOTAL, PEAK_100MS]),
        ("C", "D", &[SUCCESS, TOTAL, PEAK_100MS]),
    ];
    let strategies = s.strategies();
    let mut rows = Vec::new();
    for (a, b, metrics) in pairs {
        if !strategies.iter().any(|x| x == a) || !strategies.iter().any(|x| x == b) {
            continue;
        }
        for (name, f) in metrics {
            let (sa, sb) = (spread_of(s, a, *f), spread_of(s, b, *f));
            rows.push(vec![
                format!("{a} vs {b}"),
                name.to_string(),
                format!("{:+.3}", sb.mean - sa.mean),
                format!("{:.3} / {:.3}", sa.width(), sb.width()),
                Verdict::of(&sa, &sb).text().to_string(),
            ]);
        }
    }
    (!rows.is_empty()).then(|| Table {
        headers: [
            "pair",
            "metric",
            "mean difference (2nd - 1st)",
            "spreads (max - min)",
            "verdict",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    })
}

/// Live only: per run, send lateness, queueing outside the model, throughput while saturated,
/// with a WARNING line when a threshold is crossed.
pub fn fidelity_lines(s: &ScenarioSummary) -> Vec<String> {
    let mut lines = Vec::new();
    for r in &s.runs {
        let Some(f) = &r.fidelity else { continue };
        let throughput = throughput_text(f);
        lines.push(format!(
            "fidelity {} seed {}: send lateness p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; queueing outside the model p99 {:.2} ms, max {:.2} ms ({} samples); answers after their scheduled instant p99 {:.2} ms, max {:.2} ms; throughput while saturated: {throughput}",
            r.strategy, r.seed, f.lateness_p50_ms, f.lateness_p99_ms, f.lateness_max_ms,
            f.queueing_p99_ms, f.queueing_max_ms, f.queueing_samples,
            f.answer_lateness_p99_ms, f.answer_lateness_max_ms
        ));
        for w in f.warnings() {
            lines.push(format!("WARNING {} seed {}: {w}", r.strategy, r.seed));
        }
    }
    lines
}

/// Achieved vs configured capacity, normal and degraded, and their combined ratio.
fn throughput_text(f: &Fidelity) -> String {
    let phase = |name: &str, secs: f64, achieved: Option<f64>, configured: f64| match achieved {
        Some(a) => format!(
            "{name} achieved {a:.1} req/s vs configured {configured:.1} req/s over {secs:.1} s"
        ),
        None => format!(
            "{name} not measured ({secs:.2} s of saturation; configured {configured:.1} req/s)"
        ),
    };
    let mut parts = vec![phase(
        "normal",
        f.saturated_s,
        f.achieved_rps,
        f.configured_rps,
    )];
    if let Some(c) = f.degraded_configured_rps {
        parts.push(phase(
            "degraded",
            f.degraded_saturated_s,
            f.degraded_achieved_rps,
            c,
        ));
    }
    parts.push(match f.ratio {
        Some(q) => format!("ratio {q:.3}"),
        None => "ratio not measured".to_string(),
    });
    parts.join(", ")
}

/// Live only: per run, client attempts vs server arrivals by identity.
pub fn matched_lines(s: &ScenarioSummary) -> Vec<String> {
    let mut lines = Vec::new();
    for r in &s.runs {
        let Some(m) = &r.matched else { continue };
        lines.push(format!(
            "matched {} seed {}: client attempts {}, server arrivals {}, matched {}, unmatched client {}, unmatched server {}{}",
            r.strategy, r.seed, m.client_attempts, m.server_arrivals, m.matched, m.unmatched_client, m.unmatched_server,
            if m.ok() { "" } else if r.complete { "  <-- MISMATCH: client and server logs disagree" } else { "  (run incomplete)" }
        ));
    }
    lines
}

/// Runs whose client and server logs disagree although the run completed.
pub fn mismatched_complete_runs(s: &ScenarioSummary) -> Vec<&RunMetrics> {
    s.runs
        .iter()
        .filter(|r| r.complete && r.matched.as_ref().is_some_and(|m| !m.ok()))
        .collect()
}

/// Prints the header, the comparison table, the series (E03-B), verdicts, fidelity and matching.
pub fn print_tables<W: Write>(w: &mut W, s: &ScenarioSummary) -> std::io::Result<()> {
    for line in header_lines(s) {
        writeln!(w, "{line}")?;
    }
    writeln!(w)?;
    write!(w, "{}", main_table(s).markdown())?;
    if let Some(t) = series_table(s) {
        writeln!(
            w,
            "\nArrivals per 100 ms window at the dependency (share of retries in brackets):"
        )?;
        write!(w, "{}", t.markdown())?;
    }
    if let Some(t) = verdict_table(s) {
        writeln!(
            w,
            "\nSeed-to-seed verdicts (measured = |mean difference| larger than both spreads):"
        )?;
        write!(w, "{}", t.markdown())?;
    }
    let extra: Vec<String> = fidelity_lines(s)
        .into_iter()
        .chain(matched_lines(s))
        .collect();
    if !extra.is_empty() {
        writeln!(w)?;
        for line in extra {
            writeln!(w, "{line}")?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {

    #[test]
    fn seed_lists_fold_consecutive_runs() {
        assert_eq!(seed_ranges(&[42, 7, 1, 2, 3]), "42,7,1-3");
        assert_eq!(seed_ranges(&[1, 2]), "1,2");
        assert_eq!(seed_ranges(&(1..=100).collect::<Vec<_>>()), "1-100");
        assert_eq!(seed_ranges(&[]), "");
    }
    use super::*;

    #[test]
    fn verdict_needs_a_difference_larger_than_both_spreads() {
        let b = Spread::of(&[100.0, 110.0]); // mean 105, spread 10
        let c = Spread::of(&[80.0, 84.0]); // mean 82, spread 4
        assert_eq!(Verdict::of(&b, &c), Verdict::Measured);
        let wide = Spread::of(&[60.0, 100.0]); // mean 80, spread 40 > 25
        assert_eq!(Verdict::of(&b, &wide), Verdict::WithinNoise);
        // Larger than one spread only is still noise.
        let d = Spread::of(&[96.0, 96.0]); // diff 9 < b's 10, > d's 0
        assert_eq!(Verdict::of(&b, &d), Verdict::WithinNoise);
        assert_eq!(Verdict::WithinNoise.text(), "within run-to-run noise");
    }

    #[test]
    fn markdown_tables_are_aligned_pipes() {
        let t = Table {
            headers: vec!["s".into(), "total".into()],
            rows: vec![vec!["A".into(), "3040".into()]],
        };
        assert_eq!(
            t.markdown(),
            "| s   | total |\n|:----|------:|\n| A   |  3040 |\n"
        );
    }

    #[test]
    fn throughput_text_shows_both_capacities_and_the_ratio() {
        let mut f = Fidelity {
            lateness_p50_ms: 0.0,
            lateness_p99_ms: 0.0,
            lateness_max_ms: 0.0,
            queueing_samples: 0,
            queueing_p99_ms: 0.0,
            queueing_max_ms: 0.0,
            answer_lateness_p99_ms: 0.0,
            answer_lateness_max_ms: 0.0,
            saturated_s: 0.1,
            achieved_rps: None,
            configured_rps: 250.0,
            degraded_saturated_s: 1.5,
            degraded_achieved_rps: Some(124.0),
            degraded_configured_rps: Some(125.0),
            ratio: Some(0.99),
        };
        assert_eq!(
            throughput_text(&f),
            "normal not measured (0.10 s of saturation; configured 250.0 req/s), degraded \
             achieved 124.0 req/s vs configured 125.0 req/s over 1.5 s, ratio 0.990"
        );
        f.degraded_configured_rps = None;
        f.ratio = None;
        assert_eq!(
            throughput_text(&f),
            "normal not measured (0.10 s of saturation; configured 250.0 req/s), ratio not \
             measured"
        );
    }
}
