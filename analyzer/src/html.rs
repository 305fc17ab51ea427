//! `report.html`: one self-contained page per scenario run, and `OUT/index.html`, the list of
//! every run of an output folder.
//!
//! The page renders the same [`Block`]s as `report.md` ([`crate::outputs::report_blocks`]): the
//! scenario and its parameters, every table, the conclusion, the checks (PASS and FAIL
//! coloured) and the figures, inlined as the SVG files the analyzer wrote beside it. It loads
//! nothing (no script, no external style sheet, font or image), and its style sheet reads on a
//! phone (tables scroll sideways, figures shrink to the width) and in print. A chain run's page
//! ([`crate::chain::write_chain_outputs`]) renders the blocks of its `chain.md` the same way
//! ([`page_html`]).

use std::fmt::Write as _;
use std::path::Path;

use crate::blocks::{report_blocks, Block};
use crate::tables::{seed_ranges, Table};
use crate::ScenarioSummary;

/// The second line of every page the lab writes: [`write_index`] replaces an `index.html` only
/// when its start holds it (a file the lab did not write is left alone).
pub const MARK: &str = "<!-- written by the E03 lab -->";

const STYLE: &str = "\
:root{color-scheme:light}\
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;line-height:1.45;\
margin:0 auto;max-width:1100px;padding:1rem;color:#1a1a1a;background:#fff}\
h1{font-size:1.5rem;margin:.5rem 0}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ddd}\
.scroll{overflow-x:auto;-webkit-overflow-scrolling:touch;margin:.5rem 0}\
table{border-collapse:collapse;font-size:.9rem;font-variant-numeric:tabular-nums}\
th,td{border:1px solid #ccc;padding:.25rem .5rem;text-align:right;white-space:nowrap}\
th:first-child,td:first-child{text-align:left}th{background:#f3f3f3}\
td.pass{background:#e5f5e0;color:#14532d;font-weight:600}\
td.fail{background:#fde2e2;color:#7f1d1d;font-weight:600}\
figure{margin:1rem 0}figure svg{display:block;width:100%;height:auto;max-width:1000px}\
figcaption{font-size:.85rem;color:#555}.missing{color:#7f1d1d;font-weight:600}\
pre{overflow-x:auto;background:#f7f7f7;padding:.5rem;font-size:.8rem}\
p.conclusion{background:#f0f6ff;border-left:4px solid #1f77b4;padding:.3rem .6rem}\
details{margin:.5rem 0}\
@media (max-width:600px){body{padding:.5rem}table{font-size:.8rem}h1{font-size:1.25rem}}\
@media print{body{max-width:none;padding:0}.scroll{overflow:visible}\
figure,table{break-inside:avoid}h2{break-after:avoid}a{color:inherit;text-decoration:none}\
th,td{white-space:normal}}";

