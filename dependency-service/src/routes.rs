//! The HTTP surface: the work router (`GET /work`, `GET /health`) and the control router
//! (`POST /control/start`, `POST /control/stop`, `GET /health`), each a plain axum `Router` so
//! handlers are tested without a socket.
//!
//! The work handler hands the request to its run in a task of its own
//! ([`crate::run::Run::arrive`], which stamps, logs and decides it in arrival order) and only
//! waits for the answer: if the client disconnects, hyper drops this handler but the request
//! keeps its worker.
//!
//! Abuse resistance lives here too: unknown paths 404 and wrong methods 405 (axum), bodies over
//! [`WORK_BODY_LIMIT`] or [`CONTROL_BODY_LIMIT`] 413 (declared or sent), bodies not sent within
//! [`BODY_READ_TIMEOUT`] 408 ([`buffer_body`]), malformed control calls 400 with a message
//! saying what was wrong. A hop (`crate::hop`) uses the same limits.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;

use crate::request_error::RequestError;
use e03_plan::control::{
    valid_run_dir, valid_strategy_id, ClockReading, StartAnswer, StartRun, StopRun, CLOCK_PATH,
    HEALTH_PATH, READY_PATH, SHUTDOWN_PATH, START_PATH, STOP_PATH,
};
use tokio::sync::oneshot;

use crate::lost::lost_answer;
use crate::run::Status;
use e03_model::ledger::{valid_key, ChargeRequest, CHARGE_PATH, IDEMPOTENCY_KEY, MAX_KEY_LEN};

use crate::identity::Identity;
use crate::service::{instant_at_unix_ms, RunSpec, Service, StartError, Started, MAX_START_OFFSET};

pub const WORK_PATH: &str = "/work";
/// Prometheus metrics (text format), on the work listener.
pub const METRICS_PATH: &str = "/metrics";
/// Largest request body the work endpoint accepts (it needs none).
pub const WORK_BODY_LIMIT: u64 = 1024;
/// Largest control call body.
pub const CONTROL_BODY_LIMIT: usize = 64 * 1024;
/// Longest run id a control call may set.
const MAX_RUN_ID: usize = 200;

pub fn work_router(svc: Arc<Service>) -> Router {
    Router::new()
        .route(WORK_PATH, get(work))
        .route(
            CHARGE_PATH,
            post(charge).layer(middleware::from_fn_with_state(
                WORK_BODY_LIMIT as usize,
                buffer_body,
            )),
        )
        // Bodies read by an extractor (a charge's) stop at the same limit as declared ones.
        .layer(DefaultBodyLimit::max(WORK_BODY_LIMIT as usize))
        .route(HEALTH_PATH, get(health))
        .route(READY_PATH, get(ready))
        .route(METRICS_PATH, get(metrics))
        .layer(middleware::from_fn(limit_work_body))
        .with_state(svc)
}

pub fn control_router(svc: Arc<Service>) -> Router {
    Router::new()
        .route(START_PATH, post(start))
        .route(STOP_PATH, post(stop))
        .route(SHUTDOWN_PATH, post(shutdown))
        .route(HEALTH_PATH, get(health))
        .route(CLOCK_PATH, get(clock))
        .layer(DefaultBodyLimit::max(CONTROL_BODY_LIMIT))
        .layer(middleware::from_fn_with_state(
            CONTROL_BODY_LIMIT,
            buffer_body,
        ))
        .with_state(svc)
}

async fn health() -> &'static str {
    "ok"
}

/// `GET /control/clock`: the wall clock, for the swarm's clock offset (`e03_model::clock`).
pub(crate) async fn clock() -> Response {
    let unix_us = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_micros() as u64;
    let body = serde_json::to_string(&ClockReading { unix_us }).expect("a reading serialises");
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// 413 for a declared body over the work endpoint's limit (the handler never reads bodies).
/// Also a hop's `/work` (`crate::hop`).
pub(crate) async fn limit_work_body(req: Request, next: Next) -> Response {
    let too_long = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim()
                .parse::<u64>()
                .map_or(true, |n| n > WORK_BODY_LIMIT)
        });
    if too_long {
        return text(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("request body larger than {WORK_BODY_LIMIT} bytes"),
        );
    }
    next.run(req).await
}

/// Longest a client may take to send a request's body once its head has arrived (the head
/// has `crate::listen::HEADER_READ_TIMEOUT`): a body sent byte by byte cannot hold a
/// connection for ever.
pub const BODY_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// A request's body as [`buffer_body`] read it.
enum ReadBody {
    Whole(Bytes),
    TooLarge,
    /// The connection broke mid-body (or the body was malformed).
    Broken,
}

