//! Property tests of parameter parsing.
//!
//! `Params::from_raw` is the single gate every value of every binary passes through (env vars,
//! flags, control calls), so it must never panic whatever it is given, and its errors must be
//! printable as "the parameter, the value, what is accepted". The properties:
//!
//! - arbitrary maps of known names to arbitrary strings: no panic; every error is `Invalid`,
//!   names a parameter of `PARAMS` with that parameter's `accepts` text, and carries the value
//!   as given (trimmed, as it was read) or the default when the map did not set it (a
//!   cross-parameter rule names the later parameter, which may be unset);
//! - any consistent set of values inside the documented ranges parses, to exactly those values;
//! - `to_raw` round-trips: `from_raw(p.to_raw()) == p`;
//! - `parse_seeds` never panics, and what it returns is non-empty, without repeats and at most
//!   10000 long; distinct seeds always parse back.
//!
//! The ranges below restate `PARAMS`' `accepts` texts; a change there that is not made here
//! fails the second property.

use std::collections::BTreeMap;

use proptest::prelude::*;
use proptest::sample::{select, subsequence};

use e03_plan::params::{parse_seeds, spec, PARAMS};
use e03_plan::{ParamError, Params};

fn env_names() -> Vec<&'static str> {
    PARAMS.iter().map(|p| p.env).collect()
}

/// Strings that reach every branch: arbitrary text, number-like text, edge numbers.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[-+0-9eE., ]{0,14}",
        any::<f64>().prop_map(|v| v.to_string()),
        any::<i64>().prop_map(|v| v.to_string()),
        any::<u64>().prop_map(|v| format!(" {v} ")),
        select(vec![
            "",
            " ",
            "NaN",
            "inf",
            "-inf",
            "-0",
            "1e400",
            "0x10",
            "18446744073709551616",
            "A,A",
            "a,b",
            "G",
            "1-3",
            "3-1",
            "0-10000",
            ",",
            "1,,2",
        ])
        .prop_map(String::from),
    ]
}

fn raw_map() -> impl Strategy<Value = BTreeMap<String, String>> {
    proptest::collection::btree_map(select(env_names()).prop_map(String::from), value(), 0..8)
}

/// A float as text, in one of the forms a user may write.
fn text(v: f64, exp: bool) -> String {
    if exp {
        format!("{v:e}")
    } else {
        v.to_string()
    }
}

