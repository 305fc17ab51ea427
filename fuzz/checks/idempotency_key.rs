//! A charge's `Idempotency-Key` headers and body (`POST /charge`:
//! `dependency_service::charge_request`).
//! Input: the first byte is how many key headers (0 to 2); that many lines are their values;
//! the rest is the body.
//! Invariants: an accepted key is well formed (`e03_model::ledger::valid_key`) and is the one
//! sent; an accepted amount is within range; a refusal is 400 or 422.

use dependency_service::{charge_request, Identity, MAX_AMOUNT};
use e03_model::ledger::{valid_key, IDEMPOTENCY_KEY};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};

/// The target's check of one input: returns, or panics on a finding.
pub fn check(data: &[u8]) {
    let Some((&count, mut rest)) = data.split_first() else {
        return;
    };
    let mut h = HeaderMap::new();
    let mut sent = Vec::new();
    for _ in 0..count % 3 {
        let (line, after) = match rest.iter().position(|b| *b == b'\n') {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, &rest[rest.len()..]),
        };
        rest = after;
        if let Ok(v) = HeaderValue::from_bytes(line) {
            h.append(HeaderName::from_static(IDEMPOTENCY_KEY), v);
            sent.push(line.to_vec());
        }
    }
    let id = Identity::default();
    match charge_request(&h, rest, &id) {
        Ok(req) => {
            match &req.key {
                None => assert!(sent.is_empty()),
                Some(key) => {
                    assert_eq!(sent.len(), 1);
                    assert_eq!(key.as_bytes(), &sent[0][..]);
                    assert!(valid_key(key.as_bytes()));
                }
            }
            assert!((1..=MAX_AMOUNT).contains(&req.amount));
        }
        Err((code, message)) => {
            assert!(
                code == StatusCode::BAD_REQUEST || code == StatusCode::UNPROCESSABLE_ENTITY,
                "{code} {message}"
            );
        }
    }
}
