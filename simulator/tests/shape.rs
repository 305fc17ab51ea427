//! The lesson of the lab (spec sections 1 and 7) holds in the simulator, over several seeds:
//! backoff and jitter leave the total almost unchanged, jitter cuts the 100 ms peak, the budget
//! cuts load at the price of success, and immediate retries spike at the freeze's end.
//! These are orderings, not exact figures (the spec forbids forcing exact equality).

use std::collections::BTreeMap;

use e03_metrics::RunMetrics;
use e03_plan::{Params, Scenario};
use simulator::simulate;

fn mean(runs: &[&RunMetrics], f: impl Fn(&RunMetrics) -> f64) -> f64 {
    runs.iter().map(|m| f(m)).sum::<f64>() / runs.len() as f64
}

#[test]
fn e03b_ordering_of_the_strategies() {
    let raw: BTreeMap<String, String> = [("E03_SEEDS".to_string(), "1-5".to_string())].into();
    let s = simulate(Scenario::e03b(), &Params::from_raw(&raw).unwrap());
    let of = |id: &str| s.runs_of(id).collect::<Vec<_>>();
    let (a, b, c, d) = (of("A"), of("B"), of("C"), of("D"));
    let peak = |r: &[&RunMetrics]| mean(r, |m| m.peak_100ms as f64);
    let total = |r: &[&RunMetrics]| mean(r, |m| m.total_requests as f64);
    let success = |r: &[&RunMetrics]| mean(r, |m| m.success_affected);
    assert!(peak(&a) > peak(&b) && peak(&b) > peak(&c) && peak(&c) > peak(&d));
    // Jitter at least a third below plain backoff's short-window peak.
    assert!(peak(&c) < 0.67 * peak(&b), "{} vs {}", peak(&c), peak(&b));
    // Totals of A, B and C within 5% of each other; the budget sends fewer.
    for r in [&b, &c] {
        assert!((total(r) / total(&a) - 1.0).abs() < 0.05);
    }
    assert!(total(&d) < total(&c));
    assert!(success(&b) > 0.99 && success(&c) > 0.99);
    assert!(success(&d) < success(&c) && success(&a) < success(&c));
    assert!(d.iter().all(|m| m.retries_denied > 0));
    // A's spike is in the 100 ms window that starts at the freeze's end (10.0 s).
    for m in &a {
        let at = m.arrivals_100ms.iter().position(|n| *n == m.peak_100ms);
        assert_eq!(at, Some(100), "seed {}", m.seed);
    }
}

/// E03-B with the budgets held per shard (`E03_BUDGET_SCOPE`): one shard is the fleet's one
/// budget, run for run; the more holders, the fewer calls each budget sees and the more it lets
/// through (every bucket starts full and a freeze drains few of them), until with a budget per
/// client D and gRPC's throttle retry (nearly) everything, as C does. Brooker, "Fixing retries
/// with token buckets and circuit breakers".
#[test]
fn e03b_budgets_held_by_more_holders_deny_fewer_retries() {
    let run = |scope: &str, shards: &str| {
        let raw: BTreeMap<String, String> = [
            ("E03_SEEDS", "1-3"),
            ("E03_STRATEGIES", "C,D,grpc"),
            ("E03_BUDGET_SCOPE", scope),
            ("E03_SHARDS", shards),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        simulate(Scenario::e03b(), &Params::from_raw(&raw).unwrap())
    };
    let fleet = run("fleet", "1");
    // Shards matter only when they hold the budgets; one shard holds the fleet's.
    assert_eq!(run("fleet", "16").runs, fleet.runs);
    assert_eq!(run("shard", "1").runs, fleet.runs);
    let denied = |s: &e03_metrics::ScenarioSummary, id: &str| {
        s.runs_of(id).map(|m| m.retries_denied).sum::<u64>()
    };
    let c_total = mean(&fleet.runs_of("C").collect::<Vec<_>>(), |m| {
        m.total_requests as f64
    });
    let mut last = [u64::MAX; 2];
    for (scope, shards) in [
        ("fleet", "1"),
        ("shard", "4"),
        ("shard", "16"),
        ("client", "1"),
    ] {
        let s = run(scope, shards);
        for (i, id) in ["D", "grpc"].into_iter().enumerate() {
            let d = denied(&s, id);
            assert!(
                d <= last[i],
                "{id} {scope} {shards}: {d} denied after {}",
                last[i]
            );
            last[i] = d;
        }
        if scope == "client" {
            for id in ["D", "grpc"] {
                let total = mean(&s.runs_of(id).collect::<Vec<_>>(), |m| {
                    m.total_requests as f64
                });
                assert!(
                    total > 0.95 * c_total,
                    "{id}: {total} against C's {c_total}"
                );
            }
        }
    }
    assert!(denied(&fleet, "D") > 0 && denied(&fleet, "grpc") > 0);
}
