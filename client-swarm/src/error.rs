//! Typed errors of the swarm library. Entry points wrap them in `anyhow`.

use std::path::PathBuf;

/// Why a swarm could not run (or finish) a plan.
#[derive(Debug, thiserror::Error)]
pub enum SwarmError {
    #[error("strategy {strategy} has no target (give one with --targets {strategy}=WORK_URL@CONTROL_URL)")]
    MissingTarget { strategy: String },
    #[error(
        "strategy {strategy} has no target for replica {replica} of the run's {replicas} \
         (E03_REPLICAS): expected --targets {strategy}:{replica}=WORK@CONTROL"
    )]
    MissingReplica {
        strategy: String,
        replica: u32,
        replicas: u32,
    },
    #[error("strategy {strategy} has more than one target")]
    DuplicateTarget { strategy: String },
    #[error("invalid {what} URL {url:?} for strategy {strategy}: expected http://HOST:PORT")]
    BadUrl {
        strategy: String,
        what: &'static str,
        url: String,
    },
    #[error("building the HTTP client: {0}")]
    Client(#[source] reqwest::Error),
    #[error("control call {url} failed: {reason}")]
    Control { url: String, reason: String },
    #[error("{url} did not answer 200 after {tries} tries")]
    Unhealthy { url: String, tries: u32 },
    #[error("writing the client log {path}: {source}")]
    Log {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the client log writer stopped early")]
    LogClosed,
    #[error("sending the log to the analyzer (the log is kept here): {0}")]
    Ship(#[from] e03_io::ship::ShipError),
}
