//! Progress of a running swarm on stderr, once a second: elapsed and remaining time, operations,
//! attempts, the share of 503 and 429 answers in the last second, and the timeline's phase.
//!
//! ```text
//! progress e03b seed 42: 12.0 s of 30.0 s (18.0 s left) | 2,345 ops | 2,890 attempts (312/s) | 503 41.0% | 429 0.0% | phase frozen
//! ```
//!
//! `--progress` / `E03_PROGRESS` chooses how: `auto` (the default: a bar when stderr is a
//! terminal, plain lines otherwise, as in compose), `bar`, `lines` or `off`. The bar is drawn by
//! `indicatif`.
//!
//! Cost on the hot path: two relaxed atomic additions after an attempt ended, one after an
//! operation ended; never between a timer's wake-up and the send. The line is written by a
//! task of its own on a one-second tokio interval.

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use e03_model::timeline::Timeline;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio::task::JoinHandle;
use tokio::time::Instant;

pub use e03_io::progress::ProgressMode;

static MODE: OnceLock<ProgressMode> = OnceLock::new();

/// Sets the process's progress mode (once; later calls are ignored).
pub fn set_mode(mode: ProgressMode) {
    let _ = MODE.set(mode);
}

/// The counts behind the progress line, over the swarm's current run (every strategy).
#[derive(Debug, Default)]
pub struct Counts {
    operations: AtomicU64,
    attempts: AtomicU64,
    status_503: AtomicU64,
    status_429: AtomicU64,
}

/// One reading of [`Counts`].
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Snapshot {
    pub operations: u64,
    pub attempts: u64,
    pub status_503: u64,
    pub status_429: u64,
}

impl Counts {
    fn snapshot(&self) -> Snapshot {
        Snapshot {
            operations: self.operations.load(Ordering::Relaxed),
            attempts: self.attempts.load(Ordering::Relaxed),
            status_503: self.status_503.load(Ordering::Relaxed),
            status_429: self.status_429.load(Ordering::Relaxed),
        }
    }

    fn attempt_ended(&self, status: Option<u16>) {
        self.attempts.fetch_add(1, Ordering::Relaxed);
        match status {
            Some(503) => {
                self.status_503.fetch_add(1, Ordering::Relaxed);
            }
            Some(429) => {
                self.status_429.fetch_add(1, Ordering::Relaxed);
            }
            _ => {}
        }
    }

    fn reset(&self) {
        for c in [
            &self.operations,
            &self.attempts,
            &self.status_503,
            &self.status_429,
        ] {
            c.store(0, Ordering::Relaxed);
        }
    }
}

static COUNTS: Counts = Counts {
    operations: AtomicU64::new(0),
    attempts: AtomicU64::new(0),
    status_503: AtomicU64::new(0),
    status_429: AtomicU64::new(0),
};

/// A sent attempt ended, with `status` if an answer came.
pub fn attempt_ended(status: Option<u16>) {
    COUNTS.attempt_ended(status);
}

/// An operation ended (whatever its outcome).
pub fn operation_ended() {
    COUNTS.operations.fetch_add(1, Ordering::Relaxed);
}

/// What one progress line is about.
#[derive(Debug, Clone)]
pub struct RunInfo {
    /// `e03b seed 42`
    pub label: String,
    /// The run's traffic duration.
    pub duration: Duration,
    pub timeline: Timeline,
}

/// The progress line at `elapsed` since time zero, with `now` and `prev` the counts now and a
/// second ago.
pub fn line(info: &RunInfo, elapsed: Duration, now: Snapshot, prev: Snapshot) -> String {
    let total = info.duration.as_secs_f64();
    let at = elapsed.as_secs_f64().min(total);
    let mut s = format!(
        "progress {}: {at:.1} s of {total:.1} s ({:.1} s left) | {} ops | {} attempts ({}/s)",
        info.label,
        total - at,
        thousands(now.operations),
        thousands(now.attempts),
        now.attempts.saturating_sub(prev.attempts),
    );
    let answered = now.attempts.saturating_sub(prev.attempts);
    let share = |n: u64, p: u64| {
        if answered == 0 {
            0.0
        } else {
            100.0 * n.saturating_sub(p) as f64 / answered as f64
        }
    };
    let _ = write!(
        s,
        " | 503 {:.1}% | 429 {:.1}% | phase {}",
        share(now.status_503, prev.status_503),
        share(now.status_429, prev.status_429),
        info.timeline.phase_name(elapsed),
    );
    s
}

/// `12345` as `12,345`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The progress display of one run; [`Ticker::finish`] ends it.
pub struct Ticker {
    task: JoinHandle<()>,
    bar: Option<ProgressBar>,
}

