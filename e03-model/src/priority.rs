//! Priority classes: which operations a dependency may shed first (issue 24). After the reliability-patterns article's
//! load shedding, which takes Stripe's example: part of the fleet is kept for critical requests,
//! and under overload the least important traffic (test mode there, the bookstore's
//! recommendations here) is dropped first. The dependency's side of it is
//! [`crate::dependency::AdmissionRule::Priority`].
//!
//! Each operation has a class, drawn once per operation as a pure function ([`Priority::of`])
//! of the run's seed, the client and the operation's number (the open loop: of its arrival's
//! number, see [`crate::arrivals`]). It uses no random stream, so giving a workload classes
//! moves no other draw; every strategy and both drivers see the same classes, and every attempt
//! of one operation carries its class. A caller sends a best-effort attempt's class in [`PRIORITY_HEADER`]; a
//! request without it is critical.

use serde::{Deserialize, Serialize};

use crate::rng::unit_hash;

/// The request header that carries an attempt's class: `critical` or `best_effort`.
pub const PRIORITY_HEADER: &str = "x-e03-priority";

/// What `E03_BEST_EFFORT_SHARE` and a priority header speak of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    /// Kept while anything is served (the default: a request that says nothing is critical).
    #[default]
    Critical,
    /// Shed first under priority admission.
    BestEffort,
}

/// Salt of the class draw, so that it shares no value with the fault fates' draws.
const CLASS_SALT: u64 = 0x00C1_A55E_5EED;

impl Priority {
    /// What [`PRIORITY_HEADER`] accepts.
    pub const ACCEPTS: &'static str = "critical or best_effort";

    pub fn as_str(self) -> &'static str {
        match self {
            Priority::Critical => "critical",
            Priority::BestEffort => "best_effort",
        }
    }

    pub fn parse(s: &str) -> Option<Priority> {
        match s {
            "critical" => Some(Priority::Critical),
            "best_effort" => Some(Priority::BestEffort),
            _ => None,
        }
    }

    pub fn is_critical(&self) -> bool {
        *self == Priority::Critical
    }

    /// The class of operation `op` of `client` in a run with this seed, when a share of
    /// `best_effort_ppm` parts per million of the operations is best effort: best effort when
    /// a uniform value in [0, 1), a pure function of the three, is below the share.
    pub fn of(seed: u64, client: u32, op: u32, best_effort_ppm: u32) -> Priority {
        if best_effort_ppm == 0 {
            return Priority::Critical;
        }
        let key = ((client as u64) << 32) | op as u64;
        if unit_hash(seed ^ CLASS_SALT, key) * 1e6 < best_effort_ppm as f64 {
            Priority::BestEffort
        } else {
            Priority::Critical
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_nothing_else_parses() {
        for p in [Priority::Critical, Priority::BestEffort] {
            assert_eq!(Priority::parse(p.as_str()), Some(p));
            assert_eq!(
                serde_json::to_string(&p).unwrap(),
                format!("\"{}\"", p.as_str())
            );
        }
        for bad in ["", "Critical", "best-effort", "low"] {
            assert_eq!(Priority::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_draw_is_a_pure_function_that_keeps_the_share() {
        assert!((0..1000).all(|op| Priority::of(42, 3, op, 0).is_critical()));
        assert!((0..1000).all(|op| !Priority::of(42, 3, op, 1_000_000).is_critical()));
        let best_effort = |seed| {
            (0..20_000)
                .filter(|&op| Priority::of(seed, op % 7, op, 500_000) == Priority::BestEffort)
                .count()
        };
        // Half of 20,000, within a generous statistical margin; the same seed, the same draws.
        assert!(
            (9_600..10_400).contains(&best_effort(42)),
            "{}",
            best_effort(42)
        );
        assert_eq!(best_effort(42), best_effort(42));
        assert_ne!(
            (0..64)
                .map(|op| Priority::of(1, 0, op, 500_000))
                .collect::<Vec<_>>(),
            (0..64)
                .map(|op| Priority::of(2, 0, op, 500_000))
                .collect::<Vec<_>>()
        );
    }
}
