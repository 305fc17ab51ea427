//! A rate-limited phase's sliding window ([`crate::timeline::RateLimitWindow`]): which
//! requests it admits and, for the others, the `Retry-After` to send. A leaf of the model layer,
//! shared by the dependency's model ([`crate::dependency`]) and the HTTP fault proxy's
//! ([`crate::fault_proxy`]).

use std::collections::VecDeque;
use std::time::Duration;

use crate::timeline::RateLimitWindow;

/// The instants of the requests counted in a rate-limited phase's sliding window, oldest first.
#[derive(Debug, Default)]
pub struct SlidingWindow {
    /// Index of the rate-limited window these instants belong to (a new phase starts empty).
    phase: Option<usize>,
    counted: VecDeque<Duration>,
}

impl SlidingWindow {
    /// Decides about a request at `now` under `limit` (phase `phase`): `None` admits it,
    /// `Some(retry_after)` rejects it.
    pub fn check(
        &mut self,
        phase: usize,
        limit: &RateLimitWindow,
        now: Duration,
    ) -> Option<Duration> {
        if self.phase != Some(phase) {
            self.phase = Some(phase);
            self.counted.clear();
        }
        // A request at `t` counts in `[t, t + window)`.
        while self
            .counted
            .front()
            .is_some_and(|&t| t + limit.window <= now)
        {
            self.counted.pop_front();
        }
        let calls = limit.calls as usize;
        if self.counted.len() < calls {
            self.counted.push_back(now);
            return None;
        }
        if limit.count_rejected {
            self.counted.push_back(now);
        }
        // The window admits again once at most `calls - 1` counted requests remain in it: when
        // the (len - calls + 1)-th oldest leaves.
        let leaves = self.counted[self.counted.len() - calls] + limit.window;
        Some(limit.retry_after.unwrap_or(leaves - now))
    }
}
