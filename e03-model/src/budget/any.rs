//! [`AnyBudget`]: any of the budget kinds, chosen by a strategy's [`BudgetSpec`] and driven
//! through the one [`RetryBudget`] trait.

use std::time::Duration;

use super::aws::AwsQuota;
use super::envoy::EnvoyBudget;
use super::grpc::GrpcThrottle;
use super::ratio::RatioBudget;
use super::spec::BudgetSpec;
use super::sre::SreThrottle;
use super::token_bucket::TokenBucket;
use super::tps::TpsBudget;
use super::{AttemptClass, Rejection, RetryBudget, RetryCause, Unlimited};

/// Any budget, chosen by a strategy's data.
#[derive(Debug, Clone)]
pub enum AnyBudget {
    Unlimited(Unlimited),
    Bucket(TokenBucket),
    Ratio(RatioBudget),
    Grpc(GrpcThrottle),
    Aws(AwsQuota),
    Tps(TpsBudget),
    Envoy(EnvoyBudget),
    Sre(SreThrottle),
}

/// The seed [`AnyBudget::from_spec`] gives a budget that draws random numbers.
pub const DEFAULT_BUDGET_SEED: u64 = 0x5EED_0003;

impl AnyBudget {
    /// The budget's tokens in its own unit, for a gauge: the token bucket's and gRPC's tokens,
    /// the AWS quota left, Finagle/tower's balance in retries (deposits over the withdraw
    /// amount). `None` for budgets that keep no tokens (unlimited, ratio, Envoy's concurrency
    /// limit, SRE adaptive throttling).
    pub fn tokens(&self) -> Option<f64> {
        match self {
            AnyBudget::Bucket(b) => Some(b.tokens()),
            AnyBudget::Grpc(b) => Some(b.tokens()),
            AnyBudget::Aws(b) => Some(f64::from(b.available())),
            AnyBudget::Tps(b) => Some(b.balance() as f64 / b.withdraw_amount.max(1) as f64),
            AnyBudget::Unlimited(_)
            | AnyBudget::Ratio(_)
            | AnyBudget::Envoy(_)
            | AnyBudget::Sre(_) => None,
        }
    }

    /// The budget `spec` describes; a randomized one (SRE adaptive throttling) draws from
    /// [`DEFAULT_BUDGET_SEED`]. Use [`from_spec_seeded`](Self::from_spec_seeded) to tie it to
    /// the run's seed.
    pub fn from_spec(spec: Option<BudgetSpec>) -> Self {
        Self::from_spec_seeded(spec, DEFAULT_BUDGET_SEED)
    }

    /// The budget `spec` describes, with `seed` for the ones that draw random numbers.
    pub fn from_spec_seeded(spec: Option<BudgetSpec>, seed: u64) -> Self {
        let Some(spec) = spec else {
            return AnyBudget::Unlimited(Unlimited);
        };
        match spec {
            BudgetSpec::TokenBucket { cap, ratio } => {
                AnyBudget::Bucket(TokenBucket::new(cap, ratio))
            }
            BudgetSpec::Ratio { ratio } => AnyBudget::Ratio(RatioBudget::new(ratio)),
            BudgetSpec::Grpc {
                max_tokens,
                token_ratio,
            } => AnyBudget::Grpc(GrpcThrottle::new(max_tokens, token_ratio)),
            BudgetSpec::AwsStandard {
                quota_tokens,
                retry_cost_tokens,
                timeout_cost_tokens,
                no_retry_increment_tokens,
            } => AnyBudget::Aws(AwsQuota::new(
                quota_tokens,
                retry_cost_tokens,
                timeout_cost_tokens,
                retry_cost_tokens,
                no_retry_increment_tokens,
            )),
            BudgetSpec::Aws2026 {
                quota_tokens,
                retry_cost_tokens,
                throttle_cost_tokens,
                no_retry_increment_tokens,
            } => AnyBudget::Aws(AwsQuota::new(
                quota_tokens,
                retry_cost_tokens,
                retry_cost_tokens,
                throttle_cost_tokens,
                no_retry_increment_tokens,
            )),
            BudgetSpec::Tps {
                ttl_ms,
                min_retries_per_sec,
                percent_can_retry,
            } => AnyBudget::Tps(TpsBudget::new(
                Duration::from_millis(ttl_ms),
                min_retries_per_sec,
                percent_can_retry,
            )),
            BudgetSpec::Envoy {
                budget_percent,
                min_retry_concurrency,
            } => AnyBudget::Envoy(EnvoyBudget::new(budget_percent, min_retry_concurrency)),
            BudgetSpec::SreAdaptive { k, window_ms } => {
                AnyBudget::Sre(SreThrottle::new(k, Duration::from_millis(window_ms), seed))
            }
        }
    }

