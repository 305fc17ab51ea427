//! The step workload of the rate-limit article (`E03_WORKLOAD=steps`): a batch job and an interactive flow
//! that share one rate limit, on a step clock.
//!
//! Time is counted in steps: a step is `E03_STEP_MS` live (default 100 ms) and one tick in
//! simulation. In each step the client:
//!
//! 1. takes in the interactive query of the step (one every `interactive_every` steps, before
//!    `interactive_until`) and the batch items that arrive in it ([`StepConfig::arrivals`]: one
//!    item a step from step 0, and from `burst_start` a burst of `burst_items` at `load` a step);
//! 2. calls every interactive query still within its latency budget (a query is tried in its
//!    step and, until it succeeds, in each of the next `interactive_budget` steps; it has no
//!    retry policy of its own and never waits), then
//! 3. calls at most `step_calls` batch items whose retry is due, in queue order (a retried item
//!    goes to the back of the queue).
//!
//! A failed batch call is retried by the run's [`Strategy`] (up to its attempts, through its
//! budget): the strategy's wait is rounded up to whole steps, at least one (`fixed`: a constant
//! 100 ms wait is the next step; `backoff`: 100, 200, 400 ms are 1, 2, 4 steps; a strategy that
//! honours `Retry-After` waits at least what the 429 said). Items still waiting when the run's
//! `steps` are over failed.
//!
//! Like every state machine of the core, [`StepWorkload`] has no clock and owns its own loop: a
//! driver wakes it at [`StepWorkload::next_wake`] (a step's start) with
//! [`StepWorkload::on_wake`], sends the one call the answer names ([`StepAsks::send`]), hands
//! that call's result to [`StepWorkload::on_answer`] (which names the next call of the step, so
//! the calls go one after the other, in the workload's order), and calls
//! [`StepWorkload::finish`] once there is no next wake. The live swarm and the simulator drive it alike.

use std::collections::VecDeque;
use std::time::Duration;

use crate::budget::{AttemptClass, RetryBudget};
use crate::faults::request_key;
use crate::operation::{retry_decision, AttemptResult, Decision, OpOutcome, Tried, Waits};
use crate::policy::ClientPolicy;
use crate::rng::{stream, LabRng, Stream};
use crate::strategy::Strategy;

/// Which flow an operation belongs to. Its number is the `client` of its requests and records.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Flow {
    /// The batch job: items with retries.
    Batch,
    /// The interactive flow: queries with a latency budget and no retry policy.
    Interactive,
}

impl Flow {
    /// The client number the flow's requests carry.
    pub fn client(self) -> u32 {
        match self {
            Flow::Batch => 0,
            Flow::Interactive => 1,
        }
    }

    /// The flow of a client number ([`Flow::client`]).
    pub fn of_client(client: u32) -> Option<Flow> {
        match client {
            0 => Some(Flow::Batch),
            1 => Some(Flow::Interactive),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Flow::Batch => "batch",
            Flow::Interactive => "interactive",
        }
    }
}

/// The workload's shape (see the module doc; `E03_STEP_*` and friends).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StepConfig {
    /// One step, live.
    pub step: Duration,
    /// Steps in a run.
    pub steps: u32,
    pub batch_items: u32,
    pub burst_start: u32,
    pub burst_items: u32,
    /// Burst items per step (the load level).
    pub load: u32,
    /// Batch calls per step at most.
    pub step_calls: u32,
    /// Attempts per batch item when the strategy has no limit of its own.
    pub max_attempts: u32,
    /// An interactive query every this many steps (0: none).
    pub interactive_every: u32,
    /// Interactive queries arrive before this step.
    pub interactive_until: u32,
    /// Steps after its own in which a failed query is tried again.
    pub interactive_budget: u32,
}

impl StepConfig {
    /// The step each batch item arrives in, in item order: the first `batch_items -
    /// burst_items` one a step from step 0, then the burst from `burst_start`, `load` a step.
    pub fn arrivals(&self) -> Vec<u32> {
        let steady = self.batch_items - self.burst_items.min(self.batch_items);
        (0..self.batch_items)
            .map(|i| {
                if i < steady {
                    i
                } else {
                    self.burst_start + (i - steady) / self.load.max(1)
                }
            })
            .collect()
    }

