//! The clients' connections to the proxy in front of the dependency, as a timeline's wire
//! phases (issue 27) act on them: the draws of a connection's toxicity, its opening, its resets
//! and closes, a `limit_data` link's bytes, and how long a latency, a bandwidth or a slicer
//! holds what passes. A state machine of the model: every method takes `now` and returns a
//! decision ([`Connect`], [`PhaseStart`], a delay, the bytes that pass); the simulator's engine
//! (`simulator/src/engine/connections.rs`) schedules the resets it announces, tells its observer
//! and ends the attempts they end. What each fault does to one connection is the toxic's rule
//! ([`ToxicKind::ends_connection`], [`ToxicKind::holds`], [`ToxicKind::delays`]), which the live
//! proxy's links read too; live, the connections are real ones.
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

use std::time::Duration;

use crate::attempt::Broken;
use crate::rng::{mix64, stream, LabRng, Stream};
use crate::strategy::Connections;
use crate::timeline::{Timeline, WireFault};
use crate::wire::{
    applies, Direction, Ending, Link, Pass, ToxicKind, ANSWER_BYTES, ANSWER_HEAD_BYTES,
    REQUEST_BYTES,
};
use crate::AttemptResult;

/// A client's connection, as the proxy in front sees it.
#[derive(Debug, Default, Clone, Copy)]
struct Conn {
    /// A reusing client's connection is open (kept between attempts).
    open: bool,
    /// Connections the client opened so far: the current one's number, for its draws.
    n: u32,
    /// The wire phase whose `reset_peer` toxicity the current connection has drawn.
    drawn: Option<usize>,
}

/// A client's connection and, in a `limit_data` phase, its link: the phase, the connection's
/// number and the bytes passed so far ([`Link::pass`]).
#[derive(Debug, Default)]
struct Client {
    conn: Conn,
    limit: Option<(usize, u32, Link)>,
}

/// Every client's connection in one run (the module doc).
#[derive(Debug)]
pub struct WireConnections {
    seed: u64,
    /// The clients keep their connection between attempts ([`Connections::Reuse`]).
    reuse: bool,
    /// Indexed by client number, grown as clients first connect.
    clients: Vec<Client>,
    /// The draws of what passes (a latency's jitter, a slicer's pieces).
    rng: LabRng,
}

/// What opening the connection for an attempt did ([`WireConnections::connect`]), in the order
/// the driver tells it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Connect {
    /// The client's idle connection was found reset by a `reset_peer` phase (a reset to count)
    /// before a new one opened.
    pub idle_reset: bool,
    /// A new connection was opened.
    pub opened: bool,
    /// The proxy resets the new connection at once: the attempt never arrives.
    pub reset_now: bool,
    /// A reset or close to come: at `.0`, connection `.1` reaches the end of wire phase `.2`'s
    /// delay; the driver then asks [`WireConnections::reset_due`].
    pub reset_at: Option<(Duration, u32, usize)>,
}

/// What a `reset_peer` (or closing `timeout`) phase's start does to a client's connection
/// with an attempt in flight ([`WireConnections::phase_started`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PhaseStart {
    /// Its draw spared it (or it drew this phase already, or the phase ends no connection).
    Spared,
    /// Reset at once: its attempt in flight ends as `reset_before_answer`.
    ResetNow,
    /// Connection `.1` is reset at `.0`: the driver then asks [`WireConnections::reset_due`].
    ResetAt(Duration, u32),
}

impl WireConnections {
    /// No connection yet; `strategy`'s clients keep theirs or open one per attempt.
    pub fn new(seed: u64, connections: Connections) -> Self {
        WireConnections {
            seed,
            reuse: connections == Connections::Reuse,
            clients: Vec::new(),
            rng: stream(seed, Stream::Wire, u32::MAX),
        }
    }