/// Escapes text for HTML.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The small markdown of the report's paragraphs as HTML: `[text](target)` links, `code` and
/// *emphasis*; everything else escaped.
pub fn inline(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        match c {
            '[' => {
                if let Some((label, after)) = rest[1..].split_once("](") {
                    if let Some((target, tail)) = after.split_once(')') {
                        if !label.contains('[') && !target.contains(' ') {
                            let _ =
                                write!(out, "<a href=\"{}\">{}</a>", escape(target), escape(label));
                            rest = tail;
                            continue;
                        }
                    }
                }
            }
            '`' | '*' => {
                if let Some((inner, tail)) = rest[1..].split_once(c) {
                    if !inner.is_empty() && !inner.starts_with(' ') {
                        let tag = if c == '`' { "code" } else { "em" };
                        let _ = write!(out, "<{tag}>{}</{tag}>", escape(inner));
                        rest = tail;
                        continue;
                    }
                }
            }
            _ => {}
        }
        out.push_str(&escape(&rest[..c.len_utf8()]));
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// A table as HTML; a cell reading PASS or FAIL (the checks) is coloured.
pub fn table_html(t: &Table, class: &str) -> String {
    let mut h = format!("<div class=\"scroll\"><table class=\"{class}\"><thead><tr>");
    for head in &t.headers {
        let _ = write!(h, "<th>{}</th>", escape(head));
    }
    h += "</tr></thead><tbody>";
    for row in &t.rows {
        h += "<tr>";
        for c in row {
            let class = match c.split_whitespace().next() {
                Some("PASS") => " class=\"pass\"",
                Some("FAIL") => " class=\"fail\"",
                _ => "",
            };
            let _ = write!(h, "<td{class}>{}</td>", escape(c));
        }
        h += "</tr>";
    }
    h + "</tbody></table></div>\n"
}

/// The SVG of a figure written beside the page, inlined (its XML prolog dropped), or a visible
/// note that it is missing.
fn figure_html(dir: &Path, file: &str, alt: &str) -> String {
    let stem = file.trim_end_matches(".svg");
    let body = match std::fs::read_to_string(dir.join(file)) {
        Ok(svg) => match svg.find("<svg") {
            Some(at) => svg[at..].replacen(
                "<svg",
                &format!("<svg role=\"img\" aria-label=\"{}\"", escape(alt)),
                1,
            ),
            None => format!(
                "<p class=\"missing\">figure {} is not an SVG</p>",
                escape(file)
            ),
        },
        Err(e) => format!(
            "<p class=\"missing\">figure {} missing: {}</p>",
            escape(file),
            escape(&e.to_string())
        ),
    };
    format!(
        "<figure class=\"figure\" data-figure=\"{}\">{body}<figcaption>{} (<a href=\"{}\">SVG</a>, \
         <a href=\"{stem}.png\">PNG</a>)</figcaption></figure>\n",
        escape(stem),
        escape(alt),
        escape(file)
    )
}

/// The scenario's parameters as a two-column table (from the same raw parameters summary.json
/// holds).
fn params_table(s: &ScenarioSummary) -> Option<Table> {
    let value = serde_json::to_value(s.params.to_raw()).ok()?;
    let map = value.as_object()?;
    let rows = map
        .iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| {
            let text = match v {
                serde_json::Value::String(t) => t.clone(),
                other => other.to_string(),
            };
            vec![k.clone(), text]
        })
        .collect();
    Some(Table {
        headers: vec!["parameter".into(), "value".into()],
        rows,
    })
}

/// What a page renders: the blocks of a report, and what goes around them.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    pub title: String,
    pub blocks: Vec<Block>,
    /// Folded ("Parameters") before the first section heading.
    pub params: Option<Table>,
    /// The paragraphs among the blocks that are the conclusion (highlighted).
    pub conclusion: Vec<String>,
    /// The classes of the first tables, in order (the browser test finds by class the tables
    /// it checks against the run's JSON summary); later tables are `data`.
    pub table_classes: Vec<&'static str>,
    /// The footer's line, as HTML.
    pub footer: String,
}

/// A page: the blocks rendered as [`report_html`] does, the figures read from `dir`.
pub fn page_html(dir: &Path, page: Page) -> String {
    let mut h = format!(
        "<!DOCTYPE html>\n{MARK}\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>{}</title><style>{STYLE}</style></head><body>\n",
        escape(&page.title)
    );
    let mut params = page.params;
    let mut table_no = 0;
    for block in page.blocks {
        match block {
            Block::Heading(1, text) => {
                let _ = writeln!(h, "<h1>{}</h1>", escape(&text));
            }
            Block::Heading(_, text) => {
                if let Some(t) = params.take() {
                    h += "<details><summary>Parameters</summary>\n";
                    h += &table_html(&t, "params");
                    h += "</details>\n";
                }
                let _ = writeln!(h, "<h2>{}</h2>", escape(&text));
            }
            Block::Para(text) => {
                let class = if page.conclusion.contains(&text) {
                    " class=\"conclusion\""
                } else {
                    ""
                };
                let _ = writeln!(h, "<p{class}>{}</p>", inline(&text));
            }
            Block::Table(t) => {
                let class = page.table_classes.get(table_no).copied().unwrap_or("data");
                table_no += 1;
                h += &table_html(&t, class);
            }
            Block::Figure { file, alt } => h += &figure_html(dir, &file, &alt),
            Block::Pre(text) => {
                let _ = writeln!(h, "<pre>{}</pre>", escape(&text));
            }
            Block::Items(lines) => {
                h += "<ul>";
                for l in lines {
                    let _ = write!(h, "<li>{}</li>", inline(&l));
                }
                h += "</ul>\n";
            }
        }
    }
    let _ = writeln!(h, "<p><small>{}</small></p>\n</body></html>", page.footer);
    h
}