    /// Whether an interactive query arrives in `step`.
    pub fn query_at(&self, step: u32) -> bool {
        self.interactive_every > 0
            && step < self.interactive_until.min(self.steps)
            && step.is_multiple_of(self.interactive_every)
    }

    /// Interactive queries in a run.
    pub fn queries(&self) -> u32 {
        (0..self.steps).filter(|&s| self.query_at(s)).count() as u32
    }

    /// The instant `step` starts, from the run's time zero.
    pub fn at(&self, step: u32) -> Duration {
        self.step * step
    }

    /// Whole steps of `wait`, rounded up, at least one.
    pub fn steps_of(&self, wait: Duration) -> u32 {
        let step = self.step.as_nanos().max(1);
        (wait.as_nanos().div_ceil(step) as u32).max(1)
    }
}

/// One call to send: attempt `attempt` (from 1) of operation `op` of `flow`, in `step`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Call {
    pub flow: Flow,
    pub op: u32,
    pub attempt: u32,
    pub step: u32,
}

impl Call {
    /// The request key of the call (its fault fate's identity).
    pub fn key(&self) -> u64 {
        request_key(self.flow.client(), self.op, self.attempt)
    }
}

/// An operation that ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Done {
    pub flow: Flow,
    pub op: u32,
    /// The step it arrived in.
    pub arrived: u32,
    /// The step of its last call (its arrival step if it made none).
    pub ended: u32,
    pub attempts: u32,
    pub completed: bool,
}

#[derive(Debug, Clone, Copy)]
struct Item {
    op: u32,
    arrived: u32,
    ready: u32,
    attempts: u32,
    last_step: u32,
    previous: Duration,
    polly: f64,
}

/// What the workload asks of its driver after a wake-up or an answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StepAsks {
    /// The call to send now (the driver hands its result to [`StepWorkload::on_answer`]).
    pub send: Option<Call>,
    /// The operations that ended, to log.
    pub ended: Vec<Done>,
}

/// The workload of one run (one strategy at one load, one seed).
#[derive(Debug)]
pub struct StepWorkload {
    cfg: StepConfig,
    strategy: Strategy,
    max_attempts: u32,
    /// Batch items arriving in each step.
    by_step: Vec<Vec<u32>>,
    /// Batch items waiting, in queue order.
    queue: Vec<Item>,
    /// Interactive queries within their budget, not in flight.
    active: Vec<Item>,
    /// Operations with a call in flight, by flow and op.
    /// Calls in flight: their flow, item, when they were sent, and the attempts in flight
    /// then when a policy layer counts them (batch calls only; [`RetryBudget::in_flight`]).
    flying: Vec<(Flow, Item, Duration, Option<u32>)>,
    next_query: u32,
    rng: LabRng,
    /// The next step to begin.
    step: u32,
    /// The calls of the current step not sent yet, in order.
    pending: VecDeque<Call>,
    /// The call sent and not answered yet.
    waiting: Option<Call>,
}

impl StepWorkload {
    pub fn new(cfg: StepConfig, strategy: &Strategy, seed: u64) -> Self {
        let mut by_step = vec![Vec::new(); cfg.steps as usize];
        for (i, s) in cfg.arrivals().into_iter().enumerate() {
            if let Some(v) = by_step.get_mut(s as usize) {
                v.push(i as u32);
            }
        }
        Self {
            cfg,
            max_attempts: strategy.max_attempts.unwrap_or(cfg.max_attempts),
            strategy: strategy.clone(),
            by_step,
            queue: Vec::new(),
            active: Vec::new(),
            flying: Vec::new(),
            next_query: 0,
            rng: stream(seed, Stream::Jitter, 0),
            step: 0,
            pending: VecDeque::new(),
            waiting: None,
        }
    }

