//! The swarm's identity of an attempt, read from the `x-e03-*` request headers.
//!
//! All three present and valid: the attempt's fault key is
//! [`e03_model::faults::request_key`], so its E03-A fate is the same live and simulated. None
//! present (any other HTTP client): the service's arrival number is used instead. A header that
//! is present but not a whole number is malformed: the arrival is logged, then answered 400.
//! The same for the caller's deadline ([`DEADLINE_HEADER`], whole ms), which deadline-aware
//! admission reads, and for its class ([`PRIORITY_HEADER`]: `critical` or `best_effort`;
//! absent: critical), which priority admission reads.

use axum::http::HeaderMap;
use e03_model::chain::DEADLINE_HEADER;
use e03_model::events::{HEADER_ATTEMPT, HEADER_CLIENT, HEADER_OP};
use e03_model::faults::request_key;
use e03_model::priority::{Priority, PRIORITY_HEADER};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Identity {
    pub client: Option<u32>,
    pub op: Option<u32>,
    pub attempt: Option<u32>,
    /// Some identity header was present but not a whole number from 0 to 4294967295.
    pub malformed: bool,
    /// How long its caller waits for it, in whole ms ([`DEADLINE_HEADER`]: the attempt's
    /// timeout); `None` if it did not say. A malformed value counts in `malformed`.
    pub deadline_ms: Option<u64>,
    /// Its class ([`PRIORITY_HEADER`]); critical if it did not say. A value other than
    /// `critical` or `best_effort` counts in `malformed`.
    pub class: Priority,
}

impl Identity {
    pub fn from_headers(headers: &HeaderMap) -> Identity {
        let mut malformed = false;
        let (client, op, attempt) = (
            whole(headers, HEADER_CLIENT, &mut malformed),
            whole(headers, HEADER_OP, &mut malformed),
            whole(headers, HEADER_ATTEMPT, &mut malformed),
        );
        let deadline_ms = whole(headers, DEADLINE_HEADER, &mut malformed);
        let class = match headers.get(PRIORITY_HEADER) {
            None => Priority::Critical,
            Some(v) => match v.to_str().ok().and_then(|v| Priority::parse(v.trim())) {
                Some(class) => class,
                None => {
                    malformed = true;
                    Priority::Critical
                }
            },
        };
        Identity {
            client,
            op,
            attempt,
            malformed,
            deadline_ms,
            class,
        }
    }

    /// The fault key, when the request carried its full identity.
    pub fn fault_key(&self) -> Option<u64> {
        Some(request_key(self.client?, self.op?, self.attempt?))
    }
}

/// Header `name` as a whole number, if present; a value that is not one sets `malformed`.
fn whole<T: std::str::FromStr>(headers: &HeaderMap, name: &str, malformed: &mut bool) -> Option<T> {
    let value = headers.get(name)?;
    let parsed = value.to_str().ok().and_then(|v| v.trim().parse::<T>().ok());
    *malformed |= parsed.is_none();
    parsed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn full_identity_gives_the_cores_fault_key() {
        let id = Identity::from_headers(&headers(&[
            (HEADER_CLIENT, "7"),
            (HEADER_OP, "3"),
            (HEADER_ATTEMPT, "2"),
        ]));
        assert!(!id.malformed);
        assert_eq!(id.fault_key(), Some(request_key(7, 3, 2)));
    }

    #[test]
    fn partial_identity_has_no_key_and_bad_values_are_malformed() {
        let id = Identity::from_headers(&headers(&[(HEADER_CLIENT, "7")]));
        assert_eq!(
            (id.client, id.fault_key(), id.malformed),
            (Some(7), None, false)
        );
        let id = Identity::from_headers(&headers(&[(HEADER_OP, "-1"), (HEADER_CLIENT, "1")]));
        assert!(id.malformed);
        assert_eq!(id.client, Some(1));
        assert_eq!(
            Identity::from_headers(&HeaderMap::new()),
            Identity::default()
        );
    }

    #[test]
    fn the_deadline_header_is_read_in_whole_ms_and_a_bad_one_is_malformed() {
        let id = Identity::from_headers(&headers(&[(DEADLINE_HEADER, "1500")]));
        assert_eq!((id.deadline_ms, id.malformed), (Some(1500), false));
        for bad in ["1.5", "-1", "soon"] {
            let id = Identity::from_headers(&headers(&[(DEADLINE_HEADER, bad)]));
            assert_eq!((id.deadline_ms, id.malformed), (None, true), "{bad}");
        }
        assert_eq!(Identity::from_headers(&HeaderMap::new()).deadline_ms, None);
    }

    #[test]
    fn the_priority_header_names_a_class_and_anything_else_is_malformed() {
        let class = |v| Identity::from_headers(&headers(&[(PRIORITY_HEADER, v)]));
        assert_eq!(class("best_effort").class, Priority::BestEffort);
        assert_eq!(class(" critical ").class, Priority::Critical);
        assert!(!class("best_effort").malformed);
        for bad in ["low", "best-effort", ""] {
            assert!(class(bad).malformed, "{bad}");
        }
        assert_eq!(
            Identity::from_headers(&HeaderMap::new()).class,
            Priority::Critical
        );
    }
}
