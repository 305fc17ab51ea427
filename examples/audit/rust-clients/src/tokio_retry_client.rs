//! tokio-retry 0.3.0, as its README shows it:
//!
//! ```text
//! let retry_strategy = ExponentialBackoff::from_millis(10)
//!     .map(jitter) // add jitter to delays
//!     .take(3);    // limit to 3 retries
//! let result = Retry::spawn(retry_strategy, action).await?;
//! ```
//!
//! with `RetryIf::spawn` (the crate's conditional form) so that a 4xx is not retried.
//! `ExponentialBackoff::from_millis(10)` is `base^n` milliseconds, not 10 ms doubled: 10, 100,
//! 1000 ms; `jitter` multiplies each by `rand::random::<f64>()`, uniform in [0, 1): full jitter.
//! No `Retry-After`, no idempotency key.

use crate::operation::{attempt, client, outcome, Target};
use tokio_retry::strategy::{jitter, ExponentialBackoff};
use tokio_retry::RetryIf;

/// One operation: tokio-retry retries the attempt closure while it fails transiently.
pub async fn operation(target: &Target, op: &str) -> String {
    let client = client();
    let retry_strategy = ExponentialBackoff::from_millis(10).map(jitter).take(3);
    let result = RetryIf::spawn(
        retry_strategy,
        || attempt(&client, target, op),
        |e: &crate::operation::AttemptError| e.is_transient(),
    )
    .await;
    outcome(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// `from_millis(10)` is 10^n ms (its doc: "taking the base to the n-th power"), not 10 ms
    /// doubled, and `jitter` keeps each wait in [0, that): what docs/clients.md quotes.
    #[test]
    fn from_millis_10_is_powers_of_ten_and_jitter_stays_under_them() {
        let plain: Vec<Duration> = ExponentialBackoff::from_millis(10).take(3).collect();
        assert_eq!(
            plain,
            [10, 100, 1000].map(Duration::from_millis).to_vec(),
            "10^1, 10^2, 10^3 ms"
        );
        for _ in 0..100 {
            let jittered: Vec<Duration> = ExponentialBackoff::from_millis(10)
                .map(jitter)
                .take(3)
                .collect();
            for (j, p) in jittered.iter().zip(&plain) {
                assert!(j < p, "{j:?} not under {p:?}");
            }
        }
    }
}
