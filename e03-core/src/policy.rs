//! A strategy's shared policy state: its retry budget (or throttle), its circuit breaker and
//! its client-side concurrency limit, one for all the clients of a strategy, as one library
//! instance is shared by a service's callers. Both drivers hold one [`ClientPolicy`] per strategy and pass it to the sessions.

use std::time::Duration;

use crate::adaptive::ClientRateLimiter;
use crate::breaker::{Breaker, BreakerState, Transition};
use crate::budget::{AnyBudget, AttemptClass, Rejection, RetryBudget, RetryCause};
use crate::hedge::{HedgeDelay, HedgeSpec, LatencyRecord};
use crate::limit::{ClientLimiter, ClientSample};
use crate::strategy::Strategy;

/// The budget and the breaker of one strategy. The breaker sits inside the retry loop (every
/// attempt passes it, as in Polly's standard pipeline); the budget decides retries.
#[derive(Debug, Clone)]
pub struct ClientPolicy {
    budget: AnyBudget,
    breaker: Option<Breaker>,
    limiter: Option<ClientLimiter>,
    rate: Option<ClientRateLimiter>,
    /// The good answers' round trips, for a hedging percentile delay.
    latencies: Option<LatencyRecord>,
}

impl ClientPolicy {
    /// The policy of `strategy` in a run with this seed (client-side throttling draws its
    /// rejections from a stream of the seed).
    pub fn new(strategy: &Strategy, seed: u64) -> Self {
        Self {
            budget: AnyBudget::from_spec_seeded(
                strategy.budget,
                crate::rng::mix64(seed ^ 0x7468_726f_7474_6c65),
            ),
            breaker: strategy.breaker.map(Breaker::new),
            limiter: strategy.client_limit.as_ref().map(ClientLimiter::new),
            rate: strategy.adaptive_rate.then(ClientRateLimiter::new),
            latencies: strategy
                .hedge
                .filter(|h| matches!(h.delay, HedgeDelay::Percentile { .. }))
                .map(|_| LatencyRecord::new()),
        }
    }

    /// The client-side concurrency limit now, if the strategy has one.
    pub fn client_limit(&self) -> Option<u32> {
        self.limiter.as_ref().map(ClientLimiter::limit)
    }

    /// The breaker's state changes since the last call (none without a breaker).
    pub fn take_transitions(&mut self) -> Vec<Transition> {
        self.breaker
            .as_mut()
            .map(Breaker::take_transitions)
            .unwrap_or_default()
    }

    /// The budget's tokens, if it keeps any ([`AnyBudget::tokens`]).
    pub fn budget_tokens(&self) -> Option<f64> {
        self.budget.tokens()
    }

    pub fn breaker_state(&self) -> Option<BreakerState> {
        self.breaker.as_ref().map(Breaker::state)
    }
}

/// Whether `strategy`'s policy keeps state that its clients share: a budget or throttle, a
/// breaker, a client-side concurrency or rate limit, a hedging percentile's round trips. Such a
/// strategy behaves differently with one instance per holder ([`BudgetScope`]).
pub fn holds_state(strategy: &Strategy) -> bool {
    strategy.budget.is_some()
        || strategy.breaker.is_some()
        || strategy.client_limit.is_some()
        || strategy.adaptive_rate
        || strategy
            .hedge
            .is_some_and(|h| matches!(h.delay, HedgeDelay::Percentile { .. }))
}

impl RetryBudget for ClientPolicy {
    fn deposit(&mut self, now: Duration) {
        self.budget.deposit(now)
    }

    fn withdraw(&mut self, now: Duration, cause: RetryCause) -> bool {
        self.budget.withdraw(now, cause)
    }

    /// The concurrency limit first (an attempt it refuses reaches neither the breaker nor the
    /// budget, as the library's limiter sits outside the call), then the breaker, then the
    /// budget; the limit counts the attempt only once all three let it go.
    fn admit(&mut self, now: Duration, attempt: u32) -> Result<(), Rejection> {
        if self.limiter.as_ref().is_some_and(|l| !l.has_room()) {
            return Err(Rejection::ConcurrencyLimited);
        }
        if let Some(b) = &mut self.breaker {
            b.admit(now)?;
        }
        self.budget.admit(now, attempt)?;
        if let Some(l) = &mut self.limiter {
            l.acquire();
        }
        Ok(())
    }

