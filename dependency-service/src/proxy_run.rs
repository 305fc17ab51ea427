//! One run of `lab proxy --http`: its time zero, its timeline's decisions (the core's
//! [`FaultProxy`]), its log and its counts. A standalone proxy has one run from its start (or
//! its first request); a proxy with a control listener has one per start call, as `lab serve`
//! has ([`crate::http_control`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use e03_io::sink::LogSink;
use e03_model::events::{Event, RunEnd, RunStart, RunTag, Source};
use e03_model::fault_proxy::FaultProxy;
use e03_plan::control::RunCounts;

pub struct ProxyRun {
    pub machine: Mutex<FaultProxy>,
    /// Time zero and its wall clock in ms: the start, the start call's, or the first request
    /// (`--timeline-start first-request`).
    t0: OnceLock<(Instant, u64)>,
    pub tag: RunTag,
    scenario: String,
    params: e03_plan::Params,
    log: Option<LogSink>,
    /// The log, relative to the log directory (a control run's), for the stop call's answer.
    log_file: String,
    pub seq: AtomicU64,
    records: AtomicU64,
    arrivals: AtomicU64,
    responses: AtomicU64,
}

impl ProxyRun {
    pub fn new(
        machine: FaultProxy,
        tag: RunTag,
        scenario: String,
        params: e03_plan::Params,
        log: Option<LogSink>,
        log_file: String,
    ) -> Self {
        ProxyRun {
            machine: Mutex::new(machine),
            t0: OnceLock::new(),
            tag,
            scenario,
            params,
            log,
            log_file,
            seq: AtomicU64::new(0),
            records: AtomicU64::new(0),
            arrivals: AtomicU64::new(0),
            responses: AtomicU64::new(0),
        }
    }

    /// Time zero, set to `at` (now, when `None`) if it was not, and its `run_start` written
    /// before any other record: a request that comes meanwhile waits for it.
    pub fn start_at(&self, at: Option<(Instant, u64)>) -> Instant {
        self.t0
            .get_or_init(|| {
                let t0 = at.unwrap_or_else(|| (Instant::now(), unix_ms()));
                let (params, typed_params) = self.params.run_start_forms();
                self.record(Event::RunStart(RunStart {
                    tag: self.tag.clone(),
                    source: Source::Server,
                    scenario: self.scenario.clone(),
                    start_unix_ms: t0.1,
                    params,
                    typed_params: Some(typed_params),
                    clock: None,
                    shard: None,
                }));
                t0
            })
            .0
    }

    pub fn record(&self, e: Event) {
        match &e {
            Event::Arrival(_) => self.arrivals.fetch_add(1, Ordering::Relaxed),
            Event::Response(_) => self.responses.fetch_add(1, Ordering::Relaxed),
            _ => 0,
        };
        if let Some(log) = &self.log {
            self.records.fetch_add(1, Ordering::Relaxed);
            log.record_now(&e);
        }
    }

    /// Writes the last record (`complete`: the run reached its end; a proxy stopped by a signal
    /// says false, as `lab serve` does) and closes the log; the run's counts.
    pub async fn end(
        &self,
        complete: bool,
    ) -> Result<RunCounts, crate::request_error::RequestError> {
        if let Some(&(t0, _)) = self.t0.get() {
            self.record(Event::RunEnd(RunEnd {
                tag: self.tag.clone(),
                source: Source::Server,
                t_us: t0.elapsed().as_micros() as u64,
                complete,
                records: self.records.load(Ordering::Relaxed),
            }));
        }
        if let Some(log) = &self.log {
            log.close()
                .await
                .map_err(|e| crate::request_error::RequestError::LogNotWhole {
                    error: e.to_string(),
                })?;
        }
        Ok(RunCounts {
            arrivals: self.arrivals.load(Ordering::SeqCst),
            responses: self.responses.load(Ordering::SeqCst),
            log_file: self.log_file.clone(),
        })
    }
}

pub fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
