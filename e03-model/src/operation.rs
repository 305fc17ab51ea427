//! One client operation: up to `max_attempts` attempts, each with a timeout that never passes
//! the operation's deadline, and retries decided by a [`Strategy`] and a [`RetryBudget`].
//!
//! The loop that drives it (live or simulated) does:
//!
//! ```text
//! op = Operation::start(now, limits); budget.deposit()
//! loop {
//!     timeout = op.attempt_timeout(now)?     // None: the deadline has passed
//!     result = send attempt op.attempt() with that timeout
//!     match op.on_result(now, result, strategy, budget, rng) {
//!         Decision::Retry { wait } => sleep(wait),
//!         Decision::Done(outcome) => break,
//!     }
//! }
//! ```

use std::time::Duration;

use rand::Rng;

use crate::budget::{AttemptClass, RetryBudget};
use crate::strategy::Strategy;

/// Attempt and deadline limits of every operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Limits {
    /// First attempt plus retries. Default 4 (`E03_MAX_ATTEMPTS`).
    pub max_attempts: u32,
    /// Timeout of one attempt. Default 2 s (`E03_ATTEMPT_TIMEOUT_MS`).
    pub attempt_timeout: Duration,
    /// Deadline of the whole operation from its start. Default 5 s (`E03_DEADLINE_MS`).
    pub deadline: Duration,
}

pub use crate::attempt::AttemptResult;

/// Why an operation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GiveUp {
    /// The last answer was not retryable.
    NotRetryable,
    /// `max_attempts` were made.
    AttemptsExhausted,
    /// The wait before the next retry would cross the deadline (or no time was left).
    Deadline,
    /// The retry budget refused the retry.
    BudgetDenied,
    /// A policy layer (an open circuit breaker, client-side throttling) refused to send an
    /// attempt: it failed fast without reaching the dependency.
    FailedFast,
    /// The run was stopped (signal) before the operation ended.
    Aborted,
}

/// The final outcome of an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpOutcome {
    Success,
    Failed(GiveUp),
}

/// What the loop does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Wait this long, then send the next attempt.
    Retry {
        wait: Duration,
    },
    Done(OpOutcome),
}

/// The state of one operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operation {
    limits: Limits,
    start: Duration,
    /// Attempts sent so far (the current one included once it is sent).
    attempts: u32,
    /// The wait before the latest retry (decorrelated jitter grows from it).
    last_wait: Duration,
    /// Polly's DecorrelatedJitterBackoffV2 state (its formula's value at the latest retry), as
    /// `f64` bits (the operation stays `Eq`).
    polly: u64,
}

impl Operation {
    /// An operation starts at `now`; its first attempt is attempt 1.
    pub fn start(now: Duration, limits: Limits) -> Self {
        Self {
            limits,
            start: now,
            attempts: 1,
            last_wait: Duration::ZERO,
            polly: 0f64.to_bits(),
        }
    }

    pub fn started_at(&self) -> Duration {
        self.start
    }

    pub fn deadline(&self) -> Duration {
        self.start + self.limits.deadline
    }

    /// Number of the attempt about to be sent or in flight (1-based).
    pub fn attempt(&self) -> u32 {
        self.attempts
    }

    /// A hedge ([`crate::hedge`]) is about to be sent: it is the next attempt, with no wait and
    /// no retry decision (the session checked its budget).
    pub fn hedge(&mut self) {
        self.attempts += 1;
    }

    /// Timeout of the attempt sent at `now`: the attempt timeout, shortened so it never passes
    /// the deadline. `None` if the deadline has already passed.
    pub fn attempt_timeout(&self, now: Duration) -> Option<Duration> {
        let left = self.deadline().checked_sub(now)?;
        if left.is_zero() {
            return None;
        }
        Some(self.limits.attempt_timeout.min(left))
    }

    /// The current attempt ended at `now` with `result`: decide what comes next
    /// ([`retry_decision`], with the operation's deadline). A retry's budget token is taken
    /// here, so a retry that `Decision::Retry` announces is always sent.
    pub fn on_result<B, R>(
        &mut self,
        now: Duration,
        result: AttemptResult,
        strategy: &Strategy,
        budget: &mut B,
        rng: &mut R,
    ) -> Decision
    where
        B: RetryBudget + ?Sized,
        R: Rng + ?Sized,
    {
        let mut waits = Waits {
            last: self.last_wait,
            polly: f64::from_bits(self.polly),
        };
        let next = retry_decision(
            Tried {
                class: strategy.classify(&result),
                result: &result,
                attempts: self.attempts,
                max_attempts: strategy.max_attempts.unwrap_or(self.limits.max_attempts),
            },
            strategy,
            &mut waits,
            (now, Some(self.deadline())),
            budget,
            rng,
        );
        if let Decision::Retry { .. } = next {
            self.attempts += 1;
            self.last_wait = waits.last;
            self.polly = waits.polly.to_bits();
        }
        next
    }
}

