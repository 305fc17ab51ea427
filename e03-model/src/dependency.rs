//! The dependency's capacity model: a bounded worker pool, a bounded FIFO queue, a freeze that
//! holds everything and releases it as 503 at its end, a degraded window with a longer service
//! time, (E03-A) transient faults, and rate-limited windows that answer 429 with a
//! `Retry-After` (the rate-limit article).
//!
//! The model is a state machine driven by its caller:
//!
//! - [`DependencyModel::arrive`] for each request, *after* the caller logged the arrival;
//! - [`DependencyModel::work_done`] when a request's service time has elapsed;
//! - [`DependencyModel::freeze_begins`] and [`DependencyModel::freeze_ends`] at the freeze's edges.
//!
//! Each returns what the caller must do (start work for a request, answer it, or wait). Its one
//! caller is [`crate::schedule::DependencySchedule`], which turns those decisions into due
//! instants in logical time; the live service and the simulator both drive that schedule.
//!
//! A request whose client has given up keeps its worker until its work is done: the model never
//! hears about client timeouts, as a real server would not.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;
use std::time::Duration;

use crate::faults::{Fate, FaultModel};
use crate::sliding_window::SlidingWindow;
use crate::timeline::{Phase, Timeline};

/// The service's own number for a request, in arrival order from 0.
pub type ReqId = u64;

/// The static description of one dependency instance.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ServiceConfig {
    /// Requests served at once. Default 10 (`E03_WORKERS`).
    pub workers: usize,
    /// Waiting requests beyond the workers. Default 100 (`E03_QUEUE`).
    pub queue: usize,
    /// Normal service time of one request. Default 40 ms (`E03_SERVICE_MS`).
    pub service_time: Duration,
    pub timeline: Timeline,
    pub faults: FaultModel,
    /// Seed of the fault fates.
    pub seed: u64,
    /// The order the queue is served in and what it sheds. Default FIFO without timeouts
    /// (`E03_QUEUE_POLICY`).
    #[serde(default)]
    pub queue_policy: QueuePolicy,
    /// Which requests are admitted before workers and queue are asked (`E03_ADMISSION`):
    /// every one (the default), by deadline ([`Admission::Late`]) or by priority
    /// ([`Admission::Shed`]).
    #[serde(default)]
    pub admission: AdmissionRule,
    /// Under priority admission, the share of the workers kept for critical requests
    /// (`E03_PRIORITY_RESERVE`, default 0.2, Stripe's figure).
    #[serde(default = "default_priority_reserve")]
    pub priority_reserve: f64,
    /// An adaptive concurrency limit in front of workers and queue (`E03_CONCURRENCY_LIMIT`,
    /// [`crate::limit`]): a request arriving while the limit's worth of requests are in the
    /// dependency is refused at once ([`Admission::Limited`]). Default none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency_limit: Option<ConcurrencyLimit>,
}

fn default_priority_reserve() -> f64 {
    AdmissionRule::DEFAULT_RESERVE
}

/// Which requests a dependency admits before its workers and queue are asked.
///
/// - `All`: every one, as workers and queue allow.
/// - `Deadline`: deadline-aware admission (AWS Builders' Library, "Using load shedding to avoid
///   overload"; the reliability-patterns article): a request whose caller's deadline has passed, or would pass before
///   its expected finish, is refused at once ([`Admission::Late`]).
/// - `Priority`: Stripe's fleet usage load shedder ("Scaling your API with rate limiters",
///   Paul Tarjan, 2017; the reliability-patterns article's example): a share of the capacity is reserved for critical
///   requests, 20% in the post, so best-effort requests may hold at most the other 80%. Here
///   the capacity is the workers: a best-effort request ([`crate::priority::Priority`]) that
///   arrives while `floor((1 - reserve) x workers)` best-effort requests are in the dependency
///   (on a worker or queued) is answered 503 at once, without work ([`Admission::Shed`]).
///   Critical requests are admitted as workers and queue allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AdmissionRule {
    #[default]
    All,
    Deadline,
    Priority,
}

impl AdmissionRule {
    /// What `E03_ADMISSION` and a strategy table's `admission` accept.
    pub const ACCEPTS: &'static str = "all, deadline or priority";
    /// Stripe's reservation for critical requests: 20%.
    pub const DEFAULT_RESERVE: f64 = 0.2;

    pub fn parse(name: &str) -> Option<AdmissionRule> {
        match name {
            "all" => Some(AdmissionRule::All),
            "deadline" => Some(AdmissionRule::Deadline),
            "priority" => Some(AdmissionRule::Priority),
            _ => None,
        }
    }

    /// Best-effort requests a dependency with `workers` workers may hold at once under
    /// priority admission, `reserve` of the workers being kept for critical ones.
    pub fn best_effort_slots(workers: usize, reserve: f64) -> usize {
        // The small term keeps 0.8 x 10 at 8 whatever the float's last bit.
        (((1.0 - reserve) * workers as f64) + 1e-9).floor().max(0.0) as usize
    }
}

