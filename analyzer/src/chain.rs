//! Chain runs: reads the logs of a chain scenario (live hops or the simulator, the same files)
//! and writes its table, checks and figure.
//!
//! Layout of a chain scenario's directory: one directory per variant, holding `top.jsonl` (the
//! top caller's operations, [`TopRecord`]) and `layer-<L>-<name>.jsonl` (the calls that arrived
//! at layer L, [`CallRecord`], one line each), and `proxy-<L>-<name>.jsonl` for a layer with a
//! fault proxy in front of it (that proxy's log; its `proxied` records are read). Outputs beside them: `chain.csv` (calls per
//! layer per variant), `chain_checks.csv`, `chain.json` (the figures unrounded and the checks),
//! `chain.md`, `calls_per_layer.svg` / `.png`, and `report.html` (the blocks of `chain.md`,
//! [`chain_blocks`], with the figure inlined).

use std::io::{BufRead, Write};
use std::path::Path;

use e03_metrics::chain::{
    chain_checks, chain_conclusion, chain_json, chain_table, check_rows_table, ChainRun,
};
use e03_metrics::checks::{CheckRow, CHECK_HEADING};
use e03_metrics::tables::Table;
use e03_model::chain::{CallRecord, ChainDef, ChainVariant, TopRecord};
use e03_model::events::{Event, ProxiedRecord};
use e03_plan::checks::CheckSpec;
use serde::de::DeserializeOwned;

use crate::blocks::Block;
use crate::outputs::{blocks_markdown, write_atomic, write_csv_rows};
use crate::AnalyzeError;

pub use e03_plan::log_names::{layer_log_name, proxy_log_name, STOPPED_MARKER, TOP_LOG};

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
    let tops: Vec<TopRecord> = read_lines(&dir.join(TOP_LOG))?;
    let mut calls: Vec<CallRecord> = Vec::new();
    let mut proxied: Vec<(u32, ProxiedRecord)> = Vec::new();
    for layer in 1..=variant.bottom_layer() {
        calls.extend(read_lines::<CallRecord>(
            &dir.join(layer_log_name(variant, layer)),
        )?);
        if variant.proxy_before(layer).is_some() {
            let log = read_lines::<Event>(&dir.join(proxy_log_name(variant, layer)))?;
            proxied.extend(log.into_iter().filter_map(|e| match e {
                Event::Proxied(p) => Some((layer, p)),
                _ => None,
            }));
        }
    }
    Ok(ChainRun::of(variant, &tops, &calls, &proxied))
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
        writeln!(w, "\n{CHECK_HEADING}:\n")?;
        write!(w, "{}", check_rows_table(rows).markdown())?;
    }
    Ok(())
}

/// The chain's check rows for these runs.
pub fn checks_of(checks: &[CheckSpec], runs: &[ChainRun], live: bool) -> Vec<CheckRow> {
    chain_checks(checks, runs, live)
}

pub use crate::names::CHAIN_JSON;

