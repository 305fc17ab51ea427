//! Test helpers: a real service on 127.0.0.1 port 0 with its own log directory.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use dependency_service::{serve, ServiceOptions, StandaloneRun};
use e03_model::events::Event;
use e03_plan::{Params, Scenario};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Log of the standalone run, relative to the log directory.
pub const STANDALONE_LOG: &str = "standalone/server-standalone.jsonl";

pub struct Server {
    pub work: SocketAddr,
    pub control: SocketAddr,
    pub log_dir: PathBuf,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<anyhow::Result<()>>,
}

pub fn raw(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

pub fn params(pairs: &[(&str, &str)]) -> Params {
    Params::from_raw(&raw(pairs)).unwrap()
}

/// A fresh, empty directory under the system temp dir.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("e03-svc-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Starts a service; with `standalone`, a run starts at once with those parameters.
pub async fn start(name: &str, standalone: Option<(Scenario, &[(&str, &str)])>) -> Server {
    let log_dir = temp_dir(name);
    let work = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let control = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (work_addr, control_addr) = (work.local_addr().unwrap(), control.local_addr().unwrap());
    let (stop, stopped) = oneshot::channel::<()>();
    let opts = ServiceOptions {
        log_dir: log_dir.clone(),
        answer_spin: std::time::Duration::ZERO,
        wire_front: None,
        send_logs: None,
        standalone: standalone.map(|(scenario, pairs)| StandaloneRun {
            scenario,
            params: params(pairs),
            text: None,
            policies_text: None,
            at_first_request: false,
        }),
    };
    let task = tokio::spawn(serve(work, control, opts, async {
        let _ = stopped.await;
    }));
    Server {
        work: work_addr,
        control: control_addr,
        log_dir,
        stop: Some(stop),
        task,
    }
}

impl Server {
    pub fn work_url(&self, path: &str) -> String {
        format!("http://{}{path}", self.work)
    }

    pub fn control_url(&self, path: &str) -> String {
        format!("http://{}{path}", self.control)
    }

    /// Triggers the shutdown future and waits for `serve` to return; gives the log directory.
    pub async fn shutdown(mut self) -> PathBuf {
        let _ = self.stop.take().unwrap().send(());
        tokio::time::timeout(Duration::from_secs(15), &mut self.task)
            .await
            .expect("serve returns after shutdown")
            .unwrap()
            .unwrap();
        self.log_dir
    }

    /// Waits for `serve` to return by itself (its shutdown future is never triggered).
    pub async fn wait_exit(mut self) -> PathBuf {
        tokio::time::timeout(Duration::from_secs(15), &mut self.task)
            .await
            .expect("serve returns by itself")
            .unwrap()
            .unwrap();
        self.log_dir
    }

    pub fn log(&self, rel: &str) -> Vec<Event> {
        read_log(&self.log_dir.join(rel))
    }
}

pub fn read_log(path: &Path) -> Vec<Event> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

pub fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

pub fn unix_ms_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// POSTs a JSON body; status and body text.
pub async fn post(url: &str, body: &str) -> (u16, String) {
    let res = client()
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    (status, res.text().await.unwrap())
}

/// A start call body.
pub fn start_call(
    run: &str,
    strategy: &str,
    seed: u64,
    pairs: &[(&str, &str)],
    start_unix_ms: u64,
) -> String {
    serde_json::json!({
        "run": run,
        "scenario": "e03b",
        "strategy": strategy,
        "seed": seed,
        "params": e03_plan::Params::from_raw(&raw(pairs)).unwrap(),
        "start_unix_ms": start_unix_ms,
    })
    .to_string()
}
