//! Distinct attempt identities get distinct fault keys, within every range a run can use.
//!
//! The ranges are those `Params` accepts: `E03_CLIENTS` at most 100 000 (clients 0 to 99 999),
//! `E03_MAX_ATTEMPTS` at most 100 (attempts 1 to 100), and operation numbers anywhere in `u32`
//! (a client's operation counter). The last test pins those limits, so raising one without
//! widening the key's fields fails here.

use std::collections::{BTreeMap, HashSet};

use proptest::prelude::*;

use e03_model::faults::{request_key, KEY_ATTEMPT_BITS, KEY_CLIENT_BITS};
use e03_plan::Params;

const MAX_CLIENTS: u32 = 100_000;
const MAX_ATTEMPTS: u32 = 100;

fn id() -> impl Strategy<Value = (u32, u32, u32)> {
    (0..MAX_CLIENTS, any::<u32>(), 1..=MAX_ATTEMPTS)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20_000))]

    #[test]
    fn distinct_identities_have_distinct_keys(a in id(), b in id()) {
        prop_assume!(a != b);
        prop_assert_ne!(request_key(a.0, a.1, a.2), request_key(b.0, b.1, b.2));
    }

    /// Neighbours in each field (the pairs the old XOR mixed up) differ too.
    #[test]
    fn neighbouring_identities_have_distinct_keys(a in id(), which in 0..3usize) {
        let mut b = a;
        match which {
            0 => b.0 = (a.0 + 1) % MAX_CLIENTS,
            1 => b.1 = a.1.wrapping_add(1),
            _ => b.2 = a.2 % MAX_ATTEMPTS + 1,
        }
        prop_assume!(a != b);
        prop_assert_ne!(request_key(a.0, a.1, a.2), request_key(b.0, b.1, b.2));
    }

    /// Any `u32` identity out of range never takes an in-range identity's key.
    #[test]
    fn out_of_range_identities_never_take_an_in_range_key(
        inside in id(),
        client in any::<u32>(),
        op in any::<u32>(),
        attempt in 256u32..,
    ) {
        prop_assert_ne!(
            request_key(inside.0, inside.1, inside.2),
            request_key(client, op, attempt)
        );
        prop_assert_ne!(
            request_key(inside.0, inside.1, inside.2),
            request_key(client | (1 << KEY_CLIENT_BITS), op, attempt % 256)
        );
    }
}

/// Exhaustive over small corners of every field: the low and high ends of each range.
#[test]
fn corners_of_the_ranges_have_distinct_keys() {
    let clients = (0..40).chain(MAX_CLIENTS - 40..MAX_CLIENTS);
    let ops: Vec<u32> = (0..40).chain(u32::MAX - 40..=u32::MAX).collect();
    let attempts: Vec<u32> = (1..=MAX_ATTEMPTS).collect();
    let mut seen = HashSet::new();
    for c in clients {
        for &o in &ops {
            for &a in &attempts {
                assert!(
                    seen.insert(request_key(c, o, a)),
                    "({c}, {o}, {a}) repeats a key"
                );
            }
        }
    }
    assert_eq!(seen.len(), 80 * 81 * 100);
}

#[test]
fn the_parameter_limits_fit_the_key_fields() {
    const { assert!(MAX_CLIENTS - 1 < 1 << KEY_CLIENT_BITS) };
    const { assert!(MAX_ATTEMPTS < 1 << KEY_ATTEMPT_BITS) };
    let parse = |name: &str, value: u32| {
        let raw = BTreeMap::from([(name.to_string(), value.to_string())]);
        Params::from_raw(&raw)
    };
    assert!(parse("E03_CLIENTS", MAX_CLIENTS).is_ok());
    assert!(parse("E03_CLIENTS", MAX_CLIENTS + 1).is_err());
    assert!(parse("E03_MAX_ATTEMPTS", MAX_ATTEMPTS).is_ok());
    assert!(parse("E03_MAX_ATTEMPTS", MAX_ATTEMPTS + 1).is_err());
}