/// Reads `body` to its end, stopping as soon as it passes `limit` bytes.
async fn read_at_most(mut body: axum::body::Body, limit: usize) -> ReadBody {
    use hyper::body::Body as _;
    let mut out = Vec::new();
    loop {
        let frame = std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)).await;
        match frame {
            None => return ReadBody::Whole(out.into()),
            Some(Err(_)) => return ReadBody::Broken,
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    if out.len() + data.len() > limit {
                        return ReadBody::TooLarge;
                    }
                    out.extend_from_slice(&data);
                }
            }
        }
    }
}

/// Reads a request's whole body before its handler runs, under the limits of the routes that
/// take one (the control calls, `POST /charge`, a hop's configuration): 413 when its declared
/// length is over `limit` (at once, before any of it is read) or when what is sent passes it
/// (a chunked body), 408 when the body has not arrived within [`BODY_READ_TIMEOUT`], 400 when
/// the connection breaks mid-body. The handler gets the body already read.
pub(crate) async fn buffer_body(State(limit): State<usize>, req: Request, next: Next) -> Response {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().parse::<u64>().unwrap_or(u64::MAX));
    let too_large = || {
        text(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("request body larger than {limit} bytes"),
        )
    };
    if declared.is_some_and(|n| n > limit as u64) {
        return too_large();
    }
    let (parts, body) = req.into_parts();
    match tokio::time::timeout(BODY_READ_TIMEOUT, read_at_most(body, limit)).await {
        Err(_) => text(
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "request body not received within {} s",
                BODY_READ_TIMEOUT.as_secs()
            ),
        ),
        Ok(ReadBody::TooLarge) => too_large(),
        Ok(ReadBody::Broken) => text(StatusCode::BAD_REQUEST, "request body broken off".into()),
        Ok(ReadBody::Whole(bytes)) => {
            next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
                .await
        }
    }
}

/// `GET /metrics`: the Prometheus text exposition (see `crate::metrics`).
async fn metrics(State(svc): State<Arc<Service>>) -> Response {
    let body = svc.metrics_text();
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        body,
    )
        .into_response()
}

/// `GET /ready` ([`READY_PATH`]): the current run's readiness, answered when its timeline says
/// (at once, or when a freeze ends); not an arrival, not logged.
async fn ready(State(svc): State<Arc<Service>>) -> Response {
    let Some(run) = svc.current_run() else {
        return text(StatusCode::SERVICE_UNAVAILABLE, "no run in progress".into());
    };
    let (at, status) = run.readiness();
    tokio::time::sleep_until(at).await;
    match status {
        200 => text(StatusCode::OK, "ready".into()),
        code => text(
            StatusCode::from_u16(code).unwrap_or(StatusCode::SERVICE_UNAVAILABLE),
            "not ready".into(),
        ),
    }
}

/// `GET /work`, counted in the HTTP server metrics (duration by status, requests in flight).
async fn work(State(svc): State<Arc<Service>>, headers: HeaderMap) -> Response {
    let started = std::time::Instant::now();
    let _active = svc.metrics.request_started();
    let response = answer_work(&svc, headers).await;
    svc.metrics
        .request_done(response.status().as_u16(), started.elapsed());
    response
}

async fn answer_work(svc: &Arc<Service>, headers: HeaderMap) -> Response {
    let Some(run) = svc.run_for_request().await else {
        return text(StatusCode::SERVICE_UNAVAILABLE, "no run in progress".into());
    };
    let id = Identity::from_headers(&headers);
    let (tx, rx) = oneshot::channel();
    // The arrival is stamped, logged and decided in its own task (see `Run::arrive`).
    tokio::spawn(run.arrive(id, tx));
    match rx.await {
        Ok(status) => reply(status),
        // The run ended while this request waited.
        Err(_) => text(StatusCode::SERVICE_UNAVAILABLE, "run ended".into()),
    }
}

