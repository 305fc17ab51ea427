//! HTTP faults: what `lab proxy --http` does to a request instead of (or on the way to)
//! forwarding it, as the phases of a scenario's timeline describe them (`abort`, `delay`,
//! `hang` and `reset` phases, [docs/http-proxy.md]). A leaf of the model layer: data and the
//! rules that pick a request (its match, its share, the first requests of each operation); the
//! proxy's machine ([`crate::fault_proxy`]) decides with them.
//!
//! The faults are the ones Toxiproxy's users asked for and Envoy's fault filter gives (an
//! abort with a status, a delay), plus what a retry study needs of a proxy: a `Retry-After`
//! (seconds or an HTTP date), a hang, and a reset before the upstream saw the request or after
//! it answered (the answer lost after the work was done).

use std::time::Duration;

/// What happens to a request a fault picks.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "fault", rename_all = "snake_case")]
pub enum HttpFault {
    /// Answered by the proxy with `status` (200 to 599), never forwarded.
    Abort {
        status: u16,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after: Option<RetryAfter>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        body: Option<String>,
    },
    /// Forwarded after a delay drawn uniformly from `[min, max]` (fixed when they are equal).
    Delay { min: Duration, max: Duration },
    /// Never answered: the request is held until the caller gives up or the proxy stops.
    Hang,
    /// The connection is reset: before the request is forwarded (`after_upstream` false: the
    /// upstream never saw it) or after the upstream answered (true: the work was done and the
    /// answer is lost).
    Reset { after_upstream: bool },
}

impl HttpFault {
    /// A short name for records and progress lines: `abort 503`, `delay 200 ms`,
    /// `delay 100-300 ms`, `hang`, `reset before`, `reset after`.
    pub fn label(&self) -> String {
        match self {
            HttpFault::Abort { status, .. } => format!("abort {status}"),
            HttpFault::Delay { min, max } if min == max => {
                format!("delay {} ms", min.as_millis())
            }
            HttpFault::Delay { min, max } => {
                format!("delay {}-{} ms", min.as_millis(), max.as_millis())
            }
            HttpFault::Hang => "hang".into(),
            HttpFault::Reset {
                after_upstream: false,
            } => "reset before".into(),
            HttpFault::Reset {
                after_upstream: true,
            } => "reset after".into(),
        }
    }

    /// The phase's name in a scenario file (`abort`, `delay`, `hang`, `reset`).
    pub fn phase_name(&self) -> &'static str {
        match self {
            HttpFault::Abort { .. } => "abort",
            HttpFault::Delay { .. } => "delay",
            HttpFault::Hang => "hang",
            HttpFault::Reset { .. } => "reset",
        }
    }
}

/// The `Retry-After` of an abort: a whole number of seconds, sent as seconds or as the HTTP
/// date that many seconds after the answer (RFC 9110, section 10.2.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RetryAfter {
    pub seconds: u32,
    /// Sent as an HTTP date (`Sun, 06 Nov 1994 08:49:37 GMT`) instead of seconds.
    #[serde(default)]
    pub as_date: bool,
}

impl RetryAfter {
    /// The header's value for an answer sent at `unix_s` (seconds since the Unix epoch).
    pub fn value(&self, unix_s: u64) -> String {
        if self.as_date {
            http_date(unix_s + u64::from(self.seconds))
        } else {
            self.seconds.to_string()
        }
    }
}

/// `unix_s` as an HTTP date, RFC 9110's IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`).
pub fn http_date(unix_s: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = unix_s / 86_400;
    let secs = unix_s % 86_400;
    // Howard Hinnant's civil_from_days, for days since 1970-01-01 (a Thursday).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{}, {day:02} {} {year} {:02}:{:02}:{:02} GMT",
        DAYS[(days % 7) as usize],
        MONTHS[(month - 1) as usize],
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// Which requests a fault may pick: every condition given must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RequestMatch {
    /// The request's method, compared without case (`POST`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// The start of its path (`/api/`); the query is not part of the path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_prefix: Option<String>,
    /// A header it carries (name without case), with this exact value if one is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<HeaderMatch>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HeaderMatch {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

/// A request as the faults see it.
#[derive(Debug, Clone, Copy)]
pub struct RequestView<'a> {
    pub method: &'a str,
    pub path: &'a str,
    /// Name and value of each header, as received.
    pub headers: &'a [(&'a str, &'a str)],
}

impl RequestView<'_> {
    /// The first value of header `name` (compared without case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|&(_, v)| v)
    }
}

impl RequestMatch {
    pub fn matches(&self, req: &RequestView) -> bool {
        self.method
            .as_ref()
            .is_none_or(|m| m.eq_ignore_ascii_case(req.method))
            && self
                .path_prefix
                .as_ref()
                .is_none_or(|p| req.path.starts_with(p.as_str()))
            && self.header.as_ref().is_none_or(|h| {
                req.header(&h.name)
                    .is_some_and(|v| h.value.as_ref().is_none_or(|want| want == v))
            })
    }

    /// Whether it picks every request.
    pub fn is_any(&self) -> bool {
        self == &RequestMatch::default()
    }
}

/// How the requests of one operation are told apart, for [`FirstOf`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OperationKey {
    /// The lab's own `x-e03-client` and `x-e03-op` headers (the swarm sends them).
    E03Op,
    /// The `Idempotency-Key` header (a client that sends one per operation).
    IdempotencyKey,
    /// A header the user names.
    Header(String),
}

