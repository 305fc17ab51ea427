//! Runs on the virtual clock fed to the analyzer's accumulator, one at a time or many in
//! parallel.
//!
//! A run is a pure function of (scenario, params, strategy, seed), so runs are independent
//! jobs: [`par_map`] spreads them over a few std threads that pull the next job index from an
//! atomic counter and returns the results in job order, whatever thread finished first.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use e03_metrics::facts::{Fact, OperationEnd};
use e03_metrics::metrics::{LineEnd, RunAccumulator, RunMetrics};
use e03_metrics::ScenarioSummary;
use e03_model::breaker::BreakerState;
use e03_model::events::us;
use e03_model::schedule::Answer;
use e03_model::steps::Flow;
use e03_model::{AttemptResult, OpOutcome, ReqId, Strategy};
use e03_plan::{Params, Scenario};

use crate::engine::{Engine, Observer};
use crate::queue::Nanos;

/// The analyzer's accumulator observes a simulated run by the one door it has for the logs too
/// ([`RunAccumulator::take`]): each of the engine's events is told as a [`Fact`], times in µs.
/// What each fact changes is the accumulator's business, not the simulator's.
impl Observer for RunAccumulator {
    fn arrival(&mut self, t: Nanos, req: ReqId, client: u32, op: u32, attempt: u32) {
        Observer::arrived(self, t, req, client, op, attempt);
        Observer::sent_delayed(self, t, req, client, op, attempt);
    }

    fn sent_delayed(&mut self, t: Nanos, req: ReqId, client: u32, op: u32, attempt: u32) {
        self.take(Fact::Sent {
            t_us: t / 1000,
            seq: req,
            client,
            op,
            attempt,
        });
    }

    fn arrived(&mut self, t: Nanos, req: ReqId, client: u32, op: u32, attempt: u32) {
        self.take(Fact::Reached {
            t_us: t / 1000,
            seq: req,
            client,
            op,
            attempt,
        });
    }

    /// Sent, never arrived: no arrival at the dependency.
    fn refused(&mut self, t: Nanos, req: ReqId, client: u32, op: u32, attempt: u32) {
        Observer::sent_delayed(self, t, req, client, op, attempt);
    }

    fn lost(&mut self, _t: Nanos, req: ReqId) {
        self.take(Fact::Lost { seq: req });
    }

    fn charge(&mut self, _t: Nanos, client: u32, op: u32) {
        self.take(Fact::Charge {
            client: Some(client),
            op: Some(op),
        });
    }

    fn attempt_end(&mut self, t: Nanos, req: ReqId, result: AttemptResult) {
        self.take(Fact::Ended {
            t_us: t / 1000,
            seq: req,
            end: LineEnd::from(result),
        });
    }

    fn cancelled(&mut self, t: Nanos, req: ReqId) {
        self.take(Fact::Ended {
            t_us: t / 1000,
            seq: req,
            end: LineEnd::Cancelled,
        });
    }

    fn failed_fast(&mut self, t: Nanos, client: u32, op: u32, attempt: u32) {
        self.take(Fact::FailedFast {
            t_us: t / 1000,
            client,
            op,
            attempt,
        });
    }

    fn served(&mut self, t: Nanos, req: ReqId, answer: &Answer, given_up: bool) {
        self.take(Fact::Served {
            t_us: t / 1000,
            seq: req,
            status: answer.status,
            cause: answer.cause,
            cost: answer.cost,
            worked: answer.admit.is_some(),
            given_up,
        });
    }

    fn connection_opened(&mut self, _t: Nanos, _client: u32) {
        self.take(Fact::ConnectionOpened);
    }

    fn connection_reset(&mut self, _t: Nanos, _client: u32) {
        self.take(Fact::ConnectionReset);
    }

    fn dropped(&mut self, intended: Nanos) {
        self.take(Fact::Dropped {
            intended_us: intended / 1000,
        });
    }

