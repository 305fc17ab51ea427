//! Over a partition (`E03_BALANCER=partition`: the replicas are different dependencies, client
//! `c`'s operations call replica `c mod replicas`): each dependency's operations, how many
//! succeeded and their latency. Counted from the client's `operation` records (live) or the
//! simulator's ends, by the operation's client; the `bulkhead` scenario reports the healthy
//! dependency's success and latency beside the slow one's.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::quantiles::{histogram, quantile_ms};

/// The tally of one dependency's operations.
#[derive(Debug, Clone)]
pub struct DependencyAcc {
    operations: u64,
    succeeded: u64,
    latency: Histogram<u64>,
}

/// One dependency's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DependencyMetrics {
    /// The replica of the partition, 0 is the first.
    pub dependency: u32,
    pub operations: u64,
    pub succeeded: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
}

impl DependencyMetrics {
    /// The share of its operations that succeeded; `None` without operations.
    pub fn success(&self) -> Option<f64> {
        (self.operations > 0).then(|| self.succeeded as f64 / self.operations as f64)
    }
}

impl Default for DependencyAcc {
    fn default() -> Self {
        DependencyAcc {
            operations: 0,
            succeeded: 0,
            latency: histogram(),
        }
    }
}

impl DependencyAcc {
    /// An operation that took `took_us` ended, succeeded or not.
    pub fn operation(&mut self, took_us: u64, success: bool) {
        self.operations += 1;
        self.succeeded += u64::from(success);
        self.latency.saturating_record(took_us);
    }

    pub fn finish(&self, dependency: u32) -> DependencyMetrics {
        DependencyMetrics {
            dependency,
            operations: self.operations,
            succeeded: self.succeeded,
            p50_ms: quantile_ms(&self.latency, 0.5),
            p99_ms: quantile_ms(&self.latency, 0.99),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dependency_counts_its_operations_and_their_latency() {
        let mut a = DependencyAcc::default();
        a.operation(20_000, true);
        a.operation(5_000_000, false);
        let m = a.finish(1);
        assert_eq!((m.dependency, m.operations, m.succeeded), (1, 2, 1));
        assert_eq!(m.success(), Some(0.5));
        assert!((4990.0..=5010.0).contains(&m.p99_ms), "{}", m.p99_ms);
        assert_eq!(DependencyAcc::default().finish(0).success(), None);
    }
}
