//! Time in µs and latency histograms: the widths of the window series, the cap on times
//! ([`MAX_T_US`]), and the HDR histogram every figure's percentiles come from, with its
//! quantile read in milliseconds.
//!
//! A leaf of the crate: the run accumulator ([`crate::metrics`]) and every figure module
//! (fidelity, open loop, fan-out, dependencies, shards) read these, and it reads none of them,
//! so none of them has to read `metrics.rs` for a histogram.

use hdrhistogram::Histogram;

/// Width of the short window, in microseconds.
pub const WINDOW_100MS_US: u64 = 100_000;
/// Width of the long window, in microseconds.
pub const WINDOW_1S_US: u64 = 1_000_000;
/// Times at or beyond this (two days) are not placed in window series: a run is at most one
/// day long, and a bogus time must not make a series allocate without bound.
pub const MAX_T_US: u64 = 2 * 86_400 * WINDOW_1S_US;

/// A histogram of µs from 1 µs to [`MAX_T_US`] at 3 significant digits; larger values are
/// clamped to its top (`saturating_record`), which a fixed range makes well defined.
pub(crate) fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_T_US, 3).expect("valid bounds and precision")
}

/// Value at quantile `q` in ms, 0 for an empty histogram.
pub(crate) fn quantile_ms(h: &Histogram<u64>, q: f64) -> f64 {
    if h.is_empty() {
        0.0
    } else {
        h.value_at_quantile(q) as f64 / 1000.0
    }
}
