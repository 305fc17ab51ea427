//! Test helpers: a tiny fake dependency (work, control and health on one port), the real
//! dependency service on port 0, and log readers.
#![allow(dead_code)] // each test file uses a different part

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::Router;
use e03_model::events::Event;
use e03_plan::control::{RunCounts, StartRun, StopRun};

/// What the fake saw.
#[derive(Default)]
pub struct FakeState {
    pub arrivals: AtomicU64,
    pub starts: Mutex<Vec<StartRun>>,
    pub stops: Mutex<Vec<StopRun>>,
    /// How long /work takes to answer 200.
    pub work_delay: Duration,
}

/// A fake dependency on 127.0.0.1 port 0; returns its base URL and what it records.
pub async fn fake_dependency(work_delay: Duration) -> (String, Arc<FakeState>) {
    async fn work(State(s): State<Arc<FakeState>>) -> &'static str {
        s.arrivals.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(s.work_delay).await;
        "ok"
    }
    async fn start(State(s): State<Arc<FakeState>>, body: String) -> StatusCode {
        let run: StartRun = serde_json::from_str(&body).unwrap();
        s.arrivals.store(0, Ordering::SeqCst);
        s.starts.lock().unwrap().push(run);
        StatusCode::OK
    }
    async fn stop(State(s): State<Arc<FakeState>>, body: String) -> String {
        let stop: StopRun = serde_json::from_str(&body).unwrap();
        s.stops.lock().unwrap().push(stop);
        let n = s.arrivals.load(Ordering::SeqCst);
        serde_json::to_string(&RunCounts {
            arrivals: n,
            responses: n,
            log_file: "fake.jsonl".into(),
        })
        .unwrap()
    }
    let state = Arc::new(FakeState {
        work_delay,
        ..FakeState::default()
    });
    let app = Router::new()
        .route("/work", get(work))
        .route("/health", get(|| async { "ok" }))
        .route("/control/start", post(start))
        .route("/control/stop", post(stop))
        .with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), state)
}

/// Every record of a JSON Lines log.
pub fn read_log(path: &Path) -> Vec<Event> {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

/// A fresh, empty directory under the system temp dir.
pub fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("client-swarm-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Params from env-style pairs.
pub fn params(pairs: &[(&str, &str)]) -> e03_plan::Params {
    let raw = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    e03_plan::Params::from_raw(&raw).unwrap()
}

/// Starts a real dependency service on two port-0 listeners and waits until it is healthy;
/// returns its target.
pub async fn dependency(strategy: &str, log_dir: &Path) -> client_swarm::Target {
    let work = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let control = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (w, c) = (work.local_addr().unwrap(), control.local_addr().unwrap());
    let opts = dependency_service::ServiceOptions {
        log_dir: log_dir.to_path_buf(),
        answer_spin: std::time::Duration::ZERO,
        wire_front: None,
        send_logs: None,
        standalone: None,
    };
    tokio::spawn(dependency_service::serve(
        work,
        control,
        opts,
        std::future::pending(),
    ));
    let target = client_swarm::Target {
        replica: 0,
        strategy: strategy.into(),
        work_url: format!("http://{w}"),
        control_url: format!("http://{c}"),
    };
    client_swarm::wait_healthy(&target.control_url, 20, Duration::from_millis(100))
        .await
        .unwrap();
    target
}
