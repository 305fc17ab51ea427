//! Everything the swarm says over HTTP: work attempts, control calls and health checks.
//!
//! One `reqwest::Client` per target, built for measurement rather than convenience: no proxy
//! (an env proxy would add a hop the lab does not model), HTTP/1 only, an idle pool as large as
//! the swarm so closed-loop clients reuse their connections, `TCP_NODELAY` so small requests
//! leave at once, and the hickory resolver so that compose service names resolve inside a
//! FROM-scratch container that has no libc resolver. There is no TLS: the workspace's reqwest is
//! built without it, on purpose.
//!
//! The work request has no reqwest timeout: the attempt's timeout comes from the operation
//! (never past its deadline) and is applied by the caller around [`WorkEndpoint::execute`],
//! covering the response and its small body.

use std::time::Duration;

use e03_model::attempt::{Broken, Stage};
use e03_model::chain::DEADLINE_HEADER;
use e03_model::events::{HEADER_ATTEMPT, HEADER_CLIENT, HEADER_OP};
use e03_model::ledger::{CHARGE_PATH, IDEMPOTENCY_KEY};
use e03_model::priority::{Priority, PRIORITY_HEADER};
use e03_model::strategy::Connections;
use e03_model::AttemptResult;
use e03_plan::control::{
    RunCounts, StartAnswer, StartRun, StopRun, HEALTH_PATH, START_PATH, STOP_PATH,
};
use reqwest::{Client, Request, RequestBuilder, StatusCode, Url};

use crate::error::SwarmError;

/// Time allowed for one control or health call (they are tiny and on a quiet port).
const CONTROL_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest Retry-After honoured, so a hostile or broken answer cannot park a client for days.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(3600);

/// The client of one target, sized for `clients` concurrent closed-loop clients, with a connect
/// timeout when the run sets one (`E03_CONNECT_TIMEOUT_MS`). With [`Connections::New`] its idle
/// pool holds nothing: every attempt opens a connection of its own, closed after its answer.
pub(crate) fn build_client(
    clients: u32,
    connect_timeout: Option<Duration>,
    connections: Connections,
) -> Result<Client, SwarmError> {
    let idle = match connections {
        Connections::Reuse => clients as usize + 16,
        Connections::New => 0,
    };
    let builder = Client::builder()
        .no_proxy()
        .http1_only()
        .pool_max_idle_per_host(idle)
        .tcp_nodelay(true)
        .hickory_dns(true);
    match connect_timeout {
        Some(t) => builder.connect_timeout(t),
        None => builder,
    }
    .build()
    .map_err(SwarmError::Client)
}

/// `base` (`http://host:port`, optionally with a trailing `/`) joined with `path`.
pub(crate) fn endpoint(base: &str, path: &str) -> Option<Url> {
    let url = Url::parse(&format!("{}{path}", base.trim_end_matches('/'))).ok()?;
    (url.scheme() == "http" && url.host().is_some()).then_some(url)
}

/// Who an attempt is, as carried in its headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AttemptId {
    pub client: u32,
    pub op: u32,
    pub attempt: u32,
    /// How long the caller waits for it, in whole ms (its timeout), sent as
    /// [`DEADLINE_HEADER`] when set: a dependency with deadline-aware admission reads it.
    pub deadline_ms: Option<u64>,
    /// Its operation's class, sent as [`PRIORITY_HEADER`] when best effort (a request that
    /// says nothing is critical).
    pub class: Priority,
}

/// Adds the deadline header to an attempt that carries one, and the priority header to a
/// best-effort one.
fn with_caller(builder: RequestBuilder, id: AttemptId) -> RequestBuilder {
    let builder = match id.deadline_ms {
        Some(ms) => builder.header(DEADLINE_HEADER, ms),
        None => builder,
    };
    match id.class {
        Priority::BestEffort => builder.header(PRIORITY_HEADER, id.class.as_str()),
        Priority::Critical => builder,
    }
}

/// The work endpoint of one target.
#[derive(Debug, Clone)]
pub(crate) struct WorkEndpoint {
    pub http: Client,
    pub url: Url,
}

impl WorkEndpoint {
    /// A readiness probe to this endpoint's host ([`e03_plan::control::READY_PATH`]).
    pub(crate) fn ready_request(&self) -> Request {
        let mut url = self.url.clone();
        url.set_path(e03_plan::control::READY_PATH);
        self.http
            .get(url)
            .build()
            .expect("a GET on a parsed URL always builds")
    }

