//! Strategies written as data: one `[[strategy]]` table of a scenario file (or of a standalone
//! policy file), and how a run's strategy ids are resolved.
//!
//! A table is flat; every key is checked, and an error names the key and what it accepts:
//!
//! ```toml
//! [[strategy]]
//! id = "immediate-20ms"     # lowercase letters, digits and '-'; A to F are the lab's own
//! name = "retry every 20 ms"
//! backoff = "constant"      # none | constant | exponential | geometric
//! wait_ms = 20              # constant only
//! # base_ms, cap_ms: exponential and geometric (default: the run's E03_BACKOFF_BASE_MS and
//! # E03_BACKOFF_CAP_MS); multiplier: geometric only
//! jitter = "none"           # none | full | equal | decorrelated | polly | proportional
//! # spread_pct: proportional only (default 20)
//! max_attempts = 100        # optional: else the run's E03_MAX_ATTEMPTS
//! classify = "standard"     # standard | everything | connect_only
//! budget = { kind = "token_bucket", cap = 10, ratio = 0.1 }
//! breaker = { failure_ratio = 0.5, min_throughput = 10, sampling_window_ms = 2000, break_duration_ms = 2000 }
//! retry_after = "at_least" # at_least (wait at least what a Retry-After says) | ignore
//! # hedge = { max_attempts = 2, delay_ms = 50 }   (or percentile = 95): hedging in place
//! # of retries (gRPC A6's rules; see `e03_model::hedge`); backoff may then be left out
//! ```
//!
//! The table is kept as a [`StrategySpec`] (base and cap may be left to the run), and becomes a
//! [`Strategy`] only when a run's parameters are known ([`StrategySpec::resolve`]), so
//! `E03_BACKOFF_BASE_MS` still moves a file's exponential strategy that does not set `base_ms`.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::toml_table::fail_at;
pub use crate::toml_table::TableError;
use e03_model::breaker::BreakerSpec;
use e03_model::budget::BudgetSpec;
use e03_model::spec_error::SpecError;
use e03_model::strategy::{Backoff, Classify, Jitter, RetryAfter, Strategy};

/// The backoff of a strategy table; `None` base or cap take the run's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum BackoffSpec {
    None,
    Constant {
        wait_ms: f64,
    },
    Exponential {
        base_ms: Option<f64>,
        cap_ms: Option<f64>,
    },
    Geometric {
        base_ms: Option<f64>,
        cap_ms: Option<f64>,
        multiplier: f64,
    },
}

/// One strategy as a file defines it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StrategySpec {
    pub id: String,
    pub name: String,
    pub backoff: BackoffSpec,
    pub jitter: Jitter,
    #[serde(default)]
    pub max_attempts: Option<u32>,
    #[serde(default)]
    pub classify: Classify,
    #[serde(default)]
    pub budget: Option<BudgetSpec>,
    #[serde(default)]
    pub breaker: Option<BreakerSpec>,
    /// `idempotency = "per_operation" | "per_attempt" | "none"`: the strategy's operations are
    /// charges with that key policy (see [`e03_model::ledger::KeyPolicy`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency: Option<e03_model::ledger::KeyPolicy>,
    /// `retry_after = "at_least" | "ignore"`: what a `Retry-After` does to the wait (default
    /// `at_least`: wait at least as long as it says).
    #[serde(default)]
    pub retry_after: RetryAfter,
    /// `connections = "reuse" | "new"`: whether a client keeps its connection between attempts
    /// (default `reuse`).
    #[serde(default)]
    pub connections: e03_model::strategy::Connections,
    /// `queue_policy = "fifo" | "codel" | "adaptive_lifo"`, `admission = "all" | "deadline" |
    /// "priority"` and `concurrency_limit = "none" | "aimd" |
    /// "gradient2"`: the dependency's policy this
    /// strategy's runs face (default: the run's).
    #[serde(
        default,
        skip_serializing_if = "e03_model::strategy::ServerSide::is_default"
    )]
    pub server: e03_model::strategy::ServerSide,
    /// `client_limit = "none" | "aimd" | "gradient2"`: a client-side adaptive concurrency limit
    /// shared by the strategy's clients, with the library's defaults
    /// ([`e03_model::limit::ClientLimiter`]; default none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_limit: Option<e03_model::limit::LimitKind>,
    /// `client_rate = "none" | "aws_adaptive"`: the AWS SDKs' adaptive mode's client-side
    /// rate limiter in front of every attempt ([`e03_model::adaptive::ClientRateLimiter`]; default
    /// none).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub adaptive_rate: bool,
    /// `hedge = { max_attempts = 2, delay_ms = 50 }` or `hedge = { max_attempts = 2,
    /// percentile = 95 }`: hedging in place of retries ([`e03_model::hedge`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hedge: Option<e03_model::hedge::HedgeSpec>,
    /// `fallbacks = 2`: the last two calls of each fan-out request have a fallback
    /// ([`e03_model::strategy::Strategy::fallbacks`]; default 0).
    #[serde(default)]
    pub fallbacks: u32,
    /// `bulkhead = [50]` (one pool shared by every dependency) or `bulkhead = [30, 20]` (a
    /// pool per dependency): [`e03_model::strategy::Strategy::bulkhead`]; default none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bulkhead: Vec<u32>,
}

