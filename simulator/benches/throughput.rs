//! E03-B with four strategies and 100 seeds (about 1.2 million simulated requests), the brief's
//! speed target: under 2 s on a 2-core machine. Criterion's throughput line is in simulated
//! requests (arrivals at the dependency) per second.
//!
//! The harness is `criterion2` (a maintained fork of criterion whose library is still named
//! `criterion`): unlike criterion 0.8 it parses its arguments without clap, so the simulator's
//! dependency tree, dev-dependencies included, stays free of clap, csv and plotters.
//!
//! `cargo bench -p simulator --bench throughput`

use std::collections::BTreeMap;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use e03_plan::{Params, Scenario};

fn hundred_seeds() -> Params {
    let raw: BTreeMap<String, String> = [("E03_SEEDS".to_string(), "1-100".to_string())].into();
    Params::from_raw(&raw).expect("valid parameters")
}

fn e03b_four_strategies_hundred_seeds(c: &mut Criterion) {
    let params = hundred_seeds();
    let requests: u64 = simulator::run::simulate_all(Scenario::e03b(), &params)
        .iter()
        .map(|m| m.total_requests)
        .sum();
    let mut group = c.benchmark_group("e03b");
    group.sample_size(10);
    group.measurement_time(std::time::Duration::from_secs(10));
    group.throughput(Throughput::Elements(requests));
    group.bench_function("4 strategies x 100 seeds", |b| {
        b.iter(|| simulator::run::simulate_all(Scenario::e03b(), black_box(&params)))
    });
    group.finish();

    let p = Params::default();
    let strategy = p.strategy("C").expect("C is a default strategy").clone();
    let one = simulator::simulate_run(Scenario::e03b(), &p, &strategy, 42).total_requests;
    let mut group = c.benchmark_group("e03b one run");
    group.throughput(Throughput::Elements(one));
    group.bench_function("strategy C, seed 42", |b| {
        b.iter(|| simulator::simulate_run(Scenario::e03b(), black_box(&p), &strategy, 42))
    });
    group.finish();
}

criterion_group!(benches, e03b_four_strategies_hundred_seeds);
criterion_main!(benches);
