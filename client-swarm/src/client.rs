//! One closed-loop client and the operation loop, the same code for every strategy.
//!
//! The client is the core's [`ClientSession`]: it decides when each operation starts (a seeded
//! first offset, then think times), numbers operations and attempts, deposits into the budget,
//! and runs each operation's [`e03_core::Operation`] state machine. This file is its live
//! driver: it sleeps until the session's next wake-up, supplies `now` (tokio's clock relative
//! to the run's time zero), sends the attempts the session asks for and logs them. The strategy
//! and the budget are data: A to D (and any strategy added later) run through the same loop;
//! the budget is one `AnyBudget` per strategy, shared by all its clients.
//!
//! Timing fidelity (coordinated omission): every attempt records when it was *due* (operation
//! start, or the end of its retry wait), when it was actually *sent* and when it ended.
//! Schedules are absolute (`sleep_until(t0 + due)`), so a late wake-up never shifts the
//! following ones. The sleeps use the precise timer (crate `precise-timer`), not tokio's 1 ms wheel,
//! and a retry that is already due (an immediate retry) is sent at once.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use e03_core::arrivals::{Arrival, OpenLoop};
use e03_core::events::{
    us, Attempt, AttemptEnd, BreakerChange, Dropped, Event, OperationRecord, Outcome, RunTag,
};
use e03_core::operation::Limits;
use e03_core::policy::ClientPolicy;
use e03_core::session::{ClientSession, OpEnd, SendAttempt, SessionConfig, Starts, Wake};
use e03_core::{AttemptResult, GiveUp, OpOutcome, Strategy};
use precise_timer::PreciseTimer;
use tokio::sync::mpsc;
use tokio::time::{timeout_at, Instant};

use crate::http::{AttemptId, WorkEndpoint};
use crate::log::LogTx;
use crate::metrics::metrics;
use crate::stop::StopSignal;

/// What every client of one strategy shares during one run.
pub(crate) struct StrategyRun {
    /// Stamped on every record.
    pub tag: RunTag,
    /// Decides the waits between attempts (and whether a budget applies).
    pub strategy: Strategy,
    /// Where the attempts go.
    pub work: WorkEndpoint,
    /// The strategy's retry budget and breaker, one for the whole swarm.
    pub budget: Arc<Mutex<ClientPolicy>>,
    /// The run's time zero; every `*_us` is measured from it.
    pub t0: Instant,
    /// Seeds the clients' random streams.
    pub seed: u64,
    pub limits: Limits,
    /// Operations start in [0, duration).
    pub duration: Duration,
    /// Think time bounds, inclusive.
    pub think: (Duration, Duration),
    /// When operations start.
    pub starts: Starts,
    /// Operations per client at most.
    pub max_ops: Option<u32>,
    /// Wakes the scheduled sends at their due time (tokio's timer is 1 ms coarse).
    pub timer: PreciseTimer,
    /// Every attempt is a POST to the work URL itself (`lab client`, `E03_TARGET_METHOD=POST`).
    pub post: bool,
}

impl StrategyRun {
    /// Time since time zero (zero before it).
    pub(crate) fn now(&self) -> Duration {
        Instant::now().saturating_duration_since(self.t0)
    }

    fn session_config(&self) -> SessionConfig {
        SessionConfig {
            limits: self.limits,
            duration: self.duration,
            think: self.think,
            starts: self.starts,
            max_ops: self.max_ops,
        }
    }

    pub(crate) fn budget(&self) -> std::sync::MutexGuard<'_, ClientPolicy> {
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

/// How an operation ended, for the client loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OpDone {
    pub end: Duration,
    pub attempts: u32,
    pub outcome: OpOutcome,
}

/// Runs client `client` until its next start would be at or after the run's duration, or the
/// stop signal is raised.
pub(crate) async fn run_client(
    run: Arc<StrategyRun>,
    client: u32,
    log: LogTx,
    mut stop: StopSignal,
) -> ClientTotals {
    let mut session = ClientSession::new(run.seed, client, run.session_config());
    let mut totals = ClientTotals::default();
    while let Some(start) = session.next_wake() {
        tokio::select! {
            biased;
            _ = stop.stopped() => {
                totals.cut_short = true;
                break;
            }
            _ = run.timer.sleep_until((run.t0 + start).into_std()) => {}
        }
        let done = run_operation(&run, &mut session, &log, &mut stop).await;
        totals.operations += 1;
        totals.attempts += u64::from(done.attempts);
        if done.outcome == OpOutcome::Failed(GiveUp::Aborted) {
            totals.cut_short = true;
            break;
        }
    }
    totals
}

/// An operation of the open loop ended: its slot, its session (back for the next arrival) and
/// how it ended.
type SlotDone = (u32, ClientSession, OpDone);

