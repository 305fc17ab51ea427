//! One live run: a thin driver of the core's [`DependencyNode`] (the model and everything due
//! around it, in logical time, with the ledger and its commit rule) behind a `std::sync::Mutex`,
//! the tasks that drive it, and its log records.
//!
//! Two things advance the schedule: each arrival (up to its own arrival time, before the model
//! decides about it, so it sees the pool exactly as it is at that instant) and one driver task
//! per run that sleeps until the schedule's next due instant and then advances (so answers go
//! out on time with no traffic). The driver sleeps on the precise timer (crate
//! `precise-timer`), not on tokio's 1 ms wheel, so an answer leaves within tens of µs of the
//! model's instant. Both are tokio tasks independent of the HTTP handler: hyper drops a
//! handler's future when its client disconnects, and the model must not lose work then. A
//! request keeps its worker until its work is done; its answer goes to a oneshot whose receiver
//! may be gone, and is logged all the same.
//!
//! # Ending a run
//!
//! [`Run::end`] closes the run's log *gate* (a tokio `RwLock` every record passes through in
//! read mode), so every record that got through is in the log channel before `run_end`, and no
//! record of this run can follow it. Requests still waiting are then answered 503 unlogged (their
//! oneshot senders are dropped) and the driver task exits. Each run is its own `Arc<Run>` with
//! its own state: a task of an old run can only ever touch the old run.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use e03_model::chain::deadline_on_arrival;
use e03_model::dependency::Caller;
use e03_model::dependency::ServiceConfig;
use e03_model::events::{
    self, Arrival, Cause, ChargeRecord, Event, RunEnd, RunStart, RunTag, Source,
};
use e03_model::ledger::ChargeRequest;
use e03_model::schedule::{Answer, Step};
use e03_model::{DependencyNode, ReqId};
use e03_plan::control::RunCounts;
use precise_timer::PreciseTimer;
use tokio::sync::{oneshot, Notify, RwLock};
use tokio::time::Instant;

use crate::identity::Identity;
use crate::metrics::{Metrics, ModelState};
use e03_io::sink::{LogError, LogSink};

/// The answer sent to a waiting handler: its HTTP status (400 means "malformed identity
/// headers") and, for a 429 of a rate-limited phase, its `Retry-After`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status {
    pub code: u16,
    pub retry_after: Option<std::time::Duration>,
    /// The answer is lost (the retry-logic article): the handler resets the connection instead of answering.
    pub lost: bool,
    /// A charge's number in the ledger (the new charge, or the first charge of its key).
    pub charge: Option<u64>,
}

impl Status {
    /// A status without `Retry-After`.
    pub fn code(code: u16) -> Self {
        Status {
            code,
            retry_after: None,
            lost: false,
            charge: None,
        }
    }
}

/// The run's dependency node (schedule, ledger and commit rule: the core's
/// [`DependencyNode`]) and where each waiting request's answer goes.
struct RunState {
    node: DependencyNode,
    senders: HashMap<ReqId, oneshot::Sender<Status>>,
    ended: bool,
    /// The ledger's file, written under this lock as each charge commits.
    ledger_file: LedgerFile,
}

impl RunState {
    /// The answers among `steps`, each with its handler's sender. Each is settled by the
    /// node's commit rule here, in the schedule's order, and a new charge's line written before
    /// the lock is released (so `Run::end` can never close the file before it).
    fn deliveries(&mut self, steps: Vec<Step>, tag: &RunTag) -> Vec<Delivery> {
        let mut out = Vec::with_capacity(steps.len());
        for step in steps {
            let Step::Answer(answer) = step else { continue };
            let settled = self.node.settle(&answer);
            if let Some(charge) = settled.charged {
                self.ledger_file.write(&Event::Charge(ChargeRecord {
                    tag: tag.clone(),
                    seq: answer.req,
                    charge,
                }));
            }
            let status = Status {
                code: settled.status,
                retry_after: answer.retry_after,
                lost: answer.cause == Cause::Lost,
                charge: settled.charge,
            };
            out.push(Delivery {
                tx: self.senders.remove(&answer.req),
                answer,
                status,
            });
        }
        out
    }
}

/// A run's ledger file (`ledger-*.jsonl` beside its server log), created at its first charge
/// and flushed line by line: a commit is on disk before its answer goes out.
struct LedgerFile {
    path: std::path::PathBuf,
    out: Option<std::io::BufWriter<std::fs::File>>,
    failed: bool,
}

