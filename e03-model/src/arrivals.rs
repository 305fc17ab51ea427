//! The open loop: operations arrive by a seeded Poisson process at rate λ, whatever the
//! dependency does, and each runs in a slot (a [`ClientSession`] with
//! [`Starts::OnDemand`](crate::session::Starts::OnDemand)) until it ends.
//!
//! A closed loop slows down with its dependency (a client waiting for an answer sends nothing
//! new), which hides a metastable failure: the offered load falls while the trigger lasts. Here
//! the arrivals do not wait for anything. Like every state machine of the core, [`OpenLoop`]
//! has no clock: the driver asks [`OpenLoop::next_arrival`], sleeps until then (tokio's timer or
//! the event queue) and calls [`OpenLoop::on_arrival`], which either hands it a slot to start
//! the operation in or drops the operation because `max_in_flight` operations are already in
//! progress (the bound that keeps the live swarm's memory finite; every drop is counted and
//! logged). When an operation ends the driver calls [`OpenLoop::release`].
//!
//! ```text
//! open = OpenLoop::new(seed, session_config, shape, max_in_flight)
//! while let Some(t) = open.next_arrival() {
//!     sleep_until(t)
//!     match open.on_arrival() {
//!         Arrival::Start { slot, start, class, new } => { session(slot) = new or the slot's
//!                          own; session.begin(start, class); drive it; release(slot) }
//!         Arrival::Dropped { start } => log the drop,
//!     }
//! }
//! ```
//!
//! The rate is constant (`E03_RATE`) or a triangle that ramps from `E03_RATE` at time zero up
//! to `E03_RATE_PEAK` at the middle of the run and back down at its end (to see hysteresis: does
//! the system come back at the same load it broke at?). Arrival times are drawn by thinning: a
//! Poisson process at the peak rate, each point kept with probability rate(t) / peak, all from
//! one stream `stream(seed, Arrivals, 0)`, so every strategy of a seed sees the same arrivals
//! (common random numbers) on either driver. Each arrival's class ([`Priority`]) is drawn from
//! its number in arrival order, not from the slot that takes it (which depends on when earlier
//! operations ended), so every strategy and both drivers see the same classes too.

use std::time::Duration;

use rand::Rng;

use crate::priority::Priority;
use crate::rng::{stream, LabRng, Stream};
use crate::session::{ClientSession, SessionConfig};

/// The caller number an open loop's class draws use ([`Priority::of`]), with the arrival's
/// number as the operation: no session has it.
pub const ARRIVALS_CALLER: u32 = u32::MAX;

/// The offered load over time, operations per second.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateShape {
    /// Rate at time zero and at the end of the run (the whole run if `peak <= base`).
    pub base: f64,
    /// Rate at the middle of the run; at or below `base`: a constant rate.
    pub peak: f64,
    /// Arrivals happen in `[0, duration)`.
    pub duration: Duration,
}

impl RateShape {
    /// A constant rate.
    pub fn constant(rate: f64, duration: Duration) -> Self {
        Self {
            base: rate,
            peak: 0.0,
            duration,
        }
    }

    fn max(&self) -> f64 {
        self.base.max(self.peak)
    }

    /// The rate at `t` seconds.
    pub fn at(&self, t: f64) -> f64 {
        if self.peak <= self.base {
            return self.base;
        }
        let d = self.duration.as_secs_f64();
        let half = d / 2.0;
        let frac = if t <= half {
            t / half
        } else {
            (d - t).max(0.0) / half
        };
        self.base + (self.peak - self.base) * frac
    }

    /// Expected arrivals in `[0, duration)`.
    pub fn expected(&self) -> f64 {
        let d = self.duration.as_secs_f64();
        if self.peak <= self.base {
            self.base * d
        } else {
            (self.base + self.peak) / 2.0 * d
        }
    }
}

