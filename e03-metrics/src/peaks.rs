//! The busiest window of arrivals for every window width a scenario's peak checks and the
//! attempt log ask about, counted as the arrivals come ([`WindowPeaks`]).
//!
//! The run accumulator ([`crate::metrics`]) feeds it and [`crate::checks`] reads its result
//! (`RunMetrics::peak_arrivals`); it lives apart from both so that the accumulator does not
//! read the checks, which read the accumulator's figures.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use e03_plan::checks::{CheckMetric, CheckSpec};

/// The window of [`attempt_log_text`](crate::checks::attempt_log_text)' peak, ms.
pub(crate) const ATTEMPT_LOG_WINDOW_MS: u64 = 200;

/// Arrivals per window for every window a scenario's peak checks (and
/// [`attempt_log_text`](crate::checks::attempt_log_text)) ask about, counted as the arrivals
/// come: [`peak_per_window`](crate::checks::peak_per_window)'s figures without keeping every
/// arrival. Memory grows with the windows that saw an arrival, not with the arrivals.
#[derive(Debug, Clone)]
pub(crate) struct WindowPeaks {
    counts: Vec<WindowCount>,
}

/// Arrivals per window of one width: a map by window, and the window being counted (arrivals
/// come nearly in time order, so most touch no map).
#[derive(Debug, Clone)]
struct WindowCount {
    window_ms: u64,
    retries_only: bool,
    width_us: u64,
    by_window: HashMap<u64, u64>,
    current: Option<(u64, u64)>,
}

impl WindowCount {
    fn flush(&mut self) {
        if let Some((k, n)) = self.current.take() {
            *self.by_window.entry(k).or_default() += n;
        }
    }
}

impl WindowPeaks {
    /// The windows of `checks`' peak metrics and the attempt log's.
    pub(crate) fn new(checks: &[CheckSpec]) -> Self {
        let mut keys = BTreeSet::from([(ATTEMPT_LOG_WINDOW_MS, false)]);
        for c in checks {
            match c.metric {
                CheckMetric::PeakArrivals {
                    window_ms,
                    retries_only,
                }
                | CheckMetric::PeakRatio {
                    window_ms,
                    retries_only,
                    ..
                } => {
                    keys.insert((window_ms, retries_only));
                }
                _ => {}
            }
        }
        let counts = keys
            .into_iter()
            .map(|(window_ms, retries_only)| WindowCount {
                window_ms,
                retries_only,
                width_us: window_ms.max(1) * 1000,
                by_window: HashMap::new(),
                current: None,
            })
            .collect();
        WindowPeaks { counts }
    }

    /// One arrival: as [`peak_per_window`](crate::checks::peak_per_window) counts an entry of
    /// the arrival list.
    pub(crate) fn arrival(&mut self, t_us: u64, attempt: u32) {
        for c in &mut self.counts {
            if c.retries_only && attempt <= 1 {
                continue;
            }
            let k = t_us / c.width_us;
            match &mut c.current {
                Some((current, n)) if *current == k => *n += 1,
                _ => {
                    c.flush();
                    c.current = Some((k, 1));
                }
            }
        }
    }

    /// The most arrivals in one window, by `(window_ms, retries_only)`.
    pub(crate) fn finish(self) -> BTreeMap<(u64, bool), u64> {
        self.counts
            .into_iter()
            .map(|mut c| {
                c.flush();
                let peak = c.by_window.values().copied().max().unwrap_or(0);
                ((c.window_ms, c.retries_only), peak)
            })
            .collect()
    }
}