/// The policy of every layer of every variant: what the variants' labels say, in numbers.
pub fn layers_table(runs: &[ChainRun]) -> Table {
    let mut rows = Vec::new();
    for r in runs {
        let v = &r.variant;
        for (layer, hop) in std::iter::once(&v.top).chain(&v.hops).enumerate() {
            rows.push(vec![
                v.id.clone(),
                layer.to_string(),
                hop.name.clone(),
                hop.attempts.to_string(),
                hop.timeout_ms.to_string(),
                hop.backoff_ms.to_string(),
                hop.deadline_ms.map_or("-".into(), |d| d.to_string()),
                if v.propagate { "yes" } else { "no" }.into(),
            ]);
        }
        rows.push(vec![
            v.id.clone(),
            v.bottom_layer().to_string(),
            v.layer_name(v.bottom_layer()),
            "-".into(),
            "-".into(),
            "-".into(),
            "-".into(),
            "-".into(),
        ]);
    }
    Table {
        headers: [
            "variant",
            "layer",
            "name",
            "attempts",
            "timeout ms",
            "backoff ms",
            "deadline ms",
            "deadline propagated",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}

/// The chain report's blocks: `chain.md` and the chain's `report.html` render these, as
/// `report.md` and `report.html` render [`crate::outputs::report_blocks`].
pub fn chain_blocks(
    scenario: &str,
    title: &str,
    live: bool,
    runs: &[ChainRun],
    rows: &[CheckRow],
) -> Vec<Block> {
    let kind = if live { "live, over HTTP" } else { "simulated" };
    let mut b = vec![
        Block::Heading(1, format!("{title} ({kind})")),
        Block::Para(format!(
            "Chain scenario `{scenario}`, {kind}: one row per variant, each the same top \
             requests through its chain of layers ([CSV](chain.csv), [JSON]({CHAIN_JSON}))."
        )),
        Block::Items(
            runs.iter()
                .map(|r| format!("{}: {}", r.variant.id, r.variant.label))
                .collect(),
        ),
        Block::Heading(2, "Calls per layer".into()),
        Block::Table(chain_table(runs)),
        Block::Para(
            "*calls per layer* counts the calls that arrived at each layer (the top caller's \
             operations first); *bottom per request* is the bottom's calls per top request; \
             *op max/mean ms* are the top operations' durations; *wasted ms/request* is the \
             lower layers' time past the top caller's end, per top request, and *late \
             calls/request* the calls that ended after it; *refused* counts calls refused at \
             arrival because their deadline had passed."
                .into(),
        ),
    ];
    b.extend(chain_conclusion(runs, rows).into_iter().map(Block::Para));
    b.push(Block::Figure {
        file: "calls_per_layer.svg".into(),
        alt: "calls per top request at each layer".into(),
    });
    if !rows.is_empty() {
        b.push(Block::Heading(2, CHECK_HEADING.into()));
        b.push(Block::Para("([CSV](chain_checks.csv))".into()));
        b.push(Block::Table(check_rows_table(rows)));
    }
    b.push(Block::Heading(2, "Layers of each variant".into()));
    b.push(Block::Table(layers_table(runs)));
    b
}

/// Writes `chain.csv`, `chain_checks.csv`, `chain.json`, `chain.md`, the figure and
/// `report.html` (the blocks of `chain.md`, the figure inlined) into `dir`.
pub fn write_chain_outputs(
    dir: &Path,
    scenario: &str,
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
    let json = chain_json(scenario, title, live, runs, rows);
    let json = serde_json::to_string_pretty(&json).map_err(|e| AnalyzeError::Output {
        path: dir.join(CHAIN_JSON),
        message: e.to_string(),
    })?;
    write_atomic(&dir.join(CHAIN_JSON), json.as_bytes())?;
    let blocks = chain_blocks(scenario, title, live, runs, rows);
    write_atomic(
        &dir.join("chain.md"),
        blocks_markdown(blocks.clone()).as_bytes(),
    )?;
    crate::figures::write_calls_per_layer(dir, title, runs)?;
    // Last: it inlines the figure written above.
    let mut table_classes = vec!["chain"];
    if !rows.is_empty() {
        table_classes.push("checks");
    }
    let page = crate::html::page_html(
        dir,
        crate::html::Page {
            title: format!("{title} ({scenario})"),
            blocks,
            params: None,
            conclusion: chain_conclusion(runs, rows),
            table_classes,
            footer: format!(
                "Files: <a href=\"{CHAIN_JSON}\">{CHAIN_JSON}</a>, <a href=\"chain.md\">chain.md</a>, \
                 <a href=\"chain.csv\">chain.csv</a>, <a href=\"chain_checks.csv\">chain_checks.csv</a>; \
                 one folder of logs per variant."
            ),
        },
    );
    write_atomic(&dir.join("report.html"), page.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The simulated `deadline` chain (its records, as `lab simulate` writes them), read back
    /// and reported into `OUT/<run>/simulated/deadline`.
    #[test]
    fn a_chain_run_writes_report_html_from_its_blocks_and_the_index_lists_it() {
        let def = e03_plan::scenario::builtin("deadline").expect("built-in deadline");
        let chain = def.chain.as_ref().expect("a chain");
        let out = std::env::temp_dir().join(format!("e03-chain-report-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        let dir = out.join("20261202-120000/simulated/deadline");
        for v in &chain.variants {
            let vdir = dir.join(&v.id);
            std::fs::create_dir_all(&vdir).unwrap();
            let logs = simulator::chain::simulate_chain(v, chain.bottom, chain.requests, 1);
            e03_io::logs::write_chain_logs(&vdir, v, &logs.tops, &logs.calls, &logs.proxied)
                .unwrap();
        }
        let runs = analyze_chain(&dir, chain).unwrap();
        let rows = checks_of(&def.checks, &runs, false);
        write_chain_outputs(&dir, "deadline", &def.title, false, &runs, &rows).unwrap();

        let md = std::fs::read_to_string(dir.join("chain.md")).unwrap();
        let html = std::fs::read_to_string(dir.join("report.html")).expect("report.html");
        // Every table of chain.md is a table of the page, with the same cells.
        let blocks = chain_blocks("deadline", &def.title, false, &runs, &rows);
        let tables: Vec<&Table> = blocks
            .iter()
            .filter_map(|b| match b {
                Block::Table(t) => Some(t),
                _ => None,
            })
            .collect();
        assert_eq!(tables.len(), 3);
        for t in &tables {
            assert!(md.contains(&t.markdown()), "{md}");
            for row in &t.rows {
                for cell in row {
                    assert!(
                        html.contains(&format!(">{}</td>", crate::html::escape(cell))),
                        "{cell}"
                    );
                }
            }
        }
        assert!(html.contains("<table class=\"chain\">"));
        assert!(html.contains("<table class=\"checks\">"));
        assert!(html.contains("data-figure=\"calls_per_layer\"><svg role=\"img\""));
        assert!(!html.contains("class=\"missing\""));
        // The simulated chain-local variant wastes 69 s per request, propagation none.
        assert!(
            html.contains(
                "<p class=\"conclusion\">Work the lower layers did after the top caller had given \
                 up, per top request: no-deadline 1000, deadline 3000, chain-local 69000, \
                 chain-propagated 0 (ms;"
            ),
            "{html}"
        );
        assert!(md.contains("Work the lower layers did after the top caller had given up"));
        assert_eq!(
            html.matches("<td class=\"pass\">PASS</td>").count(),
            3,
            "{html}"
        );
        for what in ["<script", "<link", "src=\"http"] {
            assert!(!html.contains(what), "{what}");
        }
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(CHAIN_JSON)).unwrap()).unwrap();
        assert_eq!(json["variants"][2]["wasted_ms"], 69000.0);
        assert_eq!(json["checks"][0]["check"], "PASS");

        let entries = crate::html::index_entries(&out);
        assert_eq!(entries.len(), 1, "{entries:?}");
        let e = &entries[0];
        assert_eq!(e.link, "20261202-120000/simulated/deadline/report.html");
        assert_eq!(e.scenario, "deadline (chain)");
        assert!(e.simulated);
        assert_eq!(e.verdicts, "complete, checks PASS");
        let index = crate::html::index_html(&entries);
        assert!(index.contains("href=\"20261202-120000/simulated/deadline/report.html\""));
        std::fs::remove_dir_all(&out).unwrap();
    }
}
