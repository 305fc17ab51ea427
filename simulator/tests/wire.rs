//! The simulator's blackhole (Toxiproxy's `timeout` toxic at 0, issue 27): downstream, the
//! requests of the phase arrive and only their answers are dropped; upstream, the requests
//! themselves never arrive. Either way each such attempt ends at its timeout.

use std::collections::BTreeMap;

use e03_metrics::metrics::AttemptLine;
use e03_metrics::RunMetrics;
use e03_plan::scenario::parse;
use e03_plan::{Params, Scenario};

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
    let scenario = Scenario::from_def(parse(&text, "x.toml").unwrap()).unwrap();
    let raw: BTreeMap<String, String> = [("E03_SEEDS".to_string(), "1".to_string())].into();
    let params = Params::for_scenario(&scenario, &raw).unwrap();
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

/// Strategy A, `clients` clients for 3 s against a dependency answering in 40 ms, with a
/// `latency` toxic on the answers for the whole run.
fn latency_run(name: &str, clients: u32, attributes: &str, toxicity: f64) -> RunMetrics {
    toxic_run(name, clients, "latency", attributes, toxicity)
}

/// [`latency_run`] with another toxic on the answers.
fn toxic_run(name: &str, clients: u32, toxic: &str, attributes: &str, toxicity: f64) -> RunMetrics {
    let text = format!(
        "name = \"{name}\"\ntitle = \"L\"\ndescription = \"d\"\n\
         [dependency]\nworkers = 50\nservice_ms = 40\n\
         [[timeline]]\nphase = \"toxic\"\nstart_s = 0\nend_s = 3\ntoxic = \"{toxic}\"\n\
         attributes = {attributes}\ntoxicity = {toxicity}\n\
         [workload]\nclients = {clients}\nduration_s = 3\nthink_min_ms = 50\nthink_max_ms = 100\n\
         [policy]\nstrategies = [\"A\"]\nattempt_timeout_ms = 250\ndeadline_ms = 2000\n"
    );
    let scenario = Scenario::from_def(parse(&text, "x.toml").unwrap()).unwrap();
    let raw: BTreeMap<String, String> = [("E03_SEEDS".to_string(), "1".to_string())].into();
    let params = Params::for_scenario(&scenario, &raw).unwrap();
    simulator::run::simulate_all(scenario, &params).remove(0)
}

/// How long each attempt took whose answer left the dependency inside the phase (sent before
/// 2.9 s), µs, with its client.
fn spans(m: &RunMetrics) -> Vec<(u32, u64)> {
    let spans: Vec<(u32, u64)> = m
        .attempt_log
        .iter()
        .filter(|l| l.sent_us < 2_900_000)
        .map(|l| (l.client, l.end_us - l.sent_us))
        .collect();
    assert!(spans.len() > 10, "{m:?}");
    spans
}

/// A latency on the answers holds each answer latency +/- jitter: at 100 ms and no jitter every
/// attempt takes 40 + 100 = 140 ms exactly; at 300 ms every attempt times out (250 ms) after
/// its answer left the dependency, and every retry is work done again.
#[test]
fn a_latency_holds_every_answer_and_its_timeouts_are_the_network_s() {
    let m = latency_run("latency-100", 5, "{ latency = 100 }", 1.0);
    assert!(spans(&m).iter().all(|&(_, s)| s == 140_000), "{m:?}");
    assert_eq!(m.no_answer.timeout, 0);
    assert_eq!(m.wire.unwrap().network_timeouts, 0);

    let m = latency_run("latency-300", 5, "{ latency = 300 }", 1.0);
    let wire = m.wire.unwrap();
    assert!(spans(&m).iter().all(|&(_, s)| s == 250_000), "{m:?}");
    assert_eq!(wire.network_timeouts, m.no_answer.timeout, "{m:?}");
    // Each operation met the phase and retried; every request was worked on.
    assert_eq!(wire.done_twice, m.operations, "{m:?}");
    assert_eq!(wire.extra_work, m.total_requests - m.operations, "{m:?}");
}

