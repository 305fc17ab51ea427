//! Proxy mode: the dependency service as one hop of a chain (`lab hop --config JSON`).
//!
//! A hop answers `GET /work`. As a proxy it calls its upstream's `/work` with its own client
//! policy, the core's [`HopCall`] (attempts, attempt timeout, fixed backoff, a deadline of its
//! own capped by a propagated one), and answers its caller from the result: `200` when an
//! attempt succeeded, `502` when it gave up on its upstream (attempts spent, the upstream down
//! or failing), `504` when its deadline passed (work refused at arrival, or no time left for the
//! next attempt). As the bottom of a chain it fails at once or hangs ([`Bottom`]).
//!
//! The work of a call runs in a task of its own: a caller that stops waiting does not stop it
//! (as a server that does not notice its client left), so the work done for a caller that has
//! gone is measured, and every call is logged when it ends: one JSON line ([`CallRecord`]) per
//! arrival, times in µs since the Unix epoch (the hops of a chain share the machine's clock).
//! `GET /inflight` says how many calls are still working or not yet in the log (the lab waits
//! for 0 before it stops the hop, so no call is lost). The log is written by a thread of its own
//! (`e03_io::sink::LogSink`), off the request path.
//!
//! # Two ways to start a hop
//!
//! - `lab hop --config JSON`: configured at start ([`HopConfig`]); `lab run` starts one process
//!   per layer on loopback this way.
//! - `lab hop --listen ADDR --log-dir DIR`: unconfigured (compose's `hop-N` services). Until a
//!   control call configures it, `/work` answers `503`. `POST /control/configure` with a
//!   [`HopSetup`] (JSON: layer, role, log file relative to DIR) makes it a proxy or the bottom;
//!   `200` when accepted, `400` with a message naming the key when not (nothing changes then).
//!   It may be called again (the next variant of a chain): calls already in flight finish with
//!   the configuration they arrived under and log to its file. `GET /health` answers `200`,
//!   `POST /control/shutdown` stops the process (the swarm's end of a compose run).
//!
//! Request headers: [`REQUEST_HEADER`] (the top request's number, passed on; the top caller,
//! which is the swarm's live driver, sends it as its operation number in [`HEADER_OP`]), and
//! with deadline propagation [`DEADLINE_HEADER`] (whole ms the caller will wait). A bad value of
//! any is a `400` naming the header.
//!
//! A hop has the service's limits against hostile or broken peers, from the same code
//! (`crate::listen`'s accept loop, `crate::routes`' body limits): `431` for a head over 16 KiB,
//! a connection closed when its head has not come within 10 s (slowloris, idle connections), at
//! most 20,000 connections at once, `413` for a body over the limit of `/work` (1 KiB, declared)
//! or of the configuration (64 KiB, declared or sent), `408` for a configuration whose body has
//! not come within 10 s.

use e03_io::sink::LogSink;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware;
use axum::routing::{get, post};
use axum::Router;
use serde::{Deserialize, Serialize};

use e03_model::attempt::{Broken, Stage};
use e03_model::chain::{
    deadline_on_arrival, Bottom, CallRecord, HopCall, HopStep, DEADLINE_HEADER, MAX_HOPS,
    REQUEST_HEADER,
};
use e03_model::events::HEADER_OP;
use e03_model::AttemptResult;
use e03_plan::control::{HEALTH_PATH, SHUTDOWN_PATH};
use e03_plan::hop_control::{HopSetup, Role, CONFIGURE_PATH, INFLIGHT_PATH};

pub use crate::hop_error::{HopError, HOP_USAGE};

/// What a hop process is, as `lab` passes it in `--config` (JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HopConfig {
    /// Its layer in the chain (1: called by the top caller).
    pub layer: u32,
    pub role: Role,
    /// Where it appends its call records (JSON Lines; created, never truncated).
    pub log: PathBuf,
    /// Address to bind; port 0 picks a free one.
    #[serde(default = "loopback")]
    pub listen: String,
}

fn loopback() -> String {
    "127.0.0.1:0".into()
}

