//! `lab simulate` stopped by Ctrl-C or SIGTERM: nothing half-written stays behind that looks
//! like a result. A simulation runs in this process, so the stop cannot wait for a child: a
//! thread of its own takes the signal, waits while a scenario's outputs are being written (they
//! are written whole or not at all), removes the folder of the scenario being simulated (this
//! run made it), and, when no scenario was finished, the run folder too, with `OUT/latest`
//! pointed back where it was; then the lab exits 130, as `lab run` does when stopped.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use crate::outdir::{shown, Claim};

/// What the simulation is writing, as the stop must know it.
#[derive(Debug, Default)]
pub struct State {
    /// The folder of the scenario being simulated, until its outputs are whole.
    current: Option<PathBuf>,
    /// The scenarios whose outputs are whole.
    finished: Vec<PathBuf>,
}

/// The simulation's side: says which scenario it is on and holds off a stop while it writes.
pub struct Writing {
    state: Arc<Mutex<State>>,
}

impl Writing {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The simulation starts on the scenario whose folder is `dir`.
    pub fn begin(&self, dir: &Path) {
        self.lock().current = Some(dir.to_path_buf());
    }

    /// Holds a stop off until the guard is dropped (while outputs are written).
    pub fn hold(&self) -> MutexGuard<'_, State> {
        self.lock()
    }

    /// The scenario whose folder is `dir` is written whole.
    pub fn done(&self, dir: &Path) {
        let mut state = self.lock();
        state.current = None;
        state.finished.push(dir.to_path_buf());
    }
}

/// Starts the thread that takes SIGINT and SIGTERM for the run `claim` made under `out`.
pub fn watch(claim: Claim, out: PathBuf) -> anyhow::Result<Writing> {
    let mut signals = Signals::new([SIGINT, SIGTERM])?;
    let state = Arc::new(Mutex::new(State::default()));
    let shared = Arc::clone(&state);
    std::thread::spawn(move || {
        if signals.forever().next().is_some() {
            let state = shared.lock().unwrap_or_else(|e| e.into_inner());
            on_stop(&claim, &out, &state);
            std::process::exit(e03_io::exit::STOPPED);
        }
    });
    Ok(Writing { state })
}

/// Removes what the stopped simulation left half-done, and says what remains.
fn on_stop(claim: &Claim, out: &Path, state: &State) {
    if let Some(dir) = &state.current {
        if claim.made() {
            // This run made the folder: everything in it is this run's, and not whole.
            let _ = std::fs::remove_dir_all(dir);
        } else {
            // An --overwrite of an earlier run: its files are left alone, the folder marked.
            let _ = std::fs::write(
                dir.join("STOPPED.txt"),
                "This scenario's simulation was stopped before its outputs were written; \
                 the files here are an earlier run's.\n",
            );
        }
    }
    if state.finished.is_empty() {
        eprintln!("lab: stopped before any scenario was simulated whole");
        claim.abandon_if_empty(out);
    } else {
        let names: Vec<String> = state.finished.iter().map(|d| shown(d)).collect();
        eprintln!(
            "lab: stopped; whole results only for {} (the scenario being simulated is left out)",
            names.join(", ")
        );
    }
}
