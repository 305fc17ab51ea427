//! One closed-loop client's whole life as a state machine: when its operations start, how long
//! it thinks, how they are numbered, when each attempt is due, what it is called on the wire
//! and what its fault key is. The live swarm and the simulator both drive it; neither holds any
//! of these rules itself.
//!
//! The shape is quinn-proto's: the session has its timers inside and no clock. The driver asks
//! [`ClientSession::next_wake`] when it must next call in, sleeps until then (tokio's timer or
//! an event queue), and calls [`ClientSession::on_wake`] with the time it woke. That either
//! hands it an attempt to send ([`Wake::Send`]) or reports that the operation ended without one
//! ([`Wake::Ended`], its deadline had passed). When the attempt's answer or timeout comes, the
//! driver calls [`ClientSession::on_result`]; it says nothing more (a retry is due: ask
//! `next_wake` again) or reports the ended operation. [`ClientSession::abort`] ends the session
//! early (a stop signal).
//!
//! ```text
//! session = ClientSession::new(seed, client, config)   // draws the first start offset
//! while let Some(t) = session.next_wake() {
//!     sleep_until(t)
//!     match session.on_wake(now, budget) {
//!         Wake::Send(a) => { result = send a.id with a.timeout
//!                            if let Some(end) = session.on_result(now, result, strategy, budget)
//!                            { log end } }
//!         Wake::Ended(end) => log end,
//!     }
//! }
//! ```
//!
//! Random draws, in the order the lab has always made them: `stream(seed, Think, client)` gives
//! the first start offset (uniform in `[0, FIRST_START_SPREAD_US)` µs) and then, as each
//! operation ends, a think time uniform in `[think_min, think_max]` µs (drawn even when the next
//! start falls after the run's end); `stream(seed, Jitter, client)` gives retry jitter. The
//! budget deposit of a first attempt is made when its operation starts.

use std::time::Duration;

use rand::Rng;

use crate::budget::{AttemptClass, Rejection, RetryBudget, RetryCause};
use crate::faults::request_key;
use crate::hedge::HedgeSpec;
use crate::operation::{AttemptResult, Decision, GiveUp, Limits, OpOutcome, Operation};
use crate::priority::Priority;
use crate::rng::{stream, LabRng, Stream};
use crate::steps::Flow;
use crate::strategy::Strategy;

/// A client's first operation starts uniformly in `[0, FIRST_START_SPREAD_US)` µs after time
/// zero (spec section 3: "uniform 0 to 2 s after start").
pub const FIRST_START_SPREAD_US: u64 = 2_000_000;

/// When a client's operations start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Starts {
    /// E03's closed loop: the first operation starts at a random offset in
    /// `[0, FIRST_START_SPREAD_US)`, each next one a think time after the previous one ended.
    #[default]
    ClosedLoop,
    /// Every client starts its first operation at time zero, then thinks between operations
    /// (a small fixed group: the retry-cost article's four callers, the reliability-patterns article's herd and budget runs).
    AtZero,
    /// Operation `k` is due at `k * period` (a fixed-rate caller: the reliability-patterns article's breaker run); if
    /// the previous operation is still going then, the next starts when it ends.
    Every(Duration),
    /// A ramp-up: client `c` starts its first operation at `c * gap`, so the clients join one
    /// by one, then each thinks between operations as in the closed loop (the ramp-up of load
    /// tools: Gatling's `rampUsers(n).during(n * gap)`, k6's `ramping-vus` executor with one
    /// linear stage). No first offset is drawn: the think stream's first draw is the first think.
    Ramp(Duration),
    /// Open loop: the session never schedules a start itself; the driver hands it one with
    /// [`ClientSession::begin`] (an arrival of [`crate::arrivals::OpenLoop`]), and after the
    /// operation it waits, idle, for the next. No think time is drawn.
    OnDemand,
}

/// What every client of a run shares: limits, run length and think times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionConfig {
    pub limits: Limits,
    /// Operations start only in `[0, duration)`.
    pub duration: Duration,
    /// Think time bounds, inclusive (drawn at microsecond resolution).
    pub think: (Duration, Duration),
    /// When operations start.
    pub starts: Starts,
    /// At most this many operations per client (`None`: as many as fit in the duration).
    pub max_ops: Option<u32>,
    /// The share of operations that are best effort, in parts per million
    /// ([`Priority::of`]; 0: every operation is critical).
    pub best_effort_ppm: u32,
}

/// Who an attempt is: what the swarm sends in its `x-e03-*` headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AttemptId {
    pub client: u32,
    /// The client's operation number, from 0.
    pub op: u32,
    /// From 1.
    pub attempt: u32,
}

impl AttemptId {
    /// The fault key of this attempt ([`request_key`]).
    pub fn key(&self) -> u64 {
        request_key(self.client, self.op, self.attempt)
    }
}

/// An attempt to send now: what a session, and every workload, asks its driver to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outgoing {
    pub id: AttemptId,
    /// When it was due (its operation's start, the end of its retry wait, its step's start).
    pub due: Duration,
    /// Give up waiting for its answer this long after sending it.
    pub timeout: Duration,
    /// The step workload's flow and step (the rate-limit article); `None` elsewhere.
    pub flow: Option<Flow>,
    pub step: Option<u32>,
    /// Its operation's class (sent in the priority header when best effort).
    pub class: Priority,
    /// The replica of the dependency it goes to (`E03_REPLICAS`; 0 when there is one):
    /// [`crate::workload::Balanced`] picks it.
    pub replica: u16,
}

