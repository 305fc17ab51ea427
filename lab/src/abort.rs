//! `abort_after_s`: a live run stopped once a threshold's breach has lasted that long (k6's
//! `abortOnFail` with a delay, grafana/k6 #1737), judged while the run goes on.
//!
//! A thread of the lab follows the swarm's client logs as they are written (the
//! `client-<strategy>-seed<N>*.jsonl` of each scenario folder, read from where it stopped every
//! 200 ms; the logs' writer flushes whenever it is idle) and reads each `operation` record. It
//! judges each threshold with `abort_after_s` on the operations that *ended* in each 1 s window
//! of the run's clock (time zero: the run's start), once the window has closed (an operation
//! ended after it):
//!
//! - `success_affected`: the share of those operations that succeeded;
//! - `p99_ms`: their 99th percentile latency, nearest rank.
//!
//! A window in which no operation ended gives no figure: it neither breaks a breach nor lasts
//! it. Once `ceil(abort_after_s)` windows in a row (at least one) break the bound, the lab stops
//! the run as Ctrl-C does (the same flag: the swarm, then the dependencies, get SIGTERM, every
//! log is kept and ends `complete: false`), the analysis marks it incomplete, `ABORTED.txt` in
//! the scenario's folder names the threshold, and `lab run` exits 99 naming the threshold, its
//! bound and the value measured.

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use e03_model::events::{Event, Outcome};
use e03_plan::checks::CheckMetric;
use e03_plan::thresholds::ThresholdSpec;

use crate::args::RunPlan;

/// Window of the live judgement, µs.
const WINDOW_US: u64 = 1_000_000;
/// How often the logs are read.
const POLL: Duration = Duration::from_millis(200);

/// A breach that stopped the run.
#[derive(Debug, Clone, PartialEq)]
pub struct Breach {
    pub scenario: String,
    pub threshold: String,
    pub bound: String,
    pub seed: u64,
    /// The figure of the last window, as printed.
    pub measured: String,
    /// The end of the last breaking window, in s of the run's clock.
    pub window_end_s: u64,
    pub windows: u64,
}

impl Breach {
    pub fn line(&self) -> String {
        format!(
            "run aborted by threshold {}: bound {}, measured {} in the 1 s window ending at {} s \
             (seed {}), broken {} window(s) in a row",
            self.threshold, self.bound, self.measured, self.window_end_s, self.seed, self.windows
        )
    }
}

/// One operation record: start, end (µs since time zero), success.
type Op = (u64, u64, bool);

/// One threshold's judgement of one run (strategy, seed): the next window to judge and the
/// breaking windows in a row.
#[derive(Debug, Default, Clone)]
struct Streak {
    next_window: u64,
    broken: u64,
}

/// The figure of a window for a followed metric (`None`: no operation ended in it).
fn window_figure(metric: &CheckMetric, ops: &[Op]) -> Option<f64> {
    if ops.is_empty() {
        return None;
    }
    match metric {
        CheckMetric::SuccessAffected => {
            Some(ops.iter().filter(|o| o.2).count() as f64 / ops.len() as f64)
        }
        CheckMetric::P99Ms => {
            let mut ms: Vec<f64> = ops
                .iter()
                .map(|o| o.1.saturating_sub(o.0) as f64 / 1000.0)
                .collect();
            ms.sort_by(f64::total_cmp);
            let rank = ((0.99 * ms.len() as f64).ceil() as usize).clamp(1, ms.len());
            Some(ms[rank - 1])
        }
        _ => None,
    }
}

/// Judges the closed windows of one run for one threshold: `Some((measured, window end s,
/// windows in a row))` once the breach has lasted `abort_after_s`.
fn judge(t: &ThresholdSpec, ops: &[Op], streak: &mut Streak) -> Option<(f64, u64, u64)> {
    let after = t.abort_after_s?;
    let last_end = ops.iter().map(|o| o.1).max()?;
    let need = (after.ceil() as u64).max(1);
    while (streak.next_window + 1) * WINDOW_US <= last_end {
        let w = streak.next_window;
        streak.next_window += 1;
        let inside: Vec<Op> = ops
            .iter()
            .filter(|o| o.1 / WINDOW_US == w)
            .copied()
            .collect();
        let Some(v) = window_figure(&t.check.metric, &inside) else {
            continue;
        };
        if t.check.band.holds(v, f64::NAN) {
            streak.broken = 0;
        } else {
            streak.broken += 1;
            if streak.broken >= need {
                return Some((v, w + 1, streak.broken));
            }
        }
    }
    None
}

/// A client log followed: where reading stopped, and the start of a line not yet ended.
#[derive(Default)]
struct Followed {
    offset: u64,
    partial: String,
}