/// The keys a `[[strategy]]` table takes.
pub const STRATEGY_KEYS: &[&str] = &[
    "id",
    "name",
    "backoff",
    "wait_ms",
    "base_ms",
    "cap_ms",
    "multiplier",
    "jitter",
    "spread_pct",
    "max_attempts",
    "classify",
    "budget",
    "breaker",
    "idempotency",
    "retry_after",
    "connections",
    "queue_policy",
    "admission",
    "concurrency_limit",
    "client_limit",
    "client_rate",
    "hedge",
    "fallbacks",
    "bulkhead",
];

const HEDGE_KEYS: &[&str] = &["max_attempts", "delay_ms", "percentile"];

const BREAKER_KEYS: &[&str] = &[
    "failure_ratio",
    "min_throughput",
    "sampling_window_ms",
    "break_duration_ms",
];

/// Ids the lab defines itself (strategies A to F); a table may not take them.
pub const RESERVED_IDS: &[&str] = &["a", "b", "c", "d", "e", "f"];

/// Whether `id` is a valid id for a strategy table: 1 to 32 characters from a-z, 0-9 and '-',
/// starting with a letter or digit, and neither one of A to F nor a preset's name.
pub fn valid_table_id(id: &str) -> bool {
    if crate::presets::names().iter().any(|(n, _)| *n == id) {
        return false;
    }
    (1..=32).contains(&id.len())
        && !id.starts_with('-')
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !RESERVED_IDS.contains(&id)
}

/// One TOML table with the position of every value.
pub type Table = BTreeMap<String, Spanned<toml::Value>>;

