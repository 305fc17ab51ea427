//! The audit's log as the rows read it: requests by probe and instance, in arrival order, and
//! each run of the client.

use std::collections::BTreeMap;

use e03_model::audit::{Probe, ProbeKind, ProbeRequest};

/// What the log says about one run of the client on one probe instance.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Run {
    pub ended_us: u64,
    pub stopped_at_limit: bool,
}

/// The log, indexed for the rows.
pub(crate) struct Log<'a> {
    pub probes: Vec<Probe>,
    /// Requests by (probe, instance), in arrival order.
    pub requests: BTreeMap<(&'a str, u32), Vec<&'a ProbeRequest>>,
    pub runs: BTreeMap<(&'a str, u32), Run>,
}

impl<'a> Log<'a> {
    pub fn of(&self, probe: &str) -> Vec<(u32, &Vec<&'a ProbeRequest>)> {
        self.requests
            .iter()
            .filter(|((p, _), _)| *p == probe)
            .map(|((_, i), r)| (*i, r))
            .collect()
    }

    pub fn run(&self, probe: &str, instance: u32) -> Run {
        self.runs
            .iter()
            .find(|((p, i), _)| *p == probe && *i == instance)
            .map(|(_, r)| *r)
            .unwrap_or_default()
    }

    pub fn named(&self, kind: impl Fn(&ProbeKind) -> bool) -> Vec<&Probe> {
        self.probes.iter().filter(|p| kind(&p.kind)).collect()
    }
}

/// Seconds, two decimals.
pub(crate) fn s(us: u64) -> String {
    format!("{:.2} s", us as f64 / 1e6)
}

/// Whether a run of the client on `probe` was stopped at the probe's limit.
pub(crate) fn stopped(log: &Log, probe: &str) -> bool {
    log.runs
        .iter()
        .any(|((p, _), r)| *p == probe && r.stopped_at_limit)
}

/// Waits between the end of each attempt and the next one's arrival, µs.
pub(crate) fn waits(r: &[&ProbeRequest]) -> Vec<u64> {
    r.windows(2)
        .map(|w| w[1].arrived_us.saturating_sub(w[0].ended_us))
        .collect()
}
