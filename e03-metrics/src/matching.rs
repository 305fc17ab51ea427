//! Matching client attempts to server arrivals in memory that does not grow with the run.
//!
//! Both logs name each attempt by its identity (client, op, attempt). Keeping a map of every
//! identity seen would grow with the number of events, so the two multisets are compared through
//! an invertible Bloom lookup table (IBLT, Goodrich and Mitzenmacher 2011) of fixed size
//! ([`CELLS`] cells, some 40 KiB): a client attempt adds its identity to [`HASHES`] cells, a
//! server arrival subtracts it from the same cells. Every identity seen on both sides cancels out
//! exactly, so at the end the table holds only the *difference* of the two multisets, which is
//! then listed by peeling: a cell holding copies of a single identity gives that identity away,
//! it is subtracted from its other cells, which may free more, and so on.
//!
//! - Up to a few hundred differing identities (about 80% of the cells per hash) are recovered
//!   exactly, so the counts of unmatched attempts and arrivals are exact.
//! - Beyond that the peeling gets stuck; the counts reported are then lower bounds (the net
//!   difference of the residue, and at least one on each side when it nets to zero), which still
//!   say that the logs disagree.
//! - False matches: a residue that is not empty could read as empty only if, in every cell, the
//!   64-bit checksums (a strong mix of each identity) summed to exactly zero by accident: a
//!   probability about 2^-64 per run. A stuck cell taken for a single identity needs the same kind
//!   of accident (its checksum sum equal to the count times that identity's checksum). Both are
//!   astronomically small and can only make the report *more* lenient by a few attempts.

/// Cells per hash function (each identity goes to one cell of each of the [`HASHES`] parts).
const PART: usize = 443;
/// Hash functions, each over its own part of the table.
const HASHES: usize = 3;
/// Cells in the table.
pub(crate) const CELLS: usize = PART * HASHES;

/// An attempt's identity packed into 96 bits: client, op, attempt.
fn key(client: u32, op: u32, attempt: u32) -> i128 {
    ((client as i128) << 64) | ((op as i128) << 32) | attempt as i128
}

/// SplitMix64's finaliser: a bijective, well-mixed 64-bit hash.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A 64-bit hash of a key, salted: salt 0 is the checksum, 1..=HASHES pick the cells.
fn hash(k: i128, salt: u64) -> u64 {
    let (hi, lo) = ((k >> 64) as u64, k as u64);
    mix(mix(lo ^ salt.wrapping_mul(0x9e37_79b9_7f4a_7c15)) ^ hi.rotate_left(17) ^ salt)
}

fn cells_of(k: i128) -> [usize; HASHES] {
    std::array::from_fn(|i| i * PART + (hash(k, i as u64 + 1) % PART as u64) as usize)
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Cell {
    /// Client copies minus server copies of the identities in the cell.
    count: i64,
    /// Sum of their keys, each times its count (wrapping; exact for a single identity).
    keys: i128,
    /// Sum of their checksums, each times its count (wrapping).
    checks: u64,
}

impl Cell {
    fn add(&mut self, k: i128, n: i64) {
        self.count = self.count.wrapping_add(n);
        self.keys = self.keys.wrapping_add(k.wrapping_mul(n as i128));
        self.checks = self.checks.wrapping_add(hash(k, 0).wrapping_mul(n as u64));
    }

    fn is_empty(&self) -> bool {
        *self == Cell::default()
    }

    /// The single identity (and its count) the cell holds, if it holds only one.
    fn pure(&self, index: usize) -> Option<(i128, i64)> {
        let n = self.count;
        if n == 0 || self.keys.wrapping_rem(n as i128) != 0 {
            return None;
        }
        let k = self.keys / n as i128;
        let fits = (0..1i128 << 96).contains(&k);
        (fits && self.checks == hash(k, 0).wrapping_mul(n as u64) && cells_of(k).contains(&index))
            .then_some((k, n))
    }
}

/// The difference of the multisets of identities on the two sides, in fixed memory.
#[derive(Debug, Clone)]
pub(crate) struct IdentitySketch {
    cells: Box<[Cell; CELLS]>,
}

/// What the sketch recovered: identities seen only on one side, with their copies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Difference {
    /// Client attempts with no server arrival of the same identity.
    pub client_only: u64,
    /// Server arrivals (with identity) with no client attempt of the same identity.
    pub server_only: u64,
    /// False when the peeling got stuck: the figures are then lower bounds.
    pub exact: bool,
}

