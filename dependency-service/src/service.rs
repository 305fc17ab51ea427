//! The service's shared state: the current run (if any), the log writer and the log directory.
//!
//! Starting and stopping runs is serialised by one async lock, so two control calls can never
//! interleave; the work path only reads the current run (a cheap `Arc` clone under a
//! `std::sync::Mutex`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use e03_model::events::RunTag;
use e03_model::shard::Shard;
use e03_plan::control::{self, RunCounts};
use e03_plan::{Params, Scenario};
use tokio::time::Instant;

use crate::metrics::Metrics;
use crate::run::{Run, RunSetup};
use e03_io::sink::{LogError, LogSink};

/// Strategy id and log file of a run started without a control call.
pub const STANDALONE: &str = "standalone";

/// How far from now a control call may put time zero.
pub const MAX_START_OFFSET: Duration = Duration::from_secs(3600);

/// A run to start, validated.
pub struct RunSpec {
    /// Run id for every record.
    pub run: String,
    pub scenario: Scenario,
    pub strategy: String,
    pub seed: u64,
    pub params: Params,
    pub start_unix_ms: u64,
    /// Time zero as a tokio instant.
    pub t0: Instant,
    /// True for the run started at process start without a control call.
    pub standalone: bool,
    /// The run's own directory under the log directory (`StartRun::run_dir`, validated).
    pub run_dir: Option<String>,
    /// The caller is this shard of a run split over swarm processes (`StartRun::shard`).
    pub shard: Option<Shard>,
    /// This dependency is that replica of the run's (`StartRun::replica`).
    pub replica: Option<u32>,
}

impl RunSpec {
    /// The standalone run: time zero now, seed from the parameters.
    pub fn standalone(scenario: Scenario, params: Params) -> RunSpec {
        let start_unix_ms = unix_ms_now();
        let seed = params.seeds()[0];
        RunSpec {
            run: control::run_id(&scenario, STANDALONE, seed, start_unix_ms),
            scenario,
            strategy: STANDALONE.to_string(),
            seed,
            params,
            start_unix_ms,
            t0: Instant::now(),
            standalone: true,
            run_dir: None,
            shard: None,
            replica: None,
        }
    }

    /// Log file relative to the log directory: `[<run_dir>/]<scenario>/server-..`.
    pub fn log_file(&self) -> String {
        let file = if self.standalone {
            format!("{STANDALONE}/server-{STANDALONE}.jsonl")
        } else {
            e03_plan::log_names::replica_log_path(
                &self.scenario,
                &self.strategy,
                self.seed,
                self.replica,
            )
        };
        match &self.run_dir {
            Some(dir) => format!("{dir}/{file}"),
            None => file,
        }
    }
}

/// The run of a service started alone: its timeline runs from the process's start, with seed
/// `params.seeds[0]`, strategy "standalone", logged to `<log_dir>/standalone/server-standalone.jsonl`.
#[derive(Debug, Clone)]
pub struct StandaloneRun {
    pub scenario: e03_plan::Scenario,
    pub params: e03_plan::Params,
    /// A scenario file's text, kept as `<log_dir>/standalone/scenario.toml` beside the log.
    pub text: Option<String>,
    /// The user's policy file it was read with, kept as `policies.toml` beside it.
    pub policies_text: Option<String>,
    /// Its timeline starts at the first request, not at the process's start.
    pub at_first_request: bool,
}

impl StandaloneRun {
    /// The run to start now: time zero is this instant.
    pub fn spec(&self) -> RunSpec {
        RunSpec::standalone(self.scenario.clone(), self.params.clone())
    }
}

/// The shards of the current run (a run split over swarm processes): which registered, which
/// stopped it, which came late.
#[derive(Debug)]
struct ShardRoll {
    /// What the shards of one run share: scenario, strategy, seed, run directory, shard count.
    key: (String, String, u64, Option<String>, u32),
    /// The run's time zero: a shard registering at or after it is late.
    t0: Instant,
    start_unix_ms: u64,
    registered: std::collections::BTreeSet<u32>,
    stopped: std::collections::BTreeSet<u32>,
    late: std::collections::BTreeSet<u32>,
    /// Every stop so far said its shard ran to its end.
    complete: bool,
}