impl Outgoing {
    /// The fault key of the attempt (its fault fate's identity).
    pub fn key(&self) -> u64 {
        self.id.key()
    }
}

/// An operation that ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpEnd {
    pub client: u32,
    pub op: u32,
    pub start: Duration,
    pub end: Duration,
    /// Attempts sent (an aborted in-flight attempt counts).
    pub attempts: u32,
    pub outcome: OpOutcome,
    pub class: Priority,
}

/// What [`ClientSession::on_wake`] asks of the driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// Send this attempt now.
    Send(Outgoing),
    /// The operation ended without sending (its deadline had passed).
    Ended(OpEnd),
    /// A policy layer refused the attempt (an open breaker, client-side throttling): it is not
    /// sent, it failed fast, and the operation ended. Log the attempt as failed fast.
    Rejected {
        attempt: Outgoing,
        why: Rejection,
        end: OpEnd,
    },
    /// Nothing is sent now: a client-side rate limiter holds the attempt
    /// ([`RetryBudget::send_delay`]; it is due again at [`ClientSession::next_wake`]), or a
    /// hedge was refused while other attempts of the operation are still out.
    Wait,
}

/// An attempt of a hedged operation in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Flying {
    attempt: u32,
    sent: Duration,
    inflight: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    /// Between operations; the next starts at this time, if it is before the run's end.
    Idle(Option<Duration>),
    /// The operation's current attempt is due at `due`, not sent yet.
    Due { op: Operation, due: Duration },
    /// The operation's current attempt is in flight: sent at `sent`, with `inflight` attempts
    /// in flight then when a policy layer counts them ([`RetryBudget::in_flight`]).
    InFlight {
        op: Operation,
        sent: Duration,
        inflight: Option<u32>,
    },
    /// A hedged operation ([`crate::hedge`]): these attempts are in flight (none, between a
    /// failed attempt and the hedge due at once after it), the next hedge is due at `next`
    /// (`None`: no more will go), and `refused` says the budget refused one.
    Hedging {
        op: Operation,
        flying: Vec<Flying>,
        next: Option<Duration>,
        refused: bool,
    },
    /// Stopped by [`ClientSession::abort`].
    Aborted,
}

/// One closed-loop client.
#[derive(Debug, Clone)]
pub struct ClientSession {
    seed: u64,
    client: u32,
    config: SessionConfig,
    think_us: (u64, u64),
    think: LabRng,
    jitter: LabRng,
    /// Number of the operation in progress, or of the next one when idle.
    op_no: u32,
    /// The class the open loop gave the operation ([`Self::begin`]); `None`: drawn.
    op_class: Option<Priority>,
    state: State,
    /// The strategy's hedging policy, if it hedges ([`Self::with_hedging`]).
    hedge: Option<HedgeSpec>,
    /// Attempts of an ended hedged operation still in flight, for the driver to cancel.
    cancelled: Vec<AttemptId>,
}

impl ClientSession {
    /// Client `client` of a run with this seed; draws its first start offset.
    pub fn new(seed: u64, client: u32, config: SessionConfig) -> Self {
        let mut think = stream(seed, Stream::Think, client);
        let first = match config.starts {
            Starts::ClosedLoop => {
                Duration::from_micros(think.random_range(0..FIRST_START_SPREAD_US))
            }
            Starts::Ramp(gap) => gap * client,
            Starts::AtZero | Starts::Every(_) | Starts::OnDemand => Duration::ZERO,
        };
        Self::with_think_stream(seed, client, config, think, first)
    }

    /// A session whose first operation starts at `first` instead of a drawn offset (the think
    /// stream starts fresh). For tests and tools that need an operation at a given time.
    pub fn starting_at(seed: u64, client: u32, config: SessionConfig, first: Duration) -> Self {
        let think = stream(seed, Stream::Think, client);
        Self::with_think_stream(seed, client, config, think, first)
    }

    fn with_think_stream(
        seed: u64,
        client: u32,
        config: SessionConfig,
        think: LabRng,
        first: Duration,
    ) -> Self {
        let think_us = (
            config.think.0.as_micros() as u64,
            config.think.1.as_micros() as u64,
        );
        let mut session = Self {
            seed,
            client,
            config,
            think_us,
            think,
            jitter: stream(seed, Stream::Jitter, client),
            op_no: 0,
            op_class: None,
            state: State::Idle(None),
            hedge: None,
            cancelled: Vec::new(),
        };
        session.state = match config.starts {
            Starts::OnDemand => State::Idle(None),
            _ => State::Idle(session.if_in_run(first)),
        };
        session
    }