    /// The request of one attempt, fully built so that sending it starts the clock.
    pub(crate) fn request(&self, id: AttemptId) -> Request {
        let builder = self
            .http
            .get(self.url.clone())
            .header(HEADER_CLIENT, id.client)
            .header(HEADER_OP, id.op)
            .header(HEADER_ATTEMPT, id.attempt);
        with_caller(builder, id)
            .build()
            .expect("a GET with numeric headers on a parsed URL always builds")
    }

    /// Sends `req` and reads the whole answer. No timeout here: the caller wraps this.
    /// A charge (the retry-logic article): `POST /charge` on the work endpoint's host, with the attempt's
    /// identity, its `Idempotency-Key` if it has one, and a small JSON body.
    pub(crate) fn charge_request(&self, id: AttemptId, key: Option<&str>) -> Request {
        let mut url = self.url.clone();
        url.set_path(CHARGE_PATH);
        self.post_to(url, id, key)
    }

    /// The same POST to the work URL itself (`lab client` with `E03_TARGET_METHOD=POST`).
    pub(crate) fn post_request(&self, id: AttemptId, key: Option<&str>) -> Request {
        self.post_to(self.url.clone(), id, key)
    }

    fn post_to(&self, url: Url, id: AttemptId, key: Option<&str>) -> Request {
        let builder = self
            .http
            .post(url)
            .header(HEADER_CLIENT, id.client)
            .header(HEADER_OP, id.op)
            .header(HEADER_ATTEMPT, id.attempt);
        let mut builder = with_caller(builder, id)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(r#"{"amount":1}"#);
        if let Some(key) = key {
            builder = builder.header(IDEMPOTENCY_KEY, key);
        }
        builder
            .build()
            .expect("a POST with checked headers on a parsed URL always builds")
    }

    pub(crate) async fn execute(&self, req: Request) -> AttemptResult {
        let resp = match self.http.execute(req).await {
            Ok(resp) => resp,
            Err(e) => return AttemptResult::ConnectionError(broken(&e)),
        };
        let code = resp.status().as_u16();
        let retry_after = if resp.status() == StatusCode::TOO_MANY_REQUESTS
            || resp.status() == StatusCode::SERVICE_UNAVAILABLE
        {
            resp.headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(parse_retry_after)
        } else {
            None
        };
        // The answer is complete only with its body; a connection that breaks mid-body is a
        // connection error, not an answer.
        match resp.bytes().await {
            Ok(_) => AttemptResult::Status { code, retry_after },
            Err(e) => AttemptResult::ConnectionError(Broken::of_error(Stage::Body, false, &e)),
        }
    }
}

/// The class of a request that got no answer's head (issue 27's outcome classes): reqwest says
/// whether it failed connecting and whether a timeout ended it (the client's connect timeout,
/// [`build_client`]); the class is read from the error's causes.
fn broken(e: &reqwest::Error) -> Broken {
    let stage = if e.is_connect() {
        Stage::Connect
    } else {
        Stage::Request
    };
    Broken::of_error(stage, e.is_timeout(), e)
}

/// `Retry-After` (on a 429 or a 503) in (possibly fractional) seconds, or an HTTP date (the time
/// from now until then, zero if it has passed); nonsense gives `None`. At most
/// [`MAX_RETRY_AFTER`].
pub(crate) fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0)
            .then(|| Duration::from_secs_f64(secs).min(MAX_RETRY_AFTER));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(
        at.duration_since(std::time::SystemTime::now())
            .unwrap_or(Duration::ZERO)
            .min(MAX_RETRY_AFTER),
    )
}

/// POSTs a JSON body to `base + path` and returns the answer body (200 only).
async fn post_json(
    http: &Client,
    base: &str,
    path: &str,
    body: String,
) -> Result<Vec<u8>, SwarmError> {
    let url = format!("{}{path}", base.trim_end_matches('/'));
    let fail = |reason: String| SwarmError::Control {
        url: url.clone(),
        reason,
    };
    let resp = http
        .post(&url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body)
        .timeout(CONTROL_TIMEOUT)
        .send()
        .await
        .map_err(|e| fail(e.to_string()))?;
    let status = resp.status();
    let bytes = resp.bytes().await.map_err(|e| fail(e.to_string()))?;
    if status != StatusCode::OK {
        let text = String::from_utf8_lossy(&bytes);
        return Err(fail(format!("status {status}: {}", text.trim())));
    }
    Ok(bytes.to_vec())
}

/// Exchanges of [`measure_clock`].
const CLOCK_SAMPLES: usize = 8;

