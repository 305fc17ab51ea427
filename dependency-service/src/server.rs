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
//!
//! [`MAX_HEADER_BYTES`]: crate::listen::MAX_HEADER_BYTES
//! [`HEADER_READ_TIMEOUT`]: crate::listen::HEADER_READ_TIMEOUT
//! [`DRAIN_TIMEOUT`]: crate::listen::DRAIN_TIMEOUT

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;

use crate::listen::{
    accept_loop, drain, stop_channel, MAX_CONTROL_CONNECTIONS, MAX_WORK_CONNECTIONS,
};
use crate::routes::{control_router, work_router};
use crate::service::{Service, StandaloneRun};
use e03_io::sink::LogSink;

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
