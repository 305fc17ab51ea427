//! [`Arrivals`]: the open loop as a workload, its arrivals started in a bounded pool of slots'
//! sessions, or dropped when every slot is busy.

use std::time::Duration;

use crate::arrivals::{Arrival, OpenLoop};
use crate::operation::AttemptResult;
use crate::policy::Policies;
use crate::session::AttemptId;
use crate::strategy::Strategy;

use super::clients::Clients;
use super::{sooner, Ended, Next, Workload};

/// The open loop: [`OpenLoop`]'s arrivals, each started in a free slot's session (a slot per
/// operation in progress, at most `max_in_flight`), or dropped when none is free. A slot's
/// session is client `slot`; it takes the next arrival once its operation ended. An arrival
/// and a slot's wake due at one instant come in the order they were scheduled (the next arrival
/// is scheduled when the one before it came).
#[derive(Debug, Clone)]
pub struct Arrivals {
    open: OpenLoop,
    slots: Clients,
    /// The next arrival's place in the order of scheduling.
    arrival_order: u64,
}

impl Arrivals {
    pub fn new(open: OpenLoop, strategy: &Strategy) -> Self {
        let mut slots = Clients::of([], strategy);
        Arrivals {
            open,
            arrival_order: slots.stamp(),
            slots,
        }
    }

    /// The arrivals and slots (their counts).
    pub fn open_loop(&self) -> &OpenLoop {
        &self.open
    }

    /// Frees the slot of every operation that ended (`ended`, this call's).
    fn release(&mut self, ended: &[Ended]) {
        for e in ended {
            self.open.release(e.client);
        }
    }
}

impl Workload for Arrivals {
    fn next_wake(&self) -> Option<Duration> {
        sooner(self.open.next_arrival(), self.slots.next_wake())
    }

    /// The earliest of the next arrival (its operation starts in a free slot, sent at once, or
    /// it is dropped) and the slots' wakes.
    fn on_wake(&mut self, now: Duration, policy: &mut Policies, next: &mut Next) {
        let ended = next.ended().len();
        let arrival = self
            .open
            .next_arrival()
            .filter(|&t| t <= now)
            .map(|t| (t, self.arrival_order));
        let slot = self.slots.earliest().filter(|&(t, _)| t <= now);
        match (arrival, slot) {
            (Some(a), s) if s.is_none_or(|s| a < s) => {
                let arrival = self.open.on_arrival();
                self.arrival_order = self.slots.stamp();
                match arrival {
                    Arrival::Start {
                        slot,
                        start,
                        class,
                        new,
                    } => {
                        if let Some(session) = new {
                            self.slots.push(*session);
                        }
                        self.slots.start(slot, start, class, now, policy, next);
                    }
                    Arrival::Dropped { start } => next.drop_arrival(start),
                }
            }
            _ => self.slots.on_wake(now, policy, next),
        }
        self.release(&next.ended()[ended..]);
    }

    fn on_answer(
        &mut self,
        id: AttemptId,
        result: AttemptResult,
        now: Duration,
        policy: &mut Policies,
        next: &mut Next,
    ) {
        let ended = next.ended().len();
        self.slots.on_answer(id, result, now, policy, next);
        self.release(&next.ended()[ended..]);
    }

