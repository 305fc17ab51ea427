//! The fault proxy in front of the dependency (issue 27, item 1 "in the topology"): when a
//! run's timeline has wire phases (`refused`, `toxic`), the work address callers use is a
//! [`crate::proxy`] proxy named `dependency`, and the dependency listens behind it.
//! Each wire phase is applied at its start and undone at its end, measured from the run's time
//! zero, through the proxy's own Toxiproxy API: `refused` disables the proxy (nothing listens,
//! the open connections are closed) and enables it again; a `toxic` phase adds a toxic named
//! `phase-<i>` and deletes it. Every connection and change goes to the run's proxy log,
//! `<scenario>/wire-<strategy>-seed<seed>.jsonl` beside its server log.
//!
//! The proxy is either in this process ([`WireFront::start`], `lab run` and `lab serve`: the
//! dependency listens behind it on loopback, every run goes through it, and `--proxy-api ADDR`
//! serves its API over HTTP so a Toxiproxy client can add faults of its own), or a `lab proxy`
//! of its own ([`WireFront::remote`], `--wire-proxy`: compose's `wire-*` services, item 5),
//! driven over HTTP through the same API and the lab's `POST /lab/log`. A remote proxy carries
//! only the runs with wire phases: the start call's answer names its work address (`work`),
//! and the other runs go to the dependency directly, as in `lab run`.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, Request};
use axum::Router;
use e03_model::timeline::{WireFault, WireWindow};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tower::ServiceExt;

use crate::proxy::{self, Proxies};

/// The proxy's name in its API.
pub const FRONT: &str = "dependency";

/// How long one call of a remote proxy's API may take.
const REMOTE_CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// Where the proxy's API is.
#[derive(Clone)]
enum Api {
    /// In this process.
    Local(Router),
    /// A `lab proxy` at this base URL.
    Remote { http: reqwest::Client, base: String },
}

/// The proxy in front of the work listener, and the task applying the current run's phases.
pub struct WireFront {
    api: Api,
    /// The in-process proxy (its log is set directly).
    proxies: Option<Arc<Proxies>>,
    /// Where callers connect to an in-process proxy.
    addr: Option<SocketAddr>,
    /// A remote proxy's work address for callers (`http://HOST:PORT`).
    remote_work: Option<String>,
    driver: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for WireFront {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WireFront")
            .field("addr", &self.addr)
            .field("remote_work", &self.remote_work)
            .finish()
    }
}

/// A remote proxy's settings (`--wire-proxy URL`, `--wire-upstream HOST:PORT`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RemoteFront {
    /// The `lab proxy` API's base URL, `http://HOST:PORT`.
    pub api: String,
    /// The dependency's work address as the proxy reaches it; `None`: the address its work
    /// listener is bound to (not 0.0.0.0, [`crate::cli`] checks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
}

