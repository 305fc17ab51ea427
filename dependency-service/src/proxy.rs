//! `lab proxy`: a TCP fault proxy that serves Toxiproxy's HTTP API, the live driver of the core's
//! toxics ([`e03_core::wire`]). Issue "Faults on the wire", item 1.
//!
//! Why not the `noxious` crate (a Rust port of Toxiproxy, the first suggestion): its last
//! release is 1.0.4 of April 2021, on tokio-util 0.6 and rand 0.8 (a second copy of each in this
//! tree), and it keeps no record of the connections and toxics it applied, which the lab's
//! analysis needs. The toxics are a few lines each as a state machine of the core; their meaning
//! and the API follow Toxiproxy's README.
//!
//! The API (JSON, Toxiproxy's shapes and status codes: 201 created, 204 deleted, 400 invalid,
//! 404 unknown, 409 exists):
//!
//! - `GET /proxies`, `POST /proxies` (`{name, listen, upstream, enabled}`; port 0: any free
//!   port, the answer names it), `GET|POST|DELETE /proxies/{proxy}` (`POST` with
//!   `{"enabled": false}` stops listening, so connections are refused, and closes the open ones);
//! - `GET|POST /proxies/{proxy}/toxics`, `GET|POST|DELETE /proxies/{proxy}/toxics/{toxic}`;
//! - `POST /reset` (every proxy enabled, every toxic removed), `GET /version`;
//! - two calls of the lab's own, outside Toxiproxy's paths, for a dependency that drives this
//!   proxy from another container (compose's `wire-*` services, [`crate::wire_front`]):
//!   `POST /lab/log` (`{"file": "RUN/SCENARIO/wire-A-seed42.jsonl", "seed": 42}`, a relative
//!   path under `--log-dir` to a file named `wire-*.jsonl`: every record from now on goes
//!   there, and the draws of the connections from now on are seeded with the run's seed;
//!   `{"file": null}`: the log is flushed and closed) and `POST /lab/shutdown` (the process ends
//!   as on SIGTERM).
//!
//! A toxic added or removed applies to the open connections too (each draws its toxicity again),
//! as in Toxiproxy. Every connection is one record of the log when it ends (its toxics, its
//! bytes each way, how it ended) and every change of a proxy or a toxic is one record, written
//! off the request path ([`e03_io::sink::LogSink`]).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use e03_core::rng::{stream, Stream};
use e03_core::wire::{Direction, Link, Pass, Toxic};
use e03_io::sink::LogSink;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

/// What `GET /version` answers.
pub const VERSION: &str = concat!("e03-lab-proxy ", env!("CARGO_PKG_VERSION"));

/// A proxy as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProxyView {
    pub name: String,
    pub listen: String,
    pub upstream: String,
    pub enabled: bool,
    pub toxics: Vec<Toxic>,
}

/// `POST /proxies` and `POST /proxies/{proxy}`: every field optional on an update.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProxyBody {
    name: Option<String>,
    listen: Option<String>,
    upstream: Option<String>,
    enabled: Option<bool>,
}

pub use e03_core::wire::ProxyRecord;

fn wall_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

struct Proxy {
    name: String,
    /// As asked (a port of 0 is replaced by the bound one while listening).
    listen: String,
    upstream: String,
    enabled: bool,
    toxics: watch::Sender<Arc<Vec<Toxic>>>,
    /// The accept loop and every open connection, while enabled.
    running: Option<JoinSet<()>>,
}

impl Proxy {
    fn view(&self) -> ProxyView {
        ProxyView {
            name: self.name.clone(),
            listen: self.listen.clone(),
            upstream: self.upstream.clone(),
            enabled: self.enabled,
            toxics: self.toxics.borrow().as_ref().clone(),
        }
    }
}

/// The proxies of one `lab proxy` process.
pub struct Proxies {
    proxies: tokio::sync::Mutex<BTreeMap<String, Proxy>>,
    /// Its file is switched per run when the proxy stands in front of a dependency
    /// ([`Proxies::set_log`]); a record with no file open is not written.
    log: LogSink,
    /// The seed of the draws and the first connection they count from: `--seed` and 0, then
    /// each run's seed and its first connection ([`Proxies::begin_run`]), so a run's toxicity,
    /// jitter and slice draws depend on its seed and not on the runs before it.
    draws: Mutex<(u64, u64)>,
    conns: Arc<AtomicU64>,
    /// Where `POST /lab/log` may open a log (`--log-dir`); none: the call is refused.
    log_dir: Option<std::path::PathBuf>,
    /// `POST /lab/shutdown` was called.
    shutdown: tokio::sync::Notify,
    /// The connections' waits (a latency, a bandwidth's or a slicer's pieces, a reset's
    /// timeout): tokio's timer rounds each up to its next millisecond tick, so a slicer's 1 ms
    /// waits took 2 to 3 ms each on it; this one wakes within tens of µs of the toxic's figure.
    timer: precise_timer::PreciseTimer,
}

