//! The work endpoint against a real socket: saturation, client timeouts, measured capacity.
//!
//! Timing assertions are lower bounds set by the model (a queued request cannot finish before
//! its predecessors' service time) or comparisons between answers of the same run, never tight
//! upper bounds, so a noisy 2-core machine cannot make them flake.

mod common;

use std::time::{Duration, Instant};

use e03_model::events::{Cause, Event};
use e03_plan::Scenario;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_pool_rejects_at_once_and_serves_workers_then_queue() {
    let srv = common::start(
        "saturation",
        Some((
            Scenario::e03b(),
            &[
                ("E03_WORKERS", "2"),
                ("E03_QUEUE", "2"),
                ("E03_SERVICE_MS", "200"),
            ],
        )),
    )
    .await;
    let client = common::client();
    let t0 = Instant::now();
    let calls: Vec<_> = (0..10)
        .map(|_| {
            let req = client.get(srv.work_url("/work"));
            tokio::spawn(async move {
                let status = req.send().await.unwrap().status().as_u16();
                (status, t0.elapsed())
            })
        })
        .collect();
    let mut results = Vec::new();
    for c in calls {
        results.push(c.await.unwrap());
    }
    let mut ok: Vec<Duration> = results.iter().filter(|r| r.0 == 200).map(|r| r.1).collect();
    let rejected: Vec<Duration> = results.iter().filter(|r| r.0 == 503).map(|r| r.1).collect();
    ok.sort();
    assert_eq!((ok.len(), rejected.len()), (4, 6), "{results:?}");
    // Two on workers (done at 200 ms), two queued behind them (done at 400 ms).
    assert!(ok[0] >= Duration::from_millis(190), "{ok:?}");
    assert!(ok[2] >= Duration::from_millis(390), "{ok:?}");
    // Rejections do not wait for any service time: each came before the first success.
    assert!(
        rejected.iter().all(|r| *r < ok[0]),
        "{rejected:?} vs {ok:?}"
    );
    srv.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_whose_client_gave_up_keeps_its_worker() {
    let srv = common::start(
        "gaveup",
        Some((
            Scenario::e03b(),
            &[
                ("E03_WORKERS", "1"),
                ("E03_QUEUE", "10"),
                ("E03_SERVICE_MS", "500"),
            ],
        )),
    )
    .await;
    let t0 = Instant::now();
    let impatient = common::client()
        .get(srv.work_url("/work"))
        .timeout(Duration::from_millis(100))
        .send()
        .await;
    assert!(impatient.unwrap_err().is_timeout());
    let second = common::client()
        .get(srv.work_url("/work"))
        .send()
        .await
        .unwrap();
    assert_eq!(second.status().as_u16(), 200);
    // The first request's 500 ms of work, then the second's own 500 ms.
    let took = t0.elapsed();
    assert!(took >= Duration::from_millis(980), "{took:?}");
    let log_dir = srv.shutdown().await;
    // The abandoned request was still answered (and logged) after its full service time.
    let log = common::read_log(&log_dir.join(common::STANDALONE_LOG));
    let first = log
        .iter()
        .find_map(|e| match e {
            Event::Response(r) if r.seq == 0 => Some(r.clone()),
            _ => None,
        })
        .expect("response of the abandoned request");
    assert_eq!((first.status, first.cause), (200, Cause::Ok));
    assert!(first.t_us >= 500_000, "{first:?}");
}

/// Saturated by closed-loop clients, the pool serves workers / service time (250 req/s with
/// the defaults); logical-time scheduling makes the count exact, the 3% is the lab's bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capacity_is_workers_over_service_time() {
    let srv = common::start(
        "capacity",
        Some((Scenario::e03b(), &[("E03_QUEUE", "1000")])),
    )
    .await;
    let client = common::client();
    let until = Instant::now() + Duration::from_millis(2600);
    let loops = (0..40).map(|_| {
        let (client, url) = (client.clone(), srv.work_url("/work"));
        tokio::spawn(async move {
            while Instant::now() < until {
                let _ = client.get(&url).send().await;
            }
        })
    });
    for l in loops.collect::<Vec<_>>() {
        l.await.unwrap();
    }
    let log_dir = srv.shutdown().await;
    let log = common::read_log(&log_dir.join(common::STANDALONE_LOG));
    // Count work started in [0.5 s, 2.5 s): 2 s at 250 req/s.
    let started = log
        .iter()
        .filter(|e| {
            matches!(e, Event::Response(r) if r.status == 200
                && r.admit_us.is_some_and(|a| (500_000..2_500_000).contains(&a)))
        })
        .count();
    println!("work started in 2 s: {started} (expected 500)");
    assert!((485..=515).contains(&started), "{started}");
}

/// The simulator passes every answer through a toxic as one chunk of
/// `e03_model::wire::ANSWER_BYTES`: that is the size of the service's `200 OK` to `GET /work` on a
/// kept-alive connection, head and body, as a client reads it from the socket.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_answer_on_the_wire_is_answer_bytes_long() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let srv = common::start(
        "answer-bytes",
        Some((
            Scenario::e03a(),
            &[
                ("E03_FAIL_RATE", "0"),
                ("E03_SLOW_RATE", "0"),
                ("E03_SERVICE_MS", "1"),
            ],
        )),
    )
    .await;
    let mut s = tokio::net::TcpStream::connect(srv.work).await.unwrap();
    for op in 1..=3 {
        let req = format!(
            "GET /work HTTP/1.1\r\nhost: dep-a:8080\r\nx-e03-client: 1\r\nx-e03-op: {op}\r\n\
             x-e03-attempt: 1\r\n\r\n"
        );
        s.write_all(req.as_bytes()).await.unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 1024];
        // The head, then the body its content-length names.
        let total = loop {
            let n = s.read(&mut buf).await.unwrap();
            assert!(n > 0, "closed after {got:?}");
            got.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&got).to_string();
            if let Some(end) = text.find("\r\n\r\n") {
                let len: usize = text
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length: "))
                    .unwrap()
                    .trim()
                    .parse()
                    .unwrap();
                if got.len() >= end + 4 + len {
                    break end + 4 + len;
                }
            }
        };
        assert!(got.starts_with(b"HTTP/1.1 200 OK\r\n"), "{got:?}");
        assert_eq!(got.len(), total);
        assert_eq!(
            total,
            e03_model::wire::ANSWER_BYTES,
            "{}",
            String::from_utf8_lossy(&got)
        );
        let head = got.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        assert_eq!(head, e03_model::wire::ANSWER_HEAD_BYTES);
    }
    srv.shutdown().await;
}
