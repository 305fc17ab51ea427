//! Real-time scheduling for the lab's timing threads, when the process may have it.
//!
//! A sleeping thread under Linux's normal scheduler (`SCHED_OTHER`) is woken when the kernel
//! gets round to it: on a small shared VM that is 2.5 ms late at the 99th percentile
//! (`cyclictest`, 1 ms interval, measured on the lab's 2-core development machine), far more
//! than the effects the lab shows. The same machine wakes a `SCHED_FIFO` thread 0.14 ms late at
//! p99. So, when the process may (root, or `CAP_SYS_NICE`), the precise timer's thread runs
//! `SCHED_FIFO` at [`TIMER_PRIORITY`] and the tokio workers that its wake-ups hand work to at
//! [`WORKER_PRIORITY`]; otherwise everything stays as before and the run says why.
//!
//! A real-time thread never spins: on 2 cores a spinning `SCHED_FIFO` thread can starve the
//! machine, so a real-time timer ignores `--answer-spin-us`. The kernel's real-time throttling
//! (`sched_rt_runtime_us`, 95% of each second by default) still leaves the rest to others.
//!
//! `E03_REALTIME=off` keeps the normal scheduler on purpose; `auto` (the default) takes
//! real-time scheduling when it is granted. The choice is made once per process.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use thread_priority::{
    set_thread_priority_and_policy, thread_native_id, RealtimeThreadSchedulePolicy, ThreadPriority,
    ThreadPriorityValue, ThreadSchedulePolicy,
};

/// `SCHED_FIFO` priority of a precise timer's thread (as `cyclictest -p 80`).
pub const TIMER_PRIORITY: u8 = 80;
/// `SCHED_FIFO` priority of the tokio workers woken by the timer: below the timer's, so a
/// worker's burst of work never delays the next wake-up.
pub const WORKER_PRIORITY: u8 = 70;

/// The environment variable that turns real-time scheduling off (`off`) or leaves it to the
/// privilege the process has (`auto`, the default).
pub const REALTIME_ENV: &str = "E03_REALTIME";

/// How this process's timing threads are scheduled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scheduling {
    /// `SCHED_FIFO`: the timer at [`TIMER_PRIORITY`], the workers at [`WORKER_PRIORITY`].
    Realtime,
    /// The normal scheduler, and why (`E03_REALTIME=off`, or the error the kernel gave).
    Normal { why: String },
}

impl Scheduling {
    pub fn is_realtime(&self) -> bool {
        matches!(self, Scheduling::Realtime)
    }

    /// One line for a run's output: which scheduling the timers got, and why.
    pub fn describe(&self) -> String {
        match self {
            Scheduling::Realtime => format!(
                "real-time timers (SCHED_FIFO, priority {TIMER_PRIORITY} timer, \
                 {WORKER_PRIORITY} workers)"
            ),
            Scheduling::Normal { why } => {
                format!("normal-scheduler timers (SCHED_OTHER): {why}")
            }
        }
    }

    /// A short name for tables: `SCHED_FIFO` or `SCHED_OTHER`.
    pub fn short(&self) -> &'static str {
        match self {
            Scheduling::Realtime => "SCHED_FIFO",
            Scheduling::Normal { .. } => "SCHED_OTHER",
        }
    }
}

/// A real-time setting that cannot be used, or a thread the system kept off `SCHED_FIFO`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RealtimeError {
    /// `E03_REALTIME` is neither `auto` nor `off`.
    #[error(
        "invalid {env} value {value:?}: expected auto (real-time timers when the process may \
         have them) or off",
        env = REALTIME_ENV
    )]
    Mode { value: String },
    /// A priority outside 1 to 99: the thread-priority crate's reason.
    #[error("{reason}")]
    Priority { priority: u8, reason: String },
    /// The system refused `SCHED_FIFO` (no root, no `CAP_SYS_NICE`): its error, as the
    /// thread-priority crate reports it.
    #[error("{reason}")]
    Refused { reason: String },
}

/// Reads `E03_REALTIME`: `None` (or `auto`) and `off` are accepted; anything else is an error
/// naming the variable.
pub fn parse_mode(value: Option<&str>) -> Result<bool, RealtimeError> {
    match value.map(str::trim) {
        None | Some("") | Some("auto") => Ok(true),
        Some("off") => Ok(false),
        Some(other) => Err(RealtimeError::Mode {
            value: other.to_string(),
        }),
    }
}