/// A bandwidth or a slicer on the answers holds each answer until its last byte is written, the
/// answer passed as one chunk of `ANSWER_BYTES` (118): at 1 KB/s, 118 ms (every attempt takes
/// 40 + 118 = 158 ms); cut into pieces of 10 bytes 1 ms apart, 12 pieces and 11 ms (51 ms).
#[test]
fn a_bandwidth_or_a_slicer_holds_each_answer_until_its_last_byte() {
    assert_eq!(e03_model::wire::ANSWER_BYTES, 118);
    let m = toxic_run("bandwidth-1", 5, "bandwidth", "{ rate = 1 }", 1.0);
    assert!(spans(&m).iter().all(|&(_, s)| s == 158_000), "{m:?}");
    let m = toxic_run(
        "slicer-10",
        5,
        "slicer",
        "{ average_size = 10, size_variation = 0, delay = 1000 }",
        1.0,
    );
    assert!(spans(&m).iter().all(|&(_, s)| s == 51_000), "{m:?}");
    assert_eq!(m.no_answer.timeout, 0);
}

/// The same on the requests (upstream): each request passed as one chunk of `REQUEST_BYTES`
/// (106) reaches the dependency when its last byte is written: at 1 KB/s 106 ms after its
/// sending (every attempt takes 106 + 40 = 146 ms); cut into pieces of 10 bytes 1 ms apart, 11
/// pieces and 10 ms (50 ms).
#[test]
fn a_bandwidth_or_a_slicer_on_the_requests_holds_each_request_until_its_last_byte() {
    assert_eq!(e03_model::wire::REQUEST_BYTES, 106);
    for (name, toxic, attributes, held_us) in [
        ("up-bandwidth-1", "bandwidth", "{ rate = 1 }", 106_000),
        (
            "up-slicer-10",
            "slicer",
            "{ average_size = 10, size_variation = 0, delay = 1000 }",
            10_000,
        ),
    ] {
        let upstream = format!("{attributes}\nstream = \"upstream\"");
        let m = toxic_run(name, 5, toxic, &upstream, 1.0);
        assert!(
            spans(&m).iter().all(|&(_, s)| s == 40_000 + held_us),
            "{name}: {m:?}"
        );
        assert_eq!(m.arrivals[0].0, first_sent_of(&m) + held_us, "{name}");
        assert_eq!(m.no_answer.timeout, 0, "{name}");
    }
}

fn first_sent_of(m: &RunMetrics) -> u64 {
    m.attempt_log.iter().map(|l| l.sent_us).min().unwrap()
}

/// A latency on the requests (upstream) holds each request: at 100 ms every attempt takes
/// 100 + 40 = 140 ms, and the dependency receives each request 100 ms after its sending; at
/// 300 ms every attempt times out at 250 ms, before its request arrived.
#[test]
fn a_latency_on_the_requests_holds_each_request_on_its_way() {
    let m = latency_run("up-100", 5, "{ latency = 100 }\nstream = \"upstream\"", 1.0);
    assert!(spans(&m).iter().all(|&(_, s)| s == 140_000), "{m:?}");
    assert_eq!(m.no_answer.timeout, 0);
    // The dependency received the first request 100 ms after it was sent.
    assert_eq!(m.arrivals[0].0, first_sent_of(&m) + 100_000, "{m:?}");

    let m = latency_run("up-300", 5, "{ latency = 300 }\nstream = \"upstream\"", 1.0);
    assert!(spans(&m).iter().all(|&(_, s)| s == 250_000), "{m:?}");
    let in_phase = m
        .attempt_log
        .iter()
        .filter(|l| l.sent_us < 3_000_000)
        .count();
    assert_eq!(m.no_answer.timeout, in_phase as u64, "{m:?}");
    assert_eq!(m.arrivals[0].0, first_sent_of(&m) + 300_000, "{m:?}");
    // No answer had left the dependency when its attempt timed out.
    assert_eq!(m.wire.unwrap().network_timeouts, 0, "{m:?}");
}

