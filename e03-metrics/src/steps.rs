//! The step workload's figures (the rate-limit article, `E03_WORKLOAD=steps`): who pays for a retry.
//!
//! [`StepTally`] is fed the facts of one run, from the logs (the analyzer) or directly (the
//! simulator): every call the dependency received (its flow from the `client` it carried, its
//! step from its arrival time), every answer (status, cause and the token `cost` the dependency
//! logged), and every operation's end (its flow and whether it completed). [`StepFigures`] are
//! the seed's columns: batch completion, interactive completion, batch calls, rate-limit
//! rejections (429) and content failures (504 timeouts and 502 cut-off outputs) of the batch
//! flow, and the tokens paid and wasted (paid for an answer that was not a success) by both
//! flows.
//!
//! The verdict is the seed's rule ([`verdict`]): a policy's difference from the baseline (no
//! retry) is *measured* only when it exceeds the seed-to-seed difference of the baseline (its
//! largest minus smallest value over the seeds); with fewer than 2 seeds nothing is measured.

use std::collections::HashMap;

use e03_model::events::Cause;
use e03_model::steps::Flow;

use crate::table::Table;
use crate::ScenarioSummary;

/// The facts of one run, as they come.
#[derive(Debug, Clone)]
pub struct StepTally {
    step_us: u64,
    load: u32,
    items: u32,
    queries: u32,
    /// Flow of each call by the dependency's sequence number.
    flow_of: HashMap<u64, Flow>,
    calls_per_step: Vec<u32>,
    batch_calls: u64,
    interactive_calls: u64,
    rejected: u64,
    content_failures: u64,
    tokens: u64,
    wasted: u64,
    completed: u64,
    interactive_completed: u64,
    interactive_failed_at: Vec<u32>,
}

/// The figures of one run.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StepFigures {
    /// Burst items per step.
    pub load: u32,
    pub items: u32,
    pub queries: u32,
    pub completed: u64,
    pub interactive_completed: u64,
    /// Calls of the batch flow (the seed's "calls").
    pub batch_calls: u64,
    pub interactive_calls: u64,
    /// 429s to the batch flow.
    pub rejected: u64,
    /// 504 timeouts and 502 cut-off outputs to the batch flow.
    pub content_failures: u64,
    /// Tokens paid by both flows.
    pub tokens: u64,
    /// Of those, tokens paid for answers that were not a success.
    pub wasted: u64,
    /// Calls of both flows the dependency received in each step.
    pub calls_per_step: Vec<u32>,
    /// The step of each interactive query that failed (its last call's step).
    pub interactive_failed_at: Vec<u32>,
}

impl StepFigures {
    pub fn completion(&self) -> f64 {
        ratio(self.completed, self.items as u64)
    }

    pub fn interactive_completion(&self) -> f64 {
        ratio(self.interactive_completed, self.queries as u64)
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        1.0
    } else {
        a as f64 / b as f64
    }
}

impl StepTally {
    /// A run at load `load` of the workload `cfg` (its items and queries are the denominators).
    pub fn new(cfg: &e03_model::steps::StepConfig) -> Self {
        StepTally {
            step_us: (cfg.step.as_micros() as u64).max(1),
            load: cfg.load,
            items: cfg.batch_items,
            queries: cfg.queries(),
            flow_of: HashMap::new(),
            calls_per_step: vec![0; cfg.steps as usize],
            batch_calls: 0,
            interactive_calls: 0,
            rejected: 0,
            content_failures: 0,
            tokens: 0,
            wasted: 0,
            completed: 0,
            interactive_completed: 0,
            interactive_failed_at: Vec::new(),
        }
    }

    /// The step of an instant (µs since time zero).
    pub fn step_of(&self, t_us: u64) -> u32 {
        (t_us / self.step_us) as u32
    }