/// The operations of each (strategy, seed) of a scenario, read so far.
#[derive(Default)]
struct Scenario {
    files: BTreeMap<PathBuf, Followed>,
    ops: BTreeMap<(String, u64), Vec<Op>>,
}

impl Scenario {
    /// Reads what the client logs in `dir` gained since the last call.
    fn read(&mut self, dir: &Path) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.filter_map(Result::ok) {
            let name = e.file_name().to_string_lossy().into_owned();
            if !(name.starts_with("client-") && name.ends_with(".jsonl")) {
                continue;
            }
            let f = self.files.entry(e.path()).or_default();
            let Ok(mut file) = std::fs::File::open(e.path()) else {
                continue;
            };
            let mut text = String::new();
            if file.seek(SeekFrom::Start(f.offset)).is_err()
                || file.read_to_string(&mut text).is_err()
            {
                continue;
            }
            f.offset += text.len() as u64;
            f.partial.push_str(&text);
            let Some(cut) = f.partial.rfind('\n') else {
                continue;
            };
            let whole: String = f.partial.drain(..=cut).collect();
            for line in whole.lines() {
                if let Some((key, op)) = operation(line) {
                    self.ops.entry(key).or_default().push(op);
                }
            }
        }
    }
}

/// An `operation` record of a client log (the lab's event schema, read as the analyzer reads
/// it): its (strategy, seed) and the operation.
fn operation(line: &str) -> Option<((String, u64), Op)> {
    if !line.contains("\"operation\"") {
        return None;
    }
    match serde_json::from_str::<Event>(line).ok()? {
        Event::Operation(r) => Some((
            (r.tag.strategy, r.tag.seed),
            (r.start_us, r.end_us, r.outcome == Outcome::Success),
        )),
        _ => None,
    }
}

/// The follower of a live run, while it goes on.
pub struct Watch {
    done: Arc<AtomicBool>,
    breach: Arc<Mutex<Option<Breach>>>,
    thread: std::thread::JoinHandle<()>,
}

/// Starts following the run's client logs when a scenario of `plan` has a threshold with
/// `abort_after_s`; a breach sets `stop`, as a Ctrl-C does.
pub fn watch(plan: &RunPlan, run_dir: &Path, stop: &Arc<AtomicBool>) -> Option<Watch> {
    let followed: Vec<(String, PathBuf, Vec<ThresholdSpec>)> = plan
        .scenarios
        .iter()
        .map(|s| {
            let ts: Vec<ThresholdSpec> = s
                .def()
                .thresholds
                .iter()
                .filter(|t| t.abort_after_s.is_some())
                .cloned()
                .collect();
            (s.name().to_string(), run_dir.join(s.name()), ts)
        })
        .filter(|(_, _, ts)| !ts.is_empty())
        .collect();
    if followed.is_empty() {
        return None;
    }
    let done = Arc::new(AtomicBool::new(false));
    let breach = Arc::new(Mutex::new(None));
    let (d, b, stop) = (done.clone(), breach.clone(), stop.clone());
    let thread = std::thread::spawn(move || {
        let mut state: Vec<Scenario> = followed.iter().map(|_| Scenario::default()).collect();
        let mut streaks: BTreeMap<(usize, usize, String, u64), Streak> = BTreeMap::new();
        while !d.load(Ordering::SeqCst) && !stop.load(Ordering::SeqCst) {
            std::thread::sleep(POLL);
            for (i, (name, dir, ts)) in followed.iter().enumerate() {
                state[i].read(dir);
                for (j, t) in ts.iter().enumerate() {
                    for ((strategy, seed), ops) in &state[i].ops {
                        if *strategy != t.check.strategy {
                            continue;
                        }
                        let s = streaks.entry((i, j, strategy.clone(), *seed)).or_default();
                        if let Some((v, end_s, windows)) = judge(t, ops, s) {
                            let found = Breach {
                                scenario: name.clone(),
                                threshold: t.label(),
                                bound: t.check.band.describe(),
                                seed: *seed,
                                measured: format!("{v:.2}"),
                                window_end_s: end_s,
                                windows,
                            };
                            eprintln!("lab: {name}: {}; stopping the run", found.line());
                            *b.lock().expect("never poisoned") = Some(found);
                            stop.store(true, Ordering::SeqCst);
                            return;
                        }
                    }
                }
            }
        }
    });
    Some(Watch {
        done,
        breach,
        thread,
    })
}

