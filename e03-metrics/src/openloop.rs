//! The open loop's figures and the recovery verdict, from the same facts on both drivers.
//!
//! Per 1 s window from time zero the accumulator counts: operations *offered* (arrived, by
//! intended start, dropped ones included), operations *dropped* (the in-flight cap was reached),
//! *late starts* (a first attempt sent more than [`LATE_START_US`] after its intended start),
//! operations that *succeeded* (by end), attempts that reached the dependency, answers the
//! dependency gave, and *wasted* work: answers whose work was done (a worker served them) for an
//! attempt whose client had already given up on it (it timed out first).
//!
//! Beside them, after AWS's "Using load shedding to avoid overload" (throughput against
//! goodput): *work done* (throughput) is every answer a worker served; *useful* work (goodput)
//! is the served answers that succeeded (2xx) for a client still waiting for them, so they
//! reached a caller within its deadline. Work done minus useful work is the work that counted
//! for nothing: answers to callers who had gone, and failures that took a worker's time. Both
//! drivers count them from the same facts (the server's answer, its status, and whether the
//! attempt had timed out on its client by then), and the latency of the answers that count is
//! the p99 of the successful operations, from their intended start.
//!
//! The verdict ([`verdict`]): after the trigger ends (the end of the scenario's last non-up
//! phase), the run is *recovered* at the first window from which, for [`STABLE_WINDOWS`] windows
//! in a row, goodput is within 5% of the offered load (at least 95% of the operations that
//! arrived in the window succeeded, whenever they ended: counting by arrival rather than by end
//! keeps the Poisson noise of two different windows out of the comparison) and the
//! dependency's backlog has drained (requests in the system at the
//! window's end at most twice its workers). The recovery time is the end of the first of those
//! windows minus the trigger's end. A run that has not recovered by the horizon (the run's end)
//! is *metastable*.

use serde::{Deserialize, Serialize};

use crate::quantiles::{MAX_T_US, WINDOW_1S_US};

/// A first attempt sent this long (µs) after its intended start is a late start.
pub const LATE_START_US: u64 = 10_000;
/// Goodput must be at least this share of the offered load.
pub const GOODPUT_SHARE: f64 = 0.95;
/// Windows in a row that must be good for the run to count as recovered.
pub const STABLE_WINDOWS: usize = 5;

/// One run's open-loop figures (`None` in [`crate::RunMetrics`] for other workloads).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OpenLoopMetrics {
    /// Operations that arrived (started or dropped).
    pub offered: u64,
    /// Arrivals not started because the in-flight cap was reached.
    pub dropped: u64,
    /// Operations whose first attempt left more than 10 ms after the intended start.
    pub late_starts: u64,
    /// Worst start lateness, ms.
    pub max_start_lateness_ms: f64,
    /// Answers whose work was done for an attempt its client had given up on.
    pub wasted: u64,
    /// Attempts per operation over the run (attempts that reached the dependency / offered).
    pub amplification: f64,
    /// The trigger's end, s after time zero (`None` without a trigger).
    pub trigger_end_s: Option<f64>,
    /// Seconds from the trigger's end to recovery; `None`: metastable (or no trigger).
    pub recovery_s: Option<f64>,
    /// Seconds observed after the trigger's end (the verdict's horizon).
    pub horizon_s: f64,
    /// Per 1 s window: offered operations.
    pub offered_1s: Vec<u64>,
    /// Per 1 s window: operations that succeeded (by end).
    pub goodput_1s: Vec<u64>,
    /// Per 1 s window: attempts that reached the dependency.
    pub attempts_1s: Vec<u64>,
    /// Per 1 s window: wasted answers.
    pub wasted_1s: Vec<u64>,
    /// Answers a worker served within the run's window (time zero to the end of its
    /// operations' window: both drivers observe all of it, while a live run may stop before a
    /// queue left at its end has drained); 0 in a summary written before the field existed.
    #[serde(default)]
    pub worked: u64,
    /// Of those, the successes that reached a client still waiting (goodput).
    #[serde(default)]
    pub useful: u64,
    /// The dependency's capacity at normal service time, requests per second.
    #[serde(default)]
    pub capacity_per_s: f64,
    /// `worked` per second of the run's window.
    #[serde(default)]
    pub throughput_per_s: f64,
    /// `useful` per second of the run.
    #[serde(default)]
    pub goodput_per_s: f64,
    /// p99 latency of the successful operations (from their intended start), ms.
    #[serde(default)]
    pub ok_p99_ms: f64,
    /// Per 1 s window: answers a worker served.
    #[serde(default)]
    pub worked_1s: Vec<u64>,
    /// Per 1 s window: useful answers.
    #[serde(default)]
    pub useful_1s: Vec<u64>,
    /// Requests in the dependency (arrived, not answered) at each 1 s window's end.
    pub backlog_1s: Vec<u64>,
}

