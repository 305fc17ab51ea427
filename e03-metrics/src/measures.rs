//! The measures the comparison tables and the conclusion under them both read (success, total,
//! 100 ms peak, retries: each a name, a unit and how to read it from a run), and a strategy's
//! spread of a figure over its seeds.
//!
//! Apart from `tables.rs` and `conclusion.rs`, so that both read them and neither reads the
//! other.

use crate::metrics::RunMetrics;
use crate::stats::Unit;
use crate::table::Spread;
use crate::ScenarioSummary;

/// A metric of the tables: name, unit and how to read it from a run.
pub(crate) type Metric = (&'static str, Unit, fn(&RunMetrics) -> f64);

pub(crate) const SUCCESS: Metric = ("success_affected", Unit::Share, |r| r.success_affected);
pub(crate) const TOTAL: Metric = ("total", Unit::Count, |r| r.total_requests as f64);
pub(crate) const PEAK_100MS: Metric = ("peak_100ms", Unit::Count, |r| r.peak_100ms as f64);
pub(crate) const RETRIES: Metric = ("retries", Unit::Count, |r| r.retries_sent as f64);

pub(crate) fn spread_of(
    s: &ScenarioSummary,
    strategy: &str,
    metric: fn(&RunMetrics) -> f64,
) -> Spread {
    Spread::of(&s.runs_of(strategy).map(metric).collect::<Vec<_>>())
}
