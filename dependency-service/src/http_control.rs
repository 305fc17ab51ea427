//! The control API of `lab proxy --http --control-listen ADDR`: the calls the lab's swarm makes
//! to a dependency (`GET /health`, `GET /control/clock`, `POST /control/start`,
//! `POST /control/stop`, `POST /control/shutdown`), so `lab run --upstream URL` drives any
//! strategy, workload and timeline at a user's service through the proxy, with no lab service
//! behind it. A start call is checked as `lab serve` checks it ([`crate::routes::validate_start`]);
//! its run's timeline is the proxy's ([`e03_model::fault_proxy`]) and its log goes where
//! `lab serve`'s would, under `--log-dir`.

use std::path::PathBuf;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use e03_model::events::RunTag;
use e03_model::fault_proxy::FaultProxy;
use e03_plan::control::{
    StartAnswer, StopRun, CLOCK_PATH, HEALTH_PATH, SHUTDOWN_PATH, START_PATH, STOP_PATH,
};

use crate::http_forward::Forwarder;
use crate::proxy_run::ProxyRun;

/// What the control calls share.
pub struct Control {
    pub fwd: Arc<Forwarder>,
    pub log_dir: PathBuf,
    pub shutdown: Arc<tokio::sync::Notify>,
}

pub fn router(control: Control) -> Router {
    Router::new()
        .route(START_PATH, post(start))
        .route(STOP_PATH, post(stop))
        .route(SHUTDOWN_PATH, post(shutdown))
        .route(HEALTH_PATH, get(|| async { "ok" }))
        .route(CLOCK_PATH, get(crate::routes::clock))
        .with_state(Arc::new(control))
}

fn answer(status: StatusCode, json: bool, body: String) -> Response {
    let kind = if json {
        "application/json"
    } else {
        "text/plain; charset=utf-8"
    };
    (status, [(header::CONTENT_TYPE, kind)], body).into_response()
}

async fn start(State(c): State<Arc<Control>>, body: Bytes) -> Response {
    let spec = match crate::routes::validate_start(&body) {
        Ok(s) => s,
        Err(e) => return answer(StatusCode::BAD_REQUEST, false, e.to_string()),
    };
    if spec.shard.is_some_and(|s| !s.is_whole()) {
        return answer(
            StatusCode::BAD_REQUEST,
            false,
            "lab proxy --http takes one swarm per run: no shards (--swarm-shards)".into(),
        );
    }
    let timeline = spec
        .params
        .timeline_of(&spec.scenario, spec.replica.unwrap_or(0));
    if let Some((phase, why)) = FaultProxy::cannot_apply(&timeline) {
        return answer(
            StatusCode::BAD_REQUEST,
            false,
            format!(
                "scenario {}: its {phase} phase cannot be applied by a proxy: {why}",
                spec.scenario.name()
            ),
        );
    }
    if c.fwd.current().is_some() {
        return answer(
            StatusCode::CONFLICT,
            false,
            "a run is in progress: stop it first".into(),
        );
    }
    let log_file = spec.log_file();
    let path = c.log_dir.join(&log_file);
    let opened = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| {
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
        })
        .and_then(|file| e03_io::sink::LogSink::to_file(file, path.clone()));
    let log = match opened {
        Ok(log) => log,
        Err(e) => {
            return answer(
                StatusCode::INTERNAL_SERVER_ERROR,
                false,
                format!("cannot create the run's log {}: {e}", path.display()),
            )
        }
    };
    let run = Arc::new(ProxyRun::new(
        FaultProxy::new(
            timeline,
            e03_model::rng::stream(spec.seed, e03_model::rng::Stream::Wire, u32::MAX),
        ),
        RunTag {
            run: spec.run.clone(),
            seed: spec.seed,
            strategy: spec.strategy.clone(),
        },
        spec.scenario.name().to_string(),
        spec.params.clone(),
        Some(log),
        log_file.clone(),
    ));
    run.start_at(Some((spec.t0.into_std(), spec.start_unix_ms)));
    c.fwd.replace(Some(run));
    let body = StartAnswer {
        run: spec.run,
        log_file,
        work: None,
        start_unix_ms: spec.start_unix_ms,
    };
    answer(
        StatusCode::OK,
        true,
        serde_json::to_string(&body).expect("an answer serialises"),
    )
}

async fn stop(State(c): State<Arc<Control>>, body: Bytes) -> Response {
    let req: StopRun = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            return answer(
                StatusCode::BAD_REQUEST,
                false,
                format!("malformed stop call JSON: {e}"),
            )
        }
    };
    let Some(run) = c.fwd.replace(None) else {
        return answer(StatusCode::CONFLICT, false, "no run in progress".into());
    };
    match run.end(req.complete).await {
        Ok(counts) => answer(
            StatusCode::OK,
            true,
            serde_json::to_string(&counts).expect("counts serialise"),
        ),
        Err(e) => answer(StatusCode::INTERNAL_SERVER_ERROR, false, e.to_string()),
    }
}

async fn shutdown(State(c): State<Arc<Control>>) -> Response {
    c.shutdown.notify_one();
    answer(StatusCode::OK, false, "shutting down".into())
}
