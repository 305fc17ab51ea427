//! A retry budget as data ([`BudgetSpec`]): the kinds a strategy may configure, each field with
//! its library's default ([`defaults`]), and the checks of their values. Strategy files, presets
//! and the parameter table write one; [`AnyBudget`](super::AnyBudget) builds the budget it
//! describes. Data only: it names no budget kind's code.

use crate::spec_error::SpecError;

/// A retry budget as data: which kind, with its parameters. Serialized with a `kind` tag in
/// snake_case; every field has a default (the library's), so `{ kind = "grpc" }` is a whole
/// spec and `{ kind = "grpc", max_tokens = 10, token_ratio = 0.1 }` overrides both fields.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum BudgetSpec {
    /// The swarm-wide token bucket of strategy D (see [`TokenBucket`](super::TokenBucket)).
    TokenBucket {
        /// Tokens at the start and at most. Default 10 (`E03_BUDGET_CAP`).
        cap: f64,
        /// Tokens each first attempt adds. Default 0.1 (`E03_BUDGET_RATIO`).
        ratio: f64,
    },
    /// The reliability-patterns article's budget: retries stay within `ratio` of the operations started (see
    /// [`RatioBudget`](super::RatioBudget)).
    Ratio {
        /// Retries allowed per operation started. Default 0.1.
        #[serde(default = "defaults::ratio")]
        ratio: f64,
    },
    /// gRPC's retry throttling (proposal A6, see [`GrpcThrottle`](super::GrpcThrottle)).
    Grpc {
        /// Tokens at the start and at most; retries stop at half of it. Default 10.
        #[serde(default = "defaults::grpc_max_tokens")]
        max_tokens: f64,
        /// Tokens a successful attempt adds (at most three decimals). Default 0.1.
        #[serde(default = "defaults::grpc_token_ratio")]
        token_ratio: f64,
    },
    /// The AWS SDKs' standard-mode retry quota (see [`AwsQuota`](super::AwsQuota)).
    AwsStandard {
        /// Tokens at the start and at most. Default 500.
        #[serde(default = "defaults::aws_quota")]
        quota_tokens: u32,
        /// Cost of a retry after an error or a throttle. Default 5.
        #[serde(default = "defaults::aws_retry_cost")]
        retry_cost_tokens: u32,
        /// Cost of a retry after a timeout. Default 10.
        #[serde(default = "defaults::aws_timeout_cost")]
        timeout_cost_tokens: u32,
        /// Tokens a success on a first attempt gives back. Default 1.
        #[serde(default = "defaults::aws_no_retry_increment")]
        no_retry_increment_tokens: u32,
    },
    /// The AWS SDKs' 2026 retry quota (see [`AwsQuota`](super::AwsQuota)): a retry after a
    /// throttle is cheap, any other retry (timeouts included) is dear. Tag `aws_2026`.
    #[serde(rename = "aws_2026")]
    Aws2026 {
        /// Tokens at the start and at most. Default 500.
        #[serde(default = "defaults::aws_quota")]
        quota_tokens: u32,
        /// Cost of a retry after an error or a timeout. Default 14.
        #[serde(default = "defaults::aws_2026_retry_cost")]
        retry_cost_tokens: u32,
        /// Cost of a retry after a throttle (429, or a Retry-After). Default 5.
        #[serde(default = "defaults::aws_2026_throttle_cost")]
        throttle_cost_tokens: u32,
        /// Tokens a success on a first attempt gives back. Default 1.
        #[serde(default = "defaults::aws_no_retry_increment")]
        no_retry_increment_tokens: u32,
    },
    /// Finagle's RetryBudget and tower's TpsBudget (see [`TpsBudget`](super::TpsBudget)).
    Tps {
        /// How long a deposit (and a withdrawal) counts, 1 to 60 s. Default 10 000 ms.
        #[serde(default = "defaults::tps_ttl_ms")]
        ttl_ms: u64,
        /// Retries per second allowed whatever the traffic. Default 10.
        #[serde(default = "defaults::tps_min_retries_per_sec")]
        min_retries_per_sec: u32,
        /// Retries allowed per deposit, as a fraction (0.2 = 20%), 0 to 1000. Default 0.2.
        #[serde(default = "defaults::tps_percent_can_retry")]
        percent_can_retry: f64,
    },
    /// Envoy's retry budget (see [`EnvoyBudget`](super::EnvoyBudget)).
    Envoy {
        /// Concurrent retries allowed, in percent of the active requests. Default 20.
        #[serde(default = "defaults::envoy_budget_percent")]
        budget_percent: f64,
        /// Concurrent retries allowed whatever the traffic. Default 3.
        #[serde(default = "defaults::envoy_min_retry_concurrency")]
        min_retry_concurrency: u32,
    },
    /// Google SRE client-side adaptive throttling (see [`SreThrottle`](super::SreThrottle)).
    SreAdaptive {
        /// The multiplier K of accepted requests. Default 2.
        #[serde(default = "defaults::sre_k")]
        k: f64,
        /// The window requests and accepts are counted over. Default 120 000 ms.
        #[serde(default = "defaults::sre_window_ms")]
        window_ms: u64,
    },
}

