//! A toxic of the fault proxy's API (`POST /proxies/{proxy}/toxics`: `lab proxy`,
//! docs/wire.md), read by `serde_json` into `e03_model::wire::Toxic` as the proxy does.
//! Invariants: an accepted toxic has a toxicity from 0 to 1 and a name of 1 to 100 visible ASCII
//! characters; it survives the JSON trip; a link with it passes any chunk without a panic,
//! never more bytes than the chunk holds.

use e03_model::rng::{stream, Stream};
use e03_model::wire::{Direction, Link, Pass, Toxic};

/// The target's check of one input: returns, or panics on a finding.
pub fn check(data: &[u8]) {
    let Ok(toxic) = serde_json::from_slice::<Toxic>(data) else {
        return;
    };
    assert!((0.0..=1.0).contains(&toxic.toxicity));
    assert!(!toxic.name.is_empty() && toxic.name.len() <= 100);
    assert!(toxic.name.chars().all(|c| c.is_ascii_graphic()));
    let json = serde_json::to_string(&toxic).unwrap();
    assert_eq!(serde_json::from_str::<Toxic>(&json).unwrap(), toxic);
    let mut rng = stream(1, Stream::Wire, 0);
    for dir in [Direction::Upstream, Direction::Downstream] {
        let mut link = Link::draw(std::slice::from_ref(&toxic), dir, &mut rng);
        for n in [1usize, 1000, 65536] {
            if let Pass::Forward { pieces, .. } = link.pass(n, &mut rng) {
                assert!(pieces.iter().map(|p| p.1).sum::<usize>() <= n);
                assert!(pieces.iter().all(|p| p.1 > 0));
            }
        }
    }
}