impl ShardRoll {
    fn key_of(spec: &RunSpec, count: u32) -> (String, String, u64, Option<String>, u32) {
        (
            spec.scenario.name().to_string(),
            spec.strategy.clone(),
            spec.seed,
            spec.run_dir.clone(),
            count,
        )
    }

    /// Every shard registered in time, and each ran to its end.
    fn whole(&self) -> bool {
        self.complete && self.late.is_empty() && self.registered.len() as u32 == self.key.4
    }
}

/// What a start call did.
pub enum Started {
    /// A run started (a shard's call may start it for the others).
    New(Arc<Run>),
    /// A shard joined the run another shard's call started: its id and time zero.
    Joined { run: Arc<Run>, start_unix_ms: u64 },
}

/// Why a shard's start call was refused (`409`).
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Log(#[from] LogError),
    #[error("shard {0} registered for this run already")]
    Twice(Shard),
    #[error(
        "shard {0} registered after the run's time zero: the run goes on without it and is \
         marked incomplete"
    )]
    Late(Shard),
    /// Another run's shards have not all stopped it yet (shards go through a run's seeds at
    /// their own pace): ask again.
    #[error("busy: run {0} waits for its other shards to stop it; ask again")]
    Busy(String),
}

pub struct Service {
    log: LogSink,
    /// The shards of the current run, when it is split over swarm processes.
    shards: Mutex<Option<ShardRoll>>,
    log_dir: PathBuf,
    current: Mutex<Option<Arc<Run>>>,
    /// Serialises start and stop.
    control: tokio::sync::Mutex<()>,
    /// Woken by `POST /control/shutdown`; `serve` treats it like a signal.
    pub shutdown_requested: tokio::sync::Notify,
    /// Served at `GET /metrics`; every run adds to them.
    pub metrics: Arc<Metrics>,
    /// How long its runs' timer spins before each due instant.
    answer_spin: std::time::Duration,
    /// A standalone run waiting for its first request (`--timeline-start first-request`).
    pending: Mutex<Option<StandaloneRun>>,
    /// The fault proxy in front of the work listener, if any: it applies a run's wire phases.
    wire_front: Option<Arc<crate::wire_front::WireFront>>,
    /// `--send-logs URL`: the analyzer's collector, to which each run's logs go when it ends.
    send_logs: Option<String>,
    /// The sends under way; `serve` waits for them before the process ends.
    sending: Mutex<tokio::task::JoinSet<()>>,
}

impl Service {
    pub fn new(log: LogSink, log_dir: PathBuf) -> Service {
        Service {
            log,
            shards: Mutex::new(None),
            log_dir,
            current: Mutex::new(None),
            control: tokio::sync::Mutex::new(()),
            shutdown_requested: tokio::sync::Notify::new(),
            metrics: Arc::new(Metrics::new()),
            answer_spin: std::time::Duration::ZERO,
            pending: Mutex::new(None),
            wire_front: None,
            send_logs: None,
            sending: Mutex::new(tokio::task::JoinSet::new()),
        }
    }

    /// This service sending each run's logs to the analyzer's collector at `url` when the run
    /// ends (`--send-logs`, [`e03_io::ship`]).
    pub fn with_send_logs(self, url: Option<String>) -> Service {
        Service {
            send_logs: url,
            ..self
        }
    }

    /// Sends the logs of `run`, which has ended (its server log, and its ledger and proxy log
    /// where they were written), to the collector, in a task of its own.
    fn send_run_logs(&self, run: &Run) {
        let Some(url) = self.send_logs.clone() else {
            return;
        };
        let server = run.log_file();
        let log = self.log_dir.join(server);
        let paths: Vec<PathBuf> = [
            crate::run::ledger_beside(&log),
            self.log_dir
                .join(e03_plan::log_names::wire_log_beside(server)),
            log,
        ]
        .into_iter()
        .filter(|p| p.is_file())
        .collect();
        self.sending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .spawn(async move {
                // Failures are logged by the sender; the files stay here.
                let _ = e03_io::ship::send_files(&reqwest::Client::new(), &url, &paths).await;
            });
    }

