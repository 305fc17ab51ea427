//! Chain runs: reads the logs of a chain scenario (live hops or the simulator, the same files)
//! and writes its table, checks and figure.
//!
//! Layout of a chain scenario's directory: one directory per variant, holding `top.jsonl` (the
//! top caller's operations, [`TopRecord`]) and `layer-<L>-<name>.jsonl` (the calls that arrived
//! at layer L, [`CallRecord`], one line each). Outputs beside them: `chain.csv` (calls per
//! layer per variant), `chain_checks.csv`, `chain.md`, `calls_per_layer.svg` / `.png`.

use std::io::{BufRead, Write};
use std::path::Path;

use e03_core::chain::{CallRecord, ChainDef, ChainVariant, TopRecord};
use e03_core::checks::CheckSpec;
use e03_metrics::chain::{chain_checks, chain_table, check_rows_table, ChainRun};
use e03_metrics::checks::CheckRow;
use serde::de::DeserializeOwned;

use crate::outputs::{write_atomic, write_csv_rows};
use crate::AnalyzeError;

/// The name of the log of layer `layer` of `variant`.
pub fn layer_log_name(variant: &ChainVariant, layer: u32) -> String {
    format!("layer-{layer}-{}.jsonl", variant.layer_name(layer))
}

fn read_lines<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>, AnalyzeError> {
    let io = |source| AnalyzeError::Io {
        path: path.into(),
        source,
    };
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        // A layer no call reached has no log.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io(e)),
    };
    let mut out = Vec::new();
    for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.map_err(io)?;
        if line.trim().is_empty() {
            continue;
        }
        out.push(
            serde_json::from_str(&line).map_err(|e| AnalyzeError::Malformed {
                path: path.into(),
                line: i as u64 + 1,
                message: e.to_string(),
            })?,
        );
    }
    Ok(out)
}

/// Writes records as JSON Lines (the simulator's runs, in the hops' format).
pub fn write_records<T: serde::Serialize>(path: &Path, records: &[T]) -> Result<(), AnalyzeError> {
    let mut text = String::new();
    for r in records {
        text.push_str(&serde_json::to_string(r).map_err(|e| AnalyzeError::Output {
            path: path.into(),
            message: e.to_string(),
        })?);
        text.push('\n');
    }
    write_atomic(path, text.as_bytes())
}

/// The file a stopped chain run leaves in the variant it was running: why it is incomplete.
pub const STOPPED_MARKER: &str = "STOPPED.txt";

/// Reads one variant's directory.
pub fn read_variant(dir: &Path, variant: &ChainVariant) -> Result<ChainRun, AnalyzeError> {
    let marker = dir.join(STOPPED_MARKER);
    if marker.exists() {
        let note = std::fs::read_to_string(&marker).map_err(|source| AnalyzeError::Io {
            path: marker.clone(),
            source,
        })?;
        return Err(AnalyzeError::Incomplete {
            dir: dir.to_path_buf(),
            note: note.trim().to_string(),
        });
    }
    let tops: Vec<TopRecord> = read_lines(&dir.join("top.jsonl"))?;
    let mut calls: Vec<CallRecord> = Vec::new();
    for layer in 1..=variant.bottom_layer() {
        calls.extend(read_lines::<CallRecord>(
            &dir.join(layer_log_name(variant, layer)),
        )?);
    }
    Ok(ChainRun::of(variant, &tops, &calls))
}

/// Reads every variant of a chain scenario's directory.
pub fn analyze_chain(dir: &Path, def: &ChainDef) -> Result<Vec<ChainRun>, AnalyzeError> {
    def.variants
        .iter()
        .map(|v| read_variant(&dir.join(&v.id), v))
        .collect()
}

/// Prints the chain table and the checks.
pub fn print_chain<W: Write>(
    w: &mut W,
    title: &str,
    live: bool,
    runs: &[ChainRun],
    rows: &[CheckRow],
) -> std::io::Result<()> {
    let kind = if live { "live, over HTTP" } else { "simulated" };
    writeln!(w, "{title} ({kind})\n")?;
    for r in runs {
        writeln!(w, "- {}: {}", r.variant.id, r.variant.label)?;
    }
    writeln!(w)?;
    write!(w, "{}", chain_table(runs).markdown())?;
    if !rows.is_empty() {
        writeln!(w, "\nChecks against the source's figures:\n")?;
        write!(w, "{}", check_rows_table(rows).markdown())?;
    }
    Ok(())
}

/// The chain's check rows for these runs.
pub fn checks_of(checks: &[CheckSpec], runs: &[ChainRun], live: bool) -> Vec<CheckRow> {
    chain_checks(checks, runs, live)
}

/// Writes `chain.csv`, `chain_checks.csv`, `chain.md` and the figure into `dir`.
pub fn write_chain_outputs(
    dir: &Path,
    title: &str,
    live: bool,
    runs: &[ChainRun],
    rows: &[CheckRow],
) -> Result<(), AnalyzeError> {
    let table = chain_table(runs);
    let mut csv = vec![table.headers.clone()];
    csv.extend(table.rows.iter().cloned());
    write_csv_rows(&dir.join("chain.csv"), &csv)?;
    let checks = check_rows_table(rows);
    let mut csv = vec![checks.headers.clone()];
    csv.extend(checks.rows.iter().cloned());
    write_csv_rows(&dir.join("chain_checks.csv"), &csv)?;
    let mut md = Vec::new();
    print_chain(&mut md, title, live, runs, rows).map_err(|e| AnalyzeError::Output {
        path: dir.join("chain.md"),
        message: e.to_string(),
    })?;
    write_atomic(&dir.join("chain.md"), &md)?;
    crate::figures::write_calls_per_layer(dir, title, runs)
}