/// What a request says of its caller: when it gives up (the deadline header, as an instant)
/// and its class (the priority header).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Caller {
    pub deadline: Option<Duration>,
    pub class: crate::priority::Priority,
}

use crate::limit::LimitState;
pub use crate::limit::{AimdLimit, ConcurrencyLimit, Gradient2Limit, LimitKind};

/// How the dependency serves its queue, after Facebook's "Fail at Scale" (Ben Maurer, ACM Queue
/// 13(8), 2015, "Controlled delay" and "Adaptive LIFO"):
///
/// - [`QueueDiscipline::Fifo`]: first come, first served; nobody is dropped (the lab's E03
///   dependency, and the default);
/// - [`QueueDiscipline::Codel`]: a queue timeout set when a request is queued. If the queue was
///   last empty more than `interval` ago (a standing queue), the request may wait `target`;
///   otherwise `interval`. A request still waiting at its timeout is dropped and answered 503
///   at once ([`crate::events::Cause::QueueTimeout`]), having cost no work. The article's
///   pseudo-code, with its values M = 5 ms and N = 100 ms:
///
///   ```text
///   onNewRequest(req, queue):
///     if (queue.lastEmptyTime() < (now - N ms)) { timeout = M ms } else { timeout = N ms }
///     queue.enqueue(req, timeout)
///   ```
/// - [`QueueDiscipline::AdaptiveLifo`]: the same timeouts, and while the queue is standing the
///   freed worker takes the *newest* request (last in, first out), whose caller is most likely
///   still waiting; FIFO otherwise.
///
/// Defaults: FIFO, `target` 5 ms, `interval` 100 ms (the article's M and N).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct QueuePolicy {
    pub discipline: QueueDiscipline,
    /// The article's M: how long a request may wait in a standing queue.
    pub target: Duration,
    /// The article's N: how long a request may wait otherwise, and how long a queue must have
    /// stayed non-empty to be standing.
    pub interval: Duration,
}

/// See [`QueuePolicy`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueDiscipline {
    #[default]
    Fifo,
    Codel,
    AdaptiveLifo,
}

impl QueueDiscipline {
    /// What `E03_QUEUE_POLICY` and a strategy table's `queue_policy` accept.
    pub const ACCEPTS: &'static str = "fifo, codel or adaptive_lifo";

    /// The discipline a name stands for.
    pub fn parse(name: &str) -> Option<QueueDiscipline> {
        match name {
            "fifo" => Some(QueueDiscipline::Fifo),
            "codel" => Some(QueueDiscipline::Codel),
            "adaptive_lifo" => Some(QueueDiscipline::AdaptiveLifo),
            _ => None,
        }
    }
}

impl Default for QueuePolicy {
    fn default() -> Self {
        QueuePolicy {
            discipline: QueueDiscipline::Fifo,
            target: Duration::from_millis(5),
            interval: Duration::from_millis(100),
        }
    }
}

impl ServiceConfig {
    /// Requests per second the pool completes at normal service time (the heavy tail's mean
    /// included, [`FaultModel::mean_service_factor`]).
    pub fn capacity_per_s(&self) -> f64 {
        self.workers as f64 / (self.service_time.as_secs_f64() * self.faults.mean_service_factor())
    }
}

/// What happens to a request when it arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// A worker takes it now; call `work_done` after `service` has elapsed.
    Start { service: Duration },
    /// Every worker is busy; it waits in the queue and will be started by a later `work_done`.
    Queued,
    /// Workers and queue are full: answer 503 at once.
    Rejected,
    /// The concurrency limit is reached ([`AimdLimit`]): answer 503 at once, no work done.
    Limited,
    /// The service is frozen: it is held and answered 503 when the freeze ends.
    Held,
    /// The service is down: answer `status` after `latency` (zero: at once), no work done, no
    /// worker or queue place taken.
    Refused { status: u16, latency: Duration },
    /// The service is rate limited and this request is over the limit: answer 429 at once with
    /// this `Retry-After`; no work done, no worker or queue place taken.
    Throttled { retry_after: Duration },
    /// Deadline-aware admission: the caller's deadline has passed, or its expected finish is
    /// after it. Answer [`crate::chain::DEADLINE_STATUS`] (504) at once; no work done, no worker
    /// or queue place taken.
    Late,
    /// Priority admission ([`AdmissionRule::Priority`]): a best-effort request over its share
    /// of the workers. Answer 503 at once; no work done.
    Shed,
}

