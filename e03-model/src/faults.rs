//! Transient faults of E03-A: each request independently fails (503 after its service time) or
//! is answered late (after the worker is freed, so the client times out without the server
//! being busy).
//!
//! Two more request-level faults (the retry-logic article, issue 12): a *lost response* (the work is done and
//! committed, then the connection is reset before the answer goes out) and a *permanent error*
//! (400, 404, 409 or 422: the request itself is wrong, so every attempt of the same operation
//! gets the same answer).
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
    /// Probability in [0, 1] that a request's work is done and committed but its answer is
    /// lost (the connection is reset). Drawn per attempt, after `fail_rate` and `slow_rate`.
    #[serde(default)]
    pub lost_rate: f64,
    /// Probability in [0, 1] that an *operation* is wrong in itself: every attempt of it is
    /// answered with the same permanent status (one of [`PERMANENT_STATUSES`]) after its service
    /// time, and nothing is committed. Drawn per operation (client and op), before the others.
    #[serde(default)]
    pub permanent_rate: f64,
    /// Probability in [0, 1] that an admitted request times out before any output (the rate-limit article):
    /// answered [`TIMEOUT_STATUS`] after its service time; its input tokens are paid. Drawn per
    /// attempt, only for a request whose other fate is `Ok`, from its own stream.
    #[serde(default)]
    pub timeout_rate: f64,
    /// Probability in [0, 1] that an admitted request's output is cut off (the rate-limit article): answered
    /// [`CUTOFF_STATUS`] after its service time; its input and one output token are paid. Drawn
    /// like `timeout_rate`, after it.
    #[serde(default)]
    pub cutoff_rate: f64,
    /// Token accounting (the rate-limit article): the input tokens every request pays once admitted; 0 means
    /// no accounting (no `cost` is logged).
    #[serde(default)]
    pub input_tokens: u32,
    /// The output tokens of a complete answer.
    #[serde(default)]
    pub output_tokens: u32,
    /// Probability in [0, 1] that a request is in the heavy tail: its work takes `tail_factor`
    /// service times (its worker is busy that long, unlike a slow answer's). Drawn per attempt,
    /// from its own stream, so it moves no other fate (issue "Hedging and adaptive clients":
    /// "The Tail at Scale", Dean and Barroso, CACM 2013, where one request in a hundred is
    /// slow).
    #[serde(default)]
    pub tail_rate: f64,
    /// How many service times a request of the tail takes (more than 1).
    #[serde(default)]
    pub tail_factor: f64,
}

/// Status of a request that timed out before any output (the rate-limit article).
pub const TIMEOUT_STATUS: u16 = 504;
/// Status of a request whose output was cut off (the rate-limit article).
pub const CUTOFF_STATUS: u16 = 502;

/// Salt of the request-level content faults' draw (timeout, cut-off output), so it is
/// independent of the E03 draw and leaves E03's fates unchanged.
const CONTENT_SALT: u64 = 0x636f_6e74_656e_7421;

/// Salt of the heavy tail's draw, independent of every other fate.
const TAIL_SALT: u64 = 0x7461_696c_2d74_6169;

/// The statuses of a permanent error, drawn evenly per operation.
pub const PERMANENT_STATUSES: [u16; 4] = [400, 404, 409, 422];

/// Salt of the permanent-error draw, so it is independent of the per-attempt draw.
const PERMANENT_SALT: u64 = 0x7065_726d_616e_656e;

/// What happens to a request once its work is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    Ok,
    /// Answered 503 right after its service time.
    Fail,
    /// Answered 200, but only after the given extra delay.
    Slow(Duration),
    /// The work is done and committed, but the answer is lost: the connection is reset.
    Lost,
    /// The request is wrong in itself: answered with this permanent status, nothing committed.
    Permanent(u16),
    /// Timed out before any output (the rate-limit article): answered [`TIMEOUT_STATUS`], input paid.
    Timeout,
    /// Output cut off (the rate-limit article): answered [`CUTOFF_STATUS`], input and one output token paid.
    Cutoff,
}

impl Fate {
    /// Whether the request's work is committed (a charge is recorded) when it completes.
    pub fn commits(self) -> bool {
        matches!(self, Fate::Ok | Fate::Slow(_) | Fate::Lost)
    }
}