/// The swarm's clock offset to the dependency whose control endpoint is `control`, NTP style
/// ([`e03_model::clock`]): [`CLOCK_SAMPLES`] `GET /control/clock` one after the other, the one
/// of least round trip kept. `None` when the dependency does not answer them (an older
/// service, or a dependency of the user's own): time zero then goes out on the swarm's clock,
/// as before.
pub(crate) async fn measure_clock(
    http: &Client,
    control: &str,
) -> Option<e03_model::clock::ClockOffset> {
    let url = format!(
        "{}{}",
        control.trim_end_matches('/'),
        e03_plan::control::CLOCK_PATH
    );
    let wall_us = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_micros() as u64
    };
    let mut samples = Vec::with_capacity(CLOCK_SAMPLES);
    for _ in 0..CLOCK_SAMPLES {
        let sent_us = wall_us();
        let resp = http.get(&url).timeout(CONTROL_TIMEOUT).send().await.ok()?;
        if resp.status() != StatusCode::OK {
            return None;
        }
        let bytes = resp.bytes().await.ok()?;
        let received_us = wall_us();
        let reading: e03_plan::control::ClockReading = serde_json::from_slice(&bytes).ok()?;
        samples.push(e03_model::clock::ClockSample {
            sent_us,
            server_us: reading.unix_us,
            received_us,
        });
    }
    e03_model::clock::best_offset(&samples)
}

/// `POST /control/start`; where the run's work goes when the dependency has a fault proxy of
/// its own in front for this run ([`StartAnswer::work`]). An empty answer names nothing.
pub(crate) async fn start_run(
    http: &Client,
    control: &str,
    start: &StartRun,
) -> Result<Option<StartAnswer>, SwarmError> {
    let body = serde_json::to_string(start).expect("StartRun serialises");
    let bytes = post_json(http, control, START_PATH, body).await?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    serde_json::from_slice::<StartAnswer>(&bytes)
        .map(Some)
        .map_err(|e| SwarmError::Control {
            url: format!("{}{START_PATH}", control.trim_end_matches('/')),
            reason: format!("unexpected answer: {e}"),
        })
}

/// How long a shard asks again while its dependency is busy with the run before.
pub(crate) const SHARD_PATIENCE: Duration = Duration::from_secs(300);

/// Whether a start call failed because the dependency is busy with the run before (a shard's
/// call, while that run's other shards have not all stopped it): ask again.
pub(crate) fn is_busy(e: &SwarmError) -> bool {
    matches!(e, SwarmError::Control { reason, .. } if reason.contains("503") && reason.contains("busy:"))
}

/// `POST /control/stop`, answered with the run's server-side counts.
pub(crate) async fn stop_run(
    http: &Client,
    control: &str,
    complete: bool,
    shard: Option<e03_model::shard::Shard>,
) -> Result<RunCounts, SwarmError> {
    let body = serde_json::to_string(&StopRun { complete, shard }).expect("StopRun serialises");
    let bytes = post_json(http, control, STOP_PATH, body).await?;
    serde_json::from_slice(&bytes).map_err(|e| SwarmError::Control {
        url: format!("{}{STOP_PATH}", control.trim_end_matches('/')),
        reason: format!("unexpected answer: {e}"),
    })
}

/// `POST /control/shutdown`: the dependency ends its run and exits (compose runs end so).
pub async fn shutdown_target(control: &str) -> Result<(), SwarmError> {
    let http = build_client(1, None, Connections::Reuse)?;
    post_json(
        &http,
        control,
        e03_plan::control::SHUTDOWN_PATH,
        String::new(),
    )
    .await
    .map(|_| ())
}

