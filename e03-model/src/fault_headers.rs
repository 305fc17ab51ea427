//! Envoy's fault-injection request headers, read as Envoy reads them, for the HTTP fault proxy
//! (`lab proxy --http --fault-headers`): a test picks its fault per request.
//!
//! Source: Envoy's HTTP fault filter, "Controlling fault injection via HTTP headers"
//! (<https://www.envoyproxy.io/docs/envoy/latest/configuration/http/http_filters/fault_filter>),
//! and its code in envoyproxy/envoy, read at these commits:
//! `source/extensions/filters/common/fault/fault_config.cc` (01f8613d) and `fault_config.h`
//! (040783c8), `source/extensions/filters/http/fault/fault_filter.cc` (e05a2af4), the tests
//! `test/extensions/filters/common/fault/fault_config_test.cc` (3990560f),
//! `test/extensions/filters/http/fault/fault_filter_test.cc` (fc5c3eef) and
//! `fault_filter_integration_test.cc` (b91be2ad). Envoy parses every value with abseil's
//! `SimpleAtoi` (abseil-cpp `absl/strings/numbers.cc`, ff704564): base 10, ASCII whitespace
//! around the number and one leading `+` allowed, no `-`, and a value out of range fails.
//!
//! The proxy acts as an Envoy configured with `header_abort`, `header_delay` and `header_limit`,
//! each with the percentage 100 of HUNDRED (the docs' example), and no runtime overrides:
//!
//! - `x-envoy-fault-abort-request`: an HTTP status from 200 to 599; anything else, no abort.
//! - `x-envoy-fault-delay-request`: a delay in milliseconds; 0 or junk, no delay.
//! - `x-envoy-fault-throughput-response`: a response rate limit in KiB/s; 0 or junk, none.
//! - `x-envoy-fault-*-percentage`: the numerator of that fault's percentage, over the
//!   configured denominator (100) and capped by the configured numerator (100). Absent or junk
//!   (not a `u32`, so `-1` too), the configured 100 % applies. Without a valid fault header it
//!   does nothing.
//! - `x-envoy-fault-abort-grpc-request`: a gRPC status. The lab speaks no gRPC: ignored. (Envoy
//!   uses it only without a valid HTTP status, and answers 200 with a `grpc-status`.)
//! - Names match in any case. Of a header sent twice only the first value counts ("an
//!   implicitly untrusted header, so per the API documentation only the first value is used").
//! - "Delays and aborts are independent events": a request may get both. Envoy sets up the
//!   throughput limit first, then the delay, and decides the abort when the delay ends.
//!
//! Envoy applies N of 100 when `r % 100 < N` for a random `u64` `r` (`evaluateFractionalPercent`
//! in `source/common/protobuf/utility.cc`). Here the caller draws a uniform `f64` in `[0, 1)`,
//! and N % applies when `draw < N / 100`: 50 % applies to the draws below 0.5. Envoy's
//! `max_active_faults` and runtime keys are left to the proxy.

use std::time::Duration;

pub const ABORT_REQUEST: &str = "x-envoy-fault-abort-request";
pub const ABORT_REQUEST_PERCENTAGE: &str = "x-envoy-fault-abort-request-percentage";
pub const DELAY_REQUEST: &str = "x-envoy-fault-delay-request";
pub const DELAY_REQUEST_PERCENTAGE: &str = "x-envoy-fault-delay-request-percentage";
pub const THROUGHPUT_RESPONSE: &str = "x-envoy-fault-throughput-response";
pub const THROUGHPUT_RESPONSE_PERCENTAGE: &str = "x-envoy-fault-throughput-response-percentage";
pub const ABORT_GRPC_REQUEST: &str = "x-envoy-fault-abort-grpc-request";

/// The percentage the proxy configures for each fault, of Envoy's denominator HUNDRED. It
/// applies when a request sends no percentage header, and it caps the header's.
pub const CONFIGURED_PERCENT: u32 = 100;

