//! Idempotency (the retry-logic article, issue 12): the dependency's ledger of charges and its store of
//! idempotency keys, and the clients' key policies.
//!
//! `POST /charge` commits a charge when its work is done (after its service time, unless a
//! fault says otherwise, see [`crate::faults::Fate::commits`]). The [`Ledger`] is a pure state
//! machine: the live service and the simulator both call [`Ledger::commit`] when a charge's
//! work completes, and log what it returns. A charge with an `Idempotency-Key` the ledger has
//! already committed is not charged again: the store answers with the first charge's answer (a
//! *replay*). A charge without a key is always committed. Commits are decided one at a time, in
//! the schedule's order, so two attempts of one key can never both be charged.
//!
//! On the client side a strategy's [`KeyPolicy`] says which key an attempt carries: the same
//! key for every attempt of an operation (the right way), a new key per attempt (which makes the
//! key useless), or none.

use std::collections::HashMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The path of a charge on the dependency's work listener.
pub const CHARGE_PATH: &str = "/charge";
/// The header of an idempotency key.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// Longest `Idempotency-Key` the service accepts, in bytes.
pub const MAX_KEY_LEN: usize = 255;

/// Which idempotency key the attempts of a charging strategy carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyPolicy {
    /// One key per operation, made before its first attempt: retries reuse it.
    PerOperation,
    /// A new key for every attempt (the mistake the seed warns about).
    PerAttempt,
    /// No `Idempotency-Key` header at all.
    None,
}

impl KeyPolicy {
    /// The accepted spellings, for error messages.
    pub const ACCEPTS: &'static str = "per_operation, per_attempt or none";

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "per_operation" => Some(KeyPolicy::PerOperation),
            "per_attempt" => Some(KeyPolicy::PerAttempt),
            "none" => Some(KeyPolicy::None),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            KeyPolicy::PerOperation => "per_operation",
            KeyPolicy::PerAttempt => "per_attempt",
            KeyPolicy::None => "none",
        }
    }

    /// The key attempt `attempt` of operation `op` of `client` carries in run seed `seed`.
    /// Keys are unique per run and deterministic (a simulated run and a live one send the same).
    pub fn key(self, seed: u64, client: u32, op: u32, attempt: u32) -> Option<String> {
        match self {
            KeyPolicy::PerOperation => Some(format!("s{seed}-c{client}-o{op}")),
            KeyPolicy::PerAttempt => Some(format!("s{seed}-c{client}-o{op}-a{attempt}")),
            KeyPolicy::None => None,
        }
    }
}

/// Whether `key` is a well-formed `Idempotency-Key` value: 1 to [`MAX_KEY_LEN`] visible ASCII
/// characters (no spaces or control characters).
pub fn valid_key(key: &[u8]) -> bool {
    (1..=MAX_KEY_LEN).contains(&key.len()) && key.iter().all(|b| b.is_ascii_graphic())
}

/// A charge's request as the service received it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ChargeRequest {
    /// The `Idempotency-Key`, if the request had one.
    pub key: Option<String>,
    /// The amount asked (the body's `amount`; 1 without a body).
    pub amount: u64,
    /// The swarm's identity of the attempt (absent for a hand-made request).
    pub client: Option<u32>,
    pub op: Option<u32>,
    pub attempt: Option<u32>,
}

/// One committed charge: a line of the ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Charge {
    /// The ledger's number for it, from 1 in commit order.
    pub charge: u64,
    /// When it was committed, µs after the run's time zero.
    pub t_us: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    pub amount: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
}

/// What [`Ledger::commit`] decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Commit {
    /// A new charge: write it to the ledger, answer 200 with its number.
    Charged(Charge),
    /// The key was committed before: nothing is charged; answer 200 with the first charge's
    /// number (the stored first answer).
    Replayed { charge: u64 },
    /// The key was committed before for another amount: nothing is charged; answer 422.
    KeyReused { charge: u64 },
}

impl Commit {
    /// The HTTP status of the answer.
    pub fn status(&self) -> u16 {
        match self {
            Commit::Charged(_) | Commit::Replayed { .. } => 200,
            Commit::KeyReused { .. } => 422,
        }
    }
}

/// The ledger of one run and its store of keys.
#[derive(Debug, Default)]
pub struct Ledger {
    charges: u64,
    /// Key -> (first charge's number, its amount).
    keys: HashMap<String, (u64, u64)>,
    replays: u64,
}

impl Ledger {
    pub fn new() -> Self {
        Self::default()
    }

    /// The work of `req` is done at `now` and its fate commits it: charge it, or answer a
    /// repeated key with the first charge.
    pub fn commit(&mut self, now: Duration, req: &ChargeRequest) -> Commit {
        if let Some(key) = &req.key {
            if let Some(&(charge, amount)) = self.keys.get(key) {
                self.replays += 1;
                return if amount == req.amount {
                    Commit::Replayed { charge }
                } else {
                    Commit::KeyReused { charge }
                };
            }
        }
        self.charges += 1;
        let charge = Charge {
            charge: self.charges,
            t_us: now.as_micros() as u64,
            key: req.key.clone(),
            amount: req.amount,
            client: req.client,
            op: req.op,
            attempt: req.attempt,
        };
        if let Some(key) = &req.key {
            self.keys.insert(key.clone(), (charge.charge, req.amount));
        }
        Commit::Charged(charge)
    }