type Shared = Arc<Proxies>;

impl Proxies {
    /// `log`: the JSON Lines file every record goes to, and its path (none: no log). `seed`: the
    /// draws of toxicity, jitter and slice sizes (one stream per connection).
    pub fn new(log: Option<(std::fs::File, PathBuf)>, seed: u64) -> Shared {
        Self::build(log, None, seed)
    }

    /// No log until a `POST /lab/log` call opens one under `dir` (`--log-dir`).
    pub fn in_log_dir(dir: PathBuf, seed: u64) -> Shared {
        Self::build(None, Some(dir), seed)
    }

    fn build(log: Option<(std::fs::File, PathBuf)>, log_dir: Option<PathBuf>, seed: u64) -> Shared {
        let sink = LogSink::start().expect("a thread can be started");
        if let Some((file, path)) = log {
            sink.adopt(file, path);
        }
        Arc::new(Proxies {
            proxies: tokio::sync::Mutex::new(BTreeMap::new()),
            log: sink,
            draws: Mutex::new((seed, 0)),
            conns: Arc::new(AtomicU64::new(0)),
            log_dir,
            shutdown: tokio::sync::Notify::new(),
            timer: precise_timer::PreciseTimer::start(),
        })
    }

    /// Writes every record from now on to `file`, opened at its path (none: no log); the
    /// previous log is written, flushed, synced and closed before this returns.
    pub async fn set_log(&self, file: Option<(std::fs::File, PathBuf)>) {
        if let Err(e) = self.log.close().await {
            tracing::error!("{e}");
        }
        if let Some((file, path)) = file {
            self.log.adopt(file, path);
        }
    }

    /// A run begins: its records go to `file`, and the draws of the connections from now on
    /// are seeded with `seed`, counted from the next connection.
    pub async fn begin_run(&self, file: Option<(std::fs::File, PathBuf)>, seed: u64) {
        *self.draws.lock().unwrap_or_else(|e| e.into_inner()) =
            (seed, self.conns.load(Ordering::Relaxed));
        self.set_log(file).await;
    }

    /// The seed and the stream number of connection `conn`'s draws.
    fn draw_key(&self, conn: u64) -> (u64, u64) {
        let (seed, first) = *self.draws.lock().unwrap_or_else(|e| e.into_inner());
        (seed, conn.wrapping_sub(first))
    }

    /// Hands `r` to the log's writer at once: a connection's record is made in its `Drop`.
    fn record(&self, r: &ProxyRecord) {
        self.log.record_now(r);
    }

    fn change(&self, what: &str, proxy: &str, toxic: Option<Toxic>) {
        self.record(&ProxyRecord::Change {
            at_us: wall_us(),
            what: what.into(),
            proxy: proxy.into(),
            toxic,
        });
    }

    /// Records handed to the log and not yet written.
    pub fn log_pending(&self) -> u64 {
        self.log.pending()
    }
}

/// The API's router.
pub fn api(proxies: Shared) -> Router {
    Router::new()
        .route("/version", get(|| async { VERSION }))
        .route("/reset", post(reset))
        .route("/lab/log", post(lab_log))
        .route("/lab/shutdown", post(lab_shutdown))
        .route("/proxies", get(list).post(create))
        .route(
            "/proxies/{proxy}",
            get(show).post(update).delete(delete_proxy),
        )
        .route("/proxies/{proxy}/toxics", get(list_toxics).post(add_toxic))
        .route(
            "/proxies/{proxy}/toxics/{toxic}",
            get(show_toxic).post(update_toxic).delete(delete_toxic),
        )
        .with_state(proxies)
}

/// A JSON answer (axum's `json` feature is not built in).
fn json<T: Serialize>(status: StatusCode, value: &T) -> Response {
    (
        status,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        serde_json::to_string(value).expect("a value serializes"),
    )
        .into_response()
}

