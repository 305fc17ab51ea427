//! The clients' event queue: a min-heap of small `Copy` events on a virtual clock in
//! nanoseconds. The dependency's own due instants (ends of work, late answers, freeze edges) are
//! not here: they live in the core's [`e03_model::DependencySchedule`], which the engine asks for
//! its `next_due()` and advances first whenever it is due at or before the next client event.
//!
//! Order is `(time, rank, insertion sequence)`, so a run is a pure function of its inputs. At
//! one instant, after everything the dependency has due then:
//!
//! 1. what the wire held and lets go now: an answer reaching its client, a request reaching the
//!    dependency, in the order they were scheduled;
//! 2. the workload's wakes (not in this queue: the workload keeps them, [`WAKE_RANK`]): an
//!    operation's start, an attempt sent (arriving at once), an open loop's arrival, one at a
//!    time in the workload's own order (the order they were scheduled), the dependency's
//!    immediate answers handed back between two;
//! 3. an attempt's timeout, last: an answer that lands exactly on the timeout counts as an
//!    answer (the attempt ends at `min(answer, send + timeout)`).

use std::collections::BinaryHeap;

use e03_model::schedule::Earliest;
use e03_model::ReqId;

/// Virtual time: nanoseconds since the run's time zero.
pub type Nanos = u64;

/// Something a client does at an instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// The attempt carried by this request timed out on the client's side.
    AttemptTimeout(ReqId),
    /// The attempt carried by this request found nothing listening (a `refused` wire phase).
    Refused(ReqId),
    /// The answer to this request, held by a latency on the wire, reaches its client.
    Deliver(ReqId),
    /// This request, held by a latency on the wire, reaches the dependency.
    Arrive(ReqId),
    /// The proxy reset the connection carrying this request (`reset_peer`).
    Reset(ReqId),
    /// Wire phase `i` begins: a toxic added applies to the open connections too.
    WireStart(usize),
    /// Connection `n` of client `c` reaches wire phase `i`'s `reset_peer` delay.
    ConnReset(u32, u32, u32),
    /// The answer to health probe `i` (the engine keeps the probes) reaches its caller.
    ProbeAnswer(u32),
}

impl Event {
    /// Order within an instant (see the module docs).
    fn rank(self) -> u8 {
        match self {
            Event::Deliver(_) | Event::Arrive(_) | Event::ProbeAnswer(_) => 0,
            Event::AttemptTimeout(_)
            | Event::Refused(_)
            | Event::Reset(_)
            | Event::WireStart(_)
            | Event::ConnReset(..) => 2,
        }
    }
}

/// The rank of the workload's wakes, which are not in this queue (the workload keeps them, in
/// its own order): after the wire's deliveries, before the timeouts.
pub const WAKE_RANK: u8 = 1;

/// A queued event, keyed by `(time, rank, insertion sequence)`.
type Entry = Earliest<(Nanos, u8, u64), Event>;

/// The pending events of one run.
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Entry>,
    /// Insertion counter: the tie-breaker within an instant.
    seq: u64,
}

impl EventQueue {
    pub fn with_capacity(n: usize) -> Self {
        Self {
            heap: BinaryHeap::with_capacity(n),
            seq: 0,
        }
    }

    pub fn push(&mut self, time: Nanos, event: Event) {
        self.heap.push(Entry {
            key: (time, event.rank(), self.seq),
            value: event,
        });
        self.seq += 1;
    }

    /// The earliest event's time, if any.
    pub fn next_time(&self) -> Option<Nanos> {
        self.heap.peek().map(|e| e.key.0)
    }

    /// The earliest event's time and rank, if any.
    pub fn next_key(&self) -> Option<(Nanos, u8)> {
        self.heap.peek().map(|e| (e.key.0, e.key.1))
    }

    /// The earliest event, if any.
    pub fn pop(&mut self) -> Option<(Nanos, Event)> {
        self.heap.pop().map(|e| (e.key.0, e.value))
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_by_time_then_rank_then_insertion_order() {
        let mut q = EventQueue::with_capacity(16);
        q.push(20, Event::Deliver(1));
        q.push(10, Event::AttemptTimeout(7));
        q.push(10, Event::Arrive(4));
        q.push(10, Event::Deliver(2));
        q.push(5, Event::Reset(3));
        assert_eq!(q.next_time(), Some(5));
        assert_eq!(q.next_key(), Some((5, 2)));
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (5, Event::Reset(3)),
                (10, Event::Arrive(4)),
                (10, Event::Deliver(2)),
                (10, Event::AttemptTimeout(7)),
                (20, Event::Deliver(1)),
            ]
        );
        assert!(q.is_empty());
        assert_eq!(q.next_time(), None);
    }

    #[test]
    fn events_are_small() {
        // Copy events of at most 16 bytes keep the heap cheap to sift.
        assert!(std::mem::size_of::<Event>() <= 16);
        assert!(std::mem::size_of::<Entry>() <= 40);
    }
}