/// Reads one `[[strategy]]` table. `at` is where the table starts (for errors about a missing
/// key). Every key is checked; the first problem is returned.
pub fn parse_strategy_table(table: &Table, at: usize) -> Result<StrategySpec, TableError> {
    macro_rules! fail {
        ($key:expr, $message:expr $(,)?) => {
            fail_at(table, at, $key, $message)
        };
    }
    if let Some((key, _)) = table
        .iter()
        .find(|(k, _)| !STRATEGY_KEYS.contains(&k.as_str()))
    {
        return fail!(
            key,
            format!(
                "unknown key `{key}` in [[strategy]]: expected one of {}",
                STRATEGY_KEYS.join(", ")
            ),
        );
    }
    let get = |key: &str| table.get(key).map(|v| v.get_ref());
    let string = |key: &str, accepts: &str| -> Result<Option<String>, TableError> {
        match get(key) {
            None => Ok(None),
            Some(toml::Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => fail!(key, format!("{key} = {other}: expected {accepts}")),
        }
    };
    let number = |key: &str, lo: f64, hi: f64, accepts: &str| -> Result<Option<f64>, TableError> {
        let v = match get(key) {
            None => return Ok(None),
            Some(toml::Value::Integer(i)) => *i as f64,
            Some(toml::Value::Float(f)) => *f,
            Some(other) => return fail!(key, format!("{key} = {other}: expected {accepts}")),
        };
        if v.is_finite() && (lo..=hi).contains(&v) {
            Ok(Some(v))
        } else {
            fail!(key, format!("{key} = {v}: expected {accepts}"))
        }
    };
    let whole = |key: &str, lo: i64, hi: i64| -> Result<Option<i64>, TableError> {
        match get(key) {
            None => Ok(None),
            Some(toml::Value::Integer(i)) if (lo..=hi).contains(i) => Ok(Some(*i)),
            Some(other) => fail!(
                key,
                format!("{key} = {other}: expected a whole number from {lo} to {hi}"),
            ),
        }
    };
    let only_for = |key: &str, kinds: &str| -> Result<(), TableError> {
        match get(key) {
            Some(_) => fail!(key, format!("{key} is only for {kinds}")),
            None => Ok(()),
        }
    };

    const ID: &str = "1 to 32 characters from a-z, 0-9 and '-' (A to F and the presets' names, like grpc, are the lab's own)";
    let Some(id) = string("id", ID)? else {
        return fail!("id", format!("a [[strategy]] needs an id: {ID}"));
    };
    if !valid_table_id(&id) {
        return fail!("id", format!("id = {id:?}: expected {ID}"));
    }
    let name = string("name", "a string")?.unwrap_or_else(|| id.clone());

    const MS: &str = "milliseconds from 0 to 3600000";
    const BACKOFF: &str = "one of none, constant, exponential, geometric";
    let hedge = match get("hedge") {
        None => None,
        Some(v) => match hedge_table(v) {
            Ok(h) => Some(h),
            Err(e) => return fail!("hedge", e.to_string()),
        },
    };
    if hedge.is_some() {
        for (key, what) in [
            ("max_attempts", "hedge's own max_attempts"),
            ("breaker", "no breaker"),
            ("client_limit", "no client_limit"),
            ("client_rate", "no client_rate"),
            ("idempotency", "plain GET /work (no idempotency)"),
            ("bulkhead", "no bulkhead"),
        ] {
            if table.contains_key(key) {
                return fail!(
                    key,
                    format!("{key}: a hedging strategy (hedge = {{ ... }}) takes {what}")
                );
            }
        }
        if string("backoff", BACKOFF)?.is_some_and(|b| b != "none") {
            return fail!(
                "backoff",
                "backoff: a hedging strategy does not retry; leave backoff out or set it to \"none\""
                    .to_string()
            );
        }
    }
    let backoff = match string("backoff", BACKOFF)?.as_deref() {
        None if hedge.is_some() => BackoffSpec::None,
        None => {
            return fail!(
                "backoff",
                format!("a [[strategy]] needs a backoff: {BACKOFF}")
            )
        }
        Some("none") => {
            for key in ["wait_ms", "base_ms", "cap_ms", "multiplier"] {
                only_for(key, "another backoff")?;
            }
            BackoffSpec::None
        }
        Some("constant") => {
            for key in ["base_ms", "cap_ms", "multiplier"] {
                only_for(key, "backoff = \"exponential\" or \"geometric\"")?;
            }
            let Some(wait_ms) = number("wait_ms", 0.0, 3_600_000.0, MS)? else {
                return fail!(
                    "backoff",
                    format!("backoff = \"constant\" needs wait_ms: {MS}")
                );
            };
            BackoffSpec::Constant { wait_ms }
        }
        Some(kind @ ("exponential" | "geometric")) => {
            only_for("wait_ms", "backoff = \"constant\"")?;
            let base_ms = number("base_ms", 0.0, 600_000.0, "milliseconds from 0 to 600000")?;
            let cap_ms = number("cap_ms", 0.0, 3_600_000.0, MS)?;
            if let (Some(b), Some(c)) = (base_ms, cap_ms) {
                if c < b {
                    return fail!("cap_ms", format!("cap_ms = {c}: expected at least base_ms"));
                }
            }
            if kind == "exponential" {
                only_for("multiplier", "backoff = \"geometric\"")?;
                BackoffSpec::Exponential { base_ms, cap_ms }
            } else {
                const MUL: &str = "a number from 1 to 100";
                let Some(multiplier) = number("multiplier", 1.0, 100.0, MUL)? else {
                    return fail!(
                        "backoff",
                        format!("backoff = \"geometric\" needs multiplier: {MUL}"),
                    );
                };
                BackoffSpec::Geometric {
                    base_ms,
                    cap_ms,
                    multiplier,
                }
            }
        }
        Some(other) => {
            return fail!(
                "backoff",
                format!("backoff = {other:?}: expected {BACKOFF}")
            )
        }
    };

    const JITTER: &str = "one of none, full, equal, decorrelated, polly, proportional";
    let jitter = match string("jitter", JITTER)?.as_deref().unwrap_or("none") {
        "none" => Jitter::None,
        "full" => Jitter::Full,
        "equal" => Jitter::Equal,
        "decorrelated" => Jitter::Decorrelated,
        "polly" => Jitter::PollyV2,
        "proportional" => Jitter::Proportional {
            spread_pct: whole("spread_pct", 0, 100)?.unwrap_or(20) as u32,
        },
        other => return fail!("jitter", format!("jitter = {other:?}: expected {JITTER}")),
    };
    if !matches!(jitter, Jitter::Proportional { .. }) {
        only_for("spread_pct", "jitter = \"proportional\"")?;
    }
    if matches!(backoff, BackoffSpec::None) && jitter != Jitter::None {
        return fail!(
            "jitter",
            "jitter needs a backoff to spread: expected jitter = \"none\" with backoff = \"none\""
                .into(),
        );
    }

    let max_attempts = whole("max_attempts", 1, 100)?.map(|n| n as u32);
    const CLASSIFY: &str = "standard, everything or connect_only";
    let classify = match string("classify", CLASSIFY)?.as_deref() {
        None | Some("standard") => Classify::Standard,
        Some("everything") => Classify::Everything,
        Some("connect_only") => Classify::ConnectOnly,
        Some(other) => {
            return fail!(
                "classify",
                format!("classify = {other:?}: expected {CLASSIFY}")
            )
        }
    };

    let budget = match get("budget") {
        None => None,
        Some(v) => match v.clone().try_into::<BudgetSpec>() {
            Ok(b) => Some(b),
            Err(e) => {
                return fail!(
                    "budget",
                    format!(
                        "budget = {v}: {}: expected a table like {{ kind = \"token_bucket\", \
                         cap = 10, ratio = 0.1 }}",
                        e.message().trim()
                    ),
                )
            }
        },
    };
    let breaker = match get("breaker") {
        None => None,
        Some(v) => Some(breaker_table(v).or_else(|e| fail!("breaker", e.to_string()))?),
    };

    let idempotency = match string("idempotency", e03_model::ledger::KeyPolicy::ACCEPTS)? {
        None => None,
        Some(s) => match e03_model::ledger::KeyPolicy::parse(&s) {
            Some(p) => Some(p),
            None => {
                return fail!(
                    "idempotency",
                    format!(
                        "idempotency = {s:?}: expected {}",
                        e03_model::ledger::KeyPolicy::ACCEPTS
                    )
                )
            }
        },
    };

    const RETRY_AFTER: &str = "at_least or ignore";
    let retry_after = match string("retry_after", RETRY_AFTER)?.as_deref() {
        None | Some("at_least") => RetryAfter::AtLeast,
        Some("ignore") => RetryAfter::Ignore,
        Some(other) => {
            return fail!(
                "retry_after",
                format!("retry_after = {other:?}: expected {RETRY_AFTER}")
            )
        }
    };

    use e03_model::strategy::Connections;
    let connections = match string("connections", Connections::ACCEPTS)?.as_deref() {
        None | Some("reuse") => Connections::Reuse,
        Some("new") => Connections::New,
        Some(other) => {
            return fail!(
                "connections",
                format!("connections = {other:?}: expected {}", Connections::ACCEPTS)
            )
        }
    };

    use e03_model::dependency::{AdmissionRule, QueueDiscipline};
    use e03_model::limit::LimitKind;
    use e03_model::strategy::ServerSide;
    // A name out of a fixed set (a type with `ACCEPTS` and `parse`): `None` when absent, an
    // error naming the key and the set.
    macro_rules! named {
        ($key:literal, $set:ty) => {
            match string($key, <$set>::ACCEPTS)? {
                None => None,
                Some(v) => match <$set>::parse(&v) {
                    Some(x) => Some(x),
                    None => {
                        return fail!(
                            $key,
                            format!("{} = {v:?}: expected {}", $key, <$set>::ACCEPTS)
                        )
                    }
                },
            }
        };
    }
    let queue_policy = named!("queue_policy", QueueDiscipline);
    let admission = named!("admission", AdmissionRule);
    let concurrency_limit = named!("concurrency_limit", LimitKind);
    let client_limit = named!("client_limit", LimitKind);
    const CLIENT_RATE: &str = "none or aws_adaptive";
    let adaptive_rate = match string("client_rate", CLIENT_RATE)?.as_deref() {
        None | Some("none") => false,
        Some("aws_adaptive") => true,
        Some(other) => {
            return fail!(
                "client_rate",
                format!("client_rate = {other:?}: expected {CLIENT_RATE}")
            )
        }
    };

    let fallbacks = whole("fallbacks", 0, MAX_FALLBACKS)?.unwrap_or(0) as u32;
    const BULKHEAD: &str = "a list of 1 to 16 whole numbers from 1 to 100000: [50] is one pool \
                            of 50 slots every dependency shares, [30, 20] a pool per dependency \
                            (E03_BALANCER=partition's replicas, in order)";
    let bulkhead = match get("bulkhead") {
        None => Vec::new(),
        Some(toml::Value::Array(items))
            if (1..=16).contains(&items.len())
                && items
                    .iter()
                    .all(|v| v.as_integer().is_some_and(|i| (1..=100_000).contains(&i))) =>
        {
            items
                .iter()
                .filter_map(|v| v.as_integer())
                .map(|i| i as u32)
                .collect()
        }
        Some(other) => {
            return fail!(
                "bulkhead",
                format!("bulkhead = {other}: expected {BULKHEAD}")
            )
        }
    };

    Ok(StrategySpec {
        id,
        name,
        backoff,
        jitter,
        max_attempts,
        classify,
        budget,
        breaker,
        idempotency,
        retry_after,
        connections,
        server: ServerSide {
            queue_policy,
            admission,
            concurrency_limit,
        },
        client_limit,
        adaptive_rate,
        hedge,
        fallbacks,
        bulkhead,
    })
}

/// The most calls of a fan-out request a strategy may give fallbacks (`E03_FANOUT`'s most).
const MAX_FALLBACKS: i64 = 1000;

/// A `hedge = { ... }` value, every key checked: `max_attempts` (2 to 11) and one of
/// `delay_ms` (0 to 3600000) or `percentile` (over 0, under 100).
fn hedge_table(v: &toml::Value) -> Result<e03_model::hedge::HedgeSpec, SpecError> {
    use e03_model::hedge::{HedgeDelay, HedgeSpec, MAX_ATTEMPTS};
    let toml::Value::Table(t) = v else {
        return Err(SpecError::expected(
            format!("hedge = {v}"),
            format!("a table with {}", HEDGE_KEYS.join(", ")),
        ));
    };
    if let Some(key) = t.keys().find(|k| !HEDGE_KEYS.contains(&k.as_str())) {
        return Err(SpecError::unknown_key("hedge", key, HEDGE_KEYS.join(", ")));
    }
    let num = |key: &str| number_in(t, key);
    let max_attempts = match t.get("max_attempts") {
        Some(toml::Value::Integer(i)) if (2..=i64::from(MAX_ATTEMPTS)).contains(i) => *i as u32,
        _ => {
            let accepts = format!(
                "a whole number from 2 to {MAX_ATTEMPTS} (attempts in all, the first one included)"
            );
            return Err(SpecError::expected("hedge max_attempts", accepts));
        }
    };
    const ONE_DELAY: &str = "exactly one of delay_ms (a fixed delay) or percentile (of the round \
                             trips seen so far)";
    let delay = match (t.get("delay_ms"), t.get("percentile")) {
        (Some(_), None) => num("delay_ms")
            .filter(|d| (0.0..=3_600_000.0).contains(d))
            .map(|d| HedgeDelay::Fixed {
                delay_us: (d * 1000.0).round() as u64,
            })
            .ok_or_else(|| {
                SpecError::expected("hedge delay_ms", "milliseconds from 0 to 3600000")
            })?,
        (None, Some(_)) => num("percentile")
            .filter(|p| *p > 0.0 && *p < 100.0)
            .map(|pct| HedgeDelay::Percentile { pct })
            .ok_or_else(|| {
                SpecError::expected(
                    "hedge percentile",
                    "a number greater than 0 and less than 100",
                )
            })?,
        _ => return Err(SpecError::expected("hedge", ONE_DELAY)),
    };
    let spec = HedgeSpec {
        max_attempts,
        delay,
    };
    spec.validate()?;
    Ok(spec)
}

/// The number at `key` of an inline table (an integer or a float), if any.
fn number_in(t: &toml::Table, key: &str) -> Option<f64> {
    match t.get(key) {
        Some(toml::Value::Integer(i)) => Some(*i as f64),
        Some(toml::Value::Float(f)) => Some(*f),
        _ => None,
    }
}

/// A `breaker = { ... }` value, every key checked.
fn breaker_table(v: &toml::Value) -> Result<BreakerSpec, SpecError> {
    let toml::Value::Table(t) = v else {
        return Err(SpecError::expected(
            format!("breaker = {v}"),
            format!("a table with {}", BREAKER_KEYS.join(", ")),
        ));
    };
    if let Some(key) = t.keys().find(|k| !BREAKER_KEYS.contains(&k.as_str())) {
        return Err(SpecError::unknown_key(
            "breaker",
            key,
            BREAKER_KEYS.join(", "),
        ));
    }
    let num = |key: &str| number_in(t, key);
    let ratio = num("failure_ratio")
        .filter(|r| *r > 0.0 && *r <= 1.0)
        .ok_or_else(|| {
            SpecError::expected(
                "breaker failure_ratio",
                "a fraction greater than 0 and at most 1",
            )
        })?;
    let int = |key: &str, lo: i64, hi: i64| match t.get(key) {
        Some(toml::Value::Integer(i)) if (lo..=hi).contains(i) => Ok(*i as u64),
        _ => Err(SpecError::expected(
            format!("breaker {key}"),
            format!("a whole number from {lo} to {hi}"),
        )),
    };
    Ok(BreakerSpec {
        failure_ratio: ratio,
        min_throughput: int("min_throughput", 1, 1_000_000)? as u32,
        sampling_window_ms: int("sampling_window_ms", 1, 86_400_000)?,
        break_duration_ms: int("break_duration_ms", 1, 86_400_000)?,
    })
}

impl StrategySpec {
    /// The strategy for a run whose backoff base and cap are `base` and `cap` (used where the
    /// table leaves them out).
    pub fn resolve(&self, base: Duration, cap: Duration) -> Strategy {
        let ms = |v: f64| Duration::from_secs_f64(v / 1000.0);
        let backoff = match self.backoff {
            BackoffSpec::None => Backoff::Immediate,
            BackoffSpec::Constant { wait_ms } => Backoff::Constant { wait: ms(wait_ms) },
            BackoffSpec::Exponential { base_ms, cap_ms } => Backoff::Exponential {
                base: base_ms.map_or(base, ms),
                cap: cap_ms.map_or(cap, ms),
            },
            BackoffSpec::Geometric {
                base_ms,
                cap_ms,
                multiplier,
            } => Backoff::Geometric {
                base: base_ms.map_or(base, ms),
                cap: cap_ms.map_or(cap, ms),
                multiplier,
            },
        };
        Strategy {
            id: self.id.clone(),
            name: self.name.clone(),
            backoff,
            jitter: self.jitter,
            budget: self.budget,
            breaker: self.breaker,
            classify: self.classify,
            retry_after: self.retry_after,
            max_attempts: self.max_attempts,
            throttle_base_ms: None,
            idempotency: self.idempotency,
            load: None,
            connections: self.connections,
            server: self.server,
            client_limit: self
                .client_limit
                .and_then(|k| k.limit(e03_model::limit::AimdLimit::default().timeout)),
            adaptive_rate: self.adaptive_rate,
            hedge: self.hedge,
            fallbacks: self.fallbacks,
            bulkhead: self.bulkhead.clone(),
        }
    }
}

/// The strategy a run's `E03_STRATEGIES` id stands for: the lab's A to F first (any case), then
/// the zoo's presets, then `own`: a user's policy file's strategies, then the scenario's own
/// `[[strategy]]` tables ([`crate::scenario::ScenarioDef::own_strategies`]). `None`: unknown.
pub fn resolve_id(
    id: &str,
    base: Duration,
    cap: Duration,
    budget: BudgetSpec,
    own: &[StrategySpec],
) -> Option<Strategy> {
    if let Some(s) = Strategy::standard(&id.to_ascii_uppercase(), base, cap, budget) {
        return Some(s);
    }
    if let Some(s) = crate::presets::preset(id, base, cap) {
        return Some(s);
    }
    own.iter()
        .find(|s| s.id == id)
        .map(|s| s.resolve(base, cap))
}

/// A policy file that cannot be used: its text names the file, the line and what is expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("policy file {origin}{line}: {message}")]
pub struct PolicyFileError {
    pub origin: String,
    /// `:LINE` when the error has a place in the file, else empty.
    line: String,
    pub message: String,
}

impl PolicyFileError {
    fn at(origin: &str, text: &str, offset: Option<usize>, message: String) -> Self {
        let line = offset
            .map(|o| format!(":{}", crate::toml_table::line_of(text, o)))
            .unwrap_or_default();
        Self {
            origin: origin.to_string(),
            line,
            message,
        }
    }

    /// The line the error points at, if any.
    pub fn line(&self) -> Option<usize> {
        self.line.trim_start_matches(':').parse().ok()
    }
}

/// The raw form of a policy file: `[[strategy]]` tables and nothing else.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFile {
    #[serde(default)]
    strategy: Vec<Spanned<Table>>,
}

