//! The event queue: a min-heap of small `Copy` events on a virtual clock in nanoseconds.
//!
//! Order is `(time, rank, insertion sequence)`, so a run is a pure function of its inputs. The
//! rank reproduces the live dependency service's rules for events due at the same instant:
//!
//! 1. a freeze edge (the window is half-open, so at its end the service is open again);
//! 2. work whose service time ends, by request id, then late answers, by request id (the live
//!    service's timer orders its due list the same way);
//! 3. client actions: an operation's start, an attempt sent (arriving at once), in the order
//!    they were scheduled; the live service applies everything due at or before an arrival's
//!    instant before deciding about it;
//! 4. an attempt's timeout, last: an answer that lands exactly on the timeout counts as an
//!    answer (the attempt ends at `min(answer, send + timeout)`).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use e03_core::ReqId;

/// Virtual time: nanoseconds since the run's time zero.
pub type Nanos = u64;

/// Something that happens at an instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// The dependency's freeze begins.
    FreezeBegins,
    /// The dependency's freeze ends: everything held is answered 503.
    FreezeEnds,
    /// The service time of a request has elapsed.
    WorkDone(ReqId),
    /// A slow (E03-A) answer reaches its client.
    LateAnswer(ReqId, u16),
    /// A client starts an operation.
    StartOp(u32),
    /// A client sends the next attempt of its operation (its retry wait is over).
    SendAttempt(u32),
    /// The attempt carried by this request timed out on the client's side.
    AttemptTimeout(ReqId),
    /// A recorded arrival replayed against the dependency alone (see `service::replay`).
    ReplayArrival(ReqId),
}

impl Event {
    /// Order within an instant (see the module docs): the class in the top byte, the request id
    /// below it for work and late answers.
    fn rank(self) -> u64 {
        const CLASS: u32 = 56;
        let id = |req: ReqId| req & ((1 << CLASS) - 1);
        match self {
            Event::FreezeBegins | Event::FreezeEnds => 0,
            Event::WorkDone(req) => (1 << CLASS) | id(req),
            Event::LateAnswer(req, _) => (2 << CLASS) | id(req),
            Event::StartOp(_) | Event::SendAttempt(_) | Event::ReplayArrival(_) => 3 << CLASS,
            Event::AttemptTimeout(_) => 4 << CLASS,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    time: Nanos,
    rank: u64,
    seq: u64,
    event: Event,
}

impl Entry {
    fn key(&self) -> (Nanos, u64, u64) {
        (self.time, self.rank, self.seq)
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    /// Reversed, so that `BinaryHeap` (a max-heap) pops the earliest entry first.
    fn cmp(&self, other: &Self) -> Ordering {
        other.key().cmp(&self.key())
    }
}

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
            time,
            rank: event.rank(),
            seq: self.seq,
            event,
        });
        self.seq += 1;
    }

    /// The earliest event, if any.
    pub fn pop(&mut self) -> Option<(Nanos, Event)> {
        self.heap.pop().map(|e| (e.time, e.event))
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
        q.push(20, Event::StartOp(1));
        q.push(10, Event::AttemptTimeout(7));
        q.push(10, Event::SendAttempt(9));
        q.push(10, Event::LateAnswer(1, 200));
        q.push(10, Event::StartOp(2));
        q.push(10, Event::WorkDone(8));
        q.push(10, Event::WorkDone(3));
        q.push(10, Event::FreezeEnds);
        q.push(5, Event::FreezeBegins);
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (5, Event::FreezeBegins),
                (10, Event::FreezeEnds),
                (10, Event::WorkDone(3)),
                (10, Event::WorkDone(8)),
                (10, Event::LateAnswer(1, 200)),
                (10, Event::SendAttempt(9)),
                (10, Event::StartOp(2)),
                (10, Event::AttemptTimeout(7)),
                (20, Event::StartOp(1)),
            ]
        );
        assert!(q.is_empty());
    }

    #[test]
    fn events_are_small() {
        // Copy events of at most 16 bytes keep the heap cheap to sift.
        assert!(std::mem::size_of::<Event>() <= 16);
        assert!(std::mem::size_of::<Entry>() <= 40);
    }
}
