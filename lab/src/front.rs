//! What `lab run`, `lab simulate`, `lab compare` and `lab analyze` put on the terminal, chosen
//! once from the command line ([`set`]):
//!
//! - the tables without the long series of 100 ms windows around the outage (150 rows for
//!   `failover`): one line says where they are (`arrivals_100ms.csv`, `report.md`); `--series`
//!   prints them as before;
//! - `--json`: stdout carries each scenario's `summary.json`, one line each (JSON Lines), and
//!   nothing else: from the start of the command, whatever else would go to stdout (tables,
//!   results lines, the children's output) goes to stderr.
//!
//! On its own so that the live runner, the simulator's front and `lab analyze` print the same
//! way without importing one another.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::{Mutex, OnceLock};

/// How the terminal shows a run's results.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Show {
    /// `--series`: the 100 ms series tables on the terminal too.
    pub series: bool,
    /// `--json`: only the summaries on stdout.
    pub json: bool,
}

static SHOW: OnceLock<Show> = OnceLock::new();

/// The real stdout under `--json` (fd 1 then points at stderr).
static JSON_OUT: OnceLock<Mutex<File>> = OnceLock::new();

/// Chooses how results are shown, once, before anything is printed. With `json`, stdout is
/// kept for the summaries and fd 1 is pointed at stderr for everything else (children started
/// later inherit it); `Err` says why that failed.
pub fn set(show: Show) -> std::io::Result<()> {
    let _ = SHOW.set(show);
    if show.json && JSON_OUT.get().is_none() {
        use std::os::fd::AsFd;
        std::io::stdout().flush()?;
        let kept = std::io::stdout().as_fd().try_clone_to_owned()?;
        nix::unistd::dup2_stdout(std::io::stderr()).map_err(std::io::Error::from)?;
        let _ = JSON_OUT.set(Mutex::new(File::from(kept)));
    }
    Ok(())
}

fn show() -> Show {
    SHOW.get().copied().unwrap_or_default()
}

/// The terminal tables of a scenario (`dir`: where its outputs go), as
/// [`analyzer::print_tables`] renders them but for the series, unless `--series`.
pub fn print_tables(summary: &analyzer::ScenarioSummary, dir: &Path) -> std::io::Result<()> {
    let mut text = Vec::new();
    analyzer::print_tables(&mut text, summary)?;
    let text = String::from_utf8_lossy(&text);
    let shown = match e03_metrics::tables::series_table(summary) {
        Some(t) if !show().series => without_series(&text, &t.markdown(), dir),
        _ => text.into_owned(),
    };
    let mut out = std::io::stdout().lock();
    out.write_all(shown.as_bytes())?;
    out.flush()
}

/// `text` with the block of `series` (the table and its heading line) replaced by one line
/// saying where the series is.
fn without_series(text: &str, series: &str, dir: &Path) -> String {
    let Some(at) = text.find(series) else {
        return text.to_string();
    };
    let head = text[..at]
        .trim_end_matches('\n')
        .rfind('\n')
        .map_or(0, |i| i + 1);
    let rows = series.lines().count().saturating_sub(2);
    let line = format!(
        "Arrivals per 100 ms window around the outage ({rows} windows): in {} and report.md; \
         --series prints them here.",
        dir.join("arrivals_100ms.csv").display(),
    );
    let mut out = text[..head].to_string();
    for l in analyzer::tables::wrap(&line, analyzer::tables::TERMINAL_COLUMNS) {
        out += &l;
        out.push('\n');
    }
    out + &text[at + series.len()..]
}

/// After a scenario's outputs are written into `dir`: `results: DIR` on stdout; with `--json`,
/// its `summary.json` on one line of stdout instead (and `results: DIR` on stderr).
pub fn results(dir: &Path, shown: &str) -> std::io::Result<()> {
    let Some(out) = JSON_OUT.get() else {
        println!("results: {shown}");
        return Ok(());
    };
    eprintln!("results: {shown}");
    let path = dir.join("summary.json");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| std::io::Error::other(format!("{}: {e}", path.display())))?;
    let mut out = out.lock().unwrap_or_else(|e| e.into_inner());
    writeln!(out, "{value}")?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_series_block_becomes_one_line_naming_its_file() {
        let series = "| window | A |\n|:--|--:|\n| 8.0 s | 3 |\n| 8.1 s | 4 |\n";
        let text =
            format!("conclusion.\n\nArrivals per 100 ms window (retries):\n{series}\nVerdicts:\n");
        let out = without_series(&text, series, Path::new("/r/e03b"));
        assert_eq!(
            out.replace('\n', " "),
            "conclusion.  Arrivals per 100 ms window around the outage (2 windows): in \
             /r/e03b/arrivals_100ms.csv and report.md; --series prints them here.  Verdicts: "
        );
        assert!(out.lines().all(|l| l.len() <= 120), "{out}");
        assert_eq!(
            without_series("no series\n", series, Path::new("/r")),
            "no series\n"
        );
    }
}