/// The whole page of one scenario run, reading the figures from `dir`.
pub fn report_html(dir: &Path, s: &ScenarioSummary) -> String {
    page_html(
        dir,
        Page {
            title: format!("{} ({})", s.scenario.title(), s.scenario.name()),
            blocks: report_blocks(s),
            params: params_table(s),
            // The one conclusion at the top is highlighted; the comparisons below are not.
            conclusion: crate::tables::headline(s).into_iter().collect(),
            // The first table is the comparison, the one summary.json's runs fill.
            table_classes: vec!["comparison"],
            footer: format!(
                "Files: <a href=\"summary.json\">summary.json</a>, <a href=\"report.md\">report.md</a>. \
                 Seeds {}.",
                escape(&seed_ranges(&s.seeds()))
            ),
        },
    )
}

/// One run of an output folder, as the index lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexEntry {
    /// The page's path relative to the output folder: `<run id>/e03b/report.html`.
    pub link: String,
    pub run_id: String,
    pub scenario: String,
    pub simulated: bool,
    pub seeds: String,
    /// "complete" or "INCOMPLETE"; then the checks: "checks PASS", "checks FAIL", or nothing.
    pub verdicts: String,
}

/// The runs of `out`: every `<run>/<scenario>/` and `<run>/simulated/<scenario>/` holding a
/// `report.html` and a readable `summary.json` (a chain run: `chain.json`), newest run first.
pub fn index_entries(out: &Path) -> Vec<IndexEntry> {
    let mut entries = Vec::new();
    let Ok(runs) = std::fs::read_dir(out) else {
        return entries;
    };
    let mut runs: Vec<_> = runs
        .flatten()
        .filter(|e| e.file_type().map(|t| t.is_dir()).unwrap_or(false))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    runs.sort();
    runs.reverse();
    for run in runs {
        for sub in ["", "simulated/"] {
            let Ok(dirs) = std::fs::read_dir(out.join(&run).join(sub)) else {
                continue;
            };
            let mut found: Vec<_> = dirs.flatten().map(|e| e.path()).collect();
            found.sort();
            for dir in found {
                if !dir.join("report.html").is_file() {
                    continue;
                }
                let Some(entry) = entry_of(&dir) else {
                    continue;
                };
                let name = dir.file_name().unwrap_or_default().to_string_lossy();
                entries.push(IndexEntry {
                    link: format!("{run}/{sub}{name}/report.html"),
                    run_id: run.clone(),
                    ..entry
                });
            }
        }
    }
    entries
}

/// Scenario, seeds and verdicts from a folder's summary.json, or a chain run's chain.json.
fn entry_of(dir: &Path) -> Option<IndexEntry> {
    if !dir.join("summary.json").is_file() {
        return chain_entry_of(dir);
    }
    let text = std::fs::read_to_string(dir.join("summary.json")).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    let scenario = v.get("scenario")?.as_str()?.to_string();
    let simulated = v.get("simulated")?.as_bool()?;
    let complete = v.get("complete")?.as_bool()?;
    let mut seeds: Vec<u64> = Vec::new();
    for r in v.get("runs")?.as_array()? {
        if let Some(n) = r.get("seed").and_then(|n| n.as_u64()) {
            if !seeds.contains(&n) {
                seeds.push(n);
            }
        }
    }
    let mut verdicts = String::from(if complete { "complete" } else { "INCOMPLETE" });
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap_or_default();
    if report.contains("## Check against") {
        let checks = report.split("## Check against").nth(1).unwrap_or("");
        let checks = checks.split("\n## ").next().unwrap_or("");
        verdicts += if checks.contains("| FAIL") {
            ", checks FAIL"
        } else {
            ", checks PASS"
        };
    }
    Some(IndexEntry {
        link: String::new(),
        run_id: String::new(),
        scenario,
        simulated,
        seeds: seed_ranges(&seeds),
        verdicts,
    })
}

/// Scenario and verdicts from a chain run's chain.json (a chain run has no seeds: "-").
fn chain_entry_of(dir: &Path) -> Option<IndexEntry> {
    let text = std::fs::read_to_string(dir.join(crate::names::CHAIN_JSON)).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    let scenario = v.get("scenario")?.as_str()?.to_string();
    let simulated = v.get("simulated")?.as_bool()?;
    let complete = v.get("complete")?.as_bool()?;
    let checks = v.get("checks")?.as_array()?;
    let mut verdicts = String::from(if complete { "complete" } else { "INCOMPLETE" });
    if checks
        .iter()
        .any(|c| c.get("check").and_then(|c| c.as_str()) == Some("FAIL"))
    {
        verdicts += ", checks FAIL";
    } else if !checks.is_empty() {
        verdicts += ", checks PASS";
    }
    Some(IndexEntry {
        link: String::new(),
        run_id: String::new(),
        scenario: format!("{scenario} (chain)"),
        simulated,
        seeds: "-".into(),
        verdicts,
    })
}