/// A consistent raw map of in-range values, with the values it should parse to.
#[derive(Debug, Clone)]
struct Valid {
    raw: BTreeMap<String, String>,
    ints: Vec<(&'static str, u64)>,
    nums: Vec<(&'static str, f64)>,
    seed: u64,
    strategies: Vec<&'static str>,
}

fn valid() -> impl Strategy<Value = Valid> {
    let service = (
        1u64..=10_000,
        0.1f64..=60_000.0,
        0u64..=1_000_000,
        proptest::array::uniform3(0.0f64..=86_400.0),
        1e-9f64..=1.0,
        (0.0f64..=1.0, 0.0f64..=1.0),
        0.0f64..=600_000.0,
    );
    let swarm = (
        1u64..=100_000,
        1e-9f64..=86_400.0,
        proptest::array::uniform2(0.0f64..=3_600_000.0),
        1u64..=100,
        (1.0f64..=600_000.0).prop_flat_map(|t| (Just(t), t..=3_600_000.0)),
        (0.0f64..=600_000.0, 0.0f64..=3_600_000.0),
        (1.0f64..=1_000_000.0, 0.0f64..=1000.0),
    );
    let strategies = subsequence(vec!["A", "B", "C", "D", "E", "F"], 1..=6).prop_shuffle();
    (service, swarm, any::<u64>(), strategies, any::<bool>()).prop_map(
        |(service, swarm, seed, strategies, exp)| {
            let (workers, service_ms, queue, mut times, factor, (fail, x), slow_ms) = service;
            times.sort_by(f64::total_cmp);
            // slow <= 1 - fail keeps the two rates at most 1 in all (checked again below).
            let slow = (x * (1.0 - fail)).min(1.0 - fail);
            let (clients, duration, mut think, attempts, (timeout, deadline), backoff, budget) =
                swarm;
            think.sort_by(f64::total_cmp);
            let ints = vec![
                ("E03_WORKERS", workers),
                ("E03_QUEUE", queue),
                ("E03_CLIENTS", clients),
                ("E03_MAX_ATTEMPTS", attempts),
            ];
            let nums = vec![
                ("E03_SERVICE_MS", service_ms),
                ("E03_FREEZE_START_S", times[0]),
                ("E03_FREEZE_END_S", times[1]),
                ("E03_RECOVERY_END_S", times[2]),
                ("E03_RECOVERY_FACTOR", factor),
                ("E03_FAIL_RATE", fail),
                ("E03_SLOW_RATE", slow),
                ("E03_SLOW_MS", slow_ms),
                ("E03_DURATION_S", duration),
                ("E03_THINK_MIN_MS", think[0]),
                ("E03_THINK_MAX_MS", think[1]),
                ("E03_ATTEMPT_TIMEOUT_MS", timeout),
                ("E03_DEADLINE_MS", deadline),
                ("E03_BACKOFF_BASE_MS", backoff.0),
                ("E03_BACKOFF_CAP_MS", backoff.1),
                ("E03_BUDGET_CAP", budget.0),
                ("E03_BUDGET_RATIO", budget.1),
            ];
            let mut raw: BTreeMap<String, String> = BTreeMap::new();
            for (k, v) in &ints {
                raw.insert(k.to_string(), format!(" {v}"));
            }
            for (k, v) in &nums {
                raw.insert(k.to_string(), text(*v, exp));
            }
            raw.insert("E03_SEED".into(), seed.to_string());
            raw.insert(
                "E03_STRATEGIES".into(),
                strategies.join(", ").to_lowercase(),
            );
            Valid {
                raw,
                ints,
                nums,
                seed,
                strategies,
            }
        },
    )
}

fn int_field(p: &Params, name: &str) -> u64 {
    match name {
        "E03_WORKERS" => p.service().workers as u64,
        "E03_QUEUE" => p.service().queue as u64,
        "E03_CLIENTS" => u64::from(p.swarm().clients),
        "E03_MAX_ATTEMPTS" => u64::from(p.swarm().max_attempts),
        _ => panic!("no integer parameter {name}"),
    }
}

fn num_field(p: &Params, name: &str) -> f64 {
    let (s, w) = (&p.service(), &p.swarm());
    match name {
        "E03_SERVICE_MS" => s.service_ms,
        "E03_FREEZE_START_S" => s.freeze_start_s,
        "E03_FREEZE_END_S" => s.freeze_end_s,
        "E03_RECOVERY_END_S" => s.recovery_end_s,
        "E03_RECOVERY_FACTOR" => s.recovery_factor,
        "E03_FAIL_RATE" => s.fail_rate,
        "E03_SLOW_RATE" => s.slow_rate,
        "E03_SLOW_MS" => s.slow_ms,
        "E03_DURATION_S" => w.duration_s,
        "E03_THINK_MIN_MS" => w.think_min_ms,
        "E03_THINK_MAX_MS" => w.think_max_ms,
        "E03_ATTEMPT_TIMEOUT_MS" => w.attempt_timeout_ms,
        "E03_DEADLINE_MS" => w.deadline_ms,
        "E03_BACKOFF_BASE_MS" => w.backoff_base_ms,
        "E03_BACKOFF_CAP_MS" => w.backoff_cap_ms,
        "E03_BUDGET_CAP" => w.budget_cap,
        "E03_BUDGET_RATIO" => w.budget_ratio,
        _ => panic!("no numeric parameter {name}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn from_raw_never_panics_and_its_errors_name_the_parameter_and_value(raw in raw_map()) {
        let Err(e) = Params::from_raw(&raw) else { return Ok(()) };
        let ParamError::Invalid { name, value, accepts } = &e else {
            panic!("only known names were given, yet: {e:?}");
        };
        let p = spec(name).unwrap_or_else(|| panic!("error names no parameter: {e:?}"));
        prop_assert_eq!(p.env, name.as_str());
        // A reversed seed range is named with its fix (`a_reversed_seed_range_is_named`); every
        // other error says what the parameter accepts (a strategy list adds the entry at fault).
        if !accepts.starts_with("ranges from low to high:") {
            prop_assert!(accepts.starts_with(p.accepts), "{} does not start with {}", accepts, p.accepts);
        }
        let given = raw.get(name).map_or(p.default, |v| v.trim());
        prop_assert_eq!(value.as_str(), given);
        prop_assert!(e.to_string().contains(name.as_str()), "{}", e);
    }

    #[test]
    fn in_range_values_always_parse_to_themselves(v in valid()) {
        let slow_ok = v.nums.iter().find(|n| n.0 == "E03_FAIL_RATE").map(|n| n.1).unwrap_or(0.0)
            + v.nums.iter().find(|n| n.0 == "E03_SLOW_RATE").map(|n| n.1).unwrap_or(0.0)
            <= 1.0;
        prop_assume!(slow_ok, "fail + slow rounded above 1");
        let p = Params::from_raw(&v.raw)
            .unwrap_or_else(|e| panic!("in-range values rejected: {e}\n{:?}", v.raw));
        for (name, want) in &v.ints {
            prop_assert_eq!(int_field(&p, name), *want, "{}", name);
        }
        for (name, want) in &v.nums {
            prop_assert_eq!(num_field(&p, name).to_bits(), want.to_bits(), "{}", name);
        }
        prop_assert_eq!(&p.seeds(), &vec![v.seed]);
        let ids: Vec<&str> = p.strategies().iter().map(|s| s.id.as_str()).collect();
        prop_assert_eq!(ids, v.strategies.clone());
    }

    #[test]
    fn to_raw_round_trips(v in valid(), seeds in proptest::collection::btree_set(any::<u64>(), 1..20)) {
        let p = Params::from_raw(&v.raw);
        prop_assume!(p.is_ok(), "fail + slow rounded above 1");
        let p = p.unwrap();
        prop_assert_eq!(&Params::from_raw(&p.to_raw()).unwrap(), &p);
        let mut raw = v.raw.clone();
        let list: Vec<String> = seeds.iter().map(u64::to_string).collect();
        raw.insert("E03_SEEDS".into(), list.join(","));
        let many = Params::from_raw(&raw).unwrap();
        prop_assert_eq!(&many.seeds(), &seeds.iter().copied().collect::<Vec<_>>());
        prop_assert_eq!(&Params::from_raw(&many.to_raw()).unwrap(), &many);
    }

    #[test]
    fn parse_seeds_never_panics(list in prop_oneof![
        any::<String>(),
        "[0-9 ,\\-]{0,30}",
        (any::<u64>(), any::<u64>()).prop_map(|(a, b)| format!("{a}-{b}")),
        (any::<u64>(), 0u64..20_000).prop_map(|(a, n)| format!("{a}-{}", a.saturating_add(n))),
    ]) {
        if let Some(seeds) = parse_seeds(&list) {
            let mut sorted = seeds.clone();
            sorted.sort_unstable();
            sorted.dedup();
            prop_assert!(!seeds.is_empty() && seeds.len() <= 10_000);
            prop_assert_eq!(sorted.len(), seeds.len(), "repeats in {:?}", list);
        }
    }

    #[test]
    fn distinct_seeds_parse_back(seeds in proptest::collection::vec(any::<u64>(), 1..50)) {
        let mut distinct = seeds.clone();
        distinct.sort_unstable();
        distinct.dedup();
        let list: Vec<String> = distinct.iter().map(u64::to_string).collect();
        prop_assert_eq!(parse_seeds(&list.join(", ")), Some(distinct));
    }
}
