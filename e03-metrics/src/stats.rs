//! The figures of spec section 6 as a list of named accessors, and their spread over seeds.
//!
//! Sweeps and comparisons print one figure at a time for many runs; listing the figures once
//! (name as in `summary.json`, how to read it from [`RunMetrics`], how to print it) keeps both
//! printers free of per-field code.

use crate::metrics::RunMetrics;

/// How a figure is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A fraction in [0, 1], printed as a percentage.
    Share,
    /// A count.
    Count,
    Ms,
    Seconds,
}

/// One figure of a run.
#[derive(Debug, Clone, Copy)]
pub struct Metric {
    /// Field name in `summary.json`.
    pub name: &'static str,
    pub unit: Unit,
    /// `None` when the run has no such figure (recovery in E03-A).
    pub get: fn(&RunMetrics) -> Option<f64>,
}

/// Every figure, in the order of the spec's table.
pub const METRICS: &[Metric] = &[
    Metric {
        name: "success_affected",
        unit: Unit::Share,
        get: |m| Some(m.success_affected),
    },
    Metric {
        name: "operations",
        unit: Unit::Count,
        get: |m| Some(m.operations as f64),
    },
    Metric {
        name: "total_requests",
        unit: Unit::Count,
        get: |m| Some(m.total_requests as f64),
    },
    Metric {
        name: "retries_sent",
        unit: Unit::Count,
        get: |m| Some(m.retries_sent as f64),
    },
    Metric {
        name: "retries_denied",
        unit: Unit::Count,
        get: |m| Some(m.retries_denied as f64),
    },
    Metric {
        name: "peak_1s",
        unit: Unit::Count,
        get: |m| Some(m.peak_1s as f64),
    },
    Metric {
        name: "peak_100ms",
        unit: Unit::Count,
        get: |m| Some(m.peak_100ms as f64),
    },
    Metric {
        name: "p95_ms",
        unit: Unit::Ms,
        get: |m| Some(m.p95_ms),
    },
    Metric {
        name: "p99_ms",
        unit: Unit::Ms,
        get: |m| Some(m.p99_ms),
    },
    Metric {
        name: "recovery_s",
        unit: Unit::Seconds,
        get: |m| m.recovery_s.map(|s| s as f64),
    },
];

/// Mean, least and greatest of a figure over runs: the analyzer's own type, so simulated and
/// live tables spread their seeds the same way.
pub use crate::table::Spread;

/// The spread of `metric` over the runs that have it; `None` if none has it.
pub fn spread_of<'a>(
    metric: &Metric,
    runs: impl IntoIterator<Item = &'a RunMetrics>,
) -> Option<Spread> {
    let values: Vec<f64> = runs.into_iter().filter_map(|m| (metric.get)(m)).collect();
    (!values.is_empty()).then(|| Spread::of(&values))
}

/// A value in the metric's unit, the one number format of every table: shares as percentages
/// with one decimal (`92.9%`), counts as whole numbers (means of counts rounded, so that `2857`
/// never stands beside `1432.0`), milliseconds whole (`628 ms`), seconds with one decimal only
/// when a mean has one (`0.6 s`, `1 s`). `_is_mean` is kept for callers; the format no longer
/// depends on it.
pub fn format_value(unit: Unit, v: f64, _is_mean: bool) -> String {
    match unit {
        Unit::Share | Unit::Count => bare(unit, v),
        Unit::Ms => format!("{} ms", bare(unit, v)),
        Unit::Seconds => format!("{} s", bare(unit, v)),
    }
}

/// The number alone, without its unit word (`92.9%` keeps its percent sign).
fn bare(unit: Unit, v: f64) -> String {
    match unit {
        Unit::Share => format!("{:.1}%", v * 100.0),
        // Halves away from zero (12.5 -> 13), not to even.
        Unit::Count | Unit::Ms => format!("{:.0}", v.round()),
        Unit::Seconds if v.fract() != 0.0 => format!("{v:.1}"),
        Unit::Seconds => format!("{v:.0}"),
    }
}

/// The one spread format of the lab: `mean (min..max)` over seeds, the unit written once after
/// the mean (`91.0% (88.8..93.1)`, `3097 (3047..3137)`, `612 ms (359..799)`), or the value
/// alone for a single run or when every run agrees.
pub fn format_spread(unit: Unit, s: &Spread) -> String {
    if s.n <= 1 || s.min == s.max {
        return format_value(unit, s.mean, false);
    }
    let bound = |v: f64| bare(unit, v).trim_end_matches('%').to_string();
    if bound(s.min) == bound(s.max) {
        // Equal once rounded ("100.0..100.0"): the bounds would say nothing.
        return format_value(unit, s.mean, true);
    }
    format!(
        "{} ({}..{})",
        format_value(unit, s.mean, true),
        bound(s.min),
        bound(s.max)
    )
}

/// A difference between two means in the metric's unit: shares in percentage points
/// (`+0.7 pts`, never an ambiguous `%`), counts whole, times with their unit.
pub fn format_difference(unit: Unit, d: f64) -> String {
    match unit {
        Unit::Share => format!("{:+.1} pts", d * 100.0),
        Unit::Count => format!("{d:+.0}"),
        Unit::Ms => format!("{d:+.0} ms"),
        Unit::Seconds => format!("{d:+.1} s"),
    }
}

/// A spread's width (max - min) in the metric's unit, shares in points.
pub fn format_width(unit: Unit, w: f64) -> String {
    match unit {
        Unit::Share => format!("{:.1} pts", w * 100.0),
        _ => format_value(unit, w, false),
    }
}

/// Unit suffix for a table title.
pub fn unit_label(unit: Unit) -> &'static str {
    match unit {
        Unit::Share => "share of affected operations that succeeded",
        Unit::Count => "count",
        Unit::Ms => "ms",
        Unit::Seconds => "s",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_and_formats() {
        let m = METRICS.iter().find(|m| m.name == "total_requests").unwrap();
        let mut a = crate::metrics::RunAccumulator::new(
            e03_plan::Scenario::e03a(),
            &e03_plan::Params::default(),
            "A",
            1,
        )
        .finish();
        let mut b = a.clone();
        a.total_requests = 10;
        b.total_requests = 15;
        let s = spread_of(m, [&a, &b]).unwrap();
        assert_eq!((s.mean, s.min, s.max, s.n), (12.5, 10.0, 15.0, 2));
        assert_eq!(format_spread(Unit::Count, &s), "13 (10..15)");
        assert_eq!(format_difference(Unit::Share, 0.007), "+0.7 pts");
        assert_eq!(format_difference(Unit::Count, -162.13), "-162");
        let share = Spread::of(&[0.888, 0.931, 0.911]);
        assert_eq!(format_spread(Unit::Share, &share), "91.0% (88.8..93.1)");
        assert_eq!(format_value(Unit::Ms, 612.4, true), "612 ms");
        let rounded_equal = Spread::of(&[0.99996, 1.0]);
        assert_eq!(format_spread(Unit::Share, &rounded_equal), "100.0%");
        assert_eq!(format_value(Unit::Seconds, 0.6, true), "0.6 s");
        assert_eq!(format_value(Unit::Share, 0.929, false), "92.9%");
        // E03-A has no recovery figure at all.
        let rec = METRICS.iter().find(|m| m.name == "recovery_s").unwrap();
        assert_eq!(spread_of(rec, [&a, &b]), None);
    }
}
