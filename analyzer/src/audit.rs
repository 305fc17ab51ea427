//! `lab audit`'s scorecard: seed 004's checklist, graded from the audit's log alone
//! (`audit.jsonl`, records of [`e03_core::audit`]).
//!
//! Each row answers one question of the seed's checklist with PASS, WARN or FAIL, the evidence
//! (counts and times from the log) and the seed's advice in one line. The thresholds, all in
//! `docs/audit.md`:
//!
//! - classification: FAIL when a 400, 404, 409 or 422 was sent again;
//! - idempotency: FAIL when one operation's POST was charged more than once (a retry without an
//!   `Idempotency-Key`, or with a new one);
//! - attempt timeout: PASS when the held first attempt was given up within 10 s, WARN later, FAIL
//!   when the client was stopped at the probe's limit still waiting;
//! - deadline: PASS when the client stopped within 15 s of its first attempt, WARN later, FAIL
//!   when stopped at the limit;
//! - backoff: the waits between attempts on a 503 grow (the last at least 1.5x the first) and
//!   are randomized (their spread across the 8 instances, the standard deviations of each retry's
//!   wait summed over their means summed, at least 0.10): PASS for
//!   both, WARN for one, FAIL for neither or for immediate retries (median wait under 20 ms);
//! - Retry-After: FAIL when a retry came more than 100 ms before the time the header gave, WARN
//!   when one came early by less (5 ms early still counts as on time: the two clocks) or when
//!   the client did not retry;
//! - amplification: attempts per operation in a total outage: PASS at 2 or fewer or when they
//!   fall by half from the first third of the operations to the last (a budget or a breaker);
//!   WARN up to 4; FAIL above;
//! - other layers: FAIL when more attempts reached the dependency in one operation than the
//!   client claims to make (`--attempts N`); WARN when no claim was given.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context;
use e03_core::audit::{AuditRecord, Probe, ProbeKind, ProbeRequest};
use serde::{Deserialize, Serialize};

/// A verdict of the scorecard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Verdict {
    Pass,
    Warn,
    Fail,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Warn => "WARN",
            Verdict::Fail => "FAIL",
        }
    }
}

/// One row: a question of seed 004's checklist.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// The checklist item it belongs to (1 to 5).
    pub item: u32,
    pub check: String,
    pub verdict: Verdict,
    pub evidence: String,
    pub advice: String,
}

/// The whole scorecard.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scorecard {
    pub command: Vec<String>,
    pub claimed_attempts: Option<u32>,
    /// False when the audit was stopped before its battery ended (then nothing is graded).
    pub complete: bool,
    pub rows: Vec<Row>,
}

impl Scorecard {
    pub fn failed(&self) -> bool {
        self.rows.iter().any(|r| r.verdict == Verdict::Fail)
    }

    /// The verdict of the row named `check`.
    pub fn verdict(&self, check: &str) -> Option<Verdict> {
        self.rows
            .iter()
            .find(|r| r.check == check)
            .map(|r| r.verdict)
    }

    /// The table `lab audit` prints.
    pub fn table(&self) -> String {
        let w = self.rows.iter().map(|r| r.check.len()).max().unwrap_or(5);
        let mut s = format!("| # | {:w$} | verdict | evidence |\n", "check");
        let _ = writeln!(s, "|---|{}|---------|----------|", "-".repeat(w + 2));
        for r in &self.rows {
            let _ = writeln!(
                s,
                "| {} | {:w$} | {:7} | {} |",
                r.item,
                r.check,
                r.verdict.as_str(),
                r.evidence
            );
        }
        s
    }

    /// `scorecard.md`: the table, then each row's advice.
    pub fn markdown(&self) -> String {
        let mut s = String::from("# Retry audit (seed 004's checklist)\n\n");
        if !self.command.is_empty() {
            let _ = writeln!(s, "Client: `{}`\n", self.command.join(" "));
        }
        s.push_str(&self.table());
        s.push_str("\n## Advice\n\n");
        for r in &self.rows {
            let _ = writeln!(
                s,
                "- **{}** ({}): {}",
                r.check,
                r.verdict.as_str(),
                r.advice
            );
        }
        s
    }
}

