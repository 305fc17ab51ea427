//! Progress of `lab simulate` on stderr while it computes: once a second, the simulated runs
//! finished out of those queued, the time spent and an estimate of the time left. A bar on a
//! terminal, plain lines otherwise; `E03_PROGRESS` (auto, bar, lines, off) chooses, as for the
//! swarm (whose own progress `lab run` shows: the swarm child writes to the lab's stderr).
//! Nothing is shown for work that ends within the first second.

use std::io::IsTerminal;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use e03_io::progress::ProgressMode;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use simulator::run::{JOBS_DONE, JOBS_QUEUED};

/// The mode from `E03_PROGRESS`; `Err` names the variable and what it accepts.
pub fn mode_from_env() -> Result<ProgressMode, String> {
    std::env::var("E03_PROGRESS").map_or(Ok(ProgressMode::Auto), |v| {
        v.parse::<ProgressMode>().map_err(|e| {
            e.to_string()
                .replace("--progress (E03_PROGRESS)", "E03_PROGRESS")
        })
    })
}

/// The line for `done` of `total` runs after `spent`.
pub fn line(label: &str, done: usize, total: usize, spent: Duration) -> String {
    let left = if done == 0 || done >= total {
        String::new()
    } else {
        let per = spent.as_secs_f64() / done as f64;
        format!(", about {:.0} s left", per * (total - done) as f64)
    };
    format!(
        "progress {label}: {done}/{total} simulated runs in {:.0} s{left}",
        spent.as_secs_f64()
    )
}

/// Runs `f`, showing the simulator's progress (its job counters) while it runs.
pub fn watch<T>(mode: ProgressMode, label: &str, f: impl FnOnce() -> T) -> T {
    let bar = match mode {
        ProgressMode::Off => return f(),
        ProgressMode::Bar => true,
        ProgressMode::Lines => false,
        ProgressMode::Auto => std::io::stderr().is_terminal(),
    };
    let base_queued = JOBS_QUEUED.load(Ordering::Relaxed);
    let base_done = JOBS_DONE.load(Ordering::Relaxed);
    let (finished, wait) = mpsc::channel::<()>();
    std::thread::scope(|s| {
        s.spawn(move || {
            let began = Instant::now();
            let mut shown: Option<ProgressBar> = None;
            while let Err(mpsc::RecvTimeoutError::Timeout) =
                wait.recv_timeout(Duration::from_secs(1))
            {
                let total = JOBS_QUEUED.load(Ordering::Relaxed) - base_queued;
                let done = JOBS_DONE.load(Ordering::Relaxed) - base_done;
                let text = line(label, done, total, began.elapsed());
                if !bar {
                    eprintln!("{text}");
                    continue;
                }
                let pb = shown.get_or_insert_with(|| {
                    let pb = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
                    pb.set_style(
                        ProgressStyle::with_template("{prefix} [{bar:30}] {msg}")
                            .expect("a valid template")
                            .progress_chars("=> "),
                    );
                    pb.set_prefix(format!("simulate {label}"));
                    pb
                });
                pb.set_length(total as u64);
                pb.set_position(done as u64);
                pb.set_message(
                    text.split_once(": ")
                        .map_or(text.clone(), |(_, m)| m.into()),
                );
            }
            if let Some(pb) = shown {
                pb.finish_and_clear();
            }
        });
        let out = f();
        drop(finished);
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_counts_runs_and_estimates_what_is_left() {
        assert_eq!(
            line("e03b sweep", 100, 400, Duration::from_secs(2)),
            "progress e03b sweep: 100/400 simulated runs in 2 s, about 6 s left"
        );
        assert_eq!(
            line("e03b", 0, 8, Duration::from_secs(1)),
            "progress e03b: 0/8 simulated runs in 1 s"
        );
        assert_eq!(
            line("e03b", 8, 8, Duration::from_secs(3)),
            "progress e03b: 8/8 simulated runs in 3 s"
        );
    }

    #[test]
    fn off_runs_the_work_and_shows_nothing() {
        assert_eq!(watch(ProgressMode::Off, "x", || 41 + 1), 42);
        assert_eq!(watch(ProgressMode::Lines, "x", || 7), 7);
    }
}
