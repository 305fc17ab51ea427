//! The rooms of the house (docs/ARCHITECTURE.md): no two files of a crate import each other,
//! directly or round a loop, and a file holds one idea, at most 800 lines before its tests.
//!
//! Read from the sources of every workspace member: file A uses file B when A's code, outside
//! comments and its `#[cfg(test)]` module, names `crate::b` (or `super::b` from a sibling,
//! `self::b` from a parent), `use crate::{a, b::c}` included; `lib.rs` and `main.rs` are the
//! crate's root, not a room.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Files longer than 800 lines before their tests, each with the length it may not pass. They
/// are to be split (issue "Rooms that show the design"); a file leaves this list when it is,
/// and none joins it.
const LONG_FILES: &[(&str, usize)] = &[];

const MAX_LINES: usize = 800;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The workspace members with a `src/` folder.
fn members() -> Vec<String> {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let line = manifest
        .lines()
        .find(|l| l.starts_with("members"))
        .expect("a members line");
    line.split('"')
        .skip(1)
        .step_by(2)
        .filter(|m| root().join(m).join("src").is_dir())
        .map(str::to_string)
        .collect()
}

/// Every `.rs` file under `dir`, recursively.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A file's module path inside its crate (`src/a/b.rs` is `["a", "b"]`; `lib.rs`, `main.rs`
/// and `mod.rs` name their folder).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("lib" | "main" | "mod")
    ) {
        parts.pop();
    }
    parts
}

/// The lines before the file's `#[cfg(test)]` module.
fn before_tests(text: &str) -> Vec<&str> {
    let lines: Vec<&str> = text.lines().collect();
    let cut = lines
        .windows(2)
        .position(|w| w[0].trim() == "#[cfg(test)]" && w[1].trim_start().starts_with("mod "))
        .unwrap_or(lines.len());
    lines[..cut].to_vec()
}

/// The code of a file: before its tests, without comments.
fn code_of(text: &str) -> String {
    let mut code = String::new();
    for line in before_tests(text) {
        let line = line.split("//").next().unwrap_or("");
        code.push_str(line);
        code.push('\n');
    }
    code
}

/// The paths a file's code names from `crate`, `super` or `self`, each as (head, segments).
fn named_paths(code: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    for head in ["crate", "super", "self"] {
        let pat = format!("{head}::");
        for (i, _) in code.match_indices(&pat) {
            let before = i.checked_sub(1).map(|j| bytes[j] as char);
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let rest = &code[i + pat.len()..];
            if let Some(group) = rest.strip_prefix('{') {
                let end = group.find('}').unwrap_or(group.len());
                for item in group[..end].split(',') {
                    let item = item.split(" as ").next().unwrap_or("").trim();
                    let segs: Vec<String> = item
                        .split("::")
                        .map(|s| s.trim().to_string())
                        .filter(|s| {
                            !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_')
                        })
                        .collect();
                    if !segs.is_empty() {
                        out.push((head.to_string(), segs));
                    }
                }
            } else {
                let path: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                    .collect();
                let segs: Vec<String> = path
                    .split("::")
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect();
                if !segs.is_empty() {
                    out.push((head.to_string(), segs));
                }
            }
        }
    }
    out
}

/// The circles of imports among the files of one crate, each as its files.
fn circles(crate_dir: &Path) -> Vec<Vec<String>> {
    let src = crate_dir.join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let modules: BTreeMap<Vec<String>, PathBuf> = files
        .iter()
        .map(|f| (module_of(&src, f), f.clone()))
        .collect();
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (m, file) in &modules {
        let code = code_of(&std::fs::read_to_string(file).unwrap());
        let is_mod_rs = file.file_name().is_some_and(|n| n == "mod.rs");
        for (head, segs) in named_paths(&code) {
            let mut full: Vec<String> = match head.as_str() {
                "crate" => Vec::new(),
                "super" if is_mod_rs => m[..m.len().saturating_sub(1)].to_vec(),
                "super" => m[..m.len().saturating_sub(1)].to_vec(),
                _ => m.clone(),
            };
            full.extend(segs);
            // The longest prefix that is a file of this crate.
            for k in (1..=full.len()).rev() {
                let t = &full[..k];
                if modules.contains_key(t) && t != m.as_slice() {
                    edges.entry(m.clone()).or_default().insert(t.to_vec());
                    break;
                }
            }
        }
    }
    // Strongly connected components (Tarjan), iteratively small enough to recurse.
    struct Tarjan<'a> {
        edges: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<Vec<String>, usize>,
        low: BTreeMap<Vec<String>, usize>,
        stack: Vec<Vec<String>>,
        on: BTreeSet<Vec<String>>,
        next: usize,
        out: Vec<Vec<Vec<String>>>,
    }
    impl Tarjan<'_> {
        fn visit(&mut self, v: &Vec<String>) {
            self.index.insert(v.clone(), self.next);
            self.low.insert(v.clone(), self.next);
            self.next += 1;
            self.stack.push(v.clone());
            self.on.insert(v.clone());
            let next: Vec<Vec<String>> = self
                .edges
                .get(v)
                .map(|s| s.iter().cloned().collect())
                .unwrap_or_default();
            for w in next {
                if !self.index.contains_key(&w) {
                    self.visit(&w);
                    let l = self.low[v].min(self.low[&w]);
                    self.low.insert(v.clone(), l);
                } else if self.on.contains(&w) {
                    let l = self.low[v].min(self.index[&w]);
                    self.low.insert(v.clone(), l);
                }
            }
            if self.low[v] == self.index[v] {
                let mut comp = Vec::new();
                loop {
                    let w = self.stack.pop().unwrap();
                    self.on.remove(&w);
                    let done = &w == v;
                    comp.push(w);
                    if done {
                        break;
                    }
                }
                if comp.len() > 1 {
                    self.out.push(comp);
                }
            }
        }
    }
    let mut t = Tarjan {
        edges: &edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for m in modules.keys() {
        if !t.index.contains_key(m) {
            t.visit(m);
        }
    }
    t.out
        .into_iter()
        .map(|comp| {
            let mut names: Vec<String> = comp
                .iter()
                .map(|m| {
                    modules[m]
                        .strip_prefix(root())
                        .unwrap_or(&modules[m])
                        .display()
                        .to_string()
                })
                .collect();
            names.sort();
            names
        })
        .collect()
}