impl LedgerFile {
    fn write(&mut self, event: &Event) {
        use std::io::Write;
        if self.failed {
            return;
        }
        if self.out.is_none() {
            let open = || -> std::io::Result<std::fs::File> {
                if let Some(dir) = self.path.parent() {
                    std::fs::create_dir_all(dir)?;
                }
                std::fs::File::create(&self.path)
            };
            match open() {
                Ok(f) => self.out = Some(std::io::BufWriter::new(f)),
                Err(e) => {
                    tracing::error!("cannot create ledger {}: {e}", self.path.display());
                    self.failed = true;
                    return;
                }
            }
        }
        let out = self.out.as_mut().expect("opened above");
        let r = out
            .write_all(event.to_line().as_bytes())
            .and_then(|()| out.write_all(b"\n"))
            .and_then(|()| out.flush());
        if let Err(e) = r {
            tracing::error!("cannot write ledger {}: {e}", self.path.display());
            self.failed = true;
        }
    }
}

/// The ledger's path for a server log path: `server-` becomes `ledger-` in the file name.
pub(crate) fn ledger_beside(log_path: &std::path::Path) -> std::path::PathBuf {
    let name = log_path
        .file_name()
        .map(|n| n.to_string_lossy().replacen("server-", "ledger-", 1))
        .unwrap_or_else(|| "ledger.jsonl".into());
    log_path.with_file_name(name)
}

/// An answer decided under the lock, sent and logged after it is released.
struct Delivery {
    answer: Answer,
    status: Status,
    tx: Option<oneshot::Sender<Status>>,
}

/// Everything needed to start a run.
pub struct RunSetup {
    pub tag: RunTag,
    /// `run_start.scenario`: the scenario's name.
    pub scenario_label: String,
    pub config: ServiceConfig,
    /// Time zero, and the same instant as wall clock for `run_start`.
    pub t0: Instant,
    pub start_unix_ms: u64,
    /// The parameters in force, for `run_start` (in both its forms).
    pub params: e03_plan::Params,
    /// Log file, absolute (or relative to the working directory) and relative to the log dir.
    pub log_path: std::path::PathBuf,
    pub log_file: String,
    /// The service's metrics, which this run adds to.
    pub metrics: Arc<Metrics>,
    /// How long the timer spins before each due instant ([`PreciseTimer::start_spinning`]).
    pub answer_spin: Duration,
}

/// One live run.
pub struct Run {
    tag: RunTag,
    t0: Instant,
    /// Relative to the service's log directory, for `RunCounts`.
    log_file: String,
    state: Mutex<RunState>,
    /// The next arrival's number (also the model's `ReqId`).
    next_seq: AtomicU64,
    /// Orders arrivals and driver advances: see [`Run::arrive`].
    sequencer: tokio::sync::Mutex<()>,
    /// Wakes the driver when an earlier event was queued or the run ended.
    wake: Notify,
    /// Wakes the driver at the next due instant, to the tens of µs.
    timer: PreciseTimer,
    /// True while the run's log takes records; see the module docs.
    gate: RwLock<bool>,
    log: LogSink,
    metrics: Arc<Metrics>,
    arrivals: AtomicU64,
    responses: AtomicU64,
    /// Records written to this run's log, `run_start` included.
    records: AtomicU64,
}

/// Which counter a record adds to.
#[derive(Clone, Copy)]
enum Kind {
    Arrival,
    Response(Cause),
    Other,
}

impl Run {
    /// Opens the run's log, writes `run_start` and starts the run's driver task.
    pub async fn start(setup: RunSetup, log: LogSink) -> Result<Arc<Run>, LogError> {
        log.open(setup.log_path.clone()).await?;
        let run = Arc::new(Run {
            tag: setup.tag.clone(),
            t0: setup.t0,
            log_file: setup.log_file,
            state: Mutex::new(RunState {
                node: DependencyNode::new(setup.config),
                senders: HashMap::new(),
                ended: false,
                ledger_file: LedgerFile {
                    path: ledger_beside(&setup.log_path),
                    out: None,
                    failed: false,
                },
            }),
            next_seq: AtomicU64::new(0),
            sequencer: tokio::sync::Mutex::new(()),
            wake: Notify::new(),
            timer: PreciseTimer::start_spinning(setup.answer_spin),
            gate: RwLock::new(true),
            log,
            metrics: setup.metrics,
            arrivals: AtomicU64::new(0),
            responses: AtomicU64::new(0),
            records: AtomicU64::new(0),
        });
        let (params, typed_params) = setup.params.run_start_forms();
        run.record(
            Event::RunStart(RunStart {
                tag: setup.tag,
                source: Source::Server,
                scenario: setup.scenario_label,
                start_unix_ms: setup.start_unix_ms,
                params,
                typed_params: Some(typed_params),
                clock: None,
                shard: None,
            }),
            Kind::Other,
        )
        .await;
        tokio::spawn(run.clone().drive());
        Ok(run)
    }

