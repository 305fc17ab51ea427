//! `lab audit`'s probes: what the dependency answers a client under audit, as a state machine
//! with no clock and no IO, and the records of the audit's log.
//!
//! The retry-logic article ("Yeniden deneme mantığı: ne zaman yardım eder, ne zaman zarar verir") ends with five
//! questions to answer before adding a retry: are errors classified; is the operation idempotent,
//! with a key made per operation; does every attempt have a timeout and the loop a deadline; is
//! the backoff exponential and randomized, and is `Retry-After` honoured; which other layer also
//! retries. Each probe below is a short phase on a path of its own that makes one of them
//! observable from the receiving side. `lab audit` runs the client once per probe instance with
//! the probe's URL in `E03_TARGET_URL`; the grader (`analyzer::audit`) reads only the log.
//!
//! | probe | answers | measures |
//! |---|---|---|
//! | `classify-400`, `-404`, `-409`, `-422` | that status, always | retried or not |
//! | `retry-after-429-seconds`, `-503-seconds` (5 instances each) | first attempt: the status with `Retry-After: 2`; then 200 | how early or late each retry came, ms |
//! | `retry-after-429-date`, `-503-date` (5 instances each) | the same with an HTTP date at least 2 s ahead | the same |
//! | `backoff` (20 instances at once, 1 operation each) | 503, always | waits: growth, cap, jitter; attempts per operation |
//! | `timeout` | first attempt: no answer (held open); then 200 | when the client gave up |
//! | `deadline` | no answer, ever | how long the operation was kept alive |
//! | `idempotency` (`POST`) | first attempt: committed, then 504 after 3 s; then 200 | charges per operation |
//! | `outage` (10 operations) | 503, always | the trend of attempts per operation (a budget) |
//!
//! The backoff instances are also how the grader tells operations apart without the client's
//! help: each is one process asked for one operation, so its attempts are that operation's.
//!
//! The seed's transient statuses are 408, 425, 429, 500, 502, 503 and 504; 400, 401, 403, 404,
//! 409 and 422 "concern the request itself: as long as the request does not change, neither
//! does the answer" (its list `GECICI_DURUMLAR`).

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How long a `Retry-After` tells the client to wait (seconds form; the date form is at least
/// this far ahead).
pub const RETRY_AFTER: Duration = Duration::from_secs(2);

/// How long the idempotency probe holds its first attempt (committed) before it answers 504, as a
/// gateway that gave up on it would.
pub const LOST_ANSWER_AFTER: Duration = Duration::from_secs(3);

/// A held request is answered 504 after this long at the latest (every probe's limit is
/// shorter: the client is stopped first).
pub const HOLD_AT_MOST: Duration = Duration::from_secs(60);

/// What a probe does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum ProbeKind {
    /// Always this status (a permanent error of the request itself).
    Classify { status: u16 },
    /// The first attempt gets `status` with a `Retry-After` (seconds, or an HTTP date); later
    /// attempts get 200.
    RetryAfter { status: u16, date: bool },
    /// 503 with no `Retry-After`, always.
    Backoff,
    /// The first attempt is held with no answer; later attempts get 200.
    Timeout,
    /// Every attempt is held with no answer.
    Deadline,
    /// The first attempt commits, then is held for [`LOST_ANSWER_AFTER`] and answered 504;
    /// later attempts commit (unless their `Idempotency-Key` was seen) and get 200.
    Idempotency,
    /// 503, always, over several operations.
    Outage,
}

/// One probe of the battery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probe {
    /// Its name, and its path: `/audit/<name>/<instance>`.
    pub name: String,
    #[serde(flatten)]
    pub kind: ProbeKind,
    /// How many copies of the client run at once (each on its own path).
    pub instances: u32,
    /// How many operations each copy runs, one after another (`E03_OPERATIONS`).
    pub operations: u32,
    /// The method the client is asked to use (`E03_TARGET_METHOD`).
    pub method: String,
    /// The client is stopped this long after it started, if it has not ended.
    pub limit_ms: u64,
}

