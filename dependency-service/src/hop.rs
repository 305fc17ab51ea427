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
//! `GET /inflight` says how many calls are still working (the lab waits for 0 before it stops
//! the hop, so no call is lost).
//!
//! Request headers: [`REQUEST_HEADER`] (the top request's number, passed on), and with deadline
//! propagation [`DEADLINE_HEADER`] (whole ms the caller will wait). A bad value of either is a
//! `400` naming the header.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::get;
use axum::Router;
use serde::{Deserialize, Serialize};

use e03_core::chain::{
    Bottom, CallRecord, HopCall, HopSpec, HopStep, TopRecord, DEADLINE_HEADER, REQUEST_HEADER,
};
use e03_core::AttemptResult;

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

/// A proxy towards `upstream` (`http://IP:PORT`), or the bottom of the chain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Role {
    Proxy {
        spec: HopSpec,
        upstream: String,
        #[serde(default)]
        propagate: bool,
    },
    Bottom {
        bottom: Bottom,
    },
}

/// µs since the Unix epoch.
pub fn wall_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

struct Hop {
    config: HopConfig,
    client: reqwest::Client,
    inflight: AtomicU64,
    seq: AtomicU64,
    log: Mutex<std::fs::File>,
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
                Err(_) => AttemptResult::ConnectionError,
            }
        }
        Err(e) if e.is_timeout() => AttemptResult::Timeout,
        Err(_) => AttemptResult::ConnectionError,
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
        Some(AttemptResult::ConnectionError) => {
            "last attempt could not connect (upstream down?)".into()
        }
    }
}