/// How a request whose work is done is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completion {
    /// Answer now with this status.
    Respond(u16),
    /// Answer 200, but only after this extra delay (the worker is already free).
    RespondLate(u16, Duration),
    /// The work is done and committed, but the answer (this status) is lost: the connection is
    /// reset (the retry-logic article).
    Lost(u16),
    /// The request is wrong in itself: answer this permanent status; nothing committed.
    Permanent(u16),
    /// Timed out before any output (the rate-limit article): answer [`crate::faults::TIMEOUT_STATUS`] now.
    Timeout,
    /// Output cut off (the rate-limit article): answer [`crate::faults::CUTOFF_STATUS`] now.
    Cutoff,
    /// The request is no longer in service (the freeze took it over, to answer it 503 when it
    /// ends); nothing to do.
    Stale,
}

/// Result of [`DependencyModel::work_done`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkDone {
    pub completion: Completion,
    /// The queued request the freed worker starts now, with its service time.
    pub next: Option<(ReqId, Duration)>,
}

/// Each admitted request's arrival and in-flight count when it was admitted, by id.
type Samples = FxHashMap<ReqId, (Duration, u32)>;

/// Live state of one dependency instance.
#[derive(Debug)]
pub struct DependencyModel {
    cfg: ServiceConfig,
    /// Requests on a worker now, with their fault key, so a freeze can hold them and a stale
    /// `work_done` (after the freeze released them) can be recognised.
    in_service: FxHashMap<ReqId, u64>,
    /// Requests waiting for a worker, oldest first, with their fault keys (served from the
    /// front, or from the back under adaptive LIFO).
    queue: VecDeque<(ReqId, u64)>,
    /// When the queue was last empty: the instant a request was queued into an empty queue
    /// ([`QueuePolicy`]'s "last empty time").
    last_empty: Duration,
    /// The timeout of the request queued last, if the policy gives one.
    last_timeout: Option<Duration>,
    /// Requests held by the current freeze, answered 503 when it ends.
    held: Vec<ReqId>,
    /// True between `freeze_begins` and `freeze_ends`.
    frozen: bool,
    /// The sliding window of the current rate-limited phase.
    limiter: SlidingWindow,
    /// The concurrency limit now, and each admitted request's arrival and in-flight count
    /// when it was admitted (its sample when it leaves); `None` without [`AimdLimit`].
    limit: Option<(LimitState, Samples)>,
    /// Best-effort requests in the dependency (on a worker or queued) under priority
    /// admission ([`AdmissionRule::Priority`]).
    best_effort: rustc_hash::FxHashSet<ReqId>,
}

impl DependencyModel {
    pub fn new(cfg: ServiceConfig) -> Self {
        Self {
            in_service: FxHashMap::with_capacity_and_hasher(cfg.workers, Default::default()),
            queue: VecDeque::with_capacity(cfg.queue),
            last_empty: Duration::ZERO,
            last_timeout: None,
            held: Vec::new(),
            frozen: false,
            limiter: SlidingWindow::default(),
            limit: cfg
                .concurrency_limit
                .map(|l| (LimitState::start(&l), FxHashMap::default())),
            best_effort: Default::default(),
            cfg,
        }
    }

    /// The concurrency limit now ([`crate::limit`]), if the dependency has one.
    pub fn concurrency_limit(&self) -> Option<u32> {
        self.limit.as_ref().map(|(state, _)| state.limit())
    }

    /// Request `id` left the dependency at `now` (answered, or `dropped` by a queue timeout or
    /// a freeze): its sample moves the concurrency limit, and a best-effort one frees its slot.
    fn left(&mut self, now: Duration, id: ReqId, dropped: bool) {
        self.best_effort.remove(&id);
        self.sample(now, id, dropped);
    }

    fn sample(&mut self, now: Duration, id: ReqId, dropped: bool) {
        let Some((state, admitted)) = self.limit.as_mut() else {
            return;
        };
        if let Some((arrived, inflight)) = admitted.remove(&id) {
            state.sample(now.saturating_sub(arrived), inflight, dropped);
        }
    }

    pub fn config(&self) -> &ServiceConfig {
        &self.cfg
    }

    pub fn busy_workers(&self) -> usize {
        self.in_service.len()
    }

    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// A request arrives at `now`. `key` identifies it for its fault fate (see
    /// [`crate::faults::request_key`]); a caller without client identity may pass `id`.
    pub fn arrive(&mut self, now: Duration, id: ReqId, key: u64) -> Admission {
        self.arrive_by(now, id, key, Caller::default())
    }

