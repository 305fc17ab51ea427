//! The engine's wire connection model: how the timeline's wire phases (issue 27) act on each
//! client's connection to the proxy in front: the draws of a connection's toxicity, its opening,
//! its resets and closes, a `limit_data` link's bytes, and how long a latency, a bandwidth or a
//! slicer holds what passes. These are the engine's own methods, in a file of their own: they
//! read and change the run's state (the clients' connections, the event queue, the observer)
//! and end the attempts a reset ends, as the engine's loop does.
//!
//! # The wire
//!
//! Every wire fault of a timeline (issue 27) is modelled:
//! - a `refused` phase;
//! - Toxiproxy's `timeout` toxic, at any toxicity (drawn once per connection and phase, as
//!   `reset_peer` below): on the connections it applies to nothing passes that way until the
//!   phase ends (timeout 0, a blackhole), or until the proxy closes the connection `timeout`
//!   after the toxic applied to it, as `reset_peer` times its reset; the attempt then in
//!   flight ends as `reset_before_answer` (its client's error for a connection closed before
//!   the answer), and the close is not counted as a reset. A client whose attempt timed out
//!   closes that connection (an HTTP/1.1 client cannot reuse it) and opens a new one, which
//!   draws again;
//! - a `latency`, `bandwidth` or `slicer` toxic on the answers (downstream, Toxiproxy's
//!   default), at any toxicity: each answer that leaves the dependency during the phase reaches
//!   its client as late as the core's [`Link::pass`] (the live proxy's rule) writes its last
//!   byte, the answer passed as one chunk of [`ANSWER_BYTES`]: latency +/- jitter, the bytes at
//!   the bandwidth's rate, or the slicer's pieces `delay` apart; on the connections the
//!   toxicity draws ([`Link::of_one`]: one draw per client and phase, as a client keeps its
//!   connection);
//! - a `latency`, `bandwidth` or `slicer` toxic on the requests (upstream): each request sent
//!   during the phase reaches the dependency as late as [`Link::pass`] writes its last byte
//!   (an `Arrive` event), the request passed as one chunk of [`REQUEST_BYTES`], on the same
//!   draws; its attempt's timeout still runs from its sending;
//! - `reset_peer`, either stream, at any toxicity: each connection open when the phase starts,
//!   and each opened during it, is reset with probability `toxicity` ([`Link::of_one`], one
//!   draw per connection and phase). At once (timeout 0): an attempt on a connection reset at
//!   the phase's start ends as `reset_before_answer` then (its request had arrived, its answer
//!   is lost); one that opens a connection the draw resets ends so at once and never arrives.
//!   With a timeout, the reset comes that long after the toxic applied (the phase's start, or
//!   the connection's opening), as the live proxy times it from the link's draw: the attempt
//!   then in flight on the connection ends as `reset_before_answer`, a reusing client's idle
//!   connection is gone, a connection its client already closed is not reset, and a reset due
//!   after the phase's end does not come. A client that reuses its connection
//!   ([`Connections::Reuse`]) opens a new one only after a reset; one that does not opens one
//!   per attempt.
//! - `limit_data`, either stream, at any toxicity: each connection the toxicity draws (one
//!   draw per connection and phase) passes at most `bytes` that way from the phase's start or
//!   its opening, each answer one chunk of [`ANSWER_BYTES`], each request one of
//!   [`REQUEST_BYTES`]; then the proxy closes it. An answer cut in its head ends as
//!   `reset_before_answer`, one cut in its body as `reset_mid_body`; an answer that ends
//!   exactly at the limit is whole. A request cut never arrives, and its attempt ends as
//!   `reset_before_answer` at once; one that ends exactly at the limit arrives and is worked
//!   on, and its attempt ends so at once too (the close reaches the client before any answer).
//!   A reusing client opens a new connection after the close;
//! - `slow_close`, as nothing: an HTTP client reads its answer by its length, so a close held
//!   back changes no attempt (live, 500 ms on every connection left p95 at 48 ms for clients
//!   that keep their connection and 49 ms for clients that open one per attempt, docs/wire.md).

use e03_model::attempt::Broken;
use e03_model::rng::{mix64, stream, LabRng, Stream};
use e03_model::strategy::Connections;
use e03_model::timeline::WireFault;
use e03_model::wire::{
    applies, Direction, Ending, Link, Pass, ToxicKind, ANSWER_BYTES, ANSWER_HEAD_BYTES,
    REQUEST_BYTES,
};
use e03_model::AttemptResult;

use super::{Conn, Engine, Observer};
use crate::queue::{Event, Nanos};
use crate::service::{dur, nanos};

