//! Live runs only: the compact fidelity table and its WARNING lines for the terminal, the full
//! fidelity and matching lines of `report.md`, and the table of a run split over shards.
//!
//! Table builders like the figure modules' own; `tables.rs` prints them and re-exports them at
//! their old paths (`tables::fidelity_table` and the rest).

use crate::metrics::{Fidelity, RunMetrics};
use crate::stats::{format_value, Unit};
use crate::table::Table;
use crate::ScenarioSummary;

/// One row per shard of every live run split over swarm processes (docs/shards.md): its
/// attempts sent, the arrivals of its clients, whether they match, and its send lateness.
/// `None` when no run was split.
pub fn shards_table(s: &ScenarioSummary) -> Option<Table> {
    let rows: Vec<Vec<String>> = s
        .runs
        .iter()
        .flat_map(|r| {
            r.shards.iter().map(move |f| {
                let matched = if f.matched() {
                    "ok".to_string()
                } else {
                    format!(
                        "MISMATCH ({} sent not arrived, {} arrived not sent)",
                        f.unmatched_client, f.unmatched_server
                    )
                };
                vec![
                    format!("{} seed {}", r.strategy, r.seed),
                    f.shard.to_string(),
                    f.sent.to_string(),
                    f.arrived.to_string(),
                    matched,
                    format!("{:.2} ms", f.send_late_p99_ms),
                ]
            })
        })
        .collect();
    (!rows.is_empty()).then(|| Table {
        headers: [
            "run",
            "shard",
            "attempts sent",
            "arrived",
            "matched",
            "send late p99",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    })
}

/// Live only, for the terminal: one compact row per run (the full lines are in `report.md`).
pub fn fidelity_table(s: &ScenarioSummary) -> Option<Table> {
    let ms = |v: f64| format!("{v:.2} ms");
    let rows: Vec<Vec<String>> = s
        .runs
        .iter()
        .filter(|r| r.fidelity.is_some() || r.matched.is_some())
        .map(|r| {
            let (late, queue, answer, ratio) = match &r.fidelity {
                // Nothing measured is said so (a proxy in front of a real service queues and
                // schedules nothing of the model's), not shown as 0.00 ms.
                Some(f) => (
                    ms(f.lateness_p99_ms),
                    if f.queueing_samples == 0 {
                        "n/a".into()
                    } else {
                        ms(f.queueing_p99_ms)
                    },
                    if f.answer_samples == 0 {
                        "n/a".into()
                    } else {
                        ms(f.answer_lateness_p99_ms)
                    },
                    f.ratio.map_or("not measured".into(), |q| {
                        format_value(Unit::Share, q, false)
                    }),
                ),
                None => ("-".into(), "-".into(), "-".into(), "-".into()),
            };
            let matched = match &r.matched {
                // Attempts the fault proxy cut in a refused phase may be missing (docs/wire.md),
                // and cancelled hedges dropped before they were written.
                Some(m) if m.ok() && m.unmatched_client > 0 => format!(
                    "{}/{} ok ({} {})",
                    m.matched,
                    m.client_attempts,
                    m.unmatched_client,
                    if m.cut_by_proxy == 0 {
                        "cancelled unsent"
                    } else {
                        "cut"
                    }
                ),
                Some(m) if m.ok() => format!("{}/{} ok", m.matched, m.client_attempts),
                Some(m) if r.complete => format!("{}/{} MISMATCH", m.matched, m.client_attempts),
                Some(m) => format!("{}/{} incomplete", m.matched, m.client_attempts),
                None => "-".into(),
            };
            let mut row = vec![format!("{} seed {}", r.strategy, r.seed), late, answer];
            if let Some(m) = &s.machine {
                row.push(ms(m.wake_p99_ms));
            }
            row.extend([queue, ratio, matched]);
            row
        })
        .collect();
    let mut headers = vec!["run", "send late p99", "answer late p99"];
    if let Some(m) = &s.machine {
        // The machine's own floor beside the lab's lateness: whose lateness a WARNING is.
        headers.push(if m.scheduling == "SCHED_FIFO" {
            "machine wake p99 (FIFO)"
        } else {
            "machine wake p99"
        });
    }
    headers.extend(["queueing p99", "throughput/capacity", "attempts matched"]);
    (!rows.is_empty()).then(|| Table {
        headers: headers.into_iter().map(String::from).collect(),
        rows,
    })
}

/// WARNING lines of the live runs (fidelity thresholds crossed).
pub fn warning_lines(s: &ScenarioSummary) -> Vec<String> {
    let mut lines = Vec::new();
    for r in &s.runs {
        if let Some(f) = &r.fidelity {
            for w in f.warnings_beside(s.machine.as_ref()) {
                lines.push(format!("WARNING {} seed {}: {w}", r.strategy, r.seed));
            }
        }
    }
    lines
}

/// Live only: per run, send lateness, queueing outside the model, throughput while saturated,
/// with a WARNING line when a threshold is crossed.
pub fn fidelity_lines(s: &ScenarioSummary) -> Vec<String> {
    let mut lines = Vec::new();
    for r in &s.runs {
        let Some(f) = &r.fidelity else { continue };
        let throughput = throughput_text(f);
        lines.push(format!(
            "fidelity {} seed {}: send lateness p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; queueing outside the model p99 {:.2} ms, max {:.2} ms ({} samples); answers after their scheduled instant p99 {:.2} ms, max {:.2} ms; throughput while saturated: {throughput}",
            r.strategy, r.seed, f.lateness_p50_ms, f.lateness_p99_ms, f.lateness_max_ms,
            f.queueing_p99_ms, f.queueing_max_ms, f.queueing_samples,
            f.answer_lateness_p99_ms, f.answer_lateness_max_ms
        ));
        for w in f.warnings_beside(s.machine.as_ref()) {
            lines.push(format!("WARNING {} seed {}: {w}", r.strategy, r.seed));
        }
    }
    if let Some(m) = &s.machine {
        lines.push(format!(
            "machine floor ({}): before the traffic, a sleeping thread woke {:.2} ms late at p99 \
             ({:.3} ms mean, {:.2} ms max, {} wake-ups of 1 ms){}",
            m.scheduling,
            m.wake_p99_ms,
            m.wake_mean_ms,
            m.wake_max_ms,
            m.wake_samples,
            if m.why.is_empty() {
                String::new()
            } else {
                format!("; {}", m.why)
            }
        ));
    }
    lines
}

/// Achieved vs configured capacity, normal and degraded, and their combined ratio.
fn throughput_text(f: &Fidelity) -> String {
    let phase = |name: &str, secs: f64, achieved: Option<f64>, configured: f64| match achieved {
        Some(a) => format!(
            "{name} achieved {a:.1} req/s vs configured {configured:.1} req/s over {secs:.1} s"
        ),
        None => format!(
            "{name} not measured ({secs:.2} s of saturation; configured {configured:.1} req/s)"
        ),
    };
    let mut parts = vec![phase(
        "normal",
        f.saturated_s,
        f.achieved_rps,
        f.configured_rps,
    )];
    if let Some(c) = f.degraded_configured_rps {
        parts.push(phase(
            "degraded",
            f.degraded_saturated_s,
            f.degraded_achieved_rps,
            c,
        ));
    }
    parts.push(match f.ratio {
        Some(q) => format!("ratio {q:.3}"),
        None => "ratio not measured".to_string(),
    });
    parts.join(", ")
}

/// Live only: per run, client attempts vs server arrivals by identity.
pub fn matched_lines(s: &ScenarioSummary) -> Vec<String> {
    let mut lines = Vec::new();
    for r in &s.runs {
        let Some(m) = &r.matched else { continue };
        lines.push(format!(
            "matched {} seed {}: client attempts {}, server arrivals {}, matched {}, unmatched client {}, unmatched server {}{}",
            r.strategy, r.seed, m.client_attempts, m.server_arrivals, m.matched, m.unmatched_client, m.unmatched_server,
            if m.ok() { "" } else if r.complete { "  <-- MISMATCH: client and server logs disagree" } else { "  (run incomplete)" }
        ));
    }
    lines
}

/// Runs whose client and server logs disagree although the run completed.
pub fn mismatched_complete_runs(s: &ScenarioSummary) -> Vec<&RunMetrics> {
    s.runs
        .iter()
        .filter(|r| r.complete && r.matched.as_ref().is_some_and(|m| !m.ok()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_summaries::wide_summary;

    #[test]
    fn throughput_text_shows_both_capacities_and_the_ratio() {
        let mut f = Fidelity {
            lateness_p50_ms: 0.0,
            lateness_p99_ms: 0.0,
            lateness_max_ms: 0.0,
            queueing_samples: 0,
            queueing_p99_ms: 0.0,
            queueing_max_ms: 0.0,
            answer_lateness_p99_ms: 0.0,
            answer_lateness_max_ms: 0.0,
            answer_samples: 0,
            saturated_s: 0.1,
            achieved_rps: None,
            configured_rps: 250.0,
            degraded_saturated_s: 1.5,
            degraded_achieved_rps: Some(124.0),
            degraded_configured_rps: Some(125.0),
            ratio: Some(0.99),
        };
        assert_eq!(
            throughput_text(&f),
            "normal not measured (0.10 s of saturation; configured 250.0 req/s), degraded \
             achieved 124.0 req/s vs configured 125.0 req/s over 1.5 s, ratio 0.990"
        );
        f.degraded_configured_rps = None;
        f.ratio = None;
        assert_eq!(
            throughput_text(&f),
            "normal not measured (0.10 s of saturation; configured 250.0 req/s), ratio not \
             measured"
        );
    }

    #[test]
    fn the_fidelity_table_shows_the_machine_floor_beside_the_lateness() {
        use crate::fidelity::MachineFloor;
        let mut s = wide_summary();
        s.simulated = false;
        let plain = fidelity_table(&s).expect("live runs have fidelity");
        assert!(!plain.headers.iter().any(|h| h.starts_with("machine")));
        s.machine = Some(MachineFloor {
            scheduling: "SCHED_OTHER".into(),
            why: "SCHED_FIFO refused".into(),
            wake_samples: 1000,
            wake_p99_ms: 2.5,
            wake_mean_ms: 0.17,
            wake_max_ms: 4.0,
        });
        let t = fidelity_table(&s).unwrap();
        let col = t
            .headers
            .iter()
            .position(|h| h == "machine wake p99")
            .unwrap();
        assert_eq!(t.headers[col - 1], "answer late p99");
        assert_eq!(t.headers[col - 2], "send late p99");
        assert!(
            t.rows.iter().all(|r| r[col] == "2.50 ms"),
            "{:?}",
            t.rows[0]
        );
        // Nothing measured (a proxy in front of a real service): n/a, not 0.00 ms.
        for r in &mut s.runs {
            if let Some(f) = r.fidelity.as_mut() {
                f.answer_samples = 0;
                f.queueing_samples = 0;
            }
        }
        let none = fidelity_table(&s).unwrap();
        let queue = none
            .headers
            .iter()
            .position(|h| h == "queueing p99")
            .unwrap();
        assert!(
            none.rows
                .iter()
                .all(|r| r[col - 1] == "n/a" && r[queue] == "n/a"),
            "{:?}",
            none.rows[0]
        );
        let lines = fidelity_lines(&s);
        assert!(
            lines.iter().any(|l| l.starts_with(
                "machine floor (SCHED_OTHER): before the traffic, \
                 a sleeping thread woke 2.50 ms late at p99"
            ) && l.ends_with("; SCHED_FIFO refused")),
            "{lines:?}"
        );
    }
}
