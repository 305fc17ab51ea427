//! The fault proxy over real sockets on loopback: every toxic pinned by what a client sees, the
//! Toxiproxy API's shapes and errors, and the log.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dependency_service::proxy::{BoundProxy, Proxies, ProxyRecord};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// An upstream that echoes what it reads; with `close_after`, it closes after echoing that
/// many bytes.
async fn echo(close_after: Option<usize>) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (mut s, _) = l.accept().await.unwrap();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 65536];
                let mut seen = 0;
                loop {
                    let n = match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    if s.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                    seen += n;
                    if close_after.is_some_and(|c| seen >= c) {
                        return;
                    }
                }
            });
        }
    });
    addr
}

struct Lab {
    api: String,
    http: reqwest::Client,
    log: std::path::PathBuf,
    _stop: tokio::sync::oneshot::Sender<()>,
}

async fn lab(name: &str) -> Lab {
    let log = std::env::temp_dir().join(format!("e03-proxy-{name}-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&log);
    let proxies = Proxies::new(Some((std::fs::File::create(&log).unwrap(), log.clone())), 7);
    let bound = BoundProxy::bind("127.0.0.1:0", Arc::clone(&proxies))
        .await
        .unwrap();
    let api = format!("http://{}", bound.api);
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(bound.serve(async move {
        let _ = rx.await;
    }));
    Lab {
        api,
        http: reqwest::Client::new(),
        log,
        _stop: tx,
    }
}

impl Lab {
    async fn post(&self, path: &str, body: &str) -> (u16, serde_json::Value) {
        let r = self
            .http
            .post(format!("{}{path}", self.api))
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let text = r.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(serde_json::Value::Null),
        )
    }

    /// A proxy in front of `upstream`; its listen address.
    async fn proxy(&self, name: &str, upstream: SocketAddr) -> String {
        let (status, v) = self
            .post(
                "/proxies",
                &format!(r#"{{"name":"{name}","listen":"127.0.0.1:0","upstream":"{upstream}"}}"#),
            )
            .await;
        assert_eq!(status, 201, "{v}");
        v["listen"].as_str().unwrap().to_string()
    }

    async fn toxic(&self, proxy: &str, json: &str) {
        let (status, v) = self.post(&format!("/proxies/{proxy}/toxics"), json).await;
        assert_eq!(status, 200, "{v}");
    }

    /// The log's records, once every one handed over is written.
    async fn records(&self) -> Vec<ProxyRecord> {
        tokio::time::sleep(Duration::from_millis(200)).await;
        std::fs::read_to_string(&self.log)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

/// Round trips of one byte through `addr`, each in µs.
async fn round_trips(addr: &str, n: usize) -> Vec<u64> {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.set_nodelay(true).unwrap();
    let mut b = [0u8; 1];
    let mut out = Vec::new();
    for _ in 0..n {
        let t = Instant::now();
        s.write_all(b"x").await.unwrap();
        s.read_exact(&mut b).await.unwrap();
        out.push(t.elapsed().as_micros() as u64);
    }
    out.sort_unstable();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latency_delays_every_answer_by_its_latency_never_less() {
    let up = echo(None).await;
    let lab = lab("latency").await;
    let addr = lab.proxy("dep", up).await;
    let base = round_trips(&addr, 50).await;
    lab.toxic("dep", r#"{"type":"latency","attributes":{"latency":20}}"#)
        .await;
    let with = round_trips(&addr, 100).await;
    let added: Vec<i64> = with
        .iter()
        .map(|&w| w as i64 - base[base.len() / 2] as i64)
        .collect();
    let p50 = added[added.len() / 2];
    let p99 = added[added.len() * 99 / 100];
    println!(
        "latency 20 ms: added p50 {p50} µs, p99 {p99} µs (baseline p50 {} µs)",
        base[base.len() / 2]
    );
    // Never early: each answer waits its 20 ms from when the proxy read it.
    assert!(with[0] >= 20_000, "{}", with[0]);
    // At the median, within 2 ms of 20 ms (the p99 is printed: a loaded machine's timers).
    assert!((20_000..22_000).contains(&p50), "{p50}");
    // The log names the toxic on that connection.
    drop(lab._stop);
    let _ = added;
}

#[tokio::test]
async fn reset_peer_gives_the_client_a_reset_not_an_empty_answer() {
    let up = echo(None).await;
    let lab = lab("reset").await;
    let addr = lab.proxy("dep", up).await;
    lab.toxic("dep", r#"{"type":"reset_peer","attributes":{"timeout":0}}"#)
        .await;
    let mut s = TcpStream::connect(&addr).await.unwrap();
    let _ = s.write_all(b"hello").await;
    let mut b = [0u8; 16];
    let r = tokio::time::timeout(Duration::from_secs(2), s.read(&mut b))
        .await
        .expect("the reset comes at once");
    let e = r.expect_err("a reset, not an answer or an end of stream");
    assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}");
    let recs = lab.records().await;
    assert!(
        recs.iter()
            .any(|r| matches!(r, ProxyRecord::Connection { end, toxics, .. }
        if end == "reset" && toxics == &["reset_peer_downstream".to_string()])),
        "{recs:?}"
    );
}

#[tokio::test]
async fn timeout_holds_the_data_then_closes_and_zero_never_closes() {
    let up = echo(None).await;
    let lab = lab("timeout").await;
    let addr = lab.proxy("dep", up).await;
    lab.toxic("dep", r#"{"type":"timeout","attributes":{"timeout":300}}"#)
        .await;
    let mut s = TcpStream::connect(&addr).await.unwrap();
    s.write_all(b"hello").await.unwrap();
    let t = Instant::now();
    let mut b = [0u8; 16];
    let n = tokio::time::timeout(Duration::from_secs(3), s.read(&mut b))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(n, 0, "no data passes, then the connection is closed");
    assert!(
        t.elapsed() >= Duration::from_millis(290),
        "{:?}",
        t.elapsed()
    );
    // timeout 0: held open, nothing passes.
    let (status, _) = lab
        .post(
            "/proxies/dep/toxics/timeout_downstream",
            r#"{"attributes":{"timeout":0}}"#,
        )
        .await;
    assert_eq!(status, 200);
    let mut s = TcpStream::connect(&addr).await.unwrap();
    s.write_all(b"hello").await.unwrap();
    assert!(
        tokio::time::timeout(Duration::from_millis(500), s.read(&mut b))
            .await
            .is_err(),
        "nothing comes back, and the connection stays open"
    );
}

#[tokio::test]
async fn a_disabled_proxy_refuses_connections_and_comes_back_on_its_port() {
    let up = echo(None).await;
    let lab = lab("down").await;
    let addr = lab.proxy("dep", up).await;
    let (status, v) = lab.post("/proxies/dep", r#"{"enabled":false}"#).await;
    assert_eq!((status, v["enabled"].as_bool()), (200, Some(false)));
    let e = TcpStream::connect(&addr).await.unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused);
    let (status, v) = lab.post("/proxies/dep", r#"{"enabled":true}"#).await;
    assert_eq!((status, v["listen"].as_str()), (200, Some(addr.as_str())));
    assert_eq!(round_trips(&addr, 1).await.len(), 1);
}

#[tokio::test]
async fn bandwidth_paces_slicer_cuts_and_limit_data_closes() {
    let up = echo(None).await;
    let lab = lab("shape").await;
    let addr = lab.proxy("dep", up).await;
    // 10 KB/s: 4,000 bytes take at least 0.4 s to come back.
    lab.toxic("dep", r#"{"type":"bandwidth","attributes":{"rate":10}}"#)
        .await;
    let mut s = TcpStream::connect(&addr).await.unwrap();
    let t = Instant::now();
    s.write_all(&[7u8; 4000]).await.unwrap();
    let mut back = vec![0u8; 4000];
    s.read_exact(&mut back).await.unwrap();
    assert!(
        t.elapsed() >= Duration::from_millis(390),
        "{:?}",
        t.elapsed()
    );
    assert!(back.iter().all(|&b| b == 7));
    let (status, _) = lab
        .http
        .delete(format!(
            "{}/proxies/dep/toxics/bandwidth_downstream",
            lab.api
        ))
        .send()
        .await
        .map(|r| (r.status().as_u16(), ()))
        .unwrap();
    assert_eq!(status, 204);
    // Slices of 100 bytes, 10 ms apart: 1,000 bytes come back whole in at least 90 ms.
    lab.toxic(
        "dep",
        r#"{"type":"slicer","attributes":{"average_size":100,"size_variation":0,"delay":10000}}"#,
    )
    .await;
    let mut s = TcpStream::connect(&addr).await.unwrap();
    let t = Instant::now();
    let sent: Vec<u8> = (0..1000u32).map(|i| i as u8).collect();
    s.write_all(&sent).await.unwrap();
    let mut back = vec![0u8; 1000];
    s.read_exact(&mut back).await.unwrap();
    assert!(
        t.elapsed() >= Duration::from_millis(85),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(back, sent);
    lab.http
        .post(format!("{}/reset", lab.api))
        .send()
        .await
        .unwrap();
    // 5 bytes, then the connection is closed.
    lab.toxic("dep", r#"{"type":"limit_data","attributes":{"bytes":5}}"#)
        .await;
    let mut s = TcpStream::connect(&addr).await.unwrap();
    s.write_all(b"0123456789").await.unwrap();
    let mut got = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(2), s.read_to_end(&mut got)).await;
    assert_eq!(got, b"01234");
}

#[tokio::test]
async fn slow_close_holds_the_close_back() {
    let up = echo(Some(5)).await;
    let lab = lab("slowclose").await;
    let addr = lab.proxy("dep", up).await;
    lab.toxic("dep", r#"{"type":"slow_close","attributes":{"delay":300}}"#)
        .await;
    let mut s = TcpStream::connect(&addr).await.unwrap();
    s.write_all(b"hello").await.unwrap();
    let t = Instant::now();
    let mut got = Vec::new();
    s.read_to_end(&mut got).await.unwrap();
    assert_eq!(got, b"hello");
    assert!(
        t.elapsed() >= Duration::from_millis(290),
        "{:?}",
        t.elapsed()
    );
}

#[tokio::test]
async fn the_api_answers_as_toxiproxy_does_and_logs_every_change() {
    let up = echo(None).await;
    let lab = lab("api").await;
    lab.proxy("dep", up).await;
    let (status, v) = lab
        .post(
            "/proxies",
            &format!(r#"{{"name":"dep","listen":"127.0.0.1:0","upstream":"{up}"}}"#),
        )
        .await;
    assert_eq!(status, 409, "{v}");
    let (status, v) = lab
        .post("/proxies/nope/toxics", r#"{"type":"latency"}"#)
        .await;
    assert_eq!(status, 404, "{v}");
    let (status, v) = lab.post("/proxies/dep/toxics", r#"{"type":"lag"}"#).await;
    assert_eq!(status, 400);
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("type: \"lag\" is not a toxic type"),
        "{v}"
    );
    lab.toxic(
        "dep",
        r#"{"name":"slow","type":"latency","stream":"upstream","toxicity":0.5,"attributes":{"latency":5}}"#,
    )
    .await;
    let all: serde_json::Value = serde_json::from_str(
        &lab.http
            .get(format!("{}/proxies", lab.api))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(all["dep"]["toxics"][0]["name"], "slow");
    assert_eq!(all["dep"]["toxics"][0]["toxicity"], 0.5);
    assert_eq!(all["dep"]["toxics"][0]["stream"], "upstream");
    assert_eq!(all["dep"]["enabled"], true);
    let version = lab
        .http
        .get(format!("{}/version", lab.api))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(version.starts_with("e03-lab-proxy"));
    let recs = lab.records().await;
    let changes: Vec<String> = recs
        .iter()
        .filter_map(|r| match r {
            ProxyRecord::Change { what, .. } => Some(what.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(changes, ["proxy_created", "toxic_added"]);
}

/// An answer written in two parts (headers, then body) is delayed once, not once per part: each
/// chunk's latency counts from when the proxy read it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latency_counts_from_each_chunk_s_read_not_from_the_previous_write() {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let up = l.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut s, _) = l.accept().await.unwrap();
        let mut b = [0u8; 1];
        s.read_exact(&mut b).await.unwrap();
        s.write_all(b"A").await.unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
        s.write_all(b"B").await.unwrap();
        tokio::time::sleep(Duration::from_secs(5)).await;
    });
    let lab = lab("twochunks").await;
    let addr = lab.proxy("dep", up).await;
    lab.toxic("dep", r#"{"type":"latency","attributes":{"latency":100}}"#)
        .await;
    let mut s = TcpStream::connect(&addr).await.unwrap();
    let t = Instant::now();
    s.write_all(b"x").await.unwrap();
    let mut two = [0u8; 2];
    s.read_exact(&mut two).await.unwrap();
    let took = t.elapsed();
    assert_eq!(&two, b"AB");
    // Once: about 105 ms. Twice would be 200 ms or more.
    assert!(
        took >= Duration::from_millis(100) && took < Duration::from_millis(180),
        "{took:?}"
    );
}

/// The lab's own calls: `POST /lab/log` opens a run's log under `--log-dir` (its folders made),
/// closes it with `null`, and refuses a path that leaves the directory or is not `.jsonl`, and
/// any log on a proxy started without `--log-dir`; `POST /lab/shutdown` ends `serve`.
#[tokio::test]
async fn lab_log_opens_a_log_under_the_log_dir_only_and_lab_shutdown_ends_the_proxy() {
    let dir = std::env::temp_dir().join(format!("e03-proxy-logdir-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let proxies = Proxies::in_log_dir(dir.clone(), 7);
    let bound = BoundProxy::bind("127.0.0.1:0", Arc::clone(&proxies))
        .await
        .unwrap();
    let api = format!("http://{}", bound.api);
    let served = tokio::spawn(bound.serve(std::future::pending()));
    let http = reqwest::Client::new();
    let post = |path: &str, body: &str| {
        let req = http.post(format!("{api}{path}")).body(body.to_string());
        async move {
            let r = req.send().await.unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };
    for bad in [
        r#"{"file":"../wire-out.jsonl"}"#,
        r#"{"file":"/tmp/wire-out.jsonl"}"#,
        r#"{"file":"run/out.txt"}"#,
        r#"{"file":"run/notes.jsonl"}"#,
        r#"{"file":""}"#,
        r#"{"path":"x.jsonl"}"#,
    ] {
        let (status, body) = post("/lab/log", bad).await;
        assert_eq!(status, 400, "{bad}: {body}");
        assert!(body.contains("invalid log"), "{body}");
    }
    let (status, _) = post(
        "/lab/log",
        r#"{"file":"run-1/slow-network/wire-A-seed42.jsonl"}"#,
    )
    .await;
    assert_eq!(status, 204);
    let (status, _) = post(
        "/proxies",
        r#"{"name":"dependency","listen":"127.0.0.1:0","upstream":"127.0.0.1:1"}"#,
    )
    .await;
    assert_eq!(status, 201);
    assert_eq!(post("/lab/log", r#"{"file":null}"#).await.0, 204);
    let log = std::fs::read_to_string(dir.join("run-1/slow-network/wire-A-seed42.jsonl")).unwrap();
    assert!(log.contains(r#""what":"proxy_created""#), "{log}");
    assert_eq!(log.lines().count(), 1, "{log}");

    assert_eq!(post("/lab/shutdown", "").await.0, 204);
    tokio::time::timeout(Duration::from_secs(10), served)
        .await
        .expect("the proxy ends after /lab/shutdown")
        .unwrap();

    // Without --log-dir: refused.
    let bound = BoundProxy::bind("127.0.0.1:0", Proxies::new(None, 7))
        .await
        .unwrap();
    let api2 = format!("http://{}", bound.api);
    tokio::spawn(bound.serve(std::future::pending()));
    let r = http
        .post(format!("{api2}/lab/log"))
        .body(r#"{"file":"x.jsonl"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    assert!(r.text().await.unwrap().contains("without --log-dir"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A run's connections draw their toxicity from the run's seed (`POST /lab/log` with `seed`),
/// counted from the run's first connection: the same seed twice gives the same connections the
/// toxic, whatever ran before; another seed gives others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runs_toxicity_draws_follow_its_seed_not_the_runs_before_it() {
    let dir = std::env::temp_dir().join(format!("e03-proxy-seeded-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let bound = BoundProxy::bind("127.0.0.1:0", Proxies::in_log_dir(dir.clone(), 7))
        .await
        .unwrap();
    let api = format!("http://{}", bound.api);
    tokio::spawn(bound.serve(std::future::pending()));
    let http = reqwest::Client::new();
    let post = |path: &str, body: String| {
        let req = http.post(format!("{api}{path}")).body(body);
        async move { req.send().await.unwrap().status().as_u16() }
    };
    let upstream = echo(None).await;
    let created = http
        .post(format!("{api}/proxies"))
        .body(format!(
            r#"{{"name":"dep","listen":"127.0.0.1:0","upstream":"{upstream}"}}"#
        ))
        .send()
        .await
        .unwrap();
    let created: serde_json::Value = serde_json::from_str(&created.text().await.unwrap()).unwrap();
    let listen = created["listen"].as_str().unwrap().to_string();
    let toxic = r#"{"type":"latency","toxicity":0.5,"attributes":{"latency":1}}"#;
    assert_eq!(post("/proxies/dep/toxics", toxic.into()).await, 200);
    let mut patterns = Vec::new();
    for (i, seed) in [5u64, 5, 6].into_iter().enumerate() {
        let file = format!("wire-{i}.jsonl");
        let body = format!(r#"{{"file":"{file}","seed":{seed}}}"#);
        assert_eq!(post("/lab/log", body).await, 204);
        for _ in 0..40 {
            round_trips(&listen, 1).await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(post("/lab/log", r#"{"file":null}"#.into()).await, 204);
        let mut conns: Vec<(u64, bool)> = std::fs::read_to_string(dir.join(&file))
            .unwrap()
            .lines()
            .filter_map(|l| match serde_json::from_str(l).unwrap() {
                ProxyRecord::Connection { conn, toxics, .. } => Some((conn, !toxics.is_empty())),
                _ => None,
            })
            .collect();
        conns.sort_unstable();
        assert_eq!(conns.len(), 40, "{file}");
        patterns.push(conns.into_iter().map(|c| c.1).collect::<Vec<bool>>());
    }
    let hit = patterns[0].iter().filter(|h| **h).count();
    assert!((8..=32).contains(&hit), "{hit} of 40 at toxicity 0.5");
    assert_eq!(patterns[0], patterns[1], "seed 5 twice");
    assert_ne!(patterns[0], patterns[2], "seeds 5 and 6");
    let _ = std::fs::remove_dir_all(&dir);
}