impl Default for IdentitySketch {
    fn default() -> Self {
        IdentitySketch {
            cells: Box::new([Cell::default(); CELLS]),
        }
    }
}

impl IdentitySketch {
    fn add(&mut self, k: i128, n: i64) {
        for i in cells_of(k) {
            self.cells[i].add(k, n);
        }
    }

    pub(crate) fn client(&mut self, client: u32, op: u32, attempt: u32) {
        self.add(key(client, op, attempt), 1);
    }

    pub(crate) fn server(&mut self, client: u32, op: u32, attempt: u32) {
        self.add(key(client, op, attempt), -1);
    }

    /// Lists the difference by peeling (consumes the sketch).
    pub(crate) fn difference(mut self) -> Difference {
        let mut d = Difference {
            exact: true,
            ..Difference::default()
        };
        let mut stack: Vec<usize> = (0..CELLS).collect();
        while let Some(i) = stack.pop() {
            let Some((k, n)) = self.cells[i].pure(i) else {
                continue;
            };
            if n > 0 {
                d.client_only += n as u64;
            } else {
                d.server_only += n.unsigned_abs();
            }
            self.add(k, -n);
            stack.extend(cells_of(k));
        }
        if self.cells.iter().all(Cell::is_empty) {
            return d;
        }
        // Stuck: each identity left is counted once in each part, so one part's counts sum to
        // the net number of client copies left.
        let net: i64 = self.cells[..PART].iter().map(|c| c.count).sum();
        let (c, s) = match net {
            0 => (1, 1),
            n if n > 0 => (n as u64, 0),
            n => (0, n.unsigned_abs()),
        };
        Difference {
            client_only: d.client_only + c,
            server_only: d.server_only + s,
            exact: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_multisets_leave_no_difference_whatever_the_order() {
        let mut s = IdentitySketch::default();
        for i in 0..50_000u32 {
            s.client(i % 97, i / 97, 1 + i % 3);
        }
        for i in (0..50_000u32).rev() {
            s.server(i % 97, i / 97, 1 + i % 3);
        }
        assert_eq!(
            s.difference(),
            Difference {
                client_only: 0,
                server_only: 0,
                exact: true
            }
        );
    }

    #[test]
    fn a_few_hundred_differences_are_listed_exactly() {
        let mut s = IdentitySketch::default();
        for i in 0..100_000u32 {
            s.client(i, 7, 1);
            // 200 arrivals missing; 150 arrivals that no client sent; one identity twice.
            if i % 500 != 0 {
                s.server(i, 7, 1);
            }
        }
        for i in 0..150u32 {
            s.server(u32::MAX - i, u32::MAX, u32::MAX);
        }
        s.server(3, 7, 1);
        assert_eq!(
            s.difference(),
            Difference {
                client_only: 200,
                server_only: 151,
                exact: true
            }
        );
    }

    #[test]
    fn too_many_differences_give_lower_bounds_that_still_disagree() {
        let mut s = IdentitySketch::default();
        for i in 0..5_000u32 {
            s.client(i, 0, 1);
            s.server(i, 1, 1);
        }
        let d = s.difference();
        assert!(!d.exact);
        assert!(d.client_only >= 1 && d.server_only >= 1, "{d:?}");
        assert!(d.client_only <= 5_000 && d.server_only <= 5_000, "{d:?}");
    }
}
