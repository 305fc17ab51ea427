//! The live driver of `lab audit`'s probes ([`e03_model::audit`]): an HTTP listener that answers
//! `/audit/<probe>/<instance>` as the probe's [`ProbeTarget`] says and keeps one record per
//! request, written when it was answered or when the client gave up on it (its connection closed
//! and hyper dropped the handler).
//!
//! The records stay in memory (an audit is a few hundred requests) until `lab audit` takes
//! them with [`AuditServer::take_records`] and writes the log.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;
use e03_model::audit::{AuditRecord, Probe, ProbeRequest, ProbeTarget, OPERATION_HEADER};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// Connections the audit listener keeps open at once.
const MAX_CONNECTIONS: usize = 256;

struct Shared {
    /// `lab audit --upstream URL`: the user's service, where a probe's success (and the
    /// idempotency probe's commit) is forwarded, the faults staying the probes' own.
    upstream: Option<(crate::http_proxy::Upstream, reqwest::Client)>,
    t0: Instant,
    /// The wall clock at `t0`, ms since the epoch (for HTTP dates).
    t0_unix_ms: u64,
    probes: HashMap<String, Probe>,
    targets: Mutex<HashMap<(String, u32), ProbeTarget>>,
    records: Mutex<Vec<AuditRecord>>,
}

impl Shared {
    fn us(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.t0).as_micros() as u64
    }
}

