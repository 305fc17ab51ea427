//! A fault proxy in front of one layer of a chain (`[[chain.variant.proxy]]` in a scenario
//! file, [docs/chains.md]): the HTTP fault proxy's own decisions ([`crate::fault_proxy`]) on
//! the calls that layer receives. Live, `lab run` starts a `lab proxy --http` in front of that
//! layer's process and its caller calls the proxy; the simulator asks the same
//! [`crate::fault_proxy::FaultProxy`] at each call's arrival, with the request a caller sends
//! ([`call_request_headers`]). What a decision does to the call is the same in both drivers:
//! [`ProxyOutcome`]. The proxy itself, as a variant holds it, is [`crate::chain::ChainProxy`].
//!
//! [docs/chains.md]: ../../docs/chains.md

use crate::chain::{DEADLINE_HEADER, REQUEST_HEADER};
use crate::fault_proxy::{Act, Decision};
use crate::identity_headers::HEADER_OP;

/// The method of every call down a chain.
pub const CALL_METHOD: &str = "GET";
/// The path of every call down a chain.
pub const CALL_PATH: &str = "/work";

/// The headers a proxy sees on a call to `layer` for top request `req`: the top caller's
/// operation header ([`HEADER_OP`]) on a call to layer 1, the top request's number
/// ([`REQUEST_HEADER`]) below, and the deadline header when deadlines travel. A rule's
/// `operation_key` names one of them (`x-e03-op` before the first hop,
/// `header:x-e03-request` below it).
pub fn call_request_headers(
    layer: u32,
    req: u64,
    deadline_ms: Option<u64>,
) -> Vec<(&'static str, String)> {
    let name = if layer == 1 {
        HEADER_OP
    } else {
        REQUEST_HEADER
    };
    let mut headers = vec![(name, req.to_string())];
    if let Some(ms) = deadline_ms {
        headers.push((DEADLINE_HEADER, ms.to_string()));
    }
    headers
}

/// What a proxy's decision does to one call, after [`Decision::wait`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyOutcome {
    /// The layer receives the call; `lose_answer`: its answer never reaches the caller (the
    /// connection is reset once it came).
    Forward { lose_answer: bool },
    /// The caller receives this status; the layer never sees the call.
    Answer(u16),
    /// The caller's connection is reset; the layer never sees the call.
    Reset,
    /// Nothing comes back: the caller waits until its own timeout.
    Hang,
}

impl ProxyOutcome {
    /// The outcome of `decision`. A chain's proxy applies the HTTP fault phases only, so a
    /// forward's body pacing and a degraded phase's factor do not arise.
    pub fn of(decision: &Decision) -> ProxyOutcome {
        match decision.act {
            Act::Forward { lose_answer, .. } => ProxyOutcome::Forward { lose_answer },
            Act::Answer { status, .. } => ProxyOutcome::Answer(status),
            Act::Reset => ProxyOutcome::Reset,
            Act::Hang => ProxyOutcome::Hang,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_to_the_first_hop_carries_the_operation_header_and_below_the_request_number() {
        assert_eq!(call_request_headers(1, 7, None), [("x-e03-op", "7".into())]);
        assert_eq!(
            call_request_headers(3, 7, Some(250)),
            [
                ("x-e03-request", "7".to_string()),
                ("x-e03-deadline-ms", "250".to_string())
            ]
        );
    }
}
