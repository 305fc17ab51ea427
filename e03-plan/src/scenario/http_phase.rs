//! A scenario file's HTTP fault phases (`abort`, `delay`, `hang`, `reset`: what `lab proxy
//! --http` applies, [`e03_model::http_fault`]): their keys, read and checked into the phase's rule.
//! Every message names the key and what it accepts.

use std::time::Duration;

use e03_model::spec_error::SpecError;

use e03_model::http_fault::{
    FirstOf, HeaderMatch, HttpFault, HttpFaultRule, OperationKey, RequestMatch, RetryAfter,
};

/// The longest delay or `Retry-After` a phase may give: an hour.
pub const MAX_HTTP_FAULT_S: u64 = 3600;
/// The longest abort body: 64 KiB.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// The keys an HTTP fault phase may take, as written.
#[derive(Debug, Default)]
pub(super) struct HttpKeys<'a> {
    pub status: Option<u16>,
    pub retry_after_s: Option<u64>,
    pub retry_after_date: Option<bool>,
    pub body: Option<&'a str>,
    pub delay_ms: Option<u64>,
    pub delay_max_ms: Option<u64>,
    pub when: Option<&'a str>,
    pub percent: Option<f64>,
    pub method: Option<&'a str>,
    pub path_prefix: Option<&'a str>,
    pub header: Option<&'a str>,
    pub first: Option<u32>,
    pub operation_key: Option<&'a str>,
}

impl HttpKeys<'_> {
    /// The keys set, each with the one phase that takes it (`None`: every HTTP fault phase).
    pub fn set(&self) -> Vec<(&'static str, Option<&'static str>)> {
        [
            ("retry_after_s", self.retry_after_s.is_some(), Some("abort")),
            (
                "retry_after_date",
                self.retry_after_date.is_some(),
                Some("abort"),
            ),
            ("body", self.body.is_some(), Some("abort")),
            ("delay_ms", self.delay_ms.is_some(), Some("delay")),
            ("delay_max_ms", self.delay_max_ms.is_some(), Some("delay")),
            ("when", self.when.is_some(), Some("reset")),
            ("percent", self.percent.is_some(), None),
            ("method", self.method.is_some(), None),
            ("path_prefix", self.path_prefix.is_some(), None),
            ("header", self.header.is_some(), None),
            ("first", self.first.is_some(), None),
            ("operation_key", self.operation_key.is_some(), None),
        ]
        .into_iter()
        .filter(|(_, set, _)| *set)
        .map(|(key, _, only)| (key, only))
        .collect()
    }
}