/// A running audit listener.
pub struct AuditServer {
    shared: Arc<Shared>,
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl AuditServer {
    /// Binds `listen` (port 0: any free port) and serves the battery's probes. Call from a tokio
    /// runtime.
    pub async fn start(listen: SocketAddr, probes: &[Probe]) -> std::io::Result<Self> {
        Self::start_in_front(listen, probes, None).await
    }

    /// [`AuditServer::start`], with the probes in front of `upstream`: a request the probe
    /// would answer with success is forwarded there and its answer returned, and the
    /// idempotency probe's first request is forwarded (the commit happens there) before its
    /// answer is lost; the faults (4xx, 429 and 503 with `Retry-After`, the holds) stay the
    /// probes' own, so the scorecard is the same one.
    pub async fn start_in_front(
        listen: SocketAddr,
        probes: &[Probe],
        upstream: Option<crate::http_proxy::Upstream>,
    ) -> std::io::Result<Self> {
        let upstream = match upstream {
            None => None,
            Some(u) => Some((
                u,
                reqwest::Client::builder()
                    .no_proxy()
                    .redirect(reqwest::redirect::Policy::none())
                    .timeout(Duration::from_secs(30))
                    .build()
                    .map_err(std::io::Error::other)?,
            )),
        };
        let listener = TcpListener::bind(listen).await?;
        let addr = listener.local_addr()?;
        let t0 = Instant::now();
        let t0_unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis() as u64;
        let shared = Arc::new(Shared {
            upstream,
            t0,
            t0_unix_ms,
            probes: probes.iter().map(|p| (p.name.clone(), p.clone())).collect(),
            targets: Mutex::new(HashMap::new()),
            records: Mutex::new(Vec::new()),
        });
        let app = Router::new()
            .route("/audit/{probe}/{instance}", any(probe))
            .with_state(shared.clone());
        let (stop, stop_rx) = watch::channel(false);
        let task = tokio::spawn(async move {
            let graceful = GracefulShutdown::new();
            crate::listen::accept_loop(listener, app, &graceful, MAX_CONNECTIONS, stop_rx).await;
            // Held requests are answered or dropped at once: the audit is over.
            drop(graceful);
        });
        Ok(Self {
            shared,
            addr,
            stop,
            task: Mutex::new(Some(task)),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL of one instance of a probe.
    pub fn url(&self, probe: &str, instance: u32) -> String {
        format!("http://{}/audit/{probe}/{instance}", self.addr)
    }

    /// µs since the audit started.
    pub fn now_us(&self) -> u64 {
        self.shared.us(Instant::now())
    }

    /// Adds a record of the lab's own (a client run, the start and the end).
    pub fn record(&self, r: AuditRecord) {
        self.shared.records.lock().expect("records").push(r);
    }

    /// Requests received so far on `probe` (all instances), and how many are still open.
    pub fn activity(&self, probe: &str) -> (u32, u32) {
        let received = self
            .shared
            .targets
            .lock()
            .expect("targets")
            .iter()
            .filter(|((p, _), _)| p == probe)
            .map(|(_, t)| t.requests())
            .sum::<u32>();
        let ended = self
            .shared
            .records
            .lock()
            .expect("records")
            .iter()
            .filter(|r| matches!(r, AuditRecord::Request(q) if q.probe == probe))
            .count() as u32;
        (received, received.saturating_sub(ended))
    }

    /// Every record so far, in the order they were made (the caller sorts them).
    pub fn take_records(&self) -> Vec<AuditRecord> {
        std::mem::take(&mut *self.shared.records.lock().expect("records"))
    }

    /// Stops accepting connections; those still open end with the runtime.
    pub async fn stop_listening(&self) {
        let _ = self.stop.send(true);
        let task = self.task.lock().expect("task").take();
        if let Some(task) = task {
            let _ = tokio::time::timeout(Duration::from_secs(2), task).await;
        }
    }
}

/// Writes a request's record when dropped: answered, or abandoned by its client.
struct Pending {
    shared: Arc<Shared>,
    record: Option<ProbeRequest>,
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(mut r) = self.record.take() {
            r.ended_us = self.shared.us(Instant::now());
            self.shared
                .records
                .lock()
                .expect("records")
                .push(AuditRecord::Request(r));
        }
    }
}

async fn probe(
    State(shared): State<Arc<Shared>>,
    Path((name, instance)): Path<(String, u32)>,
    method: Method,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let arrived = Instant::now();
    let Some(kind) = shared.probes.get(&name).map(|p| p.kind) else {
        return (StatusCode::NOT_FOUND, "no such probe\n").into_response();
    };
    let header = |h: &str| {
        headers
            .get(h)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.chars().take(200).collect::<String>())
    };
    let key = header("idempotency-key");
    let now_unix_ms = shared.t0_unix_ms + arrived.duration_since(shared.t0).as_millis() as u64;
    let answer = shared
        .targets
        .lock()
        .expect("targets")
        .entry((name.clone(), instance))
        .or_insert_with(|| ProbeTarget::new(kind))
        .answer(now_unix_ms, key.as_deref());
    let not_before_us = answer
        .not_before_unix_ms
        .map(|ms| ms.saturating_sub(shared.t0_unix_ms) * 1000);
    let mut pending = Pending {
        shared: shared.clone(),
        record: Some(ProbeRequest {
            probe: name,
            instance,
            attempt: answer.attempt,
            method: method.as_str().chars().take(16).collect(),
            arrived_us: shared.us(arrived),
            ended_us: 0,
            status: None,
            retry_after: answer.retry_after.clone(),
            not_before_us,
            idempotency_key: key,
            operation: header(OPERATION_HEADER),
            charged: answer.charged,
        }),
    };
    // In front of a user's service: a success, and a commit whose answer the probe loses,
    // happen there.
    let forwards = answer.hold.is_none() && (200..300).contains(&answer.status);
    let mut forwarded = None;
    if let Some((up, client)) = shared
        .upstream
        .as_ref()
        .filter(|_| forwards || answer.charged)
    {
        forwarded = Some(forward(up, client, &method, &headers, body).await);
    }
    if let Some(hold) = answer.hold {
        tokio::time::sleep(hold).await;
    }
    let (code, text) = match forwarded.filter(|_| forwards) {
        Some((code, text)) => (code, text),
        None => (answer.status, format!("{}\n", answer.status).into()),
    };
    if let Some(r) = pending.record.as_mut() {
        r.status = Some(code);
    }
    drop(pending);
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut resp = (status, text).into_response();
    if let Some(ra) = answer
        .retry_after
        .and_then(|v| axum::http::HeaderValue::from_str(&v).ok())
    {
        resp.headers_mut().insert("retry-after", ra);
    }
    resp
}

/// One request sent on to the user's service: its status and body (502 and the cause when it
/// did not answer).
async fn forward(
    upstream: &crate::http_proxy::Upstream,
    client: &reqwest::Client,
    method: &Method,
    headers: &HeaderMap,
    body: axum::body::Bytes,
) -> (u16, axum::body::Bytes) {
    let mut out = client
        .request(method.clone(), upstream.0.clone())
        .body(body);
    for (name, value) in headers {
        if !crate::http_forward::hop_by_hop(name) && name != "host" {
            out = out.header(name, value);
        }
    }
    match out.send().await {
        Ok(r) => {
            let code = r.status().as_u16();
            (code, r.bytes().await.unwrap_or_default())
        }
        Err(e) => (
            502,
            format!("lab audit: the upstream did not answer: {e}\n").into(),
        ),
    }
}