fn ok<T: Serialize>(value: &T) -> Response {
    json(StatusCode::OK, value)
}

fn error(status: StatusCode, msg: impl Into<String>) -> Response {
    let msg: String = msg.into();
    json(
        status,
        &serde_json::json!({"error": msg, "status": status.as_u16()}),
    )
}

fn bad(msg: impl Into<String>) -> Response {
    error(StatusCode::BAD_REQUEST, msg)
}

fn unknown_proxy(name: &str) -> Response {
    error(StatusCode::NOT_FOUND, format!("proxy not found: {name}"))
}

fn parse<T: serde::de::DeserializeOwned>(body: &Bytes, what: &str) -> Result<T, String> {
    serde_json::from_slice(body).map_err(|e| format!("invalid {what}: {e}"))
}

/// `POST /lab/log`: the body of the call.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LogBody {
    file: Option<String>,
    /// The run's seed: the draws of its connections ([`Proxies::begin_run`]); none: as before.
    #[serde(default)]
    seed: Option<u64>,
}

/// Where `file` goes under `dir`: a relative path of plain components whose file is a proxy
/// log the lab names (`wire-*.jsonl`), so the call never replaces a file the lab did not write.
fn log_path(dir: &std::path::Path, file: &str) -> Result<std::path::PathBuf, String> {
    use std::path::Component;
    let rel = std::path::Path::new(file);
    let plain = !file.is_empty()
        && file.len() <= 1024
        && rel.components().all(|c| matches!(c, Component::Normal(_)));
    let named = rel
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("wire-") && n.ends_with(".jsonl"));
    if !plain || !named {
        return Err(format!(
            "invalid log: file {file:?}: expected a relative path under --log-dir, without \
             '..', to a file named wire-*.jsonl"
        ));
    }
    Ok(dir.join(rel))
}

async fn lab_log(State(p): State<Shared>, body: Bytes) -> Response {
    let b: LogBody = match parse(&body, "log") {
        Ok(b) => b,
        Err(e) => return bad(e),
    };
    let Some(dir) = &p.log_dir else {
        return bad("invalid log: this proxy was started without --log-dir");
    };
    let Some(file) = b.file else {
        p.set_log(None).await;
        return StatusCode::NO_CONTENT.into_response();
    };
    let path = match log_path(dir, &file) {
        Ok(path) => path,
        Err(e) => return bad(e),
    };
    if let Some(parent) = path.parent() {
        if let Err(e) = std::fs::create_dir_all(parent) {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("cannot create {}: {e}", parent.display()),
            );
        }
    }
    match std::fs::File::create(&path) {
        Ok(f) => {
            match b.seed {
                Some(seed) => p.begin_run(Some((f, path)), seed).await,
                None => p.set_log(Some((f, path))).await,
            }
            StatusCode::NO_CONTENT.into_response()
        }
        Err(e) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot create {}: {e}", path.display()),
        ),
    }
}

async fn lab_shutdown(State(p): State<Shared>) -> Response {
    p.shutdown.notify_one();
    StatusCode::NO_CONTENT.into_response()
}

async fn list(State(p): State<Shared>) -> Response {
    let proxies = p.proxies.lock().await;
    let views: BTreeMap<String, ProxyView> =
        proxies.iter().map(|(k, v)| (k.clone(), v.view())).collect();
    ok(&views)
}

async fn show(State(p): State<Shared>, Path(name): Path<String>) -> Response {
    match p.proxies.lock().await.get(&name) {
        Some(proxy) => ok(&proxy.view()),
        None => unknown_proxy(&name),
    }
}

async fn create(State(p): State<Shared>, body: Bytes) -> Response {
    let b: ProxyBody = match parse(&body, "proxy") {
        Ok(b) => b,
        Err(e) => return bad(e),
    };
    let (Some(name), Some(upstream)) = (b.name, b.upstream) else {
        return bad("invalid proxy: name and upstream are required");
    };
    if name.is_empty()
        || name.len() > 100
        || !name.chars().all(|c| c.is_ascii_graphic() && c != '/')
    {
        return bad(format!(
            "invalid proxy: name {name:?}: expected at most 100 visible ASCII characters, no '/'"
        ));
    }
    let mut proxies = p.proxies.lock().await;
    if proxies.contains_key(&name) {
        return error(
            StatusCode::CONFLICT,
            format!("proxy already exists: {name}"),
        );
    }
    let (toxics, _) = watch::channel(Arc::new(Vec::new()));
    let mut proxy = Proxy {
        name: name.clone(),
        listen: b.listen.unwrap_or_else(|| "127.0.0.1:0".into()),
        upstream,
        enabled: false,
        toxics,
        running: None,
    };
    if b.enabled.unwrap_or(true) {
        if let Err(e) = start(&p, &mut proxy).await {
            return bad(e);
        }
    }
    p.change("proxy_created", &name, None);
    let view = proxy.view();
    proxies.insert(name, proxy);
    json(StatusCode::CREATED, &view)
}