    /// Open loop ([`Starts::OnDemand`]): the next operation, of this class (drawn by the
    /// arrivals, [`crate::arrivals`]), starts at `start` (its intended
    /// start, which may be before the driver gets to [`on_wake`](Self::on_wake): the operation's
    /// latency and deadline count from `start`, so a late driver cannot hide its lateness).
    ///
    /// # Panics
    /// If an operation is in progress or the session was aborted.
    pub fn begin(&mut self, start: Duration, class: Priority) {
        match self.state {
            State::Idle(_) => {
                self.state = State::Idle(Some(start));
                self.op_class = Some(class);
            }
            ref other => panic!("begin with an operation in progress ({other:?})"),
        }
    }

    /// The session's operations hedge with `spec` instead of retrying (`None`: they retry).
    pub fn with_hedging(mut self, spec: Option<HedgeSpec>) -> Self {
        self.hedge = spec;
        self
    }

    /// Moves the attempts to cancel (those still out when a hedged operation ended) to `into`.
    pub fn drain_cancelled(&mut self, into: &mut Vec<AttemptId>) {
        into.append(&mut self.cancelled);
    }

    pub fn client(&self) -> u32 {
        self.client
    }

    /// Number of the operation in progress, or of the next one between operations.
    pub fn op_no(&self) -> u32 {
        self.op_no
    }

    /// When the driver must call [`on_wake`](Self::on_wake) next: the next operation's start or
    /// the current attempt's due time. `None` while an attempt is in flight (wait for its
    /// result) and once the client has nothing left to do.
    pub fn next_wake(&self) -> Option<Duration> {
        match &self.state {
            State::Idle(next) => *next,
            State::Due { due, .. } => Some(*due),
            State::Hedging { next, .. } => *next,
            State::InFlight { .. } | State::Aborted => None,
        }
    }

    /// True once no operation is in progress and none will start.
    pub fn is_finished(&self) -> bool {
        matches!(self.state, State::Idle(None) | State::Aborted)
    }

    /// Woken at `now` (at or after [`next_wake`](Self::next_wake)). Starts the next operation
    /// if none is in progress (at its scheduled start, with its budget deposit), then sends the
    /// attempt that is due, or ends the operation if its deadline has passed.
    ///
    /// # Panics
    /// If nothing was due (an attempt in flight, or the session finished).
    pub fn on_wake<B: RetryBudget + ?Sized>(&mut self, now: Duration, budget: &mut B) -> Wake {
        let (op, due) = match std::mem::replace(&mut self.state, State::Aborted) {
            State::Idle(Some(start)) => {
                budget.deposit(now);
                (Operation::start(start, self.config.limits), start)
            }
            State::Due { op, due } => (op, due),
            State::Hedging {
                op,
                flying,
                next: Some(due),
                refused,
            } => return self.send_hedge(op, flying, due, refused, now, budget),
            other => panic!("on_wake with nothing due ({other:?})"),
        };
        let Some(timeout) = op.attempt_timeout(now) else {
            return Wake::Ended(self.past_deadline(&op, now, budget));
        };
        let id = AttemptId {
            client: self.client,
            op: self.op_no,
            attempt: op.attempt(),
        };
        let attempt = Outgoing {
            id,
            due,
            timeout,
            class: self.class(),
            flow: None,
            step: None,
            replica: 0,
        };
        if let Some(wait) = budget.send_delay(now) {
            // Held by the rate limiter. A hold that would end at or past the deadline ends the
            // operation now, as a retry wait would (the deadline's rule); otherwise the attempt
            // is due again after it (its send lateness then counts from that instant: the
            // driver's slop, not the limiter's hold; the operation's latency counts the hold).
            if now + wait >= op.deadline() {
                return Wake::Ended(self.past_deadline(&op, now, budget));
            }
            self.state = State::Due {
                op,
                due: now + wait,
            };
            return Wake::Wait;
        }
        if let Err(why) = budget.admit_call(now, op.attempt(), self.client) {
            if op.attempt() > 1 {
                budget.release(now);
            }
            let sent = op.attempt() - 1;
            let end = self.finish(&op, now, sent, OpOutcome::Failed(GiveUp::FailedFast));
            return Wake::Rejected { attempt, why, end };
        }
        let inflight = budget.in_flight();
        self.state = match self.hedge {
            Some(spec) => State::Hedging {
                next: next_hedge(&spec, &op, now, budget),
                op,
                flying: vec![Flying {
                    attempt: 1,
                    sent: now,
                    inflight,
                }],
                refused: false,
            },
            None => State::InFlight {
                op,
                sent: now,
                inflight,
            },
        };
        Wake::Send(attempt)
    }

