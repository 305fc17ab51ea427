//! The name the swarm's messages start with: `lab` when it runs as `lab swarm` (or inside `lab
//! run`), `client-swarm` as a binary of its own ([`e03_plan::cli::program_name`]). Set once,
//! from the command line's `args[0]`, by the entry points.

use std::ffi::OsStr;
use std::sync::OnceLock;

static NAME: OnceLock<String> = OnceLock::new();

/// Names the program from its `args[0]`; the first call wins.
pub(crate) fn set(arg0: Option<&std::ffi::OsString>) {
    if let Some(a) = arg0 {
        let _ = NAME.set(e03_plan::cli::program_name(OsStr::new(a)));
    }
}

/// The prefix of every message (`NAME: ...`).
pub(crate) fn name() -> &'static str {
    NAME.get().map_or("client-swarm", String::as_str)
}