/// The open loop of one strategy: operations arrive by the core's [`OpenLoop`] (Poisson, seeded)
/// whatever the dependency does; each runs as its own task in a slot of the loop's bounded pool,
/// so a stalled dependency never slows the arrivals. An arrival while `E03_MAX_IN_FLIGHT`
/// operations are in progress is dropped and logged (`dropped` record). Ends when the last
/// arrival's operation has ended, or at the stop signal.
pub(crate) async fn run_open_loop(
    run: Arc<StrategyRun>,
    mut open: OpenLoop,
    log: LogTx,
    mut stop: StopSignal,
) -> ClientTotals {
    let mut sessions: Vec<Option<ClientSession>> = Vec::new();
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<SlotDone>();
    let mut in_flight = 0usize;
    let mut totals = ClientTotals::default();
    let finished = |(slot, session, done): SlotDone,
                    sessions: &mut Vec<Option<ClientSession>>,
                    open: &mut OpenLoop,
                    totals: &mut ClientTotals| {
        sessions[slot as usize] = Some(session);
        open.release(slot);
        totals.operations += 1;
        totals.attempts += u64::from(done.attempts);
        if done.outcome == OpOutcome::Failed(GiveUp::Aborted) {
            totals.cut_short = true;
        }
    };
    'arrivals: while let Some(t) = open.next_arrival() {
        let sleep = run.timer.sleep_until((run.t0 + t).into_std());
        tokio::pin!(sleep);
        loop {
            tokio::select! {
                biased;
                _ = stop.stopped() => {
                    totals.cut_short = true;
                    break 'arrivals;
                }
                Some(msg) = done_rx.recv() => {
                    in_flight -= 1;
                    finished(msg, &mut sessions, &mut open, &mut totals);
                }
                _ = &mut sleep => break,
            }
        }
        match open.on_arrival() {
            Arrival::Start { slot, start, new } => {
                let mut session = match new {
                    Some(s) => {
                        sessions.push(None);
                        *s
                    }
                    None => sessions[slot as usize]
                        .take()
                        .expect("a free slot holds its session"),
                };
                session.begin(start);
                in_flight += 1;
                let (run, log, mut stop, tx) =
                    (run.clone(), log.clone(), stop.clone(), done_tx.clone());
                tokio::spawn(async move {
                    let done = run_operation(&run, &mut session, &log, &mut stop).await;
                    let _ = tx.send((slot, session, done));
                });
            }
            Arrival::Dropped { start } => {
                let _ = log
                    .send(Event::Dropped(Dropped {
                        tag: run.tag.clone(),
                        intended_us: us(start),
                    }))
                    .await;
            }
        }
    }
    while in_flight > 0 {
        let Some(msg) = done_rx.recv().await else {
            break;
        };
        in_flight -= 1;
        finished(msg, &mut sessions, &mut open, &mut totals);
    }
    totals
}

