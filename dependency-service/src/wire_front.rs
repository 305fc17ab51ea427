//! The fault proxy in front of the dependency (issue 27, item 1 "in the topology"): when a
//! run's timeline has wire phases (`refused`, `toxic`), the work address callers use is a
//! [`crate::proxy`] proxy named `dependency`, and the dependency listens behind it on loopback.
//! Each wire phase is applied at its start and undone at its end, measured from the run's time
//! zero, through the proxy's own Toxiproxy API (in process): `refused` disables the proxy
//! (nothing listens, the open connections are closed) and enables it again; a `toxic` phase
//! adds a toxic named `phase-<i>` and deletes it. Every connection and change goes to the run's
//! proxy log, `<scenario>/wire-<strategy>-seed<seed>.jsonl` beside its server log. With
//! `--proxy-api ADDR` the same API is served over HTTP, so a Toxiproxy client can add faults
//! of its own during a run.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::http::{Method, Request};
use axum::Router;
use e03_core::timeline::{WireFault, WireWindow};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tower::ServiceExt;

use crate::proxy::{self, Proxies};

/// The proxy's name in its API.
pub const FRONT: &str = "dependency";

/// The proxy in front of the work listener, and the task applying the current run's phases.
pub struct WireFront {
    proxies: Arc<Proxies>,
    api: Router,
    addr: SocketAddr,
    driver: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for WireFront {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WireFront")
            .field("addr", &self.addr)
            .finish()
    }
}

impl WireFront {
    /// A proxy listening on `listen` (port 0: any free one) in front of `upstream`.
    pub async fn start(
        listen: SocketAddr,
        upstream: SocketAddr,
        seed: u64,
    ) -> anyhow::Result<WireFront> {
        let proxies = Proxies::new(None, seed);
        let api = proxy::api(proxies.clone());
        let body = serde_json::json!({
            "name": FRONT,
            "listen": listen.to_string(),
            "upstream": upstream.to_string(),
        });
        let view = call(&api, Method::POST, "/proxies", Some(body))
            .await
            .map_err(|e| anyhow::anyhow!("the fault proxy in front of the dependency: {e}"))?;
        let addr = view["listen"]
            .as_str()
            .and_then(|a| a.parse().ok())
            .ok_or_else(|| anyhow::anyhow!("the fault proxy named no listen address: {view}"))?;
        Ok(WireFront {
            proxies,
            api,
            addr,
            driver: Mutex::new(None),
        })
    }

    /// Where callers connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The proxy's Toxiproxy API, to serve over HTTP (`--proxy-api`).
    pub fn api(&self) -> Router {
        self.api.clone()
    }

    /// Starts applying `wire` from time zero `t0`, logging into `log` (the service ends the
    /// previous run's phases first, [`Self::end_run`]).
    pub async fn begin_run(&self, t0: Instant, wire: Vec<WireWindow>, log: std::fs::File) {
        self.proxies.set_log(Some(log));
        let api = self.api.clone();
        let task = tokio::spawn(async move {
            for (i, w) in wire.iter().enumerate() {
                tokio::time::sleep_until(t0 + w.start).await;
                if let Err(e) = apply(&api, i, w, true).await {
                    tracing::error!("wire phase {i} ({}) not applied: {e}", w.fault.name());
                }
                tokio::time::sleep_until(t0 + w.end).await;
                if let Err(e) = apply(&api, i, w, false).await {
                    tracing::error!("wire phase {i} ({}) not undone: {e}", w.fault.name());
                }
            }
        });
        *self.driver.lock().unwrap_or_else(|e| e.into_inner()) = Some(task);
    }

    /// Stops the phases of the run, puts the proxy back as it was (enabled, no toxic), and
    /// closes the run's proxy log.
    pub async fn end_run(&self) {
        let task = self.driver.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(task) = task {
            task.abort();
            let _ = task.await;
            if let Err(e) = call(&self.api, Method::POST, "/reset", None).await {
                tracing::error!("the fault proxy was not reset: {e}");
            }
        }
        self.proxies.set_log(None);
    }

    /// Records handed to the proxy log and not yet written.
    pub fn log_pending(&self) -> u64 {
        self.proxies.log_pending()
    }
}

/// Applies (`on`) or undoes phase `i`.
async fn apply(api: &Router, i: usize, w: &WireWindow, on: bool) -> Result<(), String> {
    let front = format!("/proxies/{FRONT}");
    match (w.fault, on) {
        (WireFault::Refused, on) => call(
            api,
            Method::POST,
            &front,
            Some(serde_json::json!({ "enabled": !on })),
        )
        .await
        .map(drop),
        (
            WireFault::Toxic {
                toxic,
                stream,
                toxicity,
            },
            true,
        ) => {
            let kind = serde_json::to_value(toxic).map_err(|e| e.to_string())?;
            let body = serde_json::json!({
                "name": format!("phase-{i}"),
                "type": kind["type"],
                "attributes": kind["attributes"],
                "stream": stream,
                "toxicity": toxicity,
            });
            call(api, Method::POST, &format!("{front}/toxics"), Some(body))
                .await
                .map(drop)
        }
        (WireFault::Toxic { .. }, false) => call(
            api,
            Method::DELETE,
            &format!("{front}/toxics/phase-{i}"),
            None,
        )
        .await
        .map(drop),
    }
}

/// One call of the proxy's API, in process; the JSON answer of a 2xx (null for a 204).
async fn call(
    api: &Router,
    method: Method,
    path: &str,
    body: Option<serde_json::Value>,
) -> Result<serde_json::Value, String> {
    let req = Request::builder()
        .method(method)
        .uri(path)
        .body(body.map_or_else(Body::empty, |b| Body::from(b.to_string())))
        .map_err(|e| e.to_string())?;
    let resp = api.clone().oneshot(req).await.map_err(|e| e.to_string())?;
    let status = resp.status();
    let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20)
        .await
        .map_err(|e| e.to_string())?;
    if !status.is_success() {
        return Err(format!("{status}: {}", String::from_utf8_lossy(&bytes)));
    }
    if bytes.is_empty() {
        return Ok(serde_json::Value::Null);
    }
    serde_json::from_slice(&bytes).map_err(|e| e.to_string())
}