impl OpenLoopMetrics {
    /// Work that counted for nothing: served answers that were not useful.
    pub fn wasted_work(&self) -> u64 {
        self.worked.saturating_sub(self.useful)
    }

    /// Goodput as a share of the dependency's capacity (0 when the capacity is unknown).
    pub fn goodput_share(&self) -> f64 {
        if self.capacity_per_s > 0.0 {
            self.goodput_per_s / self.capacity_per_s
        } else {
            0.0
        }
    }

    /// Wasted work as a share of the work done (0 without work).
    pub fn wasted_share(&self) -> f64 {
        if self.worked == 0 {
            0.0
        } else {
            self.wasted_work() as f64 / self.worked as f64
        }
    }

    /// `recovered in N s` or `metastable (> N s)`, or `no trigger`.
    pub fn verdict_text(&self) -> String {
        match (self.trigger_end_s, self.recovery_s) {
            (None, _) => "no trigger".into(),
            (Some(_), Some(r)) => format!("recovered in {r:.0} s"),
            (Some(_), None) => format!("metastable (not recovered in {:.0} s)", self.horizon_s),
        }
    }
}

/// Collects the facts; see the module docs.
#[derive(Debug, Default)]
pub struct OpenLoopAcc {
    pub(crate) workers: usize,
    capacity_per_s: f64,
    pub(crate) trigger_end_us: Option<u64>,
    pub(crate) duration_us: u64,
    offered: Vec<u64>,
    dropped: u64,
    late: u64,
    max_late_us: u64,
    goodput: Vec<u64>,
    /// Successes by the window of their intended start.
    ok_by_start: Vec<u64>,
    attempts: Vec<u64>,
    answers: Vec<u64>,
    wasted: Vec<u64>,
    worked: Vec<u64>,
    useful: Vec<u64>,
    /// Work done and useful work within the run's window.
    worked_in: u64,
    useful_in: u64,
    /// Latency of the successful operations, µs (created with the first).
    ok_latency: Option<hdrhistogram::Histogram<u64>>,
    /// Live only: identity of each request by sequence number, and attempts that timed out
    /// (identity -> end), to find wasted answers at the end.
    live_ids: std::collections::HashMap<u64, (u32, u32, u32)>,
    live_timeouts: std::collections::HashMap<(u32, u32, u32), u64>,
    live_worked: Vec<(u64, u64, bool)>,
}

/// One answer of the dependency, as the open loop counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Served {
    /// A worker served it (not refused, not held by a freeze).
    pub worked: bool,
    /// Its status was a success (2xx).
    pub ok: bool,
    /// Its attempt had timed out on its client by then.
    pub given_up: bool,
}

impl Served {
    /// An answer as both drivers log it: `admitted` (it had an admission instant), its cause and
    /// status. A worker served it unless it was refused or held by a freeze; it succeeded with a
    /// 2xx. Whether its client had given up is the caller's to say.
    pub fn of(
        admitted: bool,
        cause: e03_model::events::Cause,
        status: u16,
        given_up: bool,
    ) -> Self {
        Served {
            worked: admitted && cause != e03_model::events::Cause::Freeze,
            ok: (200..300).contains(&status),
            given_up,
        }
    }
}

fn bump(series: &mut Vec<u64>, t_us: u64) {
    if t_us >= MAX_T_US {
        return;
    }
    let k = (t_us / WINDOW_1S_US) as usize;
    if series.len() <= k {
        series.resize(k + 1, 0);
    }
    series[k] += 1;
}

impl OpenLoopAcc {
    /// `capacity_per_s`: the dependency's requests per second at normal service time.
    pub fn new(
        workers: usize,
        capacity_per_s: f64,
        trigger_end_us: Option<u64>,
        duration_us: u64,
    ) -> Self {
        Self {
            workers,
            capacity_per_s,
            trigger_end_us,
            duration_us,
            ..Default::default()
        }
    }