    /// [`Self::arrive`] for a request whose caller said when it gives up, or its class.
    pub fn arrive_by(&mut self, now: Duration, id: ReqId, key: u64, caller: Caller) -> Admission {
        if let Some((i, limit)) = self.cfg.timeline.rate_limit_at(now) {
            let limit = *limit;
            if let Some(retry_after) = self.limiter.check(i, &limit, now) {
                return Admission::Throttled { retry_after };
            }
        }
        match self.cfg.timeline.phase(now) {
            _ if self.frozen => {}
            Phase::Frozen => {}
            Phase::Down(status) => {
                let latency = self
                    .cfg
                    .timeline
                    .down_at(now)
                    .map_or(Duration::ZERO, |d| d.latency);
                return Admission::Refused { status, latency };
            }
            Phase::Normal | Phase::Degraded => {
                if self.late(now, caller.deadline) {
                    return Admission::Late;
                }
                let best_effort = caller.class == crate::priority::Priority::BestEffort
                    && self.cfg.admission == AdmissionRule::Priority;
                if best_effort
                    && self.best_effort.len()
                        >= AdmissionRule::best_effort_slots(
                            self.cfg.workers,
                            self.cfg.priority_reserve,
                        )
                {
                    return Admission::Shed;
                }
                let admission = self.admit(now, id, key);
                if best_effort && matches!(admission, Admission::Start { .. } | Admission::Queued) {
                    self.best_effort.insert(id);
                }
                return admission;
            }
        }
        self.held.push(id);
        Admission::Held
    }

    /// Under deadline-aware admission, whether a request arriving at `now` with this deadline
    /// is refused: the deadline has passed, or the request's expected finish is after it. The
    /// expected finish, in FIFO order, assumes every worker has just started its request: with
    /// `q` requests queued and `w` workers, a worker is free after `(q / w + 1)` service times
    /// (none if a worker is free now), then the request takes one more.
    fn late(&self, now: Duration, deadline: Option<Duration>) -> bool {
        let (AdmissionRule::Deadline, Some(deadline)) = (self.cfg.admission, deadline) else {
            return false;
        };
        let service = self.service_time(now);
        let wait = if self.in_service.len() < self.cfg.workers {
            Duration::ZERO
        } else {
            service * (self.queue.len() / self.cfg.workers.max(1) + 1) as u32
        };
        deadline <= now || now + wait + service > deadline
    }

    /// A worker, the queue, or a 503 when both are full (or the concurrency limit is reached).
    fn admit(&mut self, now: Duration, id: ReqId, key: u64) -> Admission {
        let inflight = (self.in_service.len() + self.queue.len()) as u32;
        let fits = self.in_service.len() < self.cfg.workers || self.queue.len() < self.cfg.queue;
        if let Some((state, admitted)) = self.limit.as_mut() {
            if inflight >= state.limit() {
                return Admission::Limited;
            }
            if fits {
                admitted.insert(id, (now, inflight + 1));
            }
        }
        if self.in_service.len() < self.cfg.workers {
            self.in_service.insert(id, key);
            return Admission::Start {
                service: self.service_of(now, key),
            };
        }
        if self.queue.len() < self.cfg.queue {
            let policy = self.cfg.queue_policy;
            self.last_timeout = match policy.discipline {
                QueueDiscipline::Fifo => None,
                QueueDiscipline::Codel | QueueDiscipline::AdaptiveLifo => {
                    Some(if self.standing(now) {
                        policy.target
                    } else {
                        policy.interval
                    })
                }
            };
            if self.queue.is_empty() {
                self.last_empty = now;
            }
            self.queue.push_back((id, key));
            return Admission::Queued;
        }
        Admission::Rejected
    }

    /// The service time of request `id` (started earlier) has elapsed at `now`.
    pub fn work_done(&mut self, now: Duration, id: ReqId) -> WorkDone {
        let Some(key) = self.in_service.get(&id).copied() else {
            return WorkDone {
                completion: Completion::Stale,
                next: None,
            };
        };
        // While frozen nothing is in service (`freeze_begins` moved it to `held`, and arrivals
        // are held), so a request found here finishes normally.
        self.in_service.remove(&id);
        self.left(now, id, false);
        let completion = match self.cfg.faults.fate(self.cfg.seed, key) {
            Fate::Ok => Completion::Respond(200),
            Fate::Fail => Completion::Respond(503),
            Fate::Slow(d) => Completion::RespondLate(200, d),
            Fate::Lost => Completion::Lost(200),
            Fate::Permanent(status) => Completion::Permanent(status),
            Fate::Timeout => Completion::Timeout,
            Fate::Cutoff => Completion::Cutoff,
        };
        let lifo =
            self.cfg.queue_policy.discipline == QueueDiscipline::AdaptiveLifo && self.standing(now);
        let next = if lifo {
            self.queue.pop_back()
        } else {
            self.queue.pop_front()
        };
        let next = next.map(|(next, next_key)| {
            self.in_service.insert(next, next_key);
            (next, self.service_of(now, next_key))
        });
        WorkDone { completion, next }
    }

    /// Whether the queue is standing at `now`: not empty, and last empty more than the policy's
    /// interval ago.
    fn standing(&self, now: Duration) -> bool {
        !self.queue.is_empty() && self.last_empty + self.cfg.queue_policy.interval < now
    }

    /// The queue timeout of the request just queued ([`Admission::Queued`]): how long after
    /// `now` it is dropped if still waiting; `None` under FIFO.
    pub fn queue_timeout(&self) -> Option<Duration> {
        self.last_timeout
    }

