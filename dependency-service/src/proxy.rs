//! `lab proxy`: a TCP fault proxy that serves Toxiproxy's HTTP API, the live driver of the core's
//! toxics ([`e03_model::wire`]). Issue "Faults on the wire", item 1.
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
//!
//! The parts, each in a file of its own: the proxies and what they share (`proxies.rs`), the
//! API (`proxy_api.rs`), one proxy's listener and its connections' links (`proxy_link.rs`).
//! This file is `lab proxy` itself: its command line ([`main_entry`]) and the API served
//! ([`BoundProxy`]); every public item of the parts is re-exported here.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;

use crate::proxies::Shared;
pub use crate::proxies::{Proxies, ProxyView};
pub use crate::proxy_api::{api, VERSION};
use crate::proxy_link::stop;
pub use e03_model::wire::ProxyRecord;

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
enabled=false refuses connections. For HTTP faults (503, 429 with Retry-After, delays, hangs,
resets) in front of any HTTP service: lab proxy --http --help.

Options:
  --api ADDR   where the API listens [default: 127.0.0.1:8474] (port 0: any free port)
  --log FILE   JSON Lines log: one record per connection and per change [default: none]
  --log-dir DIR  no log until a dependency opens one under DIR (POST /lab/log), per run
  --seed N     seeds the toxicity, jitter and slice draws [default: 42]

Prints `listening api=IP:PORT` first; serves until SIGINT or SIGTERM (exit 0).";

/// `lab proxy [--api ADDR] [--log FILE | --log-dir DIR] [--seed N]`.
pub fn main_entry(args: Vec<std::ffi::OsString>) -> i32 {
    let usage = |msg: String| {
        eprintln!("lab: {msg}");
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
    let rt = match crate::listen::proxy_runtime() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("lab: cannot start the runtime: {e}");
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