    /// An operation arrived at `intended_us` and started (`true`) or was dropped.
    pub fn offered(&mut self, intended_us: u64, started: bool) {
        bump(&mut self.offered, intended_us);
        if !started {
            self.dropped += 1;
        }
    }

    /// A first attempt was due at `due_us` (the intended start) and left at `sent_us`.
    pub fn first_attempt(&mut self, due_us: u64, sent_us: u64) {
        let late = sent_us.saturating_sub(due_us);
        self.max_late_us = self.max_late_us.max(late);
        if late > LATE_START_US {
            self.late += 1;
        }
    }

    pub fn arrival(&mut self, t_us: u64) {
        bump(&mut self.attempts, t_us);
    }

    /// The dependency answered at `t_us` (simulated: the engine knows whether its client waits).
    pub fn answer(&mut self, t_us: u64, served: Served) {
        bump(&mut self.answers, t_us);
        self.work(t_us, served);
    }

    /// Counts the work of one answer: done, wasted on a client that gave up, or useful.
    fn work(
        &mut self,
        t_us: u64,
        Served {
            worked,
            ok,
            given_up,
        }: Served,
    ) {
        if !worked {
            return;
        }
        bump(&mut self.worked, t_us);
        let inside = t_us < self.duration_us;
        self.worked_in += u64::from(inside);
        if given_up {
            bump(&mut self.wasted, t_us);
        } else if ok {
            bump(&mut self.useful, t_us);
            self.useful_in += u64::from(inside);
        }
    }

    /// An operation that arrived at `start_us` succeeded at `end_us`.
    pub fn success(&mut self, start_us: u64, end_us: u64) {
        bump(&mut self.goodput, end_us);
        bump(&mut self.ok_by_start, start_us);
        self.ok_latency
            .get_or_insert_with(crate::quantiles::histogram)
            .saturating_record(end_us.saturating_sub(start_us));
    }

    /// Live: request `seq` carried this attempt identity.
    pub fn live_identity(&mut self, seq: u64, id: (u32, u32, u32)) {
        self.live_ids.insert(seq, id);
    }

    /// Live: the attempt `id` timed out on its client at `end_us`.
    pub fn live_timeout(&mut self, id: (u32, u32, u32), end_us: u64) {
        self.live_timeouts.insert(id, end_us);
    }

    /// Live: request `seq` answered at `t_us`; whether its client had given up is found at
    /// the end, from the client log's timeouts.
    pub fn live_answer(&mut self, seq: u64, t_us: u64, served: Served) {
        bump(&mut self.answers, t_us);
        if served.worked {
            self.live_worked.push((seq, t_us, served.ok));
        }
    }

    pub fn finish(mut self) -> OpenLoopMetrics {
        // Live: an answer is wasted if its attempt had timed out before it.
        for (seq, t, ok) in std::mem::take(&mut self.live_worked) {
            let given_up = self
                .live_ids
                .get(&seq)
                .and_then(|id| self.live_timeouts.get(id))
                .is_some_and(|end| *end <= t);
            self.work(
                t,
                Served {
                    worked: true,
                    ok,
                    given_up,
                },
            );
        }
        let n = (self.duration_us.div_ceil(WINDOW_1S_US) as usize)
            .max(self.offered.len())
            .max(self.attempts.len())
            .max(self.answers.len())
            .max(self.goodput.len())
            .max(self.wasted.len())
            .max(self.worked.len())
            .max(self.useful.len());
        for s in [
            &mut self.offered,
            &mut self.goodput,
            &mut self.ok_by_start,
            &mut self.attempts,
            &mut self.answers,
            &mut self.wasted,
            &mut self.worked,
            &mut self.useful,
        ] {
            s.resize(n.max(s.len()), 0);
        }
        let mut backlog = Vec::with_capacity(n);
        let mut in_system: i64 = 0;
        for k in 0..n {
            in_system += self.attempts[k] as i64 - self.answers.get(k).copied().unwrap_or(0) as i64;
            backlog.push(in_system.max(0) as u64);
        }
        let offered: u64 = self.offered.iter().sum();
        let attempts: u64 = self.attempts.iter().sum();
        let trigger_end_s = self.trigger_end_us.map(|t| t as f64 / 1e6);
        let (recovery_s, horizon_s) = match self.trigger_end_us {
            Some(t) => verdict(
                t,
                &self.offered,
                &self.ok_by_start,
                &backlog,
                2 * self.workers as u64,
                n as u64 * WINDOW_1S_US,
            ),
            None => (None, 0.0),
        };
        let (worked, useful) = (self.worked_in, self.useful_in);
        let per_s = |n: u64| {
            if self.duration_us == 0 {
                0.0
            } else {
                n as f64 * 1e6 / self.duration_us as f64
            }
        };
        OpenLoopMetrics {
            capacity_per_s: self.capacity_per_s,
            worked,
            useful,
            throughput_per_s: per_s(worked),
            goodput_per_s: per_s(useful),
            ok_p99_ms: self
                .ok_latency
                .as_ref()
                .map_or(0.0, |h| crate::quantiles::quantile_ms(h, 0.99)),
            worked_1s: self.worked,
            useful_1s: self.useful,
            offered,
            dropped: self.dropped,
            late_starts: self.late,
            max_start_lateness_ms: self.max_late_us as f64 / 1000.0,
            wasted: self.wasted.iter().sum(),
            amplification: if offered == 0 {
                0.0
            } else {
                attempts as f64 / offered as f64
            },
            trigger_end_s,
            recovery_s,
            horizon_s,
            offered_1s: self.offered,
            goodput_1s: self.goodput,
            attempts_1s: self.attempts,
            wasted_1s: self.wasted,
            backlog_1s: backlog,
        }
    }
}

