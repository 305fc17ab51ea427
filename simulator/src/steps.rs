//! The step workload (seed 002, `E03_WORKLOAD=steps`) on the virtual clock.
//!
//! The core's [`StepWorkload`] decides every call and when it is sent (its wake interface); the
//! core's [`DependencyNode`] answers them. As the live swarm does, the driver wakes the workload
//! at a step's start and sends the one call it names at a time, each when the previous one was
//! answered (so the dependency sees them in the workload's order, a service time apart); a step
//! is `E03_STEP_MS` of virtual time. Every fact goes to the analyzer's accumulator as the logs
//! would give it.

use e03_core::events::us;
use e03_core::policy::ClientPolicy;
use e03_core::schedule::{Answer, Step};
use e03_core::steps::{Call, Done, StepWorkload};
use e03_core::{AttemptResult, DependencyNode, GiveUp, Params, ReqId, Scenario, Strategy};
use e03_metrics::RunAccumulator;

/// One run of the step workload (strategy at its load, seed), measured by `acc`.
pub fn run_steps(
    scenario: Scenario,
    params: &Params,
    strategy: &Strategy,
    seed: u64,
    mut acc: RunAccumulator,
) -> RunAccumulator {
    let load = strategy.load.unwrap_or(params.steps().loads[0]);
    let cfg = params.step_config(load);
    let timeout = params.limits().attempt_timeout;
    let mut service = DependencyNode::new(params.service_config(&scenario, seed));
    let mut workload = StepWorkload::new(cfg, strategy, seed);
    let mut policy = ClientPolicy::new(strategy, seed);
    let mut out: Vec<Step> = Vec::new();
    let mut next_req: ReqId = 0;
    let report = |acc: &mut RunAccumulator, d: Done| {
        let (start, end) = (us(cfg.at(d.arrived)), us(cfg.at(d.ended)));
        RunAccumulator::operation(
            acc,
            start,
            end,
            d.completed,
            (!d.completed).then_some(GiveUp::AttemptsExhausted),
        );
        if let Some(st) = acc.steps_mut() {
            st.operation(Some(d.flow), d.completed, end);
        }
    };
    while let Some(due) = workload.next_wake() {
        let mut t = due;
        service.advance(t, &mut out);
        drain(&mut acc, &mut out);
        let mut next = workload.on_wake(t, &mut policy);
        loop {
            for d in std::mem::take(&mut next.ended) {
                report(&mut acc, d);
            }
            let Some(call) = next.send else { break };
            let req = next_req;
            next_req += 1;
            let (answer, at) = send(&mut service, &mut acc, &mut out, &call, req, t, timeout);
            t = at;
            let result = match answer {
                Some(a) => AttemptResult::Status {
                    code: a.status,
                    retry_after: a.retry_after,
                },
                None => AttemptResult::Timeout,
            };
            next = workload.on_answer(result, t, &mut policy);
        }
    }
    // Answers still due (none at a service time below a step), then what is left failed.
    while let Some(due) = service.next_due() {
        service.advance(due, &mut out);
    }
    drain(&mut acc, &mut out);
    for d in workload.finish() {
        report(&mut acc, d);
    }
    acc
}

/// Sends `call` as request `req` at `t` and waits for its answer (or its timeout): the answer,
/// if any, and the instant the wait ended.
fn send(
    service: &mut DependencyNode,
    acc: &mut RunAccumulator,
    out: &mut Vec<Step>,
    call: &Call,
    req: ReqId,
    t: std::time::Duration,
    timeout: std::time::Duration,
) -> (Option<Answer>, std::time::Duration) {
    let t_us = us(t);
    RunAccumulator::arrival(acc, t_us, Some(call.attempt));
    RunAccumulator::attempt(acc, call.attempt, t_us, t_us);
    if let Some(st) = acc.steps_mut() {
        st.call(req, Some(call.flow.client()), t_us);
    }
    service.arrive(t, req, call.key(), None, out);
    let deadline = t + timeout;
    loop {
        let mine = out.iter().find_map(|s| match s {
            Step::Answer(a) if a.req == req => Some(*a),
            _ => None,
        });
        if let Some(a) = mine {
            drain(acc, out);
            return (Some(a), a.at.max(t));
        }
        match service.next_due() {
            Some(due) if due <= deadline => service.advance(due, out),
            _ => {
                drain(acc, out);
                return (None, deadline);
            }
        }
    }
}

/// Hands every answer in `out` to the step tally (as the server log would) and clears it.
fn drain(acc: &mut RunAccumulator, out: &mut Vec<Step>) {
    for s in out.drain(..) {
        if let Step::Answer(a) = s {
            RunAccumulator::served(acc, us(a.at), false);
            if let Some(st) = acc.steps_mut() {
                st.answer(a.req, a.status, a.cause, a.cost);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ratelimit(raw: &[(&str, &str)]) -> e03_metrics::ScenarioSummary {
        let scenario = Scenario::named("ratelimit").expect("built in");
        let raw = raw
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        crate::simulate(
            scenario.clone(),
            &Params::for_scenario(&scenario, &raw).unwrap(),
        )
    }

    #[test]
    fn every_policy_runs_at_every_load_and_the_figures_add_up() {
        let s = ratelimit(&[("E03_SEEDS", "1")]);
        assert_eq!(s.runs.len(), 10, "5 policies x 2 loads");
        for r in &s.runs {
            let f = r.steps.as_ref().expect("a step run has step figures");
            assert_eq!((f.items, f.queries), (160, 60));
            assert!(f.completed <= 160 && f.interactive_completed <= 60);
            // Each batch item is called at least once (none is refused unsent here).
            assert!(f.batch_calls >= 160, "{}: {f:?}", r.strategy);
            assert!(f.wasted <= f.tokens);
            assert_eq!(
                f.calls_per_step.iter().map(|&c| c as u64).sum::<u64>(),
                f.batch_calls + f.interactive_calls
            );
        }
        let fig = |id: &str| {
            s.runs
                .iter()
                .find(|r| r.strategy == id)
                .and_then(|r| r.steps.clone())
                .unwrap()
        };
        // No retry: exactly one call per item, the same at both loads (under the limit).
        let (n3, n6) = (fig("none-L3"), fig("none-L6"));
        assert_eq!((n3.batch_calls, n6.batch_calls), (160, 160));
        assert_eq!((n3.rejected, n6.rejected), (0, 0));
        // Heavy load: fixed retries are rejected by the limit that counts rejections.
        assert!(fig("fixed-L6").rejected > 50, "{:?}", fig("fixed-L6"));
        // The cost classes: content failures cost tokens, 429s none.
        assert!(n6.content_failures > 5 && n6.wasted > 0);
    }

    #[test]
    fn a_run_is_a_pure_function_of_its_seed() {
        let a = ratelimit(&[("E03_SEEDS", "3"), ("E03_STEP_LOADS", "6")]);
        let b = ratelimit(&[("E03_SEEDS", "3"), ("E03_STEP_LOADS", "6")]);
        assert_eq!(a.runs, b.runs);
    }
}