/// With jitter, answers take latency +/- jitter (uniform); at a toxicity of one half, a client's
/// connection is slowed for the whole phase or not at all: its operations take 40 ms or
/// 40 + 100 ms, never between.
#[test]
fn jitter_spreads_the_delay_and_toxicity_draws_per_client_connection() {
    let m = latency_run("latency-jitter", 5, "{ latency = 100, jitter = 20 }", 1.0);
    let s: Vec<u64> = spans(&m).into_iter().map(|(_, s)| s).collect();
    assert!(s.iter().all(|&s| (120_000..=160_000).contains(&s)), "{s:?}");
    assert!(
        s.iter().any(|&s| s < 130_000) && s.iter().any(|&s| s > 150_000),
        "{s:?}"
    );

    let m = latency_run("latency-half", 20, "{ latency = 100 }", 0.5);
    let mut slowed = std::collections::BTreeMap::<u32, Vec<u64>>::new();
    for (client, span) in spans(&m) {
        slowed.entry(client).or_default().push(span);
    }
    let (mut slow, mut fast) = (0, 0);
    for spans in slowed.values() {
        if spans.iter().all(|&s| s == 140_000) {
            slow += 1;
        } else {
            assert!(spans.iter().all(|&s| s == 40_000), "{spans:?}");
            fast += 1;
        }
    }
    assert!(slow > 0 && fast > 0, "slow {slow}, fast {fast}");
}

/// 4 clients for 3 s against a dependency answering in 40 ms, `reset_peer` at once on every
/// connection (toxicity 1) from 1 s to 2 s, clients keeping (`reuse`) or not (`new`) their
/// connection.
fn reset_run(connections: &str) -> RunMetrics {
    reset_run_with(connections, 40, 0)
}

/// [`reset_run`] with a service time and the reset's `timeout`, both in ms.
fn reset_run_with(connections: &str, service_ms: u64, timeout_ms: u64) -> RunMetrics {
    toxic_conn_run(connections, "reset_peer", service_ms, "timeout", timeout_ms)
}

/// [`reset_run`] with another toxic, of one attribute `key = value`.
fn toxic_conn_run(
    connections: &str,
    toxic: &str,
    service_ms: u64,
    key: &str,
    value: u64,
) -> RunMetrics {
    toxic_conn_run_on("downstream", connections, toxic, service_ms, key, value)
}

/// [`toxic_conn_run`] on `stream`.
fn toxic_conn_run_on(
    stream: &str,
    connections: &str,
    toxic: &str,
    service_ms: u64,
    key: &str,
    value: u64,
) -> RunMetrics {
    let way = &stream[..1];
    let text = format!(
        "name = \"{toxic}-{way}-{connections}-{service_ms}-{value}\"\ntitle = \"R\"\n\
         description = \"d\"\n\
         [dependency]\nworkers = 10\nservice_ms = {service_ms}\n\
         [[timeline]]\nphase = \"toxic\"\nstart_s = 1\nend_s = 2\ntoxic = \"{toxic}\"\n\
         attributes = {{ {key} = {value} }}\nstream = \"{stream}\"\n\
         [workload]\nclients = 4\nduration_s = 3\nthink_min_ms = 50\nthink_max_ms = 100\n\
         [policy]\nstrategies = [\"s\"]\nmax_attempts = 3\nattempt_timeout_ms = 500\n\
         deadline_ms = 2000\n\
         [[strategy]]\nid = \"s\"\nbackoff = \"constant\"\nwait_ms = 100\n\
         connections = \"{connections}\"\n"
    );
    let scenario = Scenario::from_def(parse(&text, "x.toml").unwrap()).unwrap();
    let raw: BTreeMap<String, String> = [("E03_SEEDS".to_string(), "1".to_string())].into();
    let params = Params::for_scenario(&scenario, &raw).unwrap();
    simulator::run::simulate_all(scenario, &params).remove(0)
}