#[test]
fn no_two_files_of_a_crate_import_each_other_round_a_loop() {
    let mut found = Vec::new();
    for m in members() {
        for circle in circles(&root().join(&m)) {
            found.push(format!("{m}: {}", circle.join(" -> ")));
        }
    }
    assert!(
        found.is_empty(),
        "circles of imports (each file names the next, round a loop):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_circle_finder_finds_a_circle() {
    let dir = std::env::temp_dir().join(format!("e03-rooms-{}", std::process::id()));
    let src = dir.join("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("lib.rs"), "mod a;\nmod b;\nmod c;\n").unwrap();
    std::fs::write(src.join("a.rs"), "use crate::b::B;\npub struct A;\n").unwrap();
    std::fs::write(
        src.join("b.rs"),
        "use crate::{c::C, a};\n// crate::nothing\n",
    )
    .unwrap();
    std::fs::write(
        src.join("c.rs"),
        "pub struct C;\n#[cfg(test)]\nmod tests { use crate::a::A; }\n",
    )
    .unwrap();
    let found = circles(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        found[0].len(),
        2,
        "a and b, not c (its use of a is a test's): {found:?}"
    );
}

#[test]
fn files_hold_at_most_800_lines_before_their_tests() {
    let mut long = Vec::new();
    for m in members() {
        let mut files = Vec::new();
        sources(&root().join(&m).join("src"), &mut files);
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            let n = before_tests(&text).len();
            let name = format!("{m}/{}", f.strip_prefix(root().join(&m)).unwrap().display());
            let limit = LONG_FILES
                .iter()
                .find(|(file, _)| *file == name)
                .map_or(MAX_LINES, |(_, l)| *l);
            if n > limit {
                long.push(format!(
                    "{name}: {n} lines before its tests (at most {limit})"
                ));
            }
        }
    }
    assert!(long.is_empty(), "files too long:\n{}", long.join("\n"));
}

/// The names in a manifest's `[dependencies]` table (not its dev- or build-dependencies).
fn normal_dependencies(manifest: &str) -> Vec<String> {
    let mut inside = false;
    let mut names = Vec::new();
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            inside = line == "[dependencies]";
            continue;
        }
        if !inside || line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(name) = line.split(['=', '.', ' ']).next() {
            names.push(name.to_string());
        }
    }
    names
}

/// The workspace crates `krate` depends on, itself included, following `[dependencies]` only.
fn reaches(krate: &str) -> BTreeSet<String> {
    let members = members();
    let mut seen = BTreeSet::new();
    let mut todo = vec![krate.to_string()];
    while let Some(k) = todo.pop() {
        if !seen.insert(k.clone()) {
            continue;
        }
        let manifest = std::fs::read_to_string(root().join(&k).join("Cargo.toml")).unwrap();
        todo.extend(
            normal_dependencies(&manifest)
                .into_iter()
                .filter(|d| members.contains(d)),
        );
    }
    seen
}

/// The analyzer reads logs and runs no model: no simulator among the crates it builds on
/// (`cargo tree -p analyzer -e normal`); the model of `live_model` checks is its caller's.
#[test]
fn the_analyzer_depends_on_no_simulator() {
    let reached = reaches("analyzer");
    assert!(
        reached.contains("e03-metrics") && reached.contains("e03-plan"),
        "the manifest reader follows the analyzer's dependencies: {reached:?}"
    );
    assert!(!reached.contains("simulator"), "{reached:?}");
    // The reader sees a dependency where there is one.
    assert!(reaches("lab").contains("simulator"));
}

/// The model is a crate of its own, below the plan: it builds on no workspace crate and reads no
/// user input (no TOML, no command line), so the compiler keeps the plan out of it
/// (ARCHITECTURE.md).
#[test]
fn the_model_builds_on_no_other_crate_of_the_lab_and_parses_no_input() {
    let manifest = std::fs::read_to_string(root().join("e03-model/Cargo.toml")).unwrap();
    let deps = normal_dependencies(&manifest);
    assert!(deps.contains(&"serde".to_string()), "{deps:?}");
    for refused in ["toml", "clap", "e03-plan", "e03-io", "tokio"] {
        assert!(!deps.iter().any(|d| d == refused), "{refused}: {deps:?}");
    }
    assert_eq!(
        reaches("e03-model"),
        BTreeSet::from(["e03-model".to_string()])
    );
    assert!(reaches("e03-plan").contains("e03-model"));
}