impl Watch {
    /// After the run and its analysis: `Some(99)` when a breach stopped it, after saying so on
    /// stderr, in `ABORTED.txt` of its scenario folder and in the JUnit file.
    pub fn finish(self, run_dir: &Path) -> Option<i32> {
        self.done.store(true, Ordering::SeqCst);
        let _ = self.thread.join();
        let breach = self.breach.lock().expect("never poisoned").take()?;
        let dir = run_dir.join(&breach.scenario);
        let _ = e03_io::logs::write_atomic(
            &dir.join("ABORTED.txt"),
            format!(
                "{}.\nThe run was stopped early: its logs are kept, incomplete, and its \
                 figures judge nothing.\n",
                breach.line()
            )
            .as_bytes(),
        );
        eprintln!(
            "lab: {}: {}; the run is incomplete, its logs kept in {}",
            breach.scenario,
            breach.line(),
            e03_io::rundir::shown(&dir)
        );
        crate::gate::record_case(
            &breach.scenario,
            analyzer::junit::Case {
                kind: "threshold",
                name: format!("{} (seed {})", breach.threshold, breach.seed),
                outcome: analyzer::junit::Outcome::Failed {
                    message: breach.line(),
                },
            },
        );
        Some(crate::gate::THRESHOLD_BROKEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use e03_plan::checks::{Band, CheckSpec, Published};

    /// A threshold as a scenario file's `[[threshold]]` would give it.
    fn threshold(strategy: &str, metric: CheckMetric, band: Band, after: f64) -> ThresholdSpec {
        ThresholdSpec {
            check: CheckSpec {
                strategy: strategy.into(),
                metric,
                published: Published::None,
                figure_of: Default::default(),
                band,
                mode: Default::default(),
                tolerance: None,
                cause: None,
            },
            abort_after_s: Some(after),
        }
    }

    /// Hand-computed: windows 0-1 s all succeed, 1-2 s one of four, 2-3 s none ended, 3-4 s
    /// one of two: with `more_than = 0.5` and `abort_after_s = 2` the breach starts in window
    /// 1, window 2 gives no figure, window 3 lasts it: abort at 4 s with 0.50.
    #[test]
    fn a_breach_aborts_after_its_windows_in_a_row() {
        let band = Band {
            more_than: Some(0.5),
            ..Band::default()
        };
        let t = threshold("C", CheckMetric::SuccessAffected, band, 2.0);
        let ms = |a: u64, b: u64, ok| (a * 1000, b * 1000, ok);
        let mut ops = vec![
            ms(0, 300, true),
            ms(200, 900, true),
            ms(900, 1100, false),
            ms(1000, 1500, false),
            ms(1200, 1700, true),
            ms(1300, 1999, false),
        ];
        let mut s = Streak::default();
        // Window 1 is not closed until an operation ends after 2 s.
        assert_eq!(judge(&t, &ops, &mut s), None);
        assert_eq!((s.next_window, s.broken), (1, 0));
        ops.extend([
            ms(2500, 3200, true),
            ms(2600, 3900, false),
            ms(0, 4100, true),
        ]);
        assert_eq!(judge(&t, &ops, &mut s), Some((0.5, 4, 2)));
    }

    #[test]
    fn a_window_that_holds_ends_the_breach_and_p99_is_the_nearest_rank() {
        let band = Band {
            less_than: Some(100.0),
            ..Band::default()
        };
        let t = threshold("A", CheckMetric::P99Ms, band, 1.5);
        // Window 0: 50 ms and 150 ms: p99 150 (broken); window 1: 10 ms (holds); window 2:
        // 120 ms (broken); window 3: 300 ms (broken): two in a row at 4 s.
        let ops = vec![
            (0, 50_000, true),
            (100_000, 250_000, true),
            (1_000_000, 1_010_000, true),
            (2_000_000, 2_120_000, true),
            (3_000_000, 3_300_000, true),
            (4_000_000, 4_000_500, true),
        ];
        let mut s = Streak::default();
        assert_eq!(judge(&t, &ops, &mut s), Some((300.0, 4, 2)));
        assert_eq!(
            window_figure(&CheckMetric::P99Ms, &[(0, 1000, true), (0, 3000, true)]),
            Some(3.0)
        );
        assert_eq!(window_figure(&CheckMetric::P99Ms, &[]), None);
    }

    #[test]
    fn operation_records_are_read_from_a_client_log_line() {
        let line = r#"{"type":"operation","data":{"run":"g-C-seed42-1","seed":42,"strategy":"C","client":9,"op":0,"start_us":420503,"end_us":463588,"attempts":1,"outcome":"success"}}"#;
        assert_eq!(
            operation(line),
            Some((("C".to_string(), 42), (420_503, 463_588, true)))
        );
        assert_eq!(operation(r#"{"type":"attempt","data":{}}"#), None);
    }
}