/// The recovery verdict (see the module docs) from 1 s series aligned to time zero (`goodput`:
/// successes among the operations that arrived in each window): `(seconds
/// from the trigger's end to recovery or None, horizon observed in seconds)`. The first window
/// examined is the first that starts at or after the trigger's end; `end_us` is where the data
/// ends.
pub fn verdict(
    trigger_end_us: u64,
    offered: &[u64],
    goodput: &[u64],
    backlog: &[u64],
    max_backlog: u64,
    end_us: u64,
) -> (Option<f64>, f64) {
    let first = trigger_end_us.div_ceil(WINDOW_1S_US) as usize;
    let horizon_s = end_us.saturating_sub(trigger_end_us) as f64 / 1e6;
    let good = |k: usize| {
        let o = offered.get(k).copied().unwrap_or(0);
        let g = goodput.get(k).copied().unwrap_or(0);
        let b = backlog.get(k).copied().unwrap_or(0);
        g as f64 >= GOODPUT_SHARE * o as f64 && b <= max_backlog
    };
    let n = offered.len().min(goodput.len()).min(backlog.len());
    for k in first..n {
        let run = (k..(k + STABLE_WINDOWS).min(n)).all(good);
        if run && k + STABLE_WINDOWS <= n {
            let end = (k as u64 + 1) * WINDOW_1S_US;
            return (Some((end - trigger_end_us) as f64 / 1e6), horizon_s);
        }
    }
    (None, horizon_s)
}

/// One cell of a phase map: a strategy at one offered load and one trigger size, over seeds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MapCell {
    pub strategy: String,
    /// Offered load as a share of the dependency's capacity.
    pub load: f64,
    /// The trigger's size: the freeze's length in seconds.
    pub trigger_s: f64,
    /// Per seed (in the map's seed order): seconds to recovery, `None` for metastable.
    pub recovery_s: Vec<Option<f64>>,
}

impl MapCell {
    /// Seeds that recovered.
    pub fn recovered(&self) -> usize {
        self.recovery_s.iter().filter(|r| r.is_some()).count()
    }

    /// Share of seeds that stayed down, in [0, 1].
    pub fn metastable_share(&self) -> f64 {
        if self.recovery_s.is_empty() {
            return 0.0;
        }
        1.0 - self.recovered() as f64 / self.recovery_s.len() as f64
    }

    /// Median recovery time of the seeds that recovered.
    pub fn median_recovery_s(&self) -> Option<f64> {
        let mut r: Vec<f64> = self.recovery_s.iter().flatten().copied().collect();
        if r.is_empty() {
            return None;
        }
        r.sort_by(f64::total_cmp);
        Some(r[r.len() / 2])
    }

    /// `4 s` (every seed recovered, median), `M` (none did) or `2/3` (seeds recovered).
    pub fn label(&self) -> String {
        let n = self.recovery_s.len();
        match self.recovered() {
            0 => "M".into(),
            k if k == n => format!("{:.0} s", self.median_recovery_s().unwrap_or(0.0)),
            k => format!("{k}/{n}"),
        }
    }
}

