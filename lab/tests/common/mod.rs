//! Helpers shared by the lab's integration tests.

use std::process::Command;

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