/// Every connection reset: an attempt sent in the phase ends as a reset at its send instant and
/// never arrives; one in flight at the phase's start ends then, its request already arrived.
/// A client that opens a connection per attempt opens one per attempt; one that keeps its
/// connection opens one at its first attempt and one per attempt of the phase.
#[test]
fn reset_peer_resets_connections_and_their_attempts() {
    for connections in ["new", "reuse"] {
        let m = reset_run(connections);
        let wire = m.wire.unwrap();
        let sent = m.operations + m.retries_sent;
        let in_phase: Vec<_> = m
            .attempt_log
            .iter()
            .filter(|l| (1_000_000..2_000_000).contains(&l.sent_us))
            .collect();
        assert!(in_phase.len() > 10, "{connections}: {m:?}");
        use e03_metrics::metrics::LineEnd;
        use e03_model::attempt::Broken;
        for l in &in_phase {
            assert_eq!(
                (l.end, l.end_us),
                (LineEnd::Broken(Broken::ResetBeforeAnswer), l.sent_us),
                "{connections}: {l:?}"
            );
        }
        // Resets at the phase's start: attempts in flight then.
        let at_start = m
            .attempt_log
            .iter()
            .filter(|l| l.sent_us < 1_000_000 && l.end_us == 1_000_000)
            .count() as u64;
        assert_eq!(
            m.no_answer.reset_before_answer,
            in_phase.len() as u64 + at_start,
            "{connections}"
        );
        assert_eq!(m.total_requests, sent - in_phase.len() as u64);
        let clients_in = |from: u64, to: u64| {
            m.attempt_log
                .iter()
                .filter(|l| (from..to).contains(&l.sent_us))
                .map(|l| l.client)
                .collect::<std::collections::BTreeSet<u32>>()
                .len() as u64
        };
        let (before, after) = (clients_in(0, 1_000_000), clients_in(2_000_000, u64::MAX));
        let (expected_connections, idle_resets) = match connections {
            "new" => (sent, 0),
            // A connection per client before the phase, one per attempt in it, and one per
            // client after it (its last was reset); the idle connections open at the phase's
            // start are reset too.
            _ => (before + in_phase.len() as u64 + after, before - at_start),
        };
        assert_eq!(
            wire.connections, expected_connections,
            "{connections}: {m:?}"
        );
        assert_eq!(
            wire.connections_reset,
            m.no_answer.reset_before_answer + idle_resets,
            "{connections}"
        );
    }
}

/// `reset_peer` after 100 ms on every connection, against a dependency answering in 200 ms: the
/// proxy resets each connection 100 ms after the toxic applied to it (the phase's start for an
/// open one, its opening for a new one), so every attempt sent from 1.1 s on ends as a reset
/// exactly 100 ms after its sending, kept connection or not; one sent in the last 100 ms of
/// the phase is answered (its reset would come after the phase), as is every attempt after it.
#[test]
fn a_reset_peer_with_a_timeout_resets_each_connection_that_long_after_it_applied() {
    for connections in ["reuse", "new"] {
        let m = reset_run_with(connections, 200, 100);
        let reset = |l: &AttemptLine| format!("{:?}", l.end).contains("ResetBeforeAnswer");
        let mut in_phase = 0;
        for l in &m.attempt_log {
            let span = l.end_us - l.sent_us;
            if (1_100_000..1_900_000).contains(&l.sent_us) {
                assert!(reset(l) && span == 100_000, "{connections}: {l:?}");
                in_phase += 1;
            } else if l.sent_us >= 1_900_000 {
                assert!(!reset(l) && span == 200_000, "{connections}: {l:?}");
            }
        }
        assert!(in_phase > 10, "{connections}: {m:?}");
        assert_eq!(
            m.no_answer.reset_before_answer,
            m.attempt_log.iter().filter(|l| reset(l)).count() as u64
        );
        // Every request reached the dependency (the reset comes after it).
        assert_eq!(
            m.total_requests,
            m.attempt_log.len() as u64,
            "{connections}"
        );
    }
}

/// Toxiproxy's `timeout` toxic with a timeout of 100 ms on every answer, against a dependency
/// answering in 40 ms: nothing passes, and the proxy closes each connection 100 ms after the
/// toxic applied to it, so every attempt sent from 1.1 s on ends exactly 100 ms after its
/// sending, closed before its answer (not counted as a reset by the proxy), kept connection or
/// not; its request arrived and was worked on.
#[test]
fn a_timeout_toxic_with_a_timeout_drops_then_closes_each_connection() {
    for connections in ["reuse", "new"] {
        let m = toxic_conn_run(connections, "timeout", 40, "timeout", 100);
        let closed = |l: &AttemptLine| format!("{:?}", l.end).contains("ResetBeforeAnswer");
        let mut in_phase = 0;
        for l in &m.attempt_log {
            if (1_100_000..1_900_000).contains(&l.sent_us) {
                assert!(
                    closed(l) && l.end_us - l.sent_us == 100_000,
                    "{connections}: {l:?}"
                );
                in_phase += 1;
            } else if l.sent_us >= 2_000_000 {
                assert_eq!(l.end_us - l.sent_us, 40_000, "{connections}: {l:?}");
            }
        }
        assert!(in_phase > 10, "{connections}: {m:?}");
        assert_eq!(m.wire.unwrap().connections_reset, 0, "{connections}: {m:?}");
        assert_eq!(
            m.total_requests,
            m.attempt_log.len() as u64,
            "{connections}"
        );
    }
}