/// The fault headers: each fault's header, then its percentage header; the gRPC one last.
const NAMES: [&str; 7] = [
    ABORT_REQUEST,
    ABORT_REQUEST_PERCENTAGE,
    DELAY_REQUEST,
    DELAY_REQUEST_PERCENTAGE,
    THROUGHPUT_RESPONSE,
    THROUGHPUT_RESPONSE_PERCENTAGE,
    ABORT_GRPC_REQUEST,
];

/// What the headers accept, for the reasons in [`Ignored`].
const STATUS: &str = "an integer HTTP status from 200 to 599";
const MILLISECONDS: &str = "an integer number of milliseconds from 1 to 18446744073709551615";
const KIB_S: &str = "an integer rate in KiB/s from 1 to 18446744073709551615";
const PERCENT: &str = "an integer from 0 to 4294967295; the configured 100 % applies";
const GRPC: &str = "a gRPC status: out of scope, the lab's proxy speaks HTTP only";
const FIRST: &str = "only the first value of a fault header is used";

/// One fault a request asked for: its value and the share of requests it applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fault<T> {
    pub value: T,
    /// Percent of requests (Envoy's numerator over HUNDRED), from 0 to [`CONFIGURED_PERCENT`].
    pub percent: u32,
}

impl<T> Fault<T> {
    /// Whether the fault applies to a request whose draw, uniform in `[0, 1)`, is `draw`:
    /// `draw < percent / 100`. 0 % and a NaN draw never apply.
    pub fn applies(&self, draw: f64) -> bool {
        self.percent > 0 && draw < f64::from(self.percent) / 100.0
    }
}

/// A fault header present but not applied: its lower-case name, its value as received, and
/// why, naming what it accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ignored {
    pub header: String,
    pub value: String,
    pub reason: String,
}

/// The faults one request's headers ask for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HeaderFaults {
    /// The HTTP status to answer with instead of forwarding, 200 to 599.
    pub abort: Option<Fault<u16>>,
    /// How long to hold the request before forwarding (or aborting) it, above 0.
    pub delay: Option<Fault<Duration>>,
    /// The response body's rate limit in KiB/s, above 0.
    pub throughput_kib_s: Option<Fault<u64>>,
    /// Every fault header present and not applied.
    pub ignored: Vec<Ignored>,
}

/// The faults one request gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Decision {
    pub delay: Option<Duration>,
    pub abort: Option<u16>,
    pub throughput_kib_s: Option<u64>,
}

impl HeaderFaults {
    /// The faults for one request, from the caller's draws `[delay, abort, throughput]`, each
    /// uniform in `[0, 1)`. Each fault applies when its own draw is below its percentage
    /// ([`Fault::applies`]); the three are independent. The proxy applies them in Envoy's
    /// order: the throughput limit, then the delay, then the abort once the delay has ended.
    pub fn decide(&self, draws: [f64; 3]) -> Decision {
        fn pick<T: Copy>(fault: &Option<Fault<T>>, draw: f64) -> Option<T> {
            fault.as_ref().filter(|f| f.applies(draw)).map(|f| f.value)
        }
        let [delay, abort, throughput] = draws;
        Decision {
            delay: pick(&self.delay, delay),
            abort: pick(&self.abort, abort),
            throughput_kib_s: pick(&self.throughput_kib_s, throughput),
        }
    }
}

