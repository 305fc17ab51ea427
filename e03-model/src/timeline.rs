//! The dependency's timeline: when it is down, when it freezes and when it runs degraded.
//!
//! Times are offsets from the run's time zero; every window is half-open `[start, end)`. A
//! scenario file describes its timeline as a list of phases ([`PhaseWindow`]); the model's
//! [`Timeline`] holds at most one freeze and one degraded window (E03-B: the degraded window
//! follows the freeze, `[freeze end, recovery end)`) and any number of down and rate-limited
//! windows.

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

/// While down the service answers every request with `status`, `latency` after it arrived (at
/// once by default), and does no work: no worker, no queue place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DownWindow {
    pub start: Duration,
    pub end: Duration,
    /// 400 to 599; 503 unless the scenario says otherwise.
    pub status: u16,
    /// How long the error answer takes (a gateway that is down still takes a round trip to say
    /// so). Zero: at once.
    #[serde(default)]
    pub latency: Duration,
}

/// While rate limited the service admits at most `calls` requests in any sliding window of
/// `window` (a request at `t` counts in `[t, t + window)`); a request over the limit is answered
/// 429 at once with a `Retry-After`, does no work and takes no worker or queue place. Admitted
/// requests are served as usual (workers, queue, faults). The rate-limit article's endpoint: 24 calls per 3
/// steps, rejected calls included.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RateLimitWindow {
    pub start: Duration,
    pub end: Duration,
    /// Requests admitted per sliding window, at least 1.
    pub calls: u32,
    /// The sliding window's length, positive.
    pub window: Duration,
    /// Rejected requests count toward the window too (the seed's endpoint does so: each
    /// rejection makes the next one likelier). `false`: only admitted requests count.
    pub count_rejected: bool,
    /// The `Retry-After` sent with a 429: this fixed value, or (`None`) the time until the window
    /// admits a request again, counted as if no other request arrived meanwhile.
    pub retry_after: Option<Duration>,
}

/// A fault on the wire between the callers and the dependency (issue 27), applied by a proxy
/// in front of it: nothing listens, or a Toxiproxy toxic.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "fault", rename_all = "snake_case")]
pub enum WireFault {
    /// Nothing listens: every connection is refused, and the open ones are closed.
    Refused,
    /// A toxic on every connection (open or new) that its toxicity draws.
    Toxic {
        toxic: crate::wire::ToxicKind,
        #[serde(default)]
        stream: crate::wire::Direction,
        toxicity: f64,
    },
}

impl WireFault {
    /// The direction a blackhole holds, if this fault is one: Toxiproxy's `timeout` toxic with
    /// timeout 0 on every connection (toxicity 1), so nothing passes that way until it ends.
    pub fn blackhole(&self) -> Option<crate::wire::Direction> {
        match *self {
            WireFault::Toxic {
                toxic: crate::wire::ToxicKind::Timeout { timeout_ms: 0 },
                stream,
                toxicity,
            } if toxicity >= 1.0 => Some(stream),
            _ => None,
        }
    }

    /// The toxic, the direction it acts on and its toxicity, if this fault is a toxic.
    fn toxic(&self) -> Option<(crate::wire::ToxicKind, crate::wire::Direction, f64)> {
        match *self {
            WireFault::Refused => None,
            WireFault::Toxic {
                toxic,
                stream,
                toxicity,
            } => Some((toxic, stream, toxicity)),
        }
    }

    /// The direction whose chunks this fault only delays, if it is such a toxic (latency,
    /// bandwidth, slicer: [`crate::wire::ToxicKind::delays`]).
    pub fn delays(&self) -> Option<crate::wire::Direction> {
        let (toxic, stream, _) = self.toxic()?;
        toxic.delays().then_some(stream)
    }

    /// The direction in which nothing passes on the connections it applies to, if it is
    /// Toxiproxy's `timeout` toxic ([`crate::wire::ToxicKind::holds`]).
    pub fn holds(&self) -> Option<crate::wire::Direction> {
        let (toxic, stream, _) = self.toxic()?;
        toxic.holds().then_some(stream)
    }

