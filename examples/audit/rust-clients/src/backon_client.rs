//! backon 1.6.0, as its README's quick start shows it: `.retry(ExponentialBuilder::default())`,
//! `.sleep(tokio::time::sleep)`, `.when(...)` for what to retry, and the `Retryable::adjust`
//! example of its docs for `Retry-After`.
//!
//! `ExponentialBuilder::default()` is: no jitter (`jitter: false`; `with_jitter()` turns it on),
//! factor 2, `min_delay` 1 s, `max_delay` 60 s, `max_times` 3: waits of 1, 2 and 4 s, 4 attempts.
//! `.when` retries what is transient (no answer, 408, 429, 5xx). `adjust` is the doc's example as
//! it is: it parses `Retry-After` as whole seconds, `unwrap_or(0)`, so an HTTP date becomes a
//! wait of 0. No idempotency key: backon retries a closure and knows nothing of HTTP.

use crate::operation::{client, outcome, AttemptError, Target};
use backon::{ExponentialBuilder, Retryable};
use std::time::Duration;

/// One operation: backon retries the attempt closure, which keeps the answer's `Retry-After`
/// beside its error for `adjust`.
pub async fn operation(target: &Target, op: &str) -> String {
    let client = client();
    let result = (|| async {
        let answer = client
            .request(target.method.clone(), &target.url)
            .header("x-e03-op", op)
            .send()
            .await
            .map_err(|e| (AttemptError::Transport(e), None))?;
        let status = answer.status();
        let retry_after = answer.headers().get("Retry-After").cloned();
        let _ = answer.bytes().await;
        if status.as_u16() >= 400 {
            return Err((AttemptError::Status(status), retry_after));
        }
        Ok(status.as_u16())
    })
    .retry(ExponentialBuilder::default())
    .sleep(tokio::time::sleep)
    .when(|(e, _)| e.is_transient())
    .adjust(|(_, retry_after), dur| match retry_after {
        Some(v) => {
            let retry_after = v.to_str().unwrap_or("0");
            let retry_after = retry_after.parse::<u64>().unwrap_or(0);
            Some(Duration::from_secs(retry_after))
        }
        None => dur,
    })
    .await
    .map_err(|(e, _)| e);
    outcome(result)
}

#[cfg(test)]
mod tests {
    use backon::{BackoffBuilder, ExponentialBuilder};
    use std::time::Duration;

    /// `ExponentialBuilder::default()`: no jitter, 1 s doubled, 3 retries (docs/clients.md).
    #[test]
    fn default_is_1_2_4_s_without_jitter_then_none() {
        let waits: Vec<Duration> = ExponentialBuilder::default().build().collect();
        assert_eq!(waits, [1, 2, 4].map(Duration::from_secs).to_vec());
    }
}