    fn fanout(&mut self, f: &e03_model::workload::FanOutEnd) {
        self.take(Fact::FanOut {
            start_us: us(f.start),
            end_us: us(f.end),
            success: f.success(),
            degraded: f.degraded(),
        });
    }

    fn host_change(&mut self, h: &e03_model::balancer::HostChange) {
        self.take(Fact::Host {
            t_us: us(h.at),
            replica: h.host as u32,
            change: h.change,
        });
    }

    fn breaker(&mut self, t: Nanos, from: BreakerState, to: BreakerState) {
        self.take(Fact::Breaker {
            t_us: t / 1000,
            from,
            to,
        });
    }

    fn operation(&mut self, e: &e03_model::workload::Ended) {
        self.take(Fact::Operation(OperationEnd {
            client: e.client,
            op: e.op,
            flow: Flow::of_client(e.client),
            start_us: us(e.start),
            end_us: us(e.end),
            success: e.outcome == OpOutcome::Success,
            reason: match e.outcome {
                OpOutcome::Success => None,
                OpOutcome::Failed(why) => Some(why),
            },
            class: e.class,
        }));
    }
}

/// One strategy and seed on the virtual clock, measured by the analyzer's accumulator.
pub fn simulate_run(
    scenario: Scenario,
    params: &Params,
    strategy: &Strategy,
    seed: u64,
) -> RunMetrics {
    let acc = RunAccumulator::new(scenario.clone(), params, &strategy.id, seed);
    Engine::new(scenario, params, strategy, seed, acc)
        .run()
        .finish()
}

/// Threads used for parallel runs: the machine's parallelism (at least 1).
pub fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Jobs this process has given to [`par_map`], and those finished: what a progress display
/// reads (`lab simulate` shows them once a second during a sweep).
pub static JOBS_QUEUED: AtomicUsize = AtomicUsize::new(0);
/// See [`JOBS_QUEUED`].
pub static JOBS_DONE: AtomicUsize = AtomicUsize::new(0);

/// `f` over every job on up to [`threads`] std threads; results in job order.
pub fn par_map<J: Sync, R: Send>(jobs: &[J], f: impl Fn(&J) -> R + Sync) -> Vec<R> {
    JOBS_QUEUED.fetch_add(jobs.len(), Ordering::Relaxed);
    let f = |job: &J| {
        let r = f(job);
        JOBS_DONE.fetch_add(1, Ordering::Relaxed);
        r
    };
    let workers = threads().min(jobs.len()).max(1);
    if workers == 1 {
        return jobs.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..jobs.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = jobs.get(i) else { break };
                let r = f(job);
                results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|r| r.expect("every job ran"))
        .collect()
}

/// Every (seed, strategy) of `params`, seed-major, simulated in parallel.
pub fn simulate_all(scenario: Scenario, params: &Params) -> Vec<RunMetrics> {
    let jobs: Vec<(u64, &Strategy)> = params
        .seeds()
        .iter()
        .flat_map(|seed| params.strategies().iter().map(move |s| (*seed, s)))
        .collect();
    par_map(&jobs, |(seed, strategy)| {
        simulate_run(scenario.clone(), params, strategy, *seed)
    })
}

