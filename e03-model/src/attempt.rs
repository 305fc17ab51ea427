//! How one attempt ended, as the client saw it: what every policy classifies and every
//! operation reacts to (model layer; a leaf, so [`crate::strategy`] and [`crate::operation`]
//! both use it without using each other in a circle). Also the words the policy layers use of
//! an attempt: why a retry is wanted ([`RetryCause`]), how a sent attempt ended for them
//! ([`AttemptClass`]) and why one was not sent ([`Rejection`]); [`crate::budget`] re-exports
//! them, so `crate::budget::RetryCause` still names them.

use std::time::Duration;

/// How one attempt ended, as the client saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptResult {
    /// An HTTP answer, with its Retry-After if it had one.
    Status {
        code: u16,
        retry_after: Option<Duration>,
    },
    /// No complete answer within the attempt's timeout (a read timeout; a connect still under
    /// way when the attempt's timeout passes ends here too, unless a connect timeout ended it
    /// first, [`Broken::ConnectTimeout`]).
    Timeout,
    /// No HTTP answer: the connection could not be made, or broke (which way, [`Broken`]).
    ConnectionError(Broken),
}

/// How a connection failed an attempt (issue 27's outcome classes). The first two happen
/// before the request left, so the dependency cannot have done its work; the last two after,
/// so it may have (urllib3's `connect` against `read` errors).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Broken {
    /// Nothing listens: the connection was refused at once.
    ConnectRefused,
    /// The connection was not made within the client's connect timeout.
    ConnectTimeout,
    /// Connected and sent, then reset or closed before the answer's head arrived.
    ResetBeforeAnswer,
    /// The answer's head arrived, then the connection broke before its body ended.
    ResetMidBody,
    /// Any other failure (a name that does not resolve, a malformed answer).
    #[serde(rename = "connection_error")]
    Other,
}

impl Broken {
    /// Every class, in the order tables show them.
    pub const ALL: [Broken; 5] = [
        Broken::ConnectRefused,
        Broken::ConnectTimeout,
        Broken::ResetBeforeAnswer,
        Broken::ResetMidBody,
        Broken::Other,
    ];

    /// Whether the request surely never reached the dependency (a connect error): a retry
    /// cannot do its work twice.
    pub fn before_sending(self) -> bool {
        matches!(self, Broken::ConnectRefused | Broken::ConnectTimeout)
    }

    /// The name logs, tables and strategy files use (`connect_refused`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Broken::ConnectRefused => "connect_refused",
            Broken::ConnectTimeout => "connect_timeout",
            Broken::ResetBeforeAnswer => "reset_before_answer",
            Broken::ResetMidBody => "reset_mid_body",
            Broken::Other => "connection_error",
        }
    }
}

/// Where an HTTP exchange failed, as the client library tells it (reqwest: `is_connect()`, an
/// error from `execute`, an error reading the body).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Making the connection.
    Connect,
    /// Connected; sending the request or waiting for the answer's head.
    Request,
    /// Reading the answer's body, after its head.
    Body,
}

/// hyper's words for a connection closed before the answer's head (`IncompleteMessage`).
const CLOSED_BEFORE_ANSWER: &str = "connection closed before message completed";

impl Broken {
    /// The class of a failed exchange: `stage` and `timed_out` as the HTTP library reports
    /// them, and the error itself, whose causes are searched for an `std::io::Error` (refused,
    /// reset) or hyper's incomplete-message error. Pure: it reads the value it is given.
    pub fn of_error(
        stage: Stage,
        timed_out: bool,
        err: &(dyn std::error::Error + 'static),
    ) -> Self {
        use std::io::ErrorKind;
        let mut kinds = Vec::new();
        let mut closed = false;
        let mut cause = Some(err);
        while let Some(e) = cause {
            if let Some(io) = e.downcast_ref::<std::io::Error>() {
                kinds.push(io.kind());
            }
            closed |= e.to_string().contains(CLOSED_BEFORE_ANSWER);
            cause = e.source();
        }
        let reset = closed
            || kinds.iter().any(|k| {
                matches!(
                    k,
                    ErrorKind::ConnectionReset
                        | ErrorKind::ConnectionAborted
                        | ErrorKind::BrokenPipe
                        | ErrorKind::UnexpectedEof
                )
            });
        match stage {
            Stage::Connect if timed_out || kinds.contains(&ErrorKind::TimedOut) => {
                Broken::ConnectTimeout
            }
            Stage::Connect if kinds.contains(&ErrorKind::ConnectionRefused) => {
                Broken::ConnectRefused
            }
            // The peer accepted and reset the connection before the connector was done with
            // it (a proxy that resets new connections at once, seen under load): reset before
            // any answer, as when the reset comes a moment later.
            Stage::Connect if kinds.contains(&ErrorKind::ConnectionReset) => {
                Broken::ResetBeforeAnswer
            }
            Stage::Connect => Broken::Other,
            Stage::Request if reset => Broken::ResetBeforeAnswer,
            Stage::Request => Broken::Other,
            Stage::Body => Broken::ResetMidBody,
        }
    }
}

impl AttemptResult {
    pub fn status(code: u16) -> Self {
        AttemptResult::Status {
            code,
            retry_after: None,
        }
    }

