//! Toxiproxy's HTTP API of `lab proxy` (its shapes and status codes: 201 created, 204 deleted,
//! 400 invalid, 404 unknown, 409 exists), and the lab's two calls of its own, `POST /lab/log`
//! and `POST /lab/shutdown`: [`api`], the router, and its handlers. Each change of a proxy or a
//! toxic is one record of the log; a proxy enabled or moved starts or stops its listener
//! (`crate::proxy_link`). The calls are listed in the doc of `crate::proxy`.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use e03_model::wire::Toxic;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::proxies::{Proxy, ProxyView, Shared};
use crate::proxy_link::{start, stop};
use crate::request_error::RequestError;

/// What `GET /version` answers.
pub const VERSION: &str = concat!("e03-lab-proxy ", env!("CARGO_PKG_VERSION"));

/// `POST /proxies` and `POST /proxies/{proxy}`: every field optional on an update.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProxyBody {
    name: Option<String>,
    listen: Option<String>,
    upstream: Option<String>,
    enabled: Option<bool>,
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

fn bad(msg: impl std::fmt::Display) -> Response {
    error(StatusCode::BAD_REQUEST, msg.to_string())
}

fn unknown_proxy(name: &str) -> Response {
    error(StatusCode::NOT_FOUND, format!("proxy not found: {name}"))
}

fn parse<T: serde::de::DeserializeOwned>(body: &Bytes, what: &str) -> Result<T, RequestError> {
    serde_json::from_slice(body).map_err(|e| RequestError::Body {
        what: what.to_string(),
        json: e.to_string(),
    })
}

/// `POST /lab/log`: the body of the call.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LogBody {
    file: Option<String>,
    /// The run's seed: the draws of its connections
    /// ([`Proxies::begin_run`](crate::proxies::Proxies::begin_run)); none: as before.
    #[serde(default)]
    seed: Option<u64>,
}

/// Where `file` goes under `dir`: a relative path of plain components whose file is a proxy
/// log the lab names (`wire-*.jsonl`), so the call never replaces a file the lab did not write.
fn log_path(dir: &std::path::Path, file: &str) -> Result<std::path::PathBuf, RequestError> {
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
        return Err(RequestError::ProxyLog {
            file: file.to_string(),
        });
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