/// The HTTP answer to a decided request; a `Retry-After` header when the model gave one (a 429
/// of a rate-limited phase).
fn reply(
    Status {
        code, retry_after, ..
    }: Status,
) -> Response {
    match (code, retry_after) {
        (400, _) => text(
            StatusCode::BAD_REQUEST,
            "malformed x-e03-client, x-e03-op, x-e03-attempt or x-e03-deadline-ms header \
             (expected a whole number), or x-e03-priority header (expected critical or \
             best_effort)"
                .into(),
        ),
        (200, _) => text(StatusCode::OK, "ok".into()),
        (code, wait) => {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
            match wait {
                Some(wait) => (
                    status,
                    [(header::RETRY_AFTER, retry_after_value(wait))],
                    "rate limited",
                )
                    .into_response(),
                None => text(status, "unavailable".into()),
            }
        }
    }
}

/// Largest amount a charge may ask.
pub const MAX_AMOUNT: u64 = 1_000_000_000;

/// A charge's request from its headers and body, or the refusal (status and message):
/// 400 for a malformed `Idempotency-Key` (more than one, empty, longer than
/// [`e03_model::ledger::MAX_KEY_LEN`] bytes, or not visible ASCII) or a body that is not JSON,
/// 422 for JSON that is not an object with a whole `amount` from 1 to [`MAX_AMOUNT`]. No body:
/// amount 1. (A body over [`WORK_BODY_LIMIT`] is refused 413 before this.)
pub fn charge_request(
    headers: &HeaderMap,
    body: &[u8],
    id: &Identity,
) -> Result<ChargeRequest, (StatusCode, String)> {
    let mut keys = headers.get_all(IDEMPOTENCY_KEY).iter();
    let key = match (keys.next(), keys.next()) {
        (None, _) => None,
        (Some(_), Some(_)) => {
            return Err((
                StatusCode::BAD_REQUEST,
                "malformed Idempotency-Key: expected one header, got several".into(),
            ))
        }
        (Some(v), None) if valid_key(v.as_bytes()) => Some(
            v.to_str()
                .expect("visible ASCII is a valid header string")
                .to_string(),
        ),
        (Some(_), None) => {
            return Err((
                StatusCode::BAD_REQUEST,
                format!(
                    "malformed Idempotency-Key: expected 1 to {MAX_KEY_LEN} visible ASCII \
                     characters (no spaces)"
                ),
            ))
        }
    };
    let amount = if body.iter().all(u8::is_ascii_whitespace) {
        1
    } else {
        let value: serde_json::Value = serde_json::from_slice(body).map_err(|e| {
            (
                StatusCode::BAD_REQUEST,
                format!("malformed charge body: {e}: expected JSON like {{\"amount\": 1}}"),
            )
        })?;
        let amount = value
            .as_object()
            .filter(|o| o.keys().all(|k| k == "amount"))
            .and_then(|o| o.get("amount"))
            .and_then(serde_json::Value::as_u64)
            .filter(|a| (1..=MAX_AMOUNT).contains(a));
        amount.ok_or_else(|| {
            (
                StatusCode::UNPROCESSABLE_ENTITY,
                format!(
                    "invalid charge body: expected an object with only `amount`, a whole \
                     number from 1 to {MAX_AMOUNT}"
                ),
            )
        })?
    };
    Ok(ChargeRequest {
        key,
        amount,
        client: id.client,
        op: id.op,
        attempt: id.attempt,
    })
}

/// `POST /charge` (the retry-logic article): like `GET /work`, plus the ledger. A request refused for its key
/// or body is logged as an arrival and answered at once, with no work. A charge whose answer
/// the fault model loses is committed, then its connection is reset: the body errors before
/// any byte of it, and hyper closes the connection.
async fn charge(State(svc): State<Arc<Service>>, headers: HeaderMap, body: Bytes) -> Response {
    let started = std::time::Instant::now();
    let _active = svc.metrics.request_started();
    let response = answer_charge(&svc, headers, body).await;
    svc.metrics
        .request_done(response.status().as_u16(), started.elapsed());
    response
}

async fn answer_charge(svc: &Arc<Service>, headers: HeaderMap, body: Bytes) -> Response {
    let Some(run) = svc.run_for_request().await else {
        return text(StatusCode::SERVICE_UNAVAILABLE, "no run in progress".into());
    };
    let id = Identity::from_headers(&headers);
    let request = charge_request(&headers, &body, &id);
    let (tx, rx) = oneshot::channel();
    let refused = request.as_ref().err().cloned();
    tokio::spawn(run.arrive_with(id, Some(request.map_err(|(code, _)| code.as_u16())), tx));
    match (rx.await, refused) {
        (Ok(_), Some((code, message))) => text(code, message),
        (Ok(status), None) if status.lost => lost_answer(),
        (Ok(status), None) => match (status.code, status.charge) {
            (200, Some(charge)) => json(StatusCode::OK, format!("{{\"charge\":{charge}}}")),
            (422, Some(charge)) => text(
                StatusCode::UNPROCESSABLE_ENTITY,
                format!("Idempotency-Key already used for charge {charge} with another amount"),
            ),
            _ => reply(status),
        },
        (Err(_), _) => text(StatusCode::SERVICE_UNAVAILABLE, "run ended".into()),
    }
}