impl FaultModel {
    pub fn fate(&self, seed: u64, key: u64) -> Fate {
        if self.permanent_rate > 0.0 {
            let op = operation_key(key);
            if unit_hash(seed ^ PERMANENT_SALT, op) < self.permanent_rate {
                let pick =
                    mix64(seed ^ PERMANENT_SALT ^ mix64(op)) % PERMANENT_STATUSES.len() as u64;
                return Fate::Permanent(PERMANENT_STATUSES[pick as usize]);
            }
        }
        if self.fail_rate <= 0.0 && self.slow_rate <= 0.0 && self.lost_rate <= 0.0 {
            return self.content_fate(seed, key);
        }
        // The E03-A draw is unchanged by the new faults: `lost_rate` takes the slice after them.
        let u = unit_hash(seed, key);
        if u < self.fail_rate {
            Fate::Fail
        } else if u < self.fail_rate + self.slow_rate {
            Fate::Slow(self.slow_delay)
        } else if u < self.fail_rate + self.slow_rate + self.lost_rate {
            Fate::Lost
        } else {
            self.content_fate(seed, key)
        }
    }

    /// The rate-limit article's content faults of a request whose E03 fate is `Ok`: a timeout before output
    /// with `timeout_rate`, else a cut-off output with `cutoff_rate` (two draws, as the seed's
    /// endpoint makes them). No draw at all when both rates are zero.
    fn content_fate(&self, seed: u64, key: u64) -> Fate {
        if self.timeout_rate <= 0.0 && self.cutoff_rate <= 0.0 {
            return Fate::Ok;
        }
        if unit_hash(seed ^ CONTENT_SALT, key) < self.timeout_rate {
            return Fate::Timeout;
        }
        if unit_hash(seed ^ CONTENT_SALT ^ 0x5a5a, key) < self.cutoff_rate {
            return Fate::Cutoff;
        }
        Fate::Ok
    }

    /// The tokens an answer of this `cause` costs (the rate-limit article), or `None` without token
    /// accounting (`input_tokens` 0). A rejection (429) and every answer without work cost 0; a
    /// timeout pays the input; a cut-off output the input and one output token; a complete
    /// answer (also a late or lost one: the work was done) the input and the output.
    pub fn cost(&self, cause: crate::cause::Cause) -> Option<u32> {
        use crate::cause::Cause;
        if self.input_tokens == 0 {
            return None;
        }
        Some(match cause {
            Cause::Ok | Cause::Slow | Cause::Lost => self.input_tokens + self.output_tokens,
            Cause::Timeout => self.input_tokens,
            Cause::Cutoff => self.input_tokens + 1,
            Cause::RateLimited
            | Cause::Fault
            | Cause::Full
            | Cause::QueueTimeout
            | Cause::Limited
            | Cause::Shed
            | Cause::Deadline
            | Cause::Freeze
            | Cause::Down
            | Cause::Permanent
            | Cause::Injected
            | Cause::Unreachable => 0,
            // A proxy's upstream keeps its own accounts.
            Cause::Upstream => 0,
        })
    }

    /// How many service times request `key`'s work takes: `tail_factor` when it is in the
    /// heavy tail (probability `tail_rate`), else 1. No draw when `tail_rate` is 0.
    pub fn service_factor(&self, seed: u64, key: u64) -> f64 {
        if self.tail_rate > 0.0 && unit_hash(seed ^ TAIL_SALT, key) < self.tail_rate {
            self.tail_factor
        } else {
            1.0
        }
    }

    /// The mean of [`FaultModel::service_factor`] over requests: `1 + tail_rate x
    /// (tail_factor - 1)`.
    pub fn mean_service_factor(&self) -> f64 {
        if self.tail_rate > 0.0 {
            1.0 + self.tail_rate * (self.tail_factor - 1.0)
        } else {
            1.0
        }
    }

    /// Whether any fault can happen.
    pub fn is_none(&self) -> bool {
        self.fail_rate <= 0.0
            && self.slow_rate <= 0.0
            && self.lost_rate <= 0.0
            && self.permanent_rate <= 0.0
            && self.timeout_rate <= 0.0
            && self.cutoff_rate <= 0.0
            && self.tail_rate <= 0.0
    }
}