/// What [`OpenLoop::on_arrival`] asks of the driver.
#[derive(Debug, Clone)]
pub enum Arrival {
    /// Start an operation of this class at `start` (its intended start) in slot `slot`: call
    /// [`ClientSession::begin`] on the slot's session, then drive it. `new` is the slot's
    /// session when the slot is used for the first time (the driver keeps it from then on).
    Start {
        slot: u32,
        start: Duration,
        class: Priority,
        new: Option<Box<ClientSession>>,
    },
    /// `max_in_flight` operations were in progress: this one is not started (count it, log it).
    Dropped { start: Duration },
}

/// The open loop's arrival process and slot pool; see the module docs.
#[derive(Debug, Clone)]
pub struct OpenLoop {
    seed: u64,
    config: SessionConfig,
    shape: RateShape,
    rng: LabRng,
    /// The next arrival, seconds after time zero; None once past the run's end.
    next: Option<f64>,
    /// Slots free for the next operation (a stack: the last freed is reused first).
    free: Vec<u32>,
    /// Slots created so far (slot ids are `0..opened`).
    opened: u32,
    max_in_flight: u32,
    arrivals: u64,
    dropped: u64,
}

impl OpenLoop {
    /// The open loop of a run with this seed; draws the first arrival.
    pub fn new(seed: u64, config: SessionConfig, shape: RateShape, max_in_flight: u32) -> Self {
        let mut open = Self {
            seed,
            config,
            shape,
            rng: stream(seed, Stream::Arrivals, 0),
            next: None,
            free: Vec::new(),
            opened: 0,
            max_in_flight: max_in_flight.max(1),
            arrivals: 0,
            dropped: 0,
        };
        open.next = open.draw_after(0.0);
        open
    }

    /// The first arrival strictly after `t` that thinning keeps, if before the end.
    fn draw_after(&mut self, mut t: f64) -> Option<f64> {
        let max = self.shape.max();
        let end = self.shape.duration.as_secs_f64();
        if max <= 0.0 {
            return None;
        }
        loop {
            let u: f64 = self.rng.random();
            t += -(1.0 - u).ln() / max;
            if t >= end {
                return None;
            }
            let keep: f64 = self.rng.random();
            if keep * max < self.shape.at(t) {
                return Some(t);
            }
        }
    }

    /// When the next operation arrives (`None`: no more in this run).
    pub fn next_arrival(&self) -> Option<Duration> {
        self.next.map(Duration::from_secs_f64)
    }

    /// The arrival that was due at [`next_arrival`](Self::next_arrival): a slot to start it in,
    /// or a drop. Draws the following arrival.
    ///
    /// # Panics
    /// If no arrival is left.
    pub fn on_arrival(&mut self) -> Arrival {
        let t = self.next.expect("on_arrival with no arrival left");
        let start = Duration::from_secs_f64(t);
        self.next = self.draw_after(t);
        let class = Priority::of(
            self.seed,
            ARRIVALS_CALLER,
            self.arrivals as u32,
            self.config.best_effort_ppm,
        );
        self.arrivals += 1;
        if let Some(slot) = self.free.pop() {
            return Arrival::Start {
                slot,
                start,
                class,
                new: None,
            };
        }
        if self.opened < self.max_in_flight {
            let slot = self.opened;
            self.opened += 1;
            let session = ClientSession::new(self.seed, slot, self.config);
            return Arrival::Start {
                slot,
                start,
                class,
                new: Some(Box::new(session)),
            };
        }
        self.dropped += 1;
        Arrival::Dropped { start }
    }

    /// The operation in `slot` ended: the slot takes the next arrival.
    pub fn release(&mut self, slot: u32) {
        debug_assert!(slot < self.opened && !self.free.contains(&slot));
        self.free.push(slot);
    }

    /// Arrivals so far (started and dropped).
    pub fn arrivals(&self) -> u64 {
        self.arrivals
    }

    /// Arrivals dropped because `max_in_flight` operations were in progress.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Operations in progress.
    pub fn in_flight(&self) -> u32 {
        self.opened - self.free.len() as u32
    }