    /// If this fault ends the connections it applies to: its toxicity, and when and how it
    /// ends each ([`crate::wire::ToxicKind::ends_connection`]).
    pub fn ends_connections(&self) -> Option<(f64, Duration, crate::wire::Ending)> {
        let (toxic, _, toxicity) = self.toxic()?;
        let (after, ending) = toxic.ends_connection()?;
        Some((toxicity, after, ending))
    }

    /// `refused`, or the toxic's type (`latency`, `timeout`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            WireFault::Refused => "refused",
            WireFault::Toxic { toxic, .. } => toxic.type_name(),
        }
    }
}

/// A wire fault's window.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WireWindow {
    pub start: Duration,
    pub end: Duration,
    pub fault: WireFault,
    /// How long a refused connect takes, in the simulator (a live one takes what the machine
    /// takes). Zero: at once.
    #[serde(default)]
    pub latency: Duration,
}

/// What the dependency is doing at a given moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Normal,
    Frozen,
    Degraded,
    /// Answering everything with this status at once.
    Down(u16),
}

/// The whole timeline of one run. E03-A has no window at all.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct Timeline {
    pub freeze: Option<FreezeWindow>,
    pub degraded: Option<DegradedWindow>,
    /// Down windows, in time order, not overlapping the others.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub down: Vec<DownWindow>,
    /// Rate-limited windows, in time order, not overlapping the others.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rate_limited: Vec<RateLimitWindow>,
    /// Wire faults, in time order, not overlapping the others: they need a proxy in front of
    /// the dependency.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub wire: Vec<WireWindow>,
    /// HTTP faults (`abort`, `delay`, `hang`, `reset` phases), in time order, not overlapping
    /// the others: `lab proxy --http` applies them ([`crate::fault_proxy`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub http: Vec<crate::http_fault::HttpFaultWindow>,
}

impl Timeline {
    pub fn phase(&self, now: Duration) -> Phase {
        if let Some(d) = self.down_at(now) {
            return Phase::Down(d.status);
        }
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

    /// The name of what the dependency does at `now`, as the progress lines show it: `down`,
    /// `frozen`, `degraded`, `rate_limited` or `normal`.
    pub fn phase_name(&self, now: Duration) -> &'static str {
        if let Some(w) = self.wire_at(now) {
            return w.fault.name();
        }
        if let Some(w) = self.http.iter().find(|w| now >= w.start && now < w.end) {
            return w.rule.fault.phase_name();
        }
        match self.phase(now) {
            Phase::Down(_) => "down",
            Phase::Frozen => "frozen",
            Phase::Degraded => "degraded",
            Phase::Normal if self.rate_limit_at(now).is_some() => "rate_limited",
            Phase::Normal => "normal",
        }
    }

    /// How a readiness probe (`GET /ready`: a balancer's active health check) that reaches
    /// the dependency at `now` is answered: when, and with what status (200: ready). At once
    /// and 200 in a normal or degraded phase; the down phase's status after its latency; in a
    /// freeze, nothing until it ends, then 200 (the process runs again). Both drivers answer
    /// probes from this.
    pub fn readiness(&self, now: Duration) -> (Duration, u16) {
        match self.phase(now) {
            Phase::Down(status) => (
                now + self.down_at(now).map_or(Duration::ZERO, |d| d.latency),
                status,
            ),
            Phase::Frozen => (self.freeze.map_or(now, |f| f.end), 200),
            Phase::Normal | Phase::Degraded => (now, 200),
        }
    }

    /// The down window `now` falls in, if any.
    pub fn down_at(&self, now: Duration) -> Option<&DownWindow> {
        self.down.iter().find(|d| now >= d.start && now < d.end)
    }

    /// Whether a `refused` phase is on the timeline.
    pub fn refused(&self) -> bool {
        self.wire.iter().any(|w| w.fault == WireFault::Refused)
    }

    /// Whether the timeline has a phase whose failures take a latency a live run measures: a
    /// `down` phase (its answer) or a `refused` one (the refused connect).
    pub fn has_failure_phase(&self) -> bool {
        !self.down.is_empty() || self.refused()
    }

    /// The wire fault `now` falls in, if any.
    pub fn wire_at(&self, now: Duration) -> Option<&WireWindow> {
        self.wire_phase_at(now).map(|(_, w)| w)
    }

