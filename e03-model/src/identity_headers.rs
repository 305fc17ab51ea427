//! The request headers that carry a swarm attempt's identity to the dependency (re-exported by
//! [`crate::events`]); a leaf of the model layer, so the HTTP faults ([`crate::http_fault`]) can
//! tell operations apart without the event schema.

pub const HEADER_CLIENT: &str = "x-e03-client";
pub const HEADER_OP: &str = "x-e03-op";
pub const HEADER_ATTEMPT: &str = "x-e03-attempt";