/// Checks a layer and a role; the message names the key and what it accepts.
pub fn check_role(layer: u32, role: &Role) -> Result<(), HopError> {
    let most = MAX_HOPS as u32 + 1;
    if !(1..=most).contains(&layer) {
        return Err(HopError::Layer { layer, most });
    }
    match role {
        Role::Proxy { spec, upstream, .. } => {
            spec.check("role.spec")?;
            let ok = reqwest::Url::parse(upstream)
                .is_ok_and(|u| u.scheme() == "http" && u.host_str().is_some_and(|h| !h.is_empty()));
            if !ok {
                return Err(HopError::Upstream {
                    upstream: upstream.clone(),
                });
            }
            Ok(())
        }
        Role::Bottom { bottom } => bottom
            .check()
            .map_err(|e| HopError::Role(e.within("role."))),
    }
}

/// Checks a [`HopSetup`]'s log name; the relative path it names.
pub fn check_log_name(log: &str) -> Result<PathBuf, HopError> {
    let bad = || HopError::LogName {
        log: log.to_string(),
    };
    let path = Path::new(log);
    let plain = |c: Component| match c {
        Component::Normal(n) => n.to_str().is_some_and(|n| {
            n.chars()
                .all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '.' | '-' | '_'))
        }),
        _ => false,
    };
    if log.is_empty()
        || log.len() > 512
        || !log.ends_with(".jsonl")
        || !path.components().all(plain)
    {
        return Err(bad());
    }
    Ok(path.to_path_buf())
}

/// µs since the Unix epoch.
pub fn wall_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// A hop's configuration in force: its layer, its role and its open log.
struct Active {
    layer: u32,
    role: Role,
    /// Written by a thread of its own, off the request path; `GET /inflight` counts its
    /// records not yet written, so a reader that waits for 0 reads them all.
    log: LogSink,
}

impl Active {
    fn open(layer: u32, role: Role, log: &Path) -> anyhow::Result<Active> {
        use anyhow::Context;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .with_context(|| format!("opening the hop log {}", log.display()))?;
        Ok(Active {
            layer,
            role,
            log: LogSink::to_file(file, log.to_path_buf())
                .context("starting the hop log's writer")?,
        })
    }

    /// One line for the hop's stdout: what it now is.
    fn describe(&self) -> String {
        match &self.role {
            Role::Proxy {
                spec,
                upstream,
                propagate,
            } => format!(
                "layer {} {}: {} attempt(s) of {} ms to {upstream}{}",
                self.layer,
                spec.name,
                spec.attempts,
                spec.timeout_ms,
                if *propagate {
                    ", deadlines propagated"
                } else {
                    ""
                }
            ),
            Role::Bottom {
                bottom: Bottom::Fail { status },
            } => format!("layer {} bottom: answers {status} at once", self.layer),
            Role::Bottom {
                bottom: Bottom::Hang { hold_ms },
            } => format!(
                "layer {} bottom: holds every call {hold_ms} ms, then 503",
                self.layer
            ),
        }
    }
}

struct Hop {
    /// `None` until a control call configures the hop.
    active: RwLock<Option<Arc<Active>>>,
    /// Where control calls' logs go (`--log-dir`); `None`: started with `--config`, no
    /// control call is taken.
    log_dir: Option<PathBuf>,
    client: reqwest::Client,
    inflight: AtomicU64,
    seq: AtomicU64,
    /// `POST /control/shutdown` was received.
    stop: tokio::sync::Notify,
}

