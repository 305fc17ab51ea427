//! The shape of a client's backoff, from the waits of many copies started at once: how the wait
//! grows with the retry number (constant, linear, exponential), the cap it reaches, and which
//! jitter fits best (none, full, equal, decorrelated), with the fit's confidence.
//!
//! The jitters are the four of Marc Brooker, "Exponential Backoff and Jitter", AWS Architecture
//! Blog, 2015 (<https://aws.amazon.com/blogs/architecture/exponential-backoff-and-jitter/>),
//! with `nominal = min(cap, base * 2^n)`:
//!
//! - none: `wait = nominal`: wait / nominal is a point mass at 1;
//! - full: `wait = random_between(0, nominal)`: wait / nominal is uniform on (0, 1);
//! - equal: `wait = nominal / 2 + random_between(0, nominal / 2)`: uniform on (0.5, 1);
//! - decorrelated: `wait = min(cap, random_between(base, 3 * previous wait))`: it depends on the
//!   previous wait, not on the retry number (the blog's multiplier, 3).
//!
//! The lab does not know a client's nominal wait. It estimates it per retry number by the
//! **upper envelope**, the longest wait any copy made at that retry number: the maximum of n
//! uniform draws on (0, c) is below 0.8 c with probability 0.8^n, 1.2% for n = 20, where the
//! mean of 8 copies under full jitter wanders by a third (issue 53: 523 then 1167 ms, growing, in
//! one audit; 687 then 798 ms, not growing, in the next). Growth and cap are read from the
//! envelope; the jitter from the waits divided by it:
//!
//! - none when the waits of each retry number hardly spread: their interquartile ranges, summed,
//!   at most 8% of their medians, summed, plus 10 ms per retry number (timer noise and a loaded
//!   machine's scheduling, which adds its lateness to every wait: clients without jitter measured
//!   0 to 4% here). Full jitter's interquartile range is its median, equal jitter's a third of it
//!   (an audit of 20 copies measured equal jitter at 19%, which the earlier bound, 15% plus 20 ms
//!   a retry number, read as none);
//! - else each of full, equal and decorrelated is a uniform model with a range per wait: full
//!   (0, envelope), equal (envelope / 2, envelope), decorrelated (base, min(cap, 3 * max(previous,
//!   base))), base estimated by the shortest wait and cap by the longest. A model with more than
//!   5% of the waits outside its range (by more than 3% of it or 10 ms) is excluded; of the
//!   others the best is the most likely, the one whose ranges are the narrowest (a uniform
//!   density is 1 / width: the mean of -ln(width) per wait). So equal beats full when no wait
//!   falls under half the envelope, and decorrelated beats both when every wait stays under three
//!   times the one before and its ranges are narrower than the envelope's;
//! - each fit is then checked by the Kolmogorov-Smirnov distance D between the waits placed in
//!   their ranges ((wait - low) / (high - low)) and uniform (0, 1), the one longest wait of each
//!   retry number (and the shortest and longest wait for decorrelated) left out, as they set
//!   the ranges. The best fit's p-value says whether it fits at all (under 0.01: a poor fit);
//!   the confidence is why the runner-up lost: waits outside its range, or its KS p-value. Both
//!   p-values are approximate: the ranges are estimated from the same waits (so a good fit's
//!   p-value is on the high side).
//!
//! The p-value is the asymptotic Kolmogorov distribution with Stephens' small-sample correction,
//! `Q((sqrt(n) + 0.12 + 0.11 / sqrt(n)) * D)`, `Q(x) = 2 * sum_{j>=1} (-1)^(j-1) exp(-2 j^2 x^2)`
//! (Press et al., *Numerical Recipes*, 3rd ed., 2007, section 14.3.3, `probks`; Stephens 1970).
//!
//! A retry number whose median wait is under 20 ms is immediate (timer noise and lateness, not a
//! backoff: urllib3's first retry waits 0): such retry numbers are left out of growth and jitter.

/// A retry number whose median wait is under this is an immediate retry, ms.
pub const IMMEDIATE_MS: f64 = 20.0;

