//! One request through `lab proxy --http`: logged as it arrives, decided by the core's
//! [`FaultProxy`] (the scenario's phases), then forwarded to the upstream, answered, held or
//! reset, and logged again when it ends (a `response` record when an answer went out, and a
//! `proxied` record always: the fault, the upstream's status and time, how it ended).
//!
//! The log is a server log of the lab's schema, so `lab analyze --server-log` reads it as a
//! dependency's: every arrival counted, with the `x-e03-*` identity when the caller sent it.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use e03_model::events::{
    Arrival, Cause, Event, ProxiedEnd, ProxiedRecord, Response as ResponseRecord,
};
use e03_model::fault_proxy::{Act, Decision};
use e03_model::http_fault::RequestView;

use crate::identity::Identity;
use crate::proxy_run::{unix_ms, ProxyRun};

/// The largest request body the proxy forwards (a larger one is answered 413, logged).
pub const MAX_REQUEST_BODY: usize = 16 * 1024 * 1024;
/// The largest answer it reads from the upstream (a larger one is a 502, logged).
pub const MAX_ANSWER_BODY: usize = 64 * 1024 * 1024;

/// Headers of one connection, never forwarded either way (RFC 9110, section 7.6.1), and the
/// `Host` the proxy's client sets for the upstream.
const HOP_BY_HOP: [&str; 9] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// What every request of one proxy shares: the upstream, and the run in progress.
pub struct Forwarder {
    pub upstream: reqwest::Url,
    pub client: reqwest::Client,
    /// Envoy's fault headers honoured (`--fault-headers`).
    pub fault_headers: bool,
    /// `GET /health` answered by the proxy, not forwarded: a proxy with a control listener
    /// stands where the lab's dependency stands, and the swarm asks its work address whether it
    /// is up before a run.
    pub own_health: bool,
    /// The run in progress; none: requests are answered 503 (a proxy with a control listener
    /// between runs).
    pub run: std::sync::RwLock<Option<Arc<ProxyRun>>>,
}