    /// [`Self::wire_at`] with the window's index in [`Self::wire`].
    pub fn wire_phase_at(&self, now: Duration) -> Option<(usize, &WireWindow)> {
        self.wire
            .iter()
            .enumerate()
            .find(|(_, w)| now >= w.start && now < w.end)
    }

    /// The rate-limited window `now` falls in, if any, with its index.
    pub fn rate_limit_at(&self, now: Duration) -> Option<(usize, &RateLimitWindow)> {
        self.rate_limited
            .iter()
            .enumerate()
            .find(|(_, r)| now >= r.start && now < r.end)
    }

    /// The incident: from the start of the first window that is not normal service to the end
    /// of the last one (E03-B: freeze start to recovery end). `None` when the dependency is up
    /// all the time. Operations that overlap it are the "affected" ones of the metrics.
    pub fn incident(&self) -> Option<(Duration, Duration)> {
        let starts = self.freeze.map(|f| f.start).into_iter();
        let starts = starts.chain(self.degraded.map(|d| d.start));
        let starts = starts.chain(self.down.iter().map(|d| d.start));
        let starts = starts.chain(self.rate_limited.iter().map(|r| r.start));
        let starts = starts.chain(self.wire.iter().map(|w| w.start));
        let starts = starts.chain(self.http.iter().map(|w| w.start));
        let ends = self.freeze.map(|f| f.end).into_iter();
        let ends = ends.chain(self.degraded.map(|d| d.end));
        let ends = ends.chain(self.down.iter().map(|d| d.end));
        let ends = ends.chain(self.rate_limited.iter().map(|r| r.end));
        let ends = ends.chain(self.wire.iter().map(|w| w.end));
        let ends = ends.chain(self.http.iter().map(|w| w.end));
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
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PhaseKind {
    /// Serves normally.
    Up,
    /// Answers every request with `status`, `latency_ms` after its arrival (0: at once), doing
    /// no work.
    Down {
        status: u16,
        #[serde(default)]
        latency_ms: u64,
    },
    /// Holds everything and answers 503 at the phase's end (E03-B). At most one per scenario.
    Freeze,
    /// Capacity times `capacity_factor`, in (0, 1]: service time is divided by it. At most one
    /// per scenario.
    Degraded { capacity_factor: f64 },
    /// At most `calls` requests per sliding `window_ms`; over it, 429 at once with a
    /// `Retry-After` of `retry_after_ms` or (absent) the time until the window admits again.
    /// `count_rejected`: rejected requests count toward the window (default true).
    RateLimited {
        calls: u32,
        window_ms: u64,
        count_rejected: bool,
        #[serde(default)]
        retry_after_ms: Option<u64>,
    },
    /// Nothing listens: a proxy in front of the dependency refuses every connection and
    /// closes the open ones. `latency_ms`: how long a refused connect takes in the simulator.
    Refused {
        #[serde(default)]
        latency_ms: u64,
    },
    /// A Toxiproxy toxic on the proxy in front of the dependency.
    Toxic {
        toxic: crate::wire::ToxicKind,
        #[serde(default)]
        stream: crate::wire::Direction,
        toxicity: f64,
    },
    /// An HTTP fault of `lab proxy --http` (`abort`, `delay`, `hang`, `reset` phases,
    /// [`crate::http_fault`]).
    Http {
        rule: crate::http_fault::HttpFaultRule,
    },
}

/// One phase of a scenario's timeline, half-open `[start_s, end_s)` in seconds after time zero.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PhaseWindow {
    pub phase: PhaseKind,
    pub start_s: f64,
    pub end_s: f64,
    /// A down phase of one replica only (`[[timeline]] replica`, 0 is the first); `None`:
    /// every replica's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica: Option<u32>,
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
            down: vec![DownWindow {
                start: ms(2000),
                end: ms(3000),
                status: 500,
                latency: Duration::ZERO,
            }],
            rate_limited: Vec::new(),
            wire: Vec::new(),
            http: Vec::new(),
        }
    }

    #[test]
    fn phases_follow_half_open_windows() {
        let t = outage();
        assert_eq!(t.phase(ms(1999)), Phase::Normal);
        assert_eq!(t.phase(ms(2000)), Phase::Down(500));
        assert_eq!(t.phase(ms(2999)), Phase::Down(500));
        assert_eq!(t.phase(ms(3000)), Phase::Normal);
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

    /// Toxiproxy's `timeout` toxic as a wire phase's fault.
    fn toxic(timeout_ms: u64, stream: crate::wire::Direction, toxicity: f64) -> WireFault {
        WireFault::Toxic {
            toxic: crate::wire::ToxicKind::Timeout { timeout_ms },
            stream,
            toxicity,
        }
    }

    #[test]
    fn a_blackhole_is_a_timeout_toxic_at_0_on_every_connection() {
        use crate::wire::Direction;
        assert_eq!(
            toxic(0, Direction::Upstream, 1.0).blackhole(),
            Some(Direction::Upstream)
        );
        assert_eq!(
            toxic(0, Direction::Downstream, 1.0).blackhole(),
            Some(Direction::Downstream)
        );
        // Closed after a while, or on some connections only: not a blackhole.
        assert_eq!(toxic(300, Direction::Downstream, 1.0).blackhole(), None);
        assert_eq!(toxic(0, Direction::Downstream, 0.5).blackhole(), None);
        assert_eq!(WireFault::Refused.blackhole(), None);
    }

    /// A wire phase's fault: its toxic's rule (`ToxicKind::ends_connection`, `holds`,
    /// `delays`), with the phase's direction and toxicity.
    #[test]
    fn a_fault_reads_its_toxics_rule_with_its_direction_and_toxicity() {
        use crate::wire::{Direction, Ending, ToxicKind};
        let reset = WireFault::Toxic {
            toxic: ToxicKind::ResetPeer { timeout_ms: 200 },
            stream: Direction::Upstream,
            toxicity: 0.3,
        };
        assert_eq!(
            reset.ends_connections(),
            Some((0.3, ms(200), Ending::Reset))
        );
        assert_eq!((reset.holds(), reset.delays()), (None, None));
        let held = toxic(300, Direction::Downstream, 1.0);
        assert_eq!(held.holds(), Some(Direction::Downstream));
        assert_eq!(held.ends_connections(), Some((1.0, ms(300), Ending::Close)));
        assert_eq!(toxic(0, Direction::Upstream, 1.0).ends_connections(), None);
        let slow = WireFault::Toxic {
            toxic: ToxicKind::Latency {
                latency_ms: 50,
                jitter_ms: 0,
            },
            stream: Direction::Upstream,
            toxicity: 1.0,
        };
        assert_eq!(slow.delays(), Some(Direction::Upstream));
        assert_eq!(WireFault::Refused.ends_connections(), None);
        let mut t = outage();
        assert!(t.has_failure_phase() && !t.refused());
        t.down.clear();
        assert!(!t.has_failure_phase());
        t.wire.push(WireWindow {
            start: ms(1),
            end: ms(2),
            fault: WireFault::Refused,
            latency: Duration::ZERO,
        });
        assert!(t.has_failure_phase() && t.refused());
    }

    #[test]
    fn the_incident_spans_every_window_that_is_not_normal() {
        assert_eq!(outage().incident(), Some((ms(2000), ms(15_000))));
        assert_eq!(Timeline::default().incident(), None);
    }

    #[test]
    fn a_readiness_probe_is_answered_from_the_phase_it_reaches() {
        let ms = Duration::from_millis;
        let t = Timeline {
            freeze: Some(FreezeWindow {
                start: ms(100),
                end: ms(300),
            }),
            degraded: Some(DegradedWindow {
                start: ms(300),
                end: ms(500),
                capacity_factor: 0.5,
            }),
            down: vec![DownWindow {
                start: ms(600),
                end: ms(700),
                status: 503,
                latency: ms(20),
            }],
            ..Timeline::default()
        };
        assert_eq!(t.readiness(ms(50)), (ms(50), 200));
        assert_eq!(
            t.readiness(ms(150)),
            (ms(300), 200),
            "held to the freeze's end"
        );
        assert_eq!(t.readiness(ms(400)), (ms(400), 200), "degraded is ready");
        assert_eq!(
            t.readiness(ms(650)),
            (ms(670), 503),
            "down, after its latency"
        );
        assert_eq!(t.readiness(ms(700)), (ms(700), 200));
    }
}