/// Waits grow when the last timed retry number's longest wait is at least this many times the
/// first's (and, for an irregular envelope, its median wait too).
const GROWS_BY: f64 = 1.5;

/// No jitter when the interquartile ranges of the retry numbers, summed, are at most this share
/// of their medians, summed, plus [`NONE_ABS_MS`] per retry number (a loaded machine's
/// scheduling adds its own lateness to every wait: a fixed 500 ms wait of 20 Node copies at once
/// measured 500 to 616 ms, an interquartile range of 4% of the median). Full jitter's
/// interquartile range is its median, equal's a third: 20 copies of equal jitter measured 19%.
const NONE_SPREAD: f64 = 0.08;
const NONE_ABS_MS: f64 = 10.0;

/// The envelope's steps growing by at least this factor each (their geometric mean): exponential;
/// by at most [`LINEAR_STEPS`]: linear; between, growing without telling which. With three
/// retry numbers under full jitter and 20 copies, a doubling backoff's steps measure under 1.2
/// in about 1% of audits and under 1.5 in about 5% (a simulation of 20,000 audits); a linear
/// one's over 1.5 in about 5%.
const EXPONENTIAL_STEPS: f64 = 1.5;
const LINEAR_STEPS: f64 = 1.2;

/// The jitter a backoff's waits fit best.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Jitter {
    None,
    Full,
    Equal,
    Decorrelated,
}

impl Jitter {
    pub fn name(self) -> &'static str {
        match self {
            Jitter::None => "none",
            Jitter::Full => "full",
            Jitter::Equal => "equal",
            Jitter::Decorrelated => "decorrelated",
        }
    }
}

/// How the envelope grows with the retry number.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Growth {
    /// No retry waited 20 ms or more.
    Immediate,
    /// One timed retry number: nothing to compare.
    OneRetry,
    /// Within 20% of their mean throughout.
    Constant,
    /// Steps of about the same size, this many ms.
    Linear { step_ms: f64 },
    /// Steps growing by this factor (geometric mean of the steps' ratios).
    Exponential { factor: f64 },
    /// Growing, by this factor a retry from first to last, with too few points (two) or steps
    /// between linear and exponential to tell how.
    Growing { factor: f64 },
    /// Neither: falling, or steps that shrink.
    Irregular,
}

/// The fit of one jitter: a uniform model with a range per wait.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KsFit {
    pub jitter: Jitter,
    /// The KS distance of the waits placed in their ranges from uniform (0, 1), and its p-value.
    pub d: f64,
    pub p: f64,
    /// Waits judged, and those outside their range.
    pub n: usize,
    pub outside: usize,
    /// The mean log-likelihood per wait, `-ln(width in ms)`.
    pub ll: f64,
}

impl KsFit {
    /// At most 5% of the waits outside their range.
    pub fn admissible(&self) -> bool {
        self.outside as f64 <= OUTSIDE_SHARE * self.n as f64
    }
}

/// The share of waits a model may leave outside its range, and the tolerance of a range
/// (relative to its width, and in ms).
const OUTSIDE_SHARE: f64 = 0.05;
const RANGE_REL: f64 = 0.03;
const RANGE_ABS_MS: f64 = 10.0;

/// The shape of the waits of many copies.
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    pub copies: usize,
    /// The longest wait per retry number (those at least half the copies reached), ms.
    pub envelope_ms: Vec<f64>,
    /// The median wait per retry number, ms (the same retry numbers).
    pub median_ms: Vec<f64>,
    /// Growth and cap were read from the medians (no jitter), not from the envelope.
    pub by_medians: bool,
    /// Leading retry numbers that were immediate (left out of growth and jitter).
    pub immediate_first: usize,
    pub growth: Growth,
    /// The plateau the envelope ends on, ms, and the first retry number (from 1) on it.
    pub cap: Option<(f64, usize)>,
    /// The last timed envelope at least 1.5 times the first.
    pub grows: bool,
    pub jitter: Jitter,
    /// The retry numbers' interquartile ranges, summed, over their medians, summed.
    pub spread: f64,
    /// The fits of full, equal and decorrelated, best first: the admissible ones by likelihood,
    /// then the others by the share of waits outside their range.
    pub fits: Vec<KsFit>,
}