/// The date of a run id `YYYYMMDD-HHMMSS` ("2026-11-30 14:12:24 UTC"), else the id.
fn run_date(id: &str) -> String {
    let b = id.as_bytes();
    if id.len() >= 15
        && b[8] == b'-'
        && id[..8]
            .bytes()
            .chain(id[9..15].bytes())
            .all(|c| c.is_ascii_digit())
    {
        format!(
            "{}-{}-{} {}:{}:{} UTC",
            &id[0..4],
            &id[4..6],
            &id[6..8],
            &id[9..11],
            &id[11..13],
            &id[13..15]
        )
    } else {
        id.to_string()
    }
}

/// The index page of `entries`.
pub fn index_html(entries: &[IndexEntry]) -> String {
    let mut h = format!(
        "<!DOCTYPE html>\n{MARK}\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>E03 lab: runs</title><style>{STYLE}</style></head><body>\n<h1>Runs of the E03 lab</h1>\n"
    );
    let table = Table {
        headers: [
            "run", "date", "scenario", "kind", "seeds", "verdicts", "report",
        ]
        .map(String::from)
        .to_vec(),
        rows: Vec::new(),
    };
    let mut t = table_html(&table, "index");
    let rows: String = entries
        .iter()
        .map(|e| {
            format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"{}\">{}</td>\
                 <td><a href=\"{}\">report.html</a></td></tr>",
                escape(&e.run_id),
                escape(&run_date(&e.run_id)),
                escape(&e.scenario),
                if e.simulated { "simulated" } else { "live" },
                escape(&e.seeds),
                if e.verdicts.contains("FAIL") || e.verdicts.starts_with("INCOMPLETE") {
                    "fail"
                } else {
                    "pass"
                },
                escape(&e.verdicts),
                escape(&e.link)
            )
        })
        .collect();
    t = t.replace("<tbody></tbody>", &format!("<tbody>{rows}</tbody>"));
    h += &t;
    if entries.is_empty() {
        h += "<p>No run with a report yet.</p>\n";
    }
    h + "</body></html>\n"
}

/// Whether a page's start carries [`MARK`].
fn lab_wrote(page: &str) -> bool {
    page.get(..64).unwrap_or(page).contains(MARK)
}

/// Rewrites `out/index.html` from the runs `out` holds. An `index.html` the lab did not write
/// (one without [`MARK`] at its start) is left alone: returns Ok(false).
pub fn write_index(out: &Path) -> std::io::Result<bool> {
    let path = out.join("index.html");
    if let Ok(old) = std::fs::read_to_string(&path) {
        if !lab_wrote(&old) {
            return Ok(false);
        }
    } else if path.exists() {
        return Ok(false);
    }
    let page = index_html(&index_entries(out));
    let tmp = out.join(".index.html.tmp");
    std::fs::write(&tmp, page)?;
    std::fs::rename(&tmp, &path)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_markdown_becomes_links_code_and_emphasis_and_the_rest_is_escaped() {
        assert_eq!(
            inline("see [CSV](a_1s.csv), `none` and *measured* <b>"),
            "see <a href=\"a_1s.csv\">CSV</a>, <code>none</code> and <em>measured</em> &lt;b&gt;"
        );
        assert_eq!(inline("2 * 3 [x]"), "2 * 3 [x]");
    }

    #[test]
    fn check_cells_are_coloured() {
        let t = Table {
            headers: vec!["metric".into(), "check".into()],
            rows: vec![
                vec!["a".into(), "PASS".into()],
                vec!["b".into(), "FAIL (x)".into()],
            ],
        };
        let h = table_html(&t, "data");
        assert!(h.contains("<td class=\"pass\">PASS</td>"));
        assert!(h.contains("<td class=\"fail\">FAIL (x)</td>"));
    }

    #[test]
    fn run_ids_read_as_dates() {
        assert_eq!(run_date("20261130-141224"), "2026-11-30 14:12:24 UTC");
        assert_eq!(run_date("mine"), "mine");
    }

    #[test]
    fn an_index_the_lab_did_not_write_is_left_alone() {
        let dir = std::env::temp_dir().join(format!("e03-index-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("index.html");
        std::fs::write(&path, "mine").unwrap();
        assert!(!write_index(&dir).unwrap());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "mine");
        std::fs::remove_file(&path).unwrap();
        assert!(write_index(&dir).unwrap());
        assert!(lab_wrote(&std::fs::read_to_string(&path).unwrap()));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