/// Polls `base/health` until it answers 200: at most `tries` calls, `interval` apart.
pub async fn wait_healthy(base: &str, tries: u32, interval: Duration) -> Result<(), SwarmError> {
    let url = format!("{}{HEALTH_PATH}", base.trim_end_matches('/'));
    let http = build_client(1, None, Connections::Reuse)?;
    for i in 0..tries {
        let ok = http
            .get(&url)
            .timeout(interval.max(Duration::from_millis(200)))
            .send()
            .await
            .is_ok_and(|r| r.status() == StatusCode::OK);
        if ok {
            return Ok(());
        }
        if i + 1 < tries {
            tokio::time::sleep(interval).await;
        }
    }
    Err(SwarmError::Unhealthy { url, tries })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_is_seconds() {
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after(" 0.5 "), Some(Duration::from_millis(500)));
        assert_eq!(parse_retry_after("-1"), None);
        // An HTTP date in the past: no wait; one 30 s ahead: about 30 s.
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"),
            Some(Duration::ZERO)
        );
        let ahead = httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(30));
        let wait = parse_retry_after(&ahead).unwrap();
        assert!(
            wait > Duration::from_secs(28) && wait <= Duration::from_secs(30),
            "{wait:?}"
        );
        assert_eq!(parse_retry_after("soon"), None);
        assert_eq!(parse_retry_after("1e12"), Some(MAX_RETRY_AFTER));
    }

    #[test]
    fn a_charge_is_a_post_to_charge_with_its_key_identity_and_body() {
        let work = WorkEndpoint {
            http: build_client(1, None, Connections::Reuse).unwrap(),
            url: endpoint("http://127.0.0.1:8080", "/work").unwrap(),
        };
        let id = AttemptId {
            client: 3,
            op: 7,
            attempt: 2,
            deadline_ms: Some(1500),
            class: Priority::Critical,
        };
        let req = work.charge_request(id, Some("s4-c3-o7"));
        assert_eq!(req.method(), reqwest::Method::POST);
        assert_eq!(req.url().as_str(), "http://127.0.0.1:8080/charge");
        let h = req.headers();
        assert_eq!(h[IDEMPOTENCY_KEY], "s4-c3-o7");
        assert_eq!(
            (&h[HEADER_CLIENT], &h[HEADER_OP], &h[HEADER_ATTEMPT]),
            (
                &"3".parse::<reqwest::header::HeaderValue>().unwrap(),
                &"7".parse().unwrap(),
                &"2".parse().unwrap()
            )
        );
        assert_eq!(h[DEADLINE_HEADER], "1500");
        assert_eq!(work.request(id).headers()[DEADLINE_HEADER], "1500");
        // A critical attempt says nothing of its class; a best-effort one says so.
        assert!(work.request(id).headers().get(PRIORITY_HEADER).is_none());
        let low = AttemptId {
            class: Priority::BestEffort,
            ..id
        };
        assert_eq!(work.request(low).headers()[PRIORITY_HEADER], "best_effort");
        assert_eq!(
            work.charge_request(low, None).headers()[PRIORITY_HEADER],
            "best_effort"
        );
        let without = AttemptId {
            deadline_ms: None,
            class: Priority::Critical,
            ..id
        };
        assert!(work
            .request(without)
            .headers()
            .get(DEADLINE_HEADER)
            .is_none());
        assert_eq!(
            req.body().and_then(|b| b.as_bytes()),
            Some(&br#"{"amount":1}"#[..])
        );
        let bare = work.charge_request(id, None);
        assert!(bare.headers().get(IDEMPOTENCY_KEY).is_none());
        // The plain E03 request is unchanged.
        assert_eq!(work.request(id).method(), reqwest::Method::GET);
    }

    /// The simulator passes every request through a toxic on the requests as one chunk of
    /// `e03_model::wire::REQUEST_BYTES`: that is the size of this client's `GET /work` for
    /// client 1, operation 1, attempt 1 to `127.0.0.1` on a five-digit port, as the dependency
    /// reads it from the socket (each more digit in an id or the port adds a byte).
    #[tokio::test]
    async fn a_request_on_the_wire_is_request_bytes_long() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut got = Vec::new();
            let mut buf = [0u8; 1024];
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = s.read(&mut buf).await.unwrap();
                assert!(n > 0, "closed after {got:?}");
                got.extend_from_slice(&buf[..n]);
            }
            s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
                .await
                .unwrap();
            got
        });
        let work = WorkEndpoint {
            http: build_client(1, None, Connections::Reuse).unwrap(),
            url: endpoint(&format!("http://{addr}"), "/work").unwrap(),
        };
        let id = AttemptId {
            client: 1,
            op: 1,
            attempt: 1,
            deadline_ms: None,
            class: Priority::Critical,
        };
        let answer = work.http.execute(work.request(id)).await.unwrap();
        assert_eq!(answer.text().await.unwrap(), "ok");
        let got = server.await.unwrap();
        let port_digits = addr.port().to_string().len();
        assert_eq!(
            got.len() + 5 - port_digits,
            e03_model::wire::REQUEST_BYTES,
            "{}",
            String::from_utf8_lossy(&got)
        );
    }

    #[test]
    fn endpoints_are_http_only() {
        assert_eq!(
            endpoint("http://127.0.0.1:8080/", "/work")
                .unwrap()
                .as_str(),
            "http://127.0.0.1:8080/work"
        );
        assert_eq!(
            endpoint("http://dep-a:8080", "/work").unwrap().as_str(),
            "http://dep-a:8080/work"
        );
        assert!(endpoint("https://127.0.0.1:8080", "/work").is_none());
        assert!(endpoint("127.0.0.1:8080", "/work").is_none());
        assert!(endpoint("", "/work").is_none());
    }

    #[tokio::test]
    async fn health_gives_up_after_its_tries() {
        // A port that was just free: nothing listens there, so every try fails fast.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let err = wait_healthy(
            &format!("http://127.0.0.1:{port}"),
            3,
            Duration::from_millis(10),
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("after 3 tries"), "{err}");
    }
}
