//! The step workload live (seed 002, `E03_WORKLOAD=steps`): the core's [`StepWorkload`] on
//! tokio's clock.
//!
//! The driver wakes the workload when it asks (a step's start, `t0 + step x E03_STEP_MS`, an
//! absolute schedule) and sends over HTTP the one call it names at a time, each when the
//! previous one was answered, so the dependency sees them in the workload's order (the
//! interactive query first, then the batch items). Every attempt is logged with its flow, its
//! step and the `Retry-After` its answer carried; every operation with its flow.

use std::sync::Arc;
use std::time::Duration;

use e03_core::events::{us, Attempt, AttemptEnd, Event, OperationRecord, Outcome};
use e03_core::steps::{Call, Done, StepConfig, StepWorkload};
use e03_core::{AttemptResult, GiveUp};
use tokio::time::{timeout_at, Instant};

use crate::client::{ClientTotals, StrategyRun};
use crate::http::AttemptId;
use crate::log::LogTx;
use crate::stop::StopSignal;

/// Runs the workload of one strategy run to its last step, or until the stop signal.
pub(crate) async fn run_steps(
    run: Arc<StrategyRun>,
    cfg: StepConfig,
    log: LogTx,
    mut stop: StopSignal,
) -> ClientTotals {
    let mut workload = StepWorkload::new(cfg, &run.strategy, run.seed);
    let mut totals = ClientTotals::default();
    'run: while let Some(due) = workload.next_wake() {
        tokio::select! {
            biased;
            _ = stop.stopped() => {
                totals.cut_short = true;
                break 'run;
            }
            _ = run.timer.sleep_until((run.t0 + due).into_std()) => {}
        }
        let mut next = workload.on_wake(run.now(), &mut run.budget());
        // The step's first call is due at its start, each next one when the previous one was
        // answered.
        let mut due = due;
        loop {
            for d in std::mem::take(&mut next.ended) {
                log_done(&run, &log, &cfg, d, &mut totals).await;
            }
            let Some(call) = next.send else { break };
            let sent_at = Instant::now();
            let sent = sent_at.saturating_duration_since(run.t0);
            let req = run.work.request(AttemptId {
                client: call.flow.client(),
                op: call.op,
                attempt: call.attempt,
            });
            let result = tokio::select! {
                r = timeout_at(sent_at + run.limits.attempt_timeout, run.work.execute(req)) => {
                    Some(r.unwrap_or(AttemptResult::Timeout))
                }
                _ = stop.stopped_in_flight() => None,
            };
            let now = run.now();
            totals.attempts += 1;
            let _ = log.send(record(&run, &call, due, sent, now, result)).await;
            due = now;
            let Some(result) = result else {
                totals.cut_short = true;
                break 'run;
            };
            crate::progress::attempt_ended(match result {
                AttemptResult::Status { code, .. } => Some(code),
                _ => None,
            });
            next = workload.on_answer(result, now, &mut run.budget());
        }
    }
    for d in workload.finish() {
        log_done(&run, &log, &cfg, d, &mut totals).await;
    }
    totals
}

/// The attempt record of `call`; no `result`: the stop cut it short (`aborted`).
fn record(
    run: &StrategyRun,
    call: &Call,
    due: Duration,
    sent: Duration,
    ended: Duration,
    result: Option<AttemptResult>,
) -> Event {
    let (end, status, retry_after) = match result {
        None => (AttemptEnd::Aborted, None, None),
        Some(AttemptResult::Status { code, retry_after }) => {
            (AttemptEnd::Status, Some(code), retry_after)
        }
        Some(other) => {
            let (end, status) = AttemptEnd::of(&other);
            (end, status, None)
        }
    };
    Event::Attempt(Attempt {
        tag: run.tag.clone(),
        client: call.flow.client(),
        op: call.op,
        attempt: call.attempt,
        due_us: us(due),
        sent_us: us(sent),
        end_us: us(ended),
        end,
        status,
        rejection: None,
        flow: Some(call.flow),
        step: Some(call.step),
        retry_after_us: retry_after.map(us),
    })
}

/// Logs an operation that ended.
async fn log_done(
    run: &StrategyRun,
    log: &LogTx,
    cfg: &StepConfig,
    d: Done,
    totals: &mut ClientTotals,
) {
    totals.operations += 1;
    crate::progress::operation_ended();
    let _ = log
        .send(Event::Operation(OperationRecord {
            tag: run.tag.clone(),
            client: d.flow.client(),
            op: d.op,
            start_us: us(cfg.at(d.arrived)),
            end_us: us(cfg.at(d.ended)),
            attempts: d.attempts,
            outcome: if d.completed {
                Outcome::Success
            } else {
                Outcome::Failed
            },
            reason: (!d.completed).then_some(GiveUp::AttemptsExhausted),
            flow: Some(d.flow),
        }))
        .await;
}
