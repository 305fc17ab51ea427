//! [`Steps`]: the rate-limit article's step workload behind the one interface, one call at a time.

use std::time::Duration;

use crate::operation::{AttemptResult, GiveUp, OpOutcome};
use crate::policy::Policies;
use crate::priority::Priority;
use crate::session::AttemptId;
use crate::steps::{Call, Done, StepConfig, StepWorkload};
use crate::strategy::Strategy;

use super::{Ended, Next, Outgoing, Workload};

/// The rate-limit article's step workload behind the one interface: [`StepWorkload`] names one call at a
/// time; each call gives up after `timeout`.
#[derive(Debug)]
pub struct Steps {
    inner: StepWorkload,
    timeout: Duration,
}

impl Steps {
    pub fn new(cfg: StepConfig, strategy: &Strategy, seed: u64, timeout: Duration) -> Self {
        Steps {
            inner: StepWorkload::new(cfg, strategy, seed),
            timeout,
        }
    }

    fn call(&self, call: Call, due: Duration) -> Outgoing {
        Outgoing {
            id: AttemptId {
                client: call.flow.client(),
                op: call.op,
                attempt: call.attempt,
            },
            due,
            timeout: self.timeout,
            flow: Some(call.flow),
            step: Some(call.step),
            class: Priority::Critical,
            replica: 0,
        }
    }

    fn ended(&self, d: Done) -> Ended {
        let cfg = self.inner.config();
        Ended {
            client: d.flow.client(),
            op: d.op,
            start: cfg.at(d.arrived),
            end: cfg.at(d.ended),
            attempts: d.attempts,
            outcome: if d.completed {
                OpOutcome::Success
            } else {
                OpOutcome::Failed(GiveUp::AttemptsExhausted)
            },
            flow: Some(d.flow),
            class: Priority::Critical,
        }
    }

    fn next(&self, n: crate::steps::StepAsks, due: Duration, next: &mut Next) {
        if let Some(c) = n.send {
            next.send(self.call(c, due));
        }
        for d in n.ended {
            next.end(self.ended(d));
        }
    }
}

impl Workload for Steps {
    fn next_wake(&self) -> Option<Duration> {
        self.inner.next_wake()
    }

    /// A step begins; its first call was due at the step's start.
    fn on_wake(&mut self, now: Duration, policy: &mut Policies, next: &mut Next) {
        let due = self.inner.next_wake().unwrap_or(now);
        let n = self.inner.on_wake(now, policy.of(0));
        self.next(n, due, next);
    }

    /// The next call of the step is due now, when the previous one was answered.
    fn on_answer(
        &mut self,
        _id: AttemptId,
        result: AttemptResult,
        now: Duration,
        policy: &mut Policies,
        next: &mut Next,
    ) {
        let n = self.inner.on_answer(result, now, policy.of(0));
        self.next(n, now, next);
    }

    fn stop(&mut self, _now: Duration, _policy: &mut Policies) -> Vec<Ended> {
        let done = self.inner.finish();
        done.into_iter().map(|d| self.ended(d)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::steps::Flow;
    use crate::workload::test_support::*;

    /// The step workload behind the interface: a step's first call was due at the step's start,
    /// the next one when the previous one was answered; an operation's start and end are its
    /// steps' starts.
    #[test]
    fn the_steps_name_one_call_at_a_time_due_at_the_step_then_at_the_answer() {
        let b = strategy("B");
        let mut policy = Policies::fleet(&b, 1);
        let cfg = StepConfig {
            step: ms(100),
            steps: 2,
            batch_items: 160,
            burst_start: 30,
            burst_items: 60,
            load: 3,
            step_calls: 12,
            max_attempts: 4,
            interactive_every: 2,
            interactive_until: 120,
            interactive_budget: 1,
        };
        let mut w = Steps::new(cfg, &b, 1, ms(50));
        assert_eq!(w.next_wake(), Some(ms(0)));
        // Woken 2 ms late: the query is still due at the step's start.
        let n = wake(&mut w, ms(2), &mut policy);
        assert_eq!(n.sends.len(), 1);
        let q = n.sends[0];
        assert_eq!(
            (q.id.client, q.id.op, q.id.attempt, q.due, q.timeout),
            (Flow::Interactive.client(), 0, 1, ms(0), ms(50))
        );
        assert_eq!((q.flow, q.step), (Some(Flow::Interactive), Some(0)));
        // Its answer at 5 ms ends it (from step 0 to step 0) and names batch item 0, due now.
        let n = answer(&mut w, q.id, ok(), ms(5), &mut policy);
        assert_eq!(n.sends.len(), 1);
        let item = n.sends[0];
        assert_eq!(
            (item.flow, item.id.op, item.due),
            (Some(Flow::Batch), 0, ms(5))
        );
        assert_eq!(n.ended.len(), 1);
        let e = n.ended[0];
        assert_eq!(
            (e.flow, e.start, e.end, e.attempts, e.outcome),
            (Some(Flow::Interactive), ms(0), ms(0), 1, OpOutcome::Success)
        );
        // A stop with the item in flight: it failed, its attempt counted.
        let ended = w.stop(ms(6), &mut policy);
        assert_eq!(ended.len(), 1);
        assert_eq!(
            (ended[0].flow, ended[0].attempts, ended[0].outcome),
            (
                Some(Flow::Batch),
                1,
                OpOutcome::Failed(GiveUp::AttemptsExhausted)
            )
        );
    }
}
