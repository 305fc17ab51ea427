//! The simulator and the live service take the same admission decisions for the same arrival
//! sequence.
//!
//! The real dependency service runs in-process on 127.0.0.1 (port 0) with a standalone E03-B
//! run on a short timeline (freeze 0.6–0.9 s, degraded until 1.3 s), and bursts of concurrent
//! `GET /work` are sent at moments that exercise every kind of admission: started at once,
//! queued then started, rejected (pool and queue full), held by the freeze. The service's own
//! log is then the recorded arrival list: its arrival times (in seq order) are replayed through
//! [`simulator::replay`] with the same parameters and seed, and every request must get the same
//! decision, the same final status and, when it got a worker, the same admission instant.
//!
//! Both sides use the service's logged arrival times, so network and scheduling jitter only move
//! the arrivals, never the comparison.
//!
//! The requests of a burst leave all at once ([`GAP`] is zero): the live service stamps, logs
//! and decides each arrival under one sequencer, so its decisions follow the logged order and
//! times even for simultaneous requests. (Before that fix it stamped in the handler and decided
//! in lock order: neighbours swapped fates and a request could be admitted ~100 µs after its own
//! stamp, and this test failed about two runs in three.) The live service schedules in logical
//! time (a queued request starts at its predecessor's scheduled end, not when a timer fired), so admission
//! instants agree to the microsecond: the log truncates nanoseconds to microseconds, and the
//! replay starts from those truncated arrival times; whole-millisecond service times keep the
//! truncation identical on both sides.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use dependency_service::{serve, ServiceOptions, StandaloneRun};
use e03_model::events::{Cause, Event};
use e03_model::{Admission, ReqId};
use e03_plan::{Params, Scenario};
use simulator::{replay, Decision};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::time::Instant;

/// 2 workers, queue of 3, 50 ms service (100 ms while degraded); E03-B has no transient faults.
const PARAMS: &[(&str, &str)] = &[
    ("E03_WORKERS", "2"),
    ("E03_QUEUE", "3"),
    ("E03_SERVICE_MS", "50"),
    ("E03_FREEZE_START_S", "0.6"),
    ("E03_FREEZE_END_S", "0.9"),
    ("E03_RECOVERY_END_S", "1.3"),
];

/// (ms after the run's start, requests sent [`GAP`] apart, each on its own task).
/// 0.1 s: 2 start, 3 queue, 3 rejected; 0.3 s: 2 start, 1 queued; 0.7 s: all held by the freeze; 0.95 s (degraded, after the freeze
/// released its held ones): 2 start, 3 queue, 2 rejected; 1.5 s: normal again.
const BURSTS: &[(u64, usize)] = &[(100, 8), (300, 3), (700, 4), (950, 7), (1500, 3)];

/// Between two requests of a burst: none, they leave together (see the module docs).
const GAP: Duration = Duration::from_millis(0);

/// Generous: the slowest answer (a held one) is due at 0.9 s.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// What became of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A worker was free at its arrival.
    Started,
    /// It waited in the queue and a worker started it later.
    Queued,
    /// Workers and queue were full: 503 at once.
    Rejected,
    /// Arrived during the freeze: held and answered 503 at its end.
    Held,
}

/// One request's fate, as the live log or the replay tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fate {
    kind: Kind,
    status: u16,
    /// When a worker started it, in µs since time zero.
    admit_us: Option<u64>,
}

fn params() -> Params {
    let raw: BTreeMap<String, String> = PARAMS
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Params::from_raw(&raw).expect("valid test parameters")
}

