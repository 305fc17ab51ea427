//! A strategy's shared policy state: its retry budget (or throttle), its circuit breaker and
//! its client-side concurrency limit, one for all the clients of a strategy, as one library
//! instance is shared by a service's callers. Both drivers hold one [`ClientPolicy`] per strategy and pass it to the sessions.

use std::time::Duration;

use crate::adaptive::ClientRateLimiter;
use crate::breaker::{Breaker, BreakerState, Transition};
use crate::budget::{AnyBudget, AttemptClass, Rejection, RetryBudget, RetryCause};
use crate::bulkhead::{Acquire, Bulkhead};
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
    /// The caller's slots for its calls in flight ([`Strategy::bulkhead`]).
    bulkhead: Option<Bulkhead>,
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
            bulkhead: Bulkhead::from_permits(&strategy.bulkhead),
        }
    }

    /// The dependency of `client`'s calls in the bulkhead's pools: client mod dependencies,
    /// the partition balancer's rule (`E03_BALANCER=partition`).
    fn dependency(b: &Bulkhead, client: u32) -> usize {
        client as usize % b.dependencies()
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
        || !strategy.bulkhead.is_empty()
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

    /// The bulkhead first (a call it refuses reaches neither the concurrency limit, the
    /// breaker nor the budget, as the seed's bulkhead sits around each dependency's client),
    /// then [`Self::admit`]; a call they refuse gives its slot back at once.
    fn admit_call(&mut self, now: Duration, attempt: u32, client: u32) -> Result<(), Rejection> {
        let Some(b) = &mut self.bulkhead else {
            return self.admit(now, attempt);
        };
        let dependency = ClientPolicy::dependency(b, client);
        // No queue (Polly's default): a full pool rejects.
        if b.acquire(dependency, 0) != Acquire::Granted {
            return Err(Rejection::BulkheadFull);
        }
        let admitted = self.admit(now, attempt);
        if admitted.is_err() {
            self.call_ended(client);
        }
        admitted
    }

    fn call_ended(&mut self, client: u32) {
        if let Some(b) = &mut self.bulkhead {
            let dependency = ClientPolicy::dependency(b, client);
            b.release(dependency);
        }
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
            BudgetScope::Shard => crate::shard::Shard::index_of(client, shards),
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

    /// The seed's bulkhead by hand: two dependencies (client c calls c mod 2), first with a
    /// pool each (2 slots for dependency 0, 1 for dependency 1), then with one pool of 2 they
    /// share, which one dependency's calls can fill.
    #[test]
    fn a_bulkhead_gives_each_call_a_slot_of_its_dependency_s_pool() {
        let ms = Duration::from_millis;
        let mut s = Strategy::standard("A", ms(100), ms(1000), BudgetSpec::ratio(0.1)).unwrap();
        s.bulkhead = vec![2, 1];
        let mut p = ClientPolicy::new(&s, 1);
        let t = Duration::ZERO;
        let full = Err(Rejection::BulkheadFull);
        assert_eq!(p.admit_call(t, 1, 1), Ok(()));
        assert_eq!(
            p.admit_call(t, 1, 3),
            full,
            "dependency 1's one slot is taken"
        );
        assert_eq!(p.admit_call(t, 1, 0), Ok(()));
        assert_eq!(p.admit_call(t, 1, 2), Ok(()));
        assert_eq!(p.admit_call(t, 1, 4), full, "dependency 0's two are taken");
        p.call_ended(1);
        assert_eq!(
            p.admit_call(t, 2, 3),
            Ok(()),
            "dependency 1's slot came back"
        );
        // One pool of 2 every dependency shares: two calls to dependency 1 fill it.
        s.bulkhead = vec![2];
        let mut p = ClientPolicy::new(&s, 1);
        assert_eq!(p.admit_call(t, 1, 1), Ok(()));
        assert_eq!(p.admit_call(t, 1, 3), Ok(()));
        assert_eq!(p.admit_call(t, 1, 0), full);
        p.call_ended(3);
        assert_eq!(p.admit_call(t, 1, 0), Ok(()));
        // A call the breaker then refuses gives its slot back at once.
        s.bulkhead = vec![1];
        s.breaker = Some(crate::breaker::BreakerSpec {
            failure_ratio: 0.5,
            min_throughput: 1,
            sampling_window_ms: 10_000,
            break_duration_ms: 10_000,
        });
        let mut p = ClientPolicy::new(&s, 1);
        p.record(t, 1, AttemptClass::Failure(RetryCause::Error));
        assert_eq!(p.admit_call(t, 1, 0), Err(Rejection::BreakerOpen));
        assert_eq!(p.bulkhead.as_ref().unwrap().in_use(0), 0);
    }

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
        let grpc = BudgetSpec::Grpc {
            max_tokens: 2.0,
            token_ratio: 0.5,
        };
        let s = Strategy::standard("D", Duration::from_millis(50), Duration::from_secs(1), grpc)
            .unwrap();
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
