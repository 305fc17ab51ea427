//! A run is a pure function of (scenario, params, strategy, seed): same seed, same bytes;
//! another seed, another run.

use std::collections::BTreeMap;

use e03_plan::{Params, Scenario};
use simulator::{simulate, simulate_run};

fn params(pairs: &[(&str, &str)]) -> Params {
    let raw: BTreeMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Params::from_raw(&raw).unwrap()
}

#[test]
fn same_seed_gives_identical_metrics_and_series() {
    let p = Params::default();
    for scenario in [Scenario::e03a(), Scenario::e03b()] {
        for s in p.strategies() {
            let a = simulate_run(scenario.clone(), &p, s, 42);
            let b = simulate_run(scenario.clone(), &p, s, 42);
            // RunMetrics' equality covers the window series too (they are not in its JSON).
            assert_eq!(a, b, "{scenario:?} {}", s.id);
            assert!(a.total_requests > 2000, "a real run: {}", a.total_requests);
        }
    }
}

#[test]
fn same_seeds_give_the_same_summary_json_byte_for_byte() {
    let p = params(&[("E03_SEEDS", "1-3")]);
    let a = simulate(Scenario::e03b(), &p);
    let b = simulate(Scenario::e03b(), &p);
    assert_eq!(a, b);
    let (ja, jb) = (e03_metrics::summary_json(&a), e03_metrics::summary_json(&b));
    assert_eq!(ja, jb);
    assert!(ja.contains("\"peak_100ms\""), "{ja}");
}

#[test]
fn different_seeds_give_different_series() {
    let p = Params::default();
    let c = p.strategy("C").unwrap();
    let a = simulate_run(Scenario::e03b(), &p, c, 1);
    let b = simulate_run(Scenario::e03b(), &p, c, 2);
    assert_ne!(a.arrivals_100ms, b.arrivals_100ms);
    assert_eq!((a.seed, b.seed), (1, 2));
}

#[test]
fn simulate_orders_runs_seed_major_then_strategy() {
    let p = params(&[("E03_SEEDS", "7,3"), ("E03_STRATEGIES", "D,A")]);
    let s = simulate(Scenario::e03a(), &p);
    assert!(s.simulated && s.complete);
    let order: Vec<(u64, &str)> = s
        .runs
        .iter()
        .map(|m| (m.seed, m.strategy.as_str()))
        .collect();
    assert_eq!(order, [(7, "D"), (7, "A"), (3, "D"), (3, "A")]);
    // Parallel runs equal the same runs done one by one.
    assert_eq!(
        s.runs[3],
        simulate_run(Scenario::e03a(), &p, &p.strategies()[1], 3)
    );
}
