//! Shards: a run's clients split over N swarm processes (issue "The lab on an orchestrator",
//! item 1). Shard `I/N` runs clients `I, I + N, I + 2N, ...`: the split k6-operator makes
//! with equal execution segments, by client. Every random draw of a session is keyed by its
//! client ([`crate::rng::stream`]), so the union of the N shards makes the same decisions as
//! one process would (the dependency sees the same traffic, up to timing), and attempt and
//! operation ids stay unique across shards.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The most shards of one run.
pub const MAX_SHARDS: u32 = 1024;

/// Shard `index` of `count` (`index` from 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl Shard {
    /// The whole run in one process.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// Shard `index` of `count`, if `index < count <= MAX_SHARDS`.
    pub fn new(index: u32, count: u32) -> Option<Shard> {
        ((1..=MAX_SHARDS).contains(&count) && index < count).then_some(Shard { index, count })
    }

    /// The shard rule, once for the swarm's shards, a budget per shard
    /// ([`crate::policy::BudgetScope::Shard`]) and the metrics: client `client`'s shard among
    /// `count` (0 when `count` is 0).
    pub fn index_of(client: u32, count: u32) -> u32 {
        client % count.max(1)
    }

    /// Whether client `client` is this shard's.
    pub fn has(&self, client: u32) -> bool {
        Shard::index_of(client, self.count) == self.index
    }

    /// This shard's clients among clients `0..n`, in order.
    pub fn clients(&self, n: u32) -> impl Iterator<Item = u32> {
        (self.index..n).step_by(self.count as usize)
    }

    /// Whether this is the whole run.
    pub fn is_whole(&self) -> bool {
        self.count == 1
    }
}

impl fmt::Display for Shard {
    /// `I/N`, as `--shard` takes it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// A shard as written (`--shard`, `E03_SHARD`) that is not one; the text says what it accepts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{given:?}: expected I/N, shard I of N counted from 0 (0/4 to 3/4 for four), or slot S/N \
     counted from 1 (slot 1/4 to slot 4/4), N from 1 to {MAX_SHARDS}"
)]
pub struct ShardError {
    /// The text given.
    pub given: String,
}

impl FromStr for Shard {
    type Err = ShardError;

    /// `I/N`: shard `I` (from 0) of `N` (1 to [`MAX_SHARDS`]); or `slot S/N`, the slot `S`
    /// counted from 1 (shard `S - 1`), as Docker Swarm mode numbers a service's tasks
    /// (`{{.Task.Slot}}`). The message says what it accepts.
    fn from_str(s: &str) -> Result<Shard, ShardError> {
        let bad = || ShardError {
            given: s.to_string(),
        };
        let text = s.trim();
        let (slot, text) = match text.strip_prefix("slot") {
            Some(rest) => (true, rest.trim()),
            None => (false, text),
        };
        let (i, n) = text.split_once('/').ok_or_else(bad)?;
        let (i, n) = (
            i.trim().parse::<u32>().map_err(|_| bad())?,
            n.trim().parse::<u32>().map_err(|_| bad())?,
        );
        let i = if slot {
            i.checked_sub(1).ok_or_else(bad)?
        } else {
            i
        };
        Shard::new(i, n).ok_or_else(bad)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shard rule by hand: client 7 of 3 shards is shard 1, as its budget holder is; no
    /// shard count is one shard.
    #[test]
    fn the_shard_rule_by_hand() {
        assert_eq!(Shard::index_of(7, 3), 1);
        assert_eq!(Shard::index_of(7, 0), 0);
        assert!(Shard::new(1, 3).unwrap().has(7));
        assert_eq!(crate::policy::BudgetScope::Shard.holder(7, 3), 1);
        assert_eq!(crate::balancer::partition_of(7, 3), 1);
        assert_eq!(crate::balancer::partition_of(5, 0), 0);
        // The fan-out rule: 1 success and 1 fallback meet a quorum of 2, 1 success alone not.
        assert!(crate::workload::quorum_met(1, 1, 2) && !crate::workload::quorum_met(1, 0, 2));
    }

    #[test]
    fn shard_i_of_n_runs_clients_i_i_plus_n_and_so_on() {
        let s: Shard = "1/4".parse().unwrap();
        assert_eq!(s, Shard { index: 1, count: 4 });
        assert_eq!(s.clients(10).collect::<Vec<_>>(), [1, 5, 9]);
        assert!(s.has(5) && !s.has(4));
        assert_eq!(s.to_string(), "1/4");
        // The shards of a run cover every client once.
        let mut all: Vec<u32> = (0..4)
            .flat_map(|i| Shard::new(i, 4).unwrap().clients(10))
            .collect();
        all.sort();
        assert_eq!(all, (0..10).collect::<Vec<_>>());
        assert_eq!(Shard::WHOLE.clients(3).collect::<Vec<_>>(), [0, 1, 2]);
    }

    #[test]
    fn a_bad_shard_says_what_it_accepts() {
        for bad in ["4/4", "1", "a/4", "0/0", "-1/4", "0/2000"] {
            let e = bad.parse::<Shard>().unwrap_err().to_string();
            assert!(e.contains("expected I/N"), "{bad}: {e}");
        }
        assert_eq!(
            " 0 / 2 ".parse::<Shard>().unwrap(),
            Shard::new(0, 2).unwrap()
        );
        // Docker Swarm mode's task slots count from 1.
        assert_eq!(
            "slot 1/4".parse::<Shard>().unwrap(),
            Shard::new(0, 4).unwrap()
        );
        assert_eq!(
            "slot 4/4".parse::<Shard>().unwrap(),
            Shard::new(3, 4).unwrap()
        );
        for bad in ["slot 0/4", "slot 5/4", "slot"] {
            let e = bad.parse::<Shard>().unwrap_err().to_string();
            assert!(e.contains("slot S/N"), "{bad}: {e}");
        }
    }
}
