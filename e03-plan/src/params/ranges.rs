//! What each single value accepts, once, for both of its readers: the raw reader
//! (`from_raw.rs`: a value the user typed, whose error quotes the text typed) and the typed
//! check (`checked.rs`: a plan read back from JSON or edited in code, whose error quotes the
//! value). One table, so that the two cannot drift apart; the words (`accepts`) printed with an
//! error are the parameter table's (`table.rs`).

/// What one parameter's value may be.
#[derive(Debug, Clone, Copy)]
pub(super) enum Accepts {
    /// A whole number in `lo..=hi`.
    Whole { lo: u64, hi: u64 },
    /// A finite number in `[lo, hi]`, or `(lo, hi]` when `above`.
    Number { lo: f64, hi: f64, above: bool },
    /// One of the words the model knows (its own parser says which).
    Choice(fn(&str) -> bool),
    /// `E03_STEP_LOADS`: 1 to 8 distinct load levels, each 1 to 10000.
    Loads,
}

impl Accepts {
    pub(super) fn whole(self, v: u64) -> bool {
        matches!(self, Accepts::Whole { lo, hi } if (lo..=hi).contains(&v))
    }

    pub(super) fn number(self, v: f64) -> bool {
        matches!(self, Accepts::Number { lo, hi, above }
            if v.is_finite() && v <= hi && (v > lo || (!above && v == lo)))
    }

    pub(super) fn word(self, w: &str) -> bool {
        matches!(self, Accepts::Choice(known) if known(w))
    }
}

/// The step workload's load levels: 1 to 8 of them, each 1 to 10000, none repeated.
pub(super) fn loads_ok(loads: &[u32]) -> bool {
    (1..=8).contains(&loads.len())
        && loads.iter().all(|n| (1..=10_000).contains(n))
        && loads
            .iter()
            .enumerate()
            .all(|(i, x)| !loads[..i].contains(x))
}

fn workload(w: &str) -> bool {
    matches!(
        w,
        "closed_loop" | "group" | "ramp" | "fixed_rate" | "open_loop" | "steps" | "fan_out"
    )
}

/// What the parameter `name` accepts. Panics on a name not in [`VALUES`]: a reader asks only
/// for its own parameters.
pub(super) fn accepts(name: &str) -> Accepts {
    VALUES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, a)| a)
        .unwrap_or_else(|| panic!("{name} has no row in VALUES"))
}