impl Hop {
    /// The work of one call: its status and a one-line body.
    async fn serve(&self, req: u64, received_ms: Option<u64>) -> (u16, String, bool) {
        match &self.config.role {
            Role::Bottom { bottom } => {
                let deadline = received_ms.map(Duration::from_millis);
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

    fn log(&self, record: &CallRecord) {
        let mut line = serde_json::to_string(record).expect("a record serializes");
        line.push('\n');
        let mut file = self.log.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = file.write_all(line.as_bytes()) {
            tracing::error!("cannot write the hop log: {e}");
        }
    }
}

fn header_u64(headers: &HeaderMap, name: &str) -> Result<Option<u64>, String> {
    match headers.get(name) {
        None => Ok(None),
        Some(v) => v
            .to_str()
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .map(Some)
            .ok_or_else(|| {
                format!(
                    "header {name}: expected a whole number (ms or a request number), got {v:?}"
                )
            }),
    }
}

async fn work(State(hop): State<Arc<Hop>>, headers: HeaderMap) -> (StatusCode, String) {
    let (req, received_ms) = match (
        header_u64(&headers, REQUEST_HEADER),
        header_u64(&headers, DEADLINE_HEADER),
    ) {
        (Ok(r), Ok(d)) => (r.unwrap_or(0), d),
        (Err(e), _) | (_, Err(e)) => return (StatusCode::BAD_REQUEST, e),
    };
    let start_us = wall_us();
    hop.inflight.fetch_add(1, Ordering::SeqCst);
    let (tx, rx) = tokio::sync::oneshot::channel();
    let task_hop = Arc::clone(&hop);
    // The work goes on if the caller leaves (its answer is then dropped).
    tokio::spawn(async move {
        let (status, body, refused) = task_hop.serve(req, received_ms).await;
        task_hop.log(&CallRecord {
            layer: task_hop.config.layer,
            req,
            start_us,
            end_us: wall_us(),
            status,
            refused,
        });
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

async fn inflight(State(hop): State<Arc<Hop>>) -> String {
    hop.inflight.load(Ordering::SeqCst).to_string()
}

/// A bound hop, ready to serve.
pub struct BoundHop {
    pub addr: SocketAddr,
    listener: tokio::net::TcpListener,
    router: Router,
}

/// Binds a hop (opens its log for appending).
pub async fn bind(config: HopConfig) -> anyhow::Result<BoundHop> {
    use anyhow::Context;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&config.log)
        .with_context(|| format!("opening the hop log {}", config.log.display()))?;
    let listener = tokio::net::TcpListener::bind(&config.listen)
        .await
        .with_context(|| format!("binding {}", config.listen))?;
    let addr = listener.local_addr()?;
    let hop = Arc::new(Hop {
        config,
        client: reqwest::Client::builder().build()?,
        inflight: AtomicU64::new(0),
        seq: AtomicU64::new(0),
        log: Mutex::new(log),
    });
    let router = Router::new()
        .route("/work", get(work))
        .route("/inflight", get(inflight))
        .with_state(hop);
    Ok(BoundHop {
        addr,
        listener,
        router,
    })
}

impl BoundHop {
    /// Serves until `stop` resolves.
    pub async fn serve(self, stop: impl std::future::Future<Output = ()> + Send + 'static) {
        if let Err(e) = axum::serve(self.listener, self.router)
            .with_graceful_shutdown(stop)
            .await
        {
            tracing::error!("hop server: {e}");
        }
    }
}

/// `lab hop --config JSON`: prints `listening work=IP:PORT`, serves until SIGINT or SIGTERM.
/// Exit 2 when the configuration is missing or invalid (the message names --config).
pub fn main_entry(args: Vec<std::ffi::OsString>) -> i32 {
    let args: Vec<String> = args.iter().map(|a| a.to_string_lossy().into()).collect();
    let text = match args.get(1..).unwrap_or_default() {
        [flag, value] if flag == "--config" => value.clone(),
        [h] if h == "--help" || h == "-h" => {
            println!(
                "Usage: lab hop --config JSON\n\nOne hop of a chain (the dependency service in \
                 proxy mode); `lab run` starts them. JSON: {{\"layer\": 1, \"log\": PATH, \
                 \"listen\": \"127.0.0.1:0\", \"role\": {{\"kind\": \"proxy\", \"upstream\": \
                 \"http://IP:PORT\", \"propagate\": false, \"spec\": {{\"name\": \"order\", \
                 \"attempts\": 3, \"timeout_ms\": 1000, \"backoff_ms\": 0}}}}}} or role \
                 {{\"kind\": \"bottom\", \"bottom\": {{\"kind\": \"fail\", \"status\": 503}}}}."
            );
            return 0;
        }
        other => {
            eprintln!("lab hop: expected --config JSON (see lab hop --help), got {other:?}");
            return 2;
        }
    };
    let config: HopConfig = match serde_json::from_str(&text) {
        Ok(c) => c,
        Err(e) => {
            eprintln!(
                "lab hop: --config: {e}: expected a hop configuration in JSON (see lab hop --help)"
            );
            return 2;
        }
    };
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("lab hop: cannot start the runtime: {e}");
            return 1;
        }
    };
    rt.block_on(async {
        let bound = match bind(config).await {
            Ok(b) => b,
            Err(e) => {
                eprintln!("lab hop: {e:#}");
                return 1;
            }
        };
        println!("listening work={}", bound.addr);
        let _ = std::io::stdout().flush();
        bound.serve(crate::shutdown_signal()).await;
        0
    })
}

/// The top caller: `requests` operations one after the other against `upstream`, each the
/// core's [`HopCall`] with the policy `top` (layer 0). Returns their records.
pub async fn top_requests(
    top: &HopSpec,
    upstream: &str,
    propagate: bool,
    requests: u32,
) -> anyhow::Result<Vec<TopRecord>> {
    let client = reqwest::Client::builder().build()?;
    let mut out = Vec::new();
    for req in 1..=u64::from(requests) {
        let start_us = wall_us();
        let call = HopCall::arrive(Duration::ZERO, top, None, propagate, req)
            .map_err(|s| anyhow::anyhow!("the top caller refused its own request ({s})"))?;
        let (status, _, attempts) = drive(&client, upstream, req, call).await;
        out.push(TopRecord {
            req,
            start_us,
            end_us: wall_us(),
            status,
            attempts,
        });
    }
    Ok(out)
}

/// How many calls of the hop at `addr` are still working (`GET /inflight`).
pub async fn inflight_of(client: &reqwest::Client, addr: &str) -> anyhow::Result<u64> {
    let text = client
        .get(format!("http://{addr}/inflight"))
        .timeout(Duration::from_secs(2))
        .send()
        .await?
        .text()
        .await?;
    Ok(text.trim().parse()?)
}

/// [`top_requests`] on a runtime of its own (for the lab, which has none).
pub fn top_requests_blocking(
    top: &HopSpec,
    upstream: &str,
    propagate: bool,
    requests: u32,
) -> anyhow::Result<Vec<TopRecord>> {
    tokio::runtime::Runtime::new()?.block_on(top_requests(top, upstream, propagate, requests))
}

/// Waits until no hop at `addrs` is still working, at most `limit`; whether they all are idle.
pub fn wait_idle_blocking(addrs: &[String], limit: Duration) -> anyhow::Result<bool> {
    tokio::runtime::Runtime::new()?.block_on(async {
        let client = reqwest::Client::new();
        let end = Instant::now() + limit;
        loop {
            let mut busy = 0;
            for a in addrs {
                busy += inflight_of(&client, a).await?;
            }
            if busy == 0 {
                return Ok(true);
            }
            if Instant::now() >= end {
                return Ok(false);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
}
