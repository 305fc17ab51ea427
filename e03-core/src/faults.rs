//! Transient faults of E03-A: each request independently fails (503 after its service time) or
//! is answered late (after the worker is freed, so the client times out without the server
//! being busy).
//!
//! The fate of a request is a pure function of the seed and the request's key, so the live
//! service and a simulator give the same request the same fate whatever order requests arrive in.

use std::time::Duration;

use crate::rng::unit_hash;

/// Probabilities and delay of E03-A's faults. All zero means no transient faults (E03-B).
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct FaultModel {
    /// Probability in [0, 1] that a request is answered 503 after its service time.
    pub fail_rate: f64,
    /// Probability in [0, 1] that a request's answer is delayed by `slow_delay`.
    pub slow_rate: f64,
    /// Extra delay of a slow answer, counted from the moment its worker is freed.
    pub slow_delay: Duration,
}

/// What happens to a request once its work is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    Ok,
    /// Answered 503 right after its service time.
    Fail,
    /// Answered 200, but only after the given extra delay.
    Slow(Duration),
}

impl FaultModel {
    pub fn fate(&self, seed: u64, key: u64) -> Fate {
        if self.fail_rate <= 0.0 && self.slow_rate <= 0.0 {
            return Fate::Ok;
        }
        let u = unit_hash(seed, key);
        if u < self.fail_rate {
            Fate::Fail
        } else if u < self.fail_rate + self.slow_rate {
            Fate::Slow(self.slow_delay)
        } else {
            Fate::Ok
        }
    }
}

/// A request's key from the identity a client sends (client, operation, attempt).
pub fn request_key(client: u32, op: u32, attempt: u32) -> u64 {
    ((client as u64) << 40) ^ ((op as u64) << 8) ^ attempt as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_faults_means_every_request_is_ok() {
        let f = FaultModel::default();
        assert!((0..1000).all(|k| f.fate(42, k) == Fate::Ok));
    }

    #[test]
    fn fault_rates_are_respected_and_deterministic() {
        let f = FaultModel {
            fail_rate: 0.05,
            slow_rate: 0.01,
            slow_delay: Duration::from_millis(2500),
        };
        let n = 100_000u64;
        let fails = (0..n).filter(|k| f.fate(42, *k) == Fate::Fail).count();
        let slows = (0..n)
            .filter(|k| matches!(f.fate(42, *k), Fate::Slow(d) if d == Duration::from_millis(2500)))
            .count();
        assert!((4500..5500).contains(&fails), "{fails}");
        assert!((800..1200).contains(&slows), "{slows}");
        assert_eq!(f.fate(42, 17), f.fate(42, 17));
    }

    #[test]
    fn request_keys_differ_by_attempt_and_client() {
        assert_ne!(request_key(1, 0, 1), request_key(1, 0, 2));
        assert_ne!(request_key(1, 0, 1), request_key(2, 0, 1));
        assert_ne!(request_key(1, 1, 1), request_key(1, 2, 1));
    }
}