    /// The dependency received call `seq` at `t_us` from `client` (a [`Flow::client`]).
    pub fn call(&mut self, seq: u64, client: Option<u32>, t_us: u64) {
        let Some(flow) = client.and_then(Flow::of_client) else {
            return;
        };
        self.flow_of.insert(seq, flow);
        let step = self.step_of(t_us) as usize;
        if step >= self.calls_per_step.len() {
            self.calls_per_step.resize(step + 1, 0);
        }
        self.calls_per_step[step] += 1;
        match flow {
            Flow::Batch => self.batch_calls += 1,
            Flow::Interactive => self.interactive_calls += 1,
        }
    }

    /// The dependency answered call `seq`.
    pub fn answer(&mut self, seq: u64, status: u16, cause: Cause, cost: Option<u32>) {
        let Some(flow) = self.flow_of.remove(&seq) else {
            return;
        };
        let cost = u64::from(cost.unwrap_or(0));
        self.tokens += cost;
        if !(200..300).contains(&status) {
            self.wasted += cost;
        }
        if flow == Flow::Batch {
            match cause {
                Cause::RateLimited => self.rejected += 1,
                Cause::Timeout | Cause::Cutoff => self.content_failures += 1,
                _ => {}
            }
        }
    }

    /// An operation of `flow` ended at `end_us`.
    pub fn operation(&mut self, flow: Option<Flow>, completed: bool, end_us: u64) {
        match (flow, completed) {
            (Some(Flow::Batch), true) => self.completed += 1,
            (Some(Flow::Interactive), true) => self.interactive_completed += 1,
            (Some(Flow::Interactive), false) => {
                let step = self.step_of(end_us);
                self.interactive_failed_at.push(step)
            }
            _ => {}
        }
    }

    pub fn finish(self) -> StepFigures {
        StepFigures {
            load: self.load,
            items: self.items,
            queries: self.queries,
            completed: self.completed,
            interactive_completed: self.interactive_completed,
            batch_calls: self.batch_calls,
            interactive_calls: self.interactive_calls,
            rejected: self.rejected,
            content_failures: self.content_failures,
            tokens: self.tokens,
            wasted: self.wasted,
            calls_per_step: self.calls_per_step,
            interactive_failed_at: self.interactive_failed_at,
        }
    }
}

/// The seed's verdict on a policy's difference from the baseline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Verdict {
    /// The baseline is the policy itself.
    Baseline,
    /// |difference| > the baseline's seed-to-seed difference.
    Measured { diff: f64, noise: f64 },
    /// |difference| <= the baseline's seed-to-seed difference.
    NotMeasured { diff: f64, noise: f64 },
    /// Fewer than 2 seeds: no seed-to-seed difference to compare with.
    OneSeed,
}

