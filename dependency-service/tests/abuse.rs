//! Hostile or careless clients get 4xx answers, and the service keeps serving.

mod common;

use std::time::Duration;

use e03_plan::Scenario;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Sends raw bytes on a fresh connection and reads the answer until the server closes it.
async fn raw_call(addr: std::net::SocketAddr, request: &[u8]) -> String {
    raw_call_traced(addr, request).await.0
}

/// [`raw_call`], with what went wrong on the way (for a failure's message): the write's and
/// the read's errors, if any.
async fn raw_call_traced(addr: std::net::SocketAddr, request: &[u8]) -> (String, String) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    // The server may close mid-request (oversized headers); the answer is what matters.
    let wrote = s.write_all(request).await;
    let mut out = Vec::new();
    // A reset after the answer (hyper closing with unread input) still leaves the answer read.
    let read = s.read_to_end(&mut out).await;
    let trace = format!("write: {wrote:?}, read: {read:?}");
    (String::from_utf8_lossy(&out).into_owned(), trace)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_4xx_and_the_service_survives() {
    let srv = common::start(
        "abuse",
        Some((Scenario::e03b(), &[("E03_SERVICE_MS", "1")])),
    )
    .await;
    let client = common::client();
    let status = |r: reqwest::Response| r.status().as_u16();
    assert_eq!(
        status(client.get(srv.work_url("/nope")).send().await.unwrap()),
        404
    );
    assert_eq!(
        status(client.post(srv.work_url("/work")).send().await.unwrap()),
        405
    );
    assert_eq!(
        status(
            client
                .delete(srv.control_url("/control/start"))
                .send()
                .await
                .unwrap()
        ),
        405
    );
    let big_body = client
        .get(srv.work_url("/work"))
        .body("x".repeat(2000))
        .send()
        .await;
    assert_eq!(status(big_body.unwrap()), 413);

    let huge_header = format!(
        "GET /work HTTP/1.1\r\nHost: x\r\nX-Junk: {}\r\n\r\n",
        "a".repeat(20 * 1024)
    );
    let answer = raw_call(srv.work, huge_header.as_bytes()).await;
    assert!(answer.starts_with("HTTP/1.1 431"), "{:.80}", answer);
    let garbage = raw_call(srv.work, b"\x00\x01 NOT HTTP\r\n\r\n").await;
    assert!(
        garbage.is_empty() || garbage.starts_with("HTTP/1.1 4"),
        "{garbage:.80}"
    );

    let bad_identity = client
        .get(srv.work_url("/work"))
        .header("x-e03-client", "minus one")
        .send()
        .await
        .unwrap();
    assert_eq!(status(bad_identity), 400);

    assert_eq!(
        status(client.get(srv.work_url("/work")).send().await.unwrap()),
        200
    );
    assert_eq!(
        status(client.get(srv.control_url("/health")).send().await.unwrap()),
        200
    );
    srv.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hundred_concurrent_connections_are_all_answered() {
    let srv = common::start(
        "flood",
        Some((
            Scenario::e03b(),
            &[("E03_SERVICE_MS", "1"), ("E03_QUEUE", "1000")],
        )),
    )
    .await;
    let calls: Vec<_> = (0..500)
        .map(|_| {
            let addr = srv.work;
            tokio::spawn(async move {
                raw_call_traced(
                    addr,
                    b"GET /work HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                )
                .await
            })
        })
        .collect();
    let mut answered = 0;
    for c in calls {
        let (answer, trace) = tokio::time::timeout(Duration::from_secs(30), c)
            .await
            .expect("answered within 30 s")
            .unwrap();
        assert!(
            answer.starts_with("HTTP/1.1 200") || answer.starts_with("HTTP/1.1 503"),
            "answer {answer:.80?} ({trace})"
        );
        answered += 1;
    }
    assert_eq!(answered, 500);
    let log_dir = srv.shutdown().await;
    let log = common::read_log(&log_dir.join(common::STANDALONE_LOG));
    let arrivals = log
        .iter()
        .filter(|e| matches!(e, e03_model::events::Event::Arrival(_)))
        .count();
    assert_eq!(arrivals, 500);
}

/// `POST /charge` on raw connections: a key with a non-ASCII byte is 400, a streamed (chunked)
/// body over the limit 413, and the service keeps charging afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_charges_with_bad_keys_or_streamed_big_bodies_are_refused() {
    let srv = common::start(
        "abuse-charge",
        Some((
            Scenario::named("idempotency").unwrap(),
            &[
                ("E03_SERVICE_MS", "1"),
                ("E03_FAIL_RATE", "0"),
                ("E03_SLOW_RATE", "0"),
                ("E03_LOST_RATE", "0"),
            ],
        )),
    )
    .await;
    let mut bad_key = b"POST /charge HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
                        Idempotency-Key: caf"
        .to_vec();
    bad_key.extend_from_slice(b"\xe9\r\nContent-Length: 0\r\n\r\n");
    let answer = raw_call(srv.work, &bad_key).await;
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer:.200}");
    assert!(
        answer.contains("malformed Idempotency-Key"),
        "{answer:.300}"
    );

    let chunk = "x".repeat(800);
    let streamed = format!(
        "POST /charge HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
         Transfer-Encoding: chunked\r\n\r\n{len:x}\r\n{chunk}\r\n{len:x}\r\n{chunk}\r\n0\r\n\r\n",
        len = chunk.len()
    );
    let answer = raw_call(srv.work, streamed.as_bytes()).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer:.200}");

    let ok = common::client()
        .post(srv.work_url("/charge"))
        .header("idempotency-key", "after-abuse")
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status().as_u16(), 200);
    assert_eq!(ok.text().await.unwrap(), r#"{"charge":1}"#);
    srv.shutdown().await;
}
