//! Bulkheads: a caller's slots for its calls in flight, one pool shared by all its
//! dependencies or one pool per dependency (the reliability-patterns article, "Circuit Breaker ve Bulkhead": when the
//! payment service slows down and its calls may use at most 20 concurrent slots, the catalogue
//! page keeps working with its own).
//!
//! The seed names .NET's `ConcurrencyLimiter` (System.Threading.RateLimiting) per dependency as
//! the simplest bulkhead, and its semantics are kept here:
//!
//! - `permits` (`PermitLimit`, more than 0): calls in flight at once;
//! - `queue` (`QueueLimit`, 0 or more): callers waiting for a permit, served oldest first
//!   (`QueueProcessingOrder.OldestFirst`, the option's default);
//! - a caller that finds every permit taken and the queue full is rejected at once;
//! - a waiter may give up (its own timeout) and leaves the queue.
//!
//! The .NET options have no defaults. Polly v8's `AddConcurrencyLimiter(permitLimit,
//! queueLimit = 0)` builds the same limiter with no queue by default, which [`PoolSpec::new`]
//! keeps (`queue` 0).
//!
//! Sans IO, no clock: tickets are the driver's own numbers (an attempt id, say), and the pool
//! only counts.

use std::collections::VecDeque;

/// One pool's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PoolSpec {
    /// Calls in flight at once (more than 0).
    pub permits: u32,
    /// Callers waiting for a permit (0: none wait, a full pool rejects at once).
    pub queue: u32,
}

impl PoolSpec {
    /// `permits` slots and no queue (Polly v8's default).
    pub fn new(permits: u32) -> PoolSpec {
        PoolSpec { permits, queue: 0 }
    }
}

/// What an acquire got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acquire {
    /// A permit: the call may go now. Release it with [`Bulkhead::release`].
    Granted,
    /// Every permit is taken: the ticket waits. [`Bulkhead::release`] names it when it gets a
    /// permit; [`Bulkhead::cancel`] takes it out if its caller gives up first.
    Queued,
    /// Every permit is taken and the queue is full: the call is not made.
    Rejected,
}

#[derive(Debug, Clone)]
struct Pool {
    spec: PoolSpec,
    in_use: u32,
    waiting: VecDeque<u64>,
}

/// A caller's bulkhead: pools, and which pool each dependency draws from.
#[derive(Debug, Clone)]
pub struct Bulkhead {
    pools: Vec<Pool>,
    /// `route[d]`: the pool of dependency `d`.
    route: Vec<usize>,
}

impl Bulkhead {
    /// One pool that `dependencies` dependencies share.
    pub fn shared(spec: PoolSpec, dependencies: usize) -> Bulkhead {
        Bulkhead::new(vec![spec], vec![0; dependencies])
    }

    /// A pool of its own for each dependency, in order.
    pub fn per_dependency(specs: Vec<PoolSpec>) -> Bulkhead {
        let route = (0..specs.len()).collect();
        Bulkhead::new(specs, route)
    }

    /// Pools, and `route[d]` the pool of dependency `d`. Panics on a route to no pool or a pool
    /// of no permits: the config layer checks both first.
    pub fn new(specs: Vec<PoolSpec>, route: Vec<usize>) -> Bulkhead {
        assert!(route.iter().all(|&p| p < specs.len()), "a route to no pool");
        assert!(specs.iter().all(|s| s.permits > 0), "a pool of no permits");
        let pools = specs
            .into_iter()
            .map(|spec| Pool {
                spec,
                in_use: 0,
                waiting: VecDeque::new(),
            })
            .collect();
        Bulkhead { pools, route }
    }

    fn pool(&mut self, dependency: usize) -> &mut Pool {
        &mut self.pools[self.route[dependency]]
    }

    /// A call to `dependency` asks for a permit.
    pub fn acquire(&mut self, dependency: usize, ticket: u64) -> Acquire {
        let pool = self.pool(dependency);
        if pool.in_use < pool.spec.permits {
            pool.in_use += 1;
            Acquire::Granted
        } else if (pool.waiting.len() as u32) < pool.spec.queue {
            pool.waiting.push_back(ticket);
            Acquire::Queued
        } else {
            Acquire::Rejected
        }
    }

    /// A call to `dependency` ended and gives its permit back. The permit goes to the oldest
    /// waiter of the same pool, if any, whose ticket is returned (it may be a call to another
    /// dependency of a shared pool): its call goes now.
    pub fn release(&mut self, dependency: usize) -> Option<u64> {
        let pool = self.pool(dependency);
        debug_assert!(pool.in_use > 0, "a release without a permit");
        match pool.waiting.pop_front() {
            Some(next) => Some(next),
            None => {
                pool.in_use = pool.in_use.saturating_sub(1);
                None
            }
        }
    }