    fn client(&mut self, c: u32) -> &mut Client {
        if self.clients.len() <= c as usize {
            self.clients.resize_with(c as usize + 1, Client::default);
        }
        &mut self.clients[c as usize]
    }

    fn conn(&self, c: u32) -> Conn {
        self.clients
            .get(c as usize)
            .map_or_else(Conn::default, |k| k.conn)
    }

    /// Client `c` closed its connection (an HTTP/1.1 client cannot reuse a connection whose
    /// answer it gave up on or cancelled), or the proxy did (nothing listens): its next attempt
    /// opens a new one.
    pub fn close(&mut self, c: u32) {
        self.client(c).conn.open = false;
    }

    /// The draws of connection `n` of client `c` in wire phase `i`.
    fn conn_draw(&self, c: u32, n: u32, i: usize) -> LabRng {
        let key = ((i as u64 + 1) << 32) | u64::from(n);
        stream(self.seed ^ mix64(key), Stream::Wire, c)
    }

    /// Whether the toxic of wire phase `i`, at `toxicity`, applies to connection `n` of client
    /// `c` (one draw per connection and phase, [`applies`], as [`Link::of_one`] draws it).
    fn reset_draw(&self, c: u32, n: u32, i: usize, toxicity: f64) -> bool {
        applies(toxicity, &mut self.conn_draw(c, n, i))
    }

    /// Whether the toxic of wire phase `i` of `timeline` applies to client `c`'s current
    /// connection.
    pub fn hit(&self, timeline: &Timeline, c: u32, i: usize) -> bool {
        let WireFault::Toxic { toxicity, .. } = timeline.wire[i].fault else {
            return false;
        };
        self.reset_draw(c, self.conn(c).n, i, toxicity)
    }

    /// An answer to client `c` at `now` through a `limit_data` phase on the answers (the module
    /// doc, "The wire"): an answer cut in its head leaves the client with no answer, one cut in
    /// its body with a broken body ([`ANSWER_HEAD_BYTES`]).
    pub fn limit_answer(
        &mut self,
        timeline: &Timeline,
        now: Duration,
        c: u32,
        result: AttemptResult,
    ) -> AttemptResult {
        match self.limit_pass(timeline, now, c, Direction::Downstream, ANSWER_BYTES) {
            Some((kept, _)) if kept < ANSWER_HEAD_BYTES => {
                AttemptResult::ConnectionError(Broken::ResetBeforeAnswer)
            }
            Some((kept, _)) if kept < ANSWER_BYTES => {
                AttemptResult::ConnectionError(Broken::ResetMidBody)
            }
            _ => result,
        }
    }

