//! The listener plumbing every server of the crate shares (the service's work and control
//! listeners, a hop's, the fault proxy's API, the audit listener): the accept loop with its
//! limits, the stop its accept loops watch, the drain of open connections, and the Ctrl-C or
//! SIGTERM that stops a process.
//!
//! On its own so the servers built on it (`crate::server`, `crate::proxy`, `crate::hop`,
//! `crate::audit`) take it from here, not from one another: it names nothing else of the crate.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};

pub const MAX_HEADER_BYTES: usize = 16 * 1024;
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
pub const MAX_WORK_CONNECTIONS: usize = 20_000;
pub const MAX_CONTROL_CONNECTIONS: usize = 64;
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

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

/// The runtime of a fault proxy (`lab proxy`, `lab proxy --http`): two worker threads, its
/// work being IO, not the service's timing.
pub(crate) fn proxy_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
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
