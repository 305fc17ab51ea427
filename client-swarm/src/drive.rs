//! The one live driver: any [`Workload`] of the core (the closed loop's clients, a group,
//! fixed-rate callers, the open loop's arrivals, the rate-limit article's steps) on tokio's clock, over HTTP.
//!
//! The workload decides everything (when operations start, what to send, what an answer
//! changes); this file sleeps, sends and logs. It has two kinds of task, sharing the workload
//! behind one lock:
//!
//! - **the timer**: sleeps until the workload's next wake (the precise timer, an absolute
//!   schedule), hands it every wake then due, one call each, and spawns an attempt task per
//!   send. An attempt task that schedules an earlier wake, or ends the last attempt, wakes it;
//! - **an attempt task**: sends one attempt, waits for its answer or its timeout, logs it and
//!   hands the answer to the workload. What is due by then (an immediate retry, the next call of
//!   a step) it sends itself, at once, from the same task; anything else is the timer's.
//!
//! So the answers of many clients are worked on in parallel (each in its attempt's task, on
//! every core), as one task per client did, and no answer waits for another client's.
//!
//! Stop: answers no longer go to the workload; the attempts in flight end as `aborted`
//! ([`StopSignal::stopped_in_flight`]); once each is logged the workload stops
//! ([`Workload::stop`]: every operation in progress ends as aborted, an attempt in flight
//! counted as sent) and its operations are logged, after their attempts. At a natural end (no wake left, nothing in flight) the workload is stopped too: what it left
//! unfinished (the rate-limit article's batch items when the steps run out) ends then.
//!
//! A balancer with active health checks (`E03_HEALTH_INTERVAL_MS`) asks for probes too: each
//! is a task of its own (a `GET /ready` to its replica, bounded by the probe's timeout), counted
//! in flight like an attempt, logged as a `probe` record, its answer handed to the workload.
//!
//! Timing fidelity (coordinated omission): every attempt records when it was *due* (its
//! operation's start, the end of its retry wait, its step's start or the previous call's
//! answer), when it was actually *sent* and when it ended.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use e03_model::balancer::{HealthCheckSpec, Probe};
use e03_model::breaker::Transition;
use e03_model::events::{
    us, Attempt, AttemptEnd, BreakerChange, Dropped, Event, FanOutRecord, HostRecord,
    OperationRecord, Outcome, ProbeRecord,
};
use e03_model::workload::{Effect, Ended, Headers, Next, Outgoing, Workload};
use e03_model::{AttemptResult, OpOutcome};
use tokio::sync::Notify;
use tokio::time::{timeout_at, Instant};

use crate::client::{ClientTotals, StrategyRun};
use crate::http::AttemptId;
use crate::log::LogTx;
use crate::metrics::metrics;
use crate::stop::StopSignal;

/// Runs `workload` for one strategy run until it has nothing left to do, or until the stop
/// signal; returns what its clients did.
pub(crate) async fn drive(
    run: Arc<StrategyRun>,
    workload: Box<dyn Workload + Send>,
    log: LogTx,
    stop: StopSignal,
) -> ClientTotals {
    let driver = Arc::new(Driver {
        run,
        log,
        state: Mutex::new(State {
            workload,
            in_flight: 0,
            cancels: HashMap::new(),
            armed: None,
            stopped: false,
            totals: ClientTotals::default(),
        }),
        changed: Notify::new(),
    });
    driver.clone().timer(stop).await;
    let totals = driver.lock().totals;
    totals
}

/// The workload and what the tasks share about it.
struct State {
    workload: Box<dyn Workload + Send>,
    /// Attempts sent whose task has not logged them yet.
    in_flight: usize,
    /// Each of those attempts' cancel signal, and whether the workload cancelled it (a hedged
    /// operation ended without it: its answer no longer goes to the workload).
    cancels: HashMap<e03_model::session::AttemptId, (Arc<Notify>, bool)>,
    /// The wake the timer sleeps until (`None`: it waits for an answer).
    armed: Option<Duration>,
    /// The run was stopped: answers no longer go to the workload.
    stopped: bool,
    totals: ClientTotals,
}