    /// Waits for every send under way (each gives up after its retries).
    pub async fn finish_sending(&self) {
        let mut set = std::mem::take(&mut *self.sending.lock().unwrap_or_else(|e| e.into_inner()));
        while set.join_next().await.is_some() {}
    }

    /// This service with a fault proxy in front of its work listener.
    pub fn with_wire_front(self, front: Option<Arc<crate::wire_front::WireFront>>) -> Service {
        Service {
            wire_front: front,
            ..self
        }
    }

    /// Whether this service can run `spec`: a run with wire phases needs the fault proxy in
    /// front; the error is the start call's 400.
    pub fn check_wire(&self, spec: &RunSpec) -> Result<(), crate::request_error::RequestError> {
        let wire = spec.params.timeline(&spec.scenario).wire;
        match (wire.first(), &self.wire_front) {
            (Some(w), None) => Err(crate::request_error::RequestError::NoWireFront {
                scenario: spec.scenario.name().to_string(),
                fault: w.fault.name().to_string(),
                start_s: w.start.as_secs_f64(),
            }),
            _ => Ok(()),
        }
    }

    /// Where the callers of `spec` send their work, when not to the address they know: a
    /// remote proxy in front carrying the run (the start call's `work`).
    pub fn work_url(&self, spec: &RunSpec) -> Option<String> {
        let wire = spec.params.timeline(&spec.scenario).wire;
        self.wire_front.as_ref()?.work_url(&wire)
    }

    /// Holds `run` until the first request arrives: its timeline starts then
    /// ([`Self::run_for_request`]). A control call that starts a run drops it.
    pub fn start_at_first_request(&self, run: StandaloneRun) {
        *self.pending.lock().unwrap_or_else(|e| e.into_inner()) = Some(run);
    }

    /// The run a request of the work API goes to: the current one, or the standalone run held
    /// for the first request, started now (time zero is this request's arrival).
    pub async fn run_for_request(&self) -> Option<Arc<Run>> {
        if let Some(run) = self.current_run() {
            return Some(run);
        }
        let _control = self.control.lock().await;
        if let Some(run) = self.current_run() {
            return Some(run);
        }
        let pending = self
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()?;
        match self.open_run(pending.spec()).await {
            Ok(run) => Some(run),
            Err(e) => {
                tracing::error!("cannot start the standalone run: {e}");
                None
            }
        }
    }

    /// This service, its runs' timer spinning for `spin` before each due instant.
    pub fn with_answer_spin(self, spin: std::time::Duration) -> Service {
        Service {
            answer_spin: spin,
            ..self
        }
    }