    /// Charges committed so far.
    pub fn charges(&self) -> u64 {
        self.charges
    }

    /// Commits answered from the key store (nothing charged).
    pub fn replays(&self) -> u64 {
        self.replays
    }
}

/// Duplicate charges in a ledger: for every operation (client, op) charged more than once, the
/// charges beyond its first. Charges without an identity are not counted.
pub fn duplicate_charges<'a>(charges: impl IntoIterator<Item = &'a Charge>) -> u64 {
    let mut per_op: HashMap<(u32, u32), u64> = HashMap::new();
    for c in charges {
        if let (Some(client), Some(op)) = (c.client, c.op) {
            *per_op.entry((client, op)).or_default() += 1;
        }
    }
    per_op.values().map(|n| n - 1).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(key: Option<&str>, op: u32, attempt: u32) -> ChargeRequest {
        ChargeRequest {
            key: key.map(str::to_string),
            amount: 5,
            client: Some(1),
            op: Some(op),
            attempt: Some(attempt),
        }
    }

    #[test]
    fn a_repeated_key_is_answered_with_the_first_charge_and_not_charged_again() {
        let mut l = Ledger::new();
        let t = Duration::from_millis(3);
        let first = l.commit(t, &req(Some("k"), 0, 1));
        let Commit::Charged(c) = &first else {
            panic!("{first:?}")
        };
        assert_eq!((c.charge, c.t_us, c.attempt), (1, 3000, Some(1)));
        assert_eq!(
            l.commit(t, &req(Some("k"), 0, 2)),
            Commit::Replayed { charge: 1 }
        );
        assert_eq!(l.commit(t, &req(Some("k"), 0, 3)).status(), 200);
        assert_eq!((l.charges(), l.replays()), (1, 2));
        // Another key is another charge.
        assert!(matches!(
            l.commit(t, &req(Some("other"), 1, 1)),
            Commit::Charged(Charge { charge: 2, .. })
        ));
    }

    #[test]
    fn no_key_is_always_charged_and_a_reused_key_with_another_amount_is_422() {
        let mut l = Ledger::new();
        let t = Duration::ZERO;
        assert!(matches!(l.commit(t, &req(None, 0, 1)), Commit::Charged(_)));
        assert!(matches!(l.commit(t, &req(None, 0, 2)), Commit::Charged(_)));
        assert_eq!(l.charges(), 2);
        l.commit(t, &req(Some("k"), 1, 1));
        let mut other = req(Some("k"), 1, 2);
        other.amount = 6;
        let c = l.commit(t, &other);
        assert_eq!(
            (c.clone(), c.status()),
            (Commit::KeyReused { charge: 3 }, 422)
        );
        assert_eq!(l.charges(), 3);
    }

    #[test]
    fn key_policies_make_the_keys_they_promise() {
        let per_op = KeyPolicy::PerOperation;
        assert_eq!(per_op.key(4, 1, 2, 1), per_op.key(4, 1, 2, 3));
        assert_ne!(per_op.key(4, 1, 2, 1), per_op.key(4, 1, 3, 1));
        let per_attempt = KeyPolicy::PerAttempt;
        assert_ne!(per_attempt.key(4, 1, 2, 1), per_attempt.key(4, 1, 2, 2));
        assert_eq!(KeyPolicy::None.key(4, 1, 2, 1), None);
        for p in [per_op, per_attempt, KeyPolicy::None] {
            assert_eq!(KeyPolicy::parse(p.name()), Some(p));
            if let Some(k) = p.key(u64::MAX, u32::MAX, u32::MAX, 100) {
                assert!(valid_key(k.as_bytes()), "{k}");
            }
        }
        assert_eq!(KeyPolicy::parse("per-op"), None);
    }

    #[test]
    fn malformed_keys_are_refused() {
        assert!(valid_key(b"s4-c1-o2"));
        assert!(!valid_key(b""));
        assert!(!valid_key(b"has space"));
        assert!(!valid_key(b"tab\there"));
        assert!(!valid_key("caf\u{e9}".as_bytes()));
        assert!(valid_key(&[b'a'; MAX_KEY_LEN]));
        assert!(!valid_key(&[b'a'; MAX_KEY_LEN + 1]));
    }

    #[test]
    fn duplicates_are_the_charges_beyond_the_first_of_each_operation() {
        let mut l = Ledger::new();
        let t = Duration::ZERO;
        let mut ledger = Vec::new();
        for (op, attempt) in [(0, 1), (0, 2), (0, 3), (1, 1), (2, 1), (2, 2)] {
            if let Commit::Charged(c) = l.commit(t, &req(None, op, attempt)) {
                ledger.push(c);
            }
        }
        assert_eq!(duplicate_charges(&ledger), 3);
        let mut l = Ledger::new();
        let keyed: Vec<Charge> = [(0, 1), (0, 2), (1, 1)]
            .into_iter()
            .filter_map(
                |(op, a)| match l.commit(t, &req(Some(&format!("o{op}")), op, a)) {
                    Commit::Charged(c) => Some(c),
                    _ => None,
                },
            )
            .collect();
        assert_eq!(duplicate_charges(&keyed), 0);
    }
}