/// An attempt (or probe) task's hold on its place in flight. The task ends by
/// [`Unwinding::leave`]; the guard is for the one way it can end without that: unwinding from
/// a panic (a bug). Dropped while still armed,
/// it takes the attempt out of flight, stops the run (answers no longer go to the workload;
/// the timer then ends it as the stop signal would, so the run ends instead of waiting for the
/// attempt forever) and marks it cut short: its logs say it is incomplete.
struct Unwinding<'a> {
    driver: &'a Driver,
    armed: bool,
}

impl Unwinding<'_> {
    /// The task (an attempt or a probe) ends as it should: it leaves flight, and the timer
    /// looks again if it must (an earlier wake, the run's end, a stop).
    fn leave(mut self) {
        self.armed = false;
        let wake_timer = {
            let mut st = self.driver.lock();
            st.in_flight -= 1;
            let wake = st.workload.next_wake();
            let earlier = wake.is_some_and(|t| st.armed.is_none_or(|a| t < a));
            let over = wake.is_none() && st.in_flight == 0;
            earlier || over || st.stopped
        };
        if wake_timer {
            self.driver.changed.notify_one();
        }
    }
}

impl Drop for Unwinding<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        {
            let mut st = self.driver.lock();
            st.in_flight -= 1;
            st.stopped = true;
            st.totals.cut_short = true;
        }
        tracing::error!(
            strategy = %self.driver.run.tag.strategy,
            "an attempt or probe task panicked; the run stops here and is marked incomplete"
        );
        self.driver.changed.notify_one();
    }
}

/// Why the timer woke.
enum Woke {
    Stop,
    /// An earlier wake was scheduled, or the last attempt ended.
    Changed,
    /// The wake it slept until is due.
    Due,
}

/// What the workload asked, taken under the lock, acted on after it.
struct Asked {
    next: Next,
    transitions: Vec<(u32, Transition)>,
    tokens: Option<f64>,
}

struct Driver {
    run: Arc<StrategyRun>,
    log: LogTx,
    state: Mutex<State>,
    /// Wakes the timer: an earlier wake was scheduled, or the last attempt was logged.
    changed: Notify,
}

impl Driver {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A task that panicked mid-update is a bug reported by its join; the state is still
        // the workload's own.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Under the lock: every wake due by `now` (one call each), after `next` (what an answer
    /// asked, if any); the sends are counted in flight.
    fn due(&self, st: &mut State, now: Duration, mut next: Next) -> Asked {
        let mut policy = self.run.budget();
        if !st.stopped {
            while st.workload.next_wake().is_some_and(|t| t <= now) {
                st.workload.on_wake(now, &mut policy, &mut next);
            }
        }
        // What must be done under the lock, before the effects are acted on after it
        // ([`Self::effect`]): a read-only look at the sends, probes and cancels.
        st.in_flight += next.sends().len() + next.probes().len();
        // Only a hedging strategy's attempts can be cancelled.
        if self.run.strategy.hedge.is_some() {
            for send in next.sends() {
                st.cancels.insert(send.id, (Arc::new(Notify::new()), false));
            }
        }
        for id in next.cancels() {
            if let Some((signal, cancelled)) = st.cancels.get_mut(id) {
                *cancelled = true;
                // Stored if its task is not waiting yet.
                signal.notify_one();
            }
        }
        Asked {
            next,
            transitions: policy.take_transitions(),
            // Summed over the holders: only when the /metrics gauge shows it.
            tokens: metrics().and_then(|_| policy.budget_tokens()),
        }
    }

    /// The timer task (the module doc).
    async fn timer(self: Arc<Self>, mut stop: StopSignal) {
        loop {
            let wake = {
                let mut st = self.lock();
                // An attempt task unwound ([`Unwinding`]): end as the stop signal would.
                let unwound = st.stopped;
                let wake = st.workload.next_wake();
                if !unwound && wake.is_none() && st.in_flight == 0 {
                    break;
                }
                st.armed = wake;
                (!unwound).then_some(wake)
            };
            let Some(wake) = wake else {
                self.stop().await;
                break;
            };
            let sleep = async {
                match wake {
                    Some(t) => {
                        self.run
                            .timer
                            .sleep_until((self.run.t0 + t).into_std())
                            .await
                    }
                    None => std::future::pending().await,
                }
            };
            // The waiter is gone once this ends: a notification after it finds the next one
            // (a stored permit), not a stale waiter (the stop's wait below would miss it).
            let woke = tokio::select! {
                biased;
                _ = stop.stopped() => Woke::Stop,
                _ = self.changed.notified() => Woke::Changed,
                _ = sleep => Woke::Due,
            };
            match woke {
                Woke::Stop => {
                    self.stop().await;
                    break;
                }
                Woke::Changed => continue,
                Woke::Due => {}
            }
            let now = self.run.now();
            let asked = {
                let mut st = self.lock();
                st.armed = None;
                self.due(&mut st, now, Next::default())
            };
            for send in self.act(asked, &stop).await {
                self.spawn_attempt(send, &stop);
            }
        }
        // The natural end: what the workload left unfinished ends now.
        let ended = {
            let mut st = self.lock();
            let mut policy = self.run.budget();
            let now = self.run.now();
            st.workload.stop(now, &mut policy)
        };
        for e in ended {
            self.ended(e).await;
        }
    }