/// The libraries' documented defaults, one function each (serde needs paths).
pub mod defaults {
    pub fn ratio() -> f64 {
        0.1
    }
    pub fn grpc_max_tokens() -> f64 {
        10.0
    }
    pub fn grpc_token_ratio() -> f64 {
        0.1
    }
    pub fn aws_quota() -> u32 {
        500
    }
    pub fn aws_retry_cost() -> u32 {
        5
    }
    pub fn aws_timeout_cost() -> u32 {
        10
    }
    pub fn aws_no_retry_increment() -> u32 {
        1
    }
    pub fn aws_2026_retry_cost() -> u32 {
        14
    }
    pub fn aws_2026_throttle_cost() -> u32 {
        5
    }
    pub fn tps_ttl_ms() -> u64 {
        10_000
    }
    pub fn tps_min_retries_per_sec() -> u32 {
        10
    }
    pub fn tps_percent_can_retry() -> f64 {
        0.2
    }
    pub fn envoy_budget_percent() -> f64 {
        20.0
    }
    pub fn envoy_min_retry_concurrency() -> u32 {
        3
    }
    pub fn sre_k() -> f64 {
        2.0
    }
    pub fn sre_window_ms() -> u64 {
        120_000
    }
}

impl BudgetSpec {
    /// Strategy D's bucket.
    pub fn token_bucket(cap: f64, ratio: f64) -> Self {
        BudgetSpec::TokenBucket { cap, ratio }
    }

    /// The reliability-patterns article's budget with the given ratio.
    pub fn ratio(ratio: f64) -> Self {
        BudgetSpec::Ratio { ratio }
    }

    /// gRPC A6 throttling with its documented example values (10 tokens, 0.1 per success).
    pub fn grpc() -> Self {
        BudgetSpec::Grpc {
            max_tokens: defaults::grpc_max_tokens(),
            token_ratio: defaults::grpc_token_ratio(),
        }
    }

    /// The AWS SDKs' standard-mode quota with its defaults (500; 5, 10 for a timeout; +1).
    pub fn aws_standard() -> Self {
        BudgetSpec::AwsStandard {
            quota_tokens: defaults::aws_quota(),
            retry_cost_tokens: defaults::aws_retry_cost(),
            timeout_cost_tokens: defaults::aws_timeout_cost(),
            no_retry_increment_tokens: defaults::aws_no_retry_increment(),
        }
    }

    /// The AWS SDKs' 2026 quota with its defaults (500; 14, 5 for a throttle; +1).
    pub fn aws_2026() -> Self {
        BudgetSpec::Aws2026 {
            quota_tokens: defaults::aws_quota(),
            retry_cost_tokens: defaults::aws_2026_retry_cost(),
            throttle_cost_tokens: defaults::aws_2026_throttle_cost(),
            no_retry_increment_tokens: defaults::aws_no_retry_increment(),
        }
    }

    /// Finagle's and tower's default budget (ttl 10 s, 10 retries/s, 20%).
    pub fn tps() -> Self {
        BudgetSpec::Tps {
            ttl_ms: defaults::tps_ttl_ms(),
            min_retries_per_sec: defaults::tps_min_retries_per_sec(),
            percent_can_retry: defaults::tps_percent_can_retry(),
        }
    }

    /// Envoy's default retry budget (20%, at least 3).
    pub fn envoy() -> Self {
        BudgetSpec::Envoy {
            budget_percent: defaults::envoy_budget_percent(),
            min_retry_concurrency: defaults::envoy_min_retry_concurrency(),
        }
    }

    /// The SRE book's adaptive throttling (K = 2 over 2 minutes).
    pub fn sre_adaptive() -> Self {
        BudgetSpec::SreAdaptive {
            k: defaults::sre_k(),
            window_ms: defaults::sre_window_ms(),
        }
    }