    fn stop(&mut self, now: Duration, policy: &mut Policies) -> Vec<Ended> {
        self.slots.stop(now, policy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::Starts;
    use crate::workload::test_support::*;

    /// An open loop's arrival and a slot's retry due at one instant: whichever was scheduled
    /// first goes first. The next arrival is scheduled when the one before it came.
    #[test]
    fn an_arrival_and_a_retry_due_at_one_instant_come_in_the_order_they_were_scheduled() {
        use crate::arrivals::RateShape;
        let cfg = config(Starts::OnDemand, 0);
        let open = OpenLoop::new(3, cfg, RateShape::constant(1000.0, ms(1000)), 1);
        // The arrivals' times, drawn as the workload will draw them.
        let mut times = Vec::new();
        let mut reference = open.clone();
        while let Some(t) = reference.next_arrival() {
            times.push(t);
            reference.on_arrival();
        }
        let t1 = times[0];
        // The first arrival at least 201 ms after the first: a 200 ms wait started after t1
        // ends at it, and the arrival before it comes after that wait started.
        let k = times.iter().position(|&t| t > t1 + ms(201)).unwrap();
        let tk = times[k];
        assert!(times[k - 1] > tk - ms(200));
        let first_attempt = AttemptId {
            client: 0,
            op: 0,
            attempt: 1,
        };

        // B waits exactly 200 ms: a 503 at tk - 200 ms schedules the retry before arrival k
        // is scheduled (when arrival k - 1 comes), so the retry goes first, then the drop.
        let b = strategy("B");
        let mut policy = Policies::fleet(&b, 1);
        let mut w = Arrivals::new(open.clone(), &b);
        assert_eq!(wake(&mut w, t1, &mut policy).sends.len(), 1);
        wake_all(&mut w, tk - ms(200), &mut policy);
        let n = answer(
            &mut w,
            first_attempt,
            unavailable(),
            tk - ms(200),
            &mut policy,
        );
        assert_eq!(n, Next::default());
        wake_all(&mut w, tk - Duration::from_nanos(1), &mut policy);
        assert_eq!(w.next_wake(), Some(tk));
        let first = wake(&mut w, tk, &mut policy);
        assert_eq!(
            (
                first.sends.len(),
                first.sends[0].id.attempt,
                first.sends[0].due
            ),
            (1, 2, tk),
            "the retry, scheduled first, goes first"
        );
        assert!(first.dropped.is_empty());
        let second = wake(&mut w, tk, &mut policy);
        assert_eq!(
            second.dropped,
            [tk],
            "then arrival k, dropped: the slot is busy"
        );

        // A retries at once: a 503 at tk schedules the retry after arrival k was scheduled, so
        // the drop comes first, then the retry.
        let a = strategy("A");
        let mut policy = Policies::fleet(&a, 1);
        let mut w = Arrivals::new(open, &a);
        assert_eq!(wake(&mut w, t1, &mut policy).sends.len(), 1);
        wake_all(&mut w, tk - Duration::from_nanos(1), &mut policy);
        let n = answer(&mut w, first_attempt, unavailable(), tk, &mut policy);
        assert_eq!(n, Next::default());
        let first = wake(&mut w, tk, &mut policy);
        assert_eq!(
            first.dropped,
            [tk],
            "arrival k, scheduled first, goes first"
        );
        assert!(first.sends.is_empty());
        let second = wake(&mut w, tk, &mut policy);
        assert_eq!(
            (
                second.sends.len(),
                second.sends[0].id.attempt,
                second.sends[0].due
            ),
            (1, 2, tk)
        );
    }

    #[test]
    fn an_open_loop_starts_arrivals_in_free_slots_and_drops_the_rest() {
        use crate::arrivals::RateShape;
        let a = strategy("A");
        let mut policy = Policies::fleet(&a, 1);
        let cfg = config(Starts::OnDemand, 0);
        // 1,000 arrivals a second for 1 s, one slot: arrivals while it is busy are dropped.
        let open = OpenLoop::new(3, cfg, RateShape::constant(1000.0, ms(1000)), 1);
        let first = open.next_arrival().unwrap();
        let mut reference = open.clone();
        let mut w = Arrivals::new(open, &a);
        assert_eq!(w.next_wake(), Some(first));
        let n = wake(&mut w, first, &mut policy);
        assert_eq!(n.sends.len(), 1);
        assert_eq!(n.sends[0].id.client, 0);
        assert_eq!(n.sends[0].due, first);
        assert!(matches!(
            reference.on_arrival(),
            Arrival::Start { slot: 0, .. }
        ));
        // The slot is busy: the next arrivals, up to 100 ms, are dropped.
        let second = reference.next_arrival().unwrap();
        assert_eq!(w.next_wake(), Some(second));
        let n = wake_all(&mut w, first + ms(100), &mut policy);
        let mut expected = Vec::new();
        while reference
            .next_arrival()
            .is_some_and(|t| t <= first + ms(100))
        {
            let Arrival::Dropped { start } = reference.on_arrival() else {
                panic!("the only slot is busy")
            };
            expected.push(start);
        }
        assert!(!expected.is_empty());
        assert_eq!(n.dropped, expected);
        assert!(n.sends.is_empty());
        // Its answer frees the slot: the next arrival starts in it, as the same client.
        let n = answer(
            &mut w,
            AttemptId {
                client: 0,
                op: 0,
                attempt: 1,
            },
            ok(),
            first + ms(101),
            &mut policy,
        );
        assert_eq!(n.ended.len(), 1);
        assert_eq!(w.open_loop().in_flight(), 0);
        let t = w.next_wake().unwrap();
        let n = wake(&mut w, t, &mut policy);
        assert_eq!(
            (n.sends[0].id.client, n.sends[0].id.op),
            (0, 1),
            "slot 0 takes it"
        );
    }
}