/// One attempt upstream: its result as the core sees it.
async fn attempt(
    client: &reqwest::Client,
    upstream: &str,
    req: u64,
    timeout: Duration,
    header_ms: Option<u64>,
) -> AttemptResult {
    let mut r = client
        .get(format!("{upstream}/work"))
        .header(REQUEST_HEADER, req.to_string())
        .timeout(timeout);
    if let Some(ms) = header_ms {
        r = r.header(DEADLINE_HEADER, ms.to_string());
    }
    match r.send().await {
        Ok(resp) => {
            let code = resp.status().as_u16();
            // Read the body so the connection can serve the next attempt.
            match resp.bytes().await {
                Ok(_) => AttemptResult::status(code),
                Err(e) if e.is_timeout() => AttemptResult::Timeout,
                Err(e) => AttemptResult::ConnectionError(Broken::of_error(Stage::Body, false, &e)),
            }
        }
        Err(e) if e.is_timeout() && !e.is_connect() => AttemptResult::Timeout,
        Err(e) => AttemptResult::ConnectionError(Broken::of_error(
            if e.is_connect() {
                Stage::Connect
            } else {
                Stage::Request
            },
            e.is_timeout(),
            &e,
        )),
    }
}

/// Drives one [`HopCall`] against `upstream` to its answer; the answer and the last result.
async fn drive(
    client: &reqwest::Client,
    upstream: &str,
    req: u64,
    mut call: HopCall,
) -> (u16, Option<AttemptResult>, u32) {
    let t0 = Instant::now();
    let mut last = None;
    let mut step = call.next(Duration::ZERO);
    loop {
        match step {
            HopStep::Send { timeout, header_ms } => {
                let result = attempt(client, upstream, req, timeout, header_ms).await;
                last = Some(result);
                step = call.on_result(t0.elapsed(), result);
            }
            HopStep::Wait(wait) => {
                tokio::time::sleep(wait).await;
                step = call.next(t0.elapsed());
            }
            HopStep::Answer(status) => return (status, last, call.attempt()),
        }
    }
}

fn describe(last: Option<AttemptResult>) -> String {
    match last {
        None => "no attempt was sent".into(),
        Some(AttemptResult::Status { code, .. }) => format!("last answer {code}"),
        Some(AttemptResult::Timeout) => "last attempt timed out".into(),
        Some(AttemptResult::ConnectionError(b)) if b.before_sending() => {
            format!(
                "last attempt could not connect ({}: upstream down?)",
                b.name()
            )
        }
        Some(AttemptResult::ConnectionError(b)) => {
            format!("last attempt's connection failed ({})", b.name())
        }
    }
}

impl Hop {
    /// The work of one call under `active`: its status and a one-line body.
    async fn serve(
        &self,
        active: &Active,
        req: u64,
        received_ms: Option<u64>,
    ) -> (u16, String, bool) {
        match &active.role {
            Role::Bottom { bottom } => {
                let deadline = received_ms.map(|ms| deadline_on_arrival(Duration::ZERO, ms));
                let (end, status) = bottom.answer(Duration::ZERO, deadline);
                let refused = deadline.is_some_and(|d| d.is_zero());
                tokio::time::sleep(end).await;
                (status, format!("bottom answered {status}"), refused)
            }
            Role::Proxy {
                spec,
                upstream,
                propagate,
            } => {
                let seed = self.seq.fetch_add(1, Ordering::Relaxed);
                match HopCall::arrive(Duration::ZERO, spec, received_ms, *propagate, seed) {
                    Err(status) => (
                        status,
                        format!("{}: deadline passed on arrival, work refused", spec.name),
                        true,
                    ),
                    Ok(call) => {
                        let (status, last, _) = drive(&self.client, upstream, req, call).await;
                        let body = match status {
                            200 => format!("{}: upstream answered 200", spec.name),
                            _ => format!(
                                "{}: upstream {upstream} failed, answered {status} ({})",
                                spec.name,
                                describe(last)
                            ),
                        };
                        (status, body, false)
                    }
                }
            }
        }
    }

    async fn log(active: &Active, record: &CallRecord) {
        active.log.record(record).await;
    }
}

fn header_u64(headers: &HeaderMap, name: &str) -> Result<Option<u64>, HopError> {
    match headers.get(name) {
        None => Ok(None),
        Some(v) => v
            .to_str()
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .map(Some)
            .ok_or_else(|| HopError::Header {
                name: name.to_string(),
                value: format!("{v:?}"),
            }),
    }
}

