//! The signal that stops a swarm: Ctrl-C or SIGTERM. Running the plan (`crate::run_all`) turns
//! it into the stop every run watches (a stopped run closes its logs with `complete: false`).
//! A leaf: it names nothing of the crate.

/// Resolves on Ctrl-C or SIGTERM (never, if neither can be listened to).
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}