    /// When the driver wakes the workload next: the next step's start, once every call of the
    /// current step was answered (a late step begins late); `None` while a call waits for its
    /// answer, and after the last step.
    pub fn next_wake(&self) -> Option<Duration> {
        let idle = self.waiting.is_none() && self.pending.is_empty();
        (idle && self.step < self.cfg.steps).then(|| self.cfg.at(self.step))
    }

    /// The wake-up [`StepWorkload::next_wake`] asked for (at `now`): the step begins, and its
    /// first call is to be sent now.
    pub fn on_wake(&mut self, now: Duration, policy: &mut ClientPolicy) -> StepAsks {
        debug_assert!(
            self.next_wake().is_some(),
            "woken when it asked for no wake"
        );
        let (calls, ended) = self.begin_step(self.step, now, policy);
        self.step += 1;
        self.pending = calls.into();
        StepAsks {
            send: self.take_next(),
            ended,
        }
    }

    /// The result of the call [`StepAsks::send`] named (at `now`): what it ended, and the next
    /// call of the step, to be sent now.
    pub fn on_answer(
        &mut self,
        result: AttemptResult,
        now: Duration,
        policy: &mut ClientPolicy,
    ) -> StepAsks {
        let Some(call) = self.waiting.take() else {
            debug_assert!(false, "an answer without a call");
            return StepAsks::default();
        };
        let ended = self.on_result(&call, result, now, policy);
        StepAsks {
            send: self.take_next(),
            ended: ended.into_iter().collect(),
        }
    }

    fn take_next(&mut self) -> Option<Call> {
        self.waiting = self.pending.pop_front();
        self.waiting
    }

    pub fn config(&self) -> &StepConfig {
        &self.cfg
    }

    /// Step `step` begins (at `now`): the calls to send now, in order, and the operations that
    /// ended without a call (interactive queries past their budget, items refused by the
    /// strategy's policy layer).
    fn begin_step(
        &mut self,
        step: u32,
        now: Duration,
        policy: &mut ClientPolicy,
    ) -> (Vec<Call>, Vec<Done>) {
        let mut calls = Vec::new();
        let mut ended = Vec::new();
        if self.cfg.query_at(step) {
            self.active.push(Item::new(self.next_query, step));
            self.next_query += 1;
        }
        for &op in self.by_step.get(step as usize).into_iter().flatten() {
            policy.deposit(now);
            self.queue.push(Item::new(op, step));
        }
        // Interactive first: queries past their budget end, the others are called.
        for q in std::mem::take(&mut self.active) {
            if q.arrived + self.cfg.interactive_budget < step {
                ended.push(q.done(Flow::Interactive, false));
                continue;
            }
            calls.push(self.fly(Flow::Interactive, q, step, now, None));
        }
        // Then the batch items that are due, at most `step_calls`, in queue order.
        let mut sent = 0;
        let mut i = 0;
        while i < self.queue.len() && sent < self.cfg.step_calls {
            if self.queue[i].ready > step {
                i += 1;
                continue;
            }
            if policy.send_delay(now).is_some() {
                // The client's rate limiter (the AWS SDKs' adaptive mode) holds the call: it
                // and the batch calls after it stay queued for a later step.
                break;
            }
            let item = self.queue.remove(i);
            if policy.admit(now, item.attempts + 1).is_err() {
                // An open breaker or client-side throttling: the item gives up unsent (and a
                // retry its budget allowed is given back).
                if item.attempts > 0 {
                    policy.release(now);
                }
                ended.push(item.done(Flow::Batch, false));
                continue;
            }
            let inflight = policy.in_flight();
            calls.push(self.fly(Flow::Batch, item, step, now, inflight));
            sent += 1;
        }
        (calls, ended)
    }

    fn fly(
        &mut self,
        flow: Flow,
        mut item: Item,
        step: u32,
        now: Duration,
        inflight: Option<u32>,
    ) -> Call {
        item.attempts += 1;
        item.last_step = step;
        self.flying.push((flow, item, now, inflight));
        Call {
            flow,
            op: item.op,
            attempt: item.attempts,
            step,
        }
    }