    /// The next hedge of `op` is due (at `due`, woken at `now`): it goes if the deadline and the
    /// budget allow (A6: "subsequent hedged RPCs will only be sent if token_count is greater
    /// than the threshold"). Refused, no more go; the operation ends now if nothing is out.
    fn send_hedge<B: RetryBudget + ?Sized>(
        &mut self,
        mut op: Operation,
        mut flying: Vec<Flying>,
        due: Duration,
        refused: bool,
        now: Duration,
        budget: &mut B,
    ) -> Wake {
        let spec = self.hedge.expect("a hedged operation has a hedging policy");
        let timeout = op.attempt_timeout(now);
        let allowed = timeout.is_some() && budget.withdraw(now, RetryCause::Error);
        let Some(timeout) = timeout.filter(|_| allowed) else {
            let why = if timeout.is_none() {
                GiveUp::Deadline
            } else {
                GiveUp::BudgetDenied
            };
            if flying.is_empty() {
                let attempts = op.attempt();
                return Wake::Ended(self.finish(&op, now, attempts, OpOutcome::Failed(why)));
            }
            self.state = State::Hedging {
                op,
                flying,
                next: None,
                refused: refused || why == GiveUp::BudgetDenied,
            };
            return Wake::Wait;
        };
        op.hedge();
        let attempt = Outgoing {
            id: AttemptId {
                client: self.client,
                op: self.op_no,
                attempt: op.attempt(),
            },
            due,
            timeout,
            class: self.class(),
            flow: None,
            step: None,
            replica: 0,
        };
        flying.push(Flying {
            attempt: op.attempt(),
            sent: now,
            inflight: budget.in_flight(),
        });
        self.state = State::Hedging {
            next: next_hedge(&spec, &op, now, budget),
            op,
            flying,
            refused,
        };
        Wake::Send(attempt)
    }

    /// The answer of attempt `id` came at `now` (see [`Self::on_result`]). A hedged operation
    /// takes it from any of its attempts in flight; an answer no longer awaited (an attempt
    /// cancelled while its answer was on the way) changes nothing.
    pub fn on_answer<B: RetryBudget + ?Sized>(
        &mut self,
        id: AttemptId,
        now: Duration,
        result: AttemptResult,
        strategy: &Strategy,
        budget: &mut B,
    ) -> Option<OpEnd> {
        match &self.state {
            State::Hedging { flying, .. }
                if id.op == self.op_no && flying.iter().any(|f| f.attempt == id.attempt) =>
            {
                self.on_hedge_result(id.attempt, now, result, strategy, budget)
            }
            State::InFlight { op, .. } if id.op == self.op_no && id.attempt == op.attempt() => {
                self.on_result(now, result, strategy, budget)
            }
            _ => None,
        }
    }

    /// A6's summary: a good answer ends the call and cancels the rest; a fatal one (the lab: a
    /// permanent answer) too; a non-fatal one (an answer the strategy would retry) sends the
    /// next hedge at once (after a pushback, the lab's `Retry-After`, if the strategy reads
    /// it), and the call fails once nothing is out and no hedge can follow.
    fn on_hedge_result<B: RetryBudget + ?Sized>(
        &mut self,
        attempt: u32,
        now: Duration,
        result: AttemptResult,
        strategy: &Strategy,
        budget: &mut B,
    ) -> Option<OpEnd> {
        let State::Hedging {
            op,
            mut flying,
            mut next,
            refused,
        } = std::mem::replace(&mut self.state, State::Aborted)
        else {
            unreachable!("checked by on_answer");
        };
        let spec = self.hedge.expect("a hedged operation has a hedging policy");
        let i = flying
            .iter()
            .position(|f| f.attempt == attempt)
            .expect("checked by on_answer");
        let f = flying.remove(i);
        let class = strategy.classify(&result);
        budget.record(now, attempt, class);
        budget.call_ended(self.client);
        if let Some(n) = f.inflight {
            budget.round_trip(now.saturating_sub(f.sent), n, class);
        }
        let attempts = op.attempt();
        let outcome = match class {
            AttemptClass::Success => {
                budget.good_answer(now.saturating_sub(f.sent));
                OpOutcome::Success
            }
            AttemptClass::Permanent => OpOutcome::Failed(GiveUp::NotRetryable),
            AttemptClass::Failure(_) => {
                let pushback = match (strategy.retry_after, result) {
                    (
                        crate::strategy::RetryAfter::AtLeast,
                        AttemptResult::Status {
                            retry_after: Some(d),
                            ..
                        },
                    ) => d,
                    _ => Duration::ZERO,
                };
                let more = attempts < spec.max_attempts && !refused;
                let at = now + pushback;
                if more && at < op.deadline() {
                    next = Some(at);
                } else if more {
                    next = None;
                }
                if next.is_some() || !flying.is_empty() {
                    self.state = State::Hedging {
                        op,
                        flying,
                        next,
                        refused,
                    };
                    return None;
                }
                OpOutcome::Failed(if attempts >= spec.max_attempts {
                    GiveUp::AttemptsExhausted
                } else if refused {
                    GiveUp::BudgetDenied
                } else {
                    GiveUp::Deadline
                })
            }
        };
        let (client, op_no) = (self.client, self.op_no);
        self.cancelled.extend(flying.iter().map(|f| AttemptId {
            client,
            op: op_no,
            attempt: f.attempt,
        }));
        Some(self.finish(&op, now, attempts, outcome))
    }

    /// The operation `op` ends at `now` past its deadline, its current attempt unsent (a retry
    /// the budget allowed is given back).
    fn past_deadline<B: RetryBudget + ?Sized>(
        &mut self,
        op: &Operation,
        now: Duration,
        budget: &mut B,
    ) -> OpEnd {
        let attempts = op.attempt() - 1;
        if attempts > 0 {
            budget.release(now);
        }
        self.finish(op, now, attempts, OpOutcome::Failed(GiveUp::Deadline))
    }