    /// Checks the parameters; the error names the field and what it accepts.
    pub fn validate(&self) -> Result<(), SpecError> {
        fn check(ok: bool, kind: &str, key: &str, accepts: &str) -> Result<(), SpecError> {
            if ok {
                Ok(())
            } else {
                Err(SpecError::Must {
                    kind: kind.to_string(),
                    key: key.to_string(),
                    accepts: accepts.to_string(),
                })
            }
        }
        let finite_pos = |v: f64| v.is_finite() && v >= 0.0;
        match *self {
            BudgetSpec::TokenBucket { cap, ratio } => {
                check(finite_pos(cap), "token_bucket", "cap", "a number >= 0")?;
                check(finite_pos(ratio), "token_bucket", "ratio", "a number >= 0")
            }
            BudgetSpec::Ratio { ratio } => {
                check(finite_pos(ratio), "ratio", "ratio", "a number >= 0")
            }
            BudgetSpec::Grpc {
                max_tokens,
                token_ratio,
            } => {
                check(
                    max_tokens.is_finite() && max_tokens > 0.0 && max_tokens <= 1000.0,
                    "grpc",
                    "max_tokens",
                    "in (0, 1000]",
                )?;
                check(
                    token_ratio.is_finite() && token_ratio > 0.0,
                    "grpc",
                    "token_ratio",
                    "a number > 0",
                )
            }
            BudgetSpec::AwsStandard { .. } | BudgetSpec::Aws2026 { .. } => Ok(()),
            BudgetSpec::Tps {
                ttl_ms,
                percent_can_retry,
                ..
            } => {
                check(
                    (1000..=60_000).contains(&ttl_ms),
                    "tps",
                    "ttl_ms",
                    "in 1000..=60000",
                )?;
                check(
                    (0.0..=1000.0).contains(&percent_can_retry),
                    "tps",
                    "percent_can_retry",
                    "in 0..=1000",
                )
            }
            BudgetSpec::Envoy { budget_percent, .. } => check(
                (0.0..=100.0).contains(&budget_percent),
                "envoy",
                "budget_percent",
                "in 0..=100",
            ),
            BudgetSpec::SreAdaptive { k, window_ms } => {
                check(finite_pos(k), "sre_adaptive", "k", "a number >= 0")?;
                check(window_ms > 0, "sre_adaptive", "window_ms", "> 0")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_deserialize_from_toml_with_defaults_and_reject_unknown_fields() {
        let spec: BudgetSpec =
            toml::from_str("kind = \"grpc\"\nmax_tokens = 10\ntoken_ratio = 0.1").unwrap();
        assert_eq!(spec, BudgetSpec::grpc());
        let spec: BudgetSpec = toml::from_str("kind = \"aws_2026\"").unwrap();
        assert_eq!(spec, BudgetSpec::aws_2026());
        let spec: BudgetSpec = toml::from_str("kind = \"tps\"\nttl_ms = 5000").unwrap();
        assert_eq!(
            spec,
            BudgetSpec::Tps {
                ttl_ms: 5000,
                min_retries_per_sec: 10,
                percent_can_retry: 0.2
            }
        );
        for (text, spec) in [
            ("kind = \"ratio\"", BudgetSpec::ratio(0.1)),
            ("kind = \"aws_standard\"", BudgetSpec::aws_standard()),
            ("kind = \"envoy\"", BudgetSpec::envoy()),
            ("kind = \"sre_adaptive\"", BudgetSpec::sre_adaptive()),
            (
                "kind = \"token_bucket\"\ncap = 10\nratio = 0.1",
                BudgetSpec::token_bucket(10.0, 0.1),
            ),
        ] {
            assert_eq!(toml::from_str::<BudgetSpec>(text).unwrap(), spec, "{text}");
            assert_eq!(spec.validate(), Ok(()));
        }
        let err = toml::from_str::<BudgetSpec>("kind = \"grpc\"\nmax_token = 10").unwrap_err();
        assert!(err.to_string().contains("max_token"), "{err}");
        let err = toml::from_str::<BudgetSpec>("kind = \"nope\"").unwrap_err();
        assert!(err.to_string().contains("nope"), "{err}");
        let bad = BudgetSpec::Tps {
            ttl_ms: 100,
            min_retries_per_sec: 10,
            percent_can_retry: 0.2,
        };
        assert!(bad.validate().unwrap_err().to_string().contains("ttl_ms"));
    }
}