    /// The answer to `call` came (at `now`): the operation ended, or it waits for a later step.
    fn on_result(
        &mut self,
        call: &Call,
        result: AttemptResult,
        now: Duration,
        policy: &mut ClientPolicy,
    ) -> Option<Done> {
        let at = self
            .flying
            .iter()
            .position(|(f, i, _, _)| *f == call.flow && i.op == call.op)?;
        let (flow, mut item, sent, inflight) = self.flying.swap_remove(at);
        let class = self.strategy.classify(&result);
        if flow == Flow::Interactive {
            if class == AttemptClass::Success {
                return Some(item.done(flow, true));
            }
            // Tried again in the next step if its budget allows (checked there).
            self.active.push(item);
            return None;
        }
        policy.record(now, item.attempts, class);
        if let Some(n) = inflight {
            policy.round_trip(now.saturating_sub(sent), n, class);
        }
        // No deadline: a retry waits for a later step.
        let mut waits = Waits {
            last: item.previous,
            polly: item.polly,
        };
        let tried = Tried {
            class,
            result: &result,
            attempts: item.attempts,
            max_attempts: self.max_attempts,
        };
        let decided = retry_decision(
            tried,
            &self.strategy,
            &mut waits,
            (now, None),
            policy,
            &mut self.rng,
        );
        let wait = match decided {
            Decision::Retry { wait } => wait,
            Decision::Done(outcome) => return Some(item.done(flow, outcome == OpOutcome::Success)),
        };
        (item.previous, item.polly) = (waits.last, waits.polly);
        item.ready = call.step + self.cfg.steps_of(wait);
        self.queue.push(item);
        None
    }

    /// The run is over (no next wake, or the driver stopped it): everything still waiting
    /// failed, a call in flight included.
    pub fn finish(&mut self) -> Vec<Done> {
        let mut out: Vec<Done> = self
            .queue
            .drain(..)
            .map(|i| i.done(Flow::Batch, false))
            .collect();
        out.extend(
            self.active
                .drain(..)
                .map(|q| q.done(Flow::Interactive, false)),
        );
        out.extend(self.flying.drain(..).map(|(f, i, _, _)| i.done(f, false)));
        self.pending.clear();
        self.waiting = None;
        out
    }
}

impl Item {
    fn new(op: u32, step: u32) -> Self {
        Item {
            op,
            arrived: step,
            ready: step,
            attempts: 0,
            last_step: step,
            previous: Duration::ZERO,
            polly: 0.0,
        }
    }