/// Reads an audit log.
pub fn read_log(path: &Path) -> anyhow::Result<Vec<AuditRecord>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).with_context(|| format!("{} line {}", path.display(), i + 1))
        })
        .collect()
}

/// What the log says about one run of the client on one probe instance.
#[derive(Debug, Clone, Copy, Default)]
struct Run {
    ended_us: u64,
    stopped_at_limit: bool,
}

struct Log<'a> {
    probes: Vec<Probe>,
    /// Requests by (probe, instance), in arrival order.
    requests: BTreeMap<(&'a str, u32), Vec<&'a ProbeRequest>>,
    runs: BTreeMap<(&'a str, u32), Run>,
}

impl<'a> Log<'a> {
    fn of(&self, probe: &str) -> Vec<(u32, &Vec<&'a ProbeRequest>)> {
        self.requests
            .iter()
            .filter(|((p, _), _)| *p == probe)
            .map(|((_, i), r)| (*i, r))
            .collect()
    }

    fn run(&self, probe: &str, instance: u32) -> Run {
        self.runs
            .iter()
            .find(|((p, i), _)| *p == probe && *i == instance)
            .map(|(_, r)| *r)
            .unwrap_or_default()
    }

    fn named(&self, kind: impl Fn(&ProbeKind) -> bool) -> Vec<&Probe> {
        self.probes.iter().filter(|p| kind(&p.kind)).collect()
    }
}

const ADVICE_CLASSIFY: &str = "Retry only transient failures (408, 425, 429, 500, 502, 503, 504, \
     timeouts, resets, refused connections); raise 400, 401, 403, 404, 409 and 422 at once: the \
     same request gets the same answer.";
const ADVICE_IDEMPOTENCY: &str = "Make the idempotency key once per operation, not per attempt, \
     and send it with every retry of a write; without one, do not retry a POST.";
const ADVICE_TIMEOUT: &str = "Give every attempt a timeout.";
const ADVICE_DEADLINE: &str = "Give the whole retry loop a deadline.";
const ADVICE_BACKOFF: &str = "Back off exponentially, randomize the wait (jitter), and cap it.";
const ADVICE_RETRY_AFTER: &str = "When the server says when to come back (Retry-After), set your \
     own backoff aside and wait that long.";
const ADVICE_AMPLIFICATION: &str = "In an outage, each layer that retries 3 times sends 4 times \
     the load; bound retries with a budget or a breaker.";
const ADVICE_LAYERS: &str = "Retry in one layer of the stack only, usually the outermost; turn \
     off or narrow a library's silent retries.";

fn s(us: u64) -> String {
    format!("{:.2} s", us as f64 / 1e6)
}

/// Grades the audit's log.
pub fn grade(records: &[AuditRecord]) -> Scorecard {
    let mut card = Scorecard {
        command: Vec::new(),
        claimed_attempts: None,
        complete: false,
        rows: Vec::new(),
    };
    let mut log = Log {
        probes: Vec::new(),
        requests: BTreeMap::new(),
        runs: BTreeMap::new(),
    };
    for r in records {
        match r {
            AuditRecord::AuditStart {
                probes,
                command,
                claimed_attempts,
            } => {
                log.probes.clone_from(probes);
                card.command.clone_from(command);
                card.claimed_attempts = *claimed_attempts;
            }
            AuditRecord::Request(q) => log
                .requests
                .entry((q.probe.as_str(), q.instance))
                .or_default()
                .push(q),
            AuditRecord::ClientRun {
                probe,
                instance,
                ended_us,
                stopped_at_limit,
                ..
            } => {
                log.runs.insert(
                    (probe.as_str(), *instance),
                    Run {
                        ended_us: *ended_us,
                        stopped_at_limit: *stopped_at_limit,
                    },
                );
            }
            AuditRecord::AuditEnd { complete } => card.complete = *complete,
        }
    }
    for list in log.requests.values_mut() {
        list.sort_by_key(|q| (q.arrived_us, q.attempt));
    }
    if !card.complete {
        return card;
    }
    card.rows = vec![
        classification(&log),
        idempotency(&log),
        attempt_timeout(&log),
        deadline(&log),
        backoff(&log),
        retry_after(&log),
        amplification(&log),
        layers(&log, card.claimed_attempts),
    ];
    card
}

fn row(item: u32, check: &str, verdict: Verdict, evidence: String, advice: &str) -> Row {
    Row {
        item,
        check: check.into(),
        verdict,
        evidence,
        advice: advice.into(),
    }
}

fn classification(log: &Log) -> Row {
    let mut parts = Vec::new();
    let mut verdict = Verdict::Pass;
    for p in log.named(|k| matches!(k, ProbeKind::Classify { .. })) {
        let ProbeKind::Classify { status } = p.kind else {
            continue;
        };
        let n: usize = log.of(&p.name).iter().map(|(_, r)| r.len()).sum();
        let what = match n {
            0 => {
                verdict = verdict.max(Verdict::Warn);
                "no request".to_string()
            }
            1 => "1 attempt".to_string(),
            n => {
                verdict = Verdict::Fail;
                format!("{n} attempts (retried)")
            }
        };
        parts.push(format!("{status}: {what}"));
    }
    row(
        1,
        "classification",
        verdict,
        parts.join(", "),
        ADVICE_CLASSIFY,
    )
}

fn idempotency(log: &Log) -> Row {
    let reqs: Vec<&ProbeRequest> = log
        .of("idempotency")
        .into_iter()
        .flat_map(|(_, r)| r.iter().copied())
        .collect();
    let (verdict, evidence) = if reqs.is_empty() {
        (Verdict::Warn, "no request".to_string())
    } else if reqs.iter().all(|q| q.method != "POST") {
        (
            Verdict::Warn,
            format!(
                "the client sent {} instead of POST (E03_TARGET_METHOD)",
                reqs[0].method
            ),
        )
    } else {
        let charges = reqs.iter().filter(|q| q.charged).count();
        let mut keys: Vec<&str> = reqs
            .iter()
            .filter_map(|q| q.idempotency_key.as_deref())
            .collect();
        keys.sort_unstable();
        keys.dedup();
        let keyless = reqs.iter().filter(|q| q.idempotency_key.is_none()).count();
        let attempts = reqs.len();
        let said = format!(
            "{attempts} attempt{}, {} Idempotency-Key{}{}, {charges} charge{}",
            if attempts == 1 { "" } else { "s" },
            keys.len(),
            if keys.len() == 1 { "" } else { "s" },
            if keyless > 0 {
                format!(" ({keyless} attempts without one)")
            } else {
                String::new()
            },
            if charges == 1 { "" } else { "s" },
        );
        if charges <= 1 {
            let why = if attempts == 1 {
                "the POST was not retried"
            } else {
                "every retry carried the same key"
            };
            (Verdict::Pass, format!("{said}: {why}"))
        } else {
            let why = if keys.len() > 1 {
                "a new key per attempt"
            } else {
                "retried without a key"
            };
            (
                Verdict::Fail,
                format!("{said}: {why}, so the work was done {charges} times"),
            )
        }
    };
    row(2, "idempotency", verdict, evidence, ADVICE_IDEMPOTENCY)
}

/// The client was stopped by the lab, and this request ended with it (not before).
fn ended_by_the_stop(q: &ProbeRequest, run: Run) -> bool {
    run.stopped_at_limit && q.status.is_none() && q.ended_us + 300_000 >= run.ended_us
}

fn attempt_timeout(log: &Log) -> Row {
    let reqs = log.of("timeout");
    let limit = log
        .probes
        .iter()
        .find(|p| p.name == "timeout")
        .map_or(0, |p| p.limit_ms);
    let (verdict, evidence) = match reqs.first() {
        None => (Verdict::Warn, "no request".to_string()),
        Some((instance, r)) => {
            let first = r[0];
            let run = log.run("timeout", *instance);
            if ended_by_the_stop(first, run) || first.status.is_some() {
                (
                    Verdict::Fail,
                    format!(
                        "the first attempt got no answer and the client still waited for it \
                         when it was stopped at the probe's limit ({} s)",
                        limit / 1000
                    ),
                )
            } else {
                let gave_up = first.ended_us - first.arrived_us;
                let then = if r.len() > 1 {
                    format!(", then {} more attempt(s)", r.len() - 1)
                } else {
                    ", and did not retry".to_string()
                };
                let v = if gave_up <= 10_000_000 {
                    Verdict::Pass
                } else {
                    Verdict::Warn
                };
                (
                    v,
                    format!(
                        "gave up on an attempt with no answer after {}{then}",
                        s(gave_up)
                    ),
                )
            }
        }
    };
    row(3, "attempt timeout", verdict, evidence, ADVICE_TIMEOUT)
}

fn deadline(log: &Log) -> Row {
    let reqs = log.of("deadline");
    let (verdict, evidence) = match reqs.first() {
        None => (Verdict::Warn, "no request".to_string()),
        Some((instance, r)) => {
            let run = log.run("deadline", *instance);
            let start = r[0].arrived_us;
            let end = r.iter().map(|q| q.ended_us).max().unwrap_or(start);
            let kept = end - start;
            if run.stopped_at_limit {
                (
                    Verdict::Fail,
                    format!(
                        "{} attempt(s) with no answer; the operation was still alive when the \
                         client was stopped at the probe's limit, {} after its first attempt",
                        r.len(),
                        s(run.ended_us.saturating_sub(start))
                    ),
                )
            } else {
                let v = if kept <= 15_000_000 {
                    Verdict::Pass
                } else {
                    Verdict::Warn
                };
                (
                    v,
                    format!(
                        "{} attempt(s) with no answer; the operation ended {} after its first",
                        r.len(),
                        s(kept)
                    ),
                )
            }
        }
    };
    row(3, "deadline", verdict, evidence, ADVICE_DEADLINE)
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// Waits between the end of each attempt and the next one's arrival, µs.
fn waits(r: &[&ProbeRequest]) -> Vec<u64> {
    r.windows(2)
        .map(|w| w[1].arrived_us.saturating_sub(w[0].ended_us))
        .collect()
}

fn backoff(log: &Log) -> Row {
    let instances = log.of("backoff");
    let all: Vec<Vec<u64>> = instances.iter().map(|(_, r)| waits(r)).collect();
    let mut flat: Vec<u64> = all.iter().flatten().copied().collect();
    let (verdict, evidence) = if flat.is_empty() {
        let n = instances.len();
        (
            Verdict::Warn,
            format!("{n} instance(s) sent one attempt each and did not retry a 503"),
        )
    } else {
        flat.sort_unstable();
        let median = flat[flat.len() / 2];
        let cap = *flat.last().expect("not empty");
        let longest = all.iter().map(Vec::len).max().unwrap_or(0);
        // Mean wait and spread across instances per retry number; the spread is pooled (the
        // sum of the standard deviations over the sum of the means), so that a near-zero first
        // wait (urllib3's) does not count its timer noise as randomization.
        let mut means = Vec::new();
        let (mut sd_sum, mut mean_sum) = (0.0, 0.0);
        for k in 0..longest {
            let v: Vec<f64> = all
                .iter()
                .filter_map(|w| w.get(k))
                .map(|&u| u as f64)
                .collect();
            let m = mean(&v);
            means.push(m);
            if v.len() >= 2 {
                let var = v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / v.len() as f64;
                sd_sum += var.sqrt();
                mean_sum += m;
            }
        }
        let grows = means.len() >= 2 && means[means.len() - 1] >= 1.5 * means[0];
        let spread = if mean_sum > 0.0 {
            sd_sum / mean_sum
        } else {
            0.0
        };
        let randomized = spread >= 0.10;
        let mut retries: Vec<u64> = instances
            .iter()
            .flat_map(|(_, r)| r.iter().skip(1).map(|q| q.arrived_us))
            .collect();
        retries.sort_unstable();
        let peak = retries
            .iter()
            .enumerate()
            .map(|(i, &t)| {
                retries[i..]
                    .iter()
                    .take_while(|&&u| u < t + 100_000)
                    .count()
            })
            .max()
            .unwrap_or(0);
        let shown: Vec<String> = means.iter().map(|m| format!("{:.0}", m / 1000.0)).collect();
        let evidence = format!(
            "mean waits {} ms ({}), spread {spread:.2} across {} instances ({}), \
             peak {peak} retries in 100 ms, longest wait {}",
            shown.join(", "),
            if grows { "growing" } else { "not growing" },
            instances.len(),
            if randomized {
                "randomized"
            } else {
                "synchronized"
            },
            s(cap)
        );
        let v = if median < 20_000 {
            Verdict::Fail
        } else {
            match (grows, randomized) {
                (true, true) => Verdict::Pass,
                (false, false) => Verdict::Fail,
                _ => Verdict::Warn,
            }
        };
        let evidence = if median < 20_000 {
            format!(
                "immediate retries (median wait {} ms); {evidence}",
                median / 1000
            )
        } else {
            evidence
        };
        (v, evidence)
    };
    row(4, "backoff", verdict, evidence, ADVICE_BACKOFF)
}

/// A retry this close before the time a `Retry-After` gave is on time: the client's clock and
/// the lab's, both read on this machine, differ by about a millisecond (an HTTP date is read
/// against the client's wall clock).
const ON_TIME_US: u64 = 5_000;

fn retry_after(log: &Log) -> Row {
    let mut parts = Vec::new();
    let mut verdict = Verdict::Pass;
    for p in log.named(|k| matches!(k, ProbeKind::RetryAfter { .. })) {
        let ProbeKind::RetryAfter { status, date } = p.kind else {
            continue;
        };
        let form = if date { "date" } else { "seconds" };
        let reqs: Vec<&ProbeRequest> = log
            .of(&p.name)
            .into_iter()
            .flat_map(|(_, r)| r.iter().copied())
            .collect();
        let what = match (reqs.first(), reqs.get(1)) {
            (None, _) => {
                verdict = verdict.max(Verdict::Warn);
                "no request".to_string()
            }
            (Some(_), None) => {
                verdict = verdict.max(Verdict::Warn);
                "not retried".to_string()
            }
            (Some(first), Some(next)) => {
                let due = first.not_before_us.unwrap_or(first.ended_us);
                if next.arrived_us + ON_TIME_US >= due {
                    format!("{} after", s(next.arrived_us.saturating_sub(due)))
                } else {
                    let early = due - next.arrived_us;
                    verdict = verdict.max(if early > 100_000 {
                        Verdict::Fail
                    } else {
                        Verdict::Warn
                    });
                    format!("{} EARLY", s(early))
                }
            }
        };
        parts.push(format!("{status} {form}: {what}"));
    }
    row(
        4,
        "Retry-After",
        verdict,
        parts.join(", "),
        ADVICE_RETRY_AFTER,
    )
}

/// Attempts per operation in the outage probe: per named operation (`x-e03-op`) when
/// every attempt names one, or inferred from the operations the client was asked to run.
fn outage_ops(log: &Log) -> Option<(Vec<u32>, bool, u32)> {
    let probe = log.probes.iter().find(|p| p.kind == ProbeKind::Outage)?;
    let reqs: Vec<&ProbeRequest> = log
        .of(&probe.name)
        .into_iter()
        .flat_map(|(_, r)| r.iter().copied())
        .collect();
    if reqs.is_empty() {
        return None;
    }
    if reqs.iter().all(|q| q.operation.is_some()) {
        let mut order: Vec<&str> = Vec::new();
        let mut counts: BTreeMap<&str, u32> = BTreeMap::new();
        for q in &reqs {
            let op = q.operation.as_deref().expect("checked");
            if !counts.contains_key(op) {
                order.push(op);
            }
            *counts.entry(op).or_default() += 1;
        }
        let per_op = order.iter().map(|o| counts[o]).collect();
        Some((per_op, true, reqs.len() as u32))
    } else {
        Some((Vec::new(), false, reqs.len() as u32))
    }
}

/// Whether a run of the client on `probe` was stopped at the probe's limit.
fn stopped(log: &Log, probe: &str) -> bool {
    log.runs
        .iter()
        .any(|((p, _), r)| *p == probe && r.stopped_at_limit)
}

fn amplification(log: &Log) -> Row {
    let ops = log
        .probes
        .iter()
        .find(|p| p.kind == ProbeKind::Outage)
        .map_or(1, |p| p.operations * p.instances);
    let (verdict, evidence) = match outage_ops(log) {
        None => (Verdict::Warn, "no request".to_string()),
        Some((_, false, total)) if stopped(log, "outage") => {
            // Fewer operations than asked may have run: the count is only a floor.
            let floor = f64::from(total) / f64::from(ops.max(1));
            (
                if floor > 4.0 {
                    Verdict::Fail
                } else {
                    Verdict::Warn
                },
                format!(
                    "stopped at the probe's limit after {total} attempts, at least {floor:.1} per \
                     operation; name operations (x-e03-op) to count them"
                ),
            )
        }
        Some((per_op, named, total)) => {
            let n_ops = if named { per_op.len() as u32 } else { ops };
            let a = f64::from(total) / f64::from(n_ops.max(1));
            let how = if named {
                "operations named by x-e03-op"
            } else {
                "operations inferred: the count the client was asked to run"
            };
            let (falling, trend) = if named && per_op.len() >= 3 {
                let third = per_op.len() / 3;
                let avg = |v: &[u32]| v.iter().map(|&x| f64::from(x)).sum::<f64>() / v.len() as f64;
                let first = avg(&per_op[..third]);
                let last = avg(&per_op[per_op.len() - third..]);
                (
                    last <= 0.5 * first,
                    format!("; per operation {first:.1} in the first third, {last:.1} in the last"),
                )
            } else {
                (false, String::new())
            };
            let v = if a <= 2.0 || falling {
                Verdict::Pass
            } else if a <= 4.0 {
                Verdict::Warn
            } else {
                Verdict::Fail
            };
            (
                v,
                format!("{total} attempts for {n_ops} failing operations: {a:.1} per operation{trend} ({how})"),
            )
        }
    };
    row(5, "amplification", verdict, evidence, ADVICE_AMPLIFICATION)
}

fn layers(log: &Log, claimed: Option<u32>) -> Row {
    // One operation per backoff instance; per named operation in the outage.
    let mut most = log
        .of("backoff")
        .iter()
        .map(|(_, r)| r.len() as u32)
        .max()
        .unwrap_or(0);
    if let Some((per_op, true, _)) = outage_ops(log) {
        most = most.max(per_op.into_iter().max().unwrap_or(0));
    }
    let (verdict, evidence) = match claimed {
        None => (
            Verdict::Warn,
            format!(
                "at most {most} attempts reached the dependency in one operation; give \
                 --attempts N (what the client says it makes) to check for another layer"
            ),
        ),
        Some(n) if most > n => (
            Verdict::Fail,
            format!(
                "{most} attempts reached the dependency in one operation; the client claims \
                 {n}: another layer retries too"
            ),
        ),
        Some(n) => (
            Verdict::Pass,
            format!("at most {most} attempts in one operation; the client claims {n}"),
        ),
    };
    row(5, "other layers", verdict, evidence, ADVICE_LAYERS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use e03_core::audit::battery;

    fn req(
        probe: &str,
        instance: u32,
        attempt: u32,
        arrived_ms: u64,
        ended_ms: u64,
    ) -> AuditRecord {
        AuditRecord::Request(ProbeRequest {
            probe: probe.into(),
            instance,
            attempt,
            method: "GET".into(),
            arrived_us: arrived_ms * 1000,
            ended_us: ended_ms * 1000,
            status: Some(503),
            retry_after: None,
            not_before_us: None,
            idempotency_key: None,
            operation: None,
            charged: false,
        })
    }

    fn card(mut records: Vec<AuditRecord>) -> Scorecard {
        records.insert(
            0,
            AuditRecord::AuditStart {
                probes: battery(),
                command: vec!["client".into()],
                claimed_attempts: Some(3),
            },
        );
        records.push(AuditRecord::AuditEnd { complete: true });
        grade(&records)
    }

    #[test]
    fn a_stopped_audit_grades_nothing() {
        let c = grade(&[AuditRecord::AuditEnd { complete: false }]);
        assert!(c.rows.is_empty() && !c.complete && !c.failed());
    }

    #[test]
    fn a_retried_404_fails_classification() {
        let c = card(vec![
            req("classify-400", 0, 1, 0, 1),
            req("classify-404", 0, 1, 10, 11),
            req("classify-404", 0, 2, 20, 21),
            req("classify-409", 0, 1, 30, 31),
            req("classify-422", 0, 1, 40, 41),
        ]);
        assert_eq!(c.verdict("classification"), Some(Verdict::Fail));
        assert_eq!(
            c.rows[0].evidence,
            "400: 1 attempt, 404: 2 attempts (retried), 409: 1 attempt, 422: 1 attempt"
        );
    }

    /// Waits by hand: instance 0 waits 100 then 200 ms, instance 1 140 then 260 ms: means 120
    /// and 230 (growing, 230 >= 1.5 * 120), standard deviations 20 and 30, spread
    /// (20 + 30) / (120 + 230) = 0.143 (randomized): PASS. The same waits in both instances: synchronized: WARN.
    #[test]
    fn backoff_is_graded_on_growth_and_spread() {
        let both = |w1: [u64; 2]| {
            let mut v = vec![
                req("backoff", 0, 1, 0, 0),
                req("backoff", 0, 2, 100, 100),
                req("backoff", 0, 3, 300, 300),
            ];
            v.push(req("backoff", 1, 1, 0, 0));
            v.push(req("backoff", 1, 2, w1[0], w1[0]));
            v.push(req("backoff", 1, 3, w1[0] + w1[1], w1[0] + w1[1]));
            card(v)
        };
        let c = both([140, 260]);
        let row = c.rows.iter().find(|r| r.check == "backoff").unwrap();
        assert_eq!(row.verdict, Verdict::Pass, "{}", row.evidence);
        assert!(
            row.evidence.contains("mean waits 120, 230 ms"),
            "{}",
            row.evidence
        );
        assert!(row.evidence.contains("spread 0.14"), "{}", row.evidence);
        assert_eq!(both([100, 200]).verdict("backoff"), Some(Verdict::Warn));
        // Immediate retries: FAIL whatever else.
        let c = card(vec![
            req("backoff", 0, 1, 0, 0),
            req("backoff", 0, 2, 1, 1),
            req("backoff", 0, 3, 2, 2),
        ]);
        assert_eq!(c.verdict("backoff"), Some(Verdict::Fail));
        // urllib3's shape: a first wait of almost nothing, then the same waits everywhere.
        // Pooled spread (2 + 2) / (4 + 202) = 0.02: synchronized, however noisy the first wait.
        let c = card(vec![
            req("backoff", 0, 1, 0, 0),
            req("backoff", 0, 2, 2, 2),
            req("backoff", 0, 3, 202, 202),
            req("backoff", 1, 1, 0, 0),
            req("backoff", 1, 2, 6, 6),
            req("backoff", 1, 3, 210, 210),
        ]);
        let row = c.rows.iter().find(|r| r.check == "backoff").unwrap();
        assert_eq!(row.verdict, Verdict::Warn, "{}", row.evidence);
        assert!(row.evidence.contains("spread 0.02"), "{}", row.evidence);
    }

    #[test]
    fn retry_after_early_by_more_than_100_ms_fails() {
        let ra = |arrived_ms: u64, next_ms: u64| {
            let mut first = req("retry-after-429-seconds", 0, 1, 0, 1);
            if let AuditRecord::Request(q) = &mut first {
                q.not_before_us = Some(arrived_ms * 1000);
            }
            card(vec![
                first,
                req("retry-after-429-seconds", 0, 2, next_ms, next_ms + 1),
            ])
        };
        // The other three probes got no request: WARN at best.
        assert_eq!(ra(2000, 2001).verdict("Retry-After"), Some(Verdict::Warn));
        assert_eq!(ra(2000, 1950).verdict("Retry-After"), Some(Verdict::Warn));
        // 4 ms early is on time (the two clocks).
        let c = ra(2000, 1996);
        assert!(
            c.rows[5].evidence.starts_with("429 seconds: 0.00 s after"),
            "{}",
            c.rows[5].evidence
        );
        let c = ra(2000, 500);
        assert_eq!(c.verdict("Retry-After"), Some(Verdict::Fail));
        assert!(
            c.rows[5].evidence.starts_with("429 seconds: 1.50 s EARLY"),
            "{}",
            c.rows[5].evidence
        );
    }

    #[test]
    fn a_new_key_per_attempt_is_two_charges_and_fails() {
        let post = |attempt: u32, key: &str, charged: bool| {
            let mut r = req("idempotency", 0, attempt, u64::from(attempt) * 10, 0);
            if let AuditRecord::Request(q) = &mut r {
                q.method = "POST".into();
                q.idempotency_key = Some(key.into());
                q.charged = charged;
            }
            r
        };
        let c = card(vec![post(1, "a", true), post(2, "b", true)]);
        assert_eq!(c.verdict("idempotency"), Some(Verdict::Fail));
        assert!(c.rows[1].evidence.contains("a new key per attempt"));
        let c = card(vec![post(1, "a", true), post(2, "a", false)]);
        assert_eq!(c.verdict("idempotency"), Some(Verdict::Pass));
    }

    #[test]
    fn amplification_counts_named_operations_and_sees_a_budget() {
        // 9 named operations: 4, 4, 4 attempts, then 1 each: falling by more than half.
        let mut v = Vec::new();
        let mut t = 0;
        for (op, n) in [4u32, 4, 4, 1, 1, 1, 1, 1, 1].into_iter().enumerate() {
            for a in 1..=n {
                let mut r = req("outage", 0, a, t, t);
                if let AuditRecord::Request(q) = &mut r {
                    q.operation = Some(format!("op{op}"));
                }
                v.push(r);
                t += 10;
            }
        }
        let c = card(v);
        let row = c.rows.iter().find(|r| r.check == "amplification").unwrap();
        assert_eq!(row.verdict, Verdict::Pass, "{}", row.evidence);
        assert!(
            row.evidence
                .starts_with("18 attempts for 9 failing operations: 2.0"),
            "{}",
            row.evidence
        );
        // Claimed 3 attempts, 4 seen in one operation: another layer.
        assert_eq!(c.verdict("other layers"), Some(Verdict::Fail));
    }
}
