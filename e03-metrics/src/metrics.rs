//! The metrics of one run (spec section 6), computed by a pure accumulator.
//!
//! [`RunAccumulator`] takes one fact at a time (an arrival at the dependency, an attempt the
//! swarm sent, an operation that ended) by its one door, [`RunAccumulator::take`]
//! ([`crate::facts`]), and keeps only counters, window series and histograms, never the events
//! themselves: a run of any length is analysed in constant memory per window. The log reader
//! tells it the facts of JSON Lines; the simulator tells it the facts of its event queue, so
//! both report the very same figures by the very same code.
//!
//! Windows are aligned to the run's time zero: 100 ms window `k` is `[k * 100 ms, (k+1) * 100 ms)`
//! and 1 s window `k` is the sum of 100 ms windows `10k .. 10k+10`. Latency percentiles come from
//! an HDR histogram in microseconds (3 significant digits), reported in milliseconds.
//!
//! Live logs carry more than the simulator knows (sequence numbers, identities, admission
//! times); the log records' facts also feed those to [`crate::fidelity`], and only then does
//! [`RunMetrics`] carry `fidelity` and `matched`.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use e03_model::breaker::BreakerState;
use e03_model::events::{Arrival, Attempt, AttemptEnd, Response};
use e03_model::priority::Priority;
use e03_model::GiveUp;
use e03_plan::{Params, Scenario};

use crate::fidelity::LiveAccumulator;
pub use crate::fidelity::{Fidelity, Matched};
use crate::ledger::{LedgerFigures, LedgerTally};
use crate::openloop::{OpenLoopAcc, OpenLoopMetrics};
use crate::quantiles::{histogram, quantile_ms};
// The window widths and the cap on times, at the paths they always had.
pub use crate::quantiles::{MAX_T_US, WINDOW_100MS_US, WINDOW_1S_US};
// The records a run's figures are made of, at the paths they always had.
pub use crate::records::{
    AttemptLine, BreakerMark, ClassTally, HostMark, LineEnd, NoAnswer, OperationEnd,
};

/// Share of successes a 1 s window needs to count as recovered.
const RECOVERED: f64 = 0.99;

impl RunMetrics {
    /// The critical operations: every operation that is not best effort.
    pub fn critical(&self) -> ClassTally {
        ClassTally {
            operations: self.operations - self.best_effort.operations,
            succeeded: self.succeeded - self.best_effort.succeeded,
        }
    }
}