    fn done(&self, flow: Flow, completed: bool) -> Done {
        Done {
            flow,
            op: self.op,
            arrived: self.arrived,
            ended: self.last_step,
            attempts: self.attempts,
            completed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy::{Backoff, Jitter, RetryAfter};

    fn cfg(load: u32) -> StepConfig {
        StepConfig {
            step: Duration::from_millis(100),
            steps: 140,
            batch_items: 160,
            burst_start: 30,
            burst_items: 60,
            load,
            step_calls: 12,
            max_attempts: 4,
            interactive_every: 2,
            interactive_until: 120,
            interactive_budget: 1,
        }
    }

    fn strategy(backoff: Backoff, retry_after: RetryAfter, max: Option<u32>) -> Strategy {
        let mut s = Strategy::standard(
            "B",
            Duration::ZERO,
            Duration::ZERO,
            crate::budget::BudgetSpec::token_bucket(10.0, 0.1),
        )
        .expect("B exists");
        s.backoff = backoff;
        s.jitter = Jitter::None;
        s.retry_after = retry_after;
        s.max_attempts = max;
        s
    }

    fn fixed() -> Strategy {
        strategy(
            Backoff::Constant {
                wait: Duration::from_millis(100),
            },
            RetryAfter::Ignore,
            None,
        )
    }

    fn status(code: u16, ra: Option<u64>) -> AttemptResult {
        AttemptResult::Status {
            code,
            retry_after: ra.map(Duration::from_millis),
        }
    }

    #[test]
    fn the_schedule_is_the_seeds_one_a_step_then_the_burst() {
        for load in [3, 6] {
            let a = cfg(load).arrivals();
            assert_eq!(a.len(), 160);
            assert_eq!(&a[..100], (0..100).collect::<Vec<_>>().as_slice());
            // Items 100.. arrive from step 30, `load` a step.
            assert_eq!(a[100], 30);
            assert_eq!(a[100 + load as usize - 1], 30);
            assert_eq!(a[100 + load as usize], 31);
            assert_eq!(a[159], 30 + 59 / load);
            let per_step = |s: u32| a.iter().filter(|&&x| x == s).count();
            assert_eq!(per_step(29), 1);
            assert_eq!(per_step(30), 1 + load as usize);
        }
        let c = cfg(6);
        assert_eq!(c.queries(), 60, "one every 2 steps below 120");
        assert!(c.query_at(0) && !c.query_at(1) && c.query_at(118) && !c.query_at(120));
        assert_eq!(c.steps_of(Duration::from_millis(100)), 1);
        assert_eq!(c.steps_of(Duration::from_millis(101)), 2);
        assert_eq!(c.steps_of(Duration::ZERO), 1, "never in the same step");
        assert_eq!(c.steps_of(Duration::from_millis(400)), 4);
    }

    #[test]
    fn at_most_step_calls_batch_calls_a_step_interactive_first() {
        let s = fixed();
        let mut w = StepWorkload::new(cfg(6), &s, 1);
        let mut p = ClientPolicy::new(&s, 1);
        let mut total = Vec::new();
        for step in 0..36 {
            let (calls, ended) = w.begin_step(step, cfg(6).at(step), &mut p);
            // Only interactive queries past their budget end without a call here.
            assert!(ended.iter().all(|d| d.flow == Flow::Interactive));
            total.extend(ended);
            let batch = calls.iter().filter(|c| c.flow == Flow::Batch).count();
            assert!(batch <= 12, "step {step}: {batch}");
            if step.is_multiple_of(2) {
                assert_eq!(calls[0].flow, Flow::Interactive, "interactive first");
            }
            for c in &calls {
                // Every call fails with a 429: items are retried.
                let done = w.on_result(c, status(429, Some(50)), cfg(6).at(step), &mut p);
                if let Some(d) = done {
                    total.push(d);
                }
            }
        }
        // Fixed: a failed item is due the next step; with 7 arrivals a step from step 30 and
        // retries, the queue exceeds 12 and the limit binds.
        assert!(total
            .iter()
            .any(|d| d.flow == Flow::Batch && d.attempts == 4));
        assert!(total.iter().all(|d| !d.completed));
        // A failed interactive query is tried in its step and the next, then ends.
        let q0 = total
            .iter()
            .find(|d| d.flow == Flow::Interactive && d.op == 0)
            .expect("query 0 ended");
        assert_eq!((q0.arrived, q0.ended, q0.attempts), (0, 1, 2));
    }

    fn retried_at(s: &Strategy, result: AttemptResult) -> Vec<u32> {
        let mut c = cfg(3);
        c.batch_items = 1;
        c.burst_items = 0;
        c.interactive_every = 0;
        let mut w = StepWorkload::new(c, s, 1);
        let mut p = ClientPolicy::new(s, 1);
        let mut steps = Vec::new();
        for step in 0..20 {
            let (calls, _) = w.begin_step(step, c.at(step), &mut p);
            for call in calls {
                steps.push(call.step);
                w.on_result(&call, result, c.at(step), &mut p);
            }
        }
        steps
    }

    #[test]
    fn policies_wait_whole_steps_and_retry_after_aware_waits_what_the_429_says() {
        let none = strategy(Backoff::Immediate, RetryAfter::Ignore, Some(1));
        assert_eq!(retried_at(&none, status(503, None)), [0]);
        assert_eq!(retried_at(&fixed(), status(429, Some(450))), [0, 1, 2, 3]);
        let backoff = strategy(
            Backoff::Exponential {
                base: Duration::from_millis(100),
                cap: Duration::from_millis(400),
            },
            RetryAfter::Ignore,
            None,
        );
        assert_eq!(retried_at(&backoff, status(504, None)), [0, 1, 3, 7]);
        let aware = strategy(
            Backoff::Constant {
                wait: Duration::from_millis(100),
            },
            RetryAfter::AtLeast,
            None,
        );
        // Retry-After 450 ms: 5 steps; a 502 without one: the next step.
        assert_eq!(retried_at(&aware, status(429, Some(450))), [0, 5, 10, 15]);
        assert_eq!(retried_at(&aware, status(502, None)), [0, 1, 2, 3]);
    }

    #[test]
    fn success_ends_an_item_and_finish_fails_what_is_left() {
        let s = fixed();
        let c = cfg(3);
        let mut w = StepWorkload::new(c, &s, 1);
        let mut p = ClientPolicy::new(&s, 1);
        let (calls, _) = w.begin_step(0, c.at(0), &mut p);
        let done: Vec<Done> = calls
            .iter()
            .filter_map(|call| w.on_result(call, status(200, None), c.at(0), &mut p))
            .collect();
        assert_eq!(done.len(), 2, "item 0 and query 0");
        assert!(done.iter().all(|d| d.completed && d.attempts == 1));
        // Step 1 is never run: item 1 arrives there but is not taken in; finish() only fails
        // what was taken in.
        assert!(w.finish().is_empty());
    }
    /// The wake interface a driver sees: step 0 at 0 ms, its calls one at a time in the
    /// workload's order (query 0, then item 0), no wake while a call waits, step 1 at 100 ms
    /// once the last answer came; a 503 on item 0 makes it due again in step 1 (a constant
    /// 100 ms wait), ahead of item 1 which arrives there (queue order); after the last step no
    /// wake is left.
    #[test]
    fn the_driver_sends_what_the_wake_interface_names_one_call_at_a_time() {
        let s = fixed();
        let c = StepConfig { steps: 2, ..cfg(3) };
        let mut w = StepWorkload::new(c, &s, 1);
        let mut p = ClientPolicy::new(&s, 1);
        let ms = Duration::from_millis;
        let call = |flow, op, attempt, step| Call {
            flow,
            op,
            attempt,
            step,
        };
        assert_eq!(w.next_wake(), Some(ms(0)));
        let n = w.on_wake(ms(0), &mut p);
        assert_eq!(n.send, Some(call(Flow::Interactive, 0, 1, 0)));
        assert!(n.ended.is_empty());
        assert_eq!(w.next_wake(), None, "a call waits for its answer");
        let n = w.on_answer(status(200, None), ms(5), &mut p);
        assert_eq!(n.send, Some(call(Flow::Batch, 0, 1, 0)));
        assert_eq!(n.ended.len(), 1);
        assert!(n.ended[0].completed && n.ended[0].flow == Flow::Interactive);
        let n = w.on_answer(status(503, None), ms(10), &mut p);
        assert_eq!(
            n,
            StepAsks::default(),
            "retried in a later step, nothing to send now"
        );
        assert_eq!(w.next_wake(), Some(ms(100)));
        let n = w.on_wake(ms(100), &mut p);
        // Step 1: no query (one every 2 steps); item 0's retry, then item 1, in queue order.
        assert_eq!(n.send, Some(call(Flow::Batch, 0, 2, 1)));
        let n = w.on_answer(status(200, None), ms(105), &mut p);
        assert_eq!(n.send, Some(call(Flow::Batch, 1, 1, 1)));
        assert_eq!((n.ended[0].op, n.ended[0].attempts), (0, 2));
        let n = w.on_answer(status(200, None), ms(110), &mut p);
        assert_eq!((n.send, n.ended.len()), (None, 1));
        assert_eq!(w.next_wake(), None, "the run's 2 steps are over");
        assert!(w.finish().is_empty());
    }
}
