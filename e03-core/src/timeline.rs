//! The dependency's timeline: when it freezes and how long it stays degraded afterwards.
//!
//! Times are offsets from the run's time zero. The freeze window is half-open
//! `[start, end)`; the degraded window follows it, `[freeze end, recovery end)`.

use std::time::Duration;

/// While frozen the service accepts requests but completes none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FreezeWindow {
    pub start: Duration,
    pub end: Duration,
}

/// After the freeze the service runs at a fraction of its capacity for a while.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DegradedWindow {
    pub start: Duration,
    pub end: Duration,
    /// Capacity factor in (0, 1]: service time is divided by it (0.5 doubles it).
    pub capacity_factor: f64,
}

/// What the dependency is doing at a given moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Normal,
    Frozen,
    Degraded,
}

/// The whole timeline of one run. E03-A has neither window.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct Timeline {
    pub freeze: Option<FreezeWindow>,
    pub degraded: Option<DegradedWindow>,
}

impl Timeline {
    pub fn phase(&self, now: Duration) -> Phase {
        if let Some(f) = self.freeze {
            if now >= f.start && now < f.end {
                return Phase::Frozen;
            }
        }
        if let Some(d) = self.degraded {
            if now >= d.start && now < d.end {
                return Phase::Degraded;
            }
        }
        Phase::Normal
    }

    /// The incident: from the start of the first window that is not normal service to the end
    /// of the last one (E03-B: freeze start to recovery end). `None` when the dependency is up
    /// all the time. Operations that overlap it are the "affected" ones of the metrics.
    pub fn incident(&self) -> Option<(Duration, Duration)> {
        let starts = self.freeze.map(|f| f.start).into_iter();
        let starts = starts.chain(self.degraded.map(|d| d.start));
        let ends = self.freeze.map(|f| f.end).into_iter();
        let ends = ends.chain(self.degraded.map(|d| d.end));
        Some((starts.min()?, ends.max()?))
    }

    /// Service time of work admitted at `now`, given the normal service time.
    pub fn service_time(&self, now: Duration, normal: Duration) -> Duration {
        match (self.phase(now), self.degraded) {
            (Phase::Degraded, Some(d)) => normal.div_f64(d.capacity_factor),
            _ => normal,
        }
    }
}

/// What the dependency does during one phase of a scenario's timeline.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PhaseKind {
    /// Serves normally.
    Up,
    /// Answers every request at once with `status`, doing no work.
    Down { status: u16 },
    /// Holds everything and answers 503 at the phase's end (E03-B).
    Freeze,
    /// Capacity times `capacity_factor`, in (0, 1]: service time is divided by it.
    Degraded { capacity_factor: f64 },
}

/// One phase of a scenario's timeline, half-open `[start_s, end_s)` in seconds after time zero.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PhaseWindow {
    pub phase: PhaseKind,
    pub start_s: f64,
    pub end_s: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn outage() -> Timeline {
        Timeline {
            freeze: Some(FreezeWindow {
                start: ms(8500),
                end: ms(10_000),
            }),
            degraded: Some(DegradedWindow {
                start: ms(10_000),
                end: ms(15_000),
                capacity_factor: 0.5,
            }),
        }
    }

    #[test]
    fn phases_follow_half_open_windows() {
        let t = outage();
        assert_eq!(t.phase(ms(8499)), Phase::Normal);
        assert_eq!(t.phase(ms(8500)), Phase::Frozen);
        assert_eq!(t.phase(ms(9999)), Phase::Frozen);
        assert_eq!(t.phase(ms(10_000)), Phase::Degraded);
        assert_eq!(t.phase(ms(14_999)), Phase::Degraded);
        assert_eq!(t.phase(ms(15_000)), Phase::Normal);
    }

    #[test]
    fn degraded_window_doubles_service_time_at_factor_half() {
        let t = outage();
        assert_eq!(t.service_time(ms(5000), ms(40)), ms(40));
        assert_eq!(t.service_time(ms(12_000), ms(40)), ms(80));
        assert_eq!(Timeline::default().service_time(ms(12_000), ms(40)), ms(40));
    }
}