/// Reads a user's policy file (`E03_POLICIES`, `--policies`): `[[strategy]]` tables in the
/// format of a scenario file's, each checked, ids unique. `origin` names the file in errors.
pub fn parse_policy_file(text: &str, origin: &str) -> Result<Vec<StrategySpec>, PolicyFileError> {
    let file: PolicyFile = toml::from_str(text).map_err(|e| {
        let message = format!(
            "{} (a policy file holds only [[strategy]] tables, see docs/scenarios.md)",
            e.message().trim()
        );
        PolicyFileError::at(origin, text, e.span().map(|s| s.start), message)
    })?;
    if file.strategy.is_empty() {
        return Err(PolicyFileError::at(
            origin,
            text,
            None,
            "no [[strategy]] table: expected at least one".to_string(),
        ));
    }
    parse_strategy_tables(&file.strategy)
        .map_err(|e| PolicyFileError::at(origin, text, e.offset, e.message))
}

/// Reads a file's `[[strategy]]` tables (a scenario file's or a policy file's): each table
/// checked, each id once. The error's message starts with `[[strategy]]`.
pub fn parse_strategy_tables(tables: &[Spanned<Table>]) -> Result<Vec<StrategySpec>, TableError> {
    let mut specs: Vec<StrategySpec> = Vec::new();
    for t in tables {
        let spec = parse_strategy_table(t.get_ref(), t.span().start).map_err(|e| TableError {
            message: format!("[[strategy]] {}", e.message),
            ..e
        })?;
        if specs.iter().any(|s| s.id == spec.id) {
            return fail_at(
                t.get_ref(),
                t.span().start,
                "id",
                format!(
                    "[[strategy]] id = {:?} is defined twice: expected each id once",
                    spec.id
                ),
            );
        }
        specs.push(spec);
    }
    Ok(specs)
}