impl Shape {
    /// The fit of the jitter named, if it is a KS one.
    pub fn fit(&self, j: Jitter) -> Option<&KsFit> {
        self.fits.iter().find(|f| f.jitter == j)
    }

    /// The runner-up to the jitter named: the best fit that is not it.
    pub fn runner_up(&self) -> Option<&KsFit> {
        self.fits.iter().find(|f| f.jitter != self.jitter)
    }

    /// How much likelier the best fit makes the waits than the runner-up, both admissible: the
    /// log of the likelihood ratio over all the waits (0 when either is not admissible or the
    /// best is "none").
    pub fn log_likelihood_ratio(&self) -> f64 {
        match (self.fit(self.jitter), self.runner_up()) {
            (Some(b), Some(n)) if b.admissible() && n.admissible() => {
                (b.ll - n.ll) * b.n.min(n.n) as f64
            }
            _ => 0.0,
        }
    }
}

/// The shape of `waits` (per copy, the waits before each retry in order, ms). None when no copy
/// retried.
pub fn shape(waits: &[Vec<f64>]) -> Option<Shape> {
    let copies = waits.len();
    let longest = waits.iter().map(Vec::len).max().unwrap_or(0);
    if longest == 0 {
        return None;
    }
    // Retry numbers reached by at least half the copies (and two of them).
    let need = copies.div_ceil(2).max(2).min(copies);
    let used = (0..longest)
        .take_while(|&k| waits.iter().filter(|w| w.len() > k).count() >= need)
        .count()
        .max(1);
    let column =
        |k: usize| -> Vec<f64> { waits.iter().filter_map(|w| w.get(k).copied()).collect() };
    let envelope_ms: Vec<f64> = (0..used)
        .map(|k| column(k).into_iter().fold(0.0, f64::max))
        .collect();
    // A retry number is immediate when its median wait is under 20 ms: its longest may be a
    // copy the machine woke late (urllib3's first retry, 0 nominal, measured up to 88 ms).
    let median_ms: Vec<f64> = (0..used)
        .map(|k| {
            let mut c = column(k);
            c.sort_by(f64::total_cmp);
            c[c.len() / 2]
        })
        .collect();
    let immediate: Vec<bool> = median_ms.iter().map(|&m| m < IMMEDIATE_MS).collect();
    let immediate_first = immediate.iter().take_while(|&&i| i).count();
    let timed: Vec<usize> = (immediate_first..used).filter(|&k| !immediate[k]).collect();

    // How much the waits of each retry number spread: their interquartile ranges and medians,
    // summed over the timed retry numbers.
    let (mut iqr, mut medians) = (0.0, 0.0);
    for &k in &timed {
        let mut sorted = column(k);
        sorted.sort_by(f64::total_cmp);
        let q = |f: f64| sorted[((sorted.len() - 1) as f64 * f).round() as usize];
        iqr += q(0.75) - q(0.25);
        medians += q(0.5);
    }
    let no_jitter =
        timed.is_empty() || iqr <= NONE_SPREAD * medians + NONE_ABS_MS * timed.len() as f64;

    // Growth and cap are read from the envelope, or from the medians when the waits hardly
    // spread: without jitter every copy waits the nominal wait plus its own lateness, so the
    // median is the nominal wait and the envelope the worst lateness of 20 copies (CI measured
    // aiohttp-retry's 200 then 400 ms as longest waits of 287 and 428 ms, "constant", under
    // the audits' load, medians about 200 and 400).
    let basis: &[f64] = if no_jitter { &median_ms } else { &envelope_ms };
    let env: Vec<f64> = timed.iter().map(|&k| basis[k]).collect();
    let (growth, cap) = growth(&env);
    let cap = cap.map(|(c, i)| (c, timed[i] + 1));
    // An irregular envelope must be confirmed by the medians: the longest wait of a retry
    // number is one copy, and a loaded machine can wake one copy of a loop that retries at once
    // 150 ms late (CI measured longest waits of 89, 56, .., 148 ms over medians near 40): there
    // the typical wait must grow too. (A regular envelope is not asked: 20 copies of
    // decorrelated jitter can draw medians that grow less.)
    let grows = timed.len() >= 2
        && env[env.len() - 1] >= GROWS_BY * env[0]
        && (growth != Growth::Irregular
            || median_ms[timed[timed.len() - 1]] >= GROWS_BY * median_ms[timed[0]]);

    // Each timed wait with the range each model gives it, the one longest wait of each retry
    // number left out (it sets the envelope).
    let mut full = Vec::new();
    let mut equal = Vec::new();
    for &k in &timed {
        let col = column(k);
        let e = envelope_ms[k];
        let top = col.iter().position(|&w| w == e);
        for (i, &w) in col.iter().enumerate() {
            if Some(i) == top {
                continue;
            }
            full.push((w, 0.0, e));
            equal.push((w, e / 2.0, e));
        }
    }
    let mut fits = Vec::new();
    if !full.is_empty() {
        fits.push(fit(Jitter::Full, &full));
        fits.push(fit(Jitter::Equal, &equal));
    }
    let dec = decorrelated_ranges(waits, &timed);
    if !dec.is_empty() {
        fits.push(fit(Jitter::Decorrelated, &dec));
    }
    fits.sort_by(|a, b| match (a.admissible(), b.admissible()) {
        (true, true) => b.ll.total_cmp(&a.ll),
        (true, false) => std::cmp::Ordering::Less,
        (false, true) => std::cmp::Ordering::Greater,
        (false, false) => {
            (a.outside as f64 / a.n as f64).total_cmp(&(b.outside as f64 / b.n as f64))
        }
    });
    let spread = if medians > 0.0 { iqr / medians } else { 0.0 };
    let jitter = if no_jitter {
        Jitter::None
    } else {
        fits.first().map_or(Jitter::None, |f| f.jitter)
    };
    Some(Shape {
        copies,
        envelope_ms,
        median_ms,
        by_medians: no_jitter && !timed.is_empty(),
        immediate_first,
        growth,
        cap,
        grows,
        jitter,
        spread,
        fits,
    })
}