/// The key of a request's operation: its [`request_key`] with the attempt field cleared (for an
/// in-range identity; an out-of-range key is its own operation).
pub fn operation_key(key: u64) -> u64 {
    if key >> 63 == 0 {
        key & !((1 << KEY_ATTEMPT_BITS) - 1)
    } else {
        key
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
            ..FaultModel::default()
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
    fn the_heavy_tail_takes_its_share_per_request_and_moves_no_fate() {
        let e03a = FaultModel {
            fail_rate: 0.05,
            slow_rate: 0.01,
            slow_delay: Duration::from_millis(2500),
            ..FaultModel::default()
        };
        let tailed = FaultModel {
            tail_rate: 0.01,
            tail_factor: 100.0,
            ..e03a
        };
        let n = 100_000u64;
        let mut tail = 0;
        for k in 0..n {
            assert_eq!(tailed.fate(3, k), e03a.fate(3, k), "fate of {k} moved");
            assert_eq!(e03a.service_factor(3, k), 1.0);
            match tailed.service_factor(3, k) {
                1.0 => {}
                100.0 => tail += 1,
                other => panic!("factor {other}"),
            }
        }
        assert!((900..1100).contains(&tail), "{tail}");
        // Per request, not per operation: the attempts of one operation draw apart.
        let attempts: std::collections::HashSet<u64> = (0..200)
            .map(|a| tailed.service_factor(3, request_key(9, 9, a)) as u64)
            .collect();
        assert_eq!(attempts.len(), 2);
        // The mean by hand: 1 + 0.01 x 99 = 1.99.
        assert!((tailed.mean_service_factor() - 1.99).abs() < 1e-12);
        assert_eq!(e03a.mean_service_factor(), 1.0);
        assert!(!tailed.is_none());
    }

    #[test]
    fn lost_responses_take_their_own_share_and_leave_e03a_fates_alone() {
        let e03a = FaultModel {
            fail_rate: 0.05,
            slow_rate: 0.01,
            slow_delay: Duration::from_millis(2500),
            ..FaultModel::default()
        };
        let with_lost = FaultModel {
            lost_rate: 0.1,
            ..e03a
        };
        let n = 100_000u64;
        let mut lost = 0;
        for k in 0..n {
            match with_lost.fate(7, k) {
                Fate::Lost => {
                    lost += 1;
                    assert_eq!(e03a.fate(7, k), Fate::Ok, "a lost fate was an Ok one");
                }
                other => assert_eq!(other, e03a.fate(7, k), "E03-A fate of {k} moved"),
            }
        }
        assert!((9_500..10_500).contains(&lost), "{lost}");
        assert!(Fate::Lost.commits() && Fate::Ok.commits());
        assert!(!Fate::Fail.commits() && !Fate::Permanent(404).commits());
    }

    #[test]
    fn permanent_errors_are_drawn_per_operation_with_the_four_statuses() {
        let f = FaultModel {
            permanent_rate: 0.2,
            fail_rate: 0.3,
            ..FaultModel::default()
        };
        let mut statuses = std::collections::BTreeMap::new();
        let mut permanent_ops = 0;
        for client in 0..50u32 {
            for op in 0..200u32 {
                let first = f.fate(4, request_key(client, op, 1));
                for attempt in 2..=4 {
                    let later = f.fate(4, request_key(client, op, attempt));
                    match first {
                        // Every attempt of a permanently wrong operation gets the same status.
                        Fate::Permanent(_) => assert_eq!(later, first),
                        _ => assert!(!matches!(later, Fate::Permanent(_))),
                    }
                }
                if let Fate::Permanent(s) = first {
                    permanent_ops += 1;
                    *statuses.entry(s).or_insert(0) += 1;
                }
            }
        }
        assert!((1_800..2_200).contains(&permanent_ops), "{permanent_ops}");
        assert_eq!(
            statuses.keys().copied().collect::<Vec<_>>(),
            PERMANENT_STATUSES.to_vec()
        );
        assert!(statuses.values().all(|&c| c > 350), "{statuses:?}");
        assert!(FaultModel::default().is_none() && !f.is_none());
    }

    #[test]
    fn content_faults_take_only_ok_fates_and_cost_what_the_seed_says() {
        use crate::events::Cause;
        let e03a = FaultModel {
            fail_rate: 0.05,
            slow_rate: 0.01,
            slow_delay: Duration::from_millis(2500),
            ..FaultModel::default()
        };
        let seed002 = FaultModel {
            timeout_rate: 0.06,
            cutoff_rate: 0.09,
            input_tokens: 45,
            output_tokens: 2,
            ..e03a
        };
        let n = 100_000u64;
        let (mut timeouts, mut cutoffs) = (0, 0);
        for k in 0..n {
            match seed002.fate(3, k) {
                f @ (Fate::Timeout | Fate::Cutoff) => {
                    assert_eq!(
                        e03a.fate(3, k),
                        Fate::Ok,
                        "a content fault took a non-Ok fate"
                    );
                    if f == Fate::Timeout {
                        timeouts += 1
                    } else {
                        cutoffs += 1
                    }
                }
                other => assert_eq!(other, e03a.fate(3, k), "E03-A fate of {k} moved"),
            }
        }
        // 94% Ok fates: 6% of them time out, 9% of the rest are cut off.
        assert!((5_300..6_000).contains(&timeouts), "{timeouts}");
        assert!((7_600..8_300).contains(&cutoffs), "{cutoffs}");
        assert_eq!(seed002.cost(Cause::Ok), Some(47));
        assert_eq!(seed002.cost(Cause::Timeout), Some(45));
        assert_eq!(seed002.cost(Cause::Cutoff), Some(46));
        assert_eq!(seed002.cost(Cause::RateLimited), Some(0));
        assert_eq!(
            e03a.cost(Cause::Ok),
            None,
            "no accounting without input tokens"
        );
        assert!(!seed002.is_none());
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
