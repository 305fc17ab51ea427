//! What each wire fault of a timeline does to the connections it applies to, as the engine's
//! loop and its connection model (`connections.rs`, "The wire") both read it: delay what passes
//! one way ([`delays`]: latency, bandwidth, slicer), let nothing pass ([`drops`]: Toxiproxy's
//! `timeout`), or end the connection after a delay ([`reset_toxicity`]: `reset_peer`, a
//! `timeout` with a timeout). Pure functions of the fault; they name nothing else of the crate
//! but the queue's time unit.

use e03_model::timeline::WireFault;
use e03_model::wire::{Direction, ToxicKind};

use crate::queue::Nanos;

/// The direction whose chunks `fault` only delays, if it is such a toxic (the connection model's
/// doc, "The wire"): latency, bandwidth and slicer, either way.
pub(super) fn delays(fault: &WireFault) -> Option<Direction> {
    match *fault {
        WireFault::Toxic {
            toxic:
                ToxicKind::Latency { .. } | ToxicKind::Bandwidth { .. } | ToxicKind::Slicer { .. },
            stream,
            ..
        } => Some(stream),
        _ => None,
    }
}

/// The toxicity of `fault` and its delay if it ends connections (the connection model's doc,
/// "The wire"): a connection it applies to ends `timeout` after the toxic applied (the phase's
/// start for a connection open then, its opening for one opened during the phase): `reset_peer`
/// resets it (at once with 0), a `timeout` toxic on every connection with a timeout closes it
/// (with 0 it is a blackhole that never closes, [`drops`]). The third value says whether it is a
/// reset.
pub(super) fn reset_toxicity(fault: &WireFault) -> Option<(f64, Nanos, bool)> {
    match *fault {
        WireFault::Toxic {
            toxic: ToxicKind::ResetPeer { timeout_ms },
            toxicity,
            ..
        } => Some((toxicity, timeout_ms * 1_000_000, true)),
        WireFault::Toxic {
            toxic: ToxicKind::Timeout { timeout_ms },
            toxicity,
            ..
        } if timeout_ms > 0 => Some((toxicity, timeout_ms * 1_000_000, false)),
        _ => None,
    }
}

/// The direction in which `fault` lets nothing pass on the connections it applies to, if it
/// is Toxiproxy's `timeout` toxic: a blackhole with timeout 0, or until the connection is
/// closed `timeout` after the toxic applied ([`reset_toxicity`]).
pub(super) fn drops(fault: &WireFault) -> Option<Direction> {
    match *fault {
        WireFault::Toxic {
            toxic: ToxicKind::Timeout { .. },
            stream,
            ..
        } => Some(stream),
        _ => None,
    }
}
