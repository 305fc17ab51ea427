//! What every client of one strategy run shares ([`StrategyRun`]) and what they did
//! ([`ClientTotals`]). The clients themselves are the core's workload, driven by
//! [`crate::drive`]. The strategy and the budget are data: A to D (and any strategy added
//! later) run through the same driver; the budget and breaker are [`Policies`]: one per
//! strategy, shared by all its clients, unless `E03_BUDGET_SCOPE` gives a shard or a client its
//! own.
//!
//! Schedules are absolute (`sleep_until(t0 + due)`), so a late wake-up never shifts the
//! following ones. The sleeps use the precise timer (crate `precise-timer`), not tokio's 1 ms
//! wheel, and a retry that is already due (an immediate retry) is sent at once.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use e03_model::events::RunTag;
use e03_model::policy::Policies;
use e03_model::session::SessionConfig;
use e03_model::workload::HeaderRules;
use e03_model::Strategy;
use precise_timer::PreciseTimer;
use tokio::time::Instant;

use crate::http::WorkEndpoint;

/// What every client of one strategy shares during one run.
pub(crate) struct StrategyRun {
    /// Stamped on every record.
    pub tag: RunTag,
    /// Decides the waits between attempts (and whether a budget applies).
    pub strategy: Strategy,
    /// Where the attempts go (replica 0 of the dependency, or the only one).
    pub work: WorkEndpoint,
    /// The dependency's other replicas (`E03_REPLICAS`), replica 1 first.
    pub replicas: Vec<WorkEndpoint>,
    /// The strategy's retry budgets and breakers, one per holder of the budget scope.
    pub budget: Arc<Mutex<Policies>>,
    /// The run's time zero; every `*_us` is measured from it.
    pub t0: Instant,
    /// Seeds the clients' random streams.
    pub seed: u64,
    /// The sessions' config: limits, duration, think times, starts, count and classes.
    pub session: SessionConfig,
    /// Wakes the scheduled sends at their due time (tokio's timer is 1 ms coarse).
    pub timer: PreciseTimer,
    /// Every attempt is a POST to the work URL itself (`lab client`, `E03_TARGET_METHOD=POST`).
    pub post: bool,
    /// Every attempt carries its timeout in the deadline header (`E03_ADMISSION=deadline`:
    /// the dependency reads it).
    pub deadline_header: bool,
}

impl StrategyRun {
    /// Time since time zero (zero before it).
    pub(crate) fn now(&self) -> Duration {
        Instant::now().saturating_duration_since(self.t0)
    }

    /// The sessions' config: the run's limits, duration, think times, starts, count and
    /// classes.
    pub(crate) fn session_config(&self) -> SessionConfig {
        self.session
    }

    /// How the run's attempts are headed: their idempotency keys and deadline header, the
    /// model's rules ([`HeaderRules::headers`]).
    pub(crate) fn header_rules(&self) -> HeaderRules {
        HeaderRules::of(&self.strategy, self.seed, self.deadline_header)
    }

    /// Where an attempt to `replica` goes.
    pub(crate) fn work_of(&self, replica: u16) -> &WorkEndpoint {
        match replica {
            0 => &self.work,
            r => &self.replicas[r as usize - 1],
        }
    }