/// The session's next operation, whose start is due now: attempts until the session says it
/// ended, every attempt and the operation itself logged.
pub(crate) async fn run_operation(
    run: &StrategyRun,
    session: &mut ClientSession,
    log: &LogTx,
    stop: &mut StopSignal,
) -> OpDone {
    let client = session.client();
    let end = loop {
        let sent_at = Instant::now();
        let sent = sent_at.saturating_duration_since(run.t0);
        let (wake, changes) = {
            let mut policy = run.budget();
            let wake = session.on_wake(sent, &mut *policy);
            (wake, policy.take_transitions())
        };
        log_breaker(run, log, changes).await;
        let attempt = match wake {
            Wake::Send(attempt) => attempt,
            Wake::Ended(end) => break end,
            Wake::Rejected { attempt, why, end } => {
                let mut record = attempt_record(run, &attempt, sent, sent, AttemptEnd::FailedFast);
                record.rejection = Some(why);
                let _ = log.send(Event::Attempt(record)).await;
                if let Some(m) = metrics() {
                    m.attempt(
                        &run.tag.strategy,
                        attempt.id.attempt,
                        AttemptEnd::FailedFast,
                        None,
                        None,
                    );
                    m.failed_fast(&run.tag.strategy, why);
                }
                break end;
            }
        };
        let id = AttemptId {
            client,
            op: attempt.id.op,
            attempt: attempt.id.attempt,
        };
        // A charging strategy: its key policy decides the attempt's Idempotency-Key.
        let key = run
            .strategy
            .idempotency
            .and_then(|policy| policy.key(run.seed, client, id.op, id.attempt));
        let req = if run.post {
            run.work.post_request(id, key.as_deref())
        } else if run.strategy.idempotency.is_some() {
            run.work.charge_request(id, key.as_deref())
        } else {
            run.work.request(id)
        };
        let result = tokio::select! {
            r = timeout_at(sent_at + attempt.timeout, run.work.execute(req)) => {
                Some(r.unwrap_or(AttemptResult::Timeout))
            }
            // Not at once: a request still connecting would never reach the server.
            _ = stop.stopped_in_flight() => None,
        };
        let now = run.now();
        let record = |end: AttemptEnd, status: Option<u16>| {
            Event::Attempt(Attempt {
                status,
                ..attempt_record(run, &attempt, sent, now, end)
            })
        };
        let Some(result) = result else {
            let _ = log.send(record(AttemptEnd::Aborted, None)).await;
            if let Some(m) = metrics() {
                m.attempt(
                    &run.tag.strategy,
                    attempt.id.attempt,
                    AttemptEnd::Aborted,
                    None,
                    Some(now.saturating_sub(sent)),
                );
            }
            break session
                .abort(now, &mut *run.budget())
                .expect("an attempt was in flight");
        };
        let (end, status) = AttemptEnd::of(&result);
        crate::progress::attempt_ended(status);
        // A closed log means its writer failed; that error is reported when the run ends.
        let _ = log.send(record(end, status)).await;
        if let Some(m) = metrics() {
            m.attempt(
                &run.tag.strategy,
                attempt.id.attempt,
                end,
                status,
                Some(now.saturating_sub(sent)),
            );
        }
        let (ended, changes, tokens) = {
            let mut policy = run.budget();
            let ended = session.on_result(now, result, &run.strategy, &mut *policy);
            (ended, policy.take_transitions(), policy.budget_tokens())
        };
        if let (Some(m), Some(tokens)) = (metrics(), tokens) {
            m.budget_tokens(&run.tag.strategy, tokens);
        }
        log_breaker(run, log, changes).await;
        if let Some(end) = ended {
            break end;
        }
        let due = session.next_wake().expect("a retry is due");
        tokio::select! {
            biased;
            _ = stop.stopped() => {
                break session.abort(run.now(), &mut *run.budget()).expect("a retry was due")
            }
            _ = run.timer.sleep_until((run.t0 + due).into_std()) => {}
        }
    };
    let OpEnd {
        op,
        start,
        end,
        attempts,
        outcome,
        ..
    } = end;
    crate::progress::operation_ended();
    if let Some(m) = metrics() {
        m.operation(&run.tag.strategy, outcome);
    }
    let (outcome_field, reason) = match outcome {
        OpOutcome::Success => (Outcome::Success, None),
        OpOutcome::Failed(why) => (Outcome::Failed, Some(why)),
    };
    let _ = log
        .send(Event::Operation(OperationRecord {
            tag: run.tag.clone(),
            client,
            op,
            start_us: us(start),
            end_us: us(end),
            attempts,
            outcome: outcome_field,
            reason,
            flow: None,
        }))
        .await;
    OpDone {
        end,
        attempts,
        outcome,
    }
}

/// The log record of `attempt`, sent (or refused) at `sent`, ended at `ended` with `end`.
fn attempt_record(
    run: &StrategyRun,
    attempt: &SendAttempt,
    sent: Duration,
    ended: Duration,
    end: AttemptEnd,
) -> Attempt {
    Attempt {
        tag: run.tag.clone(),
        client: attempt.id.client,
        op: attempt.id.op,
        attempt: attempt.id.attempt,
        due_us: us(attempt.due),
        sent_us: us(sent),
        end_us: us(ended),
        end,
        status: None,
        rejection: None,
        flow: None,
        step: None,
        retry_after_us: None,
    }
}

