//! The facts a run's figures are made of, and the accumulator's one door for them:
//! [`RunAccumulator::take`].
//!
//! Two sources tell facts. The log reader turns each record the service and the swarm wrote
//! into one ([`Fact::of`]); the simulator tells its engine's events as they happen
//! (`simulator/src/run.rs`). Where both know the same thing, they tell the same fact: an
//! operation ended, the breaker or the balancer changed, an open loop dropped an operation, a
//! fan-out request ended, the ledger committed a charge. The other facts differ because the
//! sources do:
//!
//! - a live attempt is known whole when its record is read (when it was due, when it left, how
//!   it ended), and the logs carry what the fidelity figures need (sequence numbers, identities,
//!   admission times): [`Fact::Arrival`], [`Fact::Response`], [`Fact::Attempt`];
//! - the simulator has no network and sees every instant: an attempt leaves
//!   ([`Fact::Sent`]) and reaches the dependency ([`Fact::Reached`]) at the same instant unless
//!   a toxic holds it, its end comes later ([`Fact::Ended`]), and the engine knows at once
//!   whether a client still waits for an answer ([`Fact::Served`]); live, that is matched at
//!   the end from the client log's timeouts.
//!
//! No source calls a tally directly: what each fact changes is decided here, once.

use e03_model::balancer::Change;
use e03_model::breaker::BreakerState;
use e03_model::events::{Arrival, Attempt, Cause, Event, Response};
use e03_model::wire::ProxyRecord;

use crate::metrics::RunAccumulator;
use crate::openloop::Served;
pub use crate::records::OperationEnd;
use crate::records::{AttemptLine, LineEnd};

