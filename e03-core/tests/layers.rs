//! The core in two layers (issue "One plan, one workload interface, one IO layer", item 2): the
//! model layer (state machines that take only their own typed configs) imports nothing from the
//! config layer (the parameter table, scenario, policy and chain files, presets, checks, the
//! command line and the control protocol). The config layer builds the model's configs.
//!
//! Read from the sources: every `crate::<module>` a model module names outside its tests and
//! comments, and the crate-root names that are config types. A module is `src/<module>.rs`, or
//! a folder `src/<module>/` whose files (`mod.rs` and its children) are read as one.

use std::path::Path;

/// The model layer: no parameters, no files, no presets.
const MODEL: &[&str] = &[
    "rng",
    "clock",
    "priority",
    "attempt",
    "cause",
    "timeline",
    "faults",
    "dependency",
    "limit",
    "schedule",
    "node",
    "ledger",
    "budget",
    "breaker",
    "hedge",
    "adaptive",
    "bulkhead",
    "balancer",
    "policy",
    "operation",
    "strategy",
    "shard",
    "session",
    "arrivals",
    "steps",
    "events",
    "chain",
    "chain_proxy",
    "audit",
    "wire",
    "workload",
    "sliding_window",
    "identity_headers",
    "http_fault",
    "fault_headers",
    "fault_proxy",
];

/// The config layer.
const CONFIG: &[&str] = &[
    "params",
    "scenario",
    "strategy_table",
    "presets",
    "checks",
    "thresholds",
    "cli",
    "control",
    "scenario_config",
    "toml_table",
    "names",
];

/// Crate-root re-exports that are config types.
const CONFIG_ROOT_NAMES: &[&str] = &["Params", "Scenario", "ParamError"];

/// The code of a module: before its `#[cfg(test)]`, without comment lines. A folder module's
/// code is that of each of its files, in name order.
fn code_of(module: &str) -> String {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let file = src.join(format!("{module}.rs"));
    let files = if file.is_file() {
        vec![file]
    } else {
        let mut files = Vec::new();
        files_under(&src.join(module), &mut files);
        assert!(
            !files.is_empty(),
            "no src/{module}.rs nor src/{module}/*.rs"
        );
        files
    };
    files
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
            let code = text.split("#[cfg(test)]").next().unwrap();
            code.lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The `.rs` files under `dir`, recursively, sorted by path.
fn files_under(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{dir:?}: {e}"))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files_under(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// The names that follow `crate::` in `code` (including inside `use crate::{a, b::c}`).
fn crate_names(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let first = item.trim().split("::").next().unwrap_or("").trim();
                if !first.is_empty() {
                    names.push(first.to_string());
                }
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            names.push(name);
        }
    }
    names
}

#[test]
fn every_module_of_the_core_is_in_one_layer() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        // A module is a file `<module>.rs` or a folder `<module>/`.
        let module = if entry.path().is_dir() {
            name.as_str()
        } else if let Some(module) = name.strip_suffix(".rs") {
            module
        } else {
            continue;
        };
        if module == "lib" {
            continue;
        }
        assert!(
            MODEL.contains(&module) ^ CONFIG.contains(&module),
            "e03-core/src/{name} must be in exactly one layer (tests/layers.rs)"
        );
    }
}

/// How a module is named in a message: its file, or its folder.
fn shown(module: &str) -> String {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    if src.join(format!("{module}.rs")).is_file() {
        format!("{module}.rs")
    } else {
        format!("{module}/")
    }
}

#[test]
fn the_model_layer_imports_nothing_from_the_config_layer() {
    let mut found = Vec::new();
    for module in MODEL {
        for name in crate_names(&code_of(module)) {
            if CONFIG.contains(&name.as_str()) || CONFIG_ROOT_NAMES.contains(&name.as_str()) {
                found.push(format!("{} uses crate::{name}", shown(module)));
            }
        }
    }
    assert!(found.is_empty(), "model -> config: {found:#?}");
}

#[test]
fn a_module_that_is_a_folder_is_read_whole() {
    // `budget/`: the trait in its `mod.rs`, each kind in a file of its own; the code of every
    // file is read, and none of their tests.
    let code = code_of("budget");
    assert!(code.contains("pub trait RetryBudget"));
    assert!(code.contains("pub struct TpsBudget"));
    assert!(code.contains("pub enum AnyBudget"));
    assert!(!code.contains("fn tps_budget_replays_towers_tests"));
    assert_eq!(shown("budget"), "budget/");
    assert_eq!(shown("rng"), "rng.rs");
}

#[test]
fn a_folder_module_is_read_whole() {
    // `params/` and `scenario/` are folders: their `mod.rs` and every child count.
    let params = code_of("params");
    assert!(params.contains("pub struct Params"), "params/mod.rs");
    assert!(params.contains("pub const PARAMS"), "params/table.rs");
    let scenario = code_of("scenario");
    assert!(
        scenario.contains("pub struct Scenario("),
        "scenario/value.rs"
    );
    assert!(
        scenario.contains("pub const BUILTIN_FILES"),
        "scenario/catalogue.rs"
    );
    // Their tests are not code.
    assert!(!params.contains("fn raw_round_trip"));
}

#[test]
fn the_check_sees_a_config_import() {
    // The reader itself: a `use` of a config module, alone or in a group, is seen.
    assert_eq!(crate_names("use crate::params::Params;"), ["params"]);
    assert_eq!(
        crate_names("use crate::{budget::X, Scenario};"),
        ["budget", "Scenario"]
    );
}

/// The modules of `layer` that `module` names outside its tests and comments.
fn edges(module: &str, layer: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = crate_names(&code_of(module))
        .into_iter()
        .filter(|n| n != module && layer.contains(&n.as_str()))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// A circle of imports among `layer`'s modules, if there is one (depth-first search).
fn circle(layer: &[&str]) -> Option<Vec<String>> {
    fn visit(
        m: &str,
        layer: &[&str],
        path: &mut Vec<String>,
        done: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == m) {
            let mut c = path[i..].to_vec();
            c.push(m.to_string());
            return Some(c);
        }
        if done.iter().any(|d| d == m) {
            return None;
        }
        path.push(m.to_string());
        for next in edges(m, layer) {
            if let Some(c) = visit(&next, layer, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.push(m.to_string());
        None
    }
    let mut done = Vec::new();
    layer
        .iter()
        .find_map(|m| visit(m, layer, &mut Vec::new(), &mut done))
}

#[test]
fn the_model_layer_has_no_circle_of_imports() {
    assert_eq!(circle(MODEL), None, "a circle among the model's modules");
}