impl OperationKey {
    /// The operation `req` belongs to, if its headers say.
    pub fn of(&self, req: &RequestView) -> Option<String> {
        match self {
            OperationKey::E03Op => {
                let op = req.header(crate::identity_headers::HEADER_OP)?;
                let client = req
                    .header(crate::identity_headers::HEADER_CLIENT)
                    .unwrap_or("");
                Some(format!("{client}/{op}"))
            }
            OperationKey::IdempotencyKey => req.header("idempotency-key").map(str::to_string),
            OperationKey::Header(name) => req.header(name).map(str::to_string),
        }
    }

    /// As a scenario file writes it: `x-e03-op`, `idempotency-key` or `header:NAME`.
    pub fn spelling(&self) -> String {
        match self {
            OperationKey::E03Op => "x-e03-op".into(),
            OperationKey::IdempotencyKey => "idempotency-key".into(),
            OperationKey::Header(name) => format!("header:{name}"),
        }
    }
}

/// Only the first `n` requests of each operation are faulted; the later ones are forwarded
/// (Toxiproxy #404: "fail the first two requests, to test retries"). A request whose headers
/// name no operation is forwarded untouched, and its record says so.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FirstOf {
    pub n: u32,
    pub key: OperationKey,
}

/// One HTTP fault phase's rule: the fault, the requests it may pick and its share of them.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HttpFaultRule {
    pub fault: HttpFault,
    /// Share of the matching requests faulted, 0 to 100 (100: every one).
    pub percent: f64,
    #[serde(default, skip_serializing_if = "RequestMatch::is_any")]
    pub matches: RequestMatch,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first: Option<FirstOf>,
}

impl HttpFaultRule {
    /// A fault on every request.
    pub fn every(fault: HttpFault) -> Self {
        HttpFaultRule {
            fault,
            percent: 100.0,
            matches: RequestMatch::default(),
            first: None,
        }
    }

    /// Whether a draw in `[0, 1)` picks a request: `draw < percent / 100`.
    pub fn drawn(&self, draw: f64) -> bool {
        draw * 100.0 < self.percent
    }
}

/// An HTTP fault phase: its rule over `[start, end)`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HttpFaultWindow {
    pub start: Duration,
    pub end: Duration,
    pub rule: HttpFaultRule,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_dates_are_rfc_9110_s_imf_fixdate() {
        // RFC 9110, section 5.6.7's own example.
        assert_eq!(http_date(784_111_777), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        // A leap day, and the day after a century that is not a leap year's 29 February.
        assert_eq!(http_date(951_782_400), "Tue, 29 Feb 2000 00:00:00 GMT");
        assert_eq!(http_date(1_709_208_000), "Thu, 29 Feb 2024 12:00:00 GMT");
        assert_eq!(http_date(1_796_601_599), "Sun, 06 Dec 2026 23:59:59 GMT");
        let ra = RetryAfter {
            seconds: 2,
            as_date: true,
        };
        assert_eq!(ra.value(784_111_777), "Sun, 06 Nov 1994 08:49:39 GMT");
        let ra = RetryAfter {
            seconds: 2,
            as_date: false,
        };
        assert_eq!(ra.value(784_111_777), "2");
    }

    #[test]
    fn a_match_needs_every_condition_it_names() {
        let headers = [
            ("X-Tenant", "blue"),
            ("x-e03-op", "7"),
            ("x-e03-client", "3"),
        ];
        let req = RequestView {
            method: "post",
            path: "/api/charge",
            headers: &headers,
        };
        assert!(RequestMatch::default().matches(&req));
        let m =
            |method: Option<&str>, prefix: Option<&str>, header: Option<(&str, Option<&str>)>| {
                RequestMatch {
                    method: method.map(str::to_string),
                    path_prefix: prefix.map(str::to_string),
                    header: header.map(|(n, v)| HeaderMatch {
                        name: n.into(),
                        value: v.map(str::to_string),
                    }),
                }
            };
        assert!(m(
            Some("POST"),
            Some("/api/"),
            Some(("x-tenant", Some("blue")))
        )
        .matches(&req));
        assert!(m(None, None, Some(("x-tenant", None))).matches(&req));
        assert!(!m(Some("GET"), None, None).matches(&req));
        assert!(!m(None, Some("/work"), None).matches(&req));
        assert!(!m(None, None, Some(("x-tenant", Some("green")))).matches(&req));
        assert!(!m(None, None, Some(("x-other", None))).matches(&req));
        assert_eq!(OperationKey::E03Op.of(&req).as_deref(), Some("3/7"));
        assert_eq!(OperationKey::IdempotencyKey.of(&req), None);
        assert_eq!(
            OperationKey::Header("X-TENANT".into()).of(&req).as_deref(),
            Some("blue")
        );
    }

    #[test]
    fn a_percent_picks_draws_below_its_share_and_faults_have_labels() {
        let mut rule = HttpFaultRule::every(HttpFault::Hang);
        assert!(rule.drawn(0.0) && rule.drawn(0.999_999));
        rule.percent = 10.0;
        assert!(rule.drawn(0.099) && !rule.drawn(0.1) && !rule.drawn(0.5));
        rule.percent = 0.0;
        assert!(!rule.drawn(0.0));
        let ms = Duration::from_millis;
        assert_eq!(
            HttpFault::Delay {
                min: ms(200),
                max: ms(200)
            }
            .label(),
            "delay 200 ms"
        );
        assert_eq!(
            HttpFault::Delay {
                min: ms(100),
                max: ms(300)
            }
            .label(),
            "delay 100-300 ms"
        );
        assert_eq!(
            HttpFault::Reset {
                after_upstream: true
            }
            .label(),
            "reset after"
        );
    }
}
