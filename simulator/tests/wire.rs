//! The simulator's blackhole (Toxiproxy's `timeout` toxic at 0, issue 27): downstream, the
//! requests of the phase arrive and only their answers are dropped; upstream, the requests
//! themselves never arrive. Either way each such attempt ends at its timeout.

use std::collections::BTreeMap;

use e03_core::scenario::parse;
use e03_core::{Params, Scenario};
use e03_metrics::RunMetrics;

/// Strategy A, 5 clients for 4 s, a blackhole on `stream` from 1 s to 2 s, attempts of 300 ms
/// (the service takes 40 ms, so only the blackhole times anything out).
fn run(stream: &str) -> RunMetrics {
    let text = format!(
        "name = \"blackhole-{stream}\"\ntitle = \"B\"\ndescription = \"d\"\n\
         [[timeline]]\nphase = \"toxic\"\nstart_s = 1\nend_s = 2\ntoxic = \"timeout\"\n\
         stream = \"{stream}\"\n\
         [workload]\nclients = 5\nduration_s = 4\nthink_min_ms = 50\nthink_max_ms = 100\n\
         [policy]\nstrategies = [\"A\"]\nattempt_timeout_ms = 300\ndeadline_ms = 1000\n"
    );
    let scenario = Scenario::register(parse(&text, "x.toml").unwrap()).unwrap();
    let raw: BTreeMap<String, String> = [("E03_SEEDS".to_string(), "1".to_string())].into();
    let params = Params::for_scenario(scenario, &raw).unwrap();
    simulator::run::simulate_all(scenario, &params).remove(0)
}

#[test]
fn a_blackhole_drops_the_answers_downstream_and_the_requests_upstream() {
    for (stream, arrived_all) in [("downstream", true), ("upstream", false)] {
        let m = run(stream);
        // Every operation sent its first attempt; retries are the rest.
        let sent = m.operations + m.retries_sent;
        let timeouts = m.no_answer.timeout;
        assert!(timeouts > 0, "{stream}: {m:?}");
        assert_eq!(m.no_answer.broken(), 0, "{stream}");
        let expected = if arrived_all { sent } else { sent - timeouts };
        assert_eq!(
            m.total_requests, expected,
            "{stream}: sent {sent}, timeouts {timeouts}"
        );
    }
}