impl Forwarder {
    pub fn current(&self) -> Option<Arc<ProxyRun>> {
        self.run.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Puts `run` in place of the current one; the one it replaces.
    pub fn replace(&self, run: Option<Arc<ProxyRun>>) -> Option<Arc<ProxyRun>> {
        std::mem::replace(
            &mut *self.run.write().unwrap_or_else(|e| e.into_inner()),
            run,
        )
    }
}

/// The `proxied` record of a request still in the proxy: written when it is dropped, so a
/// request whose caller left (or that the proxy's stop cut) is recorded too.
struct Pending {
    fwd: Arc<ProxyRun>,
    t0: Instant,
    record: Option<ProxiedRecord>,
}

impl Pending {
    fn done(&mut self, end: ProxiedEnd, status: Option<u16>, cause: Option<Cause>) {
        let Some(mut r) = self.record.take() else {
            return;
        };
        r.t_us = self.t0.elapsed().as_micros() as u64;
        r.end = end;
        r.status = status;
        if let (Some(status), Some(cause)) = (status, cause) {
            self.fwd.record(Event::Response(ResponseRecord {
                tag: r.tag.clone(),
                seq: r.seq,
                t_us: r.t_us,
                status,
                cause,
                admit_us: None,
                immediate: true,
                cost: None,
            }));
        }
        self.fwd.record(Event::Proxied(r));
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.done(ProxiedEnd::Left, None, None);
    }
}

/// The handler of every path and method.
pub async fn handle(State(proxy): State<Arc<Forwarder>>, req: Request) -> Response {
    if proxy.own_health
        && req.method() == axum::http::Method::GET
        && req.uri().path() == e03_plan::control::HEALTH_PATH
    {
        return text(StatusCode::OK, "ok");
    }
    let Some(fwd) = proxy.current() else {
        return text(
            StatusCode::SERVICE_UNAVAILABLE,
            "lab proxy: no run in progress\n",
        );
    };
    let t0 = fwd.start_at(None);
    let arrived = t0.elapsed();
    let seq = fwd.seq.fetch_add(1, Ordering::Relaxed);
    let (parts, body) = req.into_parts();
    let id = Identity::from_headers(&parts.headers);
    fwd.record(Event::Arrival(Arrival {
        tag: fwd.tag.clone(),
        seq,
        t_us: arrived.as_micros() as u64,
        client: id.client,
        op: id.op,
        attempt: id.attempt,
        class: id.class,
    }));
    let path = parts
        .uri
        .path_and_query()
        .map_or("/".to_string(), |p| p.as_str().to_string());
    let mut pending = Pending {
        fwd: Arc::clone(&fwd),
        t0,
        record: Some(ProxiedRecord {
            tag: fwd.tag.clone(),
            seq,
            t_us: 0,
            method: parts.method.to_string(),
            path: path.clone(),
            fault: None,
            end: ProxiedEnd::Left,
            status: None,
            upstream_status: None,
            upstream_us: None,
            upstream_error: None,
            notes: Vec::new(),
        }),
    };
    let body = match axum::body::to_bytes(body, MAX_REQUEST_BODY).await {
        Ok(b) => b,
        Err(e) => {
            note(&mut pending, format!("request body not read: {e}"));
            pending.done(ProxiedEnd::Answered, Some(413), Some(Cause::Injected));
            return text(
                StatusCode::PAYLOAD_TOO_LARGE,
                "lab proxy: request body too large or cut",
            );
        }
    };
    let decision = {
        let pairs: Vec<(&str, &str)> = parts
            .headers
            .iter()
            .filter_map(|(n, v)| Some((n.as_str(), v.to_str().ok()?)))
            .collect();
        let view = RequestView {
            method: parts.method.as_str(),
            path: parts.uri.path(),
            headers: &pairs,
        };
        let mut machine = fwd.machine.lock().unwrap_or_else(|e| e.into_inner());
        if proxy.fault_headers {
            machine.decide_with_headers(arrived, &view)
        } else {
            machine.decide(arrived, &view)
        }
    };
    let Decision {
        wait,
        act,
        fault,
        note: why,
    } = decision;
    if let Some(r) = pending.record.as_mut() {
        r.fault = fault.clone();
        r.notes.extend(why);
    }
    if !wait.is_zero() {
        tokio::time::sleep_until((t0 + arrived + wait).into()).await;
    }
    match act {
        Act::Answer {
            status,
            retry_after,
            body,
            cause,
        } => {
            let mut res = Response::new(Body::from(body.unwrap_or_else(|| {
                format!("lab proxy: {}\n", fault.as_deref().unwrap_or("answered"))
            })));
            *res.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
            if let Some(ra) = retry_after {
                if let Ok(v) = HeaderValue::from_str(&ra.value(unix_ms() / 1000)) {
                    res.headers_mut().insert("retry-after", v);
                }
            }
            pending.done(ProxiedEnd::Answered, Some(status), Some(cause));
            res
        }
        Act::Hang => {
            // Held until the caller leaves (hyper drops this future) or the proxy stops.
            std::future::pending::<()>().await;
            unreachable!("a pending future never resolves")
        }
        Act::Reset => {
            pending.done(ProxiedEnd::Reset, None, None);
            crate::lost::lost_answer()
        }
        Act::Forward {
            lose_answer,
            throughput_kib_s,
            capacity_factor,
        } => {
            let how = How {
                lose_answer,
                throughput_kib_s,
                capacity_factor,
            };
            forward(
                &proxy,
                &fwd,
                &mut pending,
                parts.method,
                &path,
                &parts.headers,
                body,
                how,
            )
            .await
        }
    }
}

fn note(pending: &mut Pending, text: String) {
    if let Some(r) = pending.record.as_mut() {
        r.notes.push(text);
    }
}

fn text(status: StatusCode, body: &'static str) -> Response {
    (status, body).into_response()
}

/// How a forwarded request's answer goes back.
struct How {
    lose_answer: bool,
    throughput_kib_s: Option<u64>,
    /// A degraded phase's: the answer held until the upstream's time divided by it passed.
    capacity_factor: Option<f64>,
}

#[allow(clippy::too_many_arguments)]
async fn forward(
    proxy: &Forwarder,
    fwd: &ProxyRun,
    pending: &mut Pending,
    method: axum::http::Method,
    path: &str,
    headers: &HeaderMap,
    body: Bytes,
    how: How,
) -> Response {
    let url = match proxy.upstream.join(path.trim_start_matches('/')) {
        Ok(u) => u,
        Err(e) => {
            note(
                pending,
                format!("path {path:?} not joined to the upstream: {e}"),
            );
            pending.done(ProxiedEnd::Answered, Some(400), Some(Cause::Injected));
            return text(StatusCode::BAD_REQUEST, "lab proxy: bad path\n");
        }
    };
    let mut out = proxy.client.request(method, url).body(body);
    for (name, value) in headers {
        if !hop_by_hop(name) && name != "host" {
            out = out.header(name, value);
        }
    }
    let sent = Instant::now();
    let answer = match out.send().await {
        Ok(r) => {
            let status = r.status();
            let head = r.headers().clone();
            let upstream_us = sent.elapsed().as_micros() as u64;
            match read_limited(r).await {
                Ok(b) => Ok((status, head, b, upstream_us)),
                Err(e) => Err(format!("answer body: {e}")),
            }
        }
        Err(e) => Err(error_chain(&e)),
    };
    let (status, head, bytes, upstream_us) = match answer {
        Ok(a) => a,
        Err(e) => {
            if let Some(r) = pending.record.as_mut() {
                r.upstream_error = Some(e.clone());
            }
            pending.done(ProxiedEnd::Answered, Some(502), Some(Cause::Unreachable));
            return (
                StatusCode::BAD_GATEWAY,
                format!("lab proxy: the upstream did not answer: {e}\n"),
            )
                .into_response();
        }
    };
    if let Some(r) = pending.record.as_mut() {
        r.upstream_status = Some(status.as_u16());
        r.upstream_us = Some(upstream_us);
    }
    if let Some(f) = how.capacity_factor.filter(|f| *f > 0.0 && *f < 1.0) {
        let stretched = Duration::from_micros(upstream_us).div_f64(f);
        tokio::time::sleep_until((sent + stretched).into()).await;
    }
    if how.lose_answer {
        // The upstream did the work; its answer never reaches the caller.
        if let Some(r) = pending.record.take() {
            let mut r = r;
            r.t_us = pending.t0.elapsed().as_micros() as u64;
            fwd.record(Event::Response(ResponseRecord {
                tag: r.tag.clone(),
                seq: r.seq,
                t_us: r.t_us,
                status: status.as_u16(),
                cause: Cause::Lost,
                admit_us: None,
                immediate: true,
                cost: None,
            }));
            r.end = ProxiedEnd::Reset;
            fwd.record(Event::Proxied(r));
        }
        return crate::lost::lost_answer();
    }
    let mut res = match how.throughput_kib_s {
        Some(kib) => Response::new(Body::new(crate::paced::PacedBody::new(bytes, kib))),
        None => Response::new(Body::from(bytes)),
    };
    *res.status_mut() = status;
    for (name, value) in &head {
        if !hop_by_hop(name) && name != "content-length" {
            res.headers_mut().append(name.clone(), value.clone());
        }
    }
    pending.done(
        ProxiedEnd::Answered,
        Some(status.as_u16()),
        Some(Cause::Upstream),
    );
    res
}

pub(crate) fn hop_by_hop(name: &HeaderName) -> bool {
    HOP_BY_HOP.contains(&name.as_str())
}

/// An upstream answer's body that could not be read whole.
#[derive(Debug, thiserror::Error)]
enum BodyError {
    /// The read failed: the reasons, outermost first.
    #[error("{0}")]
    Read(String),
    /// Over [`MAX_ANSWER_BODY`].
    #[error("larger than {MAX_ANSWER_BODY} bytes")]
    TooLarge,
}

/// The answer's body, at most [`MAX_ANSWER_BODY`] bytes.
async fn read_limited(mut r: reqwest::Response) -> Result<Bytes, BodyError> {
    let mut buf = Vec::new();
    while let Some(chunk) = r
        .chunk()
        .await
        .map_err(|e| BodyError::Read(error_chain(&e)))?
    {
        if buf.len() + chunk.len() > MAX_ANSWER_BODY {
            return Err(BodyError::TooLarge);
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(buf))
}

/// An error with its causes, `a: b: c`, as the lab's messages give them.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        cause = c.source();
    }
    s
}

/// How long the proxy waits for an upstream's whole answer by default.
pub const UPSTREAM_TIMEOUT: Duration = Duration::from_secs(30);
