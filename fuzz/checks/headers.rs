//! The identity headers of an attempt (`x-e03-client`, `x-e03-op`, `x-e03-attempt`, the
//! caller's deadline `x-e03-deadline-ms` and its class `x-e03-priority`:
//! `dependency_service::Identity::from_headers`) and the
//! hop's request and deadline headers (`dependency_service::hop::call_headers`; the request
//! number falls back to `x-e03-op`, which the top caller sends).
//! Input: lines; each line's first byte picks a header, the rest is its value (repeats kept).
//! Invariants: a value read is the header's trimmed value as a number (the class: as one of
//! its two names, critical when absent); malformed exactly when a present header is not one; a
//! full, well-formed identity has a fault key.

use dependency_service::hop::call_headers;
use dependency_service::Identity;
use e03_model::chain::{DEADLINE_HEADER, REQUEST_HEADER};
use e03_model::events::{HEADER_ATTEMPT, HEADER_CLIENT, HEADER_OP};
use e03_model::priority::{Priority, PRIORITY_HEADER};
use http::{HeaderMap, HeaderName, HeaderValue};

const NAMES: [&str; 6] = [
    HEADER_CLIENT,
    HEADER_OP,
    HEADER_ATTEMPT,
    REQUEST_HEADER,
    DEADLINE_HEADER,
    PRIORITY_HEADER,
];

/// The first value of `name`, trimmed and read as a number as the lab must read it.
fn first<T: std::str::FromStr>(h: &HeaderMap, name: &str) -> Option<Option<T>> {
    h.get(name)
        .map(|v| v.to_str().ok().and_then(|s| s.trim().parse::<T>().ok()))
}

/// The target's check of one input: returns, or panics on a finding.
pub fn check(data: &[u8]) {
    let mut h = HeaderMap::new();
    for line in data.split(|b| *b == b'\n').take(16) {
        let Some((&pick, value)) = line.split_first() else {
            continue;
        };
        let name = HeaderName::from_static(NAMES[pick as usize % NAMES.len()]);
        if let Ok(value) = HeaderValue::from_bytes(value) {
            h.append(name, value);
        }
    }
    let id = Identity::from_headers(&h);
    let (c, o, a) = (
        first::<u32>(&h, HEADER_CLIENT),
        first::<u32>(&h, HEADER_OP),
        first::<u32>(&h, HEADER_ATTEMPT),
    );
    assert_eq!(id.client, c.flatten());
    assert_eq!(id.op, o.flatten());
    assert_eq!(id.attempt, a.flatten());
    let (r, d) = (
        first::<u64>(&h, REQUEST_HEADER),
        first::<u64>(&h, DEADLINE_HEADER),
    );
    // A hop's request number: its own header, else the top caller's operation header.
    let r = r.or_else(|| first::<u64>(&h, HEADER_OP));
    assert_eq!(id.deadline_ms, d.flatten());
    let p = h
        .get(PRIORITY_HEADER)
        .map(|v| v.to_str().ok().and_then(|s| Priority::parse(s.trim())));
    assert_eq!(id.class, p.flatten().unwrap_or_default());
    let malformed = [c, o, a].iter().any(|v| matches!(v, Some(None)))
        || matches!(d, Some(None))
        || matches!(p, Some(None));
    assert_eq!(id.malformed, malformed);
    assert_eq!(
        id.fault_key().is_some(),
        id.client.is_some() && id.op.is_some() && id.attempt.is_some()
    );
    match call_headers(&h) {
        Ok((req, deadline)) => {
            assert_eq!(req, r.flatten().unwrap_or(0));
            assert_eq!(deadline, d.flatten());
        }
        Err(e) => {
            assert!(matches!(r, Some(None)) || matches!(d, Some(None)), "{e}");
            assert!(e.to_string().contains("header x-e03-"), "{e}");
        }
    }
}