impl Probe {
    fn new(name: &str, kind: ProbeKind, limit_s: u64) -> Self {
        Self {
            name: name.into(),
            kind,
            instances: 1,
            operations: 1,
            method: "GET".into(),
            limit_ms: limit_s * 1000,
        }
    }
}

/// Instances of the backoff probe run at once: enough that the longest wait per retry number
/// (the upper envelope) tells the nominal wait under full jitter (the maximum of 20 uniform
/// draws is under 0.8 of it with probability 0.8^20 = 1.2%), and that a jitter fit has some 40
/// to 60 waits to judge.
pub const BACKOFF_INSTANCES: u32 = 20;

/// Instances of each Retry-After probe run at once: 20 retries in all, so that a share of early
/// ones (dotnet/extensions #7001: about 10%) shows.
pub const RETRY_AFTER_INSTANCES: u32 = 5;

/// Operations of the outage probe, one after another in one client process.
pub const OUTAGE_OPERATIONS: u32 = 10;

/// The battery, in the order `lab audit` runs it. Limits: 10 s for the classification probes,
/// 15 s for the Retry-After probes (5 copies start at once: on a loaded machine a Python client
/// took 8 s to send its first request, and its retry is due 2 to 3 s later), 12 s for the
/// timeout probe (an attempt timeout must show within 10 s), 20 s for the deadline and the
/// outage, 15 s for backoff and idempotency. A client that behaves is done in well under 60 s in
/// all.
pub fn battery() -> Vec<Probe> {
    let mut probes = Vec::new();
    for status in [400, 404, 409, 422] {
        probes.push(Probe::new(
            &format!("classify-{status}"),
            ProbeKind::Classify { status },
            10,
        ));
    }
    for date in [false, true] {
        for status in [429, 503] {
            let form = if date { "date" } else { "seconds" };
            let mut p = Probe::new(
                &format!("retry-after-{status}-{form}"),
                ProbeKind::RetryAfter { status, date },
                15,
            );
            p.instances = RETRY_AFTER_INSTANCES;
            probes.push(p);
        }
    }
    let mut backoff = Probe::new("backoff", ProbeKind::Backoff, 15);
    backoff.instances = BACKOFF_INSTANCES;
    probes.push(backoff);
    probes.push(Probe::new("timeout", ProbeKind::Timeout, 12));
    probes.push(Probe::new("deadline", ProbeKind::Deadline, 20));
    let mut idem = Probe::new("idempotency", ProbeKind::Idempotency, 15);
    idem.method = "POST".into();
    probes.push(idem);
    let mut outage = Probe::new("outage", ProbeKind::Outage, 20);
    outage.operations = OUTAGE_OPERATIONS;
    probes.push(outage);
    probes
}

/// What the dependency does with one request of a probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeAnswer {
    /// The request's number on its path, from 1.
    pub attempt: u32,
    /// Hold the request this long before answering (the client may give up first).
    pub hold: Option<Duration>,
    /// The status, once answered.
    pub status: u16,
    /// The `Retry-After` header's value, if one is sent.
    pub retry_after: Option<String>,
    /// The earliest instant (Unix ms) a retry honours the `Retry-After`.
    pub not_before_unix_ms: Option<u64>,
    /// Whether this request was committed (a charge of the idempotency probe).
    pub charged: bool,
}

/// One path of a probe (`/audit/<name>/<instance>`): counts its requests and answers them.
#[derive(Debug, Clone)]
pub struct ProbeTarget {
    kind: ProbeKind,
    requests: u32,
    keys: Vec<String>,
}

impl ProbeTarget {
    pub fn new(kind: ProbeKind) -> Self {
        Self {
            kind,
            requests: 0,
            keys: Vec::new(),
        }
    }

    /// Requests received so far.
    pub fn requests(&self) -> u32 {
        self.requests
    }

