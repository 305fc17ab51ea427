//! Proxy mode (`lab hop`): hops on loopback port 0, chained over real HTTP.

use std::path::PathBuf;
use std::time::Duration;

use dependency_service::hop::{bind, inflight_of, top_requests, HopConfig, Role};
use e03_core::chain::{Bottom, CallRecord, HopSpec, DEADLINE_HEADER};

fn spec(name: &str, attempts: u32) -> HopSpec {
    HopSpec {
        name: name.into(),
        attempts,
        timeout_ms: 2000,
        backoff_ms: 0,
        deadline_ms: None,
    }
}

fn log_path(dir: &std::path::Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.jsonl"))
}

/// Starts a hop in this runtime; its address.
async fn start(layer: u32, role: Role, log: PathBuf) -> String {
    let bound = bind(HopConfig {
        layer,
        role,
        log,
        listen: "127.0.0.1:0".into(),
    })
    .await
    .unwrap();
    let addr = bound.addr.to_string();
    tokio::spawn(bound.serve(std::future::pending()));
    addr
}

fn records(path: &std::path::Path) -> Vec<CallRecord> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn tempdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("e03-hop-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[tokio::test]
async fn retries_multiply_down_a_chain_over_http() {
    let dir = tempdir("chain");
    let bottom = start(
        3,
        Role::Bottom {
            bottom: Bottom::Fail { status: 503 },
        },
        log_path(&dir, "bottom"),
    )
    .await;
    let order = start(
        2,
        Role::Proxy {
            spec: spec("order", 3),
            upstream: format!("http://{bottom}"),
            propagate: false,
        },
        log_path(&dir, "order"),
    )
    .await;
    let gateway = start(
        1,
        Role::Proxy {
            spec: spec("gateway", 3),
            upstream: format!("http://{order}"),
            propagate: false,
        },
        log_path(&dir, "gateway"),
    )
    .await;
    let tops = top_requests(&spec("client", 1), &format!("http://{gateway}"), false, 2)
        .await
        .unwrap();
    assert_eq!(tops.len(), 2);
    assert!(tops.iter().all(|t| t.status == 502));
    let client = reqwest::Client::new();
    for addr in [&bottom, &order, &gateway] {
        assert_eq!(inflight_of(&client, addr).await.unwrap(), 0);
    }
    let b = records(&log_path(&dir, "bottom"));
    assert_eq!(b.len(), 18, "3 x 3 bottom calls per top request");
    assert_eq!(b.iter().filter(|r| r.req == 1).count(), 9);
    assert!(b.iter().all(|r| r.layer == 3 && r.status == 503));
    assert_eq!(records(&log_path(&dir, "order")).len(), 6);
    assert_eq!(records(&log_path(&dir, "gateway")).len(), 2);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_hop_whose_upstream_is_down_answers_502_and_keeps_serving() {
    let dir = tempdir("down");
    // A port that was free a moment ago: nothing listens there.
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = free.local_addr().unwrap();
    drop(free);
    let hop = start(
        1,
        Role::Proxy {
            spec: spec("order", 2),
            upstream: format!("http://{dead}"),
            propagate: false,
        },
        log_path(&dir, "order"),
    )
    .await;
    let client = reqwest::Client::new();
    for _ in 0..2 {
        let resp = client
            .get(format!("http://{hop}/work"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 502);
        let body = resp.text().await.unwrap();
        assert!(body.contains("could not connect"), "{body}");
    }
    assert_eq!(records(&log_path(&dir, "order")).len(), 2);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_passed_deadline_is_refused_with_504_and_a_bad_header_is_400() {
    let dir = tempdir("deadline");
    let bottom = start(
        2,
        Role::Bottom {
            bottom: Bottom::Hang { hold_ms: 60_000 },
        },
        log_path(&dir, "bottom"),
    )
    .await;
    let hop = start(
        1,
        Role::Proxy {
            spec: spec("order", 3),
            upstream: format!("http://{bottom}"),
            propagate: true,
        },
        log_path(&dir, "order"),
    )
    .await;
    let client = reqwest::Client::new();
    let get = |value: &'static str| {
        client
            .get(format!("http://{hop}/work"))
            .header(DEADLINE_HEADER, value)
            .timeout(Duration::from_secs(30))
            .send()
    };
    assert_eq!(get("0").await.unwrap().status().as_u16(), 504);
    let bad = get("soon").await.unwrap();
    assert_eq!(bad.status().as_u16(), 400);
    assert!(bad.text().await.unwrap().contains(DEADLINE_HEADER));
    // A deadline of 50 ms: the hop's attempt is capped at it, the bottom's hang ends at it.
    let resp = get("50").await.unwrap();
    assert_eq!(resp.status().as_u16(), 504);
    // The bottom's hang ends at its own deadline: wait (bounded) until it has logged.
    for _ in 0..100 {
        if inflight_of(&client, &bottom).await.unwrap() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let order = records(&log_path(&dir, "order"));
    assert_eq!(order.len(), 2);
    assert!(order[0].refused);
    let bottom_calls = records(&log_path(&dir, "bottom"));
    assert_eq!(bottom_calls.len(), 1);
    assert_eq!(bottom_calls[0].status, 504);
    let _ = std::fs::remove_dir_all(&dir);
}