/// Every strategy x every seed of `params`, in parallel over std threads, results in (seed,
/// strategy) order, as the summary a live run of the same parameters would give.
pub fn simulate(scenario: Scenario, params: &Params) -> ScenarioSummary {
    ScenarioSummary {
        scenario: scenario.clone(),
        model: None,
        machine: None,
        params: params.clone(),
        simulated: true,
        complete: true,
        runs: simulate_all(scenario, params),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The run of strategy `id` in `s`.
    fn run_of<'a>(s: &'a ScenarioSummary, id: &str) -> &'a RunMetrics {
        s.runs
            .iter()
            .find(|r| r.strategy == id)
            .expect("a run of it")
    }

    fn simulated(name: &str, seeds: &str) -> ScenarioSummary {
        simulated_with(name, &[("E03_SEEDS", seeds)])
    }

    /// Built-in scenario `name` simulated with these parameters.
    fn simulated_with(name: &str, raw: &[(&str, &str)]) -> ScenarioSummary {
        let scenario = Scenario::named(name).expect("built in");
        let raw = raw
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        simulate(
            scenario.clone(),
            &Params::for_scenario(&scenario, &raw).unwrap(),
        )
    }

    #[test]
    fn a_key_per_operation_never_charges_twice_and_other_keys_charge_every_retried_lost_answer() {
        let s = simulated("idempotency", "1,2,3");
        for run in &s.runs {
            let l = run
                .ledger
                .as_ref()
                .expect("a charging run has ledger figures");
            assert!(l.lost_responses > 20 && l.retried_lost > 20, "{l:?}");
            // Every operation is charged at least once (no other fault, no timeout).
            assert!(l.charges >= run.operations, "{l:?}");
            match run.strategy.as_str() {
                "key-per-op" => {
                    assert_eq!(l.duplicate_charges, 0, "{l:?}");
                    assert_eq!(l.charges, run.operations);
                }
                _ => {
                    assert_eq!(l.duplicate_charges, l.retried_lost, "{l:?}");
                    assert_eq!(l.charges, run.operations + l.duplicate_charges);
                }
            }
        }
        // The same faults hit every policy: their lost answers are the same.
        let lost = |id: &str| {
            s.runs
                .iter()
                .find(|r| r.strategy == id && r.seed == 1)
                .and_then(|r| r.ledger.as_ref())
                .map(|l| l.lost_responses)
        };
        assert_eq!(lost("key-per-op"), lost("no-key"));
        assert!(!e03_metrics::checks::any_failed(&s));
    }

    #[test]
    fn classified_retry_never_retries_a_permanent_error_and_retry_everything_wastes_two() {
        let s = simulated("classification", "4");
        let fig = |id: &str| run_of(&s, id).ledger.clone().unwrap();
        let (c, all) = (fig("C"), fig("retry-everything"));
        assert!(
            c.permanent_ops > 10 && all.permanent_ops > 10,
            "{c:?} {all:?}"
        );
        assert_eq!(c.retries_after_permanent, 0);
        assert_eq!(all.retries_after_permanent, 2 * all.permanent_ops);
        assert!(
            all.permanent_op_mean_ms >= 3.0 * c.permanent_op_mean_ms,
            "{c:?} {all:?}"
        );
        assert!(!e03_metrics::checks::any_failed(&s));
    }

    #[test]
    fn par_map_keeps_job_order() {
        let jobs: Vec<u64> = (0..100).collect();
        let out = par_map(&jobs, |j| {
            // Uneven work so that threads finish out of order.
            (0..(100 - j) * 1000).fold(*j, |a, x| a.wrapping_add(x % 3))
                - (0..(100 - j) * 1000).fold(0u64, |a, x| a.wrapping_add(x % 3))
        });
        assert_eq!(out, jobs);
    }

    #[test]
    fn par_map_counts_queued_and_finished_jobs() {
        // Other tests run par_map at the same time: the counters only grow, by at least ours.
        let (queued, done) = (
            JOBS_QUEUED.load(Ordering::SeqCst),
            JOBS_DONE.load(Ordering::SeqCst),
        );
        let jobs: Vec<u64> = (0..37).collect();
        par_map(&jobs, |j| *j);
        assert!(JOBS_QUEUED.load(Ordering::SeqCst) >= queued + 37);
        assert!(JOBS_DONE.load(Ordering::SeqCst) >= done + 37);
    }

    // The rate-limit article's step workload, driven by the one engine.
    fn ratelimit(raw: &[(&str, &str)]) -> ScenarioSummary {
        simulated_with("ratelimit", raw)
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
        let fig = |id: &str| run_of(&s, id).steps.clone().unwrap();
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
