//! A run's seed list as `E03_SEEDS` writes it (`42,7,1-3`): parsed into seeds, at most
//! [`MAX_SEEDS`], no repeats, and a reversed range found to name it in the error.

/// Most seeds in one run (as `E03_SEEDS` accepts).
pub(super) const MAX_SEEDS: usize = 10_000;

/// The first range `a-b` of a seed list with `a > b`.
pub(super) fn reversed_range(list: &str) -> Option<(u64, u64)> {
    list.split(',').find_map(|part| {
        let (a, b) = part.trim().split_once('-')?;
        let (a, b) = (a.trim().parse::<u64>().ok()?, b.trim().parse::<u64>().ok()?);
        (a > b).then_some((a, b))
    })
}

/// `42,7,1-3` into `[42, 7, 1, 2, 3]`; `None` if malformed, empty, repeated or too long.
pub fn parse_seeds(list: &str) -> Option<Vec<u64>> {
    let mut seeds = Vec::new();
    for part in list.split(',').map(str::trim) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (a.trim().parse::<u64>().ok()?, b.trim().parse::<u64>().ok()?);
                if b < a || b - a >= 10_000 {
                    return None;
                }
                seeds.extend(a..=b);
            }
            None => seeds.push(part.parse::<u64>().ok()?),
        }
        if seeds.len() > MAX_SEEDS {
            return None;
        }
    }
    let mut sorted = seeds.clone();
    sorted.sort_unstable();
    sorted.dedup();
    (sorted.len() == seeds.len() && !seeds.is_empty()).then_some(seeds)
}

#[cfg(test)]
mod tests {
    use crate::params::{raw, Params};

    #[test]
    fn a_reversed_seed_range_is_named() {
        let e = Params::from_raw(&raw(&[("E03_SEEDS", "100-1")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("100-1 is reversed (1-100?)"), "{e}");
    }
}