    /// The stop signal: answers no longer go to the workload; once every attempt in flight is
    /// logged (as `aborted`, [`StopSignal::stopped_in_flight`]), the workload stops and the
    /// operations it ends are logged after their attempts.
    async fn stop(&self) {
        {
            let mut st = self.lock();
            st.stopped = true;
            st.totals.cut_short = true;
        }
        loop {
            let notified = self.changed.notified();
            if self.lock().in_flight == 0 {
                break;
            }
            notified.await;
        }
        let ended = {
            let mut st = self.lock();
            let mut policy = self.run.budget();
            st.workload.stop(self.run.now(), &mut policy)
        };
        for e in ended {
            self.ended(e).await;
        }
    }

    /// A probe task: `GET /ready` to the probe's replica, waiting at most the probe's timeout
    /// (an answer after it the balancer ignores), logged as a `probe` record; then, as for an
    /// answer, what is due (its verdict may take the replica out of rotation or back).
    async fn probe(self: Arc<Self>, probe: Probe, stop: StopSignal) {
        // Takes the probe out of flight and stops the run if this task unwinds, as for an
        // attempt.
        let guard = Unwinding {
            driver: &self,
            armed: true,
        };
        let run = &self.run;
        let work = run.work_of(probe.host as u16);
        let sent_at = Instant::now();
        let sent = sent_at.saturating_duration_since(run.t0);
        let limit = HealthCheckSpec::default().timeout;
        let result = timeout_at(sent_at + limit, work.execute(work.ready_request()))
            .await
            .ok();
        let now = run.now();
        let status = match result {
            Some(AttemptResult::Status { code, .. }) => Some(code),
            _ => None,
        };
        let ok = status == Some(200);
        let _ = self
            .log
            .send(Event::Probe(ProbeRecord {
                tag: run.tag.clone(),
                sent_us: us(sent),
                end_us: us(now),
                replica: probe.host as u32,
                status,
                ok,
            }))
            .await;
        let asked = {
            let mut st = self.lock();
            let mut next = Next::default();
            if !st.stopped {
                st.workload.on_probe(probe, ok, now, &mut next);
            }
            self.due(&mut st, now, next)
        };
        for send in self.act(asked, &stop).await {
            self.spawn_attempt(send, &stop);
        }
        guard.leave();
    }

    /// Starts a probe task for `probe`.
    fn spawn_probe(self: &Arc<Self>, probe: Probe, stop: &StopSignal) {
        // Boxed with its type named, as an attempt task: a probe task acts too.
        let task: Pin<Box<dyn Future<Output = ()> + Send>> =
            Box::pin(self.clone().probe(probe, stop.clone()));
        tokio::spawn(task);
    }

    /// Starts an attempt task for `send`.
    fn spawn_attempt(self: &Arc<Self>, send: Outgoing, stop: &StopSignal) {
        // Boxed with its type named: an attempt task starts others.
        let task: Pin<Box<dyn Future<Output = ()> + Send>> =
            Box::pin(self.clone().attempt(send, stop.clone()));
        tokio::spawn(task);
    }