/// Reads phase `name`'s keys into its rule; the error names the key and what it accepts.
pub(super) fn read(name: &str, k: &HttpKeys) -> Result<HttpFaultRule, SpecError> {
    let fault = match name {
        "abort" => {
            let status = match k.status {
                Some(s @ 200..=599) => s,
                Some(s) => return Err(SpecError::value("status", s, "200 to 599")),
                None => {
                    return Err(SpecError::missing(
                        "status",
                        "the answer's status, 200 to 599",
                    ))
                }
            };
            let retry_after = match k.retry_after_s {
                Some(s) if s <= MAX_HTTP_FAULT_S => Some(RetryAfter {
                    seconds: s as u32,
                    as_date: k.retry_after_date.unwrap_or(false),
                }),
                Some(s) => {
                    return Err(SpecError::value(
                        "retry_after_s",
                        s,
                        format!("whole seconds from 0 to {MAX_HTTP_FAULT_S}"),
                    ))
                }
                None if k.retry_after_date.is_some() => {
                    return Err(SpecError::rule(
                        "retry_after_date",
                        "retry_after_date needs retry_after_s, the seconds the date is ahead \
                         of the answer",
                    ))
                }
                None => None,
            };
            if let Some(b) = k.body.filter(|b| b.len() > MAX_BODY_BYTES) {
                return Err(SpecError::expected(
                    format!("body of {} bytes", b.len()),
                    format!("at most {MAX_BODY_BYTES}"),
                ));
            }
            HttpFault::Abort {
                status,
                retry_after,
                body: k.body.map(str::to_string),
            }
        }
        "delay" => {
            let max_ms = MAX_HTTP_FAULT_S * 1000;
            let min = match k.delay_ms {
                Some(ms) if ms <= max_ms => ms,
                Some(ms) => {
                    return Err(SpecError::value(
                        "delay_ms",
                        ms,
                        format!("milliseconds from 0 to {max_ms}"),
                    ))
                }
                None => return Err(SpecError::missing("delay_ms", "the delay in milliseconds")),
            };
            let max = match k.delay_max_ms {
                None => min,
                Some(ms) if ms >= min && ms <= max_ms => ms,
                Some(ms) => {
                    return Err(SpecError::value(
                        "delay_max_ms",
                        ms,
                        format!(
                            "milliseconds from delay_ms ({min}) to {max_ms} (a delay drawn \
                             uniformly between them)"
                        ),
                    ))
                }
            };
            HttpFault::Delay {
                min: Duration::from_millis(min),
                max: Duration::from_millis(max),
            }
        }
        "hang" => HttpFault::Hang,
        "reset" => match k.when.unwrap_or("before") {
            "before" => HttpFault::Reset {
                after_upstream: false,
            },
            "after" => HttpFault::Reset {
                after_upstream: true,
            },
            other => {
                return Err(SpecError::value(
                    "when",
                    format!("{other:?}"),
                    "\"before\" (the upstream never sees the request) or \"after\" (the \
                     upstream answered, the answer is lost)",
                ))
            }
        },
        other => unreachable!("{other} is not an HTTP fault phase"),
    };
    let percent = k.percent.unwrap_or(100.0);
    if !(percent.is_finite() && (0.0..=100.0).contains(&percent)) {
        return Err(SpecError::value(
            "percent",
            percent,
            "a share of the requests from 0 to 100",
        ));
    }
    let text = |key: &str, v: Option<&str>| -> Result<Option<String>, SpecError> {
        match v {
            Some(t) if t.trim().is_empty() || t.len() > 256 || !t.is_ascii() => Err(
                SpecError::value(key, format!("{t:?}"), "1 to 256 ASCII characters"),
            ),
            other => Ok(other.map(|t| t.trim().to_string())),
        }
    };
    let method = text("method", k.method)?;
    if let Some(m) = &method {
        if !m.bytes().all(|b| b.is_ascii_alphabetic()) {
            return Err(SpecError::value(
                "method",
                format!("{m:?}"),
                "a method name, such as POST",
            ));
        }
    }
    let path_prefix = text("path_prefix", k.path_prefix)?;
    if let Some(p) = path_prefix.as_ref().filter(|p| !p.starts_with('/')) {
        return Err(SpecError::value(
            "path_prefix",
            format!("{p:?}"),
            "the start of a path, beginning with /",
        ));
    }
    let header = text("header", k.header)?
        .map(|h| {
            let (name, value) = match h.split_once(':') {
                Some((n, v)) => (n.trim(), Some(v.trim().to_string())),
                None => (h.as_str(), None),
            };
            if name.is_empty() || !name.bytes().all(header_name_byte) {
                return Err(SpecError::value(
                    "header",
                    format!("{h:?}"),
                    "a header name (\"x-tenant\") or a name and its value (\"x-tenant: blue\")",
                ));
            }
            Ok(HeaderMatch {
                name: name.to_string(),
                value,
            })
        })
        .transpose()?;
    let key = match k.operation_key.map(str::trim) {
        None if k.first.is_none() => None,
        None | Some("x-e03-op") => Some(OperationKey::E03Op),
        Some(k) if k.eq_ignore_ascii_case("idempotency-key") => Some(OperationKey::IdempotencyKey),
        Some(h)
            if h.strip_prefix("header:").is_some_and(|n| {
                !n.trim().is_empty() && n.trim().bytes().all(header_name_byte)
            }) =>
        {
            Some(OperationKey::Header(
                h["header:".len()..].trim().to_string(),
            ))
        }
        Some(other) => {
            return Err(SpecError::value(
                "operation_key",
                format!("{other:?}"),
                "\"x-e03-op\" (the lab's client and operation headers), \"idempotency-key\" \
                 or \"header:NAME\"",
            ))
        }
    };
    let first = match (k.first, key) {
        (Some(n), Some(key)) if n >= 1 => Some(FirstOf { n, key }),
        (Some(n), _) => {
            return Err(SpecError::value(
                "first",
                n,
                "at least 1 (the first requests of each operation faulted)",
            ))
        }
        (None, Some(_)) => {
            return Err(SpecError::rule(
                "operation_key",
                "operation_key needs first, the requests of each operation faulted",
            ))
        }
        (None, None) => None,
    };
    Ok(HttpFaultRule {
        fault,
        percent,
        matches: RequestMatch {
            method,
            path_prefix,
            header,
        },
        first,
    })
}