    /// The answer to a request arriving at `now_unix_ms` (wall clock, for an HTTP date), with
    /// its `Idempotency-Key` if it had one.
    pub fn answer(&mut self, now_unix_ms: u64, key: Option<&str>) -> ProbeAnswer {
        self.requests += 1;
        let first = self.requests == 1;
        let mut a = ProbeAnswer {
            attempt: self.requests,
            hold: None,
            status: 200,
            retry_after: None,
            not_before_unix_ms: None,
            charged: false,
        };
        match self.kind {
            ProbeKind::Classify { status } => a.status = status,
            ProbeKind::RetryAfter { status, date } if first => {
                a.status = status;
                let wait = RETRY_AFTER.as_millis() as u64;
                if date {
                    // Whole seconds: the first second boundary at least RETRY_AFTER ahead.
                    let at_s = (now_unix_ms + wait).div_ceil(1000);
                    a.retry_after = Some(http_date(at_s));
                    a.not_before_unix_ms = Some(at_s * 1000);
                } else {
                    a.retry_after = Some((wait / 1000).to_string());
                    a.not_before_unix_ms = Some(now_unix_ms + wait);
                }
            }
            ProbeKind::RetryAfter { .. } => {}
            ProbeKind::Backoff | ProbeKind::Outage => a.status = 503,
            ProbeKind::Timeout if first => {
                a.hold = Some(HOLD_AT_MOST);
                a.status = 504;
            }
            ProbeKind::Timeout => {}
            ProbeKind::Deadline => {
                a.hold = Some(HOLD_AT_MOST);
                a.status = 504;
            }
            ProbeKind::Idempotency => {
                a.charged = match key {
                    Some(k) if self.keys.iter().any(|seen| seen == k) => false,
                    Some(k) => {
                        self.keys.push(k.to_string());
                        true
                    }
                    None => true,
                };
                if first {
                    a.hold = Some(LOST_ANSWER_AFTER);
                    a.status = 504;
                }
            }
        }
        a
    }
}

/// An HTTP date (RFC 9110 IMF-fixdate), written once for the audit and the HTTP fault proxy.
pub use crate::http_fault::http_date;

/// A record of the audit's log (`audit.jsonl`), one JSON object per line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum AuditRecord {
    /// First: the battery and what the client was said to do.
    AuditStart {
        probes: Vec<Probe>,
        /// The client command, or empty when the user drove it (`--wait`).
        command: Vec<String>,
        /// `--attempts N`: the most attempts per operation the client says it makes.
        claimed_attempts: Option<u32>,
    },
    /// One request a probe received, written when it was answered or given up.
    Request(ProbeRequest),
    /// One run of the client on one instance of a probe.
    ClientRun {
        probe: String,
        instance: u32,
        started_us: u64,
        ended_us: u64,
        /// The client's exit code (None: stopped by a signal, or it was not the lab's process).
        exit: Option<i32>,
        /// Stopped by the lab at the probe's limit.
        stopped_at_limit: bool,
    },
    /// Last: `complete` is false when the audit was stopped before its battery ended.
    AuditEnd { complete: bool },
}

/// One request received by a probe. Times are µs since the audit started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeRequest {
    pub probe: String,
    pub instance: u32,
    /// Its number on its path, from 1.
    pub attempt: u32,
    pub method: String,
    pub arrived_us: u64,
    /// When it was answered, or when the client went away without its answer.
    pub ended_us: u64,
    /// The status sent; None when the client gave up first (its connection closed).
    pub status: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<String>,
    /// The earliest instant a retry honours the `Retry-After`, µs since the audit started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_before_us: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// The `x-e03-op` header, when the client names its operations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
    /// Committed (a charge of the idempotency probe).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub charged: bool,
}