    /// Where run logs go.
    pub fn log_dir(&self) -> &std::path::Path {
        &self.log_dir
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, Option<Arc<Run>>> {
        self.current.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn current_run(&self) -> Option<Arc<Run>> {
        self.slot().clone()
    }

    fn roll(&self) -> std::sync::MutexGuard<'_, Option<ShardRoll>> {
        self.shards.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A start call: a shard of the current run (same scenario, strategy, seed, run directory
    /// and shard count) joins it while its time zero has not come; any other call ends the
    /// current run (not complete) if there is one, and starts `spec`.
    pub async fn register(&self, spec: RunSpec) -> Result<Started, StartError> {
        let _control = self.control.lock().await;
        let shard = spec.shard.filter(|s| !s.is_whole());
        if let (Some(shard), Some(run)) = (shard, self.current_run()) {
            let mut roll = self.roll();
            if let Some(r) = roll
                .as_mut()
                .filter(|r| r.key == ShardRoll::key_of(&spec, shard.count))
            {
                if r.registered.contains(&shard.index) {
                    return Err(StartError::Twice(shard));
                }
                if Instant::now() >= r.t0 {
                    r.late.insert(shard.index);
                    return Err(StartError::Late(shard));
                }
                r.registered.insert(shard.index);
                tracing::info!(run = %run.tag().run, %shard, "shard joined the run");
                return Ok(Started::Joined {
                    run,
                    start_unix_ms: r.start_unix_ms,
                });
            }
        }
        if let (Some(_), Some(run), Some(r)) = (shard, self.current_run(), self.roll().as_ref()) {
            if r.stopped != r.registered {
                return Err(StartError::Busy(run.tag().run.clone()));
            }
        }
        *self.roll() = shard.map(|s| ShardRoll {
            key: ShardRoll::key_of(&spec, s.count),
            t0: spec.t0,
            start_unix_ms: spec.start_unix_ms,
            registered: [s.index].into(),
            stopped: Default::default(),
            late: Default::default(),
            complete: true,
        });
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        Ok(Started::New(self.open_run(spec).await?))
    }

    /// Ends the current run (not complete) if there is one, then starts `spec`.
    pub async fn start_run(&self, spec: RunSpec) -> Result<Arc<Run>, LogError> {
        let _control = self.control.lock().await;
        *self.roll() = None;
        // A run started by control call replaces a standalone run still waiting for a request.
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        self.open_run(spec).await
    }

    /// [`Self::start_run`] under the control lock, held by the caller.
    async fn open_run(&self, spec: RunSpec) -> Result<Arc<Run>, LogError> {
        let previous = self.slot().take();
        if let Some(run) = &previous {
            run.end(false).await?;
        }
        if let Some(front) = &self.wire_front {
            front.end_run().await;
        }
        // Its proxy log closed too, the run before is sent.
        if let Some(run) = &previous {
            self.send_run_logs(run);
        }
        let replica = spec.replica.unwrap_or(0);
        let wire = spec.params.timeline_of(&spec.scenario, replica).wire;
        let t0 = spec.t0;
        let log_file = spec.log_file();
        // The proxy's log, beside the server log: wire-<strategy>-seed<seed>.jsonl.
        let wire_log = e03_plan::log_names::wire_log_beside(&log_file);
        let params = spec.params.clone();
        // The dependency this strategy's runs face (a strategy table may set its own policy).
        let config =
            spec.params
                .replica_config_for(&spec.scenario, spec.seed, &spec.strategy, replica);
        let setup = RunSetup {
            tag: RunTag {
                run: spec.run,
                seed: spec.seed,
                strategy: spec.strategy,
            },
            // A standalone run names its scenario too (its strategy, "standalone", says it is
            // one), so `lab analyze` shades the right timeline.
            scenario_label: spec.scenario.name().to_string(),
            config,
            t0: spec.t0,
            start_unix_ms: spec.start_unix_ms,
            params,
            log_path: self.log_dir.join(&log_file),
            log_file,
            metrics: self.metrics.clone(),
            answer_spin: self.answer_spin,
        };
        let run = Run::start(setup, self.log.clone()).await?;
        // With a proxy in front, every run it carries has its proxy log: its phases, or a
        // user's own toxics through the proxy's API (`--proxy-api`).
        if let Some(front) = &self.wire_front {
            if let Err(e) = front
                .begin_run(
                    t0,
                    wire,
                    spec.seed,
                    &self.log_dir,
                    std::path::Path::new(&wire_log),
                )
                .await
            {
                run.end(false).await?;
                return Err(LogError::Open {
                    path: self.log_dir.join(&wire_log),
                    source: e,
                });
            }
        }
        tracing::info!(run = %run.tag().run, "run started");
        *self.slot() = Some(run.clone());
        Ok(run)
    }

    /// The text exposition of the service's metrics (`GET /metrics`).
    pub fn metrics_text(&self) -> String {
        let state = self.current_run().map(|run| run.model_state());
        self.metrics.encode(state)
    }

    /// A stop call. A shard's (of the current run split over swarm processes) ends the run only
    /// when every shard that registered has stopped it, complete when each ran to its end and
    /// all of them registered in time; until then the answer is the counts so far. Any other
    /// call ends the current run; `None` when there is none.
    pub async fn stop_run(
        &self,
        complete: bool,
        shard: Option<Shard>,
    ) -> Option<Result<RunCounts, LogError>> {
        let _control = self.control.lock().await;
        let mut complete = complete;
        if let Some(shard) = shard.filter(|s| !s.is_whole()) {
            let mut roll = self.roll();
            if let Some(r) = roll.as_mut().filter(|r| r.key.4 == shard.count) {
                r.stopped.insert(shard.index);
                r.complete &= complete;
                if r.stopped != r.registered {
                    return self.current_run().map(|run| Ok(run.counts()));
                }
                complete = r.whole();
                if !complete {
                    let missing: Vec<u32> = (0..shard.count)
                        .filter(|i| !r.registered.contains(i) || r.late.contains(i))
                        .collect();
                    tracing::warn!(?missing, "the run ends without every shard");
                }
                *roll = None;
            }
        }
        let run = self.slot().take()?;
        if let Some(front) = &self.wire_front {
            front.end_run().await;
        }
        let counts = run.end(complete).await;
        self.send_run_logs(&run);
        if let Ok(c) = &counts {
            tracing::info!(
                run = %run.tag().run,
                arrivals = c.arrivals,
                responses = c.responses,
                "run ended"
            );
        }
        Some(counts)
    }
}

pub fn unix_ms_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The tokio instant of a wall-clock time in ms since the epoch, converted once; `None` when
/// it is more than [`MAX_START_OFFSET`] away from now.
pub fn instant_at_unix_ms(unix_ms: u64) -> Option<Instant> {
    let now = Instant::now();
    let wall = SystemTime::now().duration_since(UNIX_EPOCH).ok()?;
    let target = Duration::from_millis(unix_ms);
    if target >= wall {
        let ahead = target - wall;
        (ahead <= MAX_START_OFFSET).then(|| now + ahead)
    } else {
        let behind = wall - target;
        if behind > MAX_START_OFFSET {
            return None;
        }
        now.checked_sub(behind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_times_convert_to_instants_near_now_only() {
        let now_ms = unix_ms_now();
        let t = instant_at_unix_ms(now_ms + 500).unwrap();
        let ahead = t - Instant::now();
        assert!(ahead > Duration::from_millis(400) && ahead <= Duration::from_millis(500));
        assert!(instant_at_unix_ms(now_ms + 2 * 3600 * 1000).is_none());
        assert!(instant_at_unix_ms(0).is_none());
        assert!(instant_at_unix_ms(u64::MAX).is_none());
    }

    /// A standalone run held for its first request: the first request starts it; a control
    /// call that starts a run before any request replaces it, and a later request goes to the
    /// control call's run.
    #[tokio::test]
    async fn a_run_held_for_the_first_request_starts_then_or_gives_way_to_a_control_call() {
        let dir = std::env::temp_dir().join(format!("e03-held-{}", std::process::id()));
        let standalone = || StandaloneRun {
            scenario: Scenario::e03a(),
            params: Params::default(),
            text: None,
            policies_text: None,
            at_first_request: true,
        };
        let log = LogSink::start().unwrap();
        let svc = Service::new(log, dir.clone());
        svc.start_at_first_request(standalone());
        assert!(svc.current_run().is_none(), "nothing runs before a request");
        let run = svc
            .run_for_request()
            .await
            .expect("the first request starts it");
        assert_eq!(run.tag().strategy, STANDALONE);
        assert!(Arc::ptr_eq(&run, &svc.run_for_request().await.unwrap()));
        svc.stop_run(false, None).await;

        let log = LogSink::start().unwrap();
        let svc = Service::new(log, dir.clone());
        svc.start_at_first_request(standalone());
        let mut spec = RunSpec::standalone(Scenario::e03b(), Params::default());
        spec.strategy = "C".into();
        spec.standalone = false;
        svc.start_run(spec).await.unwrap();
        let run = svc.run_for_request().await.unwrap();
        assert_eq!(run.tag().strategy, "C");
        svc.stop_run(false, None).await;
        // The held run is gone: with no run, a request finds none.
        assert!(svc.run_for_request().await.is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A run split over 3 shards: the first shard's call starts it, the second joins it (same
    /// id, the first one's time zero), a second call of a shard is refused, another run's shard
    /// waits (busy), and the run ends only when every shard that registered has stopped it.
    /// A shard registering after time zero is refused, and the run ends incomplete.
    #[tokio::test]
    async fn shards_register_for_one_run_which_ends_when_the_last_stops_it() {
        let dir = std::env::temp_dir().join(format!("e03-shards-{}", std::process::id()));
        let svc = Service::new(LogSink::start().unwrap(), dir.clone());
        let spec = |index: u32, ahead_ms: u64, seed: u64| {
            let mut s = RunSpec::standalone(Scenario::e03b(), Params::default());
            s.strategy = "C".into();
            s.standalone = false;
            s.seed = seed;
            s.start_unix_ms = unix_ms_now() + ahead_ms;
            s.t0 = Instant::now() + Duration::from_millis(ahead_ms);
            s.run = format!("e03b-C-seed{seed}-{}", s.start_unix_ms);
            s.shard = Shard::new(index, 3);
            s
        };
        let first = spec(0, 2000, 42);
        let (id, t0_ms) = (first.run.clone(), first.start_unix_ms);
        let Started::New(run) = svc.register(first).await.unwrap() else {
            panic!("the first shard starts the run");
        };
        let Started::Joined {
            run: joined,
            start_unix_ms,
        } = svc.register(spec(1, 2500, 42)).await.unwrap()
        else {
            panic!("the second shard joins it");
        };
        assert!(Arc::ptr_eq(&run, &joined));
        assert_eq!(
            (joined.tag().run.as_str(), start_unix_ms),
            (id.as_str(), t0_ms)
        );
        assert!(matches!(
            svc.register(spec(1, 2500, 42)).await,
            Err(StartError::Twice(_))
        ));
        // A shard of the next seed waits until this run's shards have all stopped it.
        assert!(matches!(
            svc.register(spec(0, 2000, 43)).await,
            Err(StartError::Busy(_))
        ));
        // Shard 0 stops: the run goes on for shard 1; then shard 1 stops: it ends, incomplete
        // (shard 2 never registered).
        let s0 = Shard::new(0, 3);
        assert!(svc.stop_run(true, s0).await.unwrap().is_ok());
        assert!(svc.current_run().is_some(), "shard 1 has not stopped it");
        assert!(svc.stop_run(true, Shard::new(1, 3)).await.unwrap().is_ok());
        assert!(
            svc.current_run().is_none(),
            "every shard that registered stopped it"
        );
        let text = std::fs::read_to_string(dir.join(run.counts().log_file)).unwrap();
        let end = text.lines().last().unwrap();
        assert!(end.contains("\"complete\":false"), "{end}");
        // A shard after time zero is late: refused; the run ends incomplete though every
        // shard that joined ran to its end.
        let early = spec(0, 30, 44);
        let Started::New(run) = svc.register(early).await.unwrap() else {
            panic!("a new run");
        };
        tokio::time::sleep(Duration::from_millis(60)).await;
        assert!(matches!(
            svc.register(spec(1, 30, 44)).await,
            Err(StartError::Late(_))
        ));
        svc.stop_run(true, s0).await.unwrap().unwrap();
        assert!(svc.current_run().is_none());
        let text = std::fs::read_to_string(dir.join(run.counts().log_file)).unwrap();
        assert!(text.lines().last().unwrap().contains("\"complete\":false"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn standalone_runs_log_to_their_own_file() {
        let spec = RunSpec::standalone(Scenario::e03b(), Params::default());
        assert_eq!(spec.log_file(), "standalone/server-standalone.jsonl");
        assert_eq!(spec.seed, 42);
        assert!(spec.run.starts_with("e03b-standalone-seed42-"));
    }
}
