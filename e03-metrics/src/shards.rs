//! The figures of each shard of a run split over swarm processes (docs/shards.md): the attempts
//! it sent, how late it sent them, and whether each arrived. A shard's attempts are matched by
//! identity against the arrivals of its own clients (client `c` is shard `c mod N`'s), in the
//! same fixed memory as the whole run's matching ([`crate::matching`]).

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use e03_model::events::{Arrival, Attempt, AttemptEnd};
use e03_model::shard::Shard;

use crate::matching::IdentitySketch;
use crate::quantiles::{histogram, quantile_ms};

/// One shard's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardFigures {
    pub shard: Shard,
    /// Attempts the shard sent (not those a policy layer refused before sending).
    pub sent: u64,
    /// Arrivals at the dependency from the shard's clients.
    pub arrived: u64,
    /// Sent attempts with no arrival of the same identity, and arrivals of its clients with no
    /// attempt of the same identity.
    pub unmatched_client: u64,
    pub unmatched_server: u64,
    /// Sent attempts cancelled by a hedged operation's end: each may be missing at the
    /// dependency.
    pub cancelled: u64,
    /// Send lateness (sent - due) at p99, ms.
    pub send_late_p99_ms: f64,
}

impl ShardFigures {
    /// Every attempt the shard sent arrived (but cancelled ones, which may not), and every
    /// arrival of its clients is one of its attempts.
    pub fn matched(&self) -> bool {
        self.unmatched_client <= self.cancelled && self.unmatched_server == 0
    }
}

/// What one shard's log and its clients' arrivals add up to so far.
struct Tally {
    sent: u64,
    arrived: u64,
    cancelled: u64,
    lateness: Histogram<u64>,
    sketch: IdentitySketch,
}

/// The per-shard figures of one run, fed as its logs stream by.
pub struct ShardTally {
    count: u32,
    tallies: Vec<Tally>,
}

impl ShardTally {
    /// The tally of a run split over `count` shards.
    pub fn new(count: u32) -> Self {
        ShardTally {
            count: count.max(1),
            tallies: (0..count.max(1))
                .map(|_| Tally {
                    sent: 0,
                    arrived: 0,
                    cancelled: 0,
                    lateness: histogram(),
                    sketch: IdentitySketch::default(),
                })
                .collect(),
        }
    }

    /// An attempt in shard `index`'s log.
    pub fn attempt(&mut self, index: u32, a: &Attempt) {
        let Some(t) = self.tallies.get_mut(index as usize) else {
            return;
        };
        if a.end == AttemptEnd::FailedFast {
            return;
        }
        t.sent += 1;
        t.cancelled += u64::from(a.end == AttemptEnd::Cancelled);
        t.lateness
            .saturating_record(a.sent_us.saturating_sub(a.due_us));
        t.sketch.client(a.client, a.op, a.attempt);
    }

    /// An arrival in the dependency's log: its client's shard's.
    pub fn arrival(&mut self, a: &Arrival) {
        let (Some(client), Some(op), Some(attempt)) = (a.client, a.op, a.attempt) else {
            return;
        };
        let t = &mut self.tallies[e03_model::shard::Shard::index_of(client, self.count) as usize];
        t.arrived += 1;
        t.sketch.server(client, op, attempt);
    }

    /// Every shard's figures, shard 0 first.
    pub fn finish(self) -> Vec<ShardFigures> {
        let count = self.count;
        self.tallies
            .into_iter()
            .enumerate()
            .map(|(i, t)| {
                let d = t.sketch.difference();
                ShardFigures {
                    shard: Shard::new(i as u32, count).expect("i < count"),
                    sent: t.sent,
                    arrived: t.arrived,
                    unmatched_client: d.client_only,
                    unmatched_server: d.server_only,
                    cancelled: t.cancelled,
                    send_late_p99_ms: quantile_ms(&t.lateness, 0.99),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use e03_model::events::RunTag;

    fn tag() -> RunTag {
        RunTag {
            run: "r".into(),
            seed: 1,
            strategy: "C".into(),
        }
    }

    fn attempt(client: u32, op: u32, due_us: u64, sent_us: u64, end: AttemptEnd) -> Attempt {
        Attempt {
            tag: tag(),
            client,
            op,
            attempt: 1,
            due_us,
            sent_us,
            end_us: sent_us + 10,
            end,
            status: Some(200),
            rejection: None,
            flow: None,
            step: None,
            retry_after_us: None,
        }
    }

    fn arrival(client: u32, op: u32) -> Arrival {
        Arrival {
            tag: tag(),
            seq: 0,
            t_us: 0,
            client: Some(client),
            op: Some(op),
            attempt: Some(1),
            class: Default::default(),
        }
    }

    /// Two shards: shard 0 (clients 0, 2) sent two attempts that arrived; shard 1 (client 1)
    /// sent one that never arrived, and a refused one that does not count. Lateness: 1 and
    /// 3 ms in shard 0, so its p99 is 3 ms (hdrhistogram's 3-digit precision).
    #[test]
    fn each_shard_is_matched_against_its_own_clients_arrivals() {
        let mut t = ShardTally::new(2);
        t.attempt(0, &attempt(0, 0, 0, 1000, AttemptEnd::Status));
        t.attempt(0, &attempt(2, 0, 0, 3000, AttemptEnd::Status));
        t.attempt(1, &attempt(1, 0, 0, 0, AttemptEnd::Timeout));
        t.attempt(1, &attempt(1, 1, 0, 0, AttemptEnd::FailedFast));
        t.arrival(&arrival(0, 0));
        t.arrival(&arrival(2, 0));
        let f = t.finish();
        assert_eq!((f[0].sent, f[0].arrived, f[0].matched()), (2, 2, true));
        assert!(
            (f[0].send_late_p99_ms - 3.0).abs() < 0.01,
            "{}",
            f[0].send_late_p99_ms
        );
        assert_eq!((f[1].sent, f[1].arrived, f[1].unmatched_client), (1, 0, 1));
        assert!(!f[1].matched());
        assert_eq!(f[1].shard, Shard::new(1, 2).unwrap());
    }
}
