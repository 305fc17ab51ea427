//! The rules between parameters, which no single value can check: the ordering rules (a
//! freeze ends after it starts, ...), the shares that may not add up past 1, a partition with
//! no ejection and a strategy's fallbacks within a fan-out's calls. The raw reader and the
//! checked typed values apply the same rules, so the first one broken is named alike.

use super::values::{ServiceParams, SwarmParams};

/// The cross-parameter rules that single values cannot check: the first one broken, by the
/// name of its later parameter.
/// The ordering rules between two parameters, `(later, earlier)`: `later` may not be less than
/// `earlier`. [`broken_rule`] names `later`; a driver that knows which of the two the user typed
/// can blame that one instead (see `crate::cli`).
pub const ORDER_RULES: &[(&str, &str)] = &[
    ("E03_FREEZE_END_S", "E03_FREEZE_START_S"),
    ("E03_RECOVERY_END_S", "E03_FREEZE_END_S"),
    ("E03_THINK_MAX_MS", "E03_THINK_MIN_MS"),
    ("E03_DEADLINE_MS", "E03_ATTEMPT_TIMEOUT_MS"),
    ("E03_QUEUE_INTERVAL_MS", "E03_QUEUE_TARGET_MS"),
];

pub(super) fn broken_rule(service: &ServiceParams, swarm: &SwarmParams) -> Option<&'static str> {
    if service.freeze_end_s < service.freeze_start_s {
        Some("E03_FREEZE_END_S")
    } else if service.recovery_end_s < service.freeze_end_s {
        Some("E03_RECOVERY_END_S")
    } else if service.fail_rate + service.slow_rate > 1.0 {
        Some("E03_SLOW_RATE")
    } else if service.fail_rate + service.slow_rate + service.lost_rate > 1.0 {
        Some("E03_LOST_RATE")
    } else if swarm.think_max_ms < swarm.think_min_ms {
        Some("E03_THINK_MAX_MS")
    } else if swarm.deadline_ms < swarm.attempt_timeout_ms {
        Some("E03_DEADLINE_MS")
    } else if service.queue_interval_ms < service.queue_target_ms {
        Some("E03_QUEUE_INTERVAL_MS")
    } else if swarm.workload == "fan_out" && swarm.clients as u64 * swarm.fanout as u64 > 100_000 {
        Some("E03_FANOUT")
    } else if swarm.fanout_quorum > swarm.fanout {
        Some("E03_FANOUT_QUORUM")
    } else {
        None
    }
}

impl SwarmParams {
    /// A partition (`E03_BALANCER=partition`) with health checks or outlier detection: refused,
    /// as none of its replicas stands in for another.
    pub(super) fn partition_ejects(&self) -> bool {
        self.balancer == "partition" && (self.outlier_5xx > 0 || self.health_interval_ms > 0)
    }

    /// The most fallbacks a strategy may have ([`Strategy::fallbacks`](e03_model::strategy::Strategy::fallbacks)): a fan-out's calls,
    /// none with another workload.
    pub(super) fn most_fallbacks(&self) -> u32 {
        if self.workload == "fan_out" {
            self.fanout
        } else {
            0
        }
    }
}