/// Every single-valued parameter and what it accepts (the seeds and strategies are lists with
/// checks of their own).
pub(super) const VALUES: &[(&str, Accepts)] = &[
    ("E03_WORKERS", Accepts::Whole { lo: 1, hi: 10_000 }),
    (
        "E03_QUEUE",
        Accepts::Whole {
            lo: 0,
            hi: 1_000_000,
        },
    ),
    ("E03_REPLICAS", Accepts::Whole { lo: 1, hi: 16 }),
    (
        "E03_INPUT_TOKENS",
        Accepts::Whole {
            lo: 0,
            hi: 1_000_000,
        },
    ),
    (
        "E03_OUTPUT_TOKENS",
        Accepts::Whole {
            lo: 0,
            hi: 1_000_000,
        },
    ),
    ("E03_CLIENTS", Accepts::Whole { lo: 1, hi: 100_000 }),
    ("E03_FANOUT", Accepts::Whole { lo: 1, hi: 1000 }),
    ("E03_FANOUT_QUORUM", Accepts::Whole { lo: 0, hi: 1000 }),
    (
        "E03_MAX_IN_FLIGHT",
        Accepts::Whole {
            lo: 1,
            hi: 1_000_000,
        },
    ),
    (
        "E03_OPS_PER_CLIENT",
        Accepts::Whole {
            lo: 0,
            hi: 100_000_000,
        },
    ),
    ("E03_MAX_ATTEMPTS", Accepts::Whole { lo: 1, hi: 100 }),
    (
        "E03_BREAK_MS",
        Accepts::Whole {
            lo: 1,
            hi: 3_600_000,
        },
    ),
    ("E03_SHARDS", Accepts::Whole { lo: 1, hi: 100_000 }),
    ("E03_OUTLIER_5XX", Accepts::Whole { lo: 0, hi: 1000 }),
    ("E03_EJECTION_MS", Accepts::Whole { lo: 1, hi: 300_000 }),
    (
        "E03_OUTLIER_INTERVAL_MS",
        Accepts::Whole { lo: 1, hi: 300_000 },
    ),
    (
        "E03_HEALTH_INTERVAL_MS",
        Accepts::Whole { lo: 0, hi: 300_000 },
    ),
    ("E03_UNHEALTHY_THRESHOLD", Accepts::Whole { lo: 1, hi: 100 }),
    ("E03_STEPS", Accepts::Whole { lo: 1, hi: 100_000 }),
    (
        "E03_BATCH_ITEMS",
        Accepts::Whole {
            lo: 0,
            hi: 1_000_000,
        },
    ),
    ("E03_BURST_START", Accepts::Whole { lo: 0, hi: 100_000 }),
    (
        "E03_BURST_ITEMS",
        Accepts::Whole {
            lo: 0,
            hi: 1_000_000,
        },
    ),
    ("E03_STEP_CALLS", Accepts::Whole { lo: 1, hi: 100_000 }),
    (
        "E03_INTERACTIVE_EVERY",
        Accepts::Whole { lo: 0, hi: 100_000 },
    ),
    (
        "E03_INTERACTIVE_UNTIL",
        Accepts::Whole { lo: 0, hi: 100_000 },
    ),
    (
        "E03_INTERACTIVE_BUDGET",
        Accepts::Whole { lo: 0, hi: 100_000 },
    ),
    (
        "E03_SEED",
        Accepts::Whole {
            lo: 0,
            hi: u64::MAX,
        },
    ),
    (
        "E03_SERVICE_MS",
        Accepts::Number {
            lo: 0.1,
            hi: 60_000.0,
            above: false,
        },
    ),
    (
        "E03_QUEUE_TARGET_MS",
        Accepts::Number {
            lo: 0.0,
            hi: 60_000.0,
            above: true,
        },
    ),
    (
        "E03_QUEUE_INTERVAL_MS",
        Accepts::Number {
            lo: 0.0,
            hi: 60_000.0,
            above: true,
        },
    ),
    (
        "E03_PRIORITY_RESERVE",
        Accepts::Number {
            lo: 0.0,
            hi: 1.0,
            above: false,
        },
    ),
    (
        "E03_LIMIT_TIMEOUT_MS",
        Accepts::Number {
            lo: 0.0,
            hi: 600_000.0,
            above: true,
        },
    ),
    (
        "E03_FREEZE_START_S",
        Accepts::Number {
            lo: 0.0,
            hi: 86_400.0,
            above: false,
        },
    ),
    (
        "E03_FREEZE_END_S",
        Accepts::Number {
            lo: 0.0,
            hi: 86_400.0,
            above: false,
        },
    ),
    (
        "E03_RECOVERY_END_S",
        Accepts::Number {
            lo: 0.0,
            hi: 86_400.0,
            above: false,
        },
    ),
    (
        "E03_RECOVERY_FACTOR",
        Accepts::Number {
            lo: 0.0,
            hi: 1.0,
            above: true,
        },
    ),
    (
        "E03_FAIL_RATE",
        Accepts::Number {
            lo: 0.0,
            hi: 1.0,
            above: false,
        },
    ),
    (
        "E03_SLOW_RATE",
        Accepts::Number {
            lo: 0.0,
            hi: 1.0,
            above: false,
        },
    ),
    (
        "E03_SLOW_MS",
        Accepts::Number {
            lo: 0.0,
            hi: 600_000.0,
            above: false,
        },
    ),
    (
        "E03_LOST_RATE",
        Accepts::Number {
            lo: 0.0,
            hi: 1.0,
            above: false,
        },
    ),
    (
        "E03_PERMANENT_RATE",
        Accepts::Number {
            lo: 0.0,
            hi: 1.0,
            above: false,
        },
    ),
    (
        "E03_TAIL_RATE",
        Accepts::Number {
            lo: 0.0,
            hi: 1.0,
            above: false,
        },
    ),
    (
        "E03_TAIL_FACTOR",
        Accepts::Number {
            lo: 1.0,
            hi: 10_000.0,
            above: false,
        },
    ),
    (
        "E03_TIMEOUT_RATE",
        Accepts::Number {
            lo: 0.0,
            hi: 1.0,
            above: false,
        },
    ),
    (
        "E03_CUTOFF_RATE",
        Accepts::Number {
            lo: 0.0,
            hi: 1.0,
            above: false,
        },
    ),
    (
        "E03_DOWN_LATENCY_MS",
        Accepts::Number {
            lo: 0.0,
            hi: 600_000.0,
            above: false,
        },
    ),
    (
        "E03_PERIOD_MS",
        Accepts::Number {
            lo: 0.0,
            hi: 3_600_000.0,
            above: true,
        },
    ),
    (
        "E03_RATE",
        Accepts::Number {
            lo: 0.0,
            hi: 100_000.0,
            above: true,
        },
    ),
    (
        "E03_RATE_PEAK",
        Accepts::Number {
            lo: 0.0,
            hi: 100_000.0,
            above: false,
        },
    ),
    (
        "E03_BEST_EFFORT_SHARE",
        Accepts::Number {
            lo: 0.0,
            hi: 1.0,
            above: false,
        },
    ),
    (
        "E03_FANOUT_SLOW_MS",
        Accepts::Number {
            lo: 0.0,
            hi: 3_600_000.0,
            above: true,
        },
    ),
    (
        "E03_DURATION_S",
        Accepts::Number {
            lo: 0.0,
            hi: 86_400.0,
            above: true,
        },
    ),
    (
        "E03_THINK_MIN_MS",
        Accepts::Number {
            lo: 0.0,
            hi: 3_600_000.0,
            above: false,
        },
    ),
    (
        "E03_THINK_MAX_MS",
        Accepts::Number {
            lo: 0.0,
            hi: 3_600_000.0,
            above: false,
        },
    ),
    (
        "E03_ATTEMPT_TIMEOUT_MS",
        Accepts::Number {
            lo: 1.0,
            hi: 600_000.0,
            above: false,
        },
    ),
    (
        "E03_DEADLINE_MS",
        Accepts::Number {
            lo: 1.0,
            hi: 3_600_000.0,
            above: false,
        },
    ),
    (
        "E03_BACKOFF_BASE_MS",
        Accepts::Number {
            lo: 0.0,
            hi: 600_000.0,
            above: false,
        },
    ),
    (
        "E03_BACKOFF_CAP_MS",
        Accepts::Number {
            lo: 0.0,
            hi: 3_600_000.0,
            above: false,
        },
    ),
    (
        "E03_BUDGET_CAP",
        Accepts::Number {
            lo: 1.0,
            hi: 1_000_000.0,
            above: false,
        },
    ),
    (
        "E03_BUDGET_RATIO",
        Accepts::Number {
            lo: 0.0,
            hi: 1000.0,
            above: false,
        },
    ),
    (
        "E03_CONNECT_TIMEOUT_MS",
        Accepts::Number {
            lo: 1.0,
            hi: 600_000.0,
            above: false,
        },
    ),
    (
        "E03_STEP_MS",
        Accepts::Number {
            lo: 0.0,
            hi: 60_000.0,
            above: true,
        },
    ),
    (
        "E03_QUEUE_POLICY",
        Accepts::Choice(|p| e03_model::dependency::QueueDiscipline::parse(p).is_some()),
    ),
    (
        "E03_ADMISSION",
        Accepts::Choice(|a| e03_model::dependency::AdmissionRule::parse(a).is_some()),
    ),
    (
        "E03_CONCURRENCY_LIMIT",
        Accepts::Choice(|l| e03_model::limit::LimitKind::parse(l).is_some()),
    ),
    ("E03_WORKLOAD", Accepts::Choice(workload)),
    (
        "E03_BALANCER",
        Accepts::Choice(|b| e03_model::balancer::Pick::parse(b).is_some()),
    ),
    (
        "E03_BUDGET_SCOPE",
        Accepts::Choice(|s| e03_model::policy::BudgetScope::parse(s).is_some()),
    ),
    ("E03_STEP_LOADS", Accepts::Loads),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::PARAMS;

    /// Every parameter but the lists (seeds, strategies) has one row, and no row names a
    /// parameter the table does not have.
    #[test]
    fn every_single_valued_parameter_has_one_row() {
        let lists = ["E03_SEEDS", "E03_STRATEGIES"];
        for p in PARAMS.iter().filter(|p| !lists.contains(&p.env)) {
            let n = VALUES.iter().filter(|(n, _)| *n == p.env).count();
            assert_eq!(n, 1, "{}", p.env);
        }
        for (n, _) in VALUES {
            assert!(PARAMS.iter().any(|p| p.env == *n), "{n}");
        }
    }

    #[test]
    fn bounds_by_hand() {
        assert!(accepts("E03_WORKERS").whole(1) && !accepts("E03_WORKERS").whole(0));
        assert!(!accepts("E03_QUEUE_TARGET_MS").number(0.0));
        assert!(accepts("E03_FAIL_RATE").number(0.0) && !accepts("E03_FAIL_RATE").number(1.01));
        assert!(!accepts("E03_SERVICE_MS").number(f64::NAN));
        assert!(accepts("E03_WORKLOAD").word("fan_out") && !accepts("E03_WORKLOAD").word("x"));
        assert!(loads_ok(&[1, 5]) && !loads_ok(&[1, 1]) && !loads_ok(&[]) && !loads_ok(&[0]));
    }
}
