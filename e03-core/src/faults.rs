//! Transient faults of E03-A: each request independently fails (503 after its service time) or
//! is answered late (after the worker is freed, so the client times out without the server
//! being busy).
//!
//! The fate of a request is a pure function of the seed and the request's key, so the live
//! service and a simulator give the same request the same fate whatever order requests arrive in.

use std::time::Duration;

use crate::rng::{mix64, unit_hash};

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

/// Bits of [`request_key`]'s attempt field: attempt numbers below 256 (`E03_MAX_ATTEMPTS` is
/// at most 100).
pub const KEY_ATTEMPT_BITS: u32 = 8;
/// Bits of [`request_key`]'s operation field: every `u32` operation number.
pub const KEY_OP_BITS: u32 = 32;
/// Bits of [`request_key`]'s client field: client numbers below 2^23 (`E03_CLIENTS` is at most
/// 100 000). The key's top bit stays free.
pub const KEY_CLIENT_BITS: u32 = 23;

/// A request's key from the identity a client sends (client, operation, attempt).
///
/// Within the fields' ranges (client below 2^23, any operation, attempt below 256; every
/// identity the swarm can send) the key is the three numbers side by side, top bit clear, so
/// distinct identities have distinct keys. An identity outside them (only a hand-made request
/// can carry one) gets a hash of all three with the top bit set: it never shares its key with
/// an in-range identity, and with another out-of-range one only by a 2^-63 chance.
pub fn request_key(client: u32, op: u32, attempt: u32) -> u64 {
    let (client, op, attempt) = (client as u64, op as u64, attempt as u64);
    if client >> KEY_CLIENT_BITS == 0 && attempt >> KEY_ATTEMPT_BITS == 0 {
        (client << (KEY_OP_BITS + KEY_ATTEMPT_BITS)) | (op << KEY_ATTEMPT_BITS) | attempt
    } else {
        let hash = mix64(mix64((client << 32) | op) ^ attempt);
        (1 << 63) | (hash >> 1)
    }
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

    #[test]
    fn out_of_range_identities_no_longer_collide_with_in_range_ones() {
        // With the XOR of overlapping fields these were equal.
        assert_ne!(request_key(0, 1, 0), request_key(0, 0, 256));
        assert_ne!(request_key(0, 0, 0), request_key(1 << 24, 0, 0));
        // Keys of in-range identities are the fields side by side.
        assert_eq!(request_key(3, 2, 1), (3 << 40) | (2 << 8) | 1);
        assert_eq!(request_key(0, 0, 256) >> 63, 1);
        assert_eq!(request_key(1 << 23, 0, 0) >> 63, 1);
        assert_eq!(request_key(99_999, u32::MAX, 100) >> 63, 0);
    }
}