/// What `E03_STRATEGIES` accepts, given a scenario's own strategies (for error messages).
pub fn accepted_ids(own: &[StrategySpec]) -> String {
    let mut ids: Vec<String> = ["A", "B", "C", "D", "E", "F"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    ids.extend(crate::presets::names().iter().map(|(n, _)| n.to_string()));
    ids.extend(own.iter().map(|s| s.id.clone()));
    format!(
        "a comma-separated list of strategy ids from {} without repeats",
        ids.join(",")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Result<StrategySpec, TableError> {
        #[derive(Deserialize)]
        struct F {
            strategy: Spanned<Table>,
        }
        let f: F = toml::from_str(&format!("[strategy]\n{text}")).unwrap();
        parse_strategy_table(f.strategy.get_ref(), f.strategy.span().start)
    }

    fn err(text: &str) -> TableError {
        table(text).unwrap_err()
    }

    #[test]
    fn a_hedge_table_is_read_and_what_it_excludes_is_named() {
        use e03_model::hedge::{HedgeDelay, HedgeSpec};
        let s = table("id = \"h\"\nhedge = { max_attempts = 3, delay_ms = 50 }").unwrap();
        assert_eq!(s.backoff, BackoffSpec::None, "backoff may be left out");
        let want = HedgeSpec {
            max_attempts: 3,
            delay: HedgeDelay::Fixed { delay_us: 50_000 },
        };
        assert_eq!(s.hedge, Some(want));
        assert_eq!(s.resolve(Duration::ZERO, Duration::ZERO).hedge, Some(want));
        let p = table("id = \"p\"\nhedge = { max_attempts = 2, percentile = 95 }").unwrap();
        assert_eq!(p.hedge.unwrap().delay, HedgeDelay::Percentile { pct: 95.0 });
        for (text, key, says) in [
            (
                "hedge = { max_attempts = 1, delay_ms = 5 }",
                "hedge",
                "from 2 to 11",
            ),
            (
                "hedge = { max_attempts = 2 }",
                "hedge",
                "exactly one of delay_ms",
            ),
            (
                "hedge = { max_attempts = 2, delay_ms = 5, percentile = 90 }",
                "hedge",
                "exactly one of delay_ms",
            ),
            (
                "hedge = { max_attempts = 2, percentile = 100 }",
                "hedge",
                "less than 100",
            ),
            (
                "hedge = { max_attempts = 2, delay = 5 }",
                "hedge",
                "unknown key `delay`",
            ),
            ("hedge = 5", "hedge", "expected a table"),
            (
                "hedge = { max_attempts = 2, delay_ms = 5 }\nmax_attempts = 3",
                "max_attempts",
                "hedge's own max_attempts",
            ),
            (
                "hedge = { max_attempts = 2, delay_ms = 5 }\nbackoff = \"constant\"\nwait_ms = 5",
                "backoff",
                "does not retry",
            ),
            (
                "hedge = { max_attempts = 2, delay_ms = 5 }\nclient_limit = \"aimd\"",
                "client_limit",
                "no client_limit",
            ),
        ] {
            let e = err(&format!("id = \"h\"\n{text}"));
            assert_eq!(e.key, key, "{text}: {e:?}");
            assert!(e.message.contains(says), "{text}: {e:?}");
        }
    }

    #[test]
    fn a_row_can_name_the_server_policy_it_faces_and_a_bad_one_is_named() {
        use e03_model::dependency::QueueDiscipline;
        let s = table("id = \"k\"\nbackoff = \"none\"\nqueue_policy = \"adaptive_lifo\"\nadmission = \"deadline\"")
            .unwrap()
            .resolve(MS, MS);
        assert_eq!(s.server.queue_policy, Some(QueueDiscipline::AdaptiveLifo));
        assert_eq!(
            s.server.admission,
            Some(e03_model::dependency::AdmissionRule::Deadline)
        );
        let plain = table("id = \"k\"\nbackoff = \"none\"")
            .unwrap()
            .resolve(MS, MS);
        assert!(plain.server.is_default());
        let e = err("id = \"k\"\nbackoff = \"none\"\nqueue_policy = \"lifo\"");
        assert_eq!(e.key, "queue_policy");
        assert_eq!(
            e.message,
            "queue_policy = \"lifo\": expected fifo, codel or adaptive_lifo"
        );
        let e = err("id = \"k\"\nbackoff = \"none\"\nadmission = \"some\"");
        assert_eq!(e.key, "admission");
        assert_eq!(
            e.message,
            "admission = \"some\": expected all, deadline or priority"
        );
        let s = table("id = \"k\"\nbackoff = \"none\"\nconcurrency_limit = \"aimd\"")
            .unwrap()
            .resolve(MS, MS);
        assert_eq!(
            s.server.concurrency_limit,
            Some(e03_model::limit::LimitKind::Aimd)
        );
        let e = err("id = \"k\"\nbackoff = \"none\"\nconcurrency_limit = \"vegas\"");
        assert_eq!(e.key, "concurrency_limit");
        assert_eq!(
            e.message,
            "concurrency_limit = \"vegas\": expected none, aimd or gradient2"
        );
    }

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_full_table_resolves_to_its_strategy() {
        let s = table(
            "id = \"immediate-20ms\"\nname = \"retry every 20 ms\"\nbackoff = \"constant\"\n\
             wait_ms = 20\nmax_attempts = 100\nclassify = \"everything\"\n\
             budget = { kind = \"token_bucket\", cap = 10, ratio = 0.1 }\n\
             breaker = { failure_ratio = 0.5, min_throughput = 10, sampling_window_ms = 2000, \
             break_duration_ms = 2000 }",
        )
        .unwrap();
        let r = s.resolve(200 * MS, 2000 * MS);
        assert_eq!(r.id, "immediate-20ms");
        assert_eq!(r.name, "retry every 20 ms");
        assert_eq!(r.backoff, Backoff::Constant { wait: 20 * MS });
        assert_eq!(r.max_attempts, Some(100));
        assert_eq!(r.classify, Classify::Everything);
        assert_eq!(r.budget, Some(BudgetSpec::token_bucket(10.0, 0.1)));
        let b = r.breaker.unwrap();
        assert_eq!((b.min_throughput, b.break_duration_ms), (10, 2000));
    }

    #[test]
    fn a_key_policy_makes_a_charging_strategy_and_a_bad_one_is_named() {
        use e03_model::ledger::KeyPolicy;
        let s = table("id = \"k\"\nbackoff = \"none\"\nconnections = \"new\"").unwrap();
        assert_eq!(
            s.resolve(MS, MS).connections,
            e03_model::strategy::Connections::New
        );
        let e = err("id = \"k\"\nbackoff = \"none\"\nconnections = \"pool\"");
        assert_eq!(e.key, "connections");
        assert_eq!(e.message, "connections = \"pool\": expected reuse or new");
        let s = table("id = \"k\"\nbackoff = \"none\"\nidempotency = \"per_operation\"").unwrap();
        assert_eq!(s.resolve(MS, MS).idempotency, Some(KeyPolicy::PerOperation));
        let s = table("id = \"k\"\nbackoff = \"none\"\nidempotency = \"none\"").unwrap();
        assert_eq!(s.resolve(MS, MS).idempotency, Some(KeyPolicy::None));
        let plain = table("id = \"k\"\nbackoff = \"none\"").unwrap();
        assert_eq!(plain.resolve(MS, MS).idempotency, None);
        let e = err("id = \"k\"\nbackoff = \"none\"\nidempotency = \"per-op\"");
        assert_eq!(e.key, "idempotency");
        assert_eq!(
            e.message,
            "idempotency = \"per-op\": expected per_operation, per_attempt or none"
        );
        // The policy travels with the definition (control call JSON).
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<StrategySpec>(&json).unwrap(), s);
    }

    #[test]
    fn exponential_takes_the_runs_base_and_cap_unless_set() {
        let s = table("id = \"x\"\nbackoff = \"exponential\"\nbase_ms = 60\njitter = \"full\"")
            .unwrap();
        let r = s.resolve(200 * MS, 2000 * MS);
        assert_eq!(
            r.backoff,
            Backoff::Exponential {
                base: 60 * MS,
                cap: 2000 * MS
            }
        );
        assert_eq!(r.jitter, Jitter::Full);
        assert_eq!(r.name, "x", "the name defaults to the id");
        let g = table(
            "id = \"g\"\nbackoff = \"geometric\"\nmultiplier = 1.6\njitter = \"proportional\"",
        )
        .unwrap()
        .resolve(100 * MS, 900 * MS);
        assert_eq!(
            g.backoff,
            Backoff::Geometric {
                base: 100 * MS,
                cap: 900 * MS,
                multiplier: 1.6
            }
        );
        assert_eq!(g.jitter, Jitter::Proportional { spread_pct: 20 });
    }

    #[test]
    fn every_key_is_checked_and_named() {
        let e = err("id = \"x\"\nbackoff = \"none\"\ncolour = 1");
        assert_eq!(e.key, "colour");
        assert!(e.message.contains("expected one of id, name"), "{e:?}");
        assert!(err("id = \"C\"\nbackoff = \"none\"")
            .message
            .contains("A to F"));
        assert!(err("id = \"c\"\nbackoff = \"none\"")
            .message
            .contains("A to F"));
        assert!(err("id = \"a b\"\nbackoff = \"none\"")
            .message
            .contains("expected 1 to 32"));
        assert_eq!(err("backoff = \"none\"").key, "id");
        assert!(err("id = \"x\"").message.contains("needs a backoff"));
        let e = err("id = \"x\"\nbackoff = \"linear\"");
        assert!(
            e.message.contains("expected one of none, constant"),
            "{e:?}"
        );
        assert!(err("id = \"x\"\nbackoff = \"constant\"")
            .message
            .contains("needs wait_ms"));
        let e = err("id = \"x\"\nbackoff = \"constant\"\nwait_ms = 20\nbase_ms = 3");
        assert_eq!(e.key, "base_ms");
        let e = err("id = \"x\"\nbackoff = \"exponential\"\nmultiplier = 2");
        assert_eq!(e.key, "multiplier");
        let e = err("id = \"x\"\nbackoff = \"exponential\"\nbase_ms = 100\ncap_ms = 50");
        assert_eq!(e.key, "cap_ms");
        let e = err("id = \"x\"\nbackoff = \"constant\"\nwait_ms = -1");
        assert!(
            e.message.contains("wait_ms = -1: expected milliseconds"),
            "{e:?}"
        );
        let e = err("id = \"x\"\nbackoff = \"exponential\"\njitter = \"wild\"");
        assert!(e.message.contains("expected one of none, full"), "{e:?}");
        let e = err("id = \"x\"\nbackoff = \"none\"\njitter = \"full\"");
        assert_eq!(e.key, "jitter");
        let e = err("id = \"x\"\nbackoff = \"exponential\"\nspread_pct = 5");
        assert_eq!(e.key, "spread_pct");
        let e = err("id = \"x\"\nbackoff = \"none\"\nmax_attempts = 0");
        assert!(e.message.contains("from 1 to 100"), "{e:?}");
        let e = err("id = \"x\"\nbackoff = \"none\"\nclassify = \"some\"");
        assert_eq!(e.key, "classify");
        assert!(e.message.contains("connect_only"), "{e:?}");
        let post = table("id = \"p\"\nbackoff = \"none\"\nclassify = \"connect_only\"").unwrap();
        assert_eq!(
            post.resolve(200 * MS, 2000 * MS).classify,
            Classify::ConnectOnly
        );
        let e = err("id = \"x\"\nbackoff = \"none\"\nbudget = { kind = \"jar\" }");
        assert_eq!(e.key, "budget");
        let e = err("id = \"x\"\nbackoff = \"none\"\nbreaker = { failure_ratio = 0.5 }");
        assert!(e.message.contains("min_throughput"), "{e:?}");
        let e = err(
            "id = \"x\"\nbackoff = \"none\"\nbreaker = { failure_ratio = 0.5, min_throughput = 1, \
             sampling_window_ms = 1, break_duration_ms = 1, half_open = 2 }",
        );
        assert!(e.message.contains("unknown key `half_open`"), "{e:?}");
        let e = err("id = \"x\"\nbackoff = \"none\"\nbreaker = { failure_ratio = 1.5 }");
        assert!(e.message.contains("failure_ratio"), "{e:?}");
    }

    #[test]
    fn ids_resolve_a_to_f_first_then_the_scenarios_own() {
        let own = [table("id = \"mine\"\nbackoff = \"constant\"\nwait_ms = 5").unwrap()];
        let budget = BudgetSpec::token_bucket(10.0, 0.1);
        let c = resolve_id("c", MS, MS, budget, &own).unwrap();
        assert_eq!(c.id, "C");
        let m = resolve_id("mine", MS, MS, budget, &own).unwrap();
        assert_eq!(m.backoff, Backoff::Constant { wait: 5 * MS });
        assert!(resolve_id("nope", MS, MS, budget, &own).is_none());
        // The presets come after A to F, a scenario's own after the presets.
        let g = resolve_id("grpc", MS, MS, budget, &own).unwrap();
        assert_eq!((g.id.as_str(), g.max_attempts), ("grpc", Some(5)));
        assert!(accepted_ids(&own).contains("A,B,C,D,E,F,grpc,"));
        assert!(accepted_ids(&own).ends_with(",polly-hedging,mine without repeats"));
        // The parameter's documented list is the same, so --help says what is accepted.
        assert_eq!(
            crate::params::spec("E03_STRATEGIES").unwrap().accepts,
            accepted_ids(&[])
        );
        // A table may not take a preset's name (it would never be reached).
        assert!(!valid_table_id("grpc") && valid_table_id("grpc2"));
    }

    #[test]
    fn a_policy_file_holds_strategy_tables_and_its_errors_name_file_line_and_key() {
        let good = "# mine\n[[strategy]]\nid = \"mine\"\nbackoff = \"constant\"\nwait_ms = 5\n\
                    [[strategy]]\nid = \"capped\"\nbackoff = \"exponential\"\njitter = \"full\"\n\
                    budget = { kind = \"grpc\" }\n";
        let specs = parse_policy_file(good, "p.toml").unwrap();
        let ids: Vec<&str> = specs.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["mine", "capped"]);
        assert_eq!(specs[1].budget, Some(BudgetSpec::grpc()));

        let err = |text: &str| parse_policy_file(text, "p.toml").unwrap_err();
        let e = err("[[strategy]]\nid = \"x\"\nbackoff = \"constant\"\nwait_ms = \"soon\"\n");
        assert_eq!(e.line(), Some(4), "{e}");
        assert!(
            e.to_string()
                .starts_with("policy file p.toml:4: [[strategy]] wait_ms"),
            "{e}"
        );
        let e = err("[[strategy]]\nid = \"x\"\nbackoff = \"sometimes\"\n");
        assert!(
            e.to_string()
                .contains("none | constant | exponential | geometric")
                || e.to_string().contains("none, constant"),
            "{e}"
        );
        let e = err("[policy]\nstrategies = [\"A\"]\n");
        assert!(e.to_string().contains("only [[strategy]] tables"), "{e}");
        let e = err("");
        assert!(e.to_string().contains("no [[strategy]] table"), "{e}");
        let e = err("[[strategy]]\nid = \"grpc\"\nbackoff = \"none\"\n");
        assert_eq!(e.line(), Some(2), "a preset's name is the lab's own: {e}");
        let e = err("[[strategy]]\nid = \"x\"\nbackoff = \"none\"\n[[strategy]]\nid = \"x\"\nbackoff = \"none\"\n");
        assert!(e.to_string().contains("defined twice"), "{e}");
    }
}