    /// The attempt in flight ended at `now` with `result`. `None`: a retry is due at
    /// [`next_wake`](Self::next_wake). `Some`: the operation ended.
    ///
    /// # Panics
    /// If no attempt is in flight.
    pub fn on_result<B: RetryBudget + ?Sized>(
        &mut self,
        now: Duration,
        result: AttemptResult,
        strategy: &Strategy,
        budget: &mut B,
    ) -> Option<OpEnd> {
        let State::InFlight {
            mut op,
            sent,
            inflight,
        } = std::mem::replace(&mut self.state, State::Aborted)
        else {
            panic!("on_result with no attempt in flight");
        };
        let attempts = op.attempt();
        let class = strategy.classify(&result);
        budget.record(now, attempts, class);
        budget.call_ended(self.client);
        if let Some(n) = inflight {
            budget.round_trip(now.saturating_sub(sent), n, class);
        }
        match op.on_result(now, result, strategy, budget, &mut self.jitter) {
            Decision::Retry { wait } => {
                self.state = State::Due {
                    op,
                    due: now + wait,
                };
                None
            }
            Decision::Done(outcome) => Some(self.finish(&op, now, attempts, outcome)),
        }
    }

    /// Stops the client at `now`: the operation in progress, if any, ends as aborted (its
    /// in-flight attempt counted as sent) and nothing more starts. No think time is drawn.
    pub fn abort<B: RetryBudget + ?Sized>(
        &mut self,
        now: Duration,
        budget: &mut B,
    ) -> Option<OpEnd> {
        let (op, attempts) = match std::mem::replace(&mut self.state, State::Aborted) {
            State::Due { op, .. } => {
                let sent = op.attempt() - 1;
                if sent > 0 {
                    budget.release(now);
                }
                (op, sent)
            }
            State::InFlight { op, .. } | State::Hedging { op, .. } => {
                let sent = op.attempt();
                (op, sent)
            }
            State::Idle(_) | State::Aborted => return None,
        };
        Some(OpEnd {
            client: self.client,
            op: self.op_no,
            start: op.started_at(),
            end: now,
            attempts,
            outcome: OpOutcome::Failed(GiveUp::Aborted),
            class: self.class(),
        })
    }

    /// The class of the operation in progress (or of the next one): the one it began with
    /// ([`Self::begin`]), or drawn from the client and the operation's number.
    fn class(&self) -> Priority {
        self.op_class.unwrap_or_else(|| {
            Priority::of(
                self.seed,
                self.client,
                self.op_no,
                self.config.best_effort_ppm,
            )
        })
    }

    /// The operation ended at `end`: think, and schedule the next one if it starts in the run.
    fn finish(
        &mut self,
        op: &Operation,
        end: Duration,
        attempts: u32,
        outcome: OpOutcome,
    ) -> OpEnd {
        let done = OpEnd {
            client: self.client,
            op: self.op_no,
            start: op.started_at(),
            end,
            attempts,
            outcome,
            class: self.class(),
        };
        let next = match self.config.starts {
            Starts::ClosedLoop | Starts::AtZero | Starts::Ramp(_) => {
                let think = self.think.random_range(self.think_us.0..=self.think_us.1);
                end + Duration::from_micros(think)
            }
            Starts::Every(period) => (period * (self.op_no + 1)).max(end),
            Starts::OnDemand => {
                self.op_no += 1;
                self.state = State::Idle(None);
                return done;
            }
        };
        self.op_no += 1;
        self.state = State::Idle(self.if_in_run(next));
        done
    }

    fn if_in_run(&self, start: Duration) -> Option<Duration> {
        let more = self.config.max_ops.is_none_or(|max| self.op_no < max);
        (more && start < self.config.duration).then_some(start)
    }
}