/// Everything reported for one strategy and seed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunMetrics {
    pub strategy: String,
    pub seed: u64,
    /// Share of affected operations that succeeded, in [0, 1] (1 when there was none: see
    /// `affected_operations`).
    pub success_affected: f64,
    /// Operations that started during the incident (all of them without one). None in a
    /// summary written before the field existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affected_operations: Option<u64>,
    pub operations: u64,
    pub total_requests: u64,
    pub retries_sent: u64,
    pub retries_denied: u64,
    /// Attempts a policy layer refused before sending (an open breaker, client-side
    /// throttling): they never reached the dependency and are not in `total_requests`.
    #[serde(default)]
    pub failed_fast: u64,
    /// Sent attempts that got no HTTP answer, by class (client side): read timeouts and each
    /// way a connection failed. Empty (and not written) when every attempt was answered.
    #[serde(default, skip_serializing_if = "NoAnswer::is_empty")]
    pub no_answer: NoAnswer,
    /// The answers the clients received, per HTTP status (`{"200": 2841, "503": 180}`), from
    /// the attempts' ends ([`crate::statuses`]).
    #[serde(default)]
    pub statuses: crate::statuses::StatusCounts,
    /// The circuit breaker's state changes, in order (empty without a breaker).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub breaker: Vec<BreakerMark>,
    /// The callers' balancer's changes (a replica out of rotation or back), in order; empty
    /// with one replica (`E03_REPLICAS`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<HostMark>,
    pub peak_1s: u64,
    pub peak_100ms: u64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    /// The 99.9th percentile of the operations' latency (0 in a summary written before it).
    #[serde(default)]
    pub p999_ms: f64,
    /// Sent attempts cancelled because their hedged operation had ended ([`LineEnd::Cancelled`]):
    /// the dependency did their work for nothing.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cancelled: u64,
    /// Whole seconds after the outage's end (the freeze's, else the last down phase's) until
    /// operations succeed at >= 99% again. None without an outage (E03-A), when no operation
    /// ended after it (nothing measured), or when success never came back before the run's end
    /// (`recovered` then says so; no number stands for "not recovered").
    pub recovery_s: Option<u64>,
    /// Whether success came back after the outage: `None` when nothing was measured (no
    /// outage, or no operation ended after it), `Some(false)` when it never did before the
    /// run's end.
    pub recovered: Option<bool>,
    /// Set by the log reader; true from the simulator.
    pub complete: bool,
    #[serde(skip)]
    pub arrivals_100ms: Vec<u64>,
    #[serde(skip)]
    pub retries_100ms: Vec<u64>,
    #[serde(skip)]
    pub arrivals_1s: Vec<u64>,
    #[serde(skip)]
    pub retries_1s: Vec<u64>,
    /// Every arrival at the dependency, `(t_us, attempt number)` (0 when unknown), in the order
    /// seen: for windows other than 100 ms and 1 s (a scenario's checks).
    #[serde(skip)]
    pub arrivals: Vec<(u64, u32)>,
    /// The most arrivals in one window, by `(window ms, retries only)`, for every window the
    /// scenario's peak checks and the attempt log ask about, counted as the arrivals came: what
    /// [`crate::checks::peak_per_window`] reads when `arrivals` was not kept (the log reader
    /// keeps none, see [`RunAccumulator::without_arrival_list`]).
    #[serde(skip)]
    pub peak_arrivals: std::collections::BTreeMap<(u64, bool), u64>,
    /// Operations that succeeded.
    #[serde(default)]
    pub succeeded: u64,
    /// Best-effort operations ([`e03_model::priority::Priority`]), and how many succeeded;
    /// every other operation is critical.
    #[serde(default)]
    pub best_effort: ClassTally,
    /// Every attempt of a small run (at most [`ATTEMPT_LOG_MAX`] attempts; empty for a larger
    /// one), in the order sent: the per-caller attempt log and the retry waits of the checks.
    #[serde(skip)]
    pub attempt_log: Vec<AttemptLine>,
    /// From live logs only.
    pub fidelity: Option<Fidelity>,
    /// From live logs only.
    pub matched: Option<Matched>,
    /// The retry-logic article's figures (duplicate charges, lost responses, permanent errors), for runs with
    /// a lost-response or permanent-error fault or a charging strategy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ledger: Option<LedgerFigures>,
    /// The open loop's figures and recovery verdict (`E03_WORKLOAD=open_loop` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_loop: Option<OpenLoopMetrics>,
    /// The step workload's figures (`E03_WORKLOAD=steps`, the rate-limit article).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<crate::steps::StepFigures>,
    /// A wire fault's figures (issue 27), for a timeline with a wire phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wire: Option<crate::wire::WireFigures>,
    /// The fan-out workload's requests (`E03_WORKLOAD=fan_out`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fanout: Option<crate::fanout::FanOutMetrics>,
    /// Each dependency's operations, over a partition (`E03_BALANCER=partition`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<crate::dependencies::DependencyMetrics>,
    /// Each shard's figures, for a live run split over swarm processes (docs/shards.md).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shards: Vec<crate::shards::ShardFigures>,
}

/// Most attempts a run keeps in its [`RunMetrics::attempt_log`]; a run with more keeps none.
pub const ATTEMPT_LOG_MAX: usize = 2000;

/// Collects one run's facts; see the module docs.
#[derive(Debug)]
pub struct RunAccumulator {
    strategy: String,
    seed: u64,
    /// The incident, `[first non-up phase start, last one's end)` in µs (E03-B: freeze start to
    /// degraded end): operations starting here are the affected ones
    /// None without an incident (E03-A), where every operation counts.
    affected: Option<(u64, u64)>,
    /// The outage's end in µs, origin of the recovery windows: the freeze's end (E03-B), else the
    /// last down phase's end; None without either.
    freeze_end_us: Option<u64>,
    /// Server arrivals per 100 ms window (the source of truth for load).
    arrivals_100ms: Vec<u64>,
    /// Of those, arrivals whose attempt number says they are retries.
    retries_100ms: Vec<u64>,
    total_requests: u64,
    retries_sent: u64,
    retries_denied: u64,
    failed_fast: u64,
    /// Attempts cancelled (hedging).
    cancelled: u64,
    breaker: Vec<BreakerMark>,
    hosts: Vec<HostMark>,
    arrivals: Vec<(u64, u32)>,
    /// False once the log reader asked for no list of arrivals.
    keep_arrivals: bool,
    /// Arrivals per window of the checks' widths.
    peaks: crate::peaks::WindowPeaks,
    operations: u64,
    affected_ops: u64,
    affected_ok: u64,
    succeeded: u64,
    best_effort: ClassTally,
    /// The attempt log (see [`RunMetrics::attempt_log`]), with the index of each simulated
    /// attempt still waiting for its answer, by request id.
    attempt_log: Vec<AttemptLine>,
    attempt_log_full: bool,
    in_flight: std::collections::HashMap<u64, usize>,
    /// Latency of every operation, µs.
    latency: Histogram<u64>,
    /// Client send lateness (sent - due), µs: a fidelity input, cheap enough to always keep.
    lateness: Histogram<u64>,
    /// (successes, operations) ending in each 1 s window from the freeze end.
    recovery_windows: Vec<(u64, u64)>,
    /// Live-only inputs (identities, responses); None until one arrives.
    live: Option<LiveAccumulator>,
    /// The retry-logic article's facts, when the run can have them.
    ledger: Option<LedgerTally>,
    /// The open loop's figures (open-loop runs only).
    open: Option<OpenLoopAcc>,
    /// The step workload's facts (step runs only).
    steps: Option<crate::steps::StepTally>,
    no_answer: NoAnswer,
    /// Answers per HTTP status.
    statuses: crate::statuses::StatusCounts,
    /// A wire fault's facts (a timeline with a wire phase only).
    wire: Option<crate::wire::WireTally>,
    /// The fan-out requests (fan-out runs only).
    fanout: Option<crate::fanout::FanOutAcc>,
    /// Each dependency's operations, over a partition (`E03_BALANCER=partition`); empty
    /// otherwise.
    dependencies: Vec<crate::dependencies::DependencyAcc>,
    /// Kept to build the live accumulator lazily.
    params: Params,
    scenario: Scenario,
}