    /// Whether E03's rule allows a retry after this result (a strategy's own rule is
    /// [`crate::strategy::Strategy::classify`]).
    pub fn is_retryable(&self) -> bool {
        match self {
            AttemptResult::Status { code, .. } => {
                matches!(code, 408 | 429 | 500 | 502 | 503 | 504)
            }
            AttemptResult::Timeout | AttemptResult::ConnectionError(_) => true,
        }
    }
}

/// Why a retry is wanted: some budgets charge a timeout or a throttle differently from an error
/// (the AWS SDKs do).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RetryCause {
    /// An error status (5xx, 408) or a broken connection.
    Error,
    /// No answer within the attempt's timeout.
    Timeout,
    /// The dependency said "slow down" (429, or 503 with Retry-After).
    Throttled,
}

/// How a sent attempt ended, as a policy layer sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptClass {
    /// A 2xx answer.
    Success,
    /// A failure the strategy would retry.
    Failure(RetryCause),
    /// A failure no retry can fix (400, 404, 409, 422, ...).
    Permanent,
}

/// Why a policy layer refused to send an attempt at all ("failed fast").
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rejection {
    /// The circuit breaker is open (or half-open with its probe already out).
    BreakerOpen,
    /// Client-side throttling (Google SRE adaptive throttling) rejected it locally.
    Throttled,
    /// The client's adaptive concurrency limit was reached ([`crate::limit::ClientLimiter`]).
    ConcurrencyLimited,
    /// The caller's bulkhead had no slot for the call's dependency ([`crate::bulkhead`]).
    BulkheadFull,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_errors_happen_before_sending_and_resets_after() {
        let before: Vec<&str> = Broken::ALL
            .iter()
            .filter(|b| b.before_sending())
            .map(|b| b.name())
            .collect();
        assert_eq!(before, ["connect_refused", "connect_timeout"]);
        for b in Broken::ALL {
            // The log's spelling is the table's and the strategy file's.
            assert_eq!(
                serde_json::to_string(&b).unwrap(),
                format!("\"{}\"", b.name())
            );
            assert!(AttemptResult::ConnectionError(b).is_retryable());
        }
    }

    /// An error with a cause, as an HTTP library wraps an IO error.
    #[derive(Debug)]
    struct Wrapped(String, Option<Box<dyn std::error::Error + 'static>>);

    impl std::fmt::Display for Wrapped {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(&self.0)
        }
    }

    impl std::error::Error for Wrapped {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref()
        }
    }

    fn wrapping(kind: std::io::ErrorKind) -> Wrapped {
        Wrapped(
            "error sending request".into(),
            Some(Box::new(Wrapped(
                "client error (Connect)".into(),
                Some(Box::new(std::io::Error::from(kind))),
            ))),
        )
    }

    #[test]
    fn errors_are_classed_by_stage_and_by_the_io_error_under_them() {
        use std::io::ErrorKind;
        let of = |stage, timed_out, e: &Wrapped| Broken::of_error(stage, timed_out, e);
        let refused = wrapping(ErrorKind::ConnectionRefused);
        assert_eq!(of(Stage::Connect, false, &refused), Broken::ConnectRefused);
        assert_eq!(of(Stage::Connect, true, &refused), Broken::ConnectTimeout);
        let timed_out = wrapping(ErrorKind::TimedOut);
        assert_eq!(
            of(Stage::Connect, false, &timed_out),
            Broken::ConnectTimeout
        );
        let dns = Wrapped("dns error".into(), None);
        assert_eq!(of(Stage::Connect, false, &dns), Broken::Other);
        // reqwest's `tcp connect error` over ECONNRESET (a proxy resetting at once).
        assert_eq!(
            of(Stage::Connect, false, &wrapping(ErrorKind::ConnectionReset)),
            Broken::ResetBeforeAnswer
        );
        for kind in [ErrorKind::ConnectionReset, ErrorKind::BrokenPipe] {
            assert_eq!(
                of(Stage::Request, false, &wrapping(kind)),
                Broken::ResetBeforeAnswer
            );
        }
        let closed = Wrapped(
            "error sending request".into(),
            Some(Box::new(Wrapped(
                "connection closed before message completed".into(),
                None,
            ))),
        );
        assert_eq!(
            of(Stage::Request, false, &closed),
            Broken::ResetBeforeAnswer
        );
        assert_eq!(of(Stage::Request, false, &dns), Broken::Other);
        assert_eq!(of(Stage::Body, false, &dns), Broken::ResetMidBody);
    }
}