/// Reads the fault headers among `headers`, name and value pairs as received. A value that is
/// not UTF-8 may be passed lossily converted: it fails to parse like any other junk.
pub fn read(headers: &[(&str, &str)]) -> HeaderFaults {
    let mut r = Reader {
        first: [None; 7],
        ignored: Vec::new(),
    };
    for &(name, value) in headers {
        let Some(i) = NAMES.iter().position(|n| n.eq_ignore_ascii_case(name)) else {
            continue;
        };
        match r.first[i] {
            None => r.first[i] = Some(value),
            Some(_) => r.ignore(i, value, FIRST.into()),
        }
    }
    if let Some(value) = r.first[6] {
        r.ignore(6, value, GRPC.into());
    }
    let status = |v: &str| atoi(v).filter(|c| (200..600).contains(c));
    let millis = |v: &str| atoi(v).filter(|&ms| ms > 0).map(Duration::from_millis);
    let kib_s = |v: &str| atoi(v).filter(|&kib_s: &u64| kib_s > 0);
    HeaderFaults {
        abort: r.fault(0, STATUS, status),
        delay: r.fault(2, MILLISECONDS, millis),
        throughput_kib_s: r.fault(4, KIB_S, kib_s),
        ignored: r.ignored,
    }
}

struct Reader<'a> {
    /// The first value of each of [`NAMES`].
    first: [Option<&'a str>; 7],
    ignored: Vec<Ignored>,
}

impl Reader<'_> {
    /// The fault of `NAMES[i]`, with the percentage of `NAMES[i + 1]`.
    fn fault<T>(
        &mut self,
        i: usize,
        accepts: &str,
        parse: impl Fn(&str) -> Option<T>,
    ) -> Option<Fault<T>> {
        let (value, pct) = (self.first[i], self.first[i + 1]);
        let parsed = value.and_then(parse);
        if let (Some(value), None) = (value, &parsed) {
            self.ignore(i, value, format!("expected {accepts}"));
        }
        let Some(value) = parsed else {
            let why = format!("no effect without a valid {}", NAMES[i]);
            if let Some(pct) = pct {
                self.ignore(i + 1, pct, why);
            }
            return None;
        };
        let percent = match pct.map(|p| (p, atoi::<u32>(p))) {
            None => CONFIGURED_PERCENT,
            Some((_, Some(n))) => n.min(CONFIGURED_PERCENT),
            Some((pct, None)) => {
                self.ignore(i + 1, pct, format!("expected {PERCENT}"));
                CONFIGURED_PERCENT
            }
        };
        Some(Fault { value, percent })
    }

    fn ignore(&mut self, i: usize, value: &str, reason: String) {
        let (header, value) = (NAMES[i].into(), value.into());
        self.ignored.push(Ignored {
            header,
            value,
            reason,
        });
    }
}

