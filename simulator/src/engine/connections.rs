//! The engine's side of the wire connection model: the model's
//! [`WireConnections`](e03_model::wire_connections::WireConnections) decides what a timeline's
//! wire phases do to each client's connection; these methods carry its decisions out on the
//! run: they schedule the resets it announces, tell the observer of connections opened and
//! reset, and end the attempts a reset ends, as the engine's loop does.

use e03_model::attempt::Broken;
use e03_model::wire::Direction;
use e03_model::wire_connections::PhaseStart;
use e03_model::AttemptResult;

use super::{Engine, Observer};
use crate::queue::{Event, Nanos};
use crate::service::{dur, nanos};

impl<O: Observer> Engine<'_, O> {
    /// Whether the toxic of wire phase `i` applies to client `c`'s current connection.
    pub(super) fn conn_hit(&self, c: u32, i: usize) -> bool {
        self.wire.hit(&self.timeline, c, i)
    }

    /// An answer to client `c` at `t` through a `limit_data` phase on the answers, if one
    /// applies: what its client gets.
    pub(super) fn limit_data(&mut self, t: Nanos, c: u32, result: AttemptResult) -> AttemptResult {
        self.wire.limit_answer(&self.timeline, dur(t), c, result)
    }

    /// `bytes` leaving for or from client `c` at `t` through a `limit_data` phase on that
    /// direction, if one applies to its connection: the bytes that pass, and whether the proxy
    /// then closed the connection.
    pub(super) fn limit_pass(
        &mut self,
        t: Nanos,
        c: u32,
        direction: Direction,
        bytes: usize,
    ) -> Option<(usize, bool)> {
        self.wire
            .limit_pass(&self.timeline, dur(t), c, direction, bytes)
    }

    /// The connection client `c` sends its attempt on at `t`. True when the proxy resets that
    /// new connection at once.
    pub(super) fn connect(&mut self, t: Nanos, c: u32) -> bool {
        let done = self.wire.connect(&self.timeline, dur(t), c);
        if done.idle_reset {
            self.observer.connection_reset(t, c);
        }
        if done.opened {
            self.observer.connection_opened(t, c);
        }
        if done.reset_now {
            self.observer.connection_reset(t, c);
        }
        if let Some((at, n, i)) = done.reset_at {
            self.queue.push(nanos(at), Event::ConnReset(c, n, i as u32));
        }
        done.reset_now
    }

    /// Connection `n` of client `c` reaches the end of wire phase `i`'s delay: if the model
    /// says the proxy ends it, the attempt in flight on it ends so.
    pub(super) fn conn_reset(&mut self, t: Nanos, c: u32, n: u32, i: usize) {
        let in_flight = self.clients[c as usize].req();
        let ended = self
            .wire
            .reset_due(&self.timeline, dur(t), (c, n, i), in_flight.is_some());
        let Some(counted) = ended else {
            return;
        };
        if counted {
            self.observer.connection_reset(t, c);
        }
        // Reset or closed before its answer: the client's error is the same.
        if let Some(req) = in_flight {
            let reset = AttemptResult::ConnectionError(Broken::ResetBeforeAnswer);
            self.attempt_ends(t, req, reset);
        }
    }

    /// Wire phase `i` begins: the connection of every attempt in flight draws it, and the
    /// attempt of each one reset ends so (its answer, if the dependency sends one, finds nobody
    /// waiting), at once or after the toxic's delay ([`Self::conn_reset`]).
    pub(super) fn reset_open_connections(&mut self, t: Nanos, i: usize) {
        for c in 0..self.clients.len() as u32 {
            let Some(req) = self.clients[c as usize].req() else {
                continue;
            };
            match self.wire.phase_started(&self.timeline, dur(t), i, c) {
                PhaseStart::Spared => {}
                PhaseStart::ResetAt(at, n) => {
                    self.queue.push(nanos(at), Event::ConnReset(c, n, i as u32));
                }
                PhaseStart::ResetNow => {
                    self.observer.connection_reset(t, c);
                    let reset = AttemptResult::ConnectionError(Broken::ResetBeforeAnswer);
                    self.attempt_ends(t, req, reset);
                }
            }
        }
    }

    /// How long a toxic on the wire holds what leaves for (`Downstream`) or from (`Upstream`)
    /// client `c` at `t`; `None` outside such a phase.
    pub(super) fn wire_delay(&mut self, t: Nanos, c: u32, direction: Direction) -> Option<Nanos> {
        self.wire
            .delay(&self.timeline, dur(t), c, direction)
            .map(nanos)
    }
}