/// A phase map: for each strategy, offered load (x) against trigger size (y), each cell
/// recovered or metastable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseMap {
    pub scenario: String,
    pub title: String,
    /// `(id, label)` of each strategy, in order.
    pub strategies: Vec<(String, String)>,
    pub loads: Vec<f64>,
    pub triggers_s: Vec<f64>,
    pub seeds: Vec<u64>,
    /// Seconds observed after the trigger's end.
    pub horizon_s: f64,
    /// Requests per second the dependency completes at normal service time.
    pub capacity_per_s: f64,
    /// Attempts per operation at most (the predicted boundary is capacity / this).
    pub max_attempts: u32,
    /// The axes' names, (load, trigger), when not the freeze map's: a lost replica's map
    /// (`failover`) says the load is on the survivors and the trigger is the outage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub axes: Option<(String, String)>,
    /// Strategy-major, then load, then trigger.
    pub cells: Vec<MapCell>,
}

impl PhaseMap {
    /// The cell of `strategy` at load index `i` and trigger index `j`.
    pub fn cell(&self, strategy: &str, i: usize, j: usize) -> Option<&MapCell> {
        let s = self.strategies.iter().position(|(id, _)| id == strategy)?;
        let per = self.loads.len() * self.triggers_s.len();
        self.cells.get(s * per + i * self.triggers_s.len() + j)
    }

    /// The predicted boundary as a share of capacity: capacity / max attempts. Above it, a
    /// workload whose every operation spends all its attempts offers more than the capacity.
    /// A lost replica's map ([`PhaseMap::axes`] set): the survivors' capacity itself, seed
    /// 003's sizing rule (each copy must carry the whole load).
    pub fn predicted_boundary(&self) -> f64 {
        match self.axes {
            Some(_) => 1.0,
            None => 1.0 / self.max_attempts.max(1) as f64,
        }
    }

    /// How [`Self::predicted_boundary`] is predicted, for the printed map.
    pub fn boundary_rule(&self) -> &'static str {
        match self.axes {
            Some(_) => "the survivors' capacity (the reliability-patterns article: each copy carries the whole load)",
            None => "capacity / max attempts",
        }
    }

    /// Cells nearest the boundary: cells whose seeds disagree first, then cells whose verdict
    /// differs from a neighbour's (load or trigger), in map order; at most `k`.
    pub fn boundary_cells(&self, k: usize) -> Vec<&MapCell> {
        let (nl, nt) = (self.loads.len(), self.triggers_s.len());
        let mut mixed = Vec::new();
        let mut edge = Vec::new();
        for (id, _) in &self.strategies {
            for i in 0..nl {
                for j in 0..nt {
                    let Some(c) = self.cell(id, i, j) else {
                        continue;
                    };
                    let m = c.metastable_share();
                    if m > 0.0 && m < 1.0 {
                        mixed.push(c);
                        continue;
                    }
                    let neighbours = [(i + 1, j), (i, j + 1)];
                    let differs = neighbours.iter().any(|&(a, b)| {
                        self.cell(id, a, b)
                            .filter(|_| a < nl && b < nt)
                            .is_some_and(|n| (n.metastable_share() >= 0.5) != (m >= 0.5))
                    });
                    if differs {
                        edge.push(c);
                    }
                }
            }
        }
        // Spread the picks over strategies: round-robin over them.
        let mut picks: Vec<&MapCell> = Vec::new();
        for pool in [mixed, edge] {
            let mut by: Vec<Vec<&MapCell>> = self
                .strategies
                .iter()
                .map(|(id, _)| pool.iter().copied().filter(|c| &c.strategy == id).collect())
                .collect();
            while picks.len() < k && by.iter().any(|v| !v.is_empty()) {
                for v in by.iter_mut() {
                    if picks.len() < k && !v.is_empty() {
                        picks.push(v.remove(0));
                    }
                }
            }
        }
        picks
    }

    /// The map as CSV rows (header first): one row per cell and seed.
    pub fn csv_rows(&self) -> Vec<Vec<String>> {
        let mut rows = vec![vec![
            "strategy".to_string(),
            "load_share".into(),
            "rate_per_s".into(),
            "trigger_s".into(),
            "seed".into(),
            "verdict".into(),
            "recovery_s".into(),
        ]];
        for c in &self.cells {
            for (seed, r) in self.seeds.iter().zip(&c.recovery_s) {
                rows.push(vec![
                    c.strategy.clone(),
                    format!("{}", c.load),
                    format!("{}", c.load * self.capacity_per_s),
                    format!("{}", c.trigger_s),
                    seed.to_string(),
                    if r.is_some() {
                        "recovered"
                    } else {
                        "metastable"
                    }
                    .into(),
                    r.map_or(String::new(), |v| format!("{v}")),
                ]);
            }
        }
        rows
    }

    /// The axes' names: (load, trigger).
    pub fn axis_names(&self) -> (&str, &str) {
        match &self.axes {
            Some((load, trigger)) => (load, trigger),
            None => ("offered load (share of capacity)", "freeze (s)"),
        }
    }

    /// One text table per strategy: trigger rows (largest first), load columns.
    pub fn print<W: std::io::Write>(&self, out: &mut W) -> std::io::Result<()> {
        writeln!(
            out,
            "Phase map: {} (capacity {:.0}/s, {} seeds, horizon {:.0} s after the trigger;              cell: median recovery time, M = metastable, k/n = seeds recovered)",
            self.title,
            self.capacity_per_s,
            self.seeds.len(),
            self.horizon_s
        )?;
        for (id, label) in &self.strategies {
            writeln!(out, "\n{label}")?;
            let corner = match &self.axes {
                None => "freeze \\ load",
                Some(_) => "outage \\ load",
            };
            write!(out, "{corner:>10}")?;
            for l in &self.loads {
                write!(out, "{:>7}", format!("{:.0}%", l * 100.0))?;
            }
            writeln!(out)?;
            for j in (0..self.triggers_s.len()).rev() {
                write!(out, "{:>10}", format!("{} s", self.triggers_s[j]))?;
                for i in 0..self.loads.len() {
                    let c = self.cell(id, i, j).map_or(String::new(), MapCell::label);
                    write!(out, "{c:>7}")?;
                }
                writeln!(out)?;
            }
        }
        Ok(())
    }
}