    /// Slots opened so far (the most operations that were ever in progress at once).
    pub fn slots(&self) -> u32 {
        self.opened
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operation::{AttemptResult, Limits};
    use crate::session::{Starts, Wake};
    use crate::strategy::Strategy;
    use crate::{budget::BudgetSpec, Unlimited};

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn config() -> SessionConfig {
        SessionConfig {
            limits: Limits {
                max_attempts: 4,
                attempt_timeout: ms(2000),
                deadline: ms(5000),
            },
            duration: ms(60_000),
            think: (ms(0), ms(0)),
            starts: Starts::OnDemand,
            max_ops: None,
            best_effort_ppm: 0,
        }
    }

    fn all_arrivals(open: &mut OpenLoop) -> Vec<Duration> {
        let mut out = Vec::new();
        while let Some(t) = open.next_arrival() {
            match open.on_arrival() {
                Arrival::Start { slot, start, .. } => {
                    assert_eq!(start, t);
                    open.release(slot);
                }
                Arrival::Dropped { start } => assert_eq!(start, t),
            }
            out.push(t);
        }
        out
    }

    #[test]
    fn poisson_arrivals_have_the_rate_and_exponential_gaps_and_are_seeded() {
        let shape = RateShape::constant(200.0, ms(60_000));
        let a = all_arrivals(&mut OpenLoop::new(7, config(), shape, 10));
        let b = all_arrivals(&mut OpenLoop::new(7, config(), shape, 10));
        let c = all_arrivals(&mut OpenLoop::new(8, config(), shape, 10));
        assert_eq!(a, b, "same seed, same arrivals");
        assert_ne!(a, c);
        // 12 000 expected; Poisson sd ~110.
        assert!((11_500..12_500).contains(&a.len()), "{}", a.len());
        assert!(a.windows(2).all(|w| w[0] < w[1]));
        assert!(*a.last().unwrap() < ms(60_000));
        // Exponential gaps: share of gaps shorter than the mean is 1 - 1/e = 0.632.
        let gaps: Vec<f64> = a.windows(2).map(|w| (w[1] - w[0]).as_secs_f64()).collect();
        let short = gaps.iter().filter(|g| **g < 1.0 / 200.0).count() as f64 / gaps.len() as f64;
        assert!((0.61..0.655).contains(&short), "{short}");
    }

    #[test]
    fn a_ramp_rises_to_its_peak_at_the_middle_and_falls_back() {
        let shape = RateShape {
            base: 50.0,
            peak: 450.0,
            duration: ms(40_000),
        };
        assert_eq!(shape.at(0.0), 50.0);
        assert_eq!(shape.at(20.0), 450.0);
        assert_eq!(shape.at(30.0), 250.0);
        let a = all_arrivals(&mut OpenLoop::new(1, config(), shape, 10));
        let in_window =
            |from: u64, to: u64| a.iter().filter(|t| **t >= ms(from) && **t < ms(to)).count();
        // Expected: 0-4 s: 4 x 90 = 360; 18-22 s: ~4 x 442 = 1768; 36-40 s: 360.
        let (early, mid, late) = (
            in_window(0, 4000),
            in_window(18_000, 22_000),
            in_window(36_000, 40_000),
        );
        assert!((280..440).contains(&early), "{early}");
        assert!((1620..1920).contains(&mid), "{mid}");
        assert!((280..440).contains(&late), "{late}");
        assert!((shape.expected() - 10_000.0).abs() < 1e-9);
        let n = a.len() as f64;
        assert!((n - 10_000.0).abs() < 400.0, "{n}");
    }

    /// The n-th arrival's class is `Priority::of(seed, ARRIVALS_CALLER, n, share)`, whichever
    /// slot takes it: a loop that frees its slots at once and one that never frees them give
    /// the same classes.
    #[test]
    fn an_arrival_s_class_follows_its_number_not_its_slot() {
        let shape = RateShape::constant(100.0, ms(2_000));
        let half = SessionConfig {
            best_effort_ppm: 500_000,
            ..config()
        };
        let classes = |release: bool| {
            let mut open = OpenLoop::new(9, half, shape, 10_000);
            let mut out = Vec::new();
            while open.next_arrival().is_some() {
                let Arrival::Start { slot, class, .. } = open.on_arrival() else {
                    panic!("no cap reached")
                };
                out.push(class);
                if release {
                    open.release(slot);
                }
            }
            out
        };
        let (freed, held) = (classes(true), classes(false));
        assert_eq!(freed, held);
        for (n, c) in freed.iter().enumerate() {
            assert_eq!(
                *c,
                Priority::of(9, ARRIVALS_CALLER, n as u32, 500_000),
                "{n}"
            );
        }
        let best_effort = freed.iter().filter(|c| !c.is_critical()).count();
        assert!(
            (60..140).contains(&best_effort),
            "{best_effort} of {}",
            freed.len()
        );
        // Without a share every arrival is critical.
        let mut open = OpenLoop::new(9, config(), shape, 10_000);
        let Arrival::Start { class, .. } = open.on_arrival() else {
            panic!()
        };
        assert!(class.is_critical());
    }

    #[test]
    fn arrivals_never_wait_for_operations_and_drops_are_counted_at_the_cap() {
        // Nothing is ever released (a stalled dependency): arrivals keep coming, the first
        // three take slots 0, 1, 2 and every later one is dropped and counted.
        let shape = RateShape::constant(100.0, ms(10_000));
        let mut open = OpenLoop::new(3, config(), shape, 3);
        let mut started = Vec::new();
        let mut dropped = 0;
        while open.next_arrival().is_some() {
            match open.on_arrival() {
                Arrival::Start { slot, new, .. } => {
                    assert!(new.is_some(), "a first use of a slot carries its session");
                    started.push(slot);
                }
                Arrival::Dropped { .. } => dropped += 1,
            }
        }
        assert_eq!(started, vec![0, 1, 2]);
        assert_eq!(open.dropped(), dropped);
        assert_eq!(open.arrivals(), dropped + 3);
        assert!(open.arrivals() > 900, "{}", open.arrivals());
        assert_eq!(open.in_flight(), 3);
        // A released slot is reused, without a new session.
        open.release(1);
        assert_eq!(open.in_flight(), 2);
        let mut open2 = OpenLoop::new(3, config(), shape, 3);
        let Arrival::Start { slot, .. } = open2.on_arrival() else {
            panic!()
        };
        open2.release(slot);
        let Arrival::Start {
            slot: again, new, ..
        } = open2.on_arrival()
        else {
            panic!()
        };
        assert_eq!((again, new.is_none()), (slot, true));
    }

    #[test]
    fn an_operation_begun_late_counts_from_its_intended_start() {
        let shape = RateShape::constant(10.0, ms(10_000));
        let mut open = OpenLoop::new(5, config(), shape, 4);
        let Arrival::Start {
            start,
            new,
            slot,
            class,
        } = open.on_arrival()
        else {
            panic!()
        };
        let mut s = *new.unwrap();
        assert_eq!(
            s.next_wake(),
            None,
            "an on-demand session waits for a start"
        );
        s.begin(start, class);
        assert_eq!(s.next_wake(), Some(start));
        // The driver gets there 300 ms late: the attempt says when it was due.
        let late = start + ms(300);
        let Wake::Send(a) = s.on_wake(late, &mut Unlimited) else {
            panic!()
        };
        assert_eq!((a.due, a.id.client, a.id.op), (start, slot, 0));
        let strategy =
            Strategy::standard("A", ms(200), ms(2000), BudgetSpec::token_bucket(10.0, 0.1))
                .unwrap();
        let end = s
            .on_result(
                late + ms(40),
                AttemptResult::status(200),
                &strategy,
                &mut Unlimited,
            )
            .unwrap();
        assert_eq!(end.start, start, "latency counts from the intended start");
        assert_eq!(s.next_wake(), None, "no think time, no start of its own");
        assert!(s.is_finished());
        s.begin(start + ms(500), Priority::Critical);
        assert_eq!(s.op_no(), 1);
        assert_eq!(s.next_wake(), Some(start + ms(500)));
    }
}