    /// Request `id`'s queue timeout has passed: whether it was still waiting (it is dropped
    /// now, to be answered 503), or had got a worker or been held by a freeze meanwhile.
    pub fn expire(&mut self, now: Duration, id: ReqId) -> bool {
        match self.queue.iter().position(|&(q, _)| q == id) {
            Some(i) => {
                self.queue.remove(i);
                self.left(now, id, true);
                true
            }
            None => false,
        }
    }

    /// The freeze begins: everything in service or queued is held from now on.
    pub fn freeze_begins(&mut self, _now: Duration) {
        self.frozen = true;
        let mut in_service: Vec<ReqId> = self.in_service.drain().map(|(id, _)| id).collect();
        in_service.sort_unstable();
        self.held.extend(in_service);
        self.held.extend(self.queue.drain(..).map(|(id, _)| id));
    }

    /// The freeze ends: every held request must be answered 503 now. Workers and queue are empty
    /// afterwards.
    pub fn freeze_ends(&mut self, now: Duration) -> Vec<ReqId> {
        self.frozen = false;
        let held = std::mem::take(&mut self.held);
        for &id in &held {
            self.left(now, id, true);
        }
        held
    }

    fn service_time(&self, now: Duration) -> Duration {
        self.cfg.timeline.service_time(now, self.cfg.service_time)
    }

