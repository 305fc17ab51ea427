//! The lab never deletes what it did not write: a user's files in the output directory survive
//! `lab run`, `report`, `simulate` and `compare`; every run gets its own directory
//! `OUT/<run id>/`, `OUT/latest` points at the newest, and reusing a run id needs `--overwrite`.
//! The live runs are short (2 s of traffic, 40 clients); the assertions are on files, not timing.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::lab;

/// A short live run's parameters.
const SHORT: &[&str] = &[
    "--seed",
    "42",
    "--clients",
    "40",
    "--duration-s",
    "2",
    "--think-min-ms",
    "200",
    "--think-max-ms",
    "400",
    "--freeze-start-s",
    "0.8",
    "--freeze-end-s",
    "1.2",
    "--recovery-end-s",
    "1.5",
];

fn context(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn latest(out: &Path) -> PathBuf {
    out.join(std::fs::read_link(out.join("latest")).expect("latest is a symlink"))
}

fn user_files_are_there(files: &[PathBuf], after: &str) {
    for f in files {
        assert_eq!(
            std::fs::read_to_string(f).unwrap_or_default(),
            "mine",
            "{} lost after {after}",
            f.display()
        );
    }
}

#[test]
fn a_users_files_survive_run_report_simulate_and_compare() {
    let out = std::env::temp_dir().join(format!("e03-lab-userfiles-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let mut mine = vec![
        out.join("notes.txt"),
        out.join("e03b/notes.txt"),
        out.join("simulated/e03b/summary.json"),
    ];
    for f in &mine {
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, "mine").unwrap();
    }

    let run = lab()
        .args(["run", "e03b", "--out"])
        .arg(&out)
        .args(SHORT)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", context(&run));
    user_files_are_there(&mine, "lab run");
    let first = latest(&out);
    let first_id = first.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        first.join("e03b/summary.json").exists(),
        "{}",
        context(&run)
    );
    let stdout = String::from_utf8_lossy(&run.stdout);
    let shown = format!("results: {}", first.join("e03b").display());
    assert!(
        stdout.contains(&shown),
        "{shown:?} not in {}",
        context(&run)
    );
    assert!(
        String::from_utf8_lossy(&run.stderr).contains(&format!("run {first_id} writes into")),
        "{}",
        context(&run)
    );

    // A file of the user's inside the run directory survives the report over it.
    mine.push(first.join("e03b/keep.txt"));
    std::fs::write(mine.last().unwrap(), "mine").unwrap();
    let report = lab()
        .args(["report", "--out"])
        .arg(&out)
        .arg("e03b")
        .output()
        .unwrap();
    assert!(report.status.success(), "{}", context(&report));
    user_files_are_there(&mine, "lab report");

    let sim = lab()
        .args(["simulate", "e03b", "--seeds", "1-2", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(sim.status.success(), "{}", context(&sim));
    user_files_are_there(&mine, "lab simulate");
    let sim_dir = latest(&out);
    assert_ne!(
        sim_dir, first,
        "simulate wrote into the live run's directory"
    );
    assert!(sim_dir.join("simulated/e03b/summary.json").exists());

    let compare = lab()
        .args(["compare", "e03b", "--out"])
        .arg(&out)
        .args(SHORT)
        .output()
        .unwrap();
    assert!(compare.status.success(), "{}", context(&compare));
    user_files_are_there(&mine, "lab compare");
    let third = latest(&out);
    assert!(
        third != first && third != sim_dir,
        "compare reused a run directory"
    );
    assert!(
        first.join("e03b/summary.json").exists(),
        "compare overwrote the first run"
    );

    // Reusing a run id is refused (exit 2, names the way out) ...
    let again = lab()
        .args(["run", "e03b", "--run-id", &first_id, "--out"])
        .arg(&out)
        .args(SHORT)
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(2), "{}", context(&again));
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(
        stderr.contains("already exists") && stderr.contains("--overwrite"),
        "{}",
        context(&again)
    );
    // ... unless asked for: then the old logs are replaced and the user's files kept.
    let overwrite = lab()
        .args(["run", "e03b", "--overwrite", "--run-id", &first_id, "--out"])
        .arg(&out)
        .args(SHORT)
        .output()
        .unwrap();
    assert!(overwrite.status.success(), "{}", context(&overwrite));
    user_files_are_there(&mine, "lab run --overwrite");
    assert_eq!(latest(&out), first);
    let _ = std::fs::remove_dir_all(&out);
}