fn bump(series: &mut Vec<u64>, k: usize) {
    if series.len() <= k {
        series.resize(k + 1, 0);
    }
    series[k] += 1;
}

impl RunAccumulator {
    pub fn new(scenario: Scenario, params: &Params, strategy: &str, seed: u64) -> Self {
        let timeline = params.timeline(&scenario);
        let us = |d: std::time::Duration| d.as_micros() as u64;
        let affected = timeline.incident().map(|(from, to)| (us(from), us(to)));
        let freeze_end_us = timeline
            .freeze
            .map(|f| us(f.end))
            .or_else(|| timeline.down.last().map(|d| us(d.end)));
        let config = params.service_config_for(&scenario, seed, strategy);
        let faults = config.faults;
        let charging = params
            .strategies()
            .iter()
            .any(|s| s.id == strategy && s.idempotency.is_some());
        let ledger = (faults.lost_rate > 0.0 || faults.permanent_rate > 0.0 || charging)
            .then(LedgerTally::default);
        RunAccumulator {
            ledger,
            strategy: strategy.to_string(),
            seed,
            affected,
            freeze_end_us,
            arrivals_100ms: Vec::new(),
            retries_100ms: Vec::new(),
            total_requests: 0,
            retries_sent: 0,
            retries_denied: 0,
            failed_fast: 0,
            cancelled: 0,
            breaker: Vec::new(),
            hosts: Vec::new(),
            arrivals: Vec::new(),
            keep_arrivals: true,
            peaks: crate::peaks::WindowPeaks::new(&scenario.def().checks),
            operations: 0,
            affected_ops: 0,
            affected_ok: 0,
            succeeded: 0,
            best_effort: ClassTally::default(),
            attempt_log: Vec::new(),
            attempt_log_full: false,
            no_answer: NoAnswer::default(),
            statuses: Default::default(),
            wire: (!timeline.wire.is_empty()).then(crate::wire::WireTally::default),
            fanout: params
                .fanout()
                .map(|_| crate::fanout::FanOutAcc::new(params.fanout_slow())),
            dependencies: if params.balancer().pick == e03_model::balancer::Pick::Partition {
                vec![Default::default(); params.replicas() as usize]
            } else {
                Vec::new()
            },
            in_flight: std::collections::HashMap::new(),
            latency: histogram(),
            lateness: histogram(),
            recovery_windows: Vec::new(),
            live: None,
            open: params.is_open_loop().then(|| {
                // Every replica's workers and capacity (`E03_REPLICAS`, each the same).
                OpenLoopAcc::new(
                    params.service().workers * params.replicas() as usize,
                    config.capacity_per_s() * params.replicas() as f64,
                    timeline.incident().map(|(_, end)| us(end)),
                    us(params.duration()),
                )
            }),
            steps: params
                .strategies()
                .iter()
                .find(|s| s.id == strategy)
                .and_then(|s| s.load)
                .filter(|_| params.is_steps())
                .map(|load| crate::steps::StepTally::new(&params.step_config(load))),
            params: params.clone(),
            scenario,
        }
    }

    /// Keeps no list of the arrivals ([`RunMetrics::arrivals`] stays empty): the checks' peaks
    /// are counted as the arrivals come instead, and memory does not grow with them. The log
    /// reader's choice, for logs of any length; the simulator keeps the list.
    pub fn without_arrival_list(mut self) -> Self {
        self.keep_arrivals = false;
        self
    }

    /// The step workload's tally, when this is a step run (`facts.rs` tells it the
    /// simulator's facts).
    pub(crate) fn steps_mut(&mut self) -> Option<&mut crate::steps::StepTally> {
        self.steps.as_mut()
    }

