//! reqwest-retry 0.8.0 through reqwest-middleware 0.4.2, as reqwest-retry's crate doc shows it:
//!
//! ```text
//! let retry_policy = ExponentialBackoff::builder().build_with_max_retries(3);
//! let client = ClientBuilder::new(reqwest::Client::new())
//!     .with(RetryTransientMiddleware::new_with_policy(retry_policy))
//!     .build();
//! ```
//!
//! The policy is retry-policies 0.5's `ExponentialBackoff` with the builder's defaults
//! (`min_retry_interval` 1 s, `max_retry_interval` 30 min, base 2, `Jitter::Full`: "Jitter between
//! 0 and the calculated backoff duration"), so the waits are uniform(0, 1 s * 2^n). The middleware's
//! `DefaultRetryableStrategy` retries no answer, 408, 429 and 5xx, whatever the method (a POST
//! too); it does not read `Retry-After` and sends no idempotency key.

use crate::operation::{client, Target};
use reqwest_middleware::ClientBuilder;
use reqwest_retry::policies::ExponentialBackoff;
use reqwest_retry::RetryTransientMiddleware;

/// One operation: the middleware does every retry; what it returns last is printed.
pub async fn operation(target: &Target, op: &str) -> String {
    let retry_policy = ExponentialBackoff::builder().build_with_max_retries(3);
    let client = ClientBuilder::new(client())
        .with(RetryTransientMiddleware::new_with_policy(retry_policy))
        .build();
    match client
        .request(target.method.clone(), &target.url)
        .header("x-e03-op", op)
        .send()
        .await
    {
        Ok(answer) => {
            let status = answer.status().as_u16();
            let _ = answer.bytes().await;
            status.to_string()
        }
        Err(e) => format!("error: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use reqwest_retry::policies::ExponentialBackoff;
    use reqwest_retry::{RetryDecision, RetryPolicy};
    use std::time::{Duration, SystemTime};

    /// The builder's defaults with 3 retries: retry n waits in [0, 2^n s] (`Jitter::Full`, 1 s
    /// doubled), and a fourth retry is refused (docs/clients.md).
    #[test]
    fn default_policy_is_full_jitter_from_1_s_and_3_retries() {
        let policy = ExponentialBackoff::builder().build_with_max_retries(3);
        let mut under_half = 0;
        for _ in 0..200 {
            for n in 0..3u32 {
                let now = SystemTime::now();
                let RetryDecision::Retry { execute_after } = policy.should_retry(now, n) else {
                    panic!("retry {n} refused");
                };
                let wait = execute_after.duration_since(now).unwrap_or_default();
                let cap = Duration::from_secs(1 << n);
                assert!(wait <= cap, "retry {n}: {wait:?} over {cap:?}");
                under_half += usize::from(wait < cap / 2);
            }
        }
        // Full jitter: about half of 600 draws fall under half the cap; none would without it.
        assert!(under_half > 150, "{under_half} of 600 under half the cap");
        assert!(matches!(
            policy.should_retry(SystemTime::now(), 3),
            RetryDecision::DoNotRetry
        ));
    }
}
