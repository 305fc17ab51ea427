//! Item 4, the backoff row: do the waits between attempts on a 503 grow, and are they
//! randomized? Read from the shape of the waits of the backoff probe's copies ([`super::shape`]):
//! growth from the upper envelope, jitter from the best fit, so that the verdict does not hang
//! on the luck of a few copies' means.

use super::card::{row, Row, Verdict};
use super::log::{s, waits, Log};
use super::shape::{p_text, shape, Growth, Jitter, Shape};

const ADVICE_BACKOFF: &str = "Back off exponentially, randomize the wait (jitter), and cap it.";

/// Under this median wait, retries are immediate, ms.
const IMMEDIATE_MEDIAN_MS: f64 = 20.0;

/// Under this median wait, retries that do not grow are immediate too: a loop that retries at
/// once, 20 copies of it at once on a loaded machine, measured a median of 40 ms (its waits are
/// the machine's scheduling, spread enough to look jittered).
const NEARLY_IMMEDIATE_MEDIAN_MS: f64 = 100.0;

/// The backoff row: PASS when the waits grow and are randomized, WARN for one of the two (or no
/// retry), FAIL for neither or for immediate retries (a median wait under 20 ms, or under
/// 100 ms without growth).
pub(crate) fn backoff(log: &Log) -> Row {
    let instances = log.of("backoff");
    let all: Vec<Vec<f64>> = instances
        .iter()
        .map(|(_, r)| waits(r).into_iter().map(|u| u as f64 / 1000.0).collect())
        .collect();
    let Some(sh) = shape(&all) else {
        return row(
            4,
            "backoff",
            Verdict::Warn,
            format!(
                "{} copies sent one attempt each and did not retry a 503",
                instances.len()
            ),
            ADVICE_BACKOFF,
        );
    };
    let mut flat: Vec<f64> = all.iter().flatten().copied().collect();
    flat.sort_by(f64::total_cmp);
    let median = flat[flat.len() / 2];
    let longest = flat[flat.len() - 1];
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
    let randomized = sh.jitter != Jitter::None;
    let evidence = format!(
        "{}; {}; {} copies, peak {peak} retries in 100 ms, longest wait {}",
        growth_text(&sh),
        jitter_text(&sh),
        sh.copies,
        s((longest * 1000.0) as u64)
    );
    let (v, evidence) =
        if median < IMMEDIATE_MEDIAN_MS || (median < NEARLY_IMMEDIATE_MEDIAN_MS && !sh.grows) {
            (
                Verdict::Fail,
                format!("immediate retries (median wait {median:.0} ms); {evidence}"),
            )
        } else {
            let v = match (sh.grows, randomized) {
                (true, true) => Verdict::Pass,
                (false, false) => Verdict::Fail,
                _ => Verdict::Warn,
            };
            (v, evidence)
        };
    row(4, "backoff", v, evidence, ADVICE_BACKOFF)
}

/// "exponential growth (x2.0 a retry; longest waits 190, 384, 770 ms), cap 1.98 s from retry 5".
fn growth_text(sh: &Shape) -> String {
    let env: Vec<String> = sh.envelope_ms.iter().map(|e| format!("{e:.0}")).collect();
    let what = match sh.growth {
        Growth::Immediate => "no growth: every retry immediate".to_string(),
        Growth::OneRetry => "one timed retry: growth unknown".to_string(),
        Growth::Constant => "constant waits".to_string(),
        Growth::Linear { step_ms } => format!("linear growth (+{step_ms:.0} ms a retry)"),
        Growth::Exponential { factor } => format!("exponential growth (x{factor:.1} a retry)"),
        Growth::Growing { factor } => {
            format!("growing x{factor:.1} (two timed retries: linear or exponential not told)")
        }
        Growth::Irregular => {
            if sh.grows {
                "growing, irregularly".to_string()
            } else {
                "not growing".to_string()
            }
        }
    };
    let immediate = if sh.immediate_first > 0 {
        format!(", the first {} immediate", sh.immediate_first)
    } else {
        String::new()
    };
    let cap = match sh.cap {
        Some((c, from)) => format!(", cap {} reached from retry {from}", s((c * 1000.0) as u64)),
        None => ", no cap reached".to_string(),
    };
    if sh.by_medians {
        // No jitter: growth and cap read from the medians (the envelope is the latest copy).
        let med: Vec<String> = sh.median_ms.iter().map(|e| format!("{e:.0}")).collect();
        format!(
            "{what}, median waits per retry {} ms (longest {}){immediate}{cap}",
            med.join(", "),
            env.join(", ")
        )
    } else {
        format!(
            "{what}, longest waits per retry {} ms{immediate}{cap}",
            env.join(", ")
        )
    }
}

/// "jitter full (KS D 0.08, p 0.812 over 57 waits); next decorrelated: 19 of 58 waits outside
/// its range".
fn jitter_text(sh: &Shape) -> String {
    let best = match sh.fit(sh.jitter) {
        Some(f) if sh.jitter != Jitter::None => {
            let poor = if f.p < 0.01 {
                ", a poor fit: none of the four fits well"
            } else {
                ""
            };
            format!(
                "jitter {} (KS D {:.2}, {} over {} waits{poor})",
                sh.jitter.name(),
                f.d,
                p_text(f.p),
                f.n
            )
        }
        _ => format!(
            "jitter none (interquartile range {:.0}% of the median wait)",
            100.0 * sh.spread
        ),
    };
    let Some(n) = sh.runner_up() else {
        return best;
    };
    let why = if !n.admissible() {
        format!("{} of {} waits outside its range", n.outside, n.n)
    } else if sh.jitter == Jitter::None {
        format!("KS D {:.2}, {}", n.d, p_text(n.p))
    } else {
        let llr = sh.log_likelihood_ratio();
        if llr < 1000f64.ln() {
            format!("{:.0} times less likely", llr.exp())
        } else {
            format!("e^{llr:.0} times less likely")
        }
    };
    format!("{best}; next {}: {why}", n.jitter.name())
}
