//! Issue 27's figures of a run with a fault on the wire: attempts that timed out only because
//! of the network, and operations whose work the dependency did twice.
//!
//! - An attempt **timed out because of the network** when its client gave up on it (a read
//!   timeout) after the dependency had already handed its answer to the connection: the work
//!   fitted in the timeout, the wire did not. Read from both logs (or the model): the server's
//!   answer instant against the client's timeout instant, on the run's one clock.
//! - An operation's work is **done twice** (or more) when the dependency committed the work of
//!   more than one of its attempts ([`e03_model::cause::Cause::committed`]): a retry was sent
//!   because the first answer had not arrived yet, and both were worked on.
//!
//! [`WireTally`] is switched on only for a timeline with a wire phase, so other runs pay
//! nothing for it.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use e03_model::cause::Cause;

/// The figures of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct WireFigures {
    /// Attempts that timed out after the dependency had answered them.
    pub network_timeouts: u64,
    /// Operations whose work the dependency committed more than once.
    pub done_twice: u64,
    /// Work the dependency committed beyond the first of each operation.
    pub extra_work: u64,
    /// Connections the callers opened to the proxy in front (the proxy's log, or the model).
    #[serde(default)]
    pub connections: u64,
    /// Of those, the ones the proxy reset (`reset_peer`).
    #[serde(default)]
    pub connections_reset: u64,
}

/// An attempt's identity: (client, operation, attempt).
type Ident = (u32, u32, u32);

/// Collects the facts; see the module docs.
#[derive(Debug, Default)]
pub struct WireTally {
    /// Identity of each request by its service sequence number (live) or request id (simulated).
    idents: HashMap<u64, Ident>,
    /// When the dependency answered each attempt whose work it committed, µs.
    answered: HashMap<Ident, u64>,
    /// Attempts that timed out at their client, with the instant, µs.
    timeouts: Vec<(Ident, u64)>,
    /// Committed work per operation.
    work: HashMap<(u32, u32), u32>,
    connections: u64,
    connections_reset: u64,
}

impl WireTally {
    /// Request `req` is attempt `attempt` of operation `op` of `client`, and reached the
    /// dependency.
    pub fn arrived(&mut self, req: u64, client: u32, op: u32, attempt: u32) {
        self.idents.insert(req, (client, op, attempt));
    }

    /// The dependency handed its answer to `req` to the connection at `t_us`, for `cause`.
    pub fn answered(&mut self, req: u64, t_us: u64, cause: Cause) {
        if !cause.committed() {
            return;
        }
        if let Some(&id) = self.idents.get(&req) {
            self.answered.insert(id, t_us);
            *self.work.entry((id.0, id.1)).or_default() += 1;
        }
    }

    /// The client gave up on attempt `attempt` of (client, op) at `t_us` (a read timeout).
    pub fn timed_out(&mut self, client: u32, op: u32, attempt: u32, t_us: u64) {
        self.timeouts.push(((client, op, attempt), t_us));
    }

    /// A caller opened a connection to the proxy in front.
    pub fn connection_opened(&mut self) {
        self.connections += 1;
    }

    /// The proxy reset a connection.
    pub fn connection_reset(&mut self) {
        self.connections_reset += 1;
    }

    /// One record of the run's proxy log: accepted connections and resets are counted.
    pub fn proxy_record(&mut self, r: &e03_model::wire::ProxyRecord) {
        use e03_model::wire::ProxyRecord;
        match r {
            ProxyRecord::Accepted { .. } => self.connection_opened(),
            ProxyRecord::Connection { end, .. } if end == "reset" => self.connection_reset(),
            _ => {}
        }
    }

    /// The simulator's form of [`Self::timed_out`]: request `req` (known by
    /// [`Self::arrived`]) timed out; one that never arrived had no answer to wait for.
    pub fn timed_out_req(&mut self, req: u64, t_us: u64) {
        if let Some(&(c, o, a)) = self.idents.get(&req) {
            self.timed_out(c, o, a, t_us);
        }
    }

    pub fn finish(self) -> WireFigures {
        let network_timeouts = self
            .timeouts
            .iter()
            .filter(|(id, t)| self.answered.get(id).is_some_and(|a| a <= t))
            .count() as u64;
        WireFigures {
            network_timeouts,
            done_twice: self.work.values().filter(|&&n| n > 1).count() as u64,
            extra_work: self
                .work
                .values()
                .map(|&n| u64::from(n.saturating_sub(1)))
                .sum(),
            connections: self.connections,
            connections_reset: self.connections_reset,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeout_after_the_answer_left_is_the_network_s_and_two_commits_are_work_done_twice() {
        let mut w = WireTally::default();
        // Op (0, 1): attempt 1 answered at 200 ms, timed out at 250 ms (the wire held the
        // answer); attempt 2 answered and received.
        w.arrived(10, 0, 1, 1);
        w.arrived(11, 0, 1, 2);
        w.answered(10, 200_000, Cause::Ok);
        w.timed_out(0, 1, 1, 250_000);
        w.answered(11, 300_000, Cause::Slow);
        // Op (1, 1): attempt 1 timed out before the dependency answered (its own slowness).
        w.arrived(12, 1, 1, 1);
        w.timed_out(1, 1, 1, 250_000);
        w.answered(12, 260_000, Cause::Ok);
        // Op (2, 1): refused at once, no work; then answered.
        w.arrived(13, 2, 1, 1);
        w.answered(13, 1_000, Cause::Full);
        w.arrived(14, 2, 1, 2);
        w.answered(14, 50_000, Cause::Ok);
        // A timeout of an attempt that never arrived.
        w.timed_out(3, 1, 1, 250_000);
        assert_eq!(
            w.finish(),
            WireFigures {
                network_timeouts: 1,
                done_twice: 1,
                extra_work: 1,
                connections: 0,
                connections_reset: 0,
            }
        );
    }
}
