//! Proxy mode (`lab hop`): hops on loopback port 0, chained over real HTTP.

use std::path::PathBuf;
use std::time::Duration;

// The hop's callers' side of its protocol is the swarm's (a dev-dependency).
use client_swarm::{configure_hop, inflight_at};
use dependency_service::hop::{bind, bind_unconfigured, HopConfig};
use e03_model::chain::{Bottom, CallRecord, HopSpec, DEADLINE_HEADER};
use e03_plan::hop_control::{HopSetup, Role, CONFIGURE_PATH};

fn spec(name: &str, attempts: u32) -> HopSpec {
    HopSpec {
        name: name.into(),
        attempts,
        timeout_ms: 2000,
        backoff_ms: 0,
        deadline_ms: None,
    }
}

/// `requests` top requests to the hop at the base URL `base`, one after the other, as the top
/// caller (the swarm's driver) sends them: request `o` in the operation header. Their statuses.
async fn top_requests(base: &str, requests: u32) -> Vec<u16> {
    let client = reqwest::Client::new();
    let mut statuses = Vec::new();
    for op in 0..requests {
        let resp = client
            .get(format!("{base}/work"))
            .header(e03_model::events::HEADER_OP, op)
            .timeout(Duration::from_secs(20))
            .send()
            .await
            .unwrap();
        statuses.push(resp.status().as_u16());
    }
    statuses
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

/// Waits (at most 5 s) until every hop says 0 on `GET /inflight`: no call working and every
/// record in its log (written off the request path).
async fn idle(hops: &[&str]) {
    let bases: Vec<String> = hops
        .iter()
        .map(|h| {
            if h.starts_with("http://") {
                h.to_string()
            } else {
                format!("http://{h}")
            }
        })
        .collect();
    assert!(
        client_swarm::wait_idle(&bases, Duration::from_secs(5))
            .await
            .unwrap(),
        "a hop stayed busy"
    );
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
    let tops = top_requests(&format!("http://{gateway}"), 2).await;
    assert_eq!(tops, [502, 502]);
    // Every hop reaches 0 (no call working, every record flushed) and stays there.
    idle(&[&bottom, &order, &gateway]).await;
    let client = reqwest::Client::new();
    for addr in [&bottom, &order, &gateway] {
        assert_eq!(
            inflight_at(&client, &format!("http://{addr}"))
                .await
                .unwrap(),
            0
        );
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
    idle(&[&hop]).await;
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
    // The bottom's hang ends at its own deadline: wait (bounded) until both have logged.
    idle(&[&bottom, &hop]).await;
    let order = records(&log_path(&dir, "order"));
    assert_eq!(order.len(), 2);
    assert!(order[0].refused);
    let bottom_calls = records(&log_path(&dir, "bottom"));
    assert_eq!(bottom_calls.len(), 1);
    assert_eq!(bottom_calls[0].status, 504);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Starts a hop without a configuration (as compose's hop services); its base URL and the
/// task that serves it.
async fn start_unconfigured(log_dir: PathBuf) -> (String, tokio::task::JoinHandle<()>) {
    let bound = bind_unconfigured("127.0.0.1:0", log_dir).await.unwrap();
    let base = format!("http://{}", bound.addr);
    let task = tokio::spawn(bound.serve(std::future::pending()));
    (base, task)
}

async fn post_configure(client: &reqwest::Client, base: &str, body: &str) -> (u16, String) {
    let resp = client
        .post(format!("{base}{CONFIGURE_PATH}"))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    (resp.status().as_u16(), resp.text().await.unwrap())
}

fn proxy_setup(layer: u32, attempts: u32, upstream: &str, log: &str) -> HopSetup {
    HopSetup {
        layer,
        role: Role::Proxy {
            spec: spec("order", attempts),
            upstream: upstream.into(),
            propagate: false,
        },
        log: log.into(),
    }
}

#[tokio::test]
async fn an_unconfigured_hop_answers_503_until_a_control_call_configures_it() {
    let dir = tempdir("unconfigured");
    let (base, _task) = start_unconfigured(dir.clone()).await;
    let client = reqwest::Client::new();
    let health = client.get(format!("{base}/health")).send().await.unwrap();
    assert_eq!(health.status().as_u16(), 200);
    let resp = client.get(format!("{base}/work")).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 503);
    assert!(resp.text().await.unwrap().contains(CONFIGURE_PATH));
    let setup = HopSetup {
        layer: 1,
        role: Role::Bottom {
            bottom: Bottom::Fail { status: 503 },
        },
        log: "run/amplification/v/layer-1-bottom.jsonl".into(),
    };
    configure_hop(&client, &base, &setup).await.unwrap();
    let resp = client.get(format!("{base}/work")).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 503);
    assert_eq!(resp.text().await.unwrap(), "bottom answered 503");
    // The log is written off the request path: complete once GET /inflight says 0.
    idle(&[&base]).await;
    let logged = records(&dir.join("run/amplification/v/layer-1-bottom.jsonl"));
    assert_eq!(logged.len(), 1, "only the configured call is logged");
    assert_eq!((logged[0].layer, logged[0].status), (1, 503));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_bad_configuration_is_a_400_naming_the_key_and_changes_nothing() {
    let dir = tempdir("badconfig");
    let (base, _task) = start_unconfigured(dir.clone()).await;
    let client = reqwest::Client::new();
    let good = serde_json::to_value(proxy_setup(1, 3, "http://127.0.0.1:9", "a/l.jsonl")).unwrap();
    let with = |key: &str, value: serde_json::Value| {
        let mut v = good.clone();
        let mut at = &mut v;
        let parts: Vec<&str> = key.split('.').collect();
        for p in &parts[..parts.len() - 1] {
            at = at.get_mut(*p).unwrap();
        }
        at[parts[parts.len() - 1]] = value;
        v.to_string()
    };
    let cases = [
        ("{\"layer\": 1".to_string(), "invalid hop configuration"),
        (
            "{\"layer\": 1, \"log\": \"a.jsonl\"}".to_string(),
            "missing field `role`",
        ),
        (with("color", "red".into()), "unknown field `color`"),
        (with("layer", 0.into()), "layer = 0"),
        (
            with("log", "../escape.jsonl".into()),
            "log = \"../escape.jsonl\"",
        ),
        (
            with("log", "/tmp/abs.jsonl".into()),
            "log = \"/tmp/abs.jsonl\"",
        ),
        (with("log", "a/notes.txt".into()), "ending in .jsonl"),
        (
            with("role.upstream", "hop-2:8080".into()),
            "role.upstream = \"hop-2:8080\"",
        ),
        (with("role.spec.attempts", 0.into()), "attempts = 0"),
        (
            serde_json::json!({"layer": 2, "log": "a/b.jsonl",
                "role": {"kind": "bottom", "bottom": {"kind": "fail", "status": 200}}})
            .to_string(),
            "role.bottom status = 200",
        ),
    ];
    for (body, expected) in &cases {
        let (status, text) = post_configure(&client, &base, body).await;
        assert_eq!(status, 400, "{body}: {text}");
        assert!(
            text.contains(expected),
            "{body}: expected {expected:?} in {text:?}"
        );
    }
    // Nothing was configured and nothing was written.
    let resp = client.get(format!("{base}/work")).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 503);
    assert!(std::fs::read_dir(&dir).unwrap().next().is_none());
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn hops_are_reconfigured_between_variants_and_shut_down_by_a_control_call() {
    let dir = tempdir("reconfigure");
    let (bottom, bottom_task) = start_unconfigured(dir.clone()).await;
    let (hop, hop_task) = start_unconfigured(dir.clone()).await;
    let client = reqwest::Client::new();
    let bottom_setup = |variant: &str| HopSetup {
        layer: 2,
        role: Role::Bottom {
            bottom: Bottom::Fail { status: 503 },
        },
        log: format!("run/{variant}/layer-2-bottom.jsonl"),
    };
    // Variant one: 3 attempts at the hop; variant two: 1 attempt, logs in its own folder.
    for (variant, attempts) in [("one", 3), ("two", 1)] {
        configure_hop(&client, &bottom, &bottom_setup(variant))
            .await
            .unwrap();
        let log = format!("run/{variant}/layer-1-order.jsonl");
        configure_hop(&client, &hop, &proxy_setup(1, attempts, &bottom, &log))
            .await
            .unwrap();
        let tops = top_requests(&hop, 2).await;
        assert_eq!(tops, [502, 502]);
        // As the lab does before it configures the next variant or reads the logs.
        idle(&[&hop, &bottom]).await;
    }
    assert_eq!(records(&dir.join("run/one/layer-2-bottom.jsonl")).len(), 6);
    assert_eq!(records(&dir.join("run/one/layer-1-order.jsonl")).len(), 2);
    assert_eq!(records(&dir.join("run/two/layer-2-bottom.jsonl")).len(), 2);
    assert_eq!(records(&dir.join("run/two/layer-1-order.jsonl")).len(), 2);
    // POST /control/shutdown ends each hop's server (bounded wait).
    for (base, task) in [(bottom, bottom_task), (hop, hop_task)] {
        let resp = client
            .post(format!("{base}/control/shutdown"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 200);
        tokio::time::timeout(Duration::from_secs(30), task)
            .await
            .expect("the hop stopped serving")
            .unwrap();
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_hop_configured_at_start_takes_no_control_call() {
    let dir = tempdir("noconfigure");
    let hop = start(
        1,
        Role::Bottom {
            bottom: Bottom::Fail { status: 503 },
        },
        log_path(&dir, "bottom"),
    )
    .await;
    let client = reqwest::Client::new();
    let body = serde_json::to_string(&proxy_setup(1, 3, "http://127.0.0.1:9", "x.jsonl")).unwrap();
    let (status, text) = post_configure(&client, &format!("http://{hop}"), &body).await;
    assert_eq!(status, 409, "{text}");
    assert!(text.contains("--config"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}