    /// `bytes` leaving for (`Downstream`) or from (`Upstream`) client `c` at `now` through a
    /// `limit_data` phase on that direction, if one applies to its connection: the bytes that
    /// pass, and whether the proxy then closed the connection. The connection's link (drawn
    /// once per connection and phase) passes at most its bytes left; the limit reached, the
    /// connection is closed (not a reset), and a reusing client opens a new one for its next
    /// attempt.
    pub fn limit_pass(
        &mut self,
        timeline: &Timeline,
        now: Duration,
        c: u32,
        direction: Direction,
        bytes: usize,
    ) -> Option<(usize, bool)> {
        let (i, w) = timeline.wire_phase_at(now)?;
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
        let n = self.conn(c).n;
        let mut link = match self.client(c).limit.take() {
            Some((j, m, link)) if (j, m) == (i, n) => link,
            _ => Link::of_one(toxic, toxicity, &mut self.conn_draw(c, n, i)),
        };
        let pass = link.pass(bytes, &mut self.rng);
        let client = self.client(c);
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

    /// The connection client `c` sends its attempt on at `now`: its open one (a reusing
    /// client's; one a reset phase's start reset while idle is gone), else a new one (the
    /// module doc, "The wire").
    pub fn connect(&mut self, timeline: &Timeline, now: Duration, c: u32) -> Connect {
        let phase = timeline
            .wire_phase_at(now)
            .and_then(|(i, w)| w.fault.ends_connections().map(|(p, d, _)| (i, p, d)));
        let conn = self.conn(c);
        let mut out = Connect::default();
        if self.reuse && conn.open {
            let Some((i, p, d)) = phase.filter(|(i, ..)| conn.drawn != Some(*i)) else {
                return out;
            };
            self.client(c).conn.drawn = Some(i);
            if !self.reset_draw(c, conn.n, i, p) {
                return out;
            }
            // Drawn at the phase's start, while idle: reset then plus the delay.
            let at = timeline.wire[i].start + d;
            if at > now {
                out.reset_at = Some((at, conn.n, i));
                return out;
            }
            // Already ended: a new connection is needed.
            out.idle_reset = resets(timeline, i);
        }
        let n = conn.n + 1;
        out.opened = true;
        match phase.filter(|&(i, p, _)| self.reset_draw(c, n, i, p)) {
            Some((_, _, d)) if d.is_zero() => out.reset_now = true,
            Some((i, _, d)) => out.reset_at = Some((now + d, n, i)),
            None => {}
        }
        self.client(c).conn = Conn {
            open: self.reuse && !out.reset_now,
            n,
            drawn: phase.map(|(i, ..)| i),
        };
        out
    }

    /// Connection `n` of client `c` reaches the end of wire phase `i`'s delay at `now`, with
    /// an attempt in flight on it or not: if the phase still runs and the connection is still
    /// open (a reusing client's, or the one of an attempt in flight), the proxy ends it.
    /// `Some(counted)`: it ended (`counted`: as a reset, not a close), and the attempt in
    /// flight, if any, ends as `reset_before_answer`; `None`: nothing happens.
    pub fn reset_due(
        &mut self,
        timeline: &Timeline,
        now: Duration,
        (c, n, i): (u32, u32, usize),
        in_flight: bool,
    ) -> Option<bool> {
        if timeline.wire_phase_at(now).map(|(j, _)| j) != Some(i) {
            return None; // the toxic was removed first
        }
        let conn = self.conn(c);
        if conn.n != n || (self.reuse && !conn.open) {
            return None;
        }
        if !self.reuse && !in_flight {
            return None; // closed by its client after the answer
        }
        self.client(c).conn.open = false;
        Some(resets(timeline, i))
    }

    /// Wire phase `i` (one that ends connections) begins at `now`, and client `c` has an
    /// attempt in flight: its connection draws the phase, unless it did already. Idle
    /// connections draw when next used ([`Self::connect`]).
    pub fn phase_started(
        &mut self,
        timeline: &Timeline,
        now: Duration,
        i: usize,
        c: u32,
    ) -> PhaseStart {
        let Some((p, d, _)) = timeline.wire[i].fault.ends_connections() else {
            return PhaseStart::Spared;
        };
        let conn = self.conn(c);
        if conn.drawn == Some(i) {
            return PhaseStart::Spared;
        }
        self.client(c).conn.drawn = Some(i);
        if !self.reset_draw(c, conn.n, i, p) {
            return PhaseStart::Spared;
        }
        if !d.is_zero() {
            return PhaseStart::ResetAt(now + d, conn.n);
        }
        self.client(c).conn.open = false;
        PhaseStart::ResetNow
    }

    /// How long a toxic on the wire holds what leaves for (`Downstream`, an answer) or from
    /// (`Upstream`, a request) client `c` at `now` (the module doc, "The wire"); `None` outside
    /// such a phase.
    pub fn delay(
        &mut self,
        timeline: &Timeline,
        now: Duration,
        c: u32,
        direction: Direction,
    ) -> Option<Duration> {
        let (i, w) = timeline.wire_phase_at(now)?;
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
        link.pass(bytes, &mut self.rng).delay()
    }
}

/// Whether wire phase `i` ends connections with a reset (`reset_peer`), not a close.
fn resets(timeline: &Timeline, i: usize) -> bool {
    timeline.wire[i]
        .fault
        .ends_connections()
        .is_some_and(|r| r.2 == Ending::Reset)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::WireWindow;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    /// A `reset_peer` on every connection (toxicity 1) from 2 s to 5 s, after `timeout_ms`.
    fn resets_from_2s(timeout_ms: u64) -> Timeline {
        Timeline {
            wire: vec![WireWindow {
                start: ms(2000),
                end: ms(5000),
                fault: WireFault::Toxic {
                    toxic: ToxicKind::ResetPeer { timeout_ms },
                    stream: Direction::Downstream,
                    toxicity: 1.0,
                },
                latency: Duration::ZERO,
            }],
            ..Timeline::default()
        }
    }

    /// A reusing client's connection, opened before the phase and idle when it began, was
    /// reset 300 ms into it: its next attempt finds it gone (a reset to count), opens a new
    /// one, which the phase resets 300 ms later; then the connection is closed and nothing
    /// more happens to it.
    #[test]
    fn a_kept_connection_idle_through_a_reset_is_found_reset_and_replaced() {
        let t = resets_from_2s(300);
        let mut w = WireConnections::new(1, Connections::Reuse);
        let opened = Connect {
            opened: true,
            ..Connect::default()
        };
        assert_eq!(w.connect(&t, ms(1000), 0), opened);
        assert_eq!(w.connect(&t, ms(1500), 0), Connect::default()); // kept
        assert_eq!(
            w.connect(&t, ms(2500), 0),
            Connect {
                idle_reset: true,
                opened: true,
                reset_now: false,
                reset_at: Some((ms(2800), 2, 0)),
            }
        );
        assert_eq!(w.reset_due(&t, ms(2800), (0, 2, 0), true), Some(true));
        assert_eq!(w.reset_due(&t, ms(2800), (0, 2, 0), true), None);
    }

    /// Used before its reset comes, a kept connection stays; the reset is announced for the
    /// instant it comes (the phase's start plus the toxic's timeout).
    #[test]
    fn a_kept_connection_used_before_its_reset_carries_the_attempt() {
        let t = resets_from_2s(300);
        let mut w = WireConnections::new(1, Connections::Reuse);
        w.connect(&t, ms(1000), 0);
        let later = Connect {
            reset_at: Some((ms(2300), 1, 0)),
            ..Connect::default()
        };
        assert_eq!(w.connect(&t, ms(2100), 0), later);
        // Drawn once per connection and phase.
        assert_eq!(w.connect(&t, ms(2200), 0), Connect::default());
    }

    /// A client that opens a connection per attempt: reset at once by a `reset_peer` of 0;
    /// outside the phase, never. An attempt in flight when such a phase starts is reset then,
    /// once.
    #[test]
    fn a_new_connection_in_a_reset_at_once_phase_is_reset_at_once() {
        let t = resets_from_2s(0);
        let mut w = WireConnections::new(1, Connections::New);
        let now = Connect {
            opened: true,
            reset_now: true,
            ..Connect::default()
        };
        assert_eq!(w.connect(&t, ms(3000), 4), now);
        let fine = Connect {
            opened: true,
            ..Connect::default()
        };
        assert_eq!(w.connect(&t, ms(6000), 4), fine);
        let mut w = WireConnections::new(1, Connections::New);
        w.connect(&t, ms(1900), 2);
        assert_eq!(w.phase_started(&t, ms(2000), 0, 2), PhaseStart::ResetNow);
        assert_eq!(w.phase_started(&t, ms(2000), 0, 2), PhaseStart::Spared);
        let t = resets_from_2s(250);
        let mut w = WireConnections::new(1, Connections::New);
        w.connect(&t, ms(1900), 2);
        assert_eq!(
            w.phase_started(&t, ms(2000), 0, 2),
            PhaseStart::ResetAt(ms(2250), 1)
        );
    }
}
