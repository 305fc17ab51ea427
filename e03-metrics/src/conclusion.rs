//! The plain-language conclusion under the comparison ([`conclusion`]): what the figures and
//! the seed-to-seed verdicts show, in words, and one line per pair of strategies that differ
//! ([`pair_lines`]).
//!
//! Apart from `tables.rs`, which prints it under the comparison and re-exports it at its old
//! path (`tables::conclusion`); the measures it shares with the tables are in `measures.rs`.

use crate::measures::{spread_of, Metric, PEAK_100MS, RETRIES, SUCCESS, TOTAL};
use crate::metrics::RunMetrics;
use crate::stats::{format_difference, format_value, Unit};
use crate::table::{Spread, Verdict};
use crate::ScenarioSummary;

/// A measure the conclusion compares: name, unit, more is better, its value in a run.
type Compared = (&'static str, Unit, bool, fn(&RunMetrics) -> f64);

/// The measures the conclusion compares for every pair of strategies: name, unit, whether more
/// is better, and how to read it from a run.
const COMPARED: [Compared; 4] = [
    ("success", Unit::Share, true, |r| r.success_affected),
    ("load (total requests)", Unit::Count, false, |r| {
        r.total_requests as f64
    }),
    ("100 ms peak", Unit::Count, false, |r| r.peak_100ms as f64),
    ("p99 latency", Unit::Ms, false, |r| r.p99_ms),
];

/// For each measure of [`COMPARED`], the best strategy, when the strategies differ on it: "Best
/// success: B (100.0%); ... best p99 latency: A (123 ms)."
fn best_line(s: &ScenarioSummary) -> Option<String> {
    let ids = s.strategies();
    if ids.len() < 2 {
        return None;
    }
    let mut parts = Vec::new();
    for (name, unit, more_is_better, f) in COMPARED {
        let means: Vec<(&String, f64)> = ids
            .iter()
            .map(|id| (id, spread_of(s, id, f).mean))
            .collect();
        let shown: Vec<String> = means
            .iter()
            .map(|(_, v)| format_value(unit, *v, true))
            .collect();
        if shown.iter().all(|v| *v == shown[0]) {
            continue;
        }
        let best = means
            .iter()
            .copied()
            .reduce(|a, b| {
                let better = if more_is_better { b.1 > a.1 } else { b.1 < a.1 };
                if better {
                    b
                } else {
                    a
                }
            })
            .expect("two strategies or more");
        let word = if more_is_better { "best" } else { "lowest" };
        let best_shown = format_value(unit, best.1, true);
        // Every strategy the table shows at the best value: a tie names them all.
        let tied: Vec<&String> = ids
            .iter()
            .zip(&shown)
            .filter(|(_, v)| **v == best_shown)
            .map(|(id, _)| id)
            .collect();
        let who = if tied.len() > 1 {
            tied.iter()
                .map(|id| id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        } else {
            s.strategy_label(best.0)
        };
        parts.push(format!("{word} {name}: {who} ({best_shown})"));
    }
    if parts.is_empty() {
        return None;
    }
    let mut line = parts.join("; ");
    line[..1].make_ascii_uppercase();
    Some(line + ".")
}

/// One line per pair of strategies that differ: each measure of [`COMPARED`] on which they
/// differ (as the tables show it), the difference, and the measured-or-noise verdict (with two
/// seeds or more; one seed's conclusion ends by saying it has none).
pub fn pair_lines(s: &ScenarioSummary) -> Vec<String> {
    pairs(s).0
}

/// The lines of [`pair_lines`] and the verdict of every difference they name (none with one
/// seed).
fn pairs(s: &ScenarioSummary) -> (Vec<String>, Vec<Verdict>) {
    let ids = s.strategies();
    let mut lines = Vec::new();
    let mut verdicts = Vec::new();
    for (i, a) in ids.iter().enumerate() {
        for b in &ids[i + 1..] {
            let mut parts = Vec::new();
            for (name, unit, more_is_better, f) in COMPARED {
                let (sa, sb) = (spread_of(s, a, f), spread_of(s, b, f));
                let (va, vb) = (
                    format_value(unit, sa.mean, true),
                    format_value(unit, sb.mean, true),
                );
                if va == vb {
                    continue;
                }
                let better = if (sb.mean > sa.mean) == more_is_better {
                    b
                } else {
                    a
                };
                // One seed has no verdict: the conclusion's last line says so, once.
                let verdict = if sa.n < 2 || sb.n < 2 {
                    String::new()
                } else {
                    verdicts.push(Verdict::of(&sa, &sb));
                    format!(", {}", verdict_words(&sa, &sb))
                };
                parts.push(format!(
                    "{name} {va} vs {vb} ({}, {better} better{verdict})",
                    format_difference(unit, sb.mean - sa.mean),
                ));
            }
            if !parts.is_empty() {
                lines.push(format!("{a} vs {b}: {}.", parts.join("; ")));
            }
        }
    }
    (lines, verdicts)
}

/// What the run shows, in two or three sentences, for the top of the report: the best
/// strategy on each measure, the scenario's own finding when it has one (C's jitter against
/// B's peak, D's budget against C), and how many of the comparisons below stand out of the
/// seed-to-seed noise. `None` when there is nothing to compare or the run cannot be trusted.
pub fn headline(s: &ScenarioSummary) -> Option<String> {
    if !crate::trust::Trust::of(s).judges() {
        return None;
    }
    let best = best_line(s)?;
    let mut sentences = vec![best];
    // The scenario's own finding: the first line of the conclusion that is not the best line,
    // a pair line or the one-seed note.
    let (pair, verdicts) = pairs(s);
    if let Some(own) = conclusion(s).into_iter().find(|l| {
        !sentences.contains(l) && !pair.contains(l) && !l.starts_with("One seed cannot tell")
    }) {
        sentences.push(own);
    }
    let n = s.seeds().len();
    sentences.push(if n < 2 {
        "One seed: none of the differences below has a verdict; run more seeds (--seeds 1-20) \
         to tell a difference from run-to-run noise."
            .to_string()
    } else {
        let count = |v: Verdict| verdicts.iter().filter(|x| **x == v).count();
        let mut parts = vec![format!("{} measured", count(Verdict::Measured))];
        for (v, words) in [
            (Verdict::WithinNoise, "within run-to-run noise"),
            (Verdict::Unsettled, "not settled"),
        ] {
            if count(v) > 0 {
                parts.push(format!("{} {words}", count(v)));
            }
        }
        format!(
            "Over {n} seeds, of the {} differences compared below, {}.",
            verdicts.len(),
            parts.join(", ")
        )
    });
    Some(sentences.join(" "))
}

/// How a change of `what` from `from` to `to` reads: "halves B's peak", "cuts B's peak by 40%",
/// "raises B's peak by 12%", "keeps B's peak".
fn change_words(what: &str, from: f64, to: f64) -> String {
    if from <= 0.0 {
        return if to <= 0.0 {
            format!("keeps {what}")
        } else {
            format!("raises {what}")
        };
    }
    let r = to / from;
    if (0.45..=0.55).contains(&r) {
        format!("halves {what}")
    } else if r < 0.95 {
        format!("cuts {what} by {:.0}%", (1.0 - r) * 100.0)
    } else if r > 1.05 {
        format!("raises {what} by {:.0}%", (r - 1.0) * 100.0)
    } else {
        format!("keeps {what}")
    }
}

/// The verdict in brackets: "measured", "within run-to-run noise", or that one seed cannot
/// tell.
fn verdict_words(a: &Spread, b: &Spread) -> &'static str {
    if a.n < 2 || b.n < 2 {
        "one seed, no verdict"
    } else {
        Verdict::of(a, b).text()
    }
}

/// The plain-language conclusion under the comparison, computed from the figures and the
/// verdicts: what C's jitter does to B's synchronised peak and at what total, what D's budget
/// saves in retries and costs in success. A single-seed run says its verdicts need more seeds.
pub fn conclusion(s: &ScenarioSummary) -> Vec<String> {
    // No conclusion from a run that cannot be trusted (its banner says why).
    if !crate::trust::Trust::of(s).judges() {
        return Vec::new();
    }
    let ids = s.strategies();
    let has = |id: &str| ids.iter().any(|x| x == id);
    let sp = |id: &str, m: &Metric| spread_of(s, id, m.2);
    let mut lines = Vec::new();
    if has("B") && has("C") {
        let (pb, pc) = (sp("B", &PEAK_100MS), sp("C", &PEAK_100MS));
        let (tb, tc) = (sp("B", &TOTAL), sp("C", &TOTAL));
        let total = if tb.mean > 0.0 && ((tc.mean - tb.mean) / tb.mean).abs() < 0.03 {
            "at the same total".to_string()
        } else if tc.mean > tb.mean {
            format!(
                "with {:.0}% more requests in total",
                (tc.mean / tb.mean.max(1.0) - 1.0) * 100.0
            )
        } else {
            format!(
                "with {:.0}% fewer requests in total",
                (1.0 - tc.mean / tb.mean.max(1.0)) * 100.0
            )
        };
        lines.push(format!(
            "C {} ({} -> {}, {}) {total} ({} -> {}, {}).",
            change_words("B's 100 ms peak", pb.mean, pc.mean),
            format_value(Unit::Count, pb.mean, true),
            format_value(Unit::Count, pc.mean, true),
            verdict_words(&pb, &pc),
            format_value(Unit::Count, tb.mean, true),
            format_value(Unit::Count, tc.mean, true),
            verdict_words(&tb, &tc),
        ));
    }
    if has("C") && has("D") {
        let (rc, rd) = (sp("C", &RETRIES), sp("D", &RETRIES));
        let (sc, sd) = (sp("C", &SUCCESS), sp("D", &SUCCESS));
        let retries = if rc.mean > 0.0 && (rd.mean / rc.mean - 1.0).abs() < 0.03 {
            "D sends as many retries as C".to_string()
        } else if rc.mean > 0.0 && rd.mean < rc.mean {
            format!(
                "D sends {:.0}% fewer retries than C",
                (1.0 - rd.mean / rc.mean) * 100.0
            )
        } else if rd.mean > rc.mean {
            "D sends more retries than C".to_string()
        } else {
            "D sends as many retries as C".to_string()
        };
        let d = (sd.mean - sc.mean) * 100.0;
        let what = match s.params.timeline(&s.scenario).incident() {
            None => "operations",
            Some(_) => "affected operations",
        };
        let success = if d.abs() < 0.05 {
            format!("succeeds as often on {what}")
        } else if d < 0.0 {
            format!("loses {:.1} pts of success on {what}", -d)
        } else {
            format!("gains {d:.1} pts of success on {what}")
        };
        lines.push(format!(
            "{retries} ({} -> {}, {}) and {success} ({} -> {}, {}).",
            format_value(Unit::Count, rc.mean, true),
            format_value(Unit::Count, rd.mean, true),
            verdict_words(&rc, &rd),
            format_value(Unit::Share, sc.mean, true),
            format_value(Unit::Share, sd.mean, true),
            verdict_words(&sc, &sd),
        ));
    }
    if let Some(a) = ids.iter().find(|x| *x == "A") {
        // The highest 100 ms peak, as shown (rounded): when A's is it, alone or tied.
        let shown = |id: &String| format_value(Unit::Count, sp(id, &PEAK_100MS).mean, true);
        let peak = |id: &String| sp(id, &PEAK_100MS).mean.round();
        let top = ids.iter().map(peak).fold(f64::MIN, f64::max);
        let highest: Vec<&String> = ids.iter().filter(|id| peak(id) == top).collect();
        if highest.contains(&a) {
            let others: Vec<&str> = highest
                .iter()
                .filter(|id| **id != a)
                .map(|id| id.as_str())
                .collect();
            lines.push(if others.is_empty() {
                format!(
                    "{a}'s immediate retries give the highest 100 ms peak ({}).",
                    shown(a)
                )
            } else {
                format!(
                    "{a}'s immediate retries tie {} for the highest 100 ms peak ({}).",
                    others.join(" and "),
                    shown(a)
                )
            });
        }
    }
    lines.extend(best_line(s));
    lines.extend(pair_lines(s));
    if lines.is_empty() {
        return lines;
    }
    if s.seeds().len() < 2 {
        lines.push(
            "One seed cannot tell a difference from run-to-run noise: run more seeds \
             (--seeds 1-20) for verdicts."
                .into(),
        );
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 54: `slow-network` said "A's immediate retries give the highest 100 ms peak (7)"
    /// when C's was 7 too: a tie is named as a tie.
    #[test]
    fn a_tie_for_the_highest_peak_is_named_as_a_tie() {
        let tie = summary(
            "A,B,C",
            vec![
                run("A", 42, 0.9, 3100, 250, 7),
                run("B", 42, 1.0, 3000, 220, 5),
                run("C", 42, 1.0, 3300, 220, 7),
            ],
        );
        let c = conclusion(&tie);
        assert!(
            c.iter()
                .any(|l| l == "A's immediate retries tie C for the highest 100 ms peak (7)."),
            "{c:?}"
        );
        assert!(!c.iter().any(|l| l.contains("give the highest")), "{c:?}");
        let alone = summary(
            "A,C",
            vec![
                run("A", 42, 0.9, 3100, 250, 9),
                run("C", 42, 1.0, 3300, 220, 7),
            ],
        );
        assert!(conclusion(&alone)
            .iter()
            .any(|l| l == "A's immediate retries give the highest 100 ms peak (9)."));
    }
    use crate::test_summaries::{run, summary};

    /// Issue 54: the report had ten "A vs B" paragraphs and no conclusion at the top. The
    /// headline says what the run shows in at most three sentences and counts the verdicts.
    #[test]
    fn the_headline_is_the_best_the_finding_and_the_verdicts_counted() {
        let s = summary(
            "B,C",
            vec![
                run("B", 1, 1.0, 3000, 220, 160),
                run("C", 1, 1.0, 3020, 225, 80),
                run("B", 2, 1.0, 3040, 230, 150),
                run("C", 2, 1.0, 3000, 215, 76),
            ],
        );
        assert_eq!(
            headline(&s).unwrap(),
            "Lowest load (total requests): C backoff + full jitter (3010); lowest 100 ms peak: \
             C backoff + full jitter (78). C halves B's 100 ms peak (155 -> 78, measured) at the \
             same total (3020 -> 3010, within run-to-run noise). Over 2 seeds, of the 2 \
             differences compared below, 1 measured, 1 within run-to-run noise."
        );
        let one = summary(
            "B,C",
            vec![
                run("B", 1, 1.0, 3000, 2, 160),
                run("C", 1, 1.0, 3000, 2, 80),
            ],
        );
        assert!(headline(&one).unwrap().ends_with(
            "One seed: none of the differences below has a verdict; run more seeds \
                        (--seeds 1-20) to tell a difference from run-to-run noise."
        ));
        let mut stopped = s.clone();
        stopped.complete = false;
        assert_eq!(headline(&stopped), None);
        assert_eq!(
            headline(&summary("E", vec![run("E", 1, 1.0, 1, 1, 1)])),
            None
        );
    }

    #[test]
    fn conclusion_reads_the_figures_and_the_verdicts() {
        // Two seeds: C halves B's peak at the same total (peak measured, total noise); D sends
        // 96% fewer retries and loses 26 pts of success (both measured).
        let s = summary(
            "B,C,D",
            vec![
                run("B", 1, 1.0, 3000, 220, 160),
                run("C", 1, 1.0, 3020, 225, 80),
                run("D", 1, 0.74, 2870, 9, 26),
                run("B", 2, 1.0, 3040, 230, 150),
                run("C", 2, 1.0, 3000, 215, 76),
                run("D", 2, 0.74, 2860, 9, 24),
            ],
        );
        let c = conclusion(&s);
        assert_eq!(
            c[0],
            "C halves B's 100 ms peak (155 -> 78, measured) at the same total (3020 -> 3010, \
             within run-to-run noise)."
        );
        assert_eq!(
            c[1],
            "D sends 96% fewer retries than C (220 -> 9, measured) and loses 26.0 pts of \
             success on affected operations (100.0% -> 74.0%, measured)."
        );
        // Then the best of each measure and every pair that differs, with the same verdicts.
        assert_eq!(
            c[3],
            "B vs C: load (total requests) 3020 vs 3010 (-10, C better, within run-to-run \
             noise); 100 ms peak 155 vs 78 (-77, C better, measured)."
        );
        assert_eq!(c.len(), 6, "{c:?}");
    }

    #[test]
    fn a_two_strategy_scenario_gets_a_conclusion_for_every_measure_the_two_differ_on() {
        // A user's scenario: E reaches 100% success and F 87.9%, at the same load; F's peak is
        // lower and E's p99 better.
        let mut e = run("E", 42, 1.0, 3000, 200, 120);
        let mut f = run("F", 42, 0.879, 3000, 180, 60);
        e.p99_ms = 123.0;
        f.p99_ms = 724.0;
        let c = conclusion(&summary("E,F", vec![e, f]));
        assert_eq!(
            c,
            vec![
                "Best success: E backoff + equal jitter (100.0%); lowest 100 ms peak: F \
                 decorrelated jitter (60); lowest p99 latency: E backoff + equal jitter (123 ms)."
                    .to_string(),
                "E vs F: success 100.0% vs 87.9% (-12.1 pts, E better); 100 ms peak 120 vs 60 \
                 (-60, F better); p99 latency 123 ms vs 724 ms (+601 ms, E better)."
                    .to_string(),
                "One seed cannot tell a difference from run-to-run noise: run more seeds \
                 (--seeds 1-20) for verdicts."
                    .to_string(),
            ]
        );
        // A tie names every strategy at the best value.
        let tie = summary(
            "E,F,B",
            vec![
                run("E", 1, 1.0, 9, 0, 1),
                run("F", 1, 1.0, 8, 0, 1),
                run("B", 1, 0.9, 9, 0, 1),
            ],
        );
        assert!(
            conclusion(&tie)[0].starts_with("Best success: E, F (100.0%); lowest load"),
            "{:?}",
            conclusion(&tie)
        );
        // Two strategies that do not differ get no conclusion.
        let same = summary(
            "E,F",
            vec![run("E", 1, 1.0, 9, 0, 1), run("F", 1, 1.0, 9, 0, 1)],
        );
        assert!(conclusion(&same).is_empty(), "{:?}", conclusion(&same));
    }

    #[test]
    fn a_single_seed_conclusion_asks_for_more_seeds() {
        let s = summary(
            "A,B,C",
            vec![
                run("A", 42, 0.9, 3100, 250, 264),
                run("B", 42, 1.0, 3000, 220, 160),
                run("C", 42, 1.0, 3300, 220, 100),
            ],
        );
        let c = conclusion(&s);
        assert_eq!(
            c[0],
            "C cuts B's 100 ms peak by 38% (160 -> 100, one seed, no verdict) with 10% more \
             requests in total (3000 -> 3300, one seed, no verdict)."
        );
        assert_eq!(
            c[1],
            "A's immediate retries give the highest 100 ms peak (264)."
        );
        assert!(c[2].starts_with("Best success: B"), "{c:?}");
        assert!(c[3].starts_with("A vs B: success 90.0% vs 100.0%"), "{c:?}");
        assert!(
            c.last().unwrap().starts_with("One seed cannot tell"),
            "{c:?}"
        );
        // Retries within 3% read as "as many".
        let same = summary(
            "C,D",
            vec![
                run("C", 1, 1.0, 3000, 184, 21),
                run("D", 1, 1.0, 3000, 184, 21),
            ],
        );
        assert!(
            conclusion(&same)[0].starts_with("D sends as many retries as C (184 -> 184"),
            "{:?}",
            conclusion(&same)
        );
        // Nothing to compare: no conclusion at all.
        assert!(conclusion(&summary("E", vec![run("E", 1, 1.0, 1, 1, 1)])).is_empty());
    }
}