/// A call's request number and received deadline ([`DEADLINE_HEADER`], whole ms), or the 400
/// message naming the bad header (the fuzz target `headers` drives it). The request number is
/// [`REQUEST_HEADER`] (a hop's call), else [`HEADER_OP`] (the top caller, the swarm's driver,
/// sends its operation number there), else 0.
pub fn call_headers(headers: &HeaderMap) -> Result<(u64, Option<u64>), HopError> {
    let req = match header_u64(headers, REQUEST_HEADER) {
        Ok(None) => header_u64(headers, HEADER_OP),
        other => other,
    };
    match (req, header_u64(headers, DEADLINE_HEADER)) {
        (Ok(r), Ok(d)) => Ok((r.unwrap_or(0), d)),
        (Err(e), _) | (_, Err(e)) => Err(e),
    }
}

async fn work(State(hop): State<Arc<Hop>>, headers: HeaderMap) -> (StatusCode, String) {
    let (req, received_ms) = match call_headers(&headers) {
        Ok(values) => values,
        Err(e) => return (StatusCode::BAD_REQUEST, e.to_string()),
    };
    // The configuration the call arrived under: it keeps it (and its log) to its end.
    let active = hop.active.read().unwrap_or_else(|e| e.into_inner()).clone();
    let Some(active) = active else {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("this hop has no configuration yet: POST {CONFIGURE_PATH} first"),
        );
    };
    let start_us = wall_us();
    hop.inflight.fetch_add(1, Ordering::SeqCst);
    let (tx, rx) = tokio::sync::oneshot::channel();
    let task_hop = Arc::clone(&hop);
    // The work goes on if the caller leaves (its answer is then dropped).
    tokio::spawn(async move {
        let (status, body, refused) = task_hop.serve(&active, req, received_ms).await;
        Hop::log(
            &active,
            &CallRecord {
                layer: active.layer,
                req,
                start_us,
                end_us: wall_us(),
                status,
                refused,
            },
        )
        .await;
        task_hop.inflight.fetch_sub(1, Ordering::SeqCst);
        let _ = tx.send((status, body));
    });
    match rx.await {
        Ok((status, body)) => (
            StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY),
            body,
        ),
        Err(_) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "the hop's work ended without an answer".into(),
        ),
    }
}

/// Calls still working, and records not yet in the log: 0 means the log is complete. (A call
/// hands its record over before it stops counting as working, and the count is read first:
/// a call seen ended has its record counted.)
async fn inflight(State(hop): State<Arc<Hop>>) -> String {
    let working = hop.inflight.load(Ordering::SeqCst);
    let unwritten = hop
        .active
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .map_or(0, |a| a.log.pending());
    (working + unwritten).to_string()
}

async fn health() -> &'static str {
    "ok"
}

async fn shutdown(State(hop): State<Arc<Hop>>) -> &'static str {
    hop.stop.notify_one();
    "shutting down"
}

/// `POST /control/configure`: checks the whole [`HopSetup`] first, then opens its log and puts
/// it in force; a bad setup changes nothing.
async fn configure(State(hop): State<Arc<Hop>>, body: Bytes) -> (StatusCode, String) {
    let Some(log_dir) = &hop.log_dir else {
        return (
            StatusCode::CONFLICT,
            "this hop was started with --config; it takes no control call".into(),
        );
    };
    let (setup, rel) = match check_setup(&body) {
        Ok(checked) => checked,
        Err(e) => return (StatusCode::BAD_REQUEST, e.to_string()),
    };
    let path = log_dir.join(rel);
    if let Some(parent) = path.parent() {
        if let Err(e) = std::fs::create_dir_all(parent) {
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("cannot create {}: {e}", parent.display()),
            );
        }
    }
    let active = match Active::open(setup.layer, setup.role, &path) {
        Ok(a) => a,
        Err(e) => return (StatusCode::INTERNAL_SERVER_ERROR, format!("{e:#}")),
    };
    let line = format!(
        "hop: configured as {}, log {}",
        active.describe(),
        setup.log
    );
    // For the container's log; a closed stdout (a caller that read only the address line) must
    // not stop the hop.
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}").and_then(|()| out.flush());
    *hop.active.write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(active));
    (StatusCode::OK, line)
}

