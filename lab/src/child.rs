//! Starting a child of the lab's own binary (`lab serve`, `lab swarm`, `lab hop`) with the
//! environment every child gets ([`child_command`]). On its own so that the live runner
//! ([`crate::live`]), the chain runner ([`crate::chain`]) and the soak ([`crate::soak`]) start
//! their children the same way, and the chain runner need not import the live runner that runs
//! the chains.

use std::path::Path;
use std::process::Command;

/// glibc's malloc arenas a child may use (`MALLOC_ARENA_MAX`), unless the user set it.
///
/// glibc gives each thread that allocates an arena of its own, up to 8 per core; the swarm
/// allocates on 11 threads on 2 cores (its tokio workers, 4 per core, the precise timer, the
/// blocking pool that writes its log). Each arena keeps its own high-water mark of freed,
/// fragmented memory, so the RSS of a long run crept up with every new burst of connections
/// although the live heap stayed flat (heaptrack: 1.3 MiB for 5 minutes): +2.6% and +2.8% in
/// the swarm from the first minute to the fourth, +0.7% and +0.8% with two arenas
/// (docs/measurements-soak.md), its send lateness unchanged. musl and other allocators ignore
/// the variable.
pub(crate) const MALLOC_ARENAS: &str = "2";

/// `lab <sub>`; its settings come in its plan file, not from the environment (but for
/// `RUST_LOG` and [`MALLOC_ARENAS`], when the user has not set them).
pub(crate) fn child_command(exe: &Path, sub: &str) -> Command {
    let mut cmd = Command::new(exe);
    cmd.arg(sub);
    if std::env::var_os("RUST_LOG").is_none() {
        cmd.env("RUST_LOG", "warn");
    }
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        cmd.env("MALLOC_ARENA_MAX", MALLOC_ARENAS);
    }
    cmd
}