    /// An attempt task (the module doc): `send`, then whatever is due when its answer came.
    /// The attempt counts as in flight until what its answer asked is logged, so the timer
    /// cannot end the run before that.
    async fn attempt(self: Arc<Self>, mut send: Outgoing, mut stop: StopSignal) {
        loop {
            // Takes the attempt out of flight and stops the run if this task unwinds.
            let guard = Unwinding {
                driver: &self,
                armed: true,
            };
            // Only a hedging strategy's attempts can be cancelled (no lock taken otherwise).
            let cancel = if self.run.strategy.hedge.is_some() {
                self.lock().cancels.get(&send.id).map(|(n, _)| n.clone())
            } else {
                None
            };
            let (result, now) = self.send(&send, &mut stop, cancel).await;
            let asked = {
                let mut st = self.lock();
                let mut next = Next::default();
                // Cancelled, even if its answer came first: the workload no longer awaits it.
                let cancelled = st.cancels.remove(&send.id).is_some_and(|(_, c)| c);
                if let (Some(result), false, false) = (result, st.stopped, cancelled) {
                    let mut policy = self.run.budget();
                    st.workload
                        .on_answer(send.id, result, now, &mut policy, &mut next);
                }
                self.due(&mut st, now, next)
            };
            let mut sends = self.act(asked, &stop).await.into_iter();
            let first = sends.next();
            for other in sends {
                self.spawn_attempt(other, &stop);
            }
            guard.leave();
            match first {
                Some(next) => send = next,
                None => return,
            }
        }
    }

    /// Sends `send` now and logs it: its result (`None` when the stop cut it short) and when
    /// it ended (the record's end, and the instant its answer goes to the workload).
    async fn send(
        &self,
        send: &Outgoing,
        stop: &mut StopSignal,
        cancel: Option<Arc<Notify>>,
    ) -> (Option<AttemptResult>, Duration) {
        let run = &self.run;
        let sent_at = Instant::now();
        let sent = sent_at.saturating_duration_since(run.t0);
        // The model heads it: its Idempotency-Key (a charging strategy's key policy decides)
        // and its deadline header (when the dependency or the chain reads one).
        let Headers {
            idempotency_key: key,
            deadline_ms,
        } = run.header_rules().headers(send);
        let id = AttemptId {
            client: send.id.client,
            op: send.id.op,
            attempt: send.id.attempt,
            deadline_ms,
            class: send.class,
        };
        let work = run.work_of(send.replica);
        let req = if run.post {
            work.post_request(id, key.as_deref())
        } else if run.strategy.idempotency.is_some() {
            work.charge_request(id, key.as_deref())
        } else {
            work.request(id)
        };
        let cancelled = async {
            match &cancel {
                Some(signal) => signal.notified().await,
                None => std::future::pending().await,
            }
        };
        // Dropping the request closes its connection; the dependency still does the work.
        let (result, was_cancelled) = tokio::select! {
            r = timeout_at(sent_at + send.timeout, work.execute(req)) => {
                (Some(r.unwrap_or(AttemptResult::Timeout)), false)
            }
            // Not at once: a request still connecting would never reach the server.
            _ = stop.stopped_in_flight() => (None, false),
            () = cancelled => (None, true),
        };
        let now = run.now();
        let (end, status, retry_after) = match result {
            None if was_cancelled => (AttemptEnd::Cancelled, None, None),
            None => (AttemptEnd::Aborted, None, None),
            Some(AttemptResult::Status { code, retry_after }) => {
                (AttemptEnd::Status, Some(code), retry_after)
            }
            Some(other) => {
                let (end, status) = AttemptEnd::of(&other);
                (end, status, None)
            }
        };
        if result.is_some() {
            crate::progress::attempt_ended(status);
        }
        let mut record = attempt_record(run, send, sent, now, end);
        record.status = status;
        record.retry_after_us = retry_after.map(us);
        // A closed log means its writer failed; that error is reported when the run ends.
        let _ = self.log.send(Event::Attempt(record)).await;
        if let Some(m) = metrics() {
            m.attempt(
                &run.tag.strategy,
                send.id.attempt,
                end,
                status,
                Some(now.saturating_sub(sent)),
            );
        }
        (result, now)
    }