/// `slow_close` changes no attempt: an HTTP client reads its answer by its length, so every
/// attempt takes the dependency's 40 ms, as live.
#[test]
fn slow_close_changes_no_attempt() {
    let m = toxic_run("slow-close", 5, "slow_close", "{ delay = 500 }", 1.0);
    assert!(spans(&m).iter().all(|&(_, s)| s == 40_000), "{m:?}");
    assert_eq!(m.no_answer.reset_before_answer + m.no_answer.timeout, 0);
}

/// `limit_data` on the answers, every connection, against a dependency answering in 40 ms; an
/// answer is 118 bytes, its head 116. At 300 bytes a connection passes two answers and 64
/// bytes of the third, cut in its head, then closes: a reusing client's attempts of the phase
/// go answered, answered, no answer, on a new connection each time. At 117 bytes every answer
/// of the phase is cut in its body. At 236 bytes every answer is whole.
#[test]
fn limit_data_cuts_the_answer_that_passes_the_limit() {
    let answered_in_phase = |m: &RunMetrics| -> std::collections::BTreeMap<u32, Vec<String>> {
        let mut by_client = std::collections::BTreeMap::<u32, Vec<String>>::new();
        for l in &m.attempt_log {
            // Its answer left the dependency inside the phase.
            if (1_000_000..2_000_000).contains(&l.end_us) {
                let end = format!("{:?}", l.end);
                by_client.entry(l.client).or_default().push(end);
            }
        }
        by_client
    };
    let m = toxic_conn_run("reuse", "limit_data", 40, "bytes", 300);
    for (client, ends) in answered_in_phase(&m) {
        for (k, end) in ends.iter().enumerate() {
            let cut = k % 3 == 2;
            assert_eq!(
                end.contains("ResetBeforeAnswer"),
                cut,
                "client {client}: {ends:?}"
            );
            assert_eq!(
                end.contains("Status(200)"),
                !cut,
                "client {client}: {ends:?}"
            );
        }
    }
    assert!(m.no_answer.reset_before_answer > 4, "{m:?}");
    for connections in ["reuse", "new"] {
        let m = toxic_conn_run(connections, "limit_data", 40, "bytes", 117);
        let ends: Vec<String> = answered_in_phase(&m).into_values().flatten().collect();
        assert!(ends.len() > 10, "{connections}: {m:?}");
        assert!(
            ends.iter().all(|e| e.contains("ResetMidBody")),
            "{connections}: {ends:?}"
        );
        let m = toxic_conn_run(connections, "limit_data", 40, "bytes", 236);
        let ends: Vec<String> = answered_in_phase(&m).into_values().flatten().collect();
        assert!(
            ends.iter().all(|e| e.contains("Status(200)")),
            "{connections}: {ends:?}"
        );
    }
}

