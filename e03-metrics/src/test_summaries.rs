//! Test-only: the runs and summaries the table tests build (`tables`, `conclusion`,
//! `live_tables`), in one place now that those tests live beside the code they test.

use e03_plan::{Params, Scenario};

use crate::fidelity::Matched;
use crate::metrics::{Fidelity, RunAccumulator, RunMetrics};
use crate::ScenarioSummary;

/// A run with the figures the conclusion and the tables read.
pub(crate) fn run(
    id: &str,
    seed: u64,
    success: f64,
    total: u64,
    retries: u64,
    peak: u64,
) -> RunMetrics {
    let mut m = RunAccumulator::new(Scenario::e03b(), &Params::default(), id, seed).finish();
    m.success_affected = success;
    m.total_requests = total;
    m.retries_sent = retries;
    m.peak_100ms = peak;
    m
}

pub(crate) fn summary(strategies: &str, runs: Vec<RunMetrics>) -> ScenarioSummary {
    let raw = [("E03_STRATEGIES", strategies)]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let params = Params::from_raw(&raw).unwrap();
    let mut s = ScenarioSummary {
        scenario: Scenario::e03b(),
        params,
        simulated: true,
        complete: true,
        runs,
        model: None,
        machine: None,
    };
    s.params = s.params.clone().with_seeds(s.seeds()).unwrap();
    s
}

/// A realistic worst case for width: six strategies, 20 seeds with wide spreads, five-digit
/// counts and live fidelity figures.
pub(crate) fn wide_summary() -> ScenarioSummary {
    let mut runs = Vec::new();
    for seed in 1..=20u64 {
        for (i, id) in ["A", "B", "C", "D", "E", "F"].iter().enumerate() {
            let k = seed as f64 / 20.0;
            let mut m = run(
                id,
                seed,
                0.70 + 0.29 * k,
                3_000 + 20 * seed + i as u64,
                1_000 + 50 * seed,
                250 + 10 * seed,
            );
            m.retries_denied = 100 + seed;
            m.peak_1s = 900 + seed;
            m.p95_ms = 900.0 + 70.0 * seed as f64;
            m.p99_ms = 1_900.0 + 100.0 * seed as f64;
            m.recovery_s = Some(seed % 4);
            m.complete = seed != 3;
            m.fidelity = Some(Fidelity {
                lateness_p50_ms: 0.12,
                lateness_p99_ms: 12.5,
                lateness_max_ms: 130.25,
                queueing_samples: 12_345,
                queueing_p99_ms: 10.5,
                queueing_max_ms: 99.75,
                answer_lateness_p99_ms: 11.5,
                answer_lateness_max_ms: 140.5,
                answer_samples: 12_000,
                saturated_s: 3.5,
                achieved_rps: Some(240.5),
                configured_rps: 250.0,
                degraded_saturated_s: 1.5,
                degraded_achieved_rps: Some(120.0),
                degraded_configured_rps: Some(125.0),
                ratio: Some(0.955),
            });
            m.matched = Some(Matched {
                client_attempts: 31_234,
                server_arrivals: 31_233,
                matched: 31_233,
                unmatched_client: 1,
                unmatched_server: 0,
                cut_by_proxy: 0,
                cancelled: 0,
            });
            m.arrivals_100ms = vec![1_234; 200];
            m.retries_100ms = vec![1_000; 200];
            runs.push(m);
        }
    }
    let mut s = summary("A,B,C,D,E,F", runs);
    s.simulated = false;
    s.complete = false;
    s
}