    /// The run's server log, relative to the service's log directory.
    pub fn log_file(&self) -> &str {
        &self.log_file
    }

    pub fn tag(&self) -> &RunTag {
        &self.tag
    }

    /// Time since time zero (zero before it).
    pub fn since_t0(&self, at: Instant) -> Duration {
        at.saturating_duration_since(self.t0)
    }

    pub fn next_seq(&self) -> ReqId {
        self.next_seq.fetch_add(1, Ordering::Relaxed)
    }

    pub fn counts(&self) -> RunCounts {
        RunCounts {
            arrivals: self.arrivals.load(Ordering::SeqCst),
            responses: self.responses.load(Ordering::SeqCst),
            log_file: self.log_file.clone(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, RunState> {
        // A panic while holding the lock cannot leave the state half-updated in a way that
        // matters more than stopping the service would; keep serving.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Handles one request: stamps its arrival, logs it, lets the model decide, and answers
    /// through `tx` now or later. Run it in its own task: it must finish even if the handler is
    /// dropped.
    ///
    /// The stamp, the log record and the decision happen under the run's *sequencer*, which the
    /// driver also takes to advance: decisions are taken in the order of the logged arrivals and
    /// at their logged times, and nothing advances the model in between. Without it, two
    /// requests stamped microseconds apart could be decided in the other order (one rejected,
    /// the other queued, against their logged order) and a request could be admitted before its
    /// own logged arrival; a replay of the log through the simulator would then disagree.
    pub async fn arrive(self: Arc<Self>, id: Identity, tx: oneshot::Sender<Status>) {
        self.arrive_with(id, None, tx).await
    }

    // `charge`: `None` for `GET /work`; `Some(Ok(..))` a valid charge; `Some(Err(code))` a
    // charge refused for its key or body, logged as an arrival and answered `code` at once.

    /// [`Self::arrive`] for a request that may be a charge (`POST /charge`): a charge whose
    /// work commits is recorded in the run's ledger (or answered from its key store).
    pub async fn arrive_with(
        self: Arc<Self>,
        id: Identity,
        charge: Option<Result<ChargeRequest, u16>>,
        tx: oneshot::Sender<Status>,
    ) {
        let sequencer = self.sequencer.lock().await;
        let now = self.since_t0(Instant::now());
        let seq = self.next_seq();
        self.record(
            Event::Arrival(Arrival {
                tag: self.tag.clone(),
                seq,
                t_us: events::us(now),
                client: id.client,
                op: id.op,
                attempt: id.attempt,
                class: id.class,
            }),
            Kind::Arrival,
        )
        .await;
        if id.malformed {
            drop(sequencer);
            let _ = tx.send(Status::code(400));
            return;
        }
        let charge = match charge {
            Some(Err(code)) => {
                drop(sequencer);
                let _ = tx.send(Status::code(code));
                return;
            }
            Some(Ok(charge)) => Some(charge),
            None => None,
        };
        let key = id.fault_key().unwrap_or(seq);
        let (out, earlier) = {
            let mut st = self.lock();
            if st.ended {
                drop(st);
                drop(sequencer);
                let _ = tx.send(Status::code(503));
                return;
            }
            st.senders.insert(seq, tx);
            let before = st.node.next_due();
            let mut steps = Vec::new();
            let caller = Caller {
                deadline: id.deadline_ms.map(|ms| deadline_on_arrival(now, ms)),
                class: id.class,
            };
            let admission = st.node.arrive(now, seq, key, caller, charge, &mut steps);
            self.metrics.admission(admission);
            // Wake the driver only if this arrival made something due earlier than what it
            // sleeps for (the schedule's next due instant only moves earlier through arrivals):
            // every needless wake-up costs two thread hops that delay the answers due next.
            let earlier = match (st.node.next_due(), before) {
                (Some(after), Some(before)) => after < before,
                (after, _) => after.is_some(),
            };
            (st.deliveries(steps, &self.tag), earlier)
        };
        drop(sequencer);
        if earlier {
            self.wake.notify_one();
        }
        self.deliver(out).await;
    }

    /// The run's driver: sleeps until the schedule's next due instant (or until woken), then
    /// advances it to the time it woke at.
    async fn drive(self: Arc<Self>) {
        loop {
            let next = {
                let st = self.lock();
                if st.ended {
                    return;
                }
                st.node.next_due()
            };
            match next {
                Some(t) => {
                    tokio::select! {
                        () = self.timer.sleep_until((self.t0 + t).into_std()) => {}
                        () = self.wake.notified() => {}
                    }
                }
                None => self.wake.notified().await,
            }
            let out = {
                let _sequencer = self.sequencer.lock().await;
                let mut st = self.lock();
                if st.ended {
                    return;
                }
                let mut steps = Vec::new();
                st.node.advance(self.since_t0(Instant::now()), &mut steps);
                st.deliveries(steps, &self.tag)
            };
            self.deliver(out).await;
        }
    }

    /// Hands answers to their handlers and logs them.
    async fn deliver(&self, out: Vec<Delivery>) {
        // Every answer is handed over first, then logged: logging one (a channel send that may
        // wait) never delays handing over the next.
        let mut sent = Vec::with_capacity(out.len());
        for Delivery { answer, status, tx } in out {
            let t = self.since_t0(Instant::now());
            // The handler may be gone (client timeout); the answer is logged all the same.
            if let Some(tx) = tx {
                let _ = tx.send(status);
            }
            sent.push((
                t,
                Answer {
                    status: status.code,
                    ..answer
                },
            ));
        }
        for (t, a) in sent {
            self.record(
                Event::Response(events::Response {
                    tag: self.tag.clone(),
                    seq: a.req,
                    t_us: events::us(t),
                    status: a.status,
                    cause: a.cause,
                    admit_us: a.admit.map(events::us),
                    immediate: a.immediate,
                    cost: a.cost,
                }),
                Kind::Response(a.cause),
            )
            .await;
        }
    }

    /// Sends one record to the log unless the run has ended.
    async fn record(&self, event: Event, kind: Kind) {
        let open = self.gate.read().await;
        if !*open {
            return;
        }
        self.records.fetch_add(1, Ordering::SeqCst);
        match kind {
            Kind::Arrival => {
                self.arrivals.fetch_add(1, Ordering::SeqCst);
                self.metrics.arrival();
            }
            Kind::Response(cause) => {
                self.responses.fetch_add(1, Ordering::SeqCst);
                self.metrics.response(cause);
            }
            Kind::Other => {}
        }
        self.log.line(event.to_line()).await;
        drop(open);
    }

    /// How a readiness probe arriving now is answered
    /// ([`e03_model::timeline::Timeline::readiness`]): when, and with what status.
    pub fn readiness(&self) -> (Instant, u16) {
        let now = self.since_t0(Instant::now());
        let st = self.lock();
        let timeline = &st.node.schedule().model().config().timeline;
        let (at, status) = timeline.readiness(now);
        (self.t0 + at, status)
    }

    /// The model's state now, for the gauges of `/metrics`.
    pub fn model_state(&self) -> ModelState {
        let now = self.since_t0(Instant::now());
        let st = self.lock();
        let model = st.node.schedule().model();
        ModelState {
            queued: model.queued(),
            busy_workers: model.busy_workers(),
            concurrency_limit: model.concurrency_limit(),
            phase: model.config().timeline.phase(now),
        }
    }

    /// Ends the run: `run_end` is written, the log flushed and closed, waiting requests are
    /// answered 503 (unlogged) and the driver stops. A second call does nothing.
    pub async fn end(&self, complete: bool) -> Result<RunCounts, LogError> {
        let mut open = self.gate.write().await;
        if !*open {
            return Ok(self.counts());
        }
        *open = false;
        {
            let mut st = self.lock();
            st.ended = true;
            st.node.end();
            st.senders.clear();
            if let Some(mut out) = st.ledger_file.out.take() {
                use std::io::Write;
                if let Err(e) = out.flush() {
                    tracing::error!("cannot flush ledger: {e}");
                }
            }
        }
        self.wake.notify_one();
        let records = self.records.load(Ordering::SeqCst);
        let end = Event::RunEnd(RunEnd {
            tag: self.tag.clone(),
            source: Source::Server,
            t_us: events::us(self.since_t0(Instant::now())),
            complete,
            records,
        });
        self.log.line(end.to_line()).await;
        self.log.close().await?;
        Ok(self.counts())
    }
}