/// `limit_data` on the requests, every connection, against a dependency answering in 40 ms; a
/// request is 106 bytes. At 300 bytes a connection passes two requests and 88 bytes of the
/// third, then closes: a reusing client's attempts sent in the phase go answered, answered, cut
/// (it ends as `reset_before_answer` at its sending and never arrives), on a new connection
/// each time. At 212 bytes the second request ends exactly at the limit: it arrives, and its
/// attempt ends as `reset_before_answer` at once. A client opening a connection per attempt
/// sends every request whole at 106 bytes (each arrives, each attempt ends so at once) and cuts
/// every one at 105.
#[test]
fn limit_data_on_the_requests_cuts_the_request_that_passes_the_limit() {
    // Per client, in sending order, the attempts sent inside the phase: ended at once as a
    // reset (true) or answered 200 (false).
    let in_phase = |m: &RunMetrics| -> BTreeMap<u32, Vec<bool>> {
        let mut by_client = BTreeMap::<u32, Vec<(u64, bool)>>::new();
        for l in &m.attempt_log {
            if (1_000_000..2_000_000).contains(&l.sent_us) {
                let end = format!("{:?}", l.end);
                let reset = end.contains("ResetBeforeAnswer");
                assert!(reset || end.contains("Status(200)"), "{end}");
                assert_eq!(reset, l.end_us == l.sent_us, "{l:?}");
                by_client
                    .entry(l.client)
                    .or_default()
                    .push((l.sent_us, reset));
            }
        }
        by_client
            .into_iter()
            .map(|(c, mut v)| {
                v.sort();
                (c, v.into_iter().map(|(_, r)| r).collect())
            })
            .collect()
    };
    let sent = |m: &RunMetrics| m.operations + m.retries_sent;
    for (connections, bytes, period, arrive) in [
        ("reuse", 300, 3, false),
        ("reuse", 212, 2, true),
        ("new", 106, 1, true),
        ("new", 105, 1, false),
    ] {
        let m = toxic_conn_run_on("upstream", connections, "limit_data", 40, "bytes", bytes);
        let mut resets = 0;
        for (client, ends) in in_phase(&m) {
            for (k, &reset) in ends.iter().enumerate() {
                assert_eq!(
                    reset,
                    k % period == period - 1,
                    "{connections} {bytes}: client {client}: {ends:?}"
                );
                resets += u64::from(reset);
            }
        }
        assert!(resets > 4, "{connections} {bytes}: {m:?}");
        assert_eq!(
            m.no_answer.reset_before_answer, resets,
            "{connections} {bytes}"
        );
        // A cut request never reaches the dependency; one that ends at the limit does.
        let expected = if arrive { sent(&m) } else { sent(&m) - resets };
        assert_eq!(m.total_requests, expected, "{connections} {bytes}");
    }
}

/// A blackhole on half the connections (`timeout` 0 at toxicity 0.5), against a dependency
/// answering in 40 ms, clients keeping their connection: an attempt on a connection the draw
/// hit times out (500 ms) with its answer dropped, one on a spared connection is answered in
/// 40 ms, nothing in between; a client whose attempt timed out closes that connection and its
/// retry opens a new one, which draws again, so every timeout is followed by a new connection.
#[test]
fn a_blackhole_on_some_connections_times_out_the_attempts_on_them_only() {
    let text = "name = \"partial-blackhole\"\ntitle = \"R\"\ndescription = \"d\"\n\
         [dependency]\nworkers = 20\nservice_ms = 40\n\
         [[timeline]]\nphase = \"toxic\"\nstart_s = 1\nend_s = 2.5\ntoxic = \"timeout\"\n\
         attributes = { timeout = 0 }\ntoxicity = 0.5\n\
         [workload]\nclients = 20\nduration_s = 3\nthink_min_ms = 50\nthink_max_ms = 100\n\
         [policy]\nstrategies = [\"s\"]\nmax_attempts = 3\nattempt_timeout_ms = 500\n\
         deadline_ms = 2000\n\
         [[strategy]]\nid = \"s\"\nbackoff = \"constant\"\nwait_ms = 10\n\
         connections = \"reuse\"\n";
    let scenario = Scenario::from_def(parse(text, "x.toml").unwrap()).unwrap();
    let raw: BTreeMap<String, String> = [("E03_SEEDS".to_string(), "1".to_string())].into();
    let params = Params::for_scenario(&scenario, &raw).unwrap();
    let m = simulator::run::simulate_all(scenario, &params).remove(0);
    let (mut dropped, mut answered) = (0, 0);
    for l in &m.attempt_log {
        if (1_000_000..1_960_000).contains(&l.sent_us) {
            match l.end_us - l.sent_us {
                40_000 => answered += 1,
                500_000 => dropped += 1,
                other => panic!("an attempt of {other} µs: {l:?}"),
            }
        }
    }
    assert!(
        dropped > 5 && answered > 5,
        "dropped {dropped}, answered {answered}"
    );
    // 20 first connections, and one more after each timeout at least.
    let wire = m.wire.unwrap();
    assert!(
        wire.connections >= 20 + m.no_answer.timeout,
        "{wire:?} {:?}",
        m.no_answer
    );
}
