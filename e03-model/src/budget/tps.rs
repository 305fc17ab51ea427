//! Finagle's `RetryBudget` and tower's `TpsBudget`: deposits and withdrawals that count for a
//! time to live, over a fixed reserve of retries per second.

use std::time::Duration;

use super::{RetryBudget, RetryCause};

/// Finagle's `RetryBudget` and tower's `TpsBudget` (tower `retry::budget::tps_budget`, a port of
/// Finagle's): deposits and withdrawals count for `ttl` only, kept in ten time slots of
/// `ttl / 10`; the balance is a fixed reserve of `min_retries_per_sec * ttl` retries plus the
/// slots' sum, where a deposit adds 1 and a retry takes `1 / percent_can_retry` (5 for 20%)
/// deposits' worth; a retry is allowed when the balance covers it. Defaults (both libraries):
/// ttl 10 s, 10 retries per second, 20%. The slot rotation follows tower's code step by step,
/// with `now` in place of its clock (time zero is when the budget is made).
#[derive(Debug, Clone, PartialEq)]
pub struct TpsBudget {
    deposit_amount: i64,
    /// Read by [`AnyBudget::tokens`](super::AnyBudget::tokens).
    pub(super) withdraw_amount: i64,
    reserve: i64,
    slots: [i64; 10],
    /// Changes to the current slot, committed when it expires.
    writer: i64,
    window: Duration,
    gen_index: usize,
    gen_time: Duration,
}

impl TpsBudget {
    pub fn new(ttl: Duration, min_retries_per_sec: u32, percent_can_retry: f64) -> Self {
        let (deposit_amount, withdraw_amount) = if percent_can_retry == 0.0 {
            (0, 1)
        } else if percent_can_retry <= 1.0 {
            (1, (1.0 / percent_can_retry) as i64)
        } else {
            (1000, (1000.0 / percent_can_retry) as i64)
        };
        let reserve = (min_retries_per_sec as i64)
            .saturating_mul(ttl.as_secs() as i64)
            .saturating_mul(withdraw_amount);
        Self {
            deposit_amount,
            withdraw_amount,
            reserve,
            slots: [0; 10],
            writer: 0,
            window: ttl / 10,
            gen_index: 0,
            gen_time: Duration::ZERO,
        }
    }

    /// The balance, in deposit units (a retry needs `withdraw_amount` of them).
    pub fn balance(&self) -> i64 {
        self.writer + self.slots.iter().sum::<i64>() + self.reserve
    }

    fn expire(&mut self, now: Duration) {
        let mut diff = now.saturating_sub(self.gen_time);
        if diff < self.window {
            return;
        }
        self.slots[self.gen_index] = std::mem::take(&mut self.writer);
        let mut idx = (self.gen_index + 1) % self.slots.len();
        while diff > self.window {
            self.slots[idx] = 0;
            diff -= self.window;
            idx = (idx + 1) % self.slots.len();
        }
        self.gen_index = idx;
        self.gen_time = now;
    }
}

impl RetryBudget for TpsBudget {
    fn deposit(&mut self, now: Duration) {
        self.expire(now);
        self.writer += self.deposit_amount;
    }

    fn withdraw(&mut self, now: Duration, _cause: RetryCause) -> bool {
        self.expire(now);
        if self.balance() >= self.withdraw_amount {
            self.writer -= self.withdraw_amount;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::{AnyBudget, BudgetSpec};

    const T: Duration = Duration::ZERO;
    const E: RetryCause = RetryCause::Error;

    fn s(v: u64) -> Duration {
        Duration::from_secs(v)
    }

    /// tower's TpsBudget tests, replayed with `now`: an empty budget, a deposit that leaks
    /// away, deposits that live in slots, and the reserve.
    #[test]
    fn tps_budget_replays_towers_tests() {
        let ms = Duration::from_millis;
        let mut empty = TpsBudget::new(s(1), 0, 1.0);
        assert!(!empty.withdraw(T, E));

        let mut leaky = TpsBudget::new(s(1), 0, 1.0);
        leaky.deposit(T);
        assert!(!leaky.withdraw(s(3), E));

        let mut slots = TpsBudget::new(s(1), 0, 0.5);
        slots.deposit(T);
        slots.deposit(T);
        assert!(
            slots.withdraw(ms(901), E),
            "900 ms later the deposits still count"
        );
        slots.deposit(ms(2902));
        slots.deposit(ms(3203));
        slots.deposit(ms(4004));
        assert!(
            slots.withdraw(ms(4004), E),
            "the first deposit expired, the second and third make one retry"
        );

        let mut reserve = TpsBudget::new(s(1), 5, 1.0);
        assert!((0..5).all(|_| reserve.withdraw(T, E)));
        assert!(!reserve.withdraw(T, E));
    }

    /// Finagle's and tower's defaults: a reserve of 10/s x 10 s = 100 retries; 20% = one retry
    /// per 5 deposits; withdrawals expire after the ttl, which refills the reserve.
    #[test]
    fn tps_default_budget_reserve_percent_and_expiry() {
        let mut b = AnyBudget::from_spec(Some(BudgetSpec::tps()));
        for _ in 0..100 {
            assert!(b.withdraw(T, E));
        }
        assert!(!b.withdraw(T, E), "the reserve is spent");
        for _ in 0..4 {
            b.deposit(T);
        }
        assert!(!b.withdraw(T, E), "4 deposits are 0.8 retry");
        b.deposit(T);
        assert!(b.withdraw(T, E), "5 deposits are one retry");
        assert!(
            !b.withdraw(s(5), E),
            "5 s later the withdrawals still count"
        );
        assert!(b.withdraw(s(11), E), "after the ttl they expired");
        let mut n = 1;
        while b.withdraw(s(11), E) {
            n += 1;
        }
        assert_eq!(n, 100, "the whole reserve again");
    }
}