/// Abseil's `SimpleAtoi` as Envoy calls it: base 10, ASCII whitespace around the number and
/// one leading `+` allowed. A `-`, a point, an exponent, a non-ASCII digit or a value out of
/// `T`'s range fails.
fn atoi<T: std::str::FromStr>(value: &str) -> Option<T> {
    let trimmed = value.trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r'));
    let digits = trimmed.strip_prefix('+').unwrap_or(trimmed);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    // The headers' short names: abort, delay, throughput, their percentages (P), gRPC.
    const A: &str = ABORT_REQUEST;
    const AP: &str = ABORT_REQUEST_PERCENTAGE;
    const D: &str = DELAY_REQUEST;
    const DP: &str = DELAY_REQUEST_PERCENTAGE;
    const T: &str = THROUGHPUT_RESPONSE;
    const TP: &str = THROUGHPUT_RESPONSE_PERCENTAGE;
    const G: &str = ABORT_GRPC_REQUEST;
    const MS_200: Option<Duration> = Some(Duration::from_millis(200));
    const NONE: (Option<u16>, Option<Duration>, Option<u64>) = (None, None, None);

    /// (abort, delay, throughput) as read, without their percentages.
    fn values(f: &HeaderFaults) -> (Option<u16>, Option<Duration>, Option<u64>) {
        let t = f.throughput_kib_s.map(|t| t.value);
        (f.abort.map(|a| a.value), f.delay.map(|d| d.value), t)
    }

    /// The percentages read, (abort, delay, throughput).
    fn percents(f: &HeaderFaults) -> (Option<u32>, Option<u32>, Option<u32>) {
        let t = f.throughput_kib_s.map(|t| t.percent);
        (f.abort.map(|a| a.percent), f.delay.map(|d| d.percent), t)
    }

    /// A decision as (delay, abort, throughput).
    fn got(d: Decision) -> (Option<Duration>, Option<u16>, Option<u64>) {
        (d.delay, d.abort, d.throughput_kib_s)
    }

    /// The ignored headers as (name, value, reason).
    fn ignored<'a>(f: &'a HeaderFaults) -> Vec<(&'a str, &'a str, &'a str)> {
        let row = |i: &'a Ignored| (&*i.header, &*i.value, &*i.reason);
        f.ignored.iter().map(row).collect()
    }

    /// Abort 503 at 50 %: the draws below 0.5 abort, 0.5 and above do not.
    #[test]
    fn abort_503_at_50_percent() {
        let f = read(&[(A, "503"), (AP, "50")]);
        assert_eq!(values(&f), (Some(503), None, None));
        assert_eq!(percents(&f), (Some(50), None, None));
        assert!(f.ignored.is_empty());
        let aborts = [0.0, 0.25, 0.49, 0.5, 0.51, 0.99].map(|d| f.decide([0.0, d, 0.0]).abort);
        assert_eq!(aborts, [Some(503), Some(503), Some(503), None, None, None]);
    }

    /// Envoy's integration test `HeaderFaultConfig`: delay 200 ms and 1 KiB/s without percentage
    /// headers, so the configured 100 % applies to both, whatever the draw.
    #[test]
    fn delay_200_ms_and_throughput_without_percentage() {
        let f = read(&[(D, "200"), (T, "1")]);
        assert_eq!(values(&f), (None, MS_200, Some(1)));
        assert_eq!(percents(&f), (None, Some(100), Some(100)));
        assert_eq!(got(f.decide([0.999; 3])), (MS_200, None, Some(1)));
    }

    /// The percentage header is capped by the configured 100; 0 turns the fault off (Envoy's
    /// `HeaderFaultsConfig0PercentageHeaders`); a junk one leaves the configured 100 %, even -1.
    #[test]
    fn percentage_headers() {
        let f = read(&[(A, "429"), (AP, "0"), (D, "200"), (DP, "150")]);
        assert_eq!(percents(&read(&[(T, "64"), (TP, "7")])).2, Some(7));
        assert_eq!(percents(&f), (Some(0), Some(100), None));
        assert_eq!(got(f.decide([0.0; 3])), (MS_200, None, None));
        assert_eq!(f.decide([-1.0; 3]).abort, None, "0 % never applies");
        let why = "expected an integer from 0 to 4294967295; the configured 100 % applies";
        for junk in ["-1", "4294967296", "50%", "0.5", ""] {
            let f = read(&[(A, "503"), (AP, junk)]);
            assert_eq!(percents(&f).0, Some(100));
            assert_eq!(ignored(&f), [(AP, junk, why)]);
        }
        let f = read(&[(A, "503"), (AP, "4294967295")]);
        assert_eq!(percents(&f).0, Some(100));
    }

    /// Envoy's `FaultAbortHeaderConfig`: "abc", 199 and 600 abort nothing, 401 does. The
    /// percentage header of a status not applied is ignored too.
    #[test]
    fn status_outside_200_to_599_is_ignored() {
        let why = "expected an integer HTTP status from 200 to 599";
        let no_effect = "no effect without a valid x-envoy-fault-abort-request";
        for bad in ["abc", "199", "600", "0", "65936", "-503"] {
            let f = read(&[(A, bad), (AP, "50")]);
            assert_eq!(values(&f), NONE, "{bad:?}");
            assert_eq!(ignored(&f), [(A, bad, why), (AP, "50", no_effect)]);
        }
        for good in [200, 401, 599] {
            assert_eq!(values(&read(&[(A, &good.to_string())])).0, Some(good));
        }
    }

    /// The gRPC header is out of scope: ignored with its reason, alone or beside an HTTP status
    /// (which Envoy prefers anyway, `HeaderAbortWithHttpAndGrpcStatus`).
    #[test]
    fn grpc_header_is_ignored_with_its_reason() {
        let why = "a gRPC status: out of scope, the lab's proxy speaks HTTP only";
        let f = read(&[(G, "5")]);
        assert_eq!((values(&f), ignored(&f)), (NONE, vec![(G, "5", why)]));
        let f = read(&[(A, "429"), (G, "5")]);
        assert_eq!(values(&f).0, Some(429));
        assert_eq!(ignored(&f), [(G, "5", why)]);
    }

    /// Names match in any case; only the first value counts, even when it is junk; other
    /// headers are not listed.
    #[test]
    fn names_ignore_case_and_the_first_value_wins() {
        let upper = A.to_uppercase();
        let f = read(&[("X-Envoy-Fault-Abort-Request", "429"), (&upper, "503")]);
        let why = "only the first value of a fault header is used";
        assert_eq!(values(&f).0, Some(429));
        assert_eq!(ignored(&f), [(A, "503", why)]);
        assert_eq!(read(&[(D, "abc"), (D, "200")]).delay, None);
        let others = [("x-envoy-fault-abort", "503"), ("accept", "*/*")];
        assert_eq!(read(&others), HeaderFaults::default());
        assert_eq!(read(&[]).decide([0.0; 3]), Decision::default());
    }

    /// Envoy's `FaultDelayHeaderConfig` and `FaultRateLimitHeaderConfig`: 123 is read, "abc" is
    /// not; a delay or a rate of 0 is no fault; any `u64` is a delay.
    #[test]
    fn delay_and_throughput_values() {
        let f = read(&[(D, "123"), (T, "123")]);
        let ms_123 = Some(Duration::from_millis(123));
        assert_eq!(values(&f), (None, ms_123, Some(123)));
        for bad in ["abc", "0"] {
            let f = read(&[(D, bad), (T, bad)]);
            assert_eq!((values(&f), f.ignored.len()), (NONE, 2), "{bad:?}");
        }
        let f = read(&[(D, "18446744073709551615")]);
        assert_eq!(values(&f).1, Some(Duration::from_millis(u64::MAX)));
    }

    /// `SimpleAtoi`: whitespace around and one leading `+` pass; all else is junk; no panics.
    #[test]
    fn values_parse_as_abseil_simple_atoi() {
        for good in [" 503", "503 ", "\t503\r\n", "+503", "0503", "\x0b503\x0c"] {
            assert_eq!(values(&read(&[(A, good)])).0, Some(503), "{good:?}");
        }
        let junk = ["", " ", "+", "+-5", "-0", "5.0", "5e2", "0x1f", "5 5"];
        let more = ["1,2", "\0", "١٢٣", "ü", "99999999999999999999999999999"];
        for value in junk.into_iter().chain(more) {
            let f = read(&[(A, value), (D, value), (T, value), (G, value)]);
            assert_eq!((values(&f), f.ignored.len()), (NONE, 4), "{value:?}");
        }
    }

    /// A hand-computed sequence: delay 200 ms at 25 %, abort 503 at 50 %, 64 KiB/s at 100 %
    /// (no header). A request may get both a delay and an abort (Envoy's `FixedDelayAndAbort`).
    #[test]
    fn draws_to_decisions() {
        let f = read(&[(D, "200"), (DP, "25"), (A, "503"), (AP, "50"), (T, "64")]);
        let sequence = [
            ([0.10, 0.10, 0.00], MS_200, Some(503)),
            ([0.25, 0.49, 0.99], None, Some(503)),
            ([0.24, 0.50, 0.50], MS_200, None),
            ([0.90, 0.90, 0.999], None, None),
            ([0.00, f64::NAN, 0.5], MS_200, None),
        ];
        for (draws, delay, abort) in sequence {
            assert_eq!(got(f.decide(draws)), (delay, abort, Some(64)), "{draws:?}");
        }
    }
}