/// A `POST /control/configure` body, read and checked: the setup and its log's relative path,
/// or the 400 message. Nothing is opened or changed (the fuzz target `control` drives it).
pub fn check_setup(body: &[u8]) -> Result<(HopSetup, PathBuf), HopError> {
    let setup: HopSetup = serde_json::from_slice(body).map_err(|e| HopError::SetupJson {
        json: e.to_string(),
    })?;
    let rel = check_role(setup.layer, &setup.role)
        .and_then(|()| check_log_name(&setup.log))
        .map_err(|e| HopError::Setup(Box::new(e)))?;
    Ok((setup, rel))
}

/// A bound hop, ready to serve.
pub struct BoundHop {
    pub addr: SocketAddr,
    listener: tokio::net::TcpListener,
    router: Router,
    hop: Arc<Hop>,
}

/// Binds a hop configured at start (opens its log for appending).
pub async fn bind(config: HopConfig) -> anyhow::Result<BoundHop> {
    let active = Active::open(config.layer, config.role, &config.log)?;
    bind_with(&config.listen, Some(active), None).await
}

/// Binds a hop without a configuration: it takes `POST /control/configure`, whose logs go
/// under `log_dir`.
pub async fn bind_unconfigured(listen: &str, log_dir: PathBuf) -> anyhow::Result<BoundHop> {
    bind_with(listen, None, Some(log_dir)).await
}

async fn bind_with(
    listen: &str,
    active: Option<Active>,
    log_dir: Option<PathBuf>,
) -> anyhow::Result<BoundHop> {
    use anyhow::Context;
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("binding {listen}"))?;
    let addr = listener.local_addr()?;
    let hop = Arc::new(Hop {
        active: RwLock::new(active.map(Arc::new)),
        log_dir,
        client: reqwest::Client::builder().build()?,
        inflight: AtomicU64::new(0),
        seq: AtomicU64::new(0),
        stop: tokio::sync::Notify::new(),
    });
    // The service's limits (`crate::routes`): a declared body on `/work` over its limit is 413
    // (the handler reads none); a configuration's body over its limit 413, not sent in time 408.
    let router = Router::new()
        .route(
            "/work",
            get(work).layer(middleware::from_fn(crate::routes::limit_work_body)),
        )
        .route(INFLIGHT_PATH, get(inflight))
        .route(HEALTH_PATH, get(health))
        .route(
            CONFIGURE_PATH,
            post(configure).layer(middleware::from_fn_with_state(
                crate::routes::CONTROL_BODY_LIMIT,
                crate::routes::buffer_body,
            )),
        )
        .route(SHUTDOWN_PATH, post(shutdown))
        .layer(DefaultBodyLimit::max(crate::routes::CONTROL_BODY_LIMIT))
        .with_state(Arc::clone(&hop));
    Ok(BoundHop {
        addr,
        listener,
        router,
        hop,
    })
}

impl BoundHop {
    /// Serves until `stop` resolves or `POST /control/shutdown` comes, with the service's
    /// connection limits (`crate::listen`'s accept loop: 431 for headers over its limit, slow
    /// or idle connections closed after its header timeout, at most
    /// [`crate::listen::MAX_WORK_CONNECTIONS`] open at once); then gives open connections the
    /// service's drain time to finish.
    pub async fn serve(self, stop: impl std::future::Future<Output = ()> + Send + 'static) {
        let hop = Arc::clone(&self.hop);
        let stop_rx = crate::listen::stop_channel(async move {
            tokio::select! {
                () = stop => {}
                () = hop.stop.notified() => {}
            }
        });
        let graceful = hyper_util::server::graceful::GracefulShutdown::new();
        crate::listen::accept_loop(
            self.listener,
            self.router,
            &graceful,
            crate::listen::MAX_WORK_CONNECTIONS,
            stop_rx,
        )
        .await;
        crate::listen::drain(graceful, "hop").await;
    }
}

