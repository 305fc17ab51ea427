//! Prints the figures of E03-B (seed 42, every default strategy) and how fast the simulator
//! runs E03-B with four strategies and 100 seeds, in simulated requests per second.
//!
//! `cargo run --release -p simulator --example throughput [SEEDS]` (SEEDS default `1-100`)

use std::collections::BTreeMap;
use std::time::Instant;

use e03_plan::{Params, Scenario};

fn main() -> anyhow::Result<()> {
    let seeds = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "1-100".to_string());
    let params = Params::default();
    for s in params.strategies() {
        let m = simulator::simulate_run(Scenario::e03b(), &params, s, 42);
        println!(
            "{}: success {:.1}% total {} retries {} denied {} peak_1s {} peak_100ms {} p95 {} ms p99 {} ms recovery {:?} s",
            m.strategy,
            m.success_affected * 100.0,
            m.total_requests,
            m.retries_sent,
            m.retries_denied,
            m.peak_1s,
            m.peak_100ms,
            m.p95_ms,
            m.p99_ms,
            m.recovery_s
        );
    }
    let raw: BTreeMap<String, String> = [("E03_SEEDS".to_string(), seeds)].into();
    let many = Params::from_raw(&raw)?;
    let started = Instant::now();
    let runs = simulator::run::simulate_all(Scenario::e03b(), &many);
    let took = started.elapsed();
    let requests: u64 = runs.iter().map(|m| m.total_requests).sum();
    let operations: u64 = runs.iter().map(|m| m.operations).sum();
    println!(
        "{} runs, {requests} requests, {operations} operations in {:.3} s on {} thread(s): {:.2} M requests/s",
        runs.len(),
        took.as_secs_f64(),
        simulator::run::threads(),
        requests as f64 / took.as_secs_f64() / 1e6
    );
    Ok(())
}