/// The header a client may send to name its logical operation (any value, the same on every
/// attempt of one operation): the one the lab's own clients send their operation number in.
pub const OPERATION_HEADER: &str = crate::events::HEADER_OP;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_is_sent_once_then_the_path_answers_200() {
        let mut t = ProbeTarget::new(ProbeKind::RetryAfter {
            status: 429,
            date: false,
        });
        let a = t.answer(10_000, None);
        assert_eq!(
            (a.status, a.retry_after.as_deref(), a.not_before_unix_ms),
            (429, Some("2"), Some(12_000))
        );
        assert_eq!(t.answer(12_001, None).status, 200);
        // The date form: 10.2 s -> at least 12.2 s -> the next whole second, 13 s.
        let mut t = ProbeTarget::new(ProbeKind::RetryAfter {
            status: 503,
            date: true,
        });
        let a = t.answer(10_200, None);
        assert_eq!(a.not_before_unix_ms, Some(13_000));
        assert_eq!(
            a.retry_after.as_deref(),
            Some("Thu, 01 Jan 1970 00:00:13 GMT")
        );
    }

    #[test]
    fn the_idempotency_probe_charges_each_new_key_and_each_keyless_request() {
        let mut t = ProbeTarget::new(ProbeKind::Idempotency);
        let first = t.answer(0, Some("k1"));
        assert_eq!(
            (first.charged, first.hold, first.status),
            (true, Some(LOST_ANSWER_AFTER), 504)
        );
        let same = t.answer(1, Some("k1"));
        assert_eq!((same.charged, same.hold, same.status), (false, None, 200));
        assert!(t.answer(2, Some("k2")).charged);
        assert!(t.answer(3, None).charged);
        assert!(t.answer(4, None).charged);
    }

    #[test]
    fn hangs_hold_only_where_the_probe_says() {
        let mut t = ProbeTarget::new(ProbeKind::Timeout);
        assert_eq!(t.answer(0, None).hold, Some(HOLD_AT_MOST));
        assert_eq!(t.answer(0, None).hold, None);
        let mut t = ProbeTarget::new(ProbeKind::Deadline);
        for _ in 0..3 {
            assert_eq!(t.answer(0, None).hold, Some(HOLD_AT_MOST));
        }
        let mut t = ProbeTarget::new(ProbeKind::Classify { status: 409 });
        assert_eq!(t.answer(0, None).status, 409);
        assert_eq!(t.answer(0, None).status, 409);
    }

    #[test]
    fn the_battery_names_each_probe_once_and_keeps_a_behaving_client_under_a_minute() {
        let b = battery();
        let mut names: Vec<&str> = b.iter().map(|p| p.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), b.len());
        assert_eq!(b.len(), 4 + 4 + 5);
        // The limits bound a client that hangs everywhere: under four minutes (232 s).
        let worst: u64 = b.iter().map(|p| p.limit_ms).sum();
        assert_eq!(
            worst,
            4 * 10_000 + 4 * 15_000 + 15_000 + 12_000 + 20_000 + 15_000 + 20_000
        );
        // Copies at once: 20 for backoff (its waits' envelope, and one operation per process
        // for amplification), 5 for each Retry-After form; one elsewhere.
        let copies: Vec<(&str, u32)> = b
            .iter()
            .filter(|p| p.instances > 1)
            .map(|p| (p.name.as_str(), p.instances))
            .collect();
        assert_eq!(
            copies,
            [
                ("retry-after-429-seconds", 5),
                ("retry-after-503-seconds", 5),
                ("retry-after-429-date", 5),
                ("retry-after-503-date", 5),
                ("backoff", 20)
            ]
        );
        assert!(b.iter().all(|p| p.operations == 1 || p.name == "outage"));
    }

    #[test]
    fn records_round_trip_as_json_lines() {
        let r = AuditRecord::Request(ProbeRequest {
            probe: "backoff".into(),
            instance: 3,
            attempt: 2,
            method: "GET".into(),
            arrived_us: 1,
            ended_us: 2,
            status: Some(503),
            retry_after: None,
            not_before_us: None,
            idempotency_key: None,
            operation: None,
            charged: false,
        });
        let line = serde_json::to_string(&r).unwrap();
        assert!(
            line.starts_with(r#"{"event":"request","probe":"backoff""#),
            "{line}"
        );
        assert_eq!(serde_json::from_str::<AuditRecord>(&line).unwrap(), r);
        let p = &battery()[0];
        let line = serde_json::to_string(p).unwrap();
        assert!(line.contains(r#""kind":"classify","status":400"#), "{line}");
        assert_eq!(&serde_json::from_str::<Probe>(&line).unwrap(), p);
    }
}