impl WireFront {
    /// A proxy in this process listening on `listen` (port 0: any free one) in front of
    /// `upstream`.
    pub async fn start(
        listen: SocketAddr,
        upstream: SocketAddr,
        seed: u64,
    ) -> anyhow::Result<WireFront> {
        let proxies = Proxies::new(None, seed);
        let api = Api::Local(proxy::api(proxies.clone()));
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
            api,
            proxies: Some(proxies),
            addr: Some(addr),
            remote_work: None,
            driver: Mutex::new(None),
        })
    }

    /// The `lab proxy` API at `api` as the front: its proxy `dependency` (made again if a
    /// previous dependency left one) in front of `upstream`, listening on any free port
    /// of the API's host (every address of it when the host is a name, as in compose). Waits up
    /// to `wait` for the API to answer.
    pub async fn remote(api: &str, upstream: &str, wait: Duration) -> anyhow::Result<Self> {
        let url =
            reqwest::Url::parse(api).map_err(|e| anyhow::anyhow!("--wire-proxy {api}: {e}"))?;
        let host = url
            .host_str()
            .ok_or_else(|| anyhow::anyhow!("--wire-proxy {api}: no host"))?
            .to_string();
        let literal = host.trim_start_matches('[').trim_end_matches(']');
        let bind = match literal.parse::<std::net::IpAddr>() {
            Ok(_) => host.clone(),
            Err(_) => "0.0.0.0".to_string(),
        };
        let http = reqwest::Client::builder()
            .no_proxy()
            .timeout(REMOTE_CALL_TIMEOUT)
            .build()?;
        let fail = |e: &dyn std::fmt::Display| anyhow::anyhow!("--wire-proxy {api}: {e}");
        let api = Api::Remote {
            http,
            base: api.trim_end_matches('/').to_string(),
        };
        let deadline = Instant::now() + wait;
        loop {
            match call(&api, Method::GET, "/version", None).await {
                Ok(_) => break,
                Err(e) if Instant::now() >= deadline => {
                    return Err(fail(&format!("no answer: {e}")))
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(250)).await,
            }
        }
        let front = format!("/proxies/{FRONT}");
        if call(&api, Method::GET, &front, None).await.is_ok() {
            call(&api, Method::DELETE, &front, None)
                .await
                .map_err(|e| fail(&e))?;
        }
        let body = serde_json::json!({
            "name": FRONT,
            "listen": format!("{bind}:0"),
            "upstream": upstream,
        });
        let view = call(&api, Method::POST, "/proxies", Some(body))
            .await
            .map_err(|e| fail(&e))?;
        let port = view["listen"]
            .as_str()
            .and_then(|a| a.parse::<SocketAddr>().ok())
            .map(|a| a.port())
            .ok_or_else(|| fail(&format!("the proxy named no listen address: {view}")))?;
        // An IPv6 host comes with its brackets.
        let remote_work = format!("http://{host}:{port}");
        Ok(WireFront {
            api,
            proxies: None,
            addr: None,
            remote_work: Some(remote_work),
            driver: Mutex::new(None),
        })
    }

    /// Where callers connect to an in-process proxy.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.addr
    }

    /// The in-process proxy's Toxiproxy API, to serve over HTTP (`--proxy-api`).
    pub fn api(&self) -> Option<Router> {
        match &self.api {
            Api::Local(router) => Some(router.clone()),
            Api::Remote { .. } => None,
        }
    }

    /// Whether a run with these wire phases goes through the proxy: every run through one in
    /// process, only runs with wire phases through a remote one.
    pub fn carries(&self, wire: &[WireWindow]) -> bool {
        self.remote_work.is_none() || !wire.is_empty()
    }

    /// The work address callers of a run with these phases are told (the start call's
    /// `work`): a remote proxy's, for a run it carries.
    pub fn work_url(&self, wire: &[WireWindow]) -> Option<String> {
        self.remote_work.clone().filter(|_| !wire.is_empty())
    }

    /// Starts applying `wire` from time zero `t0`, logging into `log` under the log directory
    /// `dir`, the connections' draws seeded with the run's `seed` (the service ends the
    /// previous run's phases first, [`Self::end_run`]). A run the proxy does not carry
    /// ([`Self::carries`]) is left alone.
    pub async fn begin_run(
        &self,
        t0: Instant,
        wire: Vec<WireWindow>,
        seed: u64,
        dir: &Path,
        log: &Path,
    ) -> std::io::Result<()> {
        if !self.carries(&wire) {
            return Ok(());
        }
        match &self.proxies {
            Some(proxies) => {
                let path = dir.join(log);
                let file = std::fs::File::create(&path)?;
                proxies.begin_run(Some((file, path)), seed).await
            }
            None => {
                let body = serde_json::json!({ "file": log.to_string_lossy(), "seed": seed });
                call(&self.api, Method::POST, "/lab/log", Some(body))
                    .await
                    .map_err(std::io::Error::other)?;
            }
        }
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
        Ok(())
    }

    /// Stops the phases of the run, puts the proxy back as it was (enabled, no toxic), and
    /// closes the run's proxy log.
    pub async fn end_run(&self) {
        let task = self.driver.lock().unwrap_or_else(|e| e.into_inner()).take();
        let Some(task) = task else {
            return;
        };
        task.abort();
        let _ = task.await;
        if let Err(e) = call(&self.api, Method::POST, "/reset", None).await {
            tracing::error!("the fault proxy was not reset: {e}");
        }
        match &self.proxies {
            Some(proxies) => proxies.set_log(None).await,
            None => {
                let body = serde_json::json!({ "file": null });
                if let Err(e) = call(&self.api, Method::POST, "/lab/log", Some(body)).await {
                    tracing::error!("the fault proxy's log was not closed: {e}");
                }
            }
        }
    }

    /// Asks a remote proxy to end (the dependency is ending: compose's run is over).
    pub async fn shutdown_remote(&self) {
        if self.remote_work.is_some() {
            if let Err(e) = call(&self.api, Method::POST, "/lab/shutdown", None).await {
                tracing::warn!("the fault proxy was not shut down: {e}");
            }
        }
    }
}