    /// Acts on what the workload asked: the breaker's changes logged, then each effect in
    /// [`Next::drain`]'s order ([`Self::effect`]); returns the attempts to send (the caller
    /// starts their tasks, or sends the first itself).
    async fn act(self: &Arc<Self>, asked: Asked, stop: &StopSignal) -> Vec<Outgoing> {
        let run = &self.run;
        let Asked {
            mut next,
            transitions,
            tokens,
        } = asked;
        if let (Some(m), Some(tokens)) = (metrics(), tokens) {
            m.budget_tokens(&run.tag.strategy, tokens);
        }
        for (holder, t) in transitions {
            if let Some(m) = metrics() {
                m.breaker(&run.tag.strategy, t.to);
            }
            let _ = self
                .log
                .send(Event::Breaker(BreakerChange {
                    tag: run.tag.clone(),
                    t_us: us(t.at),
                    from: t.from,
                    to: t.to,
                    holder,
                }))
                .await;
        }
        let mut sends = Vec::with_capacity(next.sends().len());
        for effect in next.drain() {
            self.effect(effect, stop, &mut sends).await;
        }
        sends
    }

    /// Turns one effect into IO: a record logged, a probe's task started, an attempt put in
    /// `sends` (its task is started by [`Self::act`]'s caller). One arm per kind, no wildcard:
    /// a new kind of effect does not compile until it is handled here.
    async fn effect(
        self: &Arc<Self>,
        effect: Effect,
        stop: &StopSignal,
        sends: &mut Vec<Outgoing>,
    ) {
        let run = &self.run;
        match effect {
            Effect::Refused(r) => {
                let at = run.now();
                let mut record = attempt_record(run, &r.attempt, at, at, AttemptEnd::FailedFast);
                record.rejection = Some(r.why);
                let _ = self.log.send(Event::Attempt(record)).await;
                if let Some(m) = metrics() {
                    m.attempt(
                        &run.tag.strategy,
                        r.attempt.id.attempt,
                        AttemptEnd::FailedFast,
                        None,
                        None,
                    );
                    m.failed_fast(&run.tag.strategy, r.why);
                }
            }
            Effect::Ended(e) => self.ended(e).await,
            Effect::Dropped(start) => {
                let _ = self
                    .log
                    .send(Event::Dropped(Dropped {
                        tag: run.tag.clone(),
                        intended_us: us(start),
                    }))
                    .await;
            }
            Effect::FanOut(f) => {
                let _ = self
                    .log
                    .send(Event::FanOut(FanOutRecord {
                        tag: run.tag.clone(),
                        client: f.client,
                        request: f.request,
                        start_us: us(f.start),
                        end_us: us(f.end),
                        calls: f.calls,
                        quorum: f.quorum,
                        ok: f.ok,
                        failed: f.failed,
                        fallbacks: f.fallbacks,
                        attempts: f.attempts,
                    }))
                    .await;
            }
            Effect::Host(h) => {
                let _ = self
                    .log
                    .send(Event::Host(HostRecord {
                        tag: run.tag.clone(),
                        t_us: us(h.at),
                        replica: h.host as u32,
                        change: h.change,
                    }))
                    .await;
            }
            // Signalled under the lock already ([`Self::due`]), so that the attempt's task,
            // which takes the lock when its answer comes, never hands that answer over; its
            // task logs it as cancelled.
            Effect::Cancel(_) => {}
            Effect::Probe(probe) => self.spawn_probe(probe, stop),
            Effect::Send(send) => sends.push(send),
        }
    }

    /// Logs an operation that ended.
    async fn ended(&self, e: Ended) {
        {
            let mut st = self.lock();
            st.totals.operations += 1;
            st.totals.attempts += u64::from(e.attempts);
        }
        crate::progress::operation_ended();
        if let Some(m) = metrics() {
            m.operation(&self.run.tag.strategy, e.outcome);
        }
        let (outcome, reason) = match e.outcome {
            OpOutcome::Success => (Outcome::Success, None),
            OpOutcome::Failed(why) => (Outcome::Failed, Some(why)),
        };
        let _ = self
            .log
            .send(Event::Operation(OperationRecord {
                tag: self.run.tag.clone(),
                client: e.client,
                op: e.op,
                start_us: us(e.start),
                end_us: us(e.end),
                attempts: e.attempts,
                outcome,
                reason,
                flow: e.flow,
                class: e.class,
            }))
            .await;
    }
}

/// The log record of `attempt`, sent (or refused) at `sent`, ended at `ended` with `end`.
fn attempt_record(
    run: &StrategyRun,
    attempt: &Outgoing,
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
        flow: attempt.flow,
        step: attempt.step,
        retry_after_us: None,
    }
}