/// A `Retry-After` value in seconds with millisecond decimals, rounded up to the millisecond so a
/// client that honours it never comes back before the window admits again ("0.250"). HTTP
/// specifies whole seconds; the lab's steps are 100 ms, so it sends fractions, which the swarm
/// reads.
pub(crate) fn retry_after_value(wait: std::time::Duration) -> String {
    let ms = wait.as_nanos().div_ceil(1_000_000);
    format!("{}.{:03}", ms / 1000, ms % 1000)
}

fn text(status: StatusCode, body: String) -> Response {
    (status, body).into_response()
}

fn bad_request(msg: String) -> Response {
    text(StatusCode::BAD_REQUEST, msg)
}

/// Checks a start call (`POST /control/start`'s body) into a [`RunSpec`]; the error is the 400
/// message. The scenario comes with its definition (a user's file), or is a built-in one.
pub fn validate_start(body: &[u8]) -> Result<RunSpec, RequestError> {
    let req: StartRun = serde_json::from_slice(body).map_err(|e| RequestError::StartJson {
        json: e.to_string(),
    })?;
    if !valid_strategy_id(&req.strategy) {
        return Err(RequestError::Strategy { id: req.strategy });
    }
    if req.run.is_empty() || req.run.len() > MAX_RUN_ID || req.run.chars().any(char::is_control) {
        return Err(RequestError::RunId {
            run: req.run,
            most: MAX_RUN_ID,
        });
    }
    if let Some(dir) = req.run_dir.as_deref().filter(|d| !valid_run_dir(d)) {
        return Err(RequestError::RunDir {
            dir: dir.to_string(),
        });
    }
    // Typed and checked when read (`Params`' `serde(try_from)`): the values the swarm resolved,
    // the strategies by value; nothing is merged or parsed again here.
    let params = req.params;
    let t0 = instant_at_unix_ms(req.start_unix_ms).ok_or(RequestError::StartTime {
        start_unix_ms: req.start_unix_ms,
        within_s: MAX_START_OFFSET.as_secs(),
    })?;
    Ok(RunSpec {
        run: req.run,
        scenario: req.scenario,
        strategy: req.strategy,
        seed: req.seed,
        params,
        start_unix_ms: req.start_unix_ms,
        t0,
        standalone: false,
        run_dir: req.run_dir,
        shard: req.shard,
        replica: req.replica,
    })
}

async fn start(State(svc): State<Arc<Service>>, body: Bytes) -> Response {
    let spec = match validate_start(&body) {
        Ok(spec) => spec,
        Err(e) => return bad_request(e.to_string()),
    };
    if let Err(e) = svc.check_wire(&spec) {
        return bad_request(e.to_string());
    }
    let log_file = spec.log_file();
    let work = svc.work_url(&spec);
    let asked_ms = spec.start_unix_ms;
    let (run, start_unix_ms) = match svc.register(spec).await {
        Ok(Started::New(run)) => (run, asked_ms),
        Ok(Started::Joined { run, start_unix_ms }) => (run, start_unix_ms),
        Err(StartError::Log(e)) => {
            tracing::error!("cannot start run: {e}");
            return text(StatusCode::INTERNAL_SERVER_ERROR, e.to_string());
        }
        Err(e @ StartError::Busy(_)) => {
            return text(StatusCode::SERVICE_UNAVAILABLE, e.to_string());
        }
        Err(e) => {
            tracing::warn!("{e}");
            return text(StatusCode::CONFLICT, e.to_string());
        }
    };
    let body = StartAnswer {
        run: run.tag().run.clone(),
        log_file,
        work,
        start_unix_ms,
    };
    json(
        StatusCode::OK,
        serde_json::to_string(&body).expect("an answer serialises"),
    )
}

async fn stop(State(svc): State<Arc<Service>>, body: Bytes) -> Response {
    let req: StopRun = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => return bad_request(format!("malformed stop call JSON: {e}")),
    };
    match svc.stop_run(req.complete, req.shard).await {
        None => text(StatusCode::CONFLICT, "no run in progress".into()),
        Some(Ok(counts)) => json(
            StatusCode::OK,
            serde_json::to_string(&counts).expect("counts serialise"),
        ),
        Some(Err(e)) => {
            tracing::error!("cannot end run: {e}");
            text(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
        }
    }
}