/// Growth and cap of a timed envelope. The cap: the envelope ends on two or more values within
/// 15% of the last, after values under two thirds of it; it is their largest, with the index of
/// the first.
fn growth(env: &[f64]) -> (Growth, Option<(f64, usize)>) {
    match env.len() {
        0 => return (Growth::Immediate, None),
        1 => return (Growth::OneRetry, None),
        _ => {}
    }
    let m = env.iter().sum::<f64>() / env.len() as f64;
    if env.iter().all(|&e| (e - m).abs() <= 0.2 * m) {
        return (Growth::Constant, None);
    }
    let last = env[env.len() - 1];
    let plateau = env
        .iter()
        .rev()
        .take_while(|&&e| (e - last).abs() <= 0.15 * last)
        .count();
    let cap = (plateau >= 2 && env[0] < last * 2.0 / 3.0).then(|| {
        let start = env.len() - plateau;
        (env[start..].iter().fold(0.0, |a: f64, &b| a.max(b)), start)
    });
    // The growth of the part under the cap (with the cap's first value when only one is under
    // it).
    let upto = cap.map_or(env.len(), |(_, start)| start.max(2));
    let g = &env[..upto];
    let steps: Vec<f64> = g.windows(2).map(|w| w[1] - w[0]).collect();
    let per_retry = (g[g.len() - 1] / g[0]).powf(1.0 / (g.len() - 1) as f64);
    let growth = if steps.iter().any(|&s| s <= 0.0) {
        Growth::Irregular
    } else if steps.len() == 1 {
        Growth::Growing { factor: per_retry }
    } else {
        let ratios: Vec<f64> = steps.windows(2).map(|w| w[1] / w[0]).collect();
        let gm = (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp();
        if gm >= EXPONENTIAL_STEPS {
            let factors: Vec<f64> = g.windows(2).map(|w| (w[1] / w[0]).ln()).collect();
            Growth::Exponential {
                factor: (factors.iter().sum::<f64>() / factors.len() as f64).exp(),
            }
        } else if gm > LINEAR_STEPS {
            Growth::Growing { factor: per_retry }
        } else if gm >= 1.0 / LINEAR_STEPS {
            Growth::Linear {
                step_ms: steps.iter().sum::<f64>() / steps.len() as f64,
            }
        } else {
            Growth::Irregular
        }
    };
    (growth, cap)
}

/// Each timed wait with its decorrelated range, (base, min(cap, 3 * max(previous, base))), base
/// and cap estimated by the shortest and the longest timed wait (each left out once: they set
/// the ranges).
fn decorrelated_ranges(waits: &[Vec<f64>], timed: &[usize]) -> Vec<(f64, f64, f64)> {
    let all: Vec<(usize, usize, f64)> = waits
        .iter()
        .enumerate()
        .flat_map(|(i, w)| {
            timed
                .iter()
                .filter_map(move |&k| w.get(k).map(|&x| (i, k, x)))
        })
        .collect();
    if all.len() < 3 {
        return Vec::new();
    }
    let (mut lo, mut hi) = (0, 0);
    for (j, a) in all.iter().enumerate() {
        if a.2 < all[lo].2 {
            lo = j;
        }
        if a.2 > all[hi].2 {
            hi = j;
        }
    }
    let (base, cap) = (all[lo].2, all[hi].2);
    all.iter()
        .enumerate()
        .filter(|(j, _)| *j != lo && *j != hi)
        .filter_map(|(_, &(i, k, w))| {
            let previous = if k == 0 { 0.0 } else { waits[i][k - 1] };
            let top = cap.min(3.0 * previous.max(base));
            (top - base >= 1.0).then_some((w, base, top))
        })
        .collect()
}

/// The fit of a uniform model to waits each with its range `(wait, low, high)`.
fn fit(jitter: Jitter, ranges: &[(f64, f64, f64)]) -> KsFit {
    let mut placed = Vec::with_capacity(ranges.len());
    let mut outside = 0;
    let mut ll = 0.0;
    for &(w, lo, hi) in ranges {
        let width = (hi - lo).max(1.0);
        let slack = (RANGE_REL * width).max(RANGE_ABS_MS);
        if w < lo - slack || w > hi + slack {
            outside += 1;
        }
        ll -= width.ln();
        placed.push((w - lo) / width);
    }
    let d = ks_uniform(&placed, 0.0);
    KsFit {
        jitter,
        d,
        p: ks_p(d, placed.len()),
        n: placed.len(),
        outside,
        ll: ll / ranges.len() as f64,
    }
}

/// The one-sample Kolmogorov-Smirnov distance between `sample` and the uniform distribution on
/// (lo, 1): `max_i max(i/n - F(x_i), F(x_i) - (i-1)/n)` over the sorted sample.
pub fn ks_uniform(sample: &[f64], lo: f64) -> f64 {
    let mut x = sample.to_vec();
    x.sort_by(f64::total_cmp);
    let n = x.len() as f64;
    let cdf = |v: f64| ((v - lo) / (1.0 - lo)).clamp(0.0, 1.0);
    x.iter()
        .enumerate()
        .map(|(i, &v)| {
            let f = cdf(v);
            ((i + 1) as f64 / n - f).max(f - i as f64 / n)
        })
        .fold(0.0, f64::max)
}

/// The KS p-value of distance `d` over `n` values (Stephens' correction, Numerical Recipes'
/// `probks`).
pub fn ks_p(d: f64, n: usize) -> f64 {
    let sn = (n as f64).sqrt();
    q_ks((sn + 0.12 + 0.11 / sn) * d)
}

/// The Kolmogorov distribution's tail, `Q(x) = 2 * sum_{j>=1} (-1)^(j-1) exp(-2 j^2 x^2)`.
pub fn q_ks(x: f64) -> f64 {
    if x < 0.2 {
        return 1.0;
    }
    let sum: f64 = (1..=100)
        .map(|j: i32| {
            let sign = if j % 2 == 1 { 1.0 } else { -1.0 };
            sign * (-2.0 * f64::from(j * j) * x * x).exp()
        })
        .sum();
    (2.0 * sum).clamp(0.0, 1.0)
}

/// A p-value as the evidence writes it.
pub fn p_text(p: f64) -> String {
    if p < 0.001 {
        "p < 0.001".into()
    } else {
        format!("p {p:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use e03_model::budget::BudgetSpec;
    use e03_model::rng::{stream, unit_hash, Stream};
    use e03_model::Strategy;
    use std::time::Duration;

    /// KS by hand: 0.1, 0.4, 0.7, 0.9 against uniform (0, 1): the steps above are 0.15, 0.10,
    /// 0.05, 0.10, below 0.10, 0.15, 0.20, 0.15: D = 0.20. Against (0.5, 1), 0.1 and 0.4 sit at
    /// F = 0 with the empirical CDF at 0.5: D = 0.5.
    #[test]
    fn ks_distance_by_hand() {
        let x = [0.9, 0.1, 0.7, 0.4];
        assert!((ks_uniform(&x, 0.0) - 0.20).abs() < 1e-12);
        assert!((ks_uniform(&x, 0.5) - 0.5).abs() < 1e-12);
    }

    /// Q(x) pinned against Numerical Recipes' table values: Q(0.5) = 0.9639, Q(1.0) = 0.2700,
    /// Q(1.36) = 0.0495 (the 5% point), Q(1.63) = 0.0098 (the 1% point). With n = 4 and D = 0.25,
    /// x = (2 + 0.12 + 0.055) * 0.25 = 0.54375, p = 0.929.
    #[test]
    fn kolmogorov_tail_by_hand() {
        for (x, q) in [(0.5, 0.9639), (1.0, 0.2700), (1.36, 0.0495), (1.63, 0.0098)] {
            assert!((q_ks(x) - q).abs() < 5e-4, "Q({x}) = {}", q_ks(x));
        }
        assert!((ks_p(0.25, 4) - 0.929).abs() < 1e-3);
        assert_eq!(q_ks(0.0), 1.0);
    }

    /// The waits `copies` copies of one of the lab's strategies make before `retries` retries,
    /// from the lab's own `Strategy::wait` (base 200 ms, cap 2 s, as `lab client`), plus up to
    /// 2 ms of timer noise, one seeded stream per copy.
    fn lab_waits(id: &str, seed: u64, copies: u32, retries: u32) -> Vec<Vec<f64>> {
        let s = Strategy::standard(
            id,
            Duration::from_millis(200),
            Duration::from_secs(2),
            BudgetSpec::token_bucket(10.0, 0.1),
        )
        .unwrap();
        (0..copies)
            .map(|c| {
                let mut rng = stream(seed, Stream::Jitter, c);
                let mut previous = Duration::ZERO;
                (1..=retries)
                    .map(|n| {
                        let w = s.wait(n, previous, &mut rng);
                        previous = w;
                        let noise = 2.0 * unit_hash(seed, u64::from(c) << 8 | u64::from(n));
                        w.as_secs_f64() * 1000.0 + noise
                    })
                    .collect()
            })
            .collect()
    }

    /// 20 seeded audits of 20 copies of each of the lab's strategies B, C, E and F (3 retries
    /// each, as `lab client` makes under the probe): the jitter is named right in every one,
    /// and so is the growth of the three with a growing nominal wait.
    #[test]
    fn the_lab_s_four_jitters_are_named_in_20_draws_of_20_copies() {
        for (id, want) in [
            ("B", Jitter::None),
            ("C", Jitter::Full),
            ("E", Jitter::Equal),
            ("F", Jitter::Decorrelated),
        ] {
            for seed in 1..=20 {
                let sh = shape(&lab_waits(id, seed, 20, 3)).unwrap();
                assert_eq!(sh.jitter, want, "{id} seed {seed}: {sh:?}");
                assert!(sh.grows, "{id} seed {seed}: {sh:?}");
                // Without jitter or with equal jitter the envelope is close: exponential every
                // time. Under full jitter three retry numbers may leave linear and exponential
                // untold (about 5% of audits), never named linear here.
                match id {
                    "B" | "E" => assert!(
                        matches!(sh.growth, Growth::Exponential { .. }),
                        "{id} seed {seed}: {sh:?}"
                    ),
                    "C" => assert!(
                        matches!(
                            sh.growth,
                            Growth::Exponential { .. } | Growth::Growing { .. }
                        ),
                        "{id} seed {seed}: {sh:?}"
                    ),
                    _ => {}
                }
                if want != Jitter::None {
                    // The best fits (KS p at least 0.01), and the runner-up lost clearly: more
                    // than 5% of the waits outside its range, or 100 times less likely.
                    let best = sh.fit(want).unwrap();
                    assert!(
                        best.admissible() && best.p >= 0.01,
                        "{id} seed {seed}: {sh:?}"
                    );
                    let next = sh.runner_up().unwrap();
                    assert!(
                        !next.admissible() || sh.log_likelihood_ratio() >= 100f64.ln(),
                        "{id} seed {seed}: {sh:?}"
                    );
                }
            }
        }
    }

    /// aiohttp-retry's `ExponentialRetry()` (0.2 then 0.4 s, no jitter), 20 copies during the
    /// whole suite's audits (this session's run): one copy woke 87 ms late for its first retry,
    /// so the longest waits were 287 and 428 ms, within 20% of their mean: "constant", and the
    /// row said FAIL where the client's documentation says it grows. Without jitter the medians
    /// carry the nominal waits: read from them, the waits grow x2, with the evidence saying so.
    #[test]
    fn without_jitter_one_late_copy_does_not_hide_growth() {
        let waits: Vec<Vec<f64>> = (0..20u32)
            .map(|c| {
                // Timer lateness of 1 to 9 ms on every wait; copy 3 late by 87 ms first.
                let late = |k: u32| f64::from(1 + (c * 5 + k * 3) % 9);
                let first = if c == 3 { 287.0 } else { 200.0 + late(0) };
                let second = if c == 11 { 428.0 } else { 400.0 + late(1) };
                vec![first, second]
            })
            .collect();
        let sh = shape(&waits).unwrap();
        assert_eq!(sh.envelope_ms, vec![287.0, 428.0], "{sh:?}");
        assert_eq!(sh.jitter, Jitter::None, "{sh:?}");
        assert!(sh.by_medians, "{sh:?}");
        assert!(sh.grows, "{sh:?}");
        assert!(
            matches!(sh.growth, Growth::Growing { factor } if (factor - 2.0).abs() < 0.1),
            "{sh:?}"
        );
        // With jitter the envelope still decides: the same longest waits over waits spread
        // from 0 up are constant.
        let spread: Vec<Vec<f64>> = (0..20u32)
            .map(|c| {
                let f = f64::from(c) / 19.0;
                vec![287.0 * f, 428.0 * f.powf(0.5)]
            })
            .collect();
        let sh = shape(&spread).unwrap();
        assert!(!sh.by_medians, "{sh:?}");
        assert_eq!(sh.growth, Growth::Constant, "{sh:?}");
    }

    /// A loop that retries at once, 20 copies on a loaded machine (CI, stop 58): nine retries
    /// whose medians sit near 40 ms and whose longest waits wander (89, 56, .., 148 ms), the
    /// last one 1.66 times the first. The envelope alone would call that growth; the medians do
    /// not grow, so neither do the waits. The same waits doubled per retry number grow.
    #[test]
    fn one_late_copy_does_not_make_immediate_retries_grow() {
        let longest = [89.0, 56.0, 108.0, 108.0, 54.0, 148.0, 109.0, 40.0, 148.0];
        let noisy: Vec<Vec<f64>> = (0..20u32)
            .map(|c| {
                longest
                    .iter()
                    .enumerate()
                    .map(|(k, &top)| {
                        // Copy 0 is the late one; the others spread from 25 to 39 ms.
                        if c == 0 {
                            top
                        } else {
                            25.0 + f64::from((c * 7 + k as u32 * 3) % 15)
                        }
                    })
                    .collect()
            })
            .collect();
        let sh = shape(&noisy).unwrap();
        assert_eq!(sh.envelope_ms, longest.to_vec(), "{sh:?}");
        assert!(!sh.grows, "{sh:?}");
        let doubling: Vec<Vec<f64>> = noisy
            .iter()
            .map(|w| {
                w.iter()
                    .enumerate()
                    .map(|(k, &x)| x * f64::from(1u32 << k))
                    .collect()
            })
            .collect();
        assert!(shape(&doubling).unwrap().grows);
    }

    /// Six retries reach the 2 s cap (200, 400, 800, 1600, then 2000, 2000): B's and C's
    /// envelopes end on a plateau from retry 5; a fixed wait is constant; steps of 100 ms
    /// (a linear backoff) are linear.
    #[test]
    fn cap_constant_and_linear_are_told_apart() {
        for id in ["B", "C"] {
            let sh = shape(&lab_waits(id, 7, 20, 6)).unwrap();
            let (cap, from) = sh.cap.unwrap();
            assert!((1800.0..=2002.0).contains(&cap), "{id}: {sh:?}");
            assert_eq!(from, 5, "{id}: {sh:?}");
            assert!(
                matches!(sh.growth, Growth::Exponential { factor } if factor > 1.8),
                "{id}: {sh:?}"
            );
        }
        let fixed: Vec<Vec<f64>> = (0..20).map(|c| vec![500.0 + f64::from(c % 3); 3]).collect();
        let sh = shape(&fixed).unwrap();
        assert_eq!(
            (sh.growth, sh.jitter, sh.grows),
            (Growth::Constant, Jitter::None, false)
        );
        // The same fixed wait late by the machine: most copies within 12 ms, one in five 60 to
        // 116 ms late (20 Node copies at once measured 500 to 616 ms): still no jitter.
        let late: Vec<Vec<f64>> = (0..20u32)
            .map(|c| {
                (0..3u32)
                    .map(|k| {
                        let lag = if (c + k) % 5 == 0 {
                            60 + 2 * c + k
                        } else {
                            (c * 3 + k) % 13
                        };
                        500.0 + f64::from(lag)
                    })
                    .collect()
            })
            .collect();
        let sh = shape(&late).unwrap();
        assert_eq!(
            (sh.growth, sh.jitter),
            (Growth::Constant, Jitter::None),
            "{sh:?}"
        );
        // Equal jitter whose 20 draws bunch in the middle of their range (waits from 0.6 to 0.9
        // of 200, 400 and 800 ms: an interquartile range 20% of the median, as the full suite
        // once measured strategy E at 19%): equal, not none.
        let bunched: Vec<Vec<f64>> = (0..20u32)
            .map(|c| {
                [200.0, 400.0, 800.0]
                    .iter()
                    .map(|n| n * (0.6 + 0.3 * f64::from((c * 7) % 20) / 19.0))
                    .collect()
            })
            .collect();
        let sh = shape(&bunched).unwrap();
        assert_eq!(sh.jitter, Jitter::Equal, "{sh:?}");
        let linear: Vec<Vec<f64>> = (0..20).map(|_| vec![100.0, 200.0, 300.0, 400.0]).collect();
        let sh = shape(&linear).unwrap();
        assert!(
            matches!(sh.growth, Growth::Linear { step_ms } if (step_ms - 100.0).abs() < 1e-9),
            "{sh:?}"
        );
        // urllib3's 0, 200, 400 ms: the immediate first retry is left out, two timed points.
        let urllib3: Vec<Vec<f64>> = (0..20)
            .map(|c| vec![f64::from(c % 4), 200.0, 400.0])
            .collect();
        let sh = shape(&urllib3).unwrap();
        assert_eq!(sh.immediate_first, 1);
        assert!(matches!(sh.growth, Growth::Growing { factor } if (factor - 2.0).abs() < 1e-9));
        assert_eq!(sh.jitter, Jitter::None);
    }
}