async fn update(State(p): State<Shared>, Path(name): Path<String>, body: Bytes) -> Response {
    let b: ProxyBody = match parse(&body, "proxy") {
        Ok(b) => b,
        Err(e) => return bad(e),
    };
    let mut proxies = p.proxies.lock().await;
    let Some(proxy) = proxies.get_mut(&name) else {
        return unknown_proxy(&name);
    };
    if b.name.as_ref().is_some_and(|n| n != &name) {
        return bad("invalid proxy: a proxy is renamed by deleting and creating it");
    }
    let moved = b.listen.as_ref().is_some_and(|l| l != &proxy.listen)
        || b.upstream.as_ref().is_some_and(|u| u != &proxy.upstream);
    let enabled = b.enabled.unwrap_or(proxy.enabled);
    if moved || !enabled {
        stop(proxy).await;
    }
    if let Some(l) = b.listen {
        proxy.listen = l;
    }
    if let Some(u) = b.upstream {
        proxy.upstream = u;
    }
    if enabled && proxy.running.is_none() {
        if let Err(e) = start(&p, proxy).await {
            return bad(e);
        }
    }
    p.change("proxy_updated", &name, None);
    ok(&proxy.view())
}

async fn delete_proxy(State(p): State<Shared>, Path(name): Path<String>) -> Response {
    let mut proxies = p.proxies.lock().await;
    let Some(mut proxy) = proxies.remove(&name) else {
        return unknown_proxy(&name);
    };
    stop(&mut proxy).await;
    p.change("proxy_deleted", &name, None);
    StatusCode::NO_CONTENT.into_response()
}

async fn reset(State(p): State<Shared>) -> Response {
    let mut proxies = p.proxies.lock().await;
    for proxy in proxies.values_mut() {
        proxy.toxics.send_replace(Arc::new(Vec::new()));
        if proxy.running.is_none() {
            if let Err(e) = start(&p, proxy).await {
                return bad(e);
            }
        }
        p.change("reset", &proxy.name, None);
    }
    StatusCode::NO_CONTENT.into_response()
}

async fn list_toxics(State(p): State<Shared>, Path(name): Path<String>) -> Response {
    match p.proxies.lock().await.get(&name) {
        Some(proxy) => ok(&proxy.view().toxics),
        None => unknown_proxy(&name),
    }
}

async fn show_toxic(
    State(p): State<Shared>,
    Path((name, toxic)): Path<(String, String)>,
) -> Response {
    let proxies = p.proxies.lock().await;
    let Some(proxy) = proxies.get(&name) else {
        return unknown_proxy(&name);
    };
    match proxy.view().toxics.into_iter().find(|t| t.name == toxic) {
        Some(t) => ok(&t),
        None => error(StatusCode::NOT_FOUND, format!("toxic not found: {toxic}")),
    }
}

async fn add_toxic(State(p): State<Shared>, Path(name): Path<String>, body: Bytes) -> Response {
    let toxic: Toxic = match parse(&body, "toxic") {
        Ok(t) => t,
        Err(e) => return bad(e),
    };
    let proxies = p.proxies.lock().await;
    let Some(proxy) = proxies.get(&name) else {
        return unknown_proxy(&name);
    };
    let mut toxics = proxy.toxics.borrow().as_ref().clone();
    if toxics.iter().any(|t| t.name == toxic.name) {
        return error(
            StatusCode::CONFLICT,
            format!("toxic already exists: {}", toxic.name),
        );
    }
    toxics.push(toxic.clone());
    proxy.toxics.send_replace(Arc::new(toxics));
    p.change("toxic_added", &name, Some(toxic.clone()));
    ok(&toxic)
}

