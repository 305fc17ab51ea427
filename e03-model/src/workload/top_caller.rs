//! The chain's top caller as a workload: layer 0 of a chain, one session whose operations are
//! the top requests, one after the other, driven like any other workload.

use std::time::Duration;

use crate::chain::ChainVariant;
use crate::policy::Policies;
use crate::session::{ClientSession, SessionConfig, Starts};

use super::clients::Clients;

/// The session of a chain's top caller (`variant`'s layer 0): the top's limits, `requests`
/// operations one after the other from time zero, each starting when the one before ended (no
/// think time).
pub fn top_session(variant: &ChainVariant, requests: u32) -> SessionConfig {
    SessionConfig {
        limits: variant.top.limits(),
        duration: Duration::MAX,
        think: (Duration::ZERO, Duration::ZERO),
        starts: Starts::AtZero,
        max_ops: Some(requests),
        best_effort_ppm: 0,
    }
}

/// A chain's top caller as one of these workloads: client 0 with the top's policy
/// ([`crate::chain::HopSpec::strategy`], [`top_session`]), its operation `o` top request `o`,
/// and the policy instance it retries under (no budget: the top's strategy is A or B). Its
/// decisions are [`crate::chain::HopCall`]'s (the same operation, strategy and limits). Its
/// attempts carry the deadline header (their timeout) exactly when deadlines travel, as a hop's
/// do: the driver adds it.
pub fn top_caller(variant: &ChainVariant, requests: u32, seed: u64) -> (Clients, Policies) {
    let strategy = variant.top.strategy();
    let session = ClientSession::new(seed, 0, top_session(variant, requests));
    (
        Clients::of([session], &strategy),
        Policies::fleet(&strategy, seed),
    )
}