    pub(crate) fn budget(&self) -> std::sync::MutexGuard<'_, Policies> {
        // A client that panicked mid-update cannot leave the bucket half-written (it is two
        // floats updated together), so a poisoned lock is still usable.
        self.budget.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What one client did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ClientTotals {
    pub operations: u64,
    pub attempts: u64,
    /// The stop signal ended the client before its natural end.
    pub cut_short: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drive::drive;
    use crate::http::build_client;
    use crate::log::{test_log, test_log_events};
    use crate::stop::stop_pair;
    use axum::extract::State;
    use axum::http::StatusCode;
    use axum::routing::get;
    use axum::Router;
    use e03_model::budget::BudgetSpec;
    use e03_model::events::{us, Attempt, AttemptEnd, Event, OperationRecord, Outcome};
    use e03_model::operation::Limits;
    use e03_model::rng::{stream, Stream};
    use e03_model::session::Starts;
    use e03_model::session::{ClientSession, FIRST_START_SPREAD_US};
    use e03_model::workload::{Clients, Ended, Next, Workload};
    use e03_model::GiveUp;
    use rand::Rng;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    /// `/flaky/work`: 503 twice, then 200. `/missing/work`: 404. `/hang/work`: no answer for
    /// 30 s. `/ok/work`: 200. `/busy/work`: 503 with `Retry-After: 2`.
    async fn test_server() -> String {
        async fn flaky(State(n): State<Arc<AtomicU32>>) -> StatusCode {
            if n.fetch_add(1, Ordering::SeqCst) < 2 {
                StatusCode::SERVICE_UNAVAILABLE
            } else {
                StatusCode::OK
            }
        }
        let app = Router::new()
            .route("/flaky/work", get(flaky))
            .route("/missing/work", get(|| async { StatusCode::NOT_FOUND }))
            .route(
                "/hang/work",
                get(|| async {
                    tokio::time::sleep(Duration::from_secs(30)).await;
                    StatusCode::OK
                }),
            )
            .route("/ok/work", get(|| async { "ok" }))
            .route(
                "/busy/work",
                get(|| async { (StatusCode::SERVICE_UNAVAILABLE, [("retry-after", "2")]) }),
            )
            .with_state(Arc::new(AtomicU32::new(0)));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        format!("http://{addr}")
    }

    fn strategy_run(base: &str, path: &str, strategy: &str, limits: Limits) -> StrategyRun {
        let budget = BudgetSpec::token_bucket(10.0, 0.1);
        let strategy = Strategy::standard(strategy, ms(20), ms(200), budget).unwrap();
        StrategyRun {
            tag: RunTag {
                run: "test".into(),
                seed: 42,
                strategy: strategy.id.clone(),
            },
            budget: Arc::new(Mutex::new(Policies::fleet(&strategy, 42))),
            strategy,
            work: WorkEndpoint {
                http: build_client(4, None, e03_model::strategy::Connections::Reuse).unwrap(),
                url: crate::http::endpoint(base, path).unwrap(),
            },
            replicas: Vec::new(),
            t0: Instant::now(),
            seed: 42,
            session: SessionConfig {
                limits,
                duration: ms(500),
                think: (ms(100), ms(200)),
                starts: Starts::ClosedLoop,
                max_ops: None,
                best_effort_ppm: 0,
            },
            timer: PreciseTimer::start(),
            post: false,
            deadline_header: false,
        }
    }

    fn limits(timeout_ms: u64, deadline_ms: u64) -> Limits {
        Limits {
            max_attempts: 4,
            attempt_timeout: ms(timeout_ms),
            deadline: ms(deadline_ms),
        }
    }

    /// Runs one operation starting now (one client, through the live driver) and returns its
    /// record with every record logged, stopped by `stop` if given.
    async fn one_op_stopped(
        mut run: StrategyRun,
        stop_after: Option<Duration>,
    ) -> (OperationRecord, Vec<Event>, StrategyRun) {
        run.session.max_ops = Some(1);
        let run = Arc::new(run);
        let (log, path) = test_log().await;
        let (trigger, signal) = stop_pair();
        let session = ClientSession::starting_at(42, 0, run.session_config(), run.now());
        let workload = Box::new(Clients::of([session], &run.strategy));
        if let Some(after) = stop_after {
            tokio::spawn(async move {
                tokio::time::sleep(after).await;
                trigger.stop();
            });
        }
        let totals = drive(run.clone(), workload, log.sender(), signal).await;
        let events = test_log_events(log, &path).await;
        let ops: Vec<OperationRecord> = events
            .iter()
            .filter_map(|e| match e {
                Event::Operation(op) => Some(op.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(ops.len(), 1, "one operation: {events:?}");
        assert_eq!(totals.operations, 1);
        let run = Arc::try_unwrap(run)
            .ok()
            .expect("the driver let go of the run");
        (ops[0].clone(), events, run)
    }

    async fn one_op(run: StrategyRun) -> (OperationRecord, Vec<Event>, StrategyRun) {
        one_op_stopped(run, None).await
    }

    fn attempts(events: &[Event]) -> Vec<&Attempt> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::Attempt(a) => Some(a),
                _ => None,
            })
            .collect()
    }

    /// A workload whose answer handling panics (a bug): the live driver must end the run,
    /// not wait forever for the attempt whose task unwound.
    struct PanicsOnAnswer(Clients);

    impl Workload for PanicsOnAnswer {
        fn next_wake(&self) -> Option<Duration> {
            self.0.next_wake()
        }
        fn on_wake(&mut self, now: Duration, policy: &mut Policies, next: &mut Next) {
            self.0.on_wake(now, policy, next)
        }
        fn on_answer(
            &mut self,
            _: e03_model::session::AttemptId,
            _: e03_model::AttemptResult,
            _: Duration,
            _: &mut Policies,
            _: &mut Next,
        ) {
            panic!("a bug in a workload");
        }
        fn stop(&mut self, now: Duration, policy: &mut Policies) -> Vec<Ended> {
            self.0.stop(now, policy)
        }
    }

    /// An attempt task that panics takes its attempt out of flight and stops the run: the
    /// driver returns, the run is marked cut short (incomplete), the attempt is logged and the
    /// operation it left ends as aborted.
    #[tokio::test]
    async fn a_panicking_attempt_task_ends_the_run_marked_incomplete() {
        let base = test_server().await;
        let mut run = strategy_run(&base, "/ok/work", "B", limits(2000, 5000));
        run.session.max_ops = Some(1);
        let run = Arc::new(run);
        let (log, path) = test_log().await;
        let (_trigger, signal) = stop_pair();
        let session = ClientSession::starting_at(42, 0, run.session_config(), run.now());
        let workload = Box::new(PanicsOnAnswer(Clients::of([session], &run.strategy)));
        let totals = tokio::time::timeout(
            Duration::from_secs(10),
            drive(run.clone(), workload, log.sender(), signal),
        )
        .await
        .expect("the driver ends instead of waiting for the task that panicked");
        assert!(totals.cut_short);
        let events = test_log_events(log, &path).await;
        let a = attempts(&events);
        assert_eq!(a.len(), 1, "{events:?}");
        assert_eq!(a[0].status, Some(200));
        let Some(Event::Operation(op)) = events.last() else {
            panic!("the operation record comes last: {events:?}")
        };
        assert_eq!((op.attempts, op.outcome), (1, Outcome::Failed));
    }

    #[tokio::test]
    async fn two_503_then_200_takes_exactly_three_attempts() {
        let base = test_server().await;
        let run = strategy_run(&base, "/flaky/work", "B", limits(2000, 5000));
        let (done, events, _) = one_op(run).await;
        assert_eq!(done.outcome, Outcome::Success);
        assert_eq!(done.attempts, 3);
        let a = attempts(&events);
        let statuses: Vec<_> = a.iter().map(|a| a.status).collect();
        assert_eq!(statuses, [Some(503), Some(503), Some(200)]);
        assert_eq!(a.iter().map(|a| a.attempt).collect::<Vec<_>>(), [1, 2, 3]);
        // B waits 20 ms then 40 ms: each retry is due that long after the previous end, and
        // is never sent before it is due.
        assert_eq!(a[1].due_us, a[0].end_us + 20_000);
        assert_eq!(a[2].due_us, a[1].end_us + 40_000);
        assert!(a
            .iter()
            .all(|a| a.sent_us >= a.due_us && a.end_us >= a.sent_us));
        let Some(Event::Operation(op)) = events.last() else {
            panic!("the operation record comes last")
        };
        assert_eq!(
            (op.attempts, op.outcome, op.reason),
            (3, Outcome::Success, None)
        );
    }

    /// Every attempt record carries the answer's `Retry-After`, whatever the workload (here a
    /// closed-loop client, one attempt allowed).
    #[tokio::test]
    async fn an_answer_s_retry_after_is_in_its_attempt_record() {
        let base = test_server().await;
        let one_attempt = Limits {
            max_attempts: 1,
            ..limits(2000, 5000)
        };
        let run = strategy_run(&base, "/busy/work", "B", one_attempt);
        let (done, events, _) = one_op(run).await;
        assert_eq!(
            (done.outcome, done.reason),
            (Outcome::Failed, Some(GiveUp::AttemptsExhausted))
        );
        let a = attempts(&events);
        assert_eq!(a.len(), 1);
        assert_eq!(
            (a[0].status, a[0].retry_after_us),
            (Some(503), Some(2_000_000))
        );
        // An answer without one logs none.
        let run = strategy_run(&base, "/missing/work", "B", one_attempt);
        let (_, events, _) = one_op(run).await;
        assert_eq!(attempts(&events)[0].retry_after_us, None);
    }

    #[tokio::test]
    async fn a_404_ends_the_operation_at_once() {
        let base = test_server().await;
        let run = strategy_run(&base, "/missing/work", "A", limits(2000, 5000));
        let (done, events, _) = one_op(run).await;
        assert_eq!(
            (done.outcome, done.reason),
            (Outcome::Failed, Some(GiveUp::NotRetryable))
        );
        assert_eq!(attempts(&events).len(), 1);
    }

    #[tokio::test]
    async fn a_hanging_answer_is_a_timeout_and_the_deadline_ends_the_operation() {
        let base = test_server().await;
        // Timeout 300 ms, deadline 700 ms, immediate retries: attempts time out at ~300 ms
        // and ~600 ms, the third gets the remaining ~100 ms, then the deadline is reached.
        let run = strategy_run(&base, "/hang/work", "A", limits(300, 700));
        let (done, events, run) = one_op(run).await;
        let a = attempts(&events);
        assert!(a
            .iter()
            .all(|a| a.end == AttemptEnd::Timeout && a.status.is_none()));
        assert!(a.len() >= 2, "{} attempts", a.len());
        // Each timeout takes at least its timeout (tokio timers never fire early).
        assert!(a[0].end_us - a[0].sent_us >= 300_000);
        assert!(matches!(
            done.reason,
            Some(GiveUp::Deadline | GiveUp::AttemptsExhausted)
        ));
        // Nothing runs past the deadline by more than scheduling slack (generous: 2-core CI).
        let end = Duration::from_micros(done.end_us);
        assert!(end <= run.session.limits.deadline + ms(300), "{end:?}");
    }

    #[tokio::test]
    async fn a_client_starts_and_thinks_as_its_seeded_stream_says() {
        let base = test_server().await;
        let mut run = strategy_run(&base, "/ok/work", "A", limits(2000, 5000));
        let mut draws = stream(42, Stream::Think, 3);
        let first = draws.random_range(0..FIRST_START_SPREAD_US);
        run.session.duration = Duration::from_micros(first) + ms(400);
        let run = Arc::new(run);
        let (log, path) = test_log().await;
        let (_trigger, stop) = stop_pair();
        // Client 3 alone: sessions 0 to 2 are there but start after the run's duration.
        let mut late = run.session_config();
        late.duration = Duration::ZERO;
        let sessions = (0..3)
            .map(|c| ClientSession::new(42, c, late))
            .chain([ClientSession::new(42, 3, run.session_config())]);
        let workload = Box::new(Clients::of(sessions, &run.strategy));
        let totals = drive(run.clone(), workload, log.sender(), stop).await;
        let mut ops = Vec::new();
        for e in test_log_events(log, &path).await {
            if let Event::Operation(op) = e {
                ops.push(op);
            }
        }
        assert_eq!(totals.operations as usize, ops.len());
        assert!(
            ops.len() >= 2,
            "{} ops in 400 ms with 100-200 ms thinks",
            ops.len()
        );
        assert_eq!(ops[0].start_us, first);
        for pair in ops.windows(2) {
            let think = draws.random_range(100_000..=200_000u64);
            assert_eq!(pair[1].start_us, pair[0].end_us + think);
        }
        assert!(ops.iter().all(|op| op.start_us < us(run.session.duration)));
        assert!(ops
            .iter()
            .enumerate()
            .all(|(i, op)| op.op == i as u32 && op.client == 3));
    }

    #[tokio::test]
    async fn a_stop_mid_attempt_logs_it_as_aborted() {
        let base = test_server().await;
        let run = strategy_run(&base, "/hang/work", "A", limits(5000, 10_000));
        let (done, events, _) = one_op_stopped(run, Some(ms(200))).await;
        assert_eq!(
            (done.outcome, done.reason),
            (Outcome::Failed, Some(GiveUp::Aborted))
        );
        let a = attempts(&events);
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].end, AttemptEnd::Aborted);
        let Some(Event::Operation(op)) = events.last() else {
            panic!("no operation record")
        };
        assert_eq!(op.reason, Some(GiveUp::Aborted));
        // Stopped well before the 5 s timeout.
        assert!(done.end_us < 4_000_000, "{}", done.end_us);
    }
}