impl<O: Observer> Engine<'_, O> {
    /// Whether the toxic of wire phase `i`, at `toxicity`, applies to connection `n` of client
    /// `c` (one draw per connection and phase, the core's [`applies`], as [`Link::of_one`]
    /// draws it).
    fn reset_draw(&self, c: u32, n: u32, i: usize, toxicity: f64) -> bool {
        applies(toxicity, &mut self.conn_draw(c, n, i))
    }

    /// Whether the toxic of wire phase `i` applies to client `c`'s current connection.
    pub(super) fn conn_hit(&self, c: u32, i: usize) -> bool {
        let WireFault::Toxic { toxicity, .. } = self.timeline.wire[i].fault else {
            return false;
        };
        self.reset_draw(c, self.clients[c as usize].conn.n, i, toxicity)
    }

    /// The draws of connection `n` of client `c` in wire phase `i`.
    fn conn_draw(&self, c: u32, n: u32, i: usize) -> LabRng {
        let key = ((i as u64 + 1) << 32) | u64::from(n);
        stream(self.seed ^ mix64(key), Stream::Wire, c)
    }

    /// An answer to client `c` at `t` through a `limit_data` phase on the answers (the module
    /// doc, "The wire"): an answer cut in its head leaves the client with no answer, one cut in
    /// its body with a broken body ([`ANSWER_HEAD_BYTES`]).
    pub(super) fn limit_data(&mut self, t: Nanos, c: u32, result: AttemptResult) -> AttemptResult {
        match self.limit_pass(t, c, Direction::Downstream, ANSWER_BYTES) {
            Some((kept, _)) if kept < ANSWER_HEAD_BYTES => {
                AttemptResult::ConnectionError(Broken::ResetBeforeAnswer)
            }
            Some((kept, _)) if kept < ANSWER_BYTES => {
                AttemptResult::ConnectionError(Broken::ResetMidBody)
            }
            _ => result,
        }
    }

    /// `bytes` leaving for (`Downstream`) or from (`Upstream`) client `c` at `t` through a
    /// `limit_data` phase on that direction, if one applies to its connection: the bytes that
    /// pass, and whether the proxy then closed the connection. The connection's link (drawn
    /// once per connection and phase) passes at most its bytes left; the limit reached, the
    /// connection is closed (not a reset), and a reusing client opens a new one for its next
    /// attempt.
    pub(super) fn limit_pass(
        &mut self,
        t: Nanos,
        c: u32,
        direction: Direction,
        bytes: usize,
    ) -> Option<(usize, bool)> {
        let (i, w) = self.timeline.wire_phase_at(dur(t))?;
        let WireFault::Toxic {
            toxic: toxic @ ToxicKind::LimitData { .. },
            stream,
            toxicity,
        } = w.fault
        else {
            return None;
        };
        if stream != direction {
            return None;
        }
        let n = self.clients[c as usize].conn.n;
        let mut link = match self.clients[c as usize].limit.take() {
            Some((j, m, link)) if (j, m) == (i, n) => link,
            _ => Link::of_one(toxic, toxicity, &mut self.conn_draw(c, n, i)),
        };
        let pass = link.pass(bytes, &mut self.wire_rng);
        let client = &mut self.clients[c as usize];
        client.limit = Some((i, n, link));
        let Pass::Forward {
            pieces, then_close, ..
        } = pass
        else {
            return None;
        };
        if then_close {
            client.conn.open = false;
        }
        Some((pieces.iter().map(|p| p.1).sum(), then_close))
    }

    /// The connection client `c` sends its attempt on at `t`: its open one (a reusing client;
    /// one a reset phase's start reset while idle is gone), else a new one. True when the proxy
    /// resets that new connection at once (the module doc, "The wire").
    pub(super) fn connect(&mut self, t: Nanos, c: u32) -> bool {
        let phase = self
            .timeline
            .wire_phase_at(dur(t))
            .and_then(|(i, w)| w.fault.ends_connections().map(|(p, d, _)| (i, p, nanos(d))));
        let reuse = self.strategy.connections == Connections::Reuse;
        let conn = self.clients[c as usize].conn;
        if reuse && conn.open {
            let Some((i, p, d)) = phase.filter(|(i, ..)| conn.drawn != Some(*i)) else {
                return false;
            };
            self.clients[c as usize].conn.drawn = Some(i);
            if !self.reset_draw(c, conn.n, i, p) {
                return false;
            }
            // Drawn at the phase's start, while idle: reset then plus the delay.
            let at = nanos(self.timeline.wire[i].start) + d;
            if at > t {
                self.queue.push(at, Event::ConnReset(c, conn.n, i as u32));
                return false;
            }
            // Already ended: a new connection is needed.
            if self.resets(i) {
                self.observer.connection_reset(t, c);
            }
        }
        let n = conn.n + 1;
        self.observer.connection_opened(t, c);
        let drawn = phase.filter(|&(i, p, _)| self.reset_draw(c, n, i, p));
        let reset = match drawn {
            Some((_, _, 0)) => {
                self.observer.connection_reset(t, c);
                true
            }
            Some((i, _, d)) => {
                self.queue.push(t + d, Event::ConnReset(c, n, i as u32));
                false
            }
            None => false,
        };
        self.clients[c as usize].conn = Conn {
            open: reuse && !reset,
            n,
            drawn: phase.map(|(i, ..)| i),
        };
        reset
    }

    /// Connection `n` of client `c` reaches the end of wire phase `i`'s `reset_peer` delay: if
    /// the phase still runs and the connection is still open (a reusing client's, or the one
    /// of an attempt in flight), the proxy resets it, and the attempt in flight on it ends so.
    pub(super) fn conn_reset(&mut self, t: Nanos, c: u32, n: u32, i: usize) {
        if self.timeline.wire_phase_at(dur(t)).map(|(j, _)| j) != Some(i) {
            return; // the toxic was removed first
        }
        let reuse = self.strategy.connections == Connections::Reuse;
        let client = &self.clients[c as usize];
        if client.conn.n != n || (reuse && !client.conn.open) {
            return;
        }
        let in_flight = client.req();
        if !reuse && in_flight.is_none() {
            return; // closed by its client after the answer
        }
        self.clients[c as usize].conn.open = false;
        if self.resets(i) {
            self.observer.connection_reset(t, c);
        }
        // Reset or closed before its answer: the client's error is the same.
        if let Some(req) = in_flight {
            let reset = AttemptResult::ConnectionError(Broken::ResetBeforeAnswer);
            self.attempt_ends(t, req, reset);
        }
    }

    /// Whether wire phase `i` ends connections with a reset (`reset_peer`), not a close.
    fn resets(&self, i: usize) -> bool {
        self.timeline.wire[i]
            .fault
            .ends_connections()
            .is_some_and(|r| r.2 == Ending::Reset)
    }

    /// Wire phase `i` (a `reset_peer`) begins: the connection of every attempt in flight draws
    /// it, and the attempt of each one reset ends so (its answer, if the dependency sends one,
    /// finds nobody waiting), at once or after the toxic's delay ([`Self::conn_reset`]). Idle
    /// connections draw when next used ([`Self::connect`]).
    pub(super) fn reset_open_connections(&mut self, t: Nanos, i: usize) {
        let Some((p, d, _)) = self.timeline.wire[i].fault.ends_connections() else {
            return;
        };
        let d = nanos(d);
        for c in 0..self.clients.len() as u32 {
            let client = &self.clients[c as usize];
            let (Some(req), n) = (client.req(), client.conn.n) else {
                continue;
            };
            if client.conn.drawn == Some(i) {
                continue;
            }
            self.clients[c as usize].conn.drawn = Some(i);
            if !self.reset_draw(c, n, i, p) {
                continue;
            }
            if d > 0 {
                self.queue.push(t + d, Event::ConnReset(c, n, i as u32));
                continue;
            }
            self.clients[c as usize].conn.open = false;
            self.observer.connection_reset(t, c);
            let reset = AttemptResult::ConnectionError(Broken::ResetBeforeAnswer);
            self.attempt_ends(t, req, reset);
        }
    }

    /// How long a toxic on the wire holds what leaves for (`Downstream`, an answer) or from
    /// (`Upstream`, a request) client `c` at `t` (the module doc, "The wire"); `None` outside
    /// such a phase.
    pub(super) fn wire_delay(&mut self, t: Nanos, c: u32, direction: Direction) -> Option<Nanos> {
        let (i, w) = self.timeline.wire_phase_at(dur(t))?;
        if w.fault.delays() != Some(direction) {
            return None;
        }
        let WireFault::Toxic {
            toxic, toxicity, ..
        } = w.fault
        else {
            return None;
        };
        // The client's connection in this phase: one toxicity draw per client and phase.
        let mut draw = stream(self.seed ^ mix64(i as u64 + 1), Stream::Wire, c);
        let mut link = Link::of_one(toxic, toxicity, &mut draw);
        // An answer is one chunk of ANSWER_BYTES, a request one of REQUEST_BYTES.
        let bytes = match direction {
            Direction::Downstream => ANSWER_BYTES,
            Direction::Upstream => REQUEST_BYTES,
        };
        link.pass(bytes, &mut self.wire_rng).delay().map(nanos)
    }
}
