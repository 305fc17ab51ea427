//! The open loop on the virtual clock: the same arrivals for every strategy, drops at the cap,
//! and the recovery verdict on both sides of the metastability boundary.

use std::collections::BTreeMap;

use e03_plan::{Params, Scenario};
use simulator::simulate_run;

fn params(pairs: &[(&str, &str)]) -> (Scenario, Params) {
    let scenario = Scenario::named("metastable").unwrap();
    let raw: BTreeMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let params = Params::for_scenario(&scenario, &raw).unwrap();
    (scenario, params)
}

#[test]
fn a_light_load_recovers_and_an_unbudgeted_retry_storm_stays_down() {
    let (s, p) = params(&[("E03_RATE", "50"), ("E03_DURATION_S", "40")]);
    let light = simulate_run(s, &p, p.strategy("A").unwrap(), 1);
    let ol = light.open_loop.expect("open-loop figures");
    assert!(ol.recovery_s.is_some_and(|r| r < 10.0), "{ol:?}");
    assert_eq!(ol.dropped, 0);
    assert_eq!(ol.late_starts, 0, "the virtual clock is never late");
    // ~50/s over 40 s.
    assert!((1800..2200).contains(&ol.offered), "{}", ol.offered);
    assert_eq!(ol.offered, light.operations);

    let (s, p) = params(&[("E03_RATE", "200"), ("E03_DURATION_S", "45")]);
    let storm = simulate_run(s, &p, p.strategy("A").unwrap(), 1);
    let ol = storm.open_loop.unwrap();
    assert_eq!(ol.recovery_s, None, "{}", ol.verdict_text());
    assert!(ol.amplification > 2.0, "{}", ol.amplification);
    assert!(ol.wasted > 1000, "{}", ol.wasted);
    // The backlog stays above half the queue until arrivals stop at 45 s.
    assert!(
        ol.backlog_1s[20..44].iter().all(|b| *b > 500),
        "{:?}",
        ol.backlog_1s
    );
}

#[test]
fn every_strategy_sees_the_same_arrivals_and_the_cap_drops_what_it_must() {
    let (s, p) = params(&[("E03_RATE", "200"), ("E03_DURATION_S", "20")]);
    let a = simulate_run(s.clone(), &p, p.strategy("A").unwrap(), 3)
        .open_loop
        .unwrap();
    let c = simulate_run(s, &p, p.strategy("C").unwrap(), 3)
        .open_loop
        .unwrap();
    assert_eq!(
        a.offered_1s[..20],
        c.offered_1s[..20],
        "common random numbers"
    );
    assert_eq!(a.offered, c.offered);
    // A cap of 50 in flight: the freeze holds every operation for up to 3 s, so arrivals
    // during it are dropped, counted, and still offered.
    let (s, p) = params(&[
        ("E03_RATE", "200"),
        ("E03_DURATION_S", "20"),
        ("E03_MAX_IN_FLIGHT", "50"),
    ]);
    let capped = simulate_run(s, &p, p.strategy("A").unwrap(), 3);
    let ol = capped.open_loop.unwrap();
    assert_eq!(ol.offered_1s[..20], a.offered_1s[..20]);
    assert!(ol.dropped > 400, "{}", ol.dropped);
    assert_eq!(capped.operations + ol.dropped, ol.offered);
}

#[test]
fn the_per_second_csv_shows_amplification_and_waste_over_time() {
    let (s, p) = params(&[
        ("E03_RATE", "200"),
        ("E03_DURATION_S", "30"),
        ("E03_STRATEGIES", "A"),
    ]);
    let summary = simulator::simulate(s, &p);
    let rows = e03_metrics::openloop::open_loop_csv_rows(&summary);
    assert_eq!(rows[0][0], "strategy");
    let second = |t: usize| rows.iter().find(|r| r[2] == t.to_string()).unwrap();
    // Before the freeze (10-13 s): one attempt per operation, nothing wasted.
    assert_eq!(second(5)[6], "1.00");
    assert_eq!(second(5)[7], "0");
    // Well after it: the storm goes on, most answers are wasted.
    let late = second(25);
    let amp: f64 = late[6].parse().unwrap();
    let wasted: u64 = late[7].parse().unwrap();
    assert!(amp > 2.0, "{late:?}");
    assert!(wasted > 150, "{late:?}");
}