    fn inner(&mut self) -> &mut dyn RetryBudget {
        match self {
            AnyBudget::Unlimited(b) => b,
            AnyBudget::Bucket(b) => b,
            AnyBudget::Ratio(b) => b,
            AnyBudget::Grpc(b) => b,
            AnyBudget::Aws(b) => b,
            AnyBudget::Tps(b) => b,
            AnyBudget::Envoy(b) => b,
            AnyBudget::Sre(b) => b,
        }
    }
}

impl RetryBudget for AnyBudget {
    fn deposit(&mut self, now: Duration) {
        self.inner().deposit(now)
    }
    fn withdraw(&mut self, now: Duration, cause: RetryCause) -> bool {
        self.inner().withdraw(now, cause)
    }
    fn admit(&mut self, now: Duration, attempt: u32) -> Result<(), Rejection> {
        self.inner().admit(now, attempt)
    }
    fn record(&mut self, now: Duration, attempt: u32, class: AttemptClass) {
        self.inner().record(now, attempt, class)
    }
    fn release(&mut self, now: Duration) {
        self.inner().release(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Duration = Duration::ZERO;
    const E: RetryCause = RetryCause::Error;
    const F: AttemptClass = AttemptClass::Failure(RetryCause::Error);

    #[test]
    fn tokens_show_what_each_budget_keeps() {
        let t = |spec: BudgetSpec| AnyBudget::from_spec(Some(spec)).tokens();
        assert_eq!(t(BudgetSpec::token_bucket(10.0, 0.1)), Some(10.0));
        assert_eq!(t(BudgetSpec::grpc()), Some(10.0));
        assert_eq!(t(BudgetSpec::aws_standard()), Some(500.0));
        assert_eq!(t(BudgetSpec::ratio(0.1)), None);
        assert_eq!(t(BudgetSpec::envoy()), None);
        assert_eq!(t(BudgetSpec::sre_adaptive()), None);
        // A retry spends from the bucket, and the gauge follows.
        let mut b = AnyBudget::from_spec(Some(BudgetSpec::token_bucket(10.0, 0.1)));
        assert!(b.withdraw(T, E));
        assert_eq!(b.tokens(), Some(9.0));
        // Finagle/tower: the floor of 10 retries a second is there from the start.
        let tps = t(BudgetSpec::tps()).unwrap();
        assert!(tps >= 10.0, "{tps}");
    }

    /// The reliability-patterns article's loop through the trait: `requests` operations whose every attempt fails, at
    /// most `attempts` attempts each, all at time zero. Returns the attempts sent.
    fn seed_003_loop(budget: &mut dyn RetryBudget, requests: u32, attempts: u32) -> u32 {
        let mut sent = 0;
        for _ in 0..requests {
            budget.deposit(T);
            let mut attempt = 1;
            loop {
                if budget.admit(T, attempt).is_err() {
                    if attempt > 1 {
                        budget.release(T);
                    }
                    break;
                }
                sent += 1;
                budget.record(T, attempt, F);
                if attempt == attempts || !budget.withdraw(T, E) {
                    break;
                }
                attempt += 1;
            }
        }
        sent
    }

    #[test]
    fn seed_003_ratio_budget_gives_exactly_11_000_attempts() {
        let mut none = AnyBudget::from_spec(None);
        assert_eq!(seed_003_loop(&mut none, 10_000, 3), 30_000);
        let mut ratio = AnyBudget::from_spec(Some(BudgetSpec::ratio(0.1)));
        assert_eq!(seed_003_loop(&mut ratio, 10_000, 3), 11_000);
    }

    /// The other counting budgets in the reliability-patterns article's loop, by hand: the AWS quota pays 100 retries
    /// of 5 (500 / 5) and 35 of 14 (490 / 14) and nothing comes back; gRPC's throttle drops one
    /// token per failed attempt from 10 and allows retries while above 5: 3 retries.
    #[test]
    fn seed_003_loop_with_the_zoo_counting_budgets() {
        let run = |spec| seed_003_loop(&mut AnyBudget::from_spec(Some(spec)), 10_000, 3);
        assert_eq!(run(BudgetSpec::aws_standard()), 10_100);
        assert_eq!(run(BudgetSpec::aws_2026()), 10_035);
        assert_eq!(run(BudgetSpec::grpc()), 10_003);
    }
}
