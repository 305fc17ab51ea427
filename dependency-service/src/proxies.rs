//! The proxies of one `lab proxy` process and what they share: [`Proxies`] (the proxies by
//! name, the log every record goes to, the seed of the draws, the connections' counter and
//! precise timer, the `POST /lab/shutdown` call), one [`Proxy`] as it runs, and [`ProxyView`], a
//! proxy as the API shows it.
//!
//! A leaf of the proxy: the API (`crate::proxy_api`) and the listeners and links
//! (`crate::proxy_link`) both act on this state, and it names neither.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use e03_io::sink::LogSink;
use e03_model::wire::{ProxyRecord, Toxic};
use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tokio::task::JoinSet;

/// A proxy as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProxyView {
    pub name: String,
    pub listen: String,
    pub upstream: String,
    pub enabled: bool,
    pub toxics: Vec<Toxic>,
}

pub(crate) fn wall_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

pub(crate) struct Proxy {
    pub(crate) name: String,
    /// As asked (a port of 0 is replaced by the bound one while listening).
    pub(crate) listen: String,
    pub(crate) upstream: String,
    pub(crate) enabled: bool,
    pub(crate) toxics: watch::Sender<Arc<Vec<Toxic>>>,
    /// The accept loop and every open connection, while enabled.
    pub(crate) running: Option<JoinSet<()>>,
}

impl Proxy {
    pub(crate) fn view(&self) -> ProxyView {
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
    pub(crate) proxies: tokio::sync::Mutex<BTreeMap<String, Proxy>>,
    /// Its file is switched per run when the proxy stands in front of a dependency
    /// ([`Proxies::set_log`]); a record with no file open is not written.
    log: LogSink,
    /// The seed of the draws and the first connection they count from: `--seed` and 0, then
    /// each run's seed and its first connection ([`Proxies::begin_run`]), so a run's toxicity,
    /// jitter and slice draws depend on its seed and not on the runs before it.
    draws: Mutex<(u64, u64)>,
    pub(crate) conns: Arc<AtomicU64>,
    /// Where `POST /lab/log` may open a log (`--log-dir`); none: the call is refused.
    pub(crate) log_dir: Option<std::path::PathBuf>,
    /// `POST /lab/shutdown` was called.
    pub(crate) shutdown: tokio::sync::Notify,
    /// The connections' waits (a latency, a bandwidth's or a slicer's pieces, a reset's
    /// timeout): tokio's timer rounds each up to its next millisecond tick, so a slicer's 1 ms
    /// waits took 2 to 3 ms each on it; this one wakes within tens of µs of the toxic's figure.
    pub(crate) timer: precise_timer::PreciseTimer,
}

pub(crate) type Shared = Arc<Proxies>;

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
    pub(crate) fn draw_key(&self, conn: u64) -> (u64, u64) {
        let (seed, first) = *self.draws.lock().unwrap_or_else(|e| e.into_inner());
        (seed, conn.wrapping_sub(first))
    }

    /// Hands `r` to the log's writer at once: a connection's record is made in its `Drop`.
    pub(crate) fn record(&self, r: &ProxyRecord) {
        self.log.record_now(r);
    }

    pub(crate) fn change(&self, what: &str, proxy: &str, toxic: Option<Toxic>) {
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
