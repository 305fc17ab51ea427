//! Helpers shared by the lab's integration tests.

use std::path::PathBuf;
use std::process::{Command, Output};

/// The `lab` binary with a clean environment for the parameters: only what each test sets.
pub fn lab() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lab"));
    for (k, _) in std::env::vars() {
        if k.starts_with("E03_") {
            cmd.env_remove(k);
        }
    }
    cmd
}

/// A fresh, empty temporary folder `e03-lab-<tag>-<name>-<pid>` (removed first if a previous
/// run left it).
#[allow(dead_code)] // not every test binary uses every helper
pub fn temp(tag: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("e03-lab-{tag}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A finished command's stdout and stderr as text.
#[allow(dead_code)]
pub fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}