/// What a retry's wait grows from: the wait before the previous retry (decorrelated jitter)
/// and Polly's DecorrelatedJitterBackoffV2 state ([`Strategy::retry_wait`]).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Waits {
    pub last: Duration,
    pub polly: f64,
}

/// The attempt that just ended, as the retry decision reads it.
#[derive(Debug, Clone, Copy)]
pub struct Tried<'a> {
    /// Its class by the strategy ([`Strategy::classify`]).
    pub class: AttemptClass,
    /// Its result (a `Retry-After` in it may set the wait).
    pub result: &'a AttemptResult,
    /// Attempts made so far, this one included.
    pub attempts: u32,
    /// The most the operation may make.
    pub max_attempts: u32,
}

/// The retry decision, once for every workload (an [`Operation`], and the rate-limit
/// article's steps): after an attempt ended at `now`, the operation is done, or retried after
/// a wait. A success ends it; a permanent answer ends it as not retryable; a failure is retried
/// unless `max_attempts` were made, the wait would reach the deadline, or the budget refuses
/// (it then took the retry's token). `waits` moves on only for a retry.
///
/// The order of the last two asks follows what is known: with a deadline, the wait is drawn
/// first (the deadline is judged on it) and a retry the deadline stops takes no token; without
/// one (the steps, where a retry waits for a later step), the budget is asked first and the
/// wait is drawn only for a retry that goes. The two orders draw from `rng` differently when
/// the budget refuses, and each workload's published figures were measured with its own.
pub fn retry_decision<B, R>(
    tried: Tried,
    strategy: &Strategy,
    waits: &mut Waits,
    (now, deadline): (Duration, Option<Duration>),
    budget: &mut B,
    rng: &mut R,
) -> Decision
where
    B: RetryBudget + ?Sized,
    R: Rng + ?Sized,
{
    let cause = match tried.class {
        AttemptClass::Success => return Decision::Done(OpOutcome::Success),
        AttemptClass::Permanent => return Decision::Done(OpOutcome::Failed(GiveUp::NotRetryable)),
        AttemptClass::Failure(cause) => cause,
    };
    if tried.attempts >= tried.max_attempts {
        return Decision::Done(OpOutcome::Failed(GiveUp::AttemptsExhausted));
    }
    let mut polly = waits.polly;
    let mut draw = |rng: &mut R| {
        strategy.retry_wait(tried.attempts, waits.last, &mut polly, tried.result, rng)
    };
    let wait = match deadline {
        Some(deadline) => {
            let wait = draw(rng);
            // No retry starts if its wait would cross (or reach) the deadline.
            if now + wait >= deadline {
                return Decision::Done(OpOutcome::Failed(GiveUp::Deadline));
            }
            if !budget.withdraw(now, cause) {
                return Decision::Done(OpOutcome::Failed(GiveUp::BudgetDenied));
            }
            wait
        }
        None => {
            if !budget.withdraw(now, cause) {
                return Decision::Done(OpOutcome::Failed(GiveUp::BudgetDenied));
            }
            draw(rng)
        }
    };
    *waits = Waits { last: wait, polly };
    Decision::Retry { wait }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::{BudgetSpec, TokenBucket, Unlimited};
    use crate::rng::{stream, Stream};

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn limits() -> Limits {
        Limits {
            max_attempts: 4,
            attempt_timeout: ms(2000),
            deadline: ms(5000),
        }
    }

    fn strategy(id: &str) -> Strategy {
        Strategy::standard(id, ms(200), ms(2000), BudgetSpec::token_bucket(10.0, 0.1)).unwrap()
    }

    #[test]
    fn success_ends_the_operation() {
        let mut op = Operation::start(ms(0), limits());
        let next = op.on_result(
            ms(40),
            AttemptResult::status(200),
            &strategy("A"),
            &mut Unlimited,
            &mut stream(1, Stream::Jitter, 0),
        );
        assert_eq!(next, Decision::Done(OpOutcome::Success));
    }

    /// Polly's DecorrelatedJitterBackoffV2: an operation's waits are the formula's chained
    /// sequence (each step from the previous one's state), not independent draws.
    #[test]
    fn polly_v2_waits_chain_the_operations_state() {
        let mut s = strategy("C");
        s.jitter = crate::strategy::Jitter::PollyV2;
        s.backoff = crate::strategy::Backoff::Exponential {
            base: ms(1000),
            cap: ms(600_000),
        };
        let limits = Limits {
            max_attempts: 5,
            attempt_timeout: ms(1000),
            deadline: ms(3_600_000),
        };
        let mut op = Operation::start(ms(0), limits);
        let mut rng = stream(9, Stream::Jitter, 0);
        let mut same = stream(9, Stream::Jitter, 0);
        let mut prev = 0.0;
        for i in 0..4u32 {
            let expected = crate::strategy::polly_v2_step(
                i,
                ms(1000),
                ms(600_000),
                &mut prev,
                rand::Rng::random(&mut same),
            );
            let next = op.on_result(
                ms(0),
                AttemptResult::status(503),
                &s,
                &mut Unlimited,
                &mut rng,
            );
            assert_eq!(next, Decision::Retry { wait: expected }, "retry {}", i + 1);
        }
    }

    /// A budget that counts what it is asked and grants only while `grant` says so.
    struct Asked {
        withdrawals: u32,
        grant: bool,
    }

    impl RetryBudget for Asked {
        fn deposit(&mut self, _now: Duration) {}
        fn withdraw(&mut self, _now: Duration, _cause: crate::budget::RetryCause) -> bool {
            self.withdrawals += 1;
            self.grant
        }
    }

    fn failed<'a>(result: &'a AttemptResult, s: &Strategy) -> Tried<'a> {
        Tried {
            class: s.classify(result),
            result,
            attempts: 1,
            max_attempts: 4,
        }
    }

    /// With a deadline the wait is drawn before the budget is asked; without one (the steps)
    /// only after it granted the retry: a refused retry drew a wait in the first case alone.
    #[test]
    fn the_wait_is_drawn_before_the_budget_with_a_deadline_and_after_it_without() {
        let s = strategy("C"); // full jitter: every wait is drawn
        let result = AttemptResult::status(503);
        for (deadline, drew) in [(Some(ms(60_000)), true), (None, false)] {
            let mut rng = stream(3, Stream::Jitter, 0);
            let mut waits = Waits::default();
            let mut budget = Asked {
                withdrawals: 0,
                grant: false,
            };
            let next = retry_decision(
                failed(&result, &s),
                &s,
                &mut waits,
                (ms(0), deadline),
                &mut budget,
                &mut rng,
            );
            assert_eq!(
                next,
                Decision::Done(OpOutcome::Failed(GiveUp::BudgetDenied))
            );
            assert_eq!((budget.withdrawals, waits), (1, Waits::default()));
            let mut expected = stream(3, Stream::Jitter, 0);
            if drew {
                s.retry_wait(1, Duration::ZERO, &mut 0.0, &result, &mut expected);
            }
            assert_eq!(
                rand::Rng::random::<u64>(&mut rng),
                rand::Rng::random::<u64>(&mut expected),
                "deadline {deadline:?}"
            );
        }
    }

    /// B's first wait is its base, 200 ms: a deadline 100 ms away stops the retry before the
    /// budget is asked (no token taken); without a deadline the granted retry waits 200 ms.
    #[test]
    fn a_retry_the_deadline_stops_takes_no_token() {
        let s = strategy("B");
        let result = AttemptResult::status(503);
        let mut rng = stream(3, Stream::Jitter, 0);
        let mut budget = Asked {
            withdrawals: 0,
            grant: true,
        };
        let mut waits = Waits::default();
        let at = (ms(1000), Some(ms(1100)));
        let next = retry_decision(
            failed(&result, &s),
            &s,
            &mut waits,
            at,
            &mut budget,
            &mut rng,
        );
        assert_eq!(next, Decision::Done(OpOutcome::Failed(GiveUp::Deadline)));
        assert_eq!(budget.withdrawals, 0);
        let next = retry_decision(
            failed(&result, &s),
            &s,
            &mut waits,
            (ms(1000), None),
            &mut budget,
            &mut rng,
        );
        assert_eq!(next, Decision::Retry { wait: ms(200) });
        assert_eq!((budget.withdrawals, waits.last), (1, ms(200)));
    }

    #[test]
    fn no_fifth_attempt() {
        let mut op = Operation::start(ms(0), limits());
        let mut rng = stream(1, Stream::Jitter, 0);
        let s = strategy("A");
        for expected_next in 2..=4 {
            let next = op.on_result(
                ms(10),
                AttemptResult::status(503),
                &s,
                &mut Unlimited,
                &mut rng,
            );
            assert_eq!(
                next,
                Decision::Retry {
                    wait: Duration::ZERO
                }
            );
            assert_eq!(op.attempt(), expected_next);
        }
        let next = op.on_result(
            ms(10),
            AttemptResult::status(503),
            &s,
            &mut Unlimited,
            &mut rng,
        );
        assert_eq!(
            next,
            Decision::Done(OpOutcome::Failed(GiveUp::AttemptsExhausted))
        );
    }

    #[test]
    fn non_retryable_status_ends_at_once() {
        let mut op = Operation::start(ms(0), limits());
        let next = op.on_result(
            ms(10),
            AttemptResult::status(404),
            &strategy("A"),
            &mut Unlimited,
            &mut stream(1, Stream::Jitter, 0),
        );
        assert_eq!(
            next,
            Decision::Done(OpOutcome::Failed(GiveUp::NotRetryable))
        );
    }

    #[test]
    fn retryable_set_is_the_specs() {
        for code in [408, 429, 500, 502, 503, 504] {
            assert!(AttemptResult::status(code).is_retryable(), "{code}");
        }
        for code in [400, 401, 404, 501] {
            assert!(!AttemptResult::status(code).is_retryable(), "{code}");
        }
        assert!(AttemptResult::Timeout.is_retryable());
        assert!(
            AttemptResult::ConnectionError(crate::attempt::Broken::ResetBeforeAnswer)
                .is_retryable()
        );
    }

    #[test]
    fn no_retry_whose_wait_crosses_the_deadline() {
        let mut op = Operation::start(ms(0), limits());
        let mut rng = stream(1, Stream::Jitter, 0);
        // B waits 200 ms before retry 1: allowed at 4.7 s, refused at 4.8 s.
        let mut early = op.clone();
        assert_eq!(
            early.on_result(
                ms(4700),
                AttemptResult::Timeout,
                &strategy("B"),
                &mut Unlimited,
                &mut rng
            ),
            Decision::Retry { wait: ms(200) }
        );
        assert_eq!(
            op.on_result(
                ms(4800),
                AttemptResult::Timeout,
                &strategy("B"),
                &mut Unlimited,
                &mut rng
            ),
            Decision::Done(OpOutcome::Failed(GiveUp::Deadline))
        );
    }

    #[test]
    fn attempt_timeout_is_shortened_near_the_deadline() {
        let op = Operation::start(ms(1000), limits());
        assert_eq!(op.attempt_timeout(ms(1000)), Some(ms(2000)));
        assert_eq!(op.attempt_timeout(ms(4500)), Some(ms(1500)));
        assert_eq!(op.attempt_timeout(ms(6000)), None);
        assert_eq!(op.attempt_timeout(ms(7000)), None);
    }

    #[test]
    fn retry_after_is_respected() {
        let mut op = Operation::start(ms(0), limits());
        let result = AttemptResult::Status {
            code: 429,
            retry_after: Some(ms(1000)),
        };
        let next = op.on_result(
            ms(10),
            result,
            &strategy("B"),
            &mut Unlimited,
            &mut stream(1, Stream::Jitter, 0),
        );
        assert_eq!(next, Decision::Retry { wait: ms(1000) });
    }

    #[test]
    fn budget_denial_fails_the_operation_and_deadline_refusal_costs_no_token() {
        let mut bucket = TokenBucket::new(1.0, 0.1);
        let mut rng = stream(1, Stream::Jitter, 0);
        let s = strategy("D");
        // Refused by the deadline first: the token stays.
        let mut late = Operation::start(ms(0), limits());
        assert_eq!(
            late.on_result(ms(4999), AttemptResult::Timeout, &s, &mut bucket, &mut rng),
            Decision::Done(OpOutcome::Failed(GiveUp::Deadline))
        );
        assert_eq!(bucket.tokens(), 1.0);
        let mut op = Operation::start(ms(0), limits());
        assert!(matches!(
            op.on_result(
                ms(10),
                AttemptResult::status(503),
                &s,
                &mut bucket,
                &mut rng
            ),
            Decision::Retry { .. }
        ));
        assert_eq!(
            op.on_result(
                ms(300),
                AttemptResult::status(503),
                &s,
                &mut bucket,
                &mut rng
            ),
            Decision::Done(OpOutcome::Failed(GiveUp::BudgetDenied))
        );
    }
}