/// The seed's rule: `policy`'s mean minus `baseline`'s mean is measured only when its size
/// exceeds the baseline's seed-to-seed difference (largest minus smallest over the seeds).
pub fn verdict(baseline: &[f64], policy: &[f64]) -> Verdict {
    if baseline.len() < 2 || policy.is_empty() {
        return Verdict::OneSeed;
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let max = baseline.iter().copied().fold(f64::MIN, f64::max);
    let min = baseline.iter().copied().fold(f64::MAX, f64::min);
    let (diff, noise) = (mean(policy) - mean(baseline), max - min);
    // Four decimals, as the seed compares its figures (0.0188 does not exceed 0.0188).
    let round = |x: f64| (x * 10_000.0).round() / 10_000.0;
    if round(diff.abs()) > round(noise) {
        Verdict::Measured { diff, noise }
    } else {
        Verdict::NotMeasured { diff, noise }
    }
}

impl Verdict {
    pub fn text(&self) -> String {
        match *self {
            Verdict::Baseline => "baseline".into(),
            Verdict::OneSeed => "not measured (1 seed)".into(),
            Verdict::Measured { diff, noise } => format!(
                "{} {diff:+.4}, measured (> {noise:.4})",
                if diff < 0.0 { "worse" } else { "better" }
            ),
            Verdict::NotMeasured { diff, noise } => {
                format!("{diff:+.4}, not measured (<= {noise:.4})")
            }
        }
    }
}

/// One table row: a policy at a load, its figures over the seeds.
#[derive(Debug, Clone, PartialEq)]
pub struct StepRow {
    pub load: u32,
    /// The strategy's id as the user named it.
    pub policy: String,
    pub completion: Vec<f64>,
    pub interactive: Vec<f64>,
    pub calls: Vec<f64>,
    pub rejected: Vec<f64>,
    pub content_failures: Vec<f64>,
    pub tokens: Vec<f64>,
    pub wasted: Vec<f64>,
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// The rows of a summary's step runs, by load then in the strategies' order.
pub fn step_rows(s: &ScenarioSummary) -> Vec<StepRow> {
    let mut rows: Vec<StepRow> = Vec::new();
    for strategy in s.params.strategies() {
        let Some(load) = strategy.load else { continue };
        let runs: Vec<&StepFigures> = s
            .runs_of(&strategy.id)
            .filter_map(|r| r.steps.as_ref())
            .collect();
        if runs.is_empty() {
            continue;
        }
        let col = |f: &dyn Fn(&StepFigures) -> f64| runs.iter().map(|r| f(r)).collect::<Vec<_>>();
        rows.push(StepRow {
            load,
            policy: strategy.base_id().to_string(),
            completion: col(&|r| r.completion()),
            interactive: col(&|r| r.interactive_completion()),
            calls: col(&|r| r.batch_calls as f64),
            rejected: col(&|r| r.rejected as f64),
            content_failures: col(&|r| r.content_failures as f64),
            tokens: col(&|r| r.tokens as f64),
            wasted: col(&|r| r.wasted as f64),
        });
    }
    rows.sort_by_key(|r| r.load);
    rows
}

/// The baseline policy of a load: `none` if the run has it, else its first policy.
fn baseline(rows: &[StepRow], load: u32) -> Option<&StepRow> {
    let mut of_load = rows.iter().filter(|r| r.load == load);
    let first = of_load.clone().next();
    of_load.find(|r| r.policy == "none").or(first)
}

/// The seed's table: per load and policy, the means over the seeds and the verdicts on batch and
/// interactive completion against the baseline.
pub fn step_table(s: &ScenarioSummary) -> Option<Table> {
    let rows = step_rows(s);
    if rows.is_empty() {
        return None;
    }
    let headers = [
        "load",
        "policy",
        "completion",
        "interactive",
        "calls",
        "429s",
        "content failures",
        "tokens",
        "wasted tokens",
        "completion verdict",
        "interactive verdict",
    ];
    let mut out = Vec::new();
    for r in &rows {
        let base = baseline(&rows, r.load).expect("a load with rows has a baseline");
        let v = |b: &[f64], p: &[f64]| {
            if base.policy == r.policy {
                Verdict::Baseline
            } else {
                verdict(b, p)
            }
        };
        out.push(vec![
            format!("{}/step", r.load),
            r.policy.clone(),
            format!("{:.4}", mean(&r.completion)),
            format!("{:.4}", mean(&r.interactive)),
            format!("{:.1}", mean(&r.calls)),
            format!("{:.1}", mean(&r.rejected)),
            format!("{:.1}", mean(&r.content_failures)),
            format!("{:.0}", mean(&r.tokens)),
            format!("{:.0}", mean(&r.wasted)),
            v(&base.completion, &r.completion).text(),
            v(&base.interactive, &r.interactive).text(),
        ]);
    }
    Some(Table {
        headers: headers.iter().map(|h| h.to_string()).collect(),
        rows: out,
    })
}

/// Per seed: completion / interactive completion of each policy at each load.
pub fn step_seed_table(s: &ScenarioSummary) -> Option<Table> {
    let seeds = s.seeds();
    if seeds.len() < 2 {
        return None;
    }
    let mut headers = vec!["load".to_string(), "policy".to_string()];
    headers.extend(seeds.iter().map(|seed| format!("seed {seed}")));
    let mut rows = Vec::new();
    for strategy in s.params.strategies() {
        let Some(load) = strategy.load else { continue };
        let mut row = vec![format!("{load}/step"), strategy.base_id().to_string()];
        for seed in &seeds {
            let f = s
                .runs_of(&strategy.id)
                .find(|r| r.seed == *seed)
                .and_then(|r| r.steps.as_ref());
            row.push(f.map_or("-".into(), |f| {
                format!("{:.4} / {:.4}", f.completion(), f.interactive_completion())
            }));
        }
        rows.push(row);
    }
    Some(Table { headers, rows })
}

/// The ordering the seed shows under the heaviest load, checked on a summary: fixed retries
/// make batch and interactive completion worse than no retry, and the Retry-After-aware policy
/// does better than fixed (batch completion). `None` when the run lacks one of the policies.
pub fn heavy_ordering(s: &ScenarioSummary) -> Option<Vec<(String, bool)>> {
    let rows = step_rows(s);
    let heavy = rows.iter().map(|r| r.load).max()?;
    let get = |p: &str| rows.iter().find(|r| r.load == heavy && r.policy == p);
    let (none, fixed, aware) = (get("none")?, get("fixed")?, get("retry-after")?);
    Some(vec![
        (
            format!(
                "{heavy}/step: fixed completion {:.4} < none {:.4}",
                mean(&fixed.completion),
                mean(&none.completion)
            ),
            mean(&fixed.completion) < mean(&none.completion),
        ),
        (
            format!(
                "{heavy}/step: fixed interactive {:.4} < none {:.4}",
                mean(&fixed.interactive),
                mean(&none.interactive)
            ),
            mean(&fixed.interactive) < mean(&none.interactive),
        ),
        (
            format!(
                "{heavy}/step: retry-after completion {:.4} > fixed {:.4}",
                mean(&aware.completion),
                mean(&fixed.completion)
            ),
            mean(&aware.completion) > mean(&fixed.completion),
        ),
    ])
}

/// Live beside simulated: batch calls and 429s per load and policy (means over seeds), their
/// relative difference, and whether it is within `band` (0.05: 5%).
pub fn step_comparison(live: &ScenarioSummary, sim: &ScenarioSummary, band: f64) -> Table {
    let (l, m) = (step_rows(live), step_rows(sim));
    let mut rows = Vec::new();
    let rel = |a: f64, b: f64| {
        if a == b {
            0.0
        } else {
            (a - b).abs() / b.abs().max(1.0)
        }
    };
    for r in &l {
        let Some(s) = m.iter().find(|x| x.load == r.load && x.policy == r.policy) else {
            continue;
        };
        let (lc, sc) = (mean(&r.calls), mean(&s.calls));
        let (lr, sr) = (mean(&r.rejected), mean(&s.rejected));
        let ok = rel(lc, sc) <= band && rel(lr, sr) <= band;
        rows.push(vec![
            format!("{}/step", r.load),
            r.policy.clone(),
            format!("{lc:.1}"),
            format!("{sc:.1}"),
            format!("{:.1}%", 100.0 * rel(lc, sc)),
            format!("{lr:.1}"),
            format!("{sr:.1}"),
            format!("{:.1}%", 100.0 * rel(lr, sr)),
            format!("{:.4} / {:.4}", mean(&r.completion), mean(&s.completion)),
            if ok { "PASS" } else { "FAIL" }.into(),
        ]);
    }
    Table {
        headers: [
            "load",
            "policy",
            "calls live",
            "calls sim",
            "diff",
            "429s live",
            "429s sim",
            "diff",
            "completion live / sim",
            "within 5%",
        ]
        .iter()
        .map(|h| h.to_string())
        .collect(),
        rows,
    }
}

/// Prints the step tables of a summary (nothing for another workload).
pub fn print_step_tables<W: std::io::Write>(w: &mut W, s: &ScenarioSummary) -> std::io::Result<()> {
    let Some(t) = step_table(s) else {
        return Ok(());
    };
    writeln!(
        w,
        "\nWho pays for a retry (the rate-limit article; mean over {} seed(s); calls, 429s and content failures \
         of the batch flow, tokens of both flows; verdict: a difference from `none` is measured \
         only when it exceeds the seed-to-seed difference of `none`):",
        s.seeds().len()
    )?;
    write!(w, "{}", t.markdown())?;
    if let Some(t) = step_seed_table(s) {
        writeln!(w, "\nCompletion / interactive completion per seed:")?;
        write!(w, "{}", t.markdown())?;
    }
    if let Some(order) = heavy_ordering(s) {
        writeln!(w, "\nThe article's ordering under the heaviest load:")?;
        for (what, ok) in order {
            writeln!(w, "  {} {what}", if ok { "yes" } else { "NO " })?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verdict_is_the_seeds_rule() {
        // The seed: baseline 0.8562 and 0.8750 (difference 0.0188); backoff 0.8750 on the
        // first seed is +0.0188 over it: not measured; fixed 0.8000 is -0.0562: measured.
        let none = [0.8562, 0.8750];
        match verdict(&none, &[0.8750 + 0.0094]) {
            Verdict::NotMeasured { diff, noise } => {
                assert!((diff - 0.0188).abs() < 1e-9 && (noise - 0.0188).abs() < 1e-9)
            }
            v => panic!("{v:?}"),
        }
        assert!(matches!(
            verdict(&none, &[0.8000, 0.8250]),
            Verdict::Measured { diff, .. } if diff < 0.0
        ));
        assert_eq!(verdict(&[0.8562], &[0.8]), Verdict::OneSeed);
        assert!(verdict(&none, &[0.80, 0.8250]).text().starts_with("worse"));
        assert_eq!(Verdict::OneSeed.text(), "not measured (1 seed)");
    }

    #[test]
    fn costs_are_summed_per_flow_and_wasted_when_not_a_success() {
        let cfg = e03_model::steps::StepConfig {
            step: std::time::Duration::from_millis(100),
            steps: 10,
            batch_items: 4,
            burst_start: 0,
            burst_items: 0,
            load: 3,
            step_calls: 12,
            max_attempts: 4,
            interactive_every: 2,
            interactive_until: 10,
            interactive_budget: 1,
        };
        let mut t = StepTally::new(&cfg);
        t.call(0, Some(0), 1_000); // batch, step 0: ok
        t.call(1, Some(0), 101_000); // batch, step 1: 429
        t.call(2, Some(0), 201_000); // batch, step 2: timeout
        t.call(3, Some(1), 201_500); // interactive, step 2: cut off
        t.call(4, Some(0), 301_000); // batch: cut off
        t.answer(0, 200, Cause::Ok, Some(48));
        t.answer(1, 429, Cause::RateLimited, Some(0));
        t.answer(2, 504, Cause::Timeout, Some(46));
        t.answer(3, 502, Cause::Cutoff, Some(47));
        t.answer(4, 502, Cause::Cutoff, Some(47));
        t.operation(Some(Flow::Batch), true, 2_000);
        t.operation(Some(Flow::Interactive), false, 250_000);
        let f = t.finish();
        assert_eq!((f.batch_calls, f.interactive_calls), (4, 1));
        assert_eq!((f.rejected, f.content_failures), (1, 2));
        assert_eq!(f.tokens, 48 + 46 + 47 + 47);
        assert_eq!(f.wasted, 46 + 47 + 47, "the 429 cost nothing");
        assert_eq!(f.calls_per_step[..4], [1, 1, 2, 1]);
        assert_eq!(f.interactive_failed_at, [2]);
        assert_eq!(f.completion(), 0.25);
        assert_eq!(f.queries, 5);
    }
}
