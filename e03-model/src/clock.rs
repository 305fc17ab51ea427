//! A caller's clock offset to a server, NTP style: the caller notes its own wall clock when it
//! sends a request (`sent`) and when the answer comes (`received`); the server answers with its
//! wall clock (`server`). If the way out and the way back took as long, the server read its
//! clock at the caller's `(sent + received) / 2`, so the offset (server minus caller) is
//! `server - (sent + received) / 2`, wrong by at most half the round trip. Of several samples
//! the one with the smallest round trip is kept, as NTP's clock filter keeps the sample of
//! least delay (RFC 5905, section 10, "Clock Filter Algorithm"): its error bound is the
//! tightest. Sans IO: the driver takes the samples.
//!
//! The lab uses it before a run (issue "The lab on an orchestrator", item 2): a swarm and a
//! dependency on two hosts agree on time zero through a wall-clock instant (`start_unix_ms`),
//! and a skew between their clocks would shift the dependency's timeline against the clients'.
//! The swarm sends the dependency time zero on the dependency's own clock.

use serde::{Deserialize, Serialize};

/// One exchange, every time in µs since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockSample {
    /// The caller's clock when it sent the request.
    pub sent_us: u64,
    /// The server's clock in its answer.
    pub server_us: u64,
    /// The caller's clock when the answer came.
    pub received_us: u64,
}

/// The offset kept: the server's clock minus the caller's, in µs, from the sample with the
/// smallest round trip, and that round trip (the offset is right within half of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClockOffset {
    pub offset_us: i64,
    pub rtt_us: u64,
    /// Samples taken (those with a round trip that runs backwards are not counted).
    pub samples: u32,
}

impl ClockOffset {
    /// The caller's wall-clock instant `local_ms` (ms since the epoch) on the server's clock,
    /// to the nearest ms.
    pub fn on_server_ms(&self, local_ms: u64) -> u64 {
        let shifted = i128::from(local_ms) * 1000 + i128::from(self.offset_us);
        // Rounded half up; the epoch's ms are never negative.
        ((shifted + 500).div_euclid(1000)).max(0) as u64
    }

    /// The server's wall-clock instant `server_ms` on the caller's clock, to the nearest ms:
    /// the inverse of [`Self::on_server_ms`] (a shard learns its run's time zero from the
    /// dependency).
    pub fn on_caller_ms(&self, server_ms: u64) -> u64 {
        let shifted = i128::from(server_ms) * 1000 - i128::from(self.offset_us);
        ((shifted + 500).div_euclid(1000)).max(0) as u64
    }
}

/// The offset of the sample with the smallest round trip (the first of equal ones); `None`
/// without a usable sample (none, or only ones whose answer came before they were sent: the
/// caller's clock stepped back).
pub fn best_offset(samples: &[ClockSample]) -> Option<ClockOffset> {
    let usable: Vec<&ClockSample> = samples
        .iter()
        .filter(|s| s.received_us >= s.sent_us)
        .collect();
    let best = usable.iter().min_by_key(|s| s.received_us - s.sent_us)?;
    let middle = (i128::from(best.sent_us) + i128::from(best.received_us)) / 2;
    Some(ClockOffset {
        offset_us: (i128::from(best.server_us) - middle) as i64,
        rtt_us: best.received_us - best.sent_us,
        samples: usable.len() as u32,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(sent_us: u64, server_us: u64, received_us: u64) -> ClockSample {
        ClockSample {
            sent_us,
            server_us,
            received_us,
        }
    }

    /// By hand: round trips 400, 100 and 50 µs; the last is kept: 7000 - (3000 + 3050) / 2 =
    /// 7000 - 3025 = 3975 µs ahead.
    #[test]
    fn the_sample_of_least_round_trip_gives_the_offset() {
        let o = best_offset(&[
            s(1000, 5600, 1400),
            s(2000, 6450, 2100),
            s(3000, 7000, 3050),
        ])
        .unwrap();
        assert_eq!(
            o,
            ClockOffset {
                offset_us: 3975,
                rtt_us: 50,
                samples: 3
            }
        );
        // A server 2.5 ms behind: sent at 12,400, back at 12,600: 10,000 - 12,500.
        let behind = best_offset(&[s(12_400, 10_000, 12_600)]).unwrap();
        assert_eq!((behind.offset_us, behind.rtt_us), (-2_500, 200));
        // Equal round trips: the first.
        let tie = best_offset(&[s(0, 100, 10), s(20, 500, 30)]).unwrap();
        assert_eq!(tie.offset_us, 95);
    }

    #[test]
    fn without_a_usable_sample_there_is_no_offset() {
        assert_eq!(best_offset(&[]), None);
        // The caller's clock stepped back during the exchange.
        assert_eq!(best_offset(&[s(500, 900, 400)]), None);
        assert_eq!(
            best_offset(&[s(500, 900, 400), s(0, 10, 2)])
                .unwrap()
                .samples,
            1
        );
    }

    /// 1,700,000,000,000 ms on the caller is 1,700,000,000,004 ms on a server 3.975 ms ahead
    /// (3975 µs rounds to 4 ms), and 1,699,999,999,998 on one 2.5 ms behind (-2.5 ms rounds
    /// half up, to -2 ms).
    #[test]
    fn a_local_instant_moves_to_the_servers_clock_to_the_nearest_ms() {
        let ahead = ClockOffset {
            offset_us: 3975,
            rtt_us: 50,
            samples: 1,
        };
        assert_eq!(ahead.on_server_ms(1_700_000_000_000), 1_700_000_000_004);
        let behind = ClockOffset {
            offset_us: -2500,
            ..ahead
        };
        assert_eq!(behind.on_server_ms(1_700_000_000_000), 1_699_999_999_998);
        let none = ClockOffset {
            offset_us: 0,
            ..ahead
        };
        assert_eq!(none.on_server_ms(42), 42);
        // Back to the caller's clock: 1,700,000,000,004 - 3.975 = ...000.025 ms, to 000;
        // 1,699,999,999,998 + 2.5 = ...000.5 ms, half up to 001 (within 1 ms both ways).
        assert_eq!(ahead.on_caller_ms(1_700_000_000_004), 1_700_000_000_000);
        assert_eq!(behind.on_caller_ms(1_699_999_999_998), 1_700_000_000_001);
        assert_eq!(none.on_caller_ms(42), 42);
    }
}