async fn update_toxic(
    State(p): State<Shared>,
    Path((name, toxic_name)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let proxies = p.proxies.lock().await;
    let Some(proxy) = proxies.get(&name) else {
        return unknown_proxy(&name);
    };
    let mut toxics = proxy.toxics.borrow().as_ref().clone();
    let Some(i) = toxics.iter().position(|t| t.name == toxic_name) else {
        return error(
            StatusCode::NOT_FOUND,
            format!("toxic not found: {toxic_name}"),
        );
    };
    // An update names the fields it changes: merge them into the toxic's JSON.
    let patch: serde_json::Value = match parse(&body, "toxic") {
        Ok(v) => v,
        Err(e) => return bad(e),
    };
    let mut whole = serde_json::to_value(&toxics[i]).expect("a toxic serializes");
    if let (Some(w), Some(pt)) = (whole.as_object_mut(), patch.as_object()) {
        for (k, v) in pt {
            if k == "attributes" {
                if let (Some(wa), Some(pa)) = (
                    w.get_mut("attributes").and_then(|a| a.as_object_mut()),
                    v.as_object(),
                ) {
                    for (ak, av) in pa {
                        wa.insert(ak.clone(), av.clone());
                    }
                    continue;
                }
            }
            w.insert(k.clone(), v.clone());
        }
    }
    let updated: Toxic = match serde_json::from_value(whole) {
        Ok(t) => t,
        Err(e) => return bad(format!("invalid toxic: {e}")),
    };
    toxics[i] = updated.clone();
    proxy.toxics.send_replace(Arc::new(toxics));
    p.change("toxic_updated", &name, Some(updated.clone()));
    ok(&updated)
}

async fn delete_toxic(
    State(p): State<Shared>,
    Path((name, toxic_name)): Path<(String, String)>,
) -> Response {
    let proxies = p.proxies.lock().await;
    let Some(proxy) = proxies.get(&name) else {
        return unknown_proxy(&name);
    };
    let mut toxics = proxy.toxics.borrow().as_ref().clone();
    let Some(i) = toxics.iter().position(|t| t.name == toxic_name) else {
        return error(
            StatusCode::NOT_FOUND,
            format!("toxic not found: {toxic_name}"),
        );
    };
    let gone = toxics.remove(i);
    proxy.toxics.send_replace(Arc::new(toxics));
    p.change("toxic_removed", &name, Some(gone));
    StatusCode::NO_CONTENT.into_response()
}

/// Binds the proxy's listen address and starts accepting; the bound address replaces a port 0.
async fn start(p: &Shared, proxy: &mut Proxy) -> Result<(), String> {
    let listener = TcpListener::bind(&proxy.listen)
        .await
        .map_err(|e| format!("invalid proxy: listen {:?}: {e}", proxy.listen))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    proxy.listen = addr.to_string();
    proxy.enabled = true;
    let mut set = JoinSet::new();
    let shared = Arc::clone(p);
    let (name, upstream) = (proxy.name.clone(), proxy.upstream.clone());
    let toxics = proxy.toxics.subscribe();
    set.spawn(accept(shared, listener, name, upstream, toxics));
    proxy.running = Some(set);
    Ok(())
}

/// Stops listening and closes every open connection of the proxy (each logged `stopped`).
/// It returns once nothing listens: the accept task owns the listener, so an abort alone would
/// close it only when that task is next polled, and a client could still connect to a proxy the
/// API had already answered as down. The accept task needs no lock; its connections end on their
/// own (dropping its set aborts them), and are not awaited here.
async fn stop(proxy: &mut Proxy) {
    proxy.enabled = false;
    if let Some(mut set) = proxy.running.take() {
        set.abort_all();
        while set.join_next().await.is_some() {}
    }
}

async fn accept(
    p: Shared,
    listener: TcpListener,
    name: String,
    upstream: String,
    toxics: watch::Receiver<Arc<Vec<Toxic>>>,
) {
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            r = listener.accept() => match r {
                Ok((client, _)) => {
                    let conn = p.conns.fetch_add(1, Ordering::Relaxed);
                    p.record(&ProxyRecord::Accepted {
                        proxy: name.clone(),
                        conn,
                        at_us: wall_us(),
                    });
                    conns.spawn(connection(
                        Arc::clone(&p),
                        name.clone(),
                        conn,
                        client,
                        upstream.clone(),
                        toxics.clone(),
                    ));
                }
                Err(e) => {
                    tracing::warn!("proxy {name}: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
}

/// How a direction of a connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// Its side closed (EOF or an error).
    Closed,
    Reset,
    Limit,
    Timeout,
}

/// Writes the record of a connection when dropped: ended, or stopped with its proxy.
struct ConnLog {
    p: Shared,
    proxy: String,
    conn: u64,
    accepted_us: u64,
    toxics: Arc<Mutex<Vec<String>>>,
    bytes: [Arc<AtomicU64>; 2],
    end: &'static str,
}

impl Drop for ConnLog {
    fn drop(&mut self) {
        let toxics = self.toxics.lock().map(|t| t.clone()).unwrap_or_default();
        self.p.record(&ProxyRecord::Connection {
            proxy: std::mem::take(&mut self.proxy),
            conn: self.conn,
            accepted_us: self.accepted_us,
            ended_us: wall_us(),
            toxics,
            bytes_up: self.bytes[0].load(Ordering::Relaxed),
            bytes_down: self.bytes[1].load(Ordering::Relaxed),
            end: self.end.into(),
        });
    }
}

async fn connection(
    p: Shared,
    proxy: String,
    conn: u64,
    client: TcpStream,
    upstream: String,
    toxics: watch::Receiver<Arc<Vec<Toxic>>>,
) {
    let mut log = ConnLog {
        p: Arc::clone(&p),
        proxy,
        conn,
        accepted_us: wall_us(),
        toxics: Arc::new(Mutex::new(Vec::new())),
        bytes: [Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0))],
        end: "stopped",
    };
    let _ = client.set_nodelay(true);
    let server = match TcpStream::connect(&upstream).await {
        Ok(s) => s,
        Err(_) => {
            log.end = "upstream_refused";
            return;
        }
    };
    let _ = server.set_nodelay(true);
    let (c_read, c_write) = client.into_split();
    let (s_read, s_write) = server.into_split();
    let (end_tx, mut end_rx) = mpsc::channel::<End>(2);
    // What the connection ended with, for the pumps still running: a reset must close the
    // client's socket with SO_LINGER 0 and no FIN first.
    let (kill_tx, kill_rx) = watch::channel(None::<End>);
    let (seed, index) = p.draw_key(conn);
    let rng = |dir: u32| stream(seed, Stream::Wire, (index as u32).wrapping_mul(2) + dir);
    let mut pumps = JoinSet::new();
    pumps.spawn(pump(
        c_read,
        s_write,
        Direction::Upstream,
        toxics.clone(),
        rng(0),
        end_tx.clone(),
        kill_rx.clone(),
        Arc::clone(&log.bytes[0]),
        Arc::clone(&log.toxics),
        p.timer.clone(),
    ));
    pumps.spawn(pump(
        s_read,
        c_write,
        Direction::Downstream,
        toxics,
        rng(1),
        end_tx,
        kill_rx,
        Arc::clone(&log.bytes[1]),
        Arc::clone(&log.toxics),
        p.timer.clone(),
    ));
    // Both directions closed, or one of them ends the connection.
    let mut closed = 0;
    while let Some(end) = end_rx.recv().await {
        match end {
            End::Closed => {
                closed += 1;
                if closed == 2 {
                    log.end = "closed";
                    break;
                }
            }
            End::Reset => {
                log.end = "reset";
                break;
            }
            End::Limit => {
                log.end = "limit";
                break;
            }
            End::Timeout => {
                log.end = "timeout";
                break;
            }
        }
    }
    // The pumps end on the kill (a reset closes the client's socket as a reset); one stuck in
    // a write is aborted after a second.
    let reset = log.end == "reset";
    kill_tx.send_replace(Some(if reset { End::Reset } else { End::Closed }));
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        while pumps.join_next().await.is_some() {}
    })
    .await;
    pumps.abort_all();
    while pumps.join_next().await.is_some() {}
}