    /// A request arrived at the dependency (server log). attempt = x-e03-attempt if known.
    pub(crate) fn arrival(&mut self, t_us: u64, attempt: Option<u32>) {
        self.total_requests += 1;
        if let Some(open) = self.open.as_mut() {
            open.arrival(t_us);
        }
        if self.keep_arrivals {
            self.arrivals.push((t_us, attempt.unwrap_or(0)));
        }
        self.peaks.arrival(t_us, attempt.unwrap_or(0));
        if t_us >= MAX_T_US {
            return;
        }
        let k = (t_us / WINDOW_100MS_US) as usize;
        bump(&mut self.arrivals_100ms, k);
        if self.retries_100ms.len() <= k {
            self.retries_100ms.resize(k + 1, 0);
        }
        if attempt.is_some_and(|a| a > 1) {
            self.retries_100ms[k] += 1;
        }
    }

    /// The swarm sent an attempt (client log).
    pub(crate) fn attempt(&mut self, attempt: u32, due_us: u64, sent_us: u64) {
        if attempt > 1 {
            self.retries_sent += 1;
        }
        if let (Some(open), 1) = (self.open.as_mut(), attempt) {
            open.first_attempt(due_us, sent_us);
        }
        self.lateness
            .saturating_record(sent_us.saturating_sub(due_us));
    }

    /// A policy layer refused an attempt before it was sent (client log: end `failed_fast`).
    pub(crate) fn failed_fast(&mut self) {
        self.failed_fast += 1;
    }

    /// The strategy's breaker changed state.
    pub(crate) fn breaker_change(&mut self, t_us: u64, from: BreakerState, to: BreakerState) {
        self.breaker.push(BreakerMark { t_us, from, to });
    }

    /// A replica left or re-entered the balancer's rotation.
    pub(crate) fn host_change(
        &mut self,
        t_us: u64,
        replica: u32,
        change: e03_model::balancer::Change,
    ) {
        self.hosts.push(HostMark {
            t_us,
            replica,
            change,
        });
    }

    /// One attempt for the attempt log (live: from the client log, whole).
    pub(crate) fn attempt_line(&mut self, line: AttemptLine) {
        if self.attempt_log_full {
            return;
        }
        if self.attempt_log.len() >= ATTEMPT_LOG_MAX {
            // A large run: keep no log at all rather than a misleading part of one.
            self.attempt_log_full = true;
            self.attempt_log = Vec::new();
            self.in_flight = Default::default();
            return;
        }
        self.attempt_log.push(line);
    }

    /// A simulated attempt left (request `req`); its end comes by [`Self::attempt_answered`].
    pub(crate) fn attempt_sent(&mut self, req: u64, client: u32, op: u32, attempt: u32, t_us: u64) {
        self.attempt_line(AttemptLine::at(
            client,
            op,
            attempt,
            t_us,
            LineEnd::Unanswered,
        ));
        if !self.attempt_log_full {
            self.in_flight.insert(req, self.attempt_log.len() - 1);
        }
    }

    /// A simulated attempt (request `req`) ended at `t_us`.
    pub(crate) fn attempt_answered(&mut self, req: u64, t_us: u64, end: LineEnd) {
        self.no_answer.add(end);
        crate::statuses::count(&mut self.statuses, end);
        self.cancelled += u64::from(end == LineEnd::Cancelled);
        if let Some(i) = self.in_flight.remove(&req) {
            let line = &mut self.attempt_log[i];
            line.end_us = t_us;
            line.end = end;
        }
    }

    /// An operation ended.
    pub(crate) fn operation(&mut self, o: OperationEnd) {
        let OperationEnd {
            client,
            op,
            flow,
            start_us,
            end_us,
            success,
            reason,
            class,
        } = o;
        if let Some(st) = self.steps.as_mut() {
            st.operation(flow, success, end_us);
        }
        if let Some(l) = self.ledger.as_mut() {
            l.operation(client, op, end_us.saturating_sub(start_us));
        }
        self.operations += 1;
        self.succeeded += u64::from(success);
        let n = self.dependencies.len();
        if n > 0 {
            self.dependencies[e03_model::balancer::partition_of(client, n)]
                .operation(end_us.saturating_sub(start_us), success);
        }
        if class == Priority::BestEffort {
            self.best_effort.operations += 1;
            self.best_effort.succeeded += u64::from(success);
        }
        if let Some(open) = self.open.as_mut() {
            open.offered(start_us, true);
            if success {
                open.success(start_us, end_us);
            }
        }
        if reason == Some(GiveUp::BudgetDenied) {
            self.retries_denied += 1;
        }
        self.latency
            .saturating_record(end_us.saturating_sub(start_us));
        let affected = match self.affected {
            Some((from, to)) => start_us >= from && start_us < to,
            None => true,
        };
        if affected {
            self.affected_ops += 1;
            self.affected_ok += u64::from(success);
        }
        if let Some(fe) = self.freeze_end_us {
            if end_us >= fe && end_us < MAX_T_US {
                let k = ((end_us - fe) / WINDOW_1S_US) as usize;
                if self.recovery_windows.len() <= k {
                    self.recovery_windows.resize(k + 1, (0, 0));
                }
                let w = &mut self.recovery_windows[k];
                w.0 += u64::from(success);
                w.1 += 1;
            }
        }
    }

