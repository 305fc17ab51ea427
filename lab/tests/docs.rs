//! The docs against the code, so they cannot drift:
//! - `docs/parameters.md`'s table is generated from the parameter table in the code
//!   (`e03_plan::params::PARAMS`); `E03_BLESS=1 cargo test -p lab --test docs` rewrites it;
//! - README.md's catalogue lists exactly the built-in scenarios `lab list` prints, and says how
//!   many there are;
//! - docs/scenarios.md's reserved names (scenario names and strategy ids a file may not take) are
//!   those `lab list` prints;
//! - every scenario file in `examples/` runs (`lab simulate`).

mod common;

use std::path::{Path, PathBuf};

use common::{lab, temp, text};
use e03_plan::cli::OTHER_ENV;
use e03_plan::params::PARAMS;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

const BEGIN: &str = "<!-- BEGIN GENERATED: the parameter table (lab/tests/docs.rs) -->";
const END: &str = "<!-- END GENERATED -->";

fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

/// The generated part of docs/parameters.md: one row per entry of `PARAMS`, in its order.
fn parameter_table() -> String {
    let mut out = String::new();
    out.push_str(BEGIN);
    out.push('\n');
    out.push_str(
        "<!-- Do not edit this table: regenerate it with \
         `E03_BLESS=1 cargo test -p lab --test docs`. -->\n\n",
    );
    out.push_str("| env var | flag | default | accepts | meaning |\n");
    out.push_str("|---|---|---|---|---|\n");
    for p in PARAMS {
        let default = if p.default.is_empty() {
            "unset".to_string()
        } else {
            format!("`{}`", p.default)
        };
        out.push_str(&format!(
            "| `{}` | `--{}` | {} | {} | {} |\n",
            p.env,
            p.flag,
            default,
            cell(p.accepts),
            cell(p.help)
        ));
    }
    out.push_str(END);
    out
}

/// `text` with its generated part replaced by `table`; `None` when the markers are missing.
fn with_table(text: &str, table: &str) -> Option<String> {
    let start = text.find(BEGIN)?;
    let end = text[start..].find(END)? + start + END.len();
    Some(format!("{}{}{}", &text[..start], table, &text[end..]))
}

#[test]
fn parameters_md_is_the_parameter_table_of_the_code() {
    let path = root().join("docs/parameters.md");
    let text = std::fs::read_to_string(&path).expect("docs/parameters.md");
    let table = parameter_table();
    let expected = with_table(&text, &table).unwrap_or_else(|| {
        panic!("docs/parameters.md has no generated part: the lines {BEGIN} .. {END}")
    });
    if std::env::var("E03_BLESS").as_deref() == Ok("1") {
        if expected != text {
            std::fs::write(&path, &expected).unwrap();
        }
        return;
    }
    assert!(
        expected == text,
        "docs/parameters.md is out of date with the parameter table in \
         e03-plan/src/params/table.rs: regenerate it with `E03_BLESS=1 cargo test -p lab --test docs`"
    );
    // The settings that are not run parameters are described by hand, beside the table: each
    // one the lab accepts is there.
    for name in OTHER_ENV {
        assert!(
            text.contains(&format!("`{name}`")),
            "docs/parameters.md does not describe the setting {name}"
        );
    }
}

#[test]
fn a_changed_parameter_table_is_refused() {
    // The check above compares the whole table: one changed cell is a difference.
    let table = parameter_table();
    let text = format!("# Parameters\n\n{table}\n\nmore\n");
    let stale = text.replacen(
        "| `E03_WORKERS` | `--workers` | `10` |",
        "| `E03_WORKERS` | `--workers` | `11` |",
        1,
    );
    assert_ne!(stale, text, "the table has the E03_WORKERS row");
    assert_eq!(with_table(&stale, &table).unwrap(), text);
}

/// What `lab list` prints: the built-in scenarios' names and the strategy ids, in order.
fn catalogue() -> (Vec<String>, Vec<String>) {
    let o = lab().arg("list").output().unwrap();
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    let (scenarios, strategies) = out
        .split_once("\nStrategies")
        .unwrap_or_else(|| panic!("no strategies in `lab list`:\n{out}"));
    let first = |s: &str| -> Vec<String> {
        s.lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with(' '))
            .filter_map(|l| l.split_whitespace().next().map(str::to_string))
            .collect()
    };
    let scenarios = first(scenarios);
    let strategies = first(strategies.split_once('\n').map_or("", |(_, rest)| rest));
    assert!(scenarios.len() >= 12, "{out}");
    assert!(strategies.len() >= 6, "{out}");
    (scenarios, strategies)
}

/// The names in backquotes in `text`.
fn quoted(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The paragraph of `text` that starts with `start` (up to the next blank line).
fn paragraph<'a>(text: &'a str, start: &str) -> &'a str {
    let at = text
        .find(start)
        .unwrap_or_else(|| panic!("no paragraph starting with {start:?}"));
    let rest = &text[at..];
    &rest[..rest.find("\n\n").unwrap_or(rest.len())]
}

#[test]
fn readme_catalogue_is_what_lab_list_prints() {
    let (scenarios, strategies) = catalogue();
    let readme = read("README.md");
    // The catalogue table: its rows start with the scenario's name in backquotes.
    let table = paragraph(&readme, "| scenario |");
    let names: Vec<String> = table
        .lines()
        .skip(2)
        .map(|row| quoted(row).into_iter().next().unwrap_or_default())
        .collect();
    assert_eq!(names, scenarios, "README.md's catalogue against `lab list`");
    let count = format!("{} scenarios are built in", scenarios.len());
    assert!(readme.contains(&count), "README.md does not say {count:?}");
    // Every strategy `--strategies` accepts is named: A to F in bold, the presets in backquotes.
    for id in &strategies {
        assert!(
            readme.contains(&format!("**{id}**")) || readme.contains(&format!("`{id}`")),
            "README.md does not name the strategy {id}"
        );
    }
    assert!(
        read("README.md").lines().count() <= 200,
        "README.md is a front door: at most 200 lines"
    );
}

#[test]
fn reserved_names_in_the_scenarios_doc_are_the_code_s() {
    let (scenarios, strategies) = catalogue();
    let doc = read("docs/scenarios.md");
    let names = quoted(paragraph(
        &doc,
        "A file may not take the name of a built-in scenario",
    ));
    assert_eq!(
        names, scenarios,
        "docs/scenarios.md's reserved scenario names"
    );
    // Strategy ids: A to F (lowercase in a file) and every preset, in `lab list`'s order.
    let ids = quoted(paragraph(&doc, "A strategy table may not take"));
    let expected: Vec<String> = strategies.iter().map(|s| s.to_ascii_lowercase()).collect();
    assert_eq!(ids, expected, "docs/scenarios.md's reserved strategy ids");
}

#[test]
fn every_example_scenario_file_runs() {
    let dir = root().join("examples");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no scenario file in examples/");
    for file in files {
        let out_dir = temp("docs", "examples");
        let o = lab()
            .args(["simulate"])
            .arg(&file)
            .args(["--seeds", "1-2", "--out"])
            .arg(&out_dir)
            .output()
            .unwrap();
        let (out, err) = text(&o);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}:\n{out}\n{err}",
            file.display()
        );
        let _ = std::fs::remove_dir_all(&out_dir);
    }
}
