//! How one attempt ended, as the client saw it: what every policy classifies and every
//! operation reacts to (model layer; a leaf, so [`crate::strategy`] and [`crate::operation`]
//! both use it without using each other in a circle).

use std::time::Duration;

/// How one attempt ended, as the client saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptResult {
    /// An HTTP answer, with its Retry-After if it had one.
    Status {
        code: u16,
        retry_after: Option<Duration>,
    },
    /// No answer within the attempt's timeout.
    Timeout,
    /// The connection could not be made or broke.
    ConnectionError,
}

impl AttemptResult {
    pub fn status(code: u16) -> Self {
        AttemptResult::Status {
            code,
            retry_after: None,
        }
    }

    /// Whether E03's rule allows a retry after this result (a strategy's own rule is
    /// [`crate::strategy::Strategy::classify`]).
    pub fn is_retryable(&self) -> bool {
        match self {
            AttemptResult::Status { code, .. } => {
                matches!(code, 408 | 429 | 500 | 502 | 503 | 504)
            }
            AttemptResult::Timeout | AttemptResult::ConnectionError => true,
        }
    }
}