/// Logs the breaker's state changes (taken from the policy under its lock, logged after it).
async fn log_breaker(run: &StrategyRun, log: &LogTx, changes: Vec<e03_core::breaker::Transition>) {
    for t in changes {
        if let Some(m) = metrics() {
            m.breaker(&run.tag.strategy, t.to);
        }
        let _ = log
            .send(Event::Breaker(BreakerChange {
                tag: run.tag.clone(),
                t_us: us(t.at),
                from: t.from,
                to: t.to,
            }))
            .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::build_client;
    use crate::log::{test_log, test_log_events};
    use crate::stop::stop_pair;
    use axum::extract::State;
    use axum::http::StatusCode;
    use axum::routing::get;
    use axum::Router;
    use e03_core::budget::BudgetSpec;
    use e03_core::rng::{stream, Stream};
    use e03_core::session::FIRST_START_SPREAD_US;
    use rand::Rng;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    /// `/flaky/work`: 503 twice, then 200. `/missing/work`: 404. `/hang/work`: no answer for
    /// 30 s. `/ok/work`: 200.
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
            budget: Arc::new(Mutex::new(ClientPolicy::new(&strategy, 42))),
            strategy,
            work: WorkEndpoint {
                http: build_client(4, None, e03_core::strategy::Connections::Reuse).unwrap(),
                url: crate::http::endpoint(base, path).unwrap(),
            },
            t0: Instant::now(),
            seed: 42,
            limits,
            duration: ms(500),
            think: (ms(100), ms(200)),
            starts: Starts::ClosedLoop,
            max_ops: None,
            timer: PreciseTimer::start(),
            post: false,
        }
    }

    fn limits(timeout_ms: u64, deadline_ms: u64) -> Limits {
        Limits {
            max_attempts: 4,
            attempt_timeout: ms(timeout_ms),
            deadline: ms(deadline_ms),
        }
    }

    /// Runs one operation starting now and returns it with the records it logged.
    async fn one_op(run: &StrategyRun) -> (OpDone, Vec<Event>) {
        let (log, path) = test_log().await;
        let (_trigger, mut stop) = stop_pair();
        let mut session = ClientSession::starting_at(42, 0, run.session_config(), run.now());
        let done = run_operation(run, &mut session, &log.sender(), &mut stop).await;
        (done, test_log_events(log, &path).await)
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

    #[tokio::test]
    async fn two_503_then_200_takes_exactly_three_attempts() {
        let base = test_server().await;
        let run = strategy_run(&base, "/flaky/work", "B", limits(2000, 5000));
        let (done, events) = one_op(&run).await;
        assert_eq!(done.outcome, OpOutcome::Success);
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

    #[tokio::test]
    async fn a_404_ends_the_operation_at_once() {
        let base = test_server().await;
        let run = strategy_run(&base, "/missing/work", "A", limits(2000, 5000));
        let (done, events) = one_op(&run).await;
        assert_eq!(done.outcome, OpOutcome::Failed(GiveUp::NotRetryable));
        assert_eq!(attempts(&events).len(), 1);
    }

    #[tokio::test]
    async fn a_hanging_answer_is_a_timeout_and_the_deadline_ends_the_operation() {
        let base = test_server().await;
        // Timeout 300 ms, deadline 700 ms, immediate retries: attempts time out at ~300 ms
        // and ~600 ms, the third gets the remaining ~100 ms, then the deadline is reached.
        let run = strategy_run(&base, "/hang/work", "A", limits(300, 700));
        let (done, events) = one_op(&run).await;
        let a = attempts(&events);
        assert!(a
            .iter()
            .all(|a| a.end == AttemptEnd::Timeout && a.status.is_none()));
        assert!(a.len() >= 2, "{} attempts", a.len());
        // Each timeout takes at least its timeout (tokio timers never fire early).
        assert!(a[0].end_us - a[0].sent_us >= 300_000);
        assert!(matches!(
            done.outcome,
            OpOutcome::Failed(GiveUp::Deadline | GiveUp::AttemptsExhausted)
        ));
        // Nothing runs past the deadline by more than scheduling slack (generous: 2-core CI).
        assert!(done.end <= run.limits.deadline + ms(300), "{:?}", done.end);
    }

    #[tokio::test]
    async fn a_client_starts_and_thinks_as_its_seeded_stream_says() {
        let base = test_server().await;
        let mut run = strategy_run(&base, "/ok/work", "A", limits(2000, 5000));
        let mut draws = stream(42, Stream::Think, 3);
        let first = draws.random_range(0..FIRST_START_SPREAD_US);
        run.duration = Duration::from_micros(first) + ms(400);
        let run = Arc::new(run);
        let (log, path) = test_log().await;
        let (_trigger, stop) = stop_pair();
        let totals = run_client(run.clone(), 3, log.sender(), stop).await;
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
        assert!(ops.iter().all(|op| op.start_us < us(run.duration)));
        assert!(ops
            .iter()
            .enumerate()
            .all(|(i, op)| op.op == i as u32 && op.client == 3));
    }

    #[tokio::test]
    async fn a_stop_mid_attempt_logs_it_as_aborted() {
        let base = test_server().await;
        let run = strategy_run(&base, "/hang/work", "A", limits(5000, 10_000));
        let (log, path) = test_log().await;
        let (trigger, mut stop) = stop_pair();
        let mut session = ClientSession::starting_at(42, 0, run.session_config(), run.now());
        tokio::spawn(async move {
            tokio::time::sleep(ms(200)).await;
            trigger.stop();
        });
        let done = run_operation(&run, &mut session, &log.sender(), &mut stop).await;
        assert_eq!(done.outcome, OpOutcome::Failed(GiveUp::Aborted));
        let events = test_log_events(log, &path).await;
        let a = attempts(&events);
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].end, AttemptEnd::Aborted);
        let Some(Event::Operation(op)) = events.last() else {
            panic!("no operation record")
        };
        assert_eq!(op.reason, Some(GiveUp::Aborted));
        // Stopped well before the 5 s timeout.
        assert!(done.end < ms(4000), "{:?}", done.end);
    }
}