/// One fact of a run, told by the log reader or by the simulator. Times are µs since the run's
/// time zero; `seq` is the request's number at the dependency.
#[derive(Debug, Clone, Copy)]
pub enum Fact<'a> {
    // What only the logs tell.
    /// A request reached the service (the server log's `arrival`).
    Arrival(&'a Arrival),
    /// The service answered a request (the server log's `response`).
    Response(&'a Response),
    /// An attempt, whole (the client log's `attempt`).
    Attempt(&'a Attempt),
    /// A connection's line of the proxy in front (its wire log): opened, reset.
    Proxy(&'a ProxyRecord),
    /// A request reached the service, counted for the load figures only: a server log read
    /// without its clients (`lab analyze --server-log`).
    Load { t_us: u64, attempt: Option<u32> },

    // What both sources tell alike.
    /// An operation ended.
    Operation(OperationEnd),
    /// The strategy's circuit breaker changed state.
    Breaker {
        t_us: u64,
        from: BreakerState,
        to: BreakerState,
    },
    /// A replica left or re-entered the balancer's rotation.
    Host {
        t_us: u64,
        replica: u32,
        change: Change,
    },
    /// Open loop: an operation that arrived at `intended_us` was dropped (the in-flight cap).
    Dropped { intended_us: u64 },
    /// A fan-out request ended; `success`: its quorum succeeded, `degraded`: with a fallback's
    /// answer.
    FanOut {
        start_us: u64,
        end_us: u64,
        success: bool,
        degraded: bool,
    },
    /// The ledger committed a charge for an operation.
    Charge {
        client: Option<u32>,
        op: Option<u32>,
    },

    // What only the simulator tells.
    /// Attempt `attempt` of operation `op` of `client` left as request `seq` (whether or not it
    /// reaches the dependency).
    Sent {
        t_us: u64,
        seq: u64,
        client: u32,
        op: u32,
        attempt: u32,
    },
    /// Request `seq` reached the dependency.
    Reached {
        t_us: u64,
        seq: u64,
        client: u32,
        op: u32,
        attempt: u32,
    },
    /// Request `seq`'s attempt ended as its client saw it.
    Ended { t_us: u64, seq: u64, end: LineEnd },
    /// The answer to request `seq` was lost after its work was committed.
    Lost { seq: u64 },
    /// A policy layer refused attempt `attempt` of operation `op` of `client` before it left.
    FailedFast {
        t_us: u64,
        client: u32,
        op: u32,
        attempt: u32,
    },
    /// The dependency answered request `seq`; `given_up`: its client no longer waited for it.
    Served {
        t_us: u64,
        seq: u64,
        status: u16,
        cause: Cause,
        cost: Option<u32>,
        /// A worker took it (it was admitted).
        worked: bool,
        given_up: bool,
    },
    /// A client opened a connection (a timeline with a wire phase).
    ConnectionOpened,
    /// The proxy reset a client's connection.
    ConnectionReset,
}

impl<'a> Fact<'a> {
    /// The fact a log record tells; `None` for records that are not facts of the figures: the
    /// run's start and end, a probe (its verdicts are in the `host` records) and a proxy's
    /// record (evidence beside its arrival and response, which are counted).
    pub fn of(event: &'a Event) -> Option<Self> {
        Some(match event {
            Event::Arrival(a) => Fact::Arrival(a),
            Event::Response(r) => Fact::Response(r),
            Event::Attempt(a) => Fact::Attempt(a),
            Event::Operation(o) => Fact::Operation(OperationEnd::of(o)),
            Event::Breaker(b) => Fact::Breaker {
                t_us: b.t_us,
                from: b.from,
                to: b.to,
            },
            Event::Host(h) => Fact::Host {
                t_us: h.t_us,
                replica: h.replica,
                change: h.change,
            },
            Event::Charge(c) => Fact::Charge {
                client: c.charge.client,
                op: c.charge.op,
            },
            Event::Dropped(d) => Fact::Dropped {
                intended_us: d.intended_us,
            },
            Event::FanOut(f) => Fact::FanOut {
                start_us: f.start_us,
                end_us: f.end_us,
                success: f.success(),
                degraded: f.degraded(),
            },
            Event::RunStart(_) | Event::RunEnd(_) | Event::Probe(_) | Event::Proxied(_) => {
                return None
            }
        })
    }
}

impl RunAccumulator {
    /// Takes one fact: the only way into the accumulator.
    pub fn take(&mut self, fact: Fact) {
        match fact {
            Fact::Arrival(a) => self.arrival_record(a),
            Fact::Response(r) => self.response_record(r),
            Fact::Attempt(a) => self.attempt_record(a),
            Fact::Proxy(r) => {
                if let Some(w) = self.wire_mut() {
                    w.proxy_record(r);
                }
            }
            Fact::Load { t_us, attempt } => self.arrival(t_us, attempt),
            Fact::Operation(o) => self.operation(o),
            Fact::Breaker { t_us, from, to } => self.breaker_change(t_us, from, to),
            Fact::Host {
                t_us,
                replica,
                change,
            } => self.host_change(t_us, replica, change),
            Fact::Dropped { intended_us } => self.dropped(intended_us),
            Fact::FanOut {
                start_us,
                end_us,
                success,
                degraded,
            } => self.fanout(start_us, end_us, success, degraded),
            Fact::Charge { client, op } => self.ledger_or_new().charge(client, op),
            Fact::Sent {
                t_us,
                seq,
                client,
                op,
                attempt,
            } => {
                // No network: due and sent are the same instant.
                self.attempt(attempt, t_us, t_us);
                self.attempt_sent(seq, client, op, attempt, t_us);
                if let Some(l) = self.ledger_mut() {
                    l.sent(Some(seq), client, op, attempt);
                }
            }
            Fact::Reached {
                t_us,
                seq,
                client,
                op,
                attempt,
            } => {
                self.arrival(t_us, Some(attempt));
                if let Some(w) = self.wire_mut() {
                    w.arrived(seq, client, op, attempt);
                }
                if let Some(st) = self.steps_mut() {
                    st.call(seq, Some(client), t_us);
                }
            }
            Fact::Ended { t_us, seq, end } => {
                match end {
                    LineEnd::Status(code) => {
                        if let Some(l) = self.ledger_mut() {
                            l.answered_req(seq, code);
                        }
                    }
                    LineEnd::Timeout => {
                        if let Some(w) = self.wire_mut() {
                            w.timed_out_req(seq, t_us);
                        }
                    }
                    _ => {}
                }
                self.attempt_answered(seq, t_us, end);
            }
            Fact::Lost { seq } => {
                if let Some(l) = self.ledger_mut() {
                    l.lost(seq);
                }
            }
            Fact::FailedFast {
                t_us,
                client,
                op,
                attempt,
            } => {
                self.failed_fast();
                self.attempt_line(AttemptLine::at(
                    client,
                    op,
                    attempt,
                    t_us,
                    LineEnd::FailedFast,
                ));
            }
            Fact::Served {
                t_us,
                seq,
                status,
                cause,
                cost,
                worked,
                given_up,
            } => {
                if let Some(w) = self.wire_mut() {
                    w.answered(seq, t_us, cause);
                }
                if let Some(st) = self.steps_mut() {
                    st.answer(seq, status, cause, cost);
                }
                self.served(t_us, Served::of(worked, cause, status, given_up));
            }
            Fact::ConnectionOpened => {
                if let Some(w) = self.wire_mut() {
                    w.connection_opened();
                }
            }
            Fact::ConnectionReset => {
                if let Some(w) = self.wire_mut() {
                    w.connection_reset();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use e03_model::events::{OperationRecord, Outcome, RunTag};
    use e03_model::priority::Priority;
    use e03_model::GiveUp;
    use e03_plan::{Params, Scenario};

    fn acc() -> RunAccumulator {
        RunAccumulator::new(Scenario::e03b(), &Params::default(), "D", 7)
    }

    /// The client log's `operation` record and the simulator's telling of the same operation
    /// are one fact, and the accumulator's figures from either are the same.
    #[test]
    fn a_logged_operation_and_a_simulated_one_are_the_same_fact() {
        let record = Event::Operation(OperationRecord {
            tag: RunTag {
                run: "r".into(),
                seed: 7,
                strategy: "D".into(),
            },
            client: 3,
            op: 5,
            start_us: 9_000_000,
            end_us: 9_400_000,
            attempts: 2,
            outcome: Outcome::Failed,
            reason: Some(GiveUp::BudgetDenied),
            flow: None,
            class: Priority::BestEffort,
        });
        // As the simulator tells it (simulator/src/run.rs).
        let told = OperationEnd {
            client: 3,
            op: 5,
            flow: None,
            start_us: 9_000_000,
            end_us: 9_400_000,
            success: false,
            reason: Some(GiveUp::BudgetDenied),
            class: Priority::BestEffort,
        };
        let Some(Fact::Operation(read)) = Fact::of(&record) else {
            panic!("an operation record tells an operation's end");
        };
        assert_eq!(read, told);
        let mut from_log = acc();
        crate::feed(&mut from_log, &record);
        let mut from_sim = acc();
        from_sim.take(Fact::Operation(told));
        let (log, sim) = (from_log.finish(), from_sim.finish());
        assert_eq!(log, sim);
        assert_eq!((log.operations, log.retries_denied), (1, 1));
        assert_eq!(log.best_effort.operations, 1);
        // In the incident (8.5 s to 15 s) and failed.
        assert_eq!(log.success_affected, 0.0);
    }

    /// The simulator's attempt, sent and reached at one instant then ended, fills one line of
    /// the attempt log and the load figures, as a live attempt's records do.
    #[test]
    fn a_simulated_attempt_is_sent_reached_and_ended() {
        let mut a = acc();
        let (client, op) = (1, 0);
        for (seq, attempt, t_us) in [(0, 1, 9_000_000), (1, 2, 9_300_000)] {
            for fact in [
                Fact::Reached {
                    t_us,
                    seq,
                    client,
                    op,
                    attempt,
                },
                Fact::Sent {
                    t_us,
                    seq,
                    client,
                    op,
                    attempt,
                },
            ] {
                a.take(fact);
            }
        }
        a.take(Fact::Ended {
            t_us: 9_200_000,
            seq: 0,
            end: LineEnd::Status(503),
        });
        let m = a.finish();
        assert_eq!((m.total_requests, m.retries_sent), (2, 1));
        assert_eq!(m.attempt_log.len(), 2);
        assert_eq!(m.attempt_log[0].end, LineEnd::Status(503));
        assert_eq!(m.attempt_log[0].end_us, 9_200_000);
        // The second is still waiting for its answer when the run ends.
        assert_eq!(m.attempt_log[1].end, LineEnd::Unanswered);
    }
}