    /// Fan-out: a request that started at `start_us` ended at `end_us` (client log's `fan_out`
    /// record, or the simulator); `success`: its quorum succeeded, `degraded`: with a
    /// fallback's answer.
    pub(crate) fn fanout(&mut self, start_us: u64, end_us: u64, success: bool, degraded: bool) {
        if let Some(f) = self.fanout.as_mut() {
            f.request(start_us, end_us, success, degraded);
        }
    }

    /// Open loop: an operation that arrived at `intended_us` was dropped (the in-flight cap).
    pub(crate) fn dropped(&mut self, intended_us: u64) {
        if let Some(open) = self.open.as_mut() {
            open.offered(intended_us, false);
        }
    }

    /// Open loop, simulated: the dependency answered at `t_us` (see [`crate::openloop::Served`]).
    pub(crate) fn served(&mut self, t_us: u64, served: crate::openloop::Served) {
        if let Some(open) = self.open.as_mut() {
            open.answer(t_us, served);
        }
    }

    /// Optional server-side fidelity input: one Response event.
    pub(crate) fn response_record(&mut self, r: &Response) {
        if let Some(st) = self.steps.as_mut() {
            st.answer(r.seq, r.status, r.cause, r.cost);
        }
        if r.cause == e03_model::events::Cause::Lost {
            if let Some(l) = self.ledger.as_mut() {
                l.lost(r.seq);
            }
        }
        if let Some(w) = self.wire.as_mut() {
            w.answered(r.seq, r.t_us, r.cause);
        }
        if let Some(open) = self.open.as_mut() {
            let served =
                crate::openloop::Served::of(r.admit_us.is_some(), r.cause, r.status, false);
            open.live_answer(r.seq, r.t_us, served);
        }
        self.live_mut().response(r);
    }

    /// A live arrival record: the load figures plus its sequence number and identity.
    pub(crate) fn arrival_record(&mut self, a: &Arrival) {
        self.arrival(a.t_us, a.attempt);
        if let Some(st) = self.steps.as_mut() {
            st.call(a.seq, a.client, a.t_us);
        }
        if let (Some(l), Some(client), Some(op), Some(attempt)) =
            (self.ledger.as_mut(), a.client, a.op, a.attempt)
        {
            l.sent(Some(a.seq), client, op, attempt);
        }
        if let (Some(w), Some(client), Some(op), Some(attempt)) =
            (self.wire.as_mut(), a.client, a.op, a.attempt)
        {
            w.arrived(a.seq, client, op, attempt);
        }
        if let (Some(open), Some(c), Some(o), Some(n)) =
            (self.open.as_mut(), a.client, a.op, a.attempt)
        {
            open.live_identity(a.seq, (c, o, n));
        }
        self.live_mut().arrival(a);
    }

    /// The retry-logic article's tally, begun by the first charge if the run had none.
    pub(crate) fn ledger_or_new(&mut self) -> &mut LedgerTally {
        self.ledger.get_or_insert_with(LedgerTally::default)
    }

    /// Whether this run counts a wire fault's figures (its timeline has a wire phase): only
    /// then does the proxy's wire log tell it anything ([`crate::facts::Fact::Proxy`]).
    pub fn counts_wire(&self) -> bool {
        self.wire.is_some()
    }

    /// The wire fault's tally, when this run keeps one (`facts.rs` tells it the simulator's
    /// facts).
    pub(crate) fn wire_mut(&mut self) -> Option<&mut crate::wire::WireTally> {
        self.wire.as_mut()
    }

    /// The retry-logic article's tally, when this run keeps one (`facts.rs` tells it the
    /// simulator's facts).
    pub(crate) fn ledger_mut(&mut self) -> Option<&mut LedgerTally> {
        self.ledger.as_mut()
    }

    /// A live attempt record: the counts plus its identity for matching.
    pub(crate) fn attempt_record(&mut self, a: &Attempt) {
        let end = match a.end {
            AttemptEnd::Status => a.status.map_or(LineEnd::Unanswered, LineEnd::Status),
            AttemptEnd::Timeout => LineEnd::Timeout,
            AttemptEnd::Aborted => LineEnd::Unanswered,
            AttemptEnd::Cancelled => LineEnd::Cancelled,
            AttemptEnd::FailedFast => LineEnd::FailedFast,
            AttemptEnd::ConnectionError
            | AttemptEnd::ConnectRefused
            | AttemptEnd::ConnectTimeout
            | AttemptEnd::ResetBeforeAnswer
            | AttemptEnd::ResetMidBody => LineEnd::Broken(
                a.end
                    .broken()
                    .expect("every connection failure end names its class"),
            ),
        };
        self.no_answer.add(end);
        crate::statuses::count(&mut self.statuses, end);
        self.cancelled += u64::from(end == LineEnd::Cancelled);
        if let (Some(w), LineEnd::Timeout) = (self.wire.as_mut(), end) {
            w.timed_out(a.client, a.op, a.attempt, a.end_us);
        }
        self.attempt_line(AttemptLine {
            client: a.client,
            op: a.op,
            attempt: a.attempt,
            sent_us: a.sent_us,
            end_us: a.end_us,
            end,
        });
        if a.end == AttemptEnd::FailedFast {
            self.failed_fast();
            return;
        }
        if let (Some(l), AttemptEnd::Status, Some(code)) = (self.ledger.as_mut(), a.end, a.status) {
            l.answered(a.client, a.op, a.attempt, code);
        }
        self.attempt(a.attempt, a.due_us, a.sent_us);
        if let (Some(open), AttemptEnd::Timeout) = (self.open.as_mut(), a.end) {
            open.live_timeout((a.client, a.op, a.attempt), a.end_us);
        }
        self.live_mut().attempt(a);
    }

