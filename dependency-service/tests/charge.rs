//! `POST /charge` (the retry-logic article) against a real socket: the ledger and its key store, the lost
//! answer (committed, then the connection reset), and refusals of malformed keys and bodies.

mod common;

use e03_model::events::{Cause, Event};
use e03_plan::Scenario;

const LEDGER: &str = "standalone/ledger-standalone.jsonl";

fn idempotency() -> Scenario {
    Scenario::named("idempotency").unwrap()
}

/// A charge with the swarm's identity headers, an optional key and a body; status and text,
/// or `None` when the answer could not be read (connection reset).
async fn charge(
    srv: &common::Server,
    key: Option<&str>,
    op: u32,
    attempt: u32,
    body: &str,
) -> Option<(u16, String)> {
    let mut req = common::client()
        .post(srv.work_url("/charge"))
        .header("x-e03-client", 1)
        .header("x-e03-op", op)
        .header("x-e03-attempt", attempt)
        .body(body.to_string());
    if let Some(key) = key {
        req = req.header("idempotency-key", key);
    }
    let res = req.send().await.ok()?;
    let status = res.status().as_u16();
    Some((status, res.text().await.ok()?))
}

fn charges(srv: &common::Server) -> Vec<(u64, Option<String>, u64)> {
    srv.log(LEDGER)
        .into_iter()
        .map(|e| match e {
            Event::Charge(c) => (c.charge.charge, c.charge.key, c.charge.amount),
            other => panic!("not a charge in the ledger: {other:?}"),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_key_is_answered_with_its_first_charge_and_bad_input_is_refused() {
    let srv = common::start(
        "charge-keys",
        Some((
            idempotency(),
            &[
                ("E03_SERVICE_MS", "1"),
                ("E03_FAIL_RATE", "0"),
                ("E03_SLOW_RATE", "0"),
                ("E03_LOST_RATE", "0"),
            ],
        )),
    )
    .await;
    let ok = |charge: u64| Some((200, format!("{{\"charge\":{charge}}}")));
    assert_eq!(charge(&srv, Some("k1"), 0, 1, "").await, ok(1));
    assert_eq!(
        charge(&srv, Some("k1"), 0, 2, r#"{"amount":1}"#).await,
        ok(1)
    );
    assert_eq!(charge(&srv, None, 1, 1, "").await, ok(2));
    assert_eq!(charge(&srv, None, 1, 2, "").await, ok(3));
    assert_eq!(
        charge(&srv, Some("k2"), 2, 1, r#"{"amount":7}"#).await,
        ok(4)
    );
    // The same key for another amount: refused, nothing charged.
    let (status, text) = charge(&srv, Some("k2"), 2, 2, r#"{"amount":8}"#)
        .await
        .unwrap();
    assert_eq!(status, 422, "{text}");
    assert!(text.contains("already used for charge 4"), "{text}");

    // Malformed keys: 400, naming the header.
    let long = "a".repeat(256);
    for key in ["has space", long.as_str()] {
        let (status, text) = charge(&srv, Some(key), 3, 1, "").await.unwrap();
        assert_eq!(status, 400, "{key}: {text}");
        assert!(text.starts_with("malformed Idempotency-Key"), "{text}");
    }
    let res = common::client()
        .post(srv.work_url("/charge"))
        .header("idempotency-key", "a")
        .header("idempotency-key", "b")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 400);
    // Bodies: not JSON 400, not an amount 422, over the limit 413.
    let (status, text) = charge(&srv, None, 4, 1, "{nope").await.unwrap();
    assert_eq!(status, 400, "{text}");
    assert!(text.starts_with("malformed charge body"), "{text}");
    for body in [
        r#"{"amount":0}"#,
        r#"{"amount":"1"}"#,
        r#"{"amount":1,"x":2}"#,
        "[1]",
    ] {
        let (status, text) = charge(&srv, None, 4, 1, body).await.unwrap();
        assert_eq!(status, 422, "{body}: {text}");
        assert!(text.contains("`amount`"), "{text}");
    }
    let big = format!(r#"{{"amount":1,"pad":"{}"}}"#, "x".repeat(2000));
    assert_eq!(charge(&srv, None, 5, 1, &big).await.unwrap().0, 413);
    let res = common::client()
        .get(srv.work_url("/charge"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 405);

    // The service still serves, and the ledger holds exactly the four charges, in order.
    assert_eq!(charge(&srv, None, 6, 1, "").await, ok(5));
    assert_eq!(
        charges(&srv),
        [
            (1, Some("k1".into()), 1),
            (2, None, 1),
            (3, None, 1),
            (4, Some("k2".into()), 7),
            (5, None, 1),
        ]
    );
    srv.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_answer_is_committed_and_the_connection_reset() {
    let srv = common::start(
        "charge-lost",
        Some((
            idempotency(),
            &[
                ("E03_SERVICE_MS", "1"),
                ("E03_FAIL_RATE", "0"),
                ("E03_SLOW_RATE", "0"),
                ("E03_LOST_RATE", "1"),
            ],
        )),
    )
    .await;
    // Every answer is lost: the client never reads one, yet each first use of a key (or each
    // call without one) is charged, and a retried key is not charged again.
    assert_eq!(charge(&srv, Some("k"), 0, 1, "").await, None);
    assert_eq!(charge(&srv, Some("k"), 0, 2, "").await, None);
    assert_eq!(charge(&srv, None, 1, 1, "").await, None);
    assert_eq!(charge(&srv, None, 1, 2, "").await, None);
    assert_eq!(
        charges(&srv),
        [(1, Some("k".into()), 1), (2, None, 1), (3, None, 1)]
    );
    // The service survives the resets.
    let health = common::client()
        .get(srv.work_url("/health"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status().as_u16(), 200);
    let dir = srv.shutdown().await;
    let lost = common::read_log(&dir.join(common::STANDALONE_LOG))
        .into_iter()
        .filter(|e| matches!(e, Event::Response(r) if r.cause == Cause::Lost && r.status == 200))
        .count();
    assert_eq!(lost, 4, "every answer logged as lost");
}
