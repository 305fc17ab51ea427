//! The chain's top caller on tokio's clock: the core's workload of a chain variant
//! ([`e03_model::workload::top_caller`]) driven by the swarm's one live driver ([`crate::drive`]),
//! as every other workload is, against the first hop of the chain.
//!
//! The driver sends each attempt with the swarm's headers: the hop reads the top request's
//! number from the operation header, and the deadline header (the attempt's timeout) goes out
//! exactly when the variant's deadlines travel. The operations that ended become the chain's
//! top records ([`TopRecord::of_operation`]), stamped on the wall clock as the hops stamp
//! theirs, so the analyzer can tell which lower work outlived its top caller.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use e03_model::chain::{ChainVariant, TopRecord};
use e03_model::events::{Event, Outcome, RunTag};
use e03_model::strategy::Connections;
use e03_model::{GiveUp, OpOutcome};
use precise_timer::PreciseTimer;
use tokio::sync::mpsc;

use crate::client::StrategyRun;
use crate::http::{build_client, endpoint, WorkEndpoint};

/// Runs the top caller of `variant` (`requests` top requests, one after the other, its session
/// seeded by `seed`) against the hop at the base URL `base` until it has made them all, or
/// until `shutdown` resolves (then its attempts in flight are aborted and the operations they
/// belonged to make no record). Each top request that ended is pushed to `out`; whether the
/// run went to its end.
pub async fn drive_top_caller(
    variant: &ChainVariant,
    requests: u32,
    seed: u64,
    base: &str,
    shutdown: impl Future<Output = ()>,
    out: &mut Vec<TopRecord>,
) -> anyhow::Result<bool> {
    let url = endpoint(base, "/work")
        .ok_or_else(|| anyhow::anyhow!("the first hop's URL {base:?} is not an http:// URL"))?;
    let (workload, policies) = e03_model::workload::top_caller(variant, requests, seed);
    let strategy = variant.top.strategy();
    let wall0_us = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64);
    let run = Arc::new(StrategyRun {
        tag: RunTag {
            run: format!("chain-{}", variant.id),
            seed,
            strategy: strategy.id.clone(),
        },
        budget: Arc::new(Mutex::new(policies)),
        work: WorkEndpoint {
            http: build_client(1, None, Connections::Reuse)?,
            url,
        },
        replicas: Vec::new(),
        strategy,
        t0: tokio::time::Instant::now(),
        seed,
        session: e03_model::workload::top_session(variant, requests),
        timer: PreciseTimer::start(),
        post: false,
        deadline_header: variant.propagate,
    });
    let (log, mut events) = mpsc::unbounded_channel();
    let (trigger, stop) = crate::stop::stop_pair();
    let driver = crate::drive::drive(
        run,
        Box::new(workload),
        crate::log::LogTx::Memory(log),
        stop,
    );
    tokio::pin!(driver);
    let totals = tokio::select! {
        totals = &mut driver => totals,
        () = shutdown => {
            trigger.stop();
            driver.await
        }
    };
    while let Ok(event) = events.try_recv() {
        if let Event::Operation(op) = event {
            let outcome = match (op.outcome, op.reason) {
                (Outcome::Success, _) => OpOutcome::Success,
                (Outcome::Failed, why) => OpOutcome::Failed(why.unwrap_or(GiveUp::NotRetryable)),
            };
            out.extend(TopRecord::of_operation(
                op.op,
                wall0_us + op.start_us,
                wall0_us + op.end_us,
                op.attempts,
                outcome,
            ));
        }
    }
    Ok(!totals.cut_short)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// How long these tests wait for the hop, at most.
    const TEST_LIMIT: Duration = Duration::from_secs(30);
    use axum::http::{HeaderMap, StatusCode};
    use axum::routing::get;
    use axum::Router;
    use e03_model::chain::{HopSpec, DEADLINE_HEADER, DEADLINE_STATUS, GAVE_UP_STATUS};
    use e03_model::events::HEADER_OP;

    fn variant(attempts: u32, timeout_ms: u64, propagate: bool) -> ChainVariant {
        ChainVariant {
            id: "v".into(),
            label: String::new(),
            top: HopSpec {
                name: "client".into(),
                attempts,
                timeout_ms,
                backoff_ms: 0,
                deadline_ms: None,
            },
            hops: Vec::new(),
            propagate,
            proxies: Vec::new(),
        }
    }

    /// A first hop that records (operation header, deadline header) of every call, and
    /// answers 503 to operation 0, then 200; with `hang`, it never answers.
    async fn first_hop(hang: bool) -> (String, Arc<Mutex<Vec<(String, Option<String>)>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mine = Arc::clone(&seen);
        let app = Router::new().route(
            "/work",
            get(move |headers: HeaderMap| {
                let seen = Arc::clone(&mine);
                async move {
                    let text = |h: &str| headers.get(h).map(|v| v.to_str().unwrap().to_string());
                    let op = text(HEADER_OP).unwrap_or_default();
                    seen.lock()
                        .unwrap()
                        .push((op.clone(), text(DEADLINE_HEADER)));
                    if hang {
                        tokio::time::sleep(Duration::from_secs(60)).await;
                    }
                    if op == "0" {
                        StatusCode::SERVICE_UNAVAILABLE
                    } else {
                        StatusCode::OK
                    }
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (format!("http://{addr}"), seen)
    }

    #[tokio::test]
    async fn the_live_driver_makes_the_top_requests_in_turn_with_the_hops_headers() {
        let (base, seen) = first_hop(false).await;
        let mut out = Vec::new();
        let done = tokio::time::timeout(
            TEST_LIMIT,
            drive_top_caller(
                &variant(3, 2000, true),
                2,
                1,
                &base,
                std::future::pending(),
                &mut out,
            ),
        )
        .await
        .unwrap()
        .unwrap();
        assert!(done);
        // Operation 0: three attempts, every one 503; operation 1: 200 at once. The deadline
        // header is the attempt's timeout (2 s, minus nothing: no deadline of its own).
        let seen = seen.lock().unwrap().clone();
        let ops: Vec<&str> = seen.iter().map(|(op, _)| op.as_str()).collect();
        assert_eq!(ops, ["0", "0", "0", "1"]);
        assert!(
            seen.iter().all(|(_, d)| d.as_deref() == Some("2000")),
            "{seen:?}"
        );
        let summary: Vec<(u64, u16, u32)> =
            out.iter().map(|t| (t.req, t.status, t.attempts)).collect();
        assert_eq!(summary, [(0, GAVE_UP_STATUS, 3), (1, 200, 1)]);
        // On the wall clock, as the hops stamp their records.
        let now_us = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_micros() as u64;
        assert!(out
            .iter()
            .all(|t| t.start_us <= t.end_us && t.end_us <= now_us));
        assert!(now_us - out[0].start_us < TEST_LIMIT.as_micros() as u64);
        assert!(out[1].start_us >= out[0].end_us);
    }

    #[tokio::test]
    async fn without_propagation_no_deadline_header_and_a_timeout_is_retried() {
        let (base, seen) = first_hop(true).await;
        let mut out = Vec::new();
        // Two attempts of 100 ms each time out: the request gives up (502), no deadline.
        let done = drive_top_caller(
            &variant(2, 100, false),
            1,
            1,
            &base,
            std::future::pending(),
            &mut out,
        )
        .await
        .unwrap();
        assert!(done);
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen, [("0".to_string(), None), ("0".to_string(), None)]);
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].status, out[0].attempts), (GAVE_UP_STATUS, 2));
        assert_ne!(out[0].status, DEADLINE_STATUS);
        let took = out[0].end_us - out[0].start_us;
        assert!((200_000..2_000_000).contains(&took), "{took} us");
    }

    #[tokio::test]
    async fn a_stop_keeps_the_requests_that_ended_and_says_incomplete() {
        let (base, _) = first_hop(true).await;
        let mut out = Vec::new();
        let done = tokio::time::timeout(
            TEST_LIMIT,
            drive_top_caller(
                &variant(1, 50_000, false),
                3,
                1,
                &base,
                tokio::time::sleep(Duration::from_millis(200)),
                &mut out,
            ),
        )
        .await
        .unwrap()
        .unwrap();
        assert!(!done, "a stopped top caller did not run to its end");
        assert!(out.is_empty(), "the request in flight was aborted: {out:?}");
    }
}