    /// A waiter for `dependency` gives up; false when it was not waiting (it already has its
    /// permit, and must release it).
    pub fn cancel(&mut self, dependency: usize, ticket: u64) -> bool {
        let pool = self.pool(dependency);
        match pool.waiting.iter().position(|&t| t == ticket) {
            Some(i) => {
                pool.waiting.remove(i);
                true
            }
            None => false,
        }
    }

    /// A caller's bulkhead from a strategy's `bulkhead` permits (no queue, Polly's default):
    /// one number is one pool every dependency shares; several are a pool per dependency, in
    /// order. `None` for none.
    pub fn from_permits(permits: &[u32]) -> Option<Bulkhead> {
        match permits {
            [] => None,
            [one] => Some(Bulkhead::shared(PoolSpec::new(*one), 1)),
            many => Some(Bulkhead::per_dependency(
                many.iter().map(|&p| PoolSpec::new(p)).collect(),
            )),
        }
    }

    /// The dependencies it routes (1 for a pool they all share, see [`Self::from_permits`]).
    pub fn dependencies(&self) -> usize {
        self.route.len()
    }

    /// Permits in use in `dependency`'s pool.
    pub fn in_use(&self, dependency: usize) -> u32 {
        self.pools[self.route[dependency]].in_use
    }

    /// Callers waiting in `dependency`'s pool.
    pub fn waiting(&self, dependency: usize) -> usize {
        self.pools[self.route[dependency]].waiting.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Acquire::*;

    #[test]
    fn a_shared_pool_lets_one_dependency_take_every_slot() {
        // 3 permits and 1 place in the queue, shared by the healthy (0) and the slow (1).
        let mut b = Bulkhead::shared(
            PoolSpec {
                permits: 3,
                queue: 1,
            },
            2,
        );
        // The slow dependency's calls hold the three permits...
        assert_eq!(b.acquire(1, 10), Granted);
        assert_eq!(b.acquire(1, 11), Granted);
        assert_eq!(b.acquire(1, 12), Granted);
        // ...so a healthy call waits, and the next one is rejected without being made.
        assert_eq!(b.acquire(0, 20), Queued);
        assert_eq!(b.acquire(0, 21), Rejected);
        assert_eq!((b.in_use(0), b.waiting(0)), (3, 1));
        // A slow call ends: its permit goes to the healthy waiter, the count stays at 3.
        assert_eq!(b.release(1), Some(20));
        assert_eq!((b.in_use(0), b.waiting(0)), (3, 0));
        // The healthy call ends: nobody waits, a permit is free.
        assert_eq!(b.release(0), None);
        assert_eq!(b.in_use(1), 2);
        assert_eq!(b.acquire(0, 22), Granted);
    }

    #[test]
    fn per_dependency_pools_keep_the_healthy_dependency_s_slots() {
        // The seed's figures: 20 slots for the slow payments out of 50; the rest, 30, for the
        // catalogue. No queue (Polly's default).
        let mut b = Bulkhead::per_dependency(vec![PoolSpec::new(30), PoolSpec::new(20)]);
        for t in 0..20 {
            assert_eq!(b.acquire(1, t), Granted);
        }
        // The 21st slow call is rejected at once...
        assert_eq!(b.acquire(1, 20), Rejected);
        // ...and all 30 of the catalogue's still go.
        for t in 100..130 {
            assert_eq!(b.acquire(0, t), Granted);
        }
        assert_eq!(b.acquire(0, 130), Rejected);
        assert_eq!((b.in_use(0), b.in_use(1)), (30, 20));
        // The same 50 slots shared: 50 slow calls leave the catalogue nothing.
        let mut shared = Bulkhead::shared(PoolSpec::new(50), 2);
        for t in 0..50 {
            assert_eq!(shared.acquire(1, t), Granted);
        }
        assert_eq!(shared.acquire(0, 100), Rejected);
    }

    #[test]
    fn waiters_are_served_oldest_first_and_may_give_up() {
        let mut b = Bulkhead::per_dependency(vec![PoolSpec {
            permits: 1,
            queue: 3,
        }]);
        assert_eq!(b.acquire(0, 1), Granted);
        assert_eq!(b.acquire(0, 2), Queued);
        assert_eq!(b.acquire(0, 3), Queued);
        assert_eq!(b.acquire(0, 4), Queued);
        assert_eq!(b.acquire(0, 5), Rejected);
        // Ticket 3 times out while waiting: it leaves the queue; 1 holds its permit.
        assert!(b.cancel(0, 3));
        assert!(!b.cancel(0, 1));
        assert_eq!(b.release(0), Some(2));
        assert_eq!(b.release(0), Some(4));
        assert_eq!(b.release(0), None);
        assert_eq!((b.in_use(0), b.waiting(0)), (0, 0));
    }
}