    fn in_flight(&self) -> Option<u32> {
        self.limiter.as_ref().map(ClientLimiter::in_flight)
    }

    fn round_trip(&mut self, rtt: Duration, inflight: u32, class: AttemptClass) {
        if let Some(l) = &mut self.limiter {
            let sample = match class {
                AttemptClass::Success => ClientSample::Success,
                AttemptClass::Failure(_) => ClientSample::Dropped,
                AttemptClass::Permanent => ClientSample::Ignore,
            };
            l.release(rtt, inflight, sample);
        }
    }

    fn send_delay(&mut self, now: Duration) -> Option<Duration> {
        self.rate.as_mut().and_then(|r| r.acquire(now))
    }

    fn record(&mut self, now: Duration, attempt: u32, class: AttemptClass) {
        if let Some(r) = &mut self.rate {
            r.answered(now, class == AttemptClass::Failure(RetryCause::Throttled));
        }
        if let Some(b) = &mut self.breaker {
            b.record(now, class);
        }
        self.budget.record(now, attempt, class)
    }

    fn release(&mut self, now: Duration) {
        self.budget.release(now)
    }

    fn good_answer(&mut self, rtt: Duration) {
        if let Some(r) = &mut self.latencies {
            r.add(rtt);
        }
    }

    fn hedge_delay(&self, spec: &HedgeSpec) -> Option<Duration> {
        spec.delay_now(self.latencies.as_ref())
    }
}

/// Who holds one instance of a strategy's policy (its budget or throttle, its breaker, its
/// client-side limits, its round-trip record): the setting `E03_BUDGET_SCOPE`.
///
/// A library's retry budget or breaker is an object in a process; how many callers share one
/// decides what it sees. Brooker ("Fixing retries with token buckets and circuit breakers",
/// 2022): with many small clients, each with its own bucket, a budget sees too few calls to
/// build up tokens and drifts towards no retries, or, with a large initial balance, towards
/// retrying everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetScope {
    /// One instance for all the clients of a strategy (the lab's default: one library
    /// instance behind a service's callers).
    #[default]
    Fleet,
    /// One per shard: client `c` is in shard `c mod shards` (`E03_SHARDS`).
    Shard,
    /// One per client (in the open loop, per slot of in-progress operations; in a fan-out, per
    /// call).
    Client,
}

impl BudgetScope {
    /// `fleet`, `shard` or `client`.
    pub fn parse(s: &str) -> Option<BudgetScope> {
        match s {
            "fleet" => Some(BudgetScope::Fleet),
            "shard" => Some(BudgetScope::Shard),
            "client" => Some(BudgetScope::Client),
            _ => None,
        }
    }

    /// The holder of client `client`'s policy among `shards` shards.
    pub fn holder(self, client: u32, shards: u32) -> u32 {
        match self {
            BudgetScope::Fleet => 0,
            BudgetScope::Shard => client % shards.max(1),
            BudgetScope::Client => client,
        }
    }
}

/// Every instance of one strategy's policy in a run, one per holder of its
/// [`BudgetScope`]: the sessions of client `c` use [`Policies::of`]`(c)`. Holder 0 is seeded as
/// the one fleet-wide [`ClientPolicy`] is, so a fleet-scoped run is the run of one instance;
/// holder `h > 0` draws from a stream of its own. Instances are made when first used (an open
/// loop has as many slots as `E03_MAX_IN_FLIGHT`).
#[derive(Debug, Clone)]
pub struct Policies {
    strategy: Strategy,
    seed: u64,
    scope: BudgetScope,
    shards: u32,
    holders: Vec<ClientPolicy>,
}

impl Policies {
    /// The policies of `strategy` with this seed, scope and shard count.
    pub fn new(strategy: &Strategy, seed: u64, scope: BudgetScope, shards: u32) -> Self {
        Policies {
            strategy: strategy.clone(),
            seed,
            scope,
            shards: shards.max(1),
            holders: vec![ClientPolicy::new(strategy, seed)],
        }
    }