impl Ticker {
    /// Starts showing progress of the run whose time zero is `t0` (resets the counts), unless
    /// the mode is `off`.
    pub fn start(info: RunInfo, t0: Instant) -> Option<Ticker> {
        let mode = *MODE.get().unwrap_or(&ProgressMode::Auto);
        let bar = match mode {
            ProgressMode::Off => return None,
            ProgressMode::Bar => true,
            ProgressMode::Lines => false,
            ProgressMode::Auto => std::io::stderr().is_terminal(),
        };
        COUNTS.reset();
        let bar = bar.then(|| {
            let total_ms = info.duration.as_millis() as u64;
            let pb = ProgressBar::with_draw_target(Some(total_ms), ProgressDrawTarget::stderr());
            let style = ProgressStyle::with_template("{prefix} [{bar:30}] {msg}")
                .expect("a valid template")
                .progress_chars("=> ");
            pb.set_style(style);
            pb.set_prefix(info.label.clone());
            pb
        });
        let shown = bar.clone();
        let task = tokio::spawn(async move {
            let mut tick =
                tokio::time::interval_at(t0 + Duration::from_secs(1), Duration::from_secs(1));
            let mut prev = Snapshot::default();
            loop {
                tick.tick().await;
                let elapsed = Instant::now().saturating_duration_since(t0);
                let now = COUNTS.snapshot();
                let text = line(&info, elapsed, now, prev);
                prev = now;
                match &shown {
                    Some(pb) => {
                        pb.set_position(elapsed.as_millis() as u64);
                        let msg = text.split_once(": ").map_or(text.as_str(), |(_, m)| m);
                        pb.set_message(msg.to_string());
                    }
                    None => eprintln!("{text}"),
                }
                if elapsed >= info.duration {
                    break;
                }
            }
        });
        Some(Ticker { task, bar })
    }

    /// Stops the display (the bar is cleared; the run's summary line follows it).
    pub fn finish(self) {
        self.task.abort();
        if let Some(pb) = self.bar {
            pb.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use e03_model::timeline::FreezeWindow;

    #[test]
    fn modes_parse_and_bad_ones_name_the_flag() {
        assert_eq!("auto".parse::<ProgressMode>(), Ok(ProgressMode::Auto));
        assert_eq!("".parse::<ProgressMode>(), Ok(ProgressMode::Auto));
        assert_eq!("bar".parse::<ProgressMode>(), Ok(ProgressMode::Bar));
        assert_eq!("lines".parse::<ProgressMode>(), Ok(ProgressMode::Lines));
        assert_eq!("off".parse::<ProgressMode>(), Ok(ProgressMode::Off));
        let e = "loud".parse::<ProgressMode>().unwrap_err().to_string();
        assert!(e.contains("--progress (E03_PROGRESS) \"loud\""), "{e}");
        assert!(e.contains("auto, bar, lines or off"), "{e}");
    }

    #[test]
    fn the_line_shows_time_counts_last_second_shares_and_phase() {
        let info = RunInfo {
            label: "e03b seed 42".into(),
            duration: Duration::from_secs(30),
            timeline: Timeline {
                freeze: Some(FreezeWindow {
                    start: Duration::from_millis(8500),
                    end: Duration::from_secs(10),
                }),
                ..Timeline::default()
            },
        };
        let prev = Snapshot {
            operations: 2000,
            attempts: 2578,
            status_503: 10,
            status_429: 0,
        };
        let now = Snapshot {
            operations: 2345,
            attempts: 2890,
            status_503: 138,
            status_429: 0,
        };
        let l = line(&info, Duration::from_secs(9), now, prev);
        assert_eq!(
            l,
            "progress e03b seed 42: 9.0 s of 30.0 s (21.0 s left) | 2,345 ops | 2,890 attempts \
             (312/s) | 503 41.0% | 429 0.0% | phase frozen"
        );
        // Past the end the clock stops at the duration, and no answer means no share.
        let l = line(&info, Duration::from_secs(31), now, now);
        assert!(
            l.contains("30.0 s of 30.0 s (0.0 s left)") && l.contains("503 0.0%"),
            "{l}"
        );
        assert!(l.ends_with("phase normal"), "{l}");
    }

    #[test]
    fn counts_record_attempts_answers_and_operations() {
        let c = Counts::default();
        for status in [Some(200), Some(503), Some(503), Some(429), None] {
            c.attempt_ended(status);
        }
        c.operations.fetch_add(2, Ordering::Relaxed);
        assert_eq!(
            c.snapshot(),
            Snapshot {
                operations: 2,
                attempts: 5,
                status_503: 2,
                status_429: 1,
            }
        );
        c.reset();
        assert_eq!(c.snapshot(), Snapshot::default());
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
    }
}