/// This process's scheduling, decided once: `E03_REALTIME` (a bad value counts as `off`; a
/// binary checks it with [`parse_mode`] at start), then a probe thread that tries `SCHED_FIFO`.
pub fn scheduling() -> &'static Scheduling {
    static CHOSEN: OnceLock<Scheduling> = OnceLock::new();
    CHOSEN.get_or_init(|| {
        let wanted = parse_mode(std::env::var(REALTIME_ENV).ok().as_deref()).unwrap_or(false);
        if !wanted {
            return Scheduling::Normal {
                why: format!("{REALTIME_ENV}=off"),
            };
        }
        // Probe on a throwaway thread, so the caller's own scheduling is untouched.
        match std::thread::spawn(|| set_current(TIMER_PRIORITY)).join() {
            Ok(Ok(())) => Scheduling::Realtime,
            Ok(Err(e)) => Scheduling::Normal {
                why: format!(
                    "SCHED_FIFO refused ({e}); real-time timers need root or CAP_SYS_NICE"
                ),
            },
            Err(_) => Scheduling::Normal {
                why: "the probe thread failed".into(),
            },
        }
    })
}

/// Puts the calling thread on `SCHED_FIFO` at `priority` (1 to 99).
pub fn set_current(priority: u8) -> Result<(), RealtimeError> {
    let value = ThreadPriorityValue::try_from(priority).map_err(|e| RealtimeError::Priority {
        priority,
        reason: e.to_string(),
    })?;
    set_thread_priority_and_policy(
        thread_native_id(),
        ThreadPriority::Crossplatform(value),
        ThreadSchedulePolicy::Realtime(RealtimeThreadSchedulePolicy::Fifo),
    )
    .map_err(|e| RealtimeError::Refused {
        reason: format!("{e:?}"),
    })
}

/// For `tokio::runtime::Builder::on_thread_start`: a worker takes [`WORKER_PRIORITY`] when the
/// process's timers are real-time, and stays as it is otherwise.
pub fn on_worker_start() {
    if scheduling().is_realtime() {
        let _ = set_current(WORKER_PRIORITY);
    }
}

/// How late a sleeping thread wakes on this machine, at this process's scheduling: the
/// lab's own floor, measured as `cyclictest` does (a thread sleeps `interval` again and again
/// for `duration` and records how late each wake-up came).
#[derive(Debug, Clone, PartialEq)]
pub struct WakeLatency {
    pub scheduling: &'static str,
    pub samples: usize,
    pub p99: Duration,
    pub mean: Duration,
    pub max: Duration,
}

/// Measures [`WakeLatency`] on a thread of its own (at [`TIMER_PRIORITY`] when the process's
/// timers are real-time).
pub fn measure_wake_latency(duration: Duration, interval: Duration) -> WakeLatency {
    let rt = scheduling().is_realtime();
    let late = std::thread::spawn(move || {
        if rt {
            let _ = set_current(TIMER_PRIORITY);
        }
        let end = Instant::now() + duration;
        let mut late = Vec::new();
        let mut next = Instant::now() + interval;
        while next < end {
            std::thread::sleep(next.saturating_duration_since(Instant::now()));
            late.push(Instant::now().saturating_duration_since(next));
            next += interval;
        }
        late
    })
    .join()
    .unwrap_or_default();
    summarize(late, scheduling().short())
}

fn summarize(mut late: Vec<Duration>, scheduling: &'static str) -> WakeLatency {
    late.sort_unstable();
    let n = late.len();
    let at = |q: f64| {
        if n == 0 {
            Duration::ZERO
        } else {
            late[((n as f64 * q).ceil() as usize).clamp(1, n) - 1]
        }
    };
    WakeLatency {
        scheduling,
        samples: n,
        p99: at(0.99),
        mean: if n == 0 {
            Duration::ZERO
        } else {
            late.iter().sum::<Duration>() / n as u32
        },
        max: late.last().copied().unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mode_takes_auto_or_off_and_names_the_variable_otherwise() {
        assert_eq!(parse_mode(None), Ok(true));
        assert_eq!(parse_mode(Some("auto")), Ok(true));
        assert_eq!(parse_mode(Some(" off ")), Ok(false));
        let e = parse_mode(Some("yes")).unwrap_err().to_string();
        assert!(
            e.contains("E03_REALTIME") && e.contains("auto") && e.contains("off"),
            "{e}"
        );
    }

    #[test]
    fn the_99th_percentile_is_a_measured_sample() {
        // 100 samples of 1..=100 µs: p99 is the 99th, the mean 50.5 µs, the max 100 µs.
        let late: Vec<Duration> = (1..=100).rev().map(Duration::from_micros).collect();
        let w = summarize(late, "SCHED_OTHER");
        assert_eq!(w.samples, 100);
        assert_eq!(w.p99, Duration::from_micros(99));
        assert_eq!(w.mean, Duration::from_nanos(50_500));
        assert_eq!(w.max, Duration::from_micros(100));
        assert_eq!(summarize(Vec::new(), "x").p99, Duration::ZERO);
    }

    #[test]
    fn a_measurement_sleeps_for_its_duration_and_is_never_early() {
        let w = measure_wake_latency(Duration::from_millis(50), Duration::from_millis(1));
        // About 49 wake-ups (fewer if the machine is slow to wake the thread).
        assert!((1..=50).contains(&w.samples), "{w:?}");
        assert!(w.max >= w.p99 && w.p99 >= Duration::ZERO);
    }
}
