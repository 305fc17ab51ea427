//! Seeded, portable random streams.
//!
//! All randomness of a run derives from its seed. Each purpose (think times, start offsets,
//! jitter) and each client gets its own stream, so drawing a jitter value never shifts a think
//! time: with the same seed, every strategy's clients think and start at exactly the same
//! moments (common random numbers), and only the strategy differs.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// The RNG type used everywhere in the lab; ChaCha8 is portable and reproducible.
pub type LabRng = ChaCha8Rng;

/// What a stream is used for; part of its seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Think time between a client's operations, and its first start offset.
    Think = 1,
    /// Jitter of retry waits.
    Jitter = 2,
    /// The open loop's arrival times (one stream per run, client 0).
    Arrivals = 3,
    /// A fault proxy's draws (toxicity, jitter, slice sizes): one stream per connection.
    Wire = 4,
    /// A caller's balancer draws (least outstanding's choices): one stream per run, client 0.
    Balancer = 5,
}

/// SplitMix64 finaliser: a good 64-bit mixer, used to derive stream seeds.
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The stream of one purpose for one client under one seed.
pub fn stream(seed: u64, purpose: Stream, client: u32) -> LabRng {
    let key = mix64(mix64(seed) ^ mix64((purpose as u64) << 32 | client as u64));
    LabRng::seed_from_u64(key)
}

/// A uniform value in [0, 1) that is a pure function of its inputs (no state).
pub fn unit_hash(seed: u64, key: u64) -> f64 {
    let bits = mix64(mix64(seed) ^ mix64(key.wrapping_add(0x5151_5151)));
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let a: u64 = stream(42, Stream::Think, 3).random();
        let b: u64 = stream(42, Stream::Think, 3).random();
        let c: u64 = stream(42, Stream::Think, 4).random();
        let d: u64 = stream(42, Stream::Jitter, 3).random();
        let e: u64 = stream(7, Stream::Think, 3).random();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(a, d);
        assert_ne!(a, e);
    }

    #[test]
    fn unit_hash_is_in_range_and_roughly_uniform() {
        let n = 20_000;
        let below_005 = (0..n).filter(|k| unit_hash(42, *k) < 0.05).count();
        assert!((0..n).all(|k| (0.0..1.0).contains(&unit_hash(42, k))));
        // 5% of 20 000 = 1000; allow a generous statistical margin.
        assert!((850..1150).contains(&below_005), "{below_005}");
    }
}