/// Ends the current run (not complete) and shuts the service down after answering.
async fn shutdown(State(svc): State<Arc<Service>>) -> Response {
    svc.shutdown_requested.notify_one();
    text(StatusCode::OK, "shutting down".into())
}

fn json(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::Method;
    use tower::ServiceExt;

    fn service(dir: &str) -> Arc<Service> {
        let log = e03_io::sink::LogSink::start().unwrap();
        let dir = std::env::temp_dir().join(format!("e03-routes-{dir}-{}", std::process::id()));
        Arc::new(Service::new(log, dir))
    }

    async fn call(app: Router, method: Method, uri: &str, body: &str) -> (StatusCode, String) {
        let req = axum::http::Request::builder()
            .method(method)
            .uri(uri)
            .header(header::CONTENT_LENGTH, body.len())
            .body(Body::from(body.to_string()))
            .unwrap();
        let res = app.oneshot(req).await.unwrap();
        let status = res.status();
        let bytes = axum::body::to_bytes(res.into_body(), 1 << 20)
            .await
            .unwrap();
        (status, String::from_utf8_lossy(&bytes).into_owned())
    }

    #[test]
    fn a_rate_limited_answer_is_429_with_retry_after_in_seconds_rounded_up_to_the_ms() {
        use std::time::Duration;
        let res = reply(Status {
            retry_after: Some(Duration::from_millis(250)),
            ..Status::code(429)
        });
        assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(res.headers()[header::RETRY_AFTER], "0.250");
        assert_eq!(retry_after_value(Duration::from_nanos(1_000_001)), "0.002");
        assert_eq!(retry_after_value(Duration::from_millis(3000)), "3.000");
        assert_eq!(retry_after_value(Duration::ZERO), "0.000");
        let res = reply(Status::code(503));
        assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert!(res.headers().get(header::RETRY_AFTER).is_none());
    }

    #[tokio::test]
    async fn a_malformed_identity_or_deadline_header_is_a_400_that_names_every_header_read() {
        let res = reply(Status::code(400));
        assert_eq!(res.status(), StatusCode::BAD_REQUEST);
        let body = axum::body::to_bytes(res.into_body(), 1 << 20)
            .await
            .unwrap();
        let body = String::from_utf8_lossy(&body);
        for name in [
            e03_model::events::HEADER_CLIENT,
            e03_model::events::HEADER_OP,
            e03_model::events::HEADER_ATTEMPT,
            e03_model::chain::DEADLINE_HEADER,
            e03_model::priority::PRIORITY_HEADER,
        ] {
            assert!(body.contains(name), "{name} missing from {body:?}");
        }
        assert!(body.contains("expected a whole number"), "{body}");
        assert!(
            body.contains(e03_model::priority::Priority::ACCEPTS),
            "{body}"
        );
    }

    #[tokio::test]
    async fn unknown_paths_wrong_methods_and_big_bodies_are_refused() {
        let svc = service("abuse");
        let app = work_router(svc.clone());
        assert_eq!(
            call(app.clone(), Method::GET, "/nope", "").await.0,
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            call(app.clone(), Method::POST, "/work", "").await.0,
            StatusCode::METHOD_NOT_ALLOWED
        );
        let big = "x".repeat(2000);
        assert_eq!(
            call(app.clone(), Method::GET, "/work", &big).await.0,
            StatusCode::PAYLOAD_TOO_LARGE
        );
        assert_eq!(
            call(app, Method::GET, "/health", "").await,
            (StatusCode::OK, "ok".into())
        );
        let control = control_router(svc);
        assert_eq!(
            call(control.clone(), Method::GET, START_PATH, "").await.0,
            StatusCode::METHOD_NOT_ALLOWED
        );
        let huge = "x".repeat(CONTROL_BODY_LIMIT + 1);
        assert_eq!(
            call(control, Method::POST, START_PATH, &huge).await.0,
            StatusCode::PAYLOAD_TOO_LARGE
        );
    }

    #[tokio::test]
    async fn work_without_a_run_is_503_and_stop_without_a_run_is_409() {
        let svc = service("norun");
        let (status, body) = call(work_router(svc.clone()), Method::GET, "/work", "").await;
        assert_eq!(
            (status, body.as_str()),
            (StatusCode::SERVICE_UNAVAILABLE, "no run in progress")
        );
        // No run: not ready (a probe does not start a standalone run, as a request would).
        let (status, body) = call(work_router(svc.clone()), Method::GET, READY_PATH, "").await;
        assert_eq!(
            (status, body.as_str()),
            (StatusCode::SERVICE_UNAVAILABLE, "no run in progress")
        );
        let (status, _) = call(
            control_router(svc),
            Method::POST,
            STOP_PATH,
            r#"{"complete":true}"#,
        )
        .await;
        assert_eq!(status, StatusCode::CONFLICT);
    }

    #[test]
    fn start_calls_are_validated_with_clear_messages() {
        let typed = |pairs: &[(&str, &str)]| {
            let mut v = serde_json::to_value(e03_plan::Params::default()).unwrap();
            for (path, value) in pairs {
                let (group, field) = path.split_once('.').unwrap();
                v[group][field] = serde_json::from_str(value).unwrap();
            }
            v.to_string()
        };
        let ok = |params: &str, strategy: &str, start: u64| {
            format!(
                r#"{{"run":"r1","scenario":"e03b","strategy":"{strategy}","seed":1,"params":{params},"start_unix_ms":{start}}}"#
            )
        };
        let now = crate::service::unix_ms_now();
        let spec = validate_start(ok(&typed(&[]), "C", now).as_bytes()).unwrap();
        assert_eq!(spec.log_file(), "e03b/server-C-seed1.jsonl");
        let spec =
            validate_start(ok(&typed(&[("service.workers", "3")]), "C", now).as_bytes()).unwrap();
        assert_eq!(
            spec.params.service().workers,
            3,
            "the typed value is used as sent"
        );
        let err = |body: String| validate_start(body.as_bytes()).err().unwrap().to_string();
        assert!(err("{nope".into()).starts_with("malformed start call JSON"));
        assert!(err(ok(&typed(&[]), "../x", now)).starts_with("invalid strategy \"../x\""));
        // A typed value out of its range, named by its parameter.
        let e = err(ok(&typed(&[("service.workers", "0")]), "C", now));
        assert!(e.contains("invalid E03_WORKERS=\"0\""), "{e}");
        // A broken cross-parameter rule.
        let e = err(ok(&typed(&[("swarm.think_max_ms", "1.0")]), "C", now));
        assert!(e.contains("E03_THINK_MAX_MS"), "{e}");
        // Strings are no longer accepted as parameters.
        assert!(err(ok(r#"{"E03_WORKERS":"1"}"#, "C", now)).contains("malformed start call"));
        assert!(err(ok(&typed(&[]), "C", 5)).starts_with("invalid start_unix_ms 5"));
    }

    #[test]
    fn a_users_scenario_comes_with_each_start_call_and_leaves_nothing_behind() {
        let now = crate::service::unix_ms_now();
        let params = serde_json::to_value(e03_plan::Params::default()).unwrap();
        let body = |name: &str, def: Option<&str>| {
            let mut v = serde_json::json!({"run": "r1", "scenario": name, "strategy": "C",
                "seed": 1, "params": params, "start_unix_ms": now});
            if let Some(text) = def {
                let def = e03_plan::scenario::parse(text, "mine.toml").unwrap();
                v["definition"] = serde_json::to_value(def).unwrap();
            }
            v.to_string()
        };
        let first = "name = \"mine-route\"\ntitle = \"One\"\ndescription = \"d\"\n";
        let spec = validate_start(body("mine-route", Some(first)).as_bytes()).unwrap();
        assert_eq!(spec.scenario.title(), "One");
        // The same name with an edited file: the call's own definition is used.
        let edited = first.replace("One", "Two");
        let spec = validate_start(body("mine-route", Some(&edited)).as_bytes()).unwrap();
        assert_eq!(spec.scenario.title(), "Two");
        // The service kept no table: the name alone is unknown.
        let e = validate_start(body("mine-route", None).as_bytes())
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("unknown scenario \"mine-route\""), "{e}");
        // A definition under another name, or a built-in name with another definition.
        let e = validate_start(body("other", Some(first)).as_bytes())
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("comes with the definition of \"mine-route\""),
            "{e}"
        );
        let fake = first.replace("mine-route", "e03b");
        let e = validate_start(body("e03b", Some(&fake)).as_bytes())
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("taken by a built-in scenario"), "{e}");
    }
}