/// Ends a pump. On a reset, the pump that writes to the client sets SO_LINGER 0 on its socket
/// and gives up its write half without the FIN a dropped write half sends: the socket's close,
/// once the read half is dropped too, is a reset.
fn finish(to: OwnedWriteHalf, dir: Direction, why: End) {
    if why == End::Reset && dir == Direction::Downstream {
        let _ = to.as_ref().set_zero_linger();
        to.forget();
    }
}

/// Aborts a task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// One direction: reads from `from`, writes to `to` as the link's toxics say.
#[allow(clippy::too_many_arguments)]
async fn pump(
    from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    dir: Direction,
    mut toxics: watch::Receiver<Arc<Vec<Toxic>>>,
    mut rng: e03_core::rng::LabRng,
    end: mpsc::Sender<End>,
    mut kill: watch::Receiver<Option<End>>,
    bytes: Arc<AtomicU64>,
    applied: Arc<Mutex<Vec<String>>>,
    clock: precise_timer::PreciseTimer,
) {
    // The reader keeps reading while the writer waits: each chunk carries the instant it was
    // read, so a latency counts from there (a chunk that waited behind another is not delayed
    // twice), as Toxiproxy's chunks carry their timestamps.
    let (chunk_tx, mut chunks) = mpsc::channel::<(Instant, Vec<u8>)>(64);
    let _reader = AbortOnDrop(tokio::spawn(async move {
        let mut from = from;
        let mut buf = vec![0u8; 32 * 1024];
        loop {
            match from.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    if chunk_tx
                        .send((Instant::now(), buf[..n].to_vec()))
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
            }
        }
    }));
    let draw = |toxics: &[Toxic], rng: &mut e03_core::rng::LabRng| {
        let link = Link::draw(toxics, dir, rng);
        if let Ok(mut names) = applied.lock() {
            for n in link.names() {
                if !names.contains(n) {
                    names.push(n.clone());
                }
            }
        }
        link
    };
    let mut link = draw(&toxics.borrow_and_update(), &mut rng);
    let mut since = Instant::now();
    loop {
        // The earliest of the link's timers: a reset, or a timeout's close.
        let timer = [
            link.reset_after().map(|d| (since + d, End::Reset)),
            link.blackhole()
                .flatten()
                .map(|d| (since + d, End::Timeout)),
        ]
        .into_iter()
        .flatten()
        .min_by_key(|(at, _)| *at);
        let fire = async {
            match timer {
                Some((at, why)) => {
                    clock.sleep_until(at).await;
                    why
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            chunk = chunks.recv() => {
                let Some((read_at, data)) = chunk else {
                    // The side we read from closed: pass the close on (late, with slow_close).
                    clock.sleep_until(Instant::now() + link.close_delay()).await;
                    let _ = to.shutdown().await;
                    let _ = end.send(End::Closed).await;
                    return;
                };
                let Pass::Forward { after_read, pieces, then_close } =
                    link.pass(data.len(), &mut rng)
                else {
                    continue;
                };
                // Each piece's wait counts from the previous piece's due instant, so the
                // waits add up to the toxic's figure and a late wake-up is not carried on.
                let mut at = read_at + after_read;
                clock.sleep_until(at).await;
                let mut off = 0;
                for (wait, size) in pieces {
                    at += wait;
                    clock.sleep_until(at).await;
                    if to.write_all(&data[off..off + size]).await.is_err() {
                        let _ = end.send(End::Closed).await;
                        return;
                    }
                    bytes.fetch_add(size as u64, Ordering::Relaxed);
                    off += size;
                }
                if then_close {
                    let _ = end.send(End::Limit).await;
                    return;
                }
            }
            changed = toxics.changed() => {
                if changed.is_ok() {
                    link = draw(&toxics.borrow_and_update(), &mut rng);
                    since = Instant::now();
                } else {
                    // The proxy is gone: its connections end with it.
                    return;
                }
            }
            why = fire => {
                let _ = end.send(why).await;
                // On a reset, the pump holding the client's write half closes it as a reset;
                // the other ends on the kill.
                finish(to, dir, why);
                return;
            }
            _ = kill.changed() => {
                let why = kill.borrow().unwrap_or(End::Closed);
                finish(to, dir, why);
                return;
            }
        }
    }
}

/// A running `lab proxy`: the API's address.
pub struct BoundProxy {
    pub api: SocketAddr,
    listener: TcpListener,
    proxies: Shared,
}

impl BoundProxy {
    pub async fn bind(api: &str, proxies: Shared) -> std::io::Result<Self> {
        let listener = TcpListener::bind(api).await?;
        Ok(Self {
            api: listener.local_addr()?,
            listener,
            proxies,
        })
    }

    /// Serves the API until `stop` resolves; the log is complete when this returns.
    /// A `POST /lab/shutdown` call stops it too.
    pub async fn serve(self, until: impl std::future::Future<Output = ()> + Send + 'static) {
        let asked = Arc::clone(&self.proxies);
        let stop_rx = crate::listen::stop_channel(async move {
            tokio::select! {
                () = until => {}
                () = asked.shutdown.notified() => {}
            }
        });
        let graceful = hyper_util::server::graceful::GracefulShutdown::new();
        crate::listen::accept_loop(
            self.listener,
            api(Arc::clone(&self.proxies)),
            &graceful,
            crate::listen::MAX_CONTROL_CONNECTIONS,
            stop_rx,
        )
        .await;
        crate::listen::drain(graceful, "proxy").await;
        let mut proxies = self.proxies.proxies.lock().await;
        for proxy in proxies.values_mut() {
            stop(proxy).await;
        }
    }
}

const HELP: &str = "\
Usage: lab proxy [--api ADDR] [--log FILE | --log-dir DIR] [--seed N]

A TCP fault proxy with Toxiproxy's HTTP API (docs/wire.md): create proxies and toxics with any
Toxiproxy client or curl, e.g.
  curl -X POST ADDR/proxies -d '{\"name\":\"dep\",\"listen\":\"127.0.0.1:0\",\"upstream\":\"127.0.0.1:8080\"}'
  curl -X POST ADDR/proxies/dep/toxics -d '{\"type\":\"latency\",\"attributes\":{\"latency\":50,\"jitter\":20}}'
Toxics: latency, bandwidth, slow_close, timeout, reset_peer, slicer, limit_data; a proxy with
enabled=false refuses connections.

Options:
  --api ADDR   where the API listens [default: 127.0.0.1:8474] (port 0: any free port)
  --log FILE   JSON Lines log: one record per connection and per change [default: none]
  --log-dir DIR  no log until a dependency opens one under DIR (POST /lab/log), per run
  --seed N     seeds the toxicity, jitter and slice draws [default: 42]

Prints `listening api=IP:PORT` first; serves until SIGINT or SIGTERM (exit 0).";

/// `lab proxy [--api ADDR] [--log FILE | --log-dir DIR] [--seed N]`.
pub fn main_entry(args: Vec<std::ffi::OsString>) -> i32 {
    let usage = |msg: String| {
        eprintln!("lab proxy: {msg}");
        e03_io::exit::USAGE
    };
    let mut api = "127.0.0.1:8474".to_string();
    let mut log: Option<std::path::PathBuf> = None;
    let mut log_dir: Option<std::path::PathBuf> = None;
    let mut seed = 42u64;
    let mut rest = args
        .into_iter()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned());
    while let Some(a) = rest.next() {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (a.clone(), None),
        };
        if flag == "-h" || flag == "--help" {
            println!("{HELP}");
            return 0;
        }
        let Some(v) = inline.or_else(|| rest.next()) else {
            return usage(format!(
                "unknown argument {a:?} or a flag without its value; see --help"
            ));
        };
        match flag.as_str() {
            "--api" => api = v,
            "--log" => log = Some(v.into()),
            "--log-dir" => log_dir = Some(v.into()),
            "--seed" => match v.trim().parse() {
                Ok(n) => seed = n,
                Err(_) => {
                    return usage(format!(
                    "invalid --seed {v:?}: expected a whole number from 0 to 18446744073709551615"
                ))
                }
            },
            _ => return usage(format!("unknown argument {a:?}; see lab proxy --help")),
        }
    }
    if log.is_some() && log_dir.is_some() {
        return usage(
            "--log and --log-dir together: expected one log file or one directory".to_string(),
        );
    }
    if let Some(dir) = &log_dir {
        if !dir.is_dir() {
            return usage(format!(
                "invalid --log-dir {}: expected an existing directory",
                dir.display()
            ));
        }
    }
    let file = match &log {
        None => None,
        Some(path) => match std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            Ok(f) => Some((f, path.clone())),
            Err(e) => return usage(format!("invalid --log {}: {e}", path.display())),
        },
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("lab proxy: {e}");
            return e03_io::exit::FAILED;
        }
    };
    rt.block_on(async {
        let proxies = match log_dir {
            Some(dir) => Proxies::in_log_dir(dir, seed),
            None => Proxies::new(file, seed),
        };
        let bound = match BoundProxy::bind(&api, Arc::clone(&proxies)).await {
            Ok(b) => b,
            Err(e) => return usage(format!("invalid --api {api:?}: {e}")),
        };
        println!("listening api={}", bound.api);
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
        bound.serve(crate::listen::shutdown_signal()).await;
        0
    })
}