/// A byte of a header name (RFC 9110's token).
fn header_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::params::Params;
    use crate::scenario::{parse, Scenario};
    use e03_model::timeline::PhaseKind;

    const MINIMAL: &str = "name = \"mine\"\ntitle = \"Mine\"\ndescription = \"d\"\n";

    fn phase(body: &str) -> String {
        format!("{MINIMAL}\n[[timeline]]\nstart_s = 1\nend_s = 3\n{body}\n")
    }

    fn rule(body: &str) -> HttpFaultRule {
        let def = parse(&phase(body), "x.toml").unwrap_or_else(|e| panic!("{e}"));
        match &def.phases[0].phase {
            PhaseKind::Http { rule } => rule.clone(),
            other => panic!("{other:?}"),
        }
    }

    fn err(body: &str) -> String {
        parse(&phase(body), "x.toml").unwrap_err().to_string()
    }

    #[test]
    fn http_fault_phases_read_into_their_rule_and_reach_the_timeline() {
        let r = rule(
            "phase = \"abort\"\nstatus = 429\nretry_after_s = 1\npercent = 50\n\
             method = \"post\"\npath_prefix = \"/api\"\nheader = \"x-tenant: blue\"\n\
             first = 2\noperation_key = \"idempotency-key\"",
        );
        assert_eq!(
            r.fault,
            HttpFault::Abort {
                status: 429,
                retry_after: Some(RetryAfter {
                    seconds: 1,
                    as_date: false
                }),
                body: None
            }
        );
        assert_eq!(r.percent, 50.0);
        assert_eq!(r.matches.method.as_deref(), Some("post"));
        assert_eq!(
            r.matches.header,
            Some(HeaderMatch {
                name: "x-tenant".into(),
                value: Some("blue".into())
            })
        );
        assert_eq!(
            r.first,
            Some(FirstOf {
                n: 2,
                key: OperationKey::IdempotencyKey
            })
        );
        // `first` alone counts the lab's own operations.
        let r = rule("phase = \"reset\"\nwhen = \"after\"\nfirst = 1");
        assert_eq!(
            r.fault,
            HttpFault::Reset {
                after_upstream: true
            }
        );
        assert_eq!(r.first.unwrap().key, OperationKey::E03Op);
        let r = rule("phase = \"delay\"\ndelay_ms = 100\ndelay_max_ms = 300");
        assert_eq!(
            r.fault,
            HttpFault::Delay {
                min: Duration::from_millis(100),
                max: Duration::from_millis(300)
            }
        );
        assert_eq!(rule("phase = \"hang\"").fault, HttpFault::Hang);
        let s = Scenario::from_def(parse(&phase("phase = \"hang\""), "x.toml").unwrap()).unwrap();
        let t = Params::for_scenario(&s, &BTreeMap::new())
            .unwrap()
            .timeline(&s);
        assert_eq!(t.http.len(), 1);
        assert_eq!(
            (t.http[0].start, t.http[0].end),
            (Duration::from_secs(1), Duration::from_secs(3))
        );
        assert_eq!(t.phase_name(Duration::from_secs(2)), "hang");
    }

    #[test]
    fn a_bad_http_fault_key_is_named_with_what_it_accepts() {
        let cases = [
            (
                "phase = \"abort\"",
                "expected status, the answer's status, 200 to 599",
            ),
            (
                "phase = \"abort\"\nstatus = 600",
                "status = 600: expected 200 to 599",
            ),
            (
                "phase = \"abort\"\nstatus = 503\nretry_after_date = true",
                "retry_after_date needs retry_after_s",
            ),
            (
                "phase = \"abort\"\nstatus = 503\npercent = 101",
                "percent = 101: expected a share of the requests from 0 to 100",
            ),
            (
                "phase = \"delay\"",
                "expected delay_ms, the delay in milliseconds",
            ),
            (
                "phase = \"delay\"\ndelay_ms = 300\ndelay_max_ms = 100",
                "delay_max_ms = 100: expected milliseconds from delay_ms (300)",
            ),
            (
                "phase = \"reset\"\nwhen = \"during\"",
                "when = \"during\": expected \"before\"",
            ),
            (
                "phase = \"hang\"\npath_prefix = \"api\"",
                "path_prefix = \"api\": expected the start of a path, beginning with /",
            ),
            (
                "phase = \"hang\"\nheader = \"bad name: x\"",
                "header = \"bad name: x\": expected a header name",
            ),
            (
                "phase = \"hang\"\noperation_key = \"x-e03-op\"",
                "operation_key needs first",
            ),
            (
                "phase = \"hang\"\nfirst = 0",
                "first = 0: expected at least 1",
            ),
            (
                "phase = \"hang\"\nfirst = 1\noperation_key = \"cookie\"",
                "operation_key = \"cookie\": expected \"x-e03-op\"",
            ),
            (
                "phase = \"hang\"\nstatus = 503",
                "status is only for a down or an abort phase",
            ),
            (
                "phase = \"hang\"\ndelay_ms = 5",
                "delay_ms is only for a delay phase",
            ),
            (
                "phase = \"delay\"\ndelay_ms = 5\nbody = \"x\"",
                "body is only for an abort phase",
            ),
            (
                "phase = \"down\"\npercent = 5",
                "percent is only for an HTTP fault phase (abort, delay, hang, reset)",
            ),
        ];
        for (body, want) in cases {
            let e = err(body);
            assert!(e.contains(want), "{body}: {e}");
            assert!(e.contains("x.toml:5: [[timeline]]"), "{body}: {e}");
        }
    }
}