/// The open-loop table of a summary (one row per strategy and seed), `None` when no run is
/// open-loop: offered, dropped and late starts, p99 latency from the intended start,
/// amplification, wasted work and the recovery verdict.
pub fn open_loop_table(s: &crate::ScenarioSummary) -> Option<crate::table::Table> {
    // A stopped or unmatched run gives no recovery verdict (its banner says why).
    let judges = crate::trust::Trust::of(s).judges();
    let rows: Vec<Vec<String>> = s
        .runs
        .iter()
        .filter_map(|r| {
            let o = r.open_loop.as_ref()?;
            Some(vec![
                r.strategy.clone(),
                r.seed.to_string(),
                o.offered.to_string(),
                o.dropped.to_string(),
                format!("{} (max {:.1} ms)", o.late_starts, o.max_start_lateness_ms),
                format!("{:.0}", r.p99_ms),
                format!("{:.2}", o.amplification),
                format!("{:.0}", o.throughput_per_s),
                format!("{:.0} ({:.0}%)", o.goodput_per_s, 100.0 * o.goodput_share()),
                format!("{} ({:.0}%)", o.wasted_work(), 100.0 * o.wasted_share()),
                format!("{:.0}", o.ok_p99_ms),
                if judges {
                    o.verdict_text()
                } else {
                    "not judged (see above)".into()
                },
            ])
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let headers = [
        "strategy",
        "seed",
        "offered ops",
        "dropped",
        "late starts (>10 ms)",
        "p99 ms from intended start",
        "attempts/op",
        "work done/s",
        "goodput/s (of capacity)",
        "wasted work",
        "p99 ms of successes",
        "after the trigger",
    ];
    Some(crate::table::Table {
        headers: headers.iter().map(|h| h.to_string()).collect(),
        rows,
    })
}

/// The open loop over time, one CSV row per run and 1 s window (header first; only the header
/// when no run is open-loop): offered, goodput (successes by arrival window and by end window),
/// attempts at the dependency, amplification, wasted answers, backlog, work done and useful work.
pub fn open_loop_csv_rows(s: &crate::ScenarioSummary) -> Vec<Vec<String>> {
    let mut rows = vec![[
        "strategy",
        "seed",
        "t_s",
        "offered",
        "succeeded_by_end",
        "attempts",
        "attempts_per_offered",
        "wasted",
        "backlog",
        "worked",
        "useful",
    ]
    .iter()
    .map(|h| h.to_string())
    .collect::<Vec<String>>()];
    for r in &s.runs {
        let Some(o) = &r.open_loop else { continue };
        let get = |v: &[u64], k: usize| v.get(k).copied().unwrap_or(0);
        for k in 0..o.offered_1s.len().max(o.attempts_1s.len()) {
            let (offered, attempts) = (get(&o.offered_1s, k), get(&o.attempts_1s, k));
            rows.push(vec![
                r.strategy.clone(),
                r.seed.to_string(),
                k.to_string(),
                offered.to_string(),
                get(&o.goodput_1s, k).to_string(),
                attempts.to_string(),
                if offered == 0 {
                    String::new()
                } else {
                    format!("{:.2}", attempts as f64 / offered as f64)
                },
                get(&o.wasted_1s, k).to_string(),
                get(&o.backlog_1s, k).to_string(),
                get(&o.worked_1s, k).to_string(),
                get(&o.useful_1s, k).to_string(),
            ]);
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovery_needs_goodput_and_a_drained_backlog_for_five_windows() {
        let offered = vec![100; 30];
        let mut goodput = vec![100; 30];
        let mut backlog = vec![5; 30];
        // Trigger ends at 10 s; goodput back at 14 s but the backlog drains only at 16 s.
        goodput[10..14].fill(20);
        backlog[10..16].fill(500);
        let (r, h) = verdict(10_000_000, &offered, &goodput, &backlog, 20, 30_000_000);
        assert_eq!(
            r,
            Some(7.0),
            "window 16 is the first good one; it ends at 17 s"
        );
        assert_eq!(h, 20.0);
        // A blip of good windows shorter than five does not count.
        backlog[18] = 500;
        let (r, _) = verdict(10_000_000, &offered, &goodput, &backlog, 20, 30_000_000);
        assert_eq!(r, Some(10.0));
        // 95% of the offered load is enough, 94% is not.
        let mut g = vec![95; 30];
        let b = vec![0; 30];
        assert_eq!(verdict(0, &offered, &g, &b, 20, 30_000_000).0, Some(1.0));
        g[0] = 94;
        assert_eq!(verdict(0, &offered, &g, &b, 20, 30_000_000).0, Some(2.0));
    }

    fn map() -> PhaseMap {
        let cell = |strategy: &str, load, trigger_s, r: Vec<Option<f64>>| MapCell {
            strategy: strategy.into(),
            load,
            trigger_s,
            recovery_s: r,
        };
        PhaseMap {
            scenario: "m".into(),
            title: "m".into(),
            strategies: vec![("A".into(), "A".into())],
            loads: vec![0.2, 0.5],
            triggers_s: vec![1.0, 4.0],
            seeds: vec![1, 2],
            horizon_s: 60.0,
            capacity_per_s: 250.0,
            max_attempts: 4,
            axes: None,
            cells: vec![
                cell("A", 0.2, 1.0, vec![Some(1.0), Some(3.0)]),
                cell("A", 0.2, 4.0, vec![Some(5.0), Some(5.0)]),
                cell("A", 0.5, 1.0, vec![Some(2.0), None]),
                cell("A", 0.5, 4.0, vec![None, None]),
            ],
        }
    }

    #[test]
    fn map_cells_label_their_verdicts_and_the_boundary_is_found() {
        let m = map();
        assert_eq!(m.cell("A", 1, 0).unwrap().label(), "1/2");
        assert_eq!(m.cell("A", 1, 1).unwrap().label(), "M");
        assert_eq!(m.cell("A", 0, 0).unwrap().label(), "3 s");
        assert_eq!(m.predicted_boundary(), 0.25);
        let survivors = PhaseMap {
            axes: Some(("load".into(), "outage".into())),
            ..m.clone()
        };
        assert_eq!(survivors.predicted_boundary(), 1.0);
        let b = m.boundary_cells(2);
        // The mixed cell first, then a cell whose neighbour's majority differs (0.2/1 s next
        // to the 1/2 of 0.5/1 s).
        assert_eq!((b[0].load, b[0].trigger_s), (0.5, 1.0));
        assert_eq!((b[1].load, b[1].trigger_s), (0.2, 1.0));
        assert_eq!(
            m.boundary_cells(9).len(),
            3,
            "0.5/4 s has no differing right/up neighbour"
        );
        assert_eq!(m.csv_rows().len(), 1 + 8);
        let mut text = Vec::new();
        m.print(&mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains("   4 s    5 s      M"), "{text}");
    }

    #[test]
    fn a_run_that_never_comes_back_is_metastable_at_its_horizon() {
        let offered = vec![100; 40];
        let goodput: Vec<u64> = (0..40).map(|k| if k < 10 { 100 } else { 3 }).collect();
        let backlog = vec![900; 40];
        let (r, h) = verdict(10_000_000, &offered, &goodput, &backlog, 20, 40_000_000);
        assert_eq!((r, h), (None, 30.0));
    }

    #[test]
    fn an_answer_is_work_when_admitted_and_not_frozen_and_useful_when_a_2xx() {
        use e03_model::events::Cause;
        let of = |admitted, cause, status| {
            let s = Served::of(admitted, cause, status, false);
            (s.worked, s.ok)
        };
        assert_eq!(of(true, Cause::Ok, 200), (true, true));
        assert_eq!(
            of(true, Cause::Fault, 503),
            (true, false),
            "a failure took a worker"
        );
        assert_eq!(
            of(true, Cause::Freeze, 503),
            (false, false),
            "held, not served"
        );
        assert_eq!(of(false, Cause::QueueTimeout, 503), (false, false));
        assert_eq!(of(false, Cause::Limited, 503), (false, false));
        assert!(Served::of(true, Cause::Ok, 200, true).given_up);
    }

    #[test]
    fn the_accumulator_counts_drops_late_starts_waste_and_backlog() {
        let mut a = OpenLoopAcc::new(10, 2.0, Some(2_000_000), 4_000_000);
        a.offered(100, true);
        a.offered(200, false);
        a.first_attempt(100, 20_100);
        a.first_attempt(300, 5_300);
        a.arrival(150);
        a.arrival(1_500_000);
        a.arrival(1_600_000);
        let served = |ok, given_up| Served {
            worked: true,
            ok,
            given_up,
        };
        a.answer(500_000, served(true, false));
        a.answer(2_500_000, served(true, true));
        // A refusal (no work) and a failure that took a worker's time.
        a.answer(
            2_600_000,
            Served {
                worked: false,
                ok: false,
                given_up: false,
            },
        );
        a.answer(2_700_000, served(false, false));
        a.success(400_000, 500_000);
        a.success(1_000_000, 1_250_000);
        // Live: request 7 answered after its attempt timed out, request 8 before.
        a.live_identity(7, (1, 0, 1));
        a.live_identity(8, (2, 0, 1));
        a.live_timeout((1, 0, 1), 3_000_000);
        a.live_timeout((2, 0, 1), 3_900_000);
        let live = |worked, ok| Served {
            worked,
            ok,
            given_up: false,
        };
        a.live_answer(7, 3_100_000, live(true, true));
        a.live_answer(8, 3_200_000, live(true, true));
        a.live_answer(9, 3_300_000, live(false, false));
        // After the run's 4 s window (a queue draining): in the series, not in the rates.
        a.answer(4_200_000, served(true, false));
        let m = a.finish();
        // Worked in the window: 500 ms, 2.5 s, 2.7 s, 3.1 s, 3.2 s; useful: 500 ms (waited)
        // and 3.2 s (request 8, answered before its timeout at 3.9 s).
        assert_eq!((m.worked, m.useful, m.wasted_work()), (5, 2, 3));
        assert_eq!(m.worked_1s, vec![1, 0, 2, 2, 1]);
        assert_eq!(m.useful_1s, vec![1, 0, 0, 1, 1]);
        assert_eq!((m.throughput_per_s, m.goodput_per_s), (1.25, 0.5));
        assert_eq!((m.goodput_share(), m.wasted_share()), (0.25, 0.6));
        // Successes took 100 ms and 250 ms: the p99 is the larger (3 significant digits).
        assert!((m.ok_p99_ms - 250.0).abs() < 0.5, "{}", m.ok_p99_ms);
        assert_eq!((m.offered, m.dropped, m.late_starts), (2, 1, 1));
        assert_eq!(m.max_start_lateness_ms, 20.0);
        assert_eq!(m.wasted, 2);
        assert_eq!(m.wasted_1s, vec![0, 0, 1, 1, 0]);
        assert_eq!(m.backlog_1s, vec![0, 2, 0, 0, 0]);
        assert_eq!(m.amplification, 1.5);
        assert_eq!(m.trigger_end_s, Some(2.0));
    }
}
