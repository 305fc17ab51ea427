//! Serving: two listeners (work and control), hyper HTTP/1 connections with limits, and
//! graceful shutdown.
//!
//! `axum::serve` sets no header-size limit, header timeout or connection cap, so the service
//! drives hyper's connections itself: headers over [`MAX_HEADER_BYTES`] get 431, a client has
//! [`HEADER_READ_TIMEOUT`] to send its headers, and at most [`MAX_WORK_CONNECTIONS`] work
//! connections are open at once (a connection beyond it is closed at once; permits are moved
//! into the connection task as in mini-redis). The control listener has its own small pool so
//! a flood on the work port cannot lock the lab out of its control calls.
//!
//! On shutdown: stop accepting, end the current run (`run_end{complete: false}`, log flushed;
//! requests still waiting get 503), then give open connections [`DRAIN_TIMEOUT`] to finish.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};

use crate::routes::{control_router, work_router};
use crate::service::{RunSpec, Service};
use e03_io::sink::LogSink;

pub const MAX_HEADER_BYTES: usize = 16 * 1024;
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
pub const MAX_WORK_CONNECTIONS: usize = 20_000;
pub const MAX_CONTROL_CONNECTIONS: usize = 64;
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// How to run the service.
#[derive(Debug, Clone)]
pub struct ServiceOptions {
    /// Where run logs go: `<log_dir>/<scenario>/server-<strategy>-seed<seed>.jsonl`.
    pub log_dir: PathBuf,
    /// A run started at process start without a control call.
    pub standalone: Option<StandaloneRun>,
    /// How long before each due instant of the schedule the timer thread spins instead of
    /// sleeping (`--answer-spin-us`); zero: it sleeps.
    pub answer_spin: Duration,
    /// The fault proxy in front of the work listener, when the process has one
    /// ([`crate::wire_front`]).
    pub wire_front: Option<Arc<crate::wire_front::WireFront>>,
    /// `--send-logs URL`: the analyzer's collector, to which each run's logs go when it ends.
    pub send_logs: Option<String>,
}

/// The run of a service started alone: its timeline runs from the process's start, with seed
/// `params.seeds[0]`, strategy "standalone", logged to `<log_dir>/standalone/server-standalone.jsonl`.
#[derive(Debug, Clone)]
pub struct StandaloneRun {
    pub scenario: e03_core::Scenario,
    pub params: e03_core::Params,
    /// A scenario file's text, kept as `<log_dir>/standalone/scenario.toml` beside the log.
    pub text: Option<String>,
    /// The user's policy file it was read with, kept as `policies.toml` beside it.
    pub policies_text: Option<String>,
    /// Its timeline starts at the first request, not at the process's start.
    pub at_first_request: bool,
}

impl StandaloneRun {
    /// The run to start now: time zero is this instant.
    pub fn spec(&self) -> RunSpec {
        RunSpec::standalone(self.scenario.clone(), self.params.clone())
    }
}

/// Serves the work endpoint on `work` and the control endpoint on `control` until `shutdown`
/// resolves; then ends the current run with complete=false (if it was not stopped) and flushes
/// the logs.
pub async fn serve(
    work: TcpListener,
    control: TcpListener,
    opts: ServiceOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let log = LogSink::start()?;
    let svc = Arc::new(
        Service::new(log, opts.log_dir)
            .with_answer_spin(opts.answer_spin)
            .with_wire_front(opts.wire_front)
            .with_send_logs(opts.send_logs),
    );
    if let Some(s) = opts.standalone {
        if let Some(text) = &s.text {
            let dir = svc.log_dir().join(crate::service::STANDALONE);
            std::fs::create_dir_all(&dir)?;
            e03_io::scenario_files::keep(&dir, text).map_err(anyhow::Error::msg)?;
            if let Some(policies) = &s.policies_text {
                e03_io::scenario_files::keep_policies(&dir, policies)
                    .map_err(anyhow::Error::msg)?;
            }
        }
        if s.at_first_request {
            svc.start_at_first_request(s);
        } else {
            svc.start_run(s.spec()).await?;
        }
    }
    let requested = svc.clone();
    let stop_rx = stop_channel(async move {
        tokio::select! {
            () = shutdown => {}
            () = requested.shutdown_requested.notified() => {
                tracing::info!("shutdown requested by a control call");
            }
        }
    });
    let graceful = GracefulShutdown::new();
    tokio::join!(
        accept_loop(
            work,
            work_router(svc.clone()),
            &graceful,
            MAX_WORK_CONNECTIONS,
            stop_rx.clone()
        ),
        accept_loop(
            control,
            control_router(svc.clone()),
            &graceful,
            MAX_CONTROL_CONNECTIONS,
            stop_rx
        ),
    );
    tracing::info!("shutting down");
    let ended = svc.stop_run(false, None).await;
    drain(graceful, "dependency").await;
    // The last run's logs reach the analyzer (or the sender gives up) before the process ends.
    svc.finish_sending().await;
    // Everything of the last run is written, flushed and synced by stop_run; a late task's
    // record finds no file open.
    drop(svc);
    if let Some(Err(e)) = ended {
        return Err(e.into());
    }
    Ok(())
}

/// Accepts HTTP/1 connections on `listener` for `app` until `stop` turns true, with the limits
/// every listener of the lab shares (the service's work and control listeners, a hop's one):
/// headers over [`MAX_HEADER_BYTES`] get 431, a connection that has not sent a whole request
/// head within [`HEADER_READ_TIMEOUT`] (a slow or idle client, including an idle keep-alive
/// connection) is closed, and at most `max_connections` are open at once (one beyond is closed
/// at once). Every connection is watched by `graceful`, for the caller's drain.
pub(crate) async fn accept_loop(
    listener: TcpListener,
    app: Router,
    graceful: &GracefulShutdown,
    max_connections: usize,
    mut stop: watch::Receiver<bool>,
) {
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .max_header_size(MAX_HEADER_BYTES);
    let permits = Arc::new(Semaphore::new(max_connections));
    loop {
        let stream = tokio::select! {
            r = listener.accept() => match r {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors and the like: back off briefly, keep serving.
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
            },
            // The only value ever sent is `true`; a dropped sender also means stop.
            _ = stop.changed() => break,
        };
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let conn =
            http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(app.clone()));
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!("connection ended with an error: {e}");
            }
            drop(permit);
        });
    }
}

/// The stop every accept loop of a server watches ([`accept_loop`]): `true` once `stop`
/// resolves.
pub(crate) fn stop_channel(
    stop: impl Future<Output = ()> + Send + 'static,
) -> watch::Receiver<bool> {
    let (tx, rx) = watch::channel(false);
    tokio::spawn(async move {
        stop.await;
        let _ = tx.send(true);
    });
    rx
}

/// After the accept loops stopped: gives the connections still open [`DRAIN_TIMEOUT`] to
/// finish, then closes them (`who` names the server in the warning).
pub(crate) async fn drain(graceful: GracefulShutdown, who: &str) {
    if tokio::time::timeout(DRAIN_TIMEOUT, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("{who}: connections still open after {DRAIN_TIMEOUT:?}; closing them");
    }
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!("cannot listen for Ctrl-C: {e}");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::error!("cannot listen for SIGTERM: {e}");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
}