/// How `lab hop` was asked to start.
enum Start {
    Configured(HopConfig),
    Unconfigured { listen: String, log_dir: PathBuf },
}

/// Reads `lab hop`'s arguments; `Err` is the message (exit 2).
fn start_of(args: &[String]) -> Result<Option<Start>, HopError> {
    let mut config = None;
    let mut listen = None;
    let mut log_dir = None;
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let slot = match flag.as_str() {
            "--help" | "-h" => return Ok(None),
            "--config" => &mut config,
            "--listen" => &mut listen,
            "--log-dir" => &mut log_dir,
            other => {
                return Err(HopError::Unexpected {
                    arg: other.to_string(),
                })
            }
        };
        match it.next() {
            Some(v) => *slot = Some(v.clone()),
            None => return Err(HopError::NeedsValue { flag: flag.clone() }),
        }
    }
    match (config, listen, log_dir) {
        (Some(text), None, None) => {
            let config: HopConfig =
                serde_json::from_str(&text).map_err(|e| HopError::ConfigJson {
                    json: e.to_string(),
                })?;
            check_role(config.layer, &config.role).map_err(|e| HopError::Config(Box::new(e)))?;
            Ok(Some(Start::Configured(config)))
        }
        (None, Some(listen), Some(dir)) => {
            let log_dir = PathBuf::from(&dir);
            if !log_dir.is_dir() {
                return Err(HopError::LogDir { dir });
            }
            Ok(Some(Start::Unconfigured { listen, log_dir }))
        }
        _ => Err(HopError::Usage),
    }
}

/// `lab hop --config JSON` or `lab hop --listen IP:PORT --log-dir DIR`: prints `listening
/// work=IP:PORT`, serves until SIGINT, SIGTERM or `POST /control/shutdown`. Exit 2 when the
/// arguments or the configuration are missing or invalid (the message names the flag).
pub fn main_entry(args: Vec<std::ffi::OsString>) -> i32 {
    let args: Vec<String> = args.iter().map(|a| a.to_string_lossy().into()).collect();
    let start = match start_of(args.get(1..).unwrap_or_default()) {
        Ok(Some(s)) => s,
        Ok(None) => {
            println!(
                "Usage: lab hop --config JSON\n       lab hop --listen IP:PORT --log-dir DIR\n\n\
                 One hop of a chain (the dependency service in proxy mode). `lab run` starts them \
                 with --config. JSON: {{\"layer\": 1, \"log\": PATH, \"listen\": \
                 \"127.0.0.1:0\", \"role\": {{\"kind\": \"proxy\", \"upstream\": \
                 \"http://IP:PORT\", \"propagate\": false, \"spec\": {{\"name\": \"order\", \
                 \"attempts\": 3, \"timeout_ms\": 1000, \"backoff_ms\": 0}}}}}} or role \
                 {{\"kind\": \"bottom\", \"bottom\": {{\"kind\": \"fail\", \"status\": 503}}}}.\n\n\
                 With --listen and --log-dir (compose's hop services) the hop starts without a \
                 role and answers /work with 503 until `POST {CONFIGURE_PATH}` gives it one: the \
                 same JSON without \"listen\", \"log\" relative to DIR (400 names a bad key; \
                 it may be called again for the next chain). GET {HEALTH_PATH}, GET /inflight, \
                 POST {SHUTDOWN_PATH}."
            );
            return 0;
        }
        Err(e) => {
            eprintln!("lab: {e}");
            return 2;
        }
    };
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("lab: cannot start the runtime: {e}");
            return 1;
        }
    };
    rt.block_on(async {
        let bound = match start {
            Start::Configured(config) => bind(config).await,
            Start::Unconfigured { listen, log_dir } => bind_unconfigured(&listen, log_dir).await,
        };
        let bound = match bound {
            Ok(b) => b,
            Err(e) => {
                eprintln!("lab: {e:#}");
                return 1;
            }
        };
        println!("listening work={}", bound.addr);
        let _ = std::io::stdout().flush();
        bound.serve(crate::shutdown_signal()).await;
        0
    })
}
