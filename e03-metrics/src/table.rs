//! The one table renderer ([`Table`], an aligned markdown pipe table) and the spread of a
//! figure over seeds ([`Spread`]) with its [`Verdict`]: plain types that read nothing else of
//! the crate.
//!
//! Apart from the table builders (`tables.rs` and each figure module's own table), so that a
//! figure module can build its table without reading the module that prints them all.

/// Headers and rows of cells.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// The same table with only the columns at `cols` (in that order).
    pub fn select(&self, cols: &[usize]) -> Table {
        let pick = |row: &[String]| {
            cols.iter()
                .map(|&i| row.get(i).cloned().unwrap_or_default())
                .collect()
        };
        Table {
            headers: pick(&self.headers),
            rows: self.rows.iter().map(|r| pick(r)).collect(),
        }
    }

    /// An aligned markdown pipe table (first column left-aligned, others right-aligned).
    pub fn markdown(&self) -> String {
        let cols = self.headers.len();
        let mut width: Vec<usize> = self
            .headers
            .iter()
            .map(|h| h.chars().count().max(3))
            .collect();
        for row in &self.rows {
            for (i, c) in row.iter().enumerate().take(cols) {
                width[i] = width[i].max(c.chars().count());
            }
        }
        let line = |cells: &[String]| {
            let mut s = String::from("|");
            for (i, w) in width.iter().enumerate() {
                let c = cells.get(i).map(String::as_str).unwrap_or("");
                if i == 0 {
                    s += &format!(" {c:<w$} |");
                } else {
                    s += &format!(" {c:>w$} |");
                }
            }
            s + "\n"
        };
        let mut out = line(&self.headers);
        out += "|";
        for (i, w) in width.iter().enumerate() {
            out += &if i == 0 {
                format!(":{}|", "-".repeat(w + 1))
            } else {
                format!("{}:|", "-".repeat(w + 1))
            };
        }
        out += "\n";
        for row in &self.rows {
            out += &line(row);
        }
        out
    }
}

/// Mean, min and max of one metric across seeds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    pub n: usize,
}

impl Spread {
    pub fn of(values: &[f64]) -> Spread {
        let n = values.len();
        let mean = if n == 0 {
            0.0
        } else {
            values.iter().sum::<f64>() / n as f64
        };
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Spread {
            mean,
            min: if n == 0 { 0.0 } else { min },
            max: if n == 0 { 0.0 } else { max },
            n,
        }
    }

    /// max - min across seeds.
    pub fn width(&self) -> f64 {
        self.max - self.min
    }
}

/// Whether a difference between two strategies stands out of the seed-to-seed noise. Noise is
/// said only where both spreads say so: a difference larger than one strategy's spread and
/// not the other's is neither measured nor noise (`hedge`: no hedging's p99 is 20 ms in some
/// seeds and 1,000 ms in others, a hedge's 20 to 70 ms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// |mean difference| is larger than both strategies' spreads.
    Measured,
    /// |mean difference| is within both strategies' spreads.
    WithinNoise,
    /// |mean difference| is larger than one strategy's spread, within the other's.
    Unsettled,
}

impl Verdict {
    pub fn of(a: &Spread, b: &Spread) -> Verdict {
        let diff = (a.mean - b.mean).abs();
        match (diff > a.width(), diff > b.width()) {
            (true, true) => Verdict::Measured,
            (false, false) => Verdict::WithinNoise,
            _ => Verdict::Unsettled,
        }
    }

    pub fn text(self) -> &'static str {
        match self {
            Verdict::Measured => "measured",
            Verdict::WithinNoise => "within run-to-run noise",
            Verdict::Unsettled => "not settled: one strategy's seeds vary more than the difference",
        }
    }

    /// As a table's cell says it, short enough for a terminal's table ([`Verdict::text`] in
    /// sentences).
    pub fn cell(self) -> &'static str {
        match self {
            Verdict::Unsettled => "not settled (within one spread)",
            v => v.text(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdict_needs_a_difference_larger_than_both_spreads() {
        let b = Spread::of(&[100.0, 110.0]); // mean 105, spread 10
        let c = Spread::of(&[80.0, 84.0]); // mean 82, spread 4
        assert_eq!(Verdict::of(&b, &c), Verdict::Measured);
        let wide = Spread::of(&[60.0, 100.0]); // mean 80, spread 40 > 25 > b's 10
        assert_eq!(Verdict::of(&b, &wide), Verdict::Unsettled);
        // Larger than one spread only is neither measured nor noise.
        let d = Spread::of(&[96.0, 96.0]); // diff 9 < b's 10, > d's 0
        assert_eq!(Verdict::of(&b, &d), Verdict::Unsettled);
        assert_eq!(Verdict::of(&d, &b), Verdict::Unsettled);
        // Within both spreads: noise.
        let e = Spread::of(&[98.0, 114.0]); // mean 106, diff 1 < 10 and 16
        assert_eq!(Verdict::of(&b, &e), Verdict::WithinNoise);
        assert_eq!(Verdict::WithinNoise.text(), "within run-to-run noise");
        assert_eq!(Verdict::Unsettled.cell(), "not settled (within one spread)");
    }

    #[test]
    fn markdown_tables_are_aligned_pipes() {
        let t = Table {
            headers: vec!["s".into(), "total".into()],
            rows: vec![vec!["A".into(), "3040".into()]],
        };
        assert_eq!(
            t.markdown(),
            "| s   | total |\n|:----|------:|\n| A   |  3040 |\n"
        );
    }
}