/// Applies (`on`) or undoes phase `i`.
async fn apply(api: &Api, i: usize, w: &WireWindow, on: bool) -> Result<(), ApiError> {
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
            let kind = serde_json::to_value(toxic).map_err(ApiError::transport)?;
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

/// A call of the fault proxy's API that failed; its text goes to a log line or a start error.
#[derive(Debug, thiserror::Error)]
enum ApiError {
    /// The call could not be made, or its answer not read: the library's reason.
    #[error("{0}")]
    Transport(String),
    /// The remote proxy did not answer `url`.
    #[error("{url}: {error}")]
    Unreachable { url: String, error: String },
    /// An answer other than 2xx: its status and body.
    #[error("{status}: {body}")]
    Status { status: u16, body: String },
}

impl ApiError {
    fn transport(e: impl std::fmt::Display) -> Self {
        ApiError::Transport(e.to_string())
    }
}

/// One call of the proxy's API; the JSON answer of a 2xx (null for a 204, a string for text).
async fn call(
    api: &Api,
    method: Method,
    path: &str,
    body: Option<serde_json::Value>,
) -> Result<serde_json::Value, ApiError> {
    let (status, bytes) = match api {
        Api::Local(router) => {
            let req = Request::builder()
                .method(method)
                .uri(path)
                .body(body.map_or_else(Body::empty, |b| Body::from(b.to_string())))
                .map_err(ApiError::transport)?;
            let resp = router
                .clone()
                .oneshot(req)
                .await
                .map_err(ApiError::transport)?;
            let status = resp.status();
            let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20)
                .await
                .map_err(ApiError::transport)?;
            (status.as_u16(), bytes.to_vec())
        }
        Api::Remote { http, base } => {
            let method = reqwest::Method::from_bytes(method.as_str().as_bytes())
                .map_err(ApiError::transport)?;
            let mut req = http.request(method, format!("{base}{path}"));
            if let Some(b) = body {
                req = req
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .body(b.to_string());
            }
            let resp = req.send().await.map_err(|e| ApiError::Unreachable {
                url: format!("{base}{path}"),
                error: e.to_string(),
            })?;
            let status = resp.status().as_u16();
            let bytes = resp.bytes().await.map_err(ApiError::transport)?;
            (status, bytes.to_vec())
        }
    };
    if !(200..300).contains(&status) {
        return Err(ApiError::Status {
            status,
            body: String::from_utf8_lossy(&bytes).into_owned(),
        });
    }
    if bytes.is_empty() {
        return Ok(serde_json::Value::Null);
    }
    // `GET /version` answers text.
    Ok(serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| serde_json::Value::String(String::from_utf8_lossy(&bytes).into())))
}