fn temp_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("e03-sim-live-replay-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Runs the live service through [`BURSTS`]; its server log and the statuses the client saw.
async fn run_live(params: Params) -> (Vec<Event>, Vec<u16>) {
    let log_dir = temp_dir();
    let work = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let control = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/work", work.local_addr().unwrap());
    let (stop, stopped) = oneshot::channel::<()>();
    let opts = ServiceOptions {
        log_dir: log_dir.clone(),
        answer_spin: std::time::Duration::ZERO,
        wire_front: None,
        send_logs: None,
        standalone: Some(StandaloneRun {
            scenario: Scenario::e03b(),
            params,
            text: None,
            policies_text: None,
            at_first_request: false,
        }),
    };
    // The run's time zero is taken inside `serve`, just after this instant.
    let start = Instant::now();
    let server = tokio::spawn(serve(work, control, opts, async {
        let _ = stopped.await;
    }));
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(REQUEST_TIMEOUT)
        .build()
        .unwrap();
    let mut calls = Vec::new();
    for &(at_ms, n) in BURSTS {
        for i in 0..n {
            let at = start + Duration::from_millis(at_ms) + GAP * i as u32;
            tokio::time::sleep_until(at).await;
            let (client, url) = (client.clone(), url.clone());
            calls.push(tokio::spawn(async move {
                let res = client.get(url).send().await.expect("an answer");
                res.status().as_u16()
            }));
        }
    }
    let mut statuses = Vec::new();
    for call in calls {
        statuses.push(call.await.unwrap());
    }
    let _ = stop.send(());
    tokio::time::timeout(Duration::from_secs(15), server)
        .await
        .expect("serve returns after shutdown")
        .unwrap()
        .unwrap();
    let path = log_dir.join("standalone/server-standalone.jsonl");
    let log = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    let _ = std::fs::remove_dir_all(&log_dir);
    (log, statuses)
}

/// Arrival times by seq, and each request's fate as the live service logged it.
fn live_fates(log: &[Event]) -> (Vec<u64>, Vec<Fate>) {
    let mut arrivals = BTreeMap::new();
    let mut fates = BTreeMap::new();
    for e in log {
        match e {
            Event::Arrival(a) => {
                assert!(arrivals.insert(a.seq, a.t_us).is_none(), "seq {}", a.seq);
            }
            Event::Response(r) => {
                let kind = match (r.cause, r.immediate) {
                    (Cause::Ok, true) => Kind::Started,
                    (Cause::Ok, false) => Kind::Queued,
                    (Cause::Full, _) => Kind::Rejected,
                    (Cause::Freeze, _) => Kind::Held,
                    (other, _) => panic!("E03-B has no transient faults, got {other:?}"),
                };
                let fate = Fate {
                    kind,
                    status: r.status,
                    admit_us: r.admit_us,
                };
                assert!(fates.insert(r.seq, fate).is_none(), "seq {}", r.seq);
            }
            _ => {}
        }
    }
    let n = arrivals.len() as u64;
    assert!(arrivals.keys().copied().eq(0..n), "seqs are 0..{n}");
    assert!(fates.keys().copied().eq(0..n), "every arrival is answered");
    (
        arrivals.into_values().collect(),
        fates.into_values().collect(),
    )
}

/// Each request's fate in a replay of `arrivals_us` (request i arrives at `arrivals_us[i]`).
fn replayed_fates(params: &Params, arrivals_us: &[u64]) -> Vec<Fate> {
    let seed = params.seeds()[0]; // the standalone run's seed
    let list: Vec<Duration> = arrivals_us
        .iter()
        .map(|t| Duration::from_micros(*t))
        .collect();
    let decisions = replay(params.service_config(&Scenario::e03b(), seed), &list);
    let mut fates: Vec<Option<Fate>> = vec![None; list.len()];
    let mut started: Vec<Option<u64>> = vec![None; list.len()];
    let at = |req: ReqId| req as usize;
    for d in decisions {
        match d {
            Decision::Admitted { t, req, admission } => {
                let kind = match admission {
                    Admission::Start { .. } => {
                        started[at(req)] = Some(t / 1_000);
                        Kind::Started
                    }
                    Admission::Queued => Kind::Queued,
                    Admission::Rejected
                    | Admission::Refused { .. }
                    | Admission::Throttled { .. }
                    | Admission::Late
                    | Admission::Limited
                    | Admission::Shed => Kind::Rejected,
                    Admission::Held => Kind::Held,
                };
                fates[at(req)] = Some(Fate {
                    kind,
                    status: 0,
                    admit_us: None,
                });
            }
            Decision::Started { t, req, .. } => started[at(req)] = Some(t / 1_000),
            Decision::Answered { req, status, .. } => {
                let f = fates[at(req)].as_mut().expect("answered after admitted");
                assert_eq!(f.status, 0, "request {req} answered twice");
                f.status = status;
            }
        }
    }
    fates
        .into_iter()
        .zip(started)
        .enumerate()
        .map(|(i, (f, admit_us))| Fate {
            admit_us,
            ..f.unwrap_or_else(|| panic!("request {i} never decided"))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_service_and_replay_of_its_arrivals_take_the_same_decisions() {
    let params = params();
    let (log, statuses) = run_live(params.clone()).await;
    let (arrivals_us, live) = live_fates(&log);
    let total: usize = BURSTS.iter().map(|b| b.1).sum();
    assert_eq!(live.len(), total, "every request sent arrived once");

    // The client saw what the log says.
    let ok = |v: &mut dyn Iterator<Item = u16>| v.filter(|s| *s == 200).count();
    assert_eq!(
        ok(&mut statuses.iter().copied()),
        ok(&mut live.iter().map(|f| f.status))
    );

    // The live run exercised every kind of decision, so the comparison has teeth.
    for kind in [Kind::Started, Kind::Queued, Kind::Rejected, Kind::Held] {
        assert!(
            live.iter().any(|f| f.kind == kind),
            "no {kind:?} in the live run: {live:?}"
        );
    }

    let sim = replayed_fates(&params, &arrivals_us);
    let table: String = (0..live.len())
        .map(|i| {
            format!(
                "\n  seq {i:2} t_us {:8}  live {:?}  sim {:?}",
                arrivals_us[i], live[i], sim[i]
            )
        })
        .collect();
    for (i, (l, s)) in live.iter().zip(&sim).enumerate() {
        assert_eq!(l, s, "request {i} differs:{table}");
    }
}