    fn live_mut(&mut self) -> &mut LiveAccumulator {
        let (scenario, seed, params) = (self.scenario.clone(), self.seed, &self.params);
        self.live.get_or_insert_with(|| {
            let timelines = (0..params.replicas())
                .map(|r| params.timeline_of(&scenario, r))
                .collect();
            LiveAccumulator::new(params.service_config_for(&scenario, seed, &self.strategy))
                .with_timelines(timelines)
        })
    }

    pub fn finish(self) -> RunMetrics {
        let arrivals_1s = sum_windows(&self.arrivals_100ms);
        let retries_1s = sum_windows(&self.retries_100ms);
        let success_affected = if self.affected_ops == 0 {
            1.0
        } else {
            self.affected_ok as f64 / self.affected_ops as f64
        };
        let (fidelity, matched) = match self.live {
            Some(live) => {
                let (f, m) = live.finish(&self.lateness);
                (Some(f), Some(m))
            }
            None => (None, None),
        };
        // Nothing measured (no operation ended after the outage: a run stopped before it,
        // or an outage that lasts to the end): no figure rather than a 0.
        let measured = self
            .freeze_end_us
            .filter(|_| self.recovery_windows.iter().any(|w| w.1 > 0))
            .map(|_| ());
        RunMetrics {
            strategy: self.strategy,
            seed: self.seed,
            success_affected,
            affected_operations: Some(self.affected_ops),
            operations: self.operations,
            total_requests: self.total_requests,
            retries_sent: self.retries_sent,
            retries_denied: self.retries_denied,
            failed_fast: self.failed_fast,
            breaker: self.breaker,
            hosts: self.hosts,
            peak_1s: arrivals_1s.iter().copied().max().unwrap_or(0),
            peak_100ms: self.arrivals_100ms.iter().copied().max().unwrap_or(0),
            p95_ms: quantile_ms(&self.latency, 0.95),
            p99_ms: quantile_ms(&self.latency, 0.99),
            p999_ms: quantile_ms(&self.latency, 0.999),
            cancelled: self.cancelled,
            recovery_s: measured.and_then(|()| recovery_s(&self.recovery_windows)),
            recovered: measured.map(|()| recovery_s(&self.recovery_windows).is_some()),
            complete: true,
            arrivals_100ms: self.arrivals_100ms,
            retries_100ms: self.retries_100ms,
            arrivals_1s,
            retries_1s,
            arrivals: self.arrivals,
            peak_arrivals: self.peaks.finish(),
            succeeded: self.succeeded,
            best_effort: self.best_effort,
            attempt_log: self.attempt_log,
            no_answer: self.no_answer,
            statuses: self.statuses,
            fidelity,
            matched,
            ledger: self.ledger.map(LedgerTally::finish),
            open_loop: self.open.map(OpenLoopAcc::finish),
            steps: self.steps.map(crate::steps::StepTally::finish),
            wire: self.wire.map(crate::wire::WireTally::finish),
            fanout: self.fanout.map(crate::fanout::FanOutAcc::finish),
            dependencies: (self.dependencies.iter().enumerate())
                .map(|(d, a)| a.finish(d as u32))
                .collect(),
            shards: Vec::new(),
        }
    }
}

/// 1 s windows from 100 ms windows (ten to one, aligned to time zero).
pub fn sum_windows(series_100ms: &[u64]) -> Vec<u64> {
    series_100ms.chunks(10).map(|c| c.iter().sum()).collect()
}