    /// One instance for the whole fleet.
    pub fn fleet(strategy: &Strategy, seed: u64) -> Self {
        Policies::new(strategy, seed, BudgetScope::Fleet, 1)
    }

    /// The instance that client `client`'s sessions use.
    pub fn of(&mut self, client: u32) -> &mut ClientPolicy {
        let h = self.scope.holder(client, self.shards) as usize;
        while self.holders.len() <= h {
            let seed = crate::rng::mix64(self.seed ^ (self.holders.len() as u64) << 32);
            self.holders.push(ClientPolicy::new(&self.strategy, seed));
        }
        &mut self.holders[h]
    }

    /// The instances made so far, holder 0 first.
    pub fn holders(&self) -> &[ClientPolicy] {
        &self.holders
    }

    /// Every instance's breaker changes since the last call, each with its holder, in time
    /// order (ties: holder order).
    pub fn take_transitions(&mut self) -> Vec<(u32, Transition)> {
        let mut all: Vec<(u32, Transition)> = Vec::new();
        for (h, p) in self.holders.iter_mut().enumerate() {
            all.extend(p.take_transitions().into_iter().map(|t| (h as u32, t)));
        }
        all.sort_by_key(|(_, t)| t.at);
        all
    }

    /// The tokens of every instance's budget together, if it keeps any.
    pub fn budget_tokens(&self) -> Option<f64> {
        self.holders
            .iter()
            .map(ClientPolicy::budget_tokens)
            .sum::<Option<f64>>()
    }

    /// Holder 0's breaker state (the fleet's one breaker when the scope is `fleet`).
    pub fn breaker_state(&self) -> Option<BreakerState> {
        self.holders[0].breaker_state()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::{BudgetSpec, RetryCause};

    #[test]
    fn a_scope_maps_clients_to_holders() {
        let clients: Vec<u32> = (0..6).collect();
        let of = |scope: BudgetScope, shards| -> Vec<u32> {
            clients.iter().map(|&c| scope.holder(c, shards)).collect()
        };
        assert_eq!(of(BudgetScope::Fleet, 4), [0, 0, 0, 0, 0, 0]);
        // Shard I of N holds clients I, I + N, I + 2N, ...
        assert_eq!(of(BudgetScope::Shard, 4), [0, 1, 2, 3, 0, 1]);
        assert_eq!(of(BudgetScope::Shard, 1), [0, 0, 0, 0, 0, 0]);
        assert_eq!(of(BudgetScope::Client, 4), [0, 1, 2, 3, 4, 5]);
        assert_eq!(BudgetScope::parse("shard"), Some(BudgetScope::Shard));
        assert_eq!(BudgetScope::parse("global"), None);
    }

    /// gRPC's throttle with 2 tokens (A6: a retry needs more than half of them, a failure
    /// costs 1). By hand: client 0 fails once and its holder's count drops to 1, at half, so
    /// client 0 may not retry; with one fleet throttle neither may client 1, with one throttle
    /// per client, client 1 still holds 2 and may.
    #[test]
    fn each_holder_spends_its_own_budget() {
        let mut s =
            crate::presets::preset("grpc", Duration::from_millis(50), Duration::from_secs(1))
                .unwrap();
        s.budget = Some(BudgetSpec::Grpc {
            max_tokens: 2.0,
            token_ratio: 0.5,
        });
        let fail = AttemptClass::Failure(RetryCause::Error);
        let now = Duration::ZERO;
        for (scope, client_1_may_retry) in
            [(BudgetScope::Fleet, false), (BudgetScope::Client, true)]
        {
            let mut p = Policies::new(&s, 1, scope, 1);
            p.of(0).record(now, 1, fail);
            assert!(!p.of(0).withdraw(now, RetryCause::Error), "{scope:?}");
            assert_eq!(
                p.of(1).withdraw(now, RetryCause::Error),
                client_1_may_retry,
                "{scope:?}"
            );
            let holders = if scope == BudgetScope::Fleet { 1 } else { 2 };
            assert_eq!(p.holders().len(), holders);
            // Every holder's tokens together: 1, or 1 + 2.
            let tokens = if scope == BudgetScope::Fleet {
                1.0
            } else {
                3.0
            };
            assert_eq!(p.budget_tokens(), Some(tokens), "{scope:?}");
        }
    }
}
