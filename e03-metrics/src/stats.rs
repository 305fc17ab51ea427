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
pub use crate::tables::Spread;

/// The spread of `metric` over the runs that have it; `None` if none has it.
pub fn spread_of<'a>(
    metric: &Metric,
    runs: impl IntoIterator<Item = &'a RunMetrics>,
) -> Option<Spread> {
    let values: Vec<f64> = runs.into_iter().filter_map(|m| (metric.get)(m)).collect();
    (!values.is_empty()).then(|| Spread::of(&values))
}

/// A value in the metric's unit: `92.9%`, `3040`, `628 ms`, `1 s`. Means of counts keep one
/// decimal so that averages over seeds do not look like single runs.
pub fn format_value(unit: Unit, v: f64, is_mean: bool) -> String {
    match unit {
        Unit::Share => format!("{:.1}%", v * 100.0),
        Unit::Count | Unit::Seconds if is_mean && v.fract() != 0.0 => format!("{v:.1}"),
        Unit::Count | Unit::Seconds => format!("{v:.0}"),
        Unit::Ms => format!("{v:.0}"),
    }
}

/// `mean [min..max]`, or just the value when every run agrees.
pub fn format_spread(unit: Unit, s: &Spread) -> String {
    if s.min == s.max {
        format_value(unit, s.mean, false)
    } else {
        format!(
            "{} [{}..{}]",
            format_value(unit, s.mean, true),
            format_value(unit, s.min, false),
            format_value(unit, s.max, false)
        )
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

/// Pads every column of `rows` to its widest cell (first column left-aligned, the others
/// right-aligned) and writes them.
pub fn write_table<W: std::io::Write>(w: &mut W, rows: &[Vec<String>]) -> std::io::Result<()> {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c > 0 {
                line.push_str("  ");
                line.push_str(&" ".repeat(widths[c] - cell.chars().count()));
                line.push_str(cell);
            } else {
                line.push_str(cell);
                line.push_str(&" ".repeat(widths[c] - cell.chars().count()));
            }
        }
        writeln!(w, "{}", line.trim_end())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_and_formats() {
        let m = METRICS.iter().find(|m| m.name == "total_requests").unwrap();
        let mut a = crate::metrics::RunAccumulator::new(
            e03_core::Scenario::E03A,
            &e03_core::Params::default(),
            "A",
            1,
        )
        .finish();
        let mut b = a.clone();
        a.total_requests = 10;
        b.total_requests = 15;
        let s = spread_of(m, [&a, &b]).unwrap();
        assert_eq!((s.mean, s.min, s.max, s.n), (12.5, 10.0, 15.0, 2));
        assert_eq!(format_spread(Unit::Count, &s), "12.5 [10..15]");
        assert_eq!(format_value(Unit::Share, 0.929, false), "92.9%");
        // E03-A has no recovery figure at all.
        let rec = METRICS.iter().find(|m| m.name == "recovery_s").unwrap();
        assert_eq!(spread_of(rec, [&a, &b]), None);
    }

    #[test]
    fn tables_are_aligned() {
        let rows = vec![
            vec!["x".to_string(), "1".to_string()],
            vec!["long".to_string(), "100".to_string()],
        ];
        let mut out = Vec::new();
        write_table(&mut out, &rows).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "x       1\nlong  100\n");
    }
}