/// When the next hedge of `op` goes after an attempt sent at `now`: its delay later, if
/// attempts are left, a delay is known and it falls before the deadline.
fn next_hedge<B: RetryBudget + ?Sized>(
    spec: &HedgeSpec,
    op: &Operation,
    now: Duration,
    budget: &B,
) -> Option<Duration> {
    if op.attempt() >= spec.max_attempts {
        return None;
    }
    let at = now + budget.hedge_delay(spec)?;
    (at < op.deadline()).then_some(at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::{BudgetSpec, Unlimited};

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn config() -> SessionConfig {
        SessionConfig {
            limits: Limits {
                max_attempts: 4,
                attempt_timeout: ms(2000),
                deadline: ms(5000),
            },
            duration: ms(30_000),
            think: (ms(1500), ms(2500)),
            starts: Starts::ClosedLoop,
            max_ops: None,
            best_effort_ppm: 0,
        }
    }

    fn strategy(id: &str) -> Strategy {
        let budget = BudgetSpec::token_bucket(10.0, 0.1);
        Strategy::standard(id, ms(200), ms(2000), budget).unwrap()
    }

    /// Counts deposits; allows every retry.
    #[derive(Default)]
    struct Counting {
        deposits: u32,
        withdrawals: u32,
    }

    impl RetryBudget for Counting {
        fn deposit(&mut self, _now: Duration) {
            self.deposits += 1;
        }
        fn withdraw(&mut self, _now: Duration, _cause: crate::budget::RetryCause) -> bool {
            self.withdrawals += 1;
            true
        }
    }

    fn send(wake: Wake) -> Outgoing {
        match wake {
            Wake::Send(a) => a,
            other => panic!("expected a send: {other:?}"),
        }
    }

    /// A ramp of 250 ms: client 3 starts at 750 ms, then thinks 1.5 to 2.5 s as drawn from
    /// its think stream, first draw first.
    #[test]
    fn a_ramp_starts_client_c_at_c_gaps_then_thinks() {
        let ramp = SessionConfig {
            starts: Starts::Ramp(ms(250)),
            ..config()
        };
        for c in 0..4u32 {
            let s = ClientSession::new(42, c, ramp);
            assert_eq!(s.next_wake(), Some(ms(250) * c));
        }
        let mut s = ClientSession::new(42, 3, ramp);
        let mut draws = stream(42, Stream::Think, 3);
        let a = send(s.on_wake(ms(750), &mut Unlimited));
        assert_eq!((a.id.op, a.due), (0, ms(750)));
        s.on_result(
            ms(780),
            AttemptResult::status(200),
            &strategy("A"),
            &mut Unlimited,
        )
        .expect("a 200 ends the operation");
        let think = draws.random_range(1_500_000..=2_500_000u64);
        assert_eq!(s.next_wake(), Some(ms(780) + Duration::from_micros(think)));
    }

    #[test]
    fn starts_and_thinks_follow_the_think_stream_in_order() {
        let mut s = ClientSession::new(42, 3, config());
        let mut draws = stream(42, Stream::Think, 3);
        let first = Duration::from_micros(draws.random_range(0..FIRST_START_SPREAD_US));
        assert_eq!(s.next_wake(), Some(first));
        let mut start = first;
        for op in 0..5u32 {
            assert_eq!(s.op_no(), op);
            let a = send(s.on_wake(start, &mut Unlimited));
            assert_eq!(a.id.op, op);
            let end = start + ms(30);
            let done = s
                .on_result(
                    end,
                    AttemptResult::status(200),
                    &strategy("A"),
                    &mut Unlimited,
                )
                .expect("a 200 ends the operation");
            assert_eq!((done.op, done.start, done.end), (op, start, end));
            let think = draws.random_range(1_500_000..=2_500_000u64);
            start = end + Duration::from_micros(think);
            assert_eq!(s.next_wake(), Some(start));
        }
    }

    #[test]
    fn no_operation_starts_at_or_after_the_run_end_but_the_think_is_drawn() {
        let mut cfg = config();
        cfg.duration = ms(2500);
        let mut s = ClientSession::starting_at(1, 0, cfg, ms(100));
        send(s.on_wake(ms(100), &mut Unlimited));
        // Ends at 1 s: the next start (>= 2.5 s) falls outside the run.
        let done = s.on_result(
            ms(1000),
            AttemptResult::status(200),
            &strategy("A"),
            &mut Unlimited,
        );
        assert!(done.is_some());
        assert_eq!(s.next_wake(), None);
        assert!(s.is_finished());
        // The first offset is never drawn by `starting_at`: the think draw was the stream's first.
        let mut draws = stream(1, Stream::Think, 0);
        let _ = draws.random_range(1_500_000..=2_500_000u64);
        assert_eq!(s.think.random::<u64>(), draws.random::<u64>());
        // A drawn first start past the run's end means the client never starts.
        cfg.duration = Duration::from_micros(1);
        let late = (0..50)
            .map(|c| ClientSession::new(7, c, cfg))
            .filter(|s| s.next_wake().is_none())
            .count();
        assert!(late >= 49, "{late} of 50 clients idle in a 1 us run");
    }

    #[test]
    fn retries_are_due_after_the_strategys_wait_and_carry_their_ids_and_keys() {
        let mut s = ClientSession::starting_at(1, 7, config(), ms(100));
        let mut budget = Counting::default();
        let b = strategy("B");
        let a1 = send(s.on_wake(ms(100), &mut budget));
        assert_eq!(budget.deposits, 1);
        assert_eq!(
            a1,
            Outgoing {
                id: AttemptId {
                    client: 7,
                    op: 0,
                    attempt: 1
                },
                due: ms(100),
                timeout: ms(2000),
                class: Priority::Critical,
                flow: None,
                step: None,
                replica: 0,
            }
        );
        assert_eq!(s.next_wake(), None, "nothing to wake for while in flight");
        assert_eq!(
            s.on_result(ms(150), AttemptResult::status(503), &b, &mut budget),
            None
        );
        assert_eq!(s.next_wake(), Some(ms(350)));
        // Woken late: sent at 360 ms, still due at 350 ms.
        let a2 = send(s.on_wake(ms(360), &mut budget));
        assert_eq!((a2.id.attempt, a2.due), (2, ms(350)));
        assert_eq!(a2.id.key(), request_key(7, 0, 2));
        assert_ne!(a2.id.key(), a1.id.key());
        assert_eq!(budget.deposits, 1, "one deposit per operation");
        assert_eq!(budget.withdrawals, 1);
        let done = s
            .on_result(ms(400), AttemptResult::status(200), &b, &mut budget)
            .unwrap();
        assert_eq!(done.attempts, 2);
        assert_eq!(done.outcome, OpOutcome::Success);
    }

    #[test]
    fn a_retry_woken_past_the_deadline_ends_unsent() {
        let mut s = ClientSession::starting_at(1, 0, config(), ms(0));
        let b = strategy("B");
        send(s.on_wake(ms(0), &mut Unlimited));
        assert_eq!(
            s.on_result(ms(4700), AttemptResult::Timeout, &b, &mut Unlimited),
            None
        );
        // Due at 4.9 s, but the driver only wakes at 5.1 s.
        let Wake::Ended(end) = s.on_wake(ms(5100), &mut Unlimited) else {
            panic!("nothing may be sent past the deadline")
        };
        assert_eq!(end.attempts, 1);
        assert_eq!(end.outcome, OpOutcome::Failed(GiveUp::Deadline));
        assert_eq!(end.end, ms(5100));
        assert_eq!(s.op_no(), 1);
    }

    #[test]
    fn abort_counts_the_attempt_in_flight_and_stops_the_client() {
        let b = strategy("B");
        let mut s = ClientSession::starting_at(1, 0, config(), ms(0));
        assert_eq!(s.abort(ms(0), &mut Unlimited), None, "nothing in progress");
        assert!(s.is_finished());

        let mut s = ClientSession::starting_at(1, 0, config(), ms(0));
        send(s.on_wake(ms(0), &mut Unlimited));
        let end = s.abort(ms(50), &mut Unlimited).unwrap();
        assert_eq!((end.attempts, end.end), (1, ms(50)));
        assert_eq!(end.outcome, OpOutcome::Failed(GiveUp::Aborted));
        assert_eq!(s.next_wake(), None);

        let mut s = ClientSession::starting_at(1, 0, config(), ms(0));
        send(s.on_wake(ms(0), &mut Unlimited));
        s.on_result(ms(10), AttemptResult::status(503), &b, &mut Unlimited);
        let end = s.abort(ms(20), &mut Unlimited).unwrap();
        assert_eq!(
            end.attempts, 1,
            "the retry waiting for its time was not sent"
        );
    }

    /// A strategy that hedges with `max_attempts` and a fixed `delay`, under gRPC's throttle.
    fn hedging(max_attempts: u32, delay: Duration) -> Strategy {
        Strategy {
            budget: Some(BudgetSpec::grpc()),
            hedge: Some(HedgeSpec {
                max_attempts,
                delay: crate::hedge::HedgeDelay::Fixed {
                    delay_us: delay.as_micros() as u64,
                },
            }),
            ..strategy("C")
        }
    }

    fn hedged_session(s: &Strategy) -> ClientSession {
        ClientSession::starting_at(7, 0, config(), Duration::ZERO).with_hedging(s.hedge)
    }

    fn id(attempt: u32) -> AttemptId {
        AttemptId {
            client: 0,
            op: 0,
            attempt,
        }
    }

    /// A6, "Hedging Policy": with `maxAttempts` 4 and `hedgingDelay` 0.5 s, "after 1ms there
    /// would be one outstanding RPC (the original), after 501ms two, after 1001ms three, and
    /// after 1501ms four"; "when a non-error response is received, all outstanding hedged
    /// requests are canceled". By hand: attempts at 0, 500, 1000, 1500 ms (each with the 2 s
    /// attempt timeout); attempt 3 answers 200 at 1600 ms; the operation succeeds with 4
    /// attempts sent and 1, 2 and 4 are cancelled.
    #[test]
    fn a6_hedges_every_delay_and_the_first_good_answer_cancels_the_rest() {
        let s = hedging(4, ms(500));
        let mut policy = crate::policy::ClientPolicy::new(&s, 7);
        let mut c = hedged_session(&s);
        let mut sent = Vec::new();
        while let Some(t) = c.next_wake() {
            let a = send(c.on_wake(t, &mut policy));
            assert_eq!(a.timeout, ms(2000));
            sent.push((a.id.attempt, t));
        }
        assert_eq!(
            sent,
            [(1, ms(0)), (2, ms(500)), (3, ms(1000)), (4, ms(1500))]
        );
        let end = c
            .on_answer(id(3), ms(1600), AttemptResult::status(200), &s, &mut policy)
            .expect("the good answer ends it");
        assert_eq!(end.outcome, OpOutcome::Success);
        assert_eq!(end.attempts, 4);
        let mut cancels = Vec::new();
        c.drain_cancelled(&mut cancels);
        assert_eq!(cancels, [id(1), id(2), id(4)]);
        // A cancelled attempt's answer, had it raced in, changes nothing.
        assert_eq!(
            c.on_answer(id(1), ms(1601), AttemptResult::status(200), &s, &mut policy),
            None
        );
    }

    /// A6, "Summary of Retry and Hedging Logic", items 2 and 3: a non-fatal status "immediately
    /// send[s] next scheduled hedged request ... Subsequent hedged requests will resume at
    /// hedgingDelay"; a fatal one cancels the rest. By hand, delay 500 ms, 4 attempts: 503 from
    /// 1 at 100 ms, so 2 goes at 100 ms and the next is due at 600 ms; 503 from 2 at 150 ms,
    /// so 3 goes at 150 ms, the next due at 650 ms; 4 goes at 650 ms; a 404 from 4 at 700 ms
    /// ends the operation (not retryable), 4 attempts sent, 3 cancelled.
    #[test]
    fn a6_a_non_fatal_answer_hedges_at_once_and_a_fatal_one_ends_the_call() {
        let s = hedging(4, ms(500));
        let mut policy = crate::policy::ClientPolicy::new(&s, 7);
        let mut c = hedged_session(&s);
        send(c.on_wake(ms(0), &mut policy));
        assert_eq!(c.next_wake(), Some(ms(500)));
        assert_eq!(
            c.on_answer(id(1), ms(100), AttemptResult::status(503), &s, &mut policy),
            None
        );
        assert_eq!(c.next_wake(), Some(ms(100)));
        assert_eq!(send(c.on_wake(ms(100), &mut policy)).id, id(2));
        assert_eq!(c.next_wake(), Some(ms(600)));
        c.on_answer(id(2), ms(150), AttemptResult::status(503), &s, &mut policy);
        assert_eq!(send(c.on_wake(ms(150), &mut policy)).id, id(3));
        assert_eq!(c.next_wake(), Some(ms(650)));
        assert_eq!(send(c.on_wake(ms(650), &mut policy)).id, id(4));
        assert_eq!(c.next_wake(), None, "4 attempts: no more hedges");
        let end = c
            .on_answer(id(4), ms(700), AttemptResult::status(404), &s, &mut policy)
            .unwrap();
        assert_eq!(end.outcome, OpOutcome::Failed(GiveUp::NotRetryable));
        assert_eq!(end.attempts, 4);
        let mut cancels = Vec::new();
        c.drain_cancelled(&mut cancels);
        assert_eq!(cancels, [id(3)]);
    }

    /// A6, "Throttling Retry Attempts and Hedged RPCs": "the first outgoing RPC will always be
    /// sent, but subsequent hedged RPCs will only be sent if token_count is greater than the
    /// threshold"; "the hedged request is cancelled, and if there are no other already-sent
    /// hedged RPCs the failure is returned". By hand: 5 failures take the 10 tokens to 5, the
    /// threshold; attempt 1 goes at 0; the hedge due at 500 ms is refused (nothing sent, no
    /// hedge after it); attempt 1's 503 at 800 ms then ends the operation, budget denied, 1
    /// attempt sent. And "if all instances of a hedged RPC fail, there are no additional retry
    /// attempts": with tokens to spare, 2 attempts that both fail end it, attempts exhausted.
    #[test]
    fn a6_the_throttle_stops_hedges_and_failed_hedges_are_not_retried() {
        let s = hedging(4, ms(500));
        let mut policy = crate::policy::ClientPolicy::new(&s, 7);
        for _ in 0..5 {
            policy.record(ms(0), 1, AttemptClass::Failure(RetryCause::Error));
        }
        assert_eq!(policy.budget_tokens(), Some(5.0));
        let mut c = hedged_session(&s);
        send(c.on_wake(ms(0), &mut policy));
        assert_eq!(c.on_wake(ms(500), &mut policy), Wake::Wait);
        assert_eq!(c.next_wake(), None);
        let end = c
            .on_answer(id(1), ms(800), AttemptResult::status(503), &s, &mut policy)
            .unwrap();
        assert_eq!(end.outcome, OpOutcome::Failed(GiveUp::BudgetDenied));
        assert_eq!(end.attempts, 1);

        let s = hedging(2, ms(500));
        let mut policy = crate::policy::ClientPolicy::new(&s, 7);
        let mut c = hedged_session(&s);
        send(c.on_wake(ms(0), &mut policy));
        c.on_answer(id(1), ms(10), AttemptResult::status(503), &s, &mut policy);
        assert_eq!(send(c.on_wake(ms(10), &mut policy)).id, id(2));
        let end = c
            .on_answer(id(2), ms(20), AttemptResult::status(503), &s, &mut policy)
            .unwrap();
        assert_eq!(end.outcome, OpOutcome::Failed(GiveUp::AttemptsExhausted));
        assert_eq!(end.attempts, 2);
    }

    /// A percentile delay hedges at the strategy's p95 once 20 good answers are recorded, and
    /// not before (no expected latency yet).
    #[test]
    fn a_percentile_delay_waits_for_its_record() {
        let s = Strategy {
            hedge: Some(HedgeSpec {
                max_attempts: 2,
                delay: crate::hedge::HedgeDelay::Percentile { pct: 95.0 },
            }),
            ..strategy("C")
        };
        let mut policy = crate::policy::ClientPolicy::new(&s, 7);
        let mut c = hedged_session(&s);
        send(c.on_wake(ms(0), &mut policy));
        assert_eq!(c.next_wake(), None, "no record yet: no hedge");
        for v in 1..=20 {
            policy.good_answer(ms(v));
        }
        c.on_answer(id(1), ms(30), AttemptResult::status(200), &s, &mut policy);
        // Its own answer (30 ms) joined the record: 21 round trips, p95 rank 20 = 20 ms.
        let t = c.next_wake().unwrap();
        send(c.on_wake(t, &mut policy));
        assert_eq!(c.next_wake(), Some(t + ms(20)));
    }
}