/// Whole seconds after the freeze end until a 1 s window (by operation end) succeeds at
/// >= 99% again, from `(successes, operations)` per window.
///
/// Windows with no finishing operation are skipped. 0 if no window is below 99%; otherwise the
/// first recovered window after the first bad one; `None` if none recovers (not recovered by
/// the run's end: no number stands for it).
pub fn recovery_s(windows: &[(u64, u64)]) -> Option<u64> {
    let good = |&(ok, n): &(u64, u64)| ok as f64 >= RECOVERED * n as f64;
    let Some(first_bad) = windows.iter().position(|w| w.1 > 0 && !good(w)) else {
        return Some(0);
    };
    windows
        .iter()
        .enumerate()
        .skip(first_bad + 1)
        .find(|(_, w)| w.1 > 0 && good(w))
        .map(|(k, _)| k as u64)
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An operation of `client` (op 0, no flow) ended, told as the fact it is.
    fn op(
        a: &mut RunAccumulator,
        client: u32,
        start_us: u64,
        end_us: u64,
        success: bool,
        reason: Option<GiveUp>,
        class: Priority,
    ) {
        a.operation(OperationEnd {
            client,
            op: 0,
            flow: None,
            start_us,
            end_us,
            success,
            reason,
            class,
        });
    }

    fn acc(scenario: Scenario) -> RunAccumulator {
        RunAccumulator::new(scenario, &Params::default(), "C", 42)
    }

    #[test]
    fn windows_are_aligned_to_time_zero() {
        let mut a = acc(Scenario::e03b());
        a.arrival(99_999, Some(1));
        a.arrival(100_000, Some(2));
        a.arrival(1_000_000, None);
        let m = a.finish();
        assert_eq!(m.arrivals_100ms[..2], [1, 1]);
        assert_eq!(m.retries_100ms[..2], [0, 1]);
        assert_eq!(
            m.arrivals_100ms.len(),
            11,
            "series ends at the last arrival"
        );
        assert_eq!(m.arrivals_1s, vec![2, 1]);
        assert_eq!(m.retries_1s, vec![1, 0]);
        assert_eq!(m.total_requests, 3);
    }

    #[test]
    fn peaks_pick_the_busiest_window_of_each_width() {
        let mut a = acc(Scenario::e03b());
        // 5 arrivals in 100 ms window 3, then 2 in each of windows 10..=13 (1 s window 1).
        for _ in 0..5 {
            a.arrival(350_000, Some(1));
        }
        for k in 10..14 {
            a.arrival(k * 100_000 + 1, Some(1));
            a.arrival(k * 100_000 + 2, Some(1));
        }
        let m = a.finish();
        assert_eq!(m.peak_100ms, 5);
        assert_eq!(m.peak_1s, 8);
    }

    #[test]
    fn percentiles_cover_all_operations_failures_included() {
        let mut a = acc(Scenario::e03a());
        // 100 operations of 1..=100 ms; the slowest five failed.
        for i in 1..=100u64 {
            op(
                &mut a,
                0,
                0,
                i * 1000,
                i <= 95,
                (i > 95).then_some(GiveUp::Deadline),
                Priority::Critical,
            );
        }
        let m = a.finish();
        assert!((m.p95_ms - 95.0).abs() < 0.1, "{}", m.p95_ms);
        assert!((m.p99_ms - 99.0).abs() < 0.1, "{}", m.p99_ms);
        assert_eq!(m.operations, 100);
    }

    #[test]
    fn e03b_success_counts_only_operations_started_in_the_affected_window() {
        let mut a = acc(Scenario::e03b()); // affected: [8.5 s, 15.0 s)
        op(
            &mut a,
            0,
            1_000_000,
            1_100_000,
            false,
            Some(GiveUp::Deadline),
            Priority::Critical,
        ); // before: ignored
        op(
            &mut a,
            0,
            8_499_999,
            9_000_000,
            false,
            Some(GiveUp::Deadline),
            Priority::Critical,
        ); // just before
        op(
            &mut a,
            0,
            8_500_000,
            10_500_000,
            true,
            None,
            Priority::Critical,
        ); // first affected
        op(
            &mut a,
            0,
            12_000_000,
            12_100_000,
            false,
            Some(GiveUp::AttemptsExhausted),
            Priority::Critical,
        );
        op(
            &mut a,
            0,
            14_999_999,
            15_100_000,
            true,
            None,
            Priority::Critical,
        );
        op(
            &mut a,
            0,
            15_000_000,
            15_100_000,
            false,
            Some(GiveUp::Deadline),
            Priority::Critical,
        ); // after: ignored
        let m = a.finish();
        assert!((m.success_affected - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(m.operations, 6);
    }

    #[test]
    fn e03a_success_is_over_all_operations_and_has_no_recovery() {
        let mut a = acc(Scenario::e03a());
        op(&mut a, 0, 0, 10, true, None, Priority::Critical);
        op(
            &mut a,
            0,
            20_000_000,
            20_000_010,
            false,
            Some(GiveUp::NotRetryable),
            Priority::Critical,
        );
        op(
            &mut a,
            0,
            29_000_000,
            29_000_010,
            true,
            None,
            Priority::Critical,
        );
        op(
            &mut a,
            0,
            29_000_000,
            29_000_010,
            true,
            None,
            Priority::Critical,
        );
        let m = a.finish();
        assert_eq!(m.success_affected, 0.75);
        assert_eq!(m.recovery_s, None);
        assert_eq!(acc(Scenario::e03a()).finish().success_affected, 1.0);
    }

    #[test]
    fn retries_and_denials_are_counted() {
        let mut a = acc(Scenario::e03b());
        a.attempt(1, 0, 10);
        a.attempt(2, 100, 100);
        a.attempt(3, 200, 250);
        op(
            &mut a,
            0,
            0,
            300,
            false,
            Some(GiveUp::BudgetDenied),
            Priority::Critical,
        );
        op(
            &mut a,
            0,
            0,
            300,
            false,
            Some(GiveUp::Deadline),
            Priority::Critical,
        );
        let m = a.finish();
        assert_eq!((m.retries_sent, m.retries_denied), (2, 1));
        assert_eq!(
            (m.fidelity, m.matched),
            (None, None),
            "no live inputs given"
        );
    }

    /// Operations ending in 1 s windows after the freeze end (10 s by default).
    fn recovery_of(ops: &[(u64, bool)]) -> Option<u64> {
        let mut a = acc(Scenario::e03b());
        for &(end_us, ok) in ops {
            op(
                &mut a,
                0,
                end_us.saturating_sub(1000),
                end_us,
                ok,
                None,
                Priority::Critical,
            );
        }
        a.finish().recovery_s
    }

    #[test]
    fn recovery_zero_one_two_and_never() {
        // Never drops (a failure before the freeze end does not count).
        assert_eq!(
            recovery_of(&[(9_000_000, false), (10_000_000, true)]),
            Some(0)
        );
        // Nothing ended after the freeze (a run stopped before it): nothing measured.
        assert_eq!(recovery_of(&[]), None);
        assert_eq!(recovery_of(&[(9_000_000, false)]), None);
        // Window 0 fails, window 1 recovers.
        assert_eq!(
            recovery_of(&[(10_000_000, false), (10_999_999, true), (11_000_000, true)]),
            Some(1)
        );
        // Windows 0 and 1 fail, window 2 (empty) skipped... window 3 recovers.
        assert_eq!(
            recovery_of(&[(10_500_000, false), (11_500_000, false), (13_100_000, true)]),
            Some(3)
        );
        // Window 1 empty is skipped: recovery at 2.
        assert_eq!(
            recovery_of(&[(10_500_000, false), (12_000_000, true)]),
            Some(2)
        );
        // Never recovers: no figure, and `recovered` says so.
        assert_eq!(
            recovery_of(&[(10_500_000, false), (11_500_000, false)]),
            None
        );
    }

    #[test]
    fn recovery_counts_from_the_end_of_a_down_phase_when_there_is_no_freeze() {
        // `breaker`: the dependency is down (503) for the first 6 s, no freeze.
        let scenario = Scenario::named("breaker").unwrap();
        let params = Params::for_scenario(&scenario, &Default::default()).unwrap();
        let mut a = RunAccumulator::new(scenario, &params, "breaker", 42);
        // Failures until 7.5 s (window 1 after the end), successes from 8 s (window 2).
        for (end_us, ok) in [(5_000_000, false), (6_200_000, false), (7_500_000, false)] {
            op(
                &mut a,
                0,
                end_us - 1000,
                end_us,
                ok,
                None,
                Priority::Critical,
            );
        }
        op(
            &mut a,
            0,
            7_999_000,
            8_000_000,
            true,
            None,
            Priority::Critical,
        );
        assert_eq!(a.finish().recovery_s, Some(2));
    }

    #[test]
    fn recovery_threshold_is_99_percent() {
        let mut w = vec![(0, 1)];
        w.push((99, 100));
        assert_eq!(recovery_s(&w), Some(1));
        w[1] = (98, 100);
        assert_eq!(recovery_s(&w), None);
    }

    #[test]
    fn far_times_do_not_grow_series() {
        let mut a = acc(Scenario::e03b());
        a.arrival(u64::MAX, Some(2));
        op(&mut a, 0, 0, u64::MAX, true, None, Priority::Critical);
        let m = a.finish();
        assert_eq!((m.total_requests, m.arrivals_100ms.len()), (1, 0));
    }

    /// Two best-effort operations (one succeeds) and three critical ones (all succeed): the
    /// critical tally is the rest of the operations.
    #[test]
    fn operations_are_tallied_by_class() {
        let mut a = acc(Scenario::e03b());
        for (ok, class) in [
            (true, Priority::BestEffort),
            (false, Priority::BestEffort),
            (true, Priority::Critical),
            (true, Priority::Critical),
            (true, Priority::Critical),
        ] {
            op(&mut a, 0, 0, 1000, ok, None, class);
        }
        let m = a.finish();
        assert_eq!((m.best_effort.operations, m.best_effort.succeeded), (2, 1));
        assert_eq!(m.best_effort.success(), Some(0.5));
        assert_eq!(
            m.critical(),
            ClassTally {
                operations: 3,
                succeeded: 3
            }
        );
        assert_eq!(ClassTally::default().success(), None);
    }
}