    /// Request `key`'s service time if it starts at `now`: the timeline's, times its heavy
    /// tail's factor ([`FaultModel::service_factor`]).
    fn service_of(&self, now: Duration, key: u64) -> Duration {
        let factor = self.cfg.faults.service_factor(self.cfg.seed, key);
        let base = self.service_time(now);
        if factor == 1.0 {
            base
        } else {
            base.mul_f64(factor)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::{DegradedWindow, DownWindow, FreezeWindow, RateLimitWindow};

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn cfg(workers: usize, queue: usize) -> ServiceConfig {
        ServiceConfig {
            workers,
            queue,
            service_time: ms(40),
            timeline: Timeline {
                freeze: Some(FreezeWindow {
                    start: ms(8500),
                    end: ms(10_000),
                }),
                degraded: Some(DegradedWindow {
                    start: ms(10_000),
                    end: ms(15_000),
                    capacity_factor: 0.5,
                }),
                down: Vec::new(),
                rate_limited: Vec::new(),
                wire: Vec::new(),
                http: Vec::new(),
            },
            faults: FaultModel::default(),
            seed: 42,
            queue_policy: QueuePolicy::default(),
            admission: AdmissionRule::All,
            priority_reserve: AdmissionRule::DEFAULT_RESERVE,
            concurrency_limit: None,
        }
    }

    /// One worker, a limit from 2 that may range over 1..=3, halved by a drop or a round trip
    /// over 60 ms; every figure computed by hand from the rule above.
    #[test]
    fn an_aimd_limited_dependency_refuses_at_once_what_is_over_its_limit() {
        let mut m = DependencyModel::new(ServiceConfig {
            concurrency_limit: Some(ConcurrencyLimit::Aimd(AimdLimit {
                initial: 2,
                min: 1,
                max: 3,
                backoff_ratio: 0.5,
                timeout: ms(60),
            })),
            ..cfg(1, 10)
        });
        let start = Admission::Start { service: ms(40) };
        assert_eq!(m.arrive(ms(0), 0, 0), start);
        assert_eq!(m.arrive(ms(0), 1, 1), Admission::Queued);
        assert_eq!(m.arrive(ms(0), 2, 2), Admission::Limited, "2 in, limit 2");
        // Request 0: 40 ms, admitted with 1 in flight (1 x 2 >= 2): the limit grows to 3.
        assert_eq!(m.work_done(ms(40), 0).next, Some((1, ms(40))));
        assert_eq!(m.concurrency_limit(), Some(3));
        assert_eq!(m.arrive(ms(40), 3, 3), Admission::Queued);
        assert_eq!(m.arrive(ms(41), 4, 4), Admission::Queued);
        assert_eq!(m.arrive(ms(42), 5, 5), Admission::Limited, "3 in, limit 3");
        // Request 1 waited: 80 ms > 60 ms, the limit halves to 1 (3 x 0.5 rounded down).
        assert_eq!(m.work_done(ms(80), 1).next, Some((3, ms(40))));
        assert_eq!(m.concurrency_limit(), Some(1));
        assert_eq!(m.arrive(ms(81), 6, 6), Admission::Limited, "2 in, limit 1");
        m.work_done(ms(120), 3);
        m.work_done(ms(160), 4);
        assert_eq!(m.concurrency_limit(), Some(1), "at its min");
        assert_eq!(m.arrive(ms(161), 7, 7), start, "empty again: 0 in, limit 1");
        // Without a limit nothing is limited.
        let mut plain = DependencyModel::new(cfg(1, 10));
        assert_eq!(plain.concurrency_limit(), None);
        for id in 0..5 {
            assert_ne!(plain.arrive(ms(0), id, id), Admission::Limited);
        }
    }

    #[test]
    fn a_down_phase_refuses_at_once_and_keeps_the_pool_empty() {
        let mut c = cfg(1, 1);
        c.timeline.down.push(DownWindow {
            start: ms(1000),
            end: ms(2000),
            status: 500,
            latency: Duration::ZERO,
        });
        let mut m = DependencyModel::new(c);
        assert_eq!(
            m.arrive(ms(999), 0, 0),
            Admission::Start { service: ms(40) }
        );
        assert_eq!(
            m.arrive(ms(1000), 1, 1),
            Admission::Refused {
                status: 500,
                latency: Duration::ZERO
            }
        );
        assert_eq!(m.queued(), 0, "a refused request takes no queue slot");
        assert_eq!(
            m.arrive(ms(2000), 2, 2),
            Admission::Queued,
            "up again at its end"
        );
    }

    fn limited(
        calls: u32,
        window_ms: u64,
        count_rejected: bool,
        retry_after_ms: Option<u64>,
    ) -> DependencyModel {
        let mut c = cfg(100, 100);
        c.timeline = Timeline::default();
        c.timeline.rate_limited.push(RateLimitWindow {
            start: ms(1000),
            end: ms(5000),
            calls,
            window: ms(window_ms),
            count_rejected,
            retry_after: retry_after_ms.map(ms),
        });
        DependencyModel::new(c)
    }

    fn throttled(m: &mut DependencyModel, at: u64, id: ReqId) -> Option<Duration> {
        match m.arrive(ms(at), id, id) {
            Admission::Throttled { retry_after } => Some(retry_after),
            Admission::Start { .. } => None,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_sliding_window_admits_calls_per_window_and_says_when_it_admits_again() {
        // 3 calls per 300 ms, rejected calls not counted.
        let mut m = limited(3, 300, false, None);
        assert_eq!(
            throttled(&mut m, 999, 0),
            None,
            "before the phase: no limit"
        );
        assert_eq!(throttled(&mut m, 1000, 1), None);
        assert_eq!(throttled(&mut m, 1100, 2), None);
        assert_eq!(throttled(&mut m, 1200, 3), None);
        // The 4th in [1000, 1300): the 1000 ms call leaves at 1300.
        assert_eq!(throttled(&mut m, 1250, 4), Some(ms(50)));
        assert_eq!(m.busy_workers(), 4, "the rejected call took no worker");
        assert_eq!(throttled(&mut m, 1299, 5), Some(ms(1)));
        // Half-open: at 1300 the first call has left, and the rejections did not count.
        assert_eq!(throttled(&mut m, 1300, 6), None);
        assert_eq!(
            throttled(&mut m, 1300, 7),
            Some(ms(100)),
            "1100 leaves at 1400"
        );
        // After the phase: no limit.
        for id in 10..20 {
            assert_eq!(throttled(&mut m, 5000, id), None);
        }
    }

    #[test]
    fn counting_rejected_calls_keeps_a_busy_client_locked_out() {
        // The same arrivals as above, rejected calls counted (the seed's endpoint).
        let mut m = limited(3, 300, true, None);
        for (at, id) in [(1000, 1), (1100, 2), (1200, 3)] {
            assert_eq!(throttled(&mut m, at, id), None);
        }
        // Counted: 1000, 1100, 1200 and this one. Admission needs at most 2 counted in the
        // window: the 2nd oldest (1100) must leave, at 1400 (not 1300 as when not counted).
        assert_eq!(throttled(&mut m, 1250, 4), Some(ms(150)));
        // Counted: 1000, 1100, 1200, 1250, 1299: the 3rd oldest (1200) leaves at 1500.
        assert_eq!(throttled(&mut m, 1299, 5), Some(ms(201)));
        // At 1300 only 1000 has left; not counting rejections, this call was admitted.
        assert_eq!(throttled(&mut m, 1300, 6), Some(ms(250)));
        // At 1549: 1250, 1299, 1300 remain; with this one, 1299 must leave (1599).
        assert_eq!(throttled(&mut m, 1549, 7), Some(ms(50)));
        assert_eq!(
            throttled(&mut m, 1599, 8),
            None,
            "1300 and 1549 remain: 2 < 3"
        );
    }

    #[test]
    fn a_fixed_retry_after_is_sent_as_written() {
        let mut m = limited(1, 1000, true, Some(250));
        assert_eq!(throttled(&mut m, 1000, 0), None);
        assert_eq!(throttled(&mut m, 1001, 1), Some(ms(250)));
        assert_eq!(throttled(&mut m, 1999, 2), Some(ms(250)));
    }

    /// Deadline-aware admission, by hand: two 40 ms workers. A request is refused when its
    /// deadline has passed, or when now + wait + 40 ms passes it, the wait being 40 ms times
    /// (queued / 2 + 1) once both workers are busy. Without a deadline, or with admission off,
    /// nothing is refused for time.
    #[test]
    fn deadline_admission_refuses_what_cannot_finish_in_time() {
        let mut m = DependencyModel::new(ServiceConfig {
            admission: AdmissionRule::Deadline,
            ..cfg(2, 10)
        });
        let start = Admission::Start { service: ms(40) };
        let by = |t| Caller {
            deadline: Some(ms(t)),
            ..Caller::default()
        };
        assert_eq!(m.arrive_by(ms(0), 0, 0, by(100)), start);
        assert_eq!(m.arrive_by(ms(0), 1, 1, by(30)), Admission::Late, "40 > 30");
        assert_eq!(m.arrive_by(ms(0), 2, 2, by(40)), start, "finishes at 40");
        assert_eq!(
            m.arrive_by(ms(1), 3, 3, by(81)),
            Admission::Queued,
            "1 + 40 + 40"
        );
        assert_eq!(m.arrive_by(ms(1), 4, 4, by(80)), Admission::Late);
        assert_eq!(m.arrive_by(ms(2), 5, 5, by(122)), Admission::Queued);
        // Two queued: a worker is free after 40 x (2 / 2 + 1) = 80 ms.
        assert_eq!(
            m.arrive_by(ms(2), 6, 6, by(121)),
            Admission::Late,
            "2 + 80 + 40"
        );
        assert_eq!(
            m.arrive_by(ms(3), 7, 7, by(3)),
            Admission::Late,
            "already passed"
        );
        assert_eq!(
            m.arrive_by(ms(3), 8, 8, Caller::default()),
            Admission::Queued
        );
        assert_eq!((m.busy_workers(), m.queued()), (2, 3));
        // Off: the same late request is served.
        let mut m = DependencyModel::new(cfg(2, 10));
        assert_eq!(m.arrive_by(ms(0), 1, 1, by(30)), start);
    }

    /// Priority admission, by hand: five 40 ms workers, 20% kept for critical requests, so
    /// best effort may hold floor(0.8 x 5) = 4 places (on a worker or queued); critical
    /// requests are admitted as workers and queue allow. A best effort's place frees when it
    /// is answered or dropped from the queue.
    #[test]
    fn priority_admission_sheds_best_effort_over_its_share() {
        use crate::priority::Priority::{BestEffort, Critical};
        assert_eq!(AdmissionRule::best_effort_slots(10, 0.2), 8);
        assert_eq!(AdmissionRule::best_effort_slots(3, 0.2), 2, "2.4");
        assert_eq!(AdmissionRule::best_effort_slots(10, 0.5), 5);
        assert_eq!(AdmissionRule::best_effort_slots(10, 1.0), 0);
        assert_eq!(AdmissionRule::best_effort_slots(10, 0.0), 10);
        let mut m = DependencyModel::new(ServiceConfig {
            admission: AdmissionRule::Priority,
            queue_policy: QueuePolicy {
                discipline: QueueDiscipline::Codel,
                ..QueuePolicy::default()
            },
            ..cfg(5, 10)
        });
        let start = Admission::Start { service: ms(40) };
        let who = |class| Caller {
            deadline: None,
            class,
        };
        for id in 0..4 {
            assert_eq!(m.arrive_by(ms(0), id, id, who(BestEffort)), start, "{id}");
        }
        assert_eq!(m.arrive_by(ms(0), 4, 4, who(BestEffort)), Admission::Shed);
        assert_eq!(m.arrive_by(ms(0), 5, 5, who(Critical)), start, "5th worker");
        assert_eq!(m.arrive_by(ms(0), 6, 6, who(Critical)), Admission::Queued);
        assert_eq!(m.arrive_by(ms(1), 7, 7, who(BestEffort)), Admission::Shed);
        // Request 0 is served; the queued critical 6 takes its worker; 3 best effort remain.
        let done = m.work_done(ms(40), 0);
        assert_eq!(done.next, Some((6, ms(40))));
        assert_eq!(
            m.arrive_by(ms(40), 8, 8, who(BestEffort)),
            Admission::Queued
        );
        assert_eq!(m.arrive_by(ms(40), 9, 9, who(BestEffort)), Admission::Shed);
        // 8 is dropped from the queue (its queue timeout): its place frees.
        assert!(m.expire(ms(140), 8));
        assert_eq!(
            m.arrive_by(ms(140), 10, 10, who(BestEffort)),
            Admission::Queued
        );
        assert_eq!(
            m.arrive_by(ms(140), 11, 11, who(Critical)),
            Admission::Queued
        );
        // Other rules never shed.
        let mut m = DependencyModel::new(cfg(5, 10));
        for id in 0..5 {
            assert_eq!(m.arrive_by(ms(0), id, id, who(BestEffort)), start);
        }
    }

    #[test]
    fn workers_then_queue_then_immediate_rejection() {
        let mut m = DependencyModel::new(cfg(2, 1));
        let t = ms(1000);
        assert_eq!(m.arrive(t, 0, 0), Admission::Start { service: ms(40) });
        assert_eq!(m.arrive(t, 1, 1), Admission::Start { service: ms(40) });
        assert_eq!(m.arrive(t, 2, 2), Admission::Queued);
        assert_eq!(m.arrive(t, 3, 3), Admission::Rejected);
        assert_eq!((m.busy_workers(), m.queued()), (2, 1));
    }

    #[test]
    fn finished_work_frees_its_worker_for_the_queue_head_in_fifo_order() {
        let mut m = DependencyModel::new(cfg(1, 2));
        m.arrive(ms(0), 0, 0);
        m.arrive(ms(1), 1, 1);
        m.arrive(ms(2), 2, 2);
        let done = m.work_done(ms(40), 0);
        assert_eq!(done.completion, Completion::Respond(200));
        assert_eq!(done.next, Some((1, ms(40))));
        let done = m.work_done(ms(80), 1);
        assert_eq!(done.next, Some((2, ms(40))));
        let done = m.work_done(ms(120), 2);
        assert_eq!(done.next, None);
        assert_eq!(m.busy_workers(), 0);
    }

    #[test]
    fn freeze_holds_everything_and_releases_it_as_503_at_its_end() {
        let mut m = DependencyModel::new(cfg(1, 1));
        m.arrive(ms(8480), 0, 0); // in service when the freeze begins
        m.arrive(ms(8490), 1, 1); // queued when the freeze begins
        m.freeze_begins(ms(8500));
        // During the freeze nothing is rejected for queue space, however many arrive.
        for id in 2..50 {
            assert_eq!(m.arrive(ms(9000), id, id), Admission::Held);
        }
        // The in-service request's timer fires during the freeze: it was already held.
        assert_eq!(m.work_done(ms(8520), 0).completion, Completion::Stale);
        let released = m.freeze_ends(ms(10_000));
        assert_eq!(released, (0..50).collect::<Vec<_>>());
        assert_eq!((m.busy_workers(), m.queued(), m.held()), (0, 0, 0));
    }

    #[test]
    fn arrival_inside_the_freeze_window_is_held_even_before_freeze_begins_is_called() {
        let mut m = DependencyModel::new(cfg(10, 100));
        assert_eq!(m.arrive(ms(8500), 0, 0), Admission::Held);
        assert_eq!(m.freeze_ends(ms(10_000)), vec![0]);
    }

    #[test]
    fn degraded_window_doubles_service_time_after_the_freeze() {
        let mut m = DependencyModel::new(cfg(1, 1));
        assert_eq!(
            m.arrive(ms(10_000), 0, 0),
            Admission::Start { service: ms(80) }
        );
        m.arrive(ms(10_001), 1, 1);
        assert_eq!(m.work_done(ms(15_010), 0).next, Some((1, ms(40))));
    }

    /// Everything in the tail (rate 1, factor 2.5): each request holds its worker 2.5 service
    /// times, 100 ms, whether it starts at once or from the queue; the capacity is 2.5 times
    /// lower (1 worker / 40 ms = 25/s, then 10/s).
    #[test]
    fn a_request_of_the_heavy_tail_holds_its_worker_its_factor_of_service_times() {
        let mut c = cfg(1, 1);
        c.timeline = Timeline::default();
        assert!((c.capacity_per_s() - 25.0).abs() < 1e-9);
        c.faults = FaultModel {
            tail_rate: 1.0,
            tail_factor: 2.5,
            ..FaultModel::default()
        };
        assert!((c.capacity_per_s() - 10.0).abs() < 1e-9);
        let mut m = DependencyModel::new(c);
        assert_eq!(m.arrive(ms(0), 0, 0), Admission::Start { service: ms(100) });
        assert_eq!(m.arrive(ms(1), 1, 1), Admission::Queued);
        let done = m.work_done(ms(100), 0);
        assert_eq!(done.completion, Completion::Respond(200));
        assert_eq!(done.next, Some((1, ms(100))));
    }

    #[test]
    fn transient_faults_answer_503_or_late_after_the_service_time() {
        let mut c = cfg(1, 0);
        c.timeline = Timeline::default();
        c.faults = FaultModel {
            fail_rate: 0.5,
            slow_rate: 0.5,
            slow_delay: ms(2500),
            ..FaultModel::default()
        };
        let mut m = DependencyModel::new(c);
        let mut seen = std::collections::HashSet::new();
        for id in 0..64 {
            m.arrive(ms(id * 100), id, id);
            let done = m.work_done(ms(id * 100 + 40), id);
            assert!(matches!(
                done.completion,
                Completion::Respond(503) | Completion::RespondLate(200, _)
            ));
            seen.insert(matches!(done.completion, Completion::Respond(503)));
            // The worker is free again even for a late answer.
            assert_eq!(m.busy_workers(), 0);
        }
        assert_eq!(seen.len(), 2, "both fates occur");
    }
}
