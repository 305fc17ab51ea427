//! Where a run writes: a directory of its own, `OUT/<run id>/`, never a shared one.
//!
//! The claim itself lives in [`e03_io::rundir`], so that the compose swarm (which claims
//! its run directory under `/results` itself) and `lab run`/`simulate`/`compare` share one
//! implementation. Here: an `--out` that cannot hold a run folder is the user's input (exit 2,
//! naming `--out` and the cause), and a run that fails before it wrote anything leaves no empty
//! run folder behind and `OUT/latest` where it was ([`Claim::abandon_if_empty`]). The output
//! folder's index, `OUT/index.html`, is rewritten beside each run ([`index_beside`]).

use std::path::{Path, PathBuf};

pub use e03_io::rundir::{check_choice, remove_old_logs, shown, RunChoice, RunDir, LATEST};

/// `--out` cannot hold a run folder: it is a file, lies under a file, or cannot be written.
#[derive(Debug)]
pub struct BadOut {
    out: PathBuf,
    cause: String,
}

impl std::fmt::Display for BadOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "invalid --out {:?}: {}; expected a folder the lab can create and write into",
            self.out.display().to_string(),
            self.cause
        )
    }
}

impl std::error::Error for BadOut {}

pub use e03_io::exit::BROKEN_PIPE as EXIT_BROKEN_PIPE;

/// Says why a command failed (under `prefix`) and gives its exit code: 2
/// ([`crate::EXIT_USAGE`]) when `--out` was at fault; quietly [`EXIT_BROKEN_PIPE`] when stdout's
/// reader went away; else 1.
pub fn fail(prefix: &str, e: &anyhow::Error) -> i32 {
    if is_broken_pipe(e) {
        return EXIT_BROKEN_PIPE;
    }
    eprintln!("{prefix}: {}", crate::errors::chain(e));
    if e.is::<BadOut>() {
        crate::EXIT_USAGE
    } else {
        1
    }
}

/// Whether an error comes from writing to a pipe nobody reads any more.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Claims the run directory under `out` (see [`e03_io::rundir::claim`]); a failure is a
/// [`BadOut`].
pub fn claim(out: &Path, choice: &RunChoice) -> anyhow::Result<RunDir> {
    Ok(claim_undoable(out, choice)?.run)
}

/// A claimed run directory, with what [`Claim::abandon_if_empty`] needs to undo the claim.
#[derive(Debug)]
pub struct Claim {
    pub run: RunDir,
    /// Where `OUT/latest` pointed before.
    previous: Option<PathBuf>,
    /// The run directory did not exist before (not an `--overwrite` of an existing one).
    made: bool,
}

/// [`claim`], keeping what is needed to undo it.
pub fn claim_undoable(out: &Path, choice: &RunChoice) -> anyhow::Result<Claim> {
    let previous = std::fs::read_link(out.join(LATEST)).ok();
    let existed = choice.id.as_ref().is_some_and(|id| out.join(id).exists());
    match e03_io::rundir::claim(out, choice) {
        Ok(run) => Ok(Claim {
            run,
            previous,
            made: !existed,
        }),
        Err(e) => {
            let cause = if out.exists() && !out.is_dir() {
                "it is a file, not a folder".to_string()
            } else {
                crate::errors::chain(&e)
            };
            Err(anyhow::Error::new(BadOut {
                out: out.to_path_buf(),
                cause,
            }))
        }
    }
}

impl Claim {
    /// Whether this run made its folder (not an `--overwrite` of an existing one).
    pub fn made(&self) -> bool {
        self.made
    }

    /// After a run that failed before it wrote anything: removes the run folder it made if it
    /// holds no file (only the empty folders the lab made), and points `OUT/latest` back where
    /// it pointed (or removes it if there was none). Anything holding a file is left alone.
    ///
    /// The files the lab writes before any traffic, at the folder's top (the children's plans,
    /// `plan-*.json`, and the machine's floor, `machine.json`), are no result: in a folder this
    /// run made, they are removed first.
    pub fn abandon_if_empty(&self, out: &Path) {
        if !self.made {
            return;
        }
        if let Ok(entries) = std::fs::read_dir(&self.run.dir) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                let preamble = name == e03_metrics::fidelity::MACHINE_FILE
                    || (name.starts_with("plan-") && name.ends_with(".json"));
                if preamble && e.file_type().is_ok_and(|t| t.is_file()) {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
        if holds_a_file(&self.run.dir) {
            return;
        }
        if remove_empty_tree(&self.run.dir).is_err() {
            return;
        }
        let link = out.join(LATEST);
        let ours = std::fs::read_link(&link).is_ok_and(|t| t == Path::new(&self.run.id));
        if ours {
            match &self.previous {
                Some(target) => {
                    let tmp = out.join(format!(".{LATEST}.{}", std::process::id()));
                    let _ = std::fs::remove_file(&tmp);
                    if std::os::unix::fs::symlink(target, &tmp)
                        .and_then(|()| std::fs::rename(&tmp, &link))
                        .is_err()
                    {
                        let _ = std::fs::remove_file(&tmp);
                    }
                }
                None => {
                    let _ = std::fs::remove_file(&link);
                }
            }
        }
        eprintln!(
            "lab: nothing was written; the empty run folder {} is removed",
            shown(&self.run.dir)
        );
    }
}

/// Whether anything but folders lies under `dir` (a folder that cannot be read counts as full).
fn holds_a_file(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return true;
    };
    entries.into_iter().any(|e| match e {
        Ok(e) => match e.file_type() {
            Ok(t) if t.is_dir() => holds_a_file(&e.path()),
            _ => true,
        },
        Err(_) => true,
    })
}

/// Removes a tree of empty folders, deepest first (`remove_dir` only: never a file).
fn remove_empty_tree(dir: &Path) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        if e.file_type()?.is_dir() {
            remove_empty_tree(&e.path())?;
        }
    }
    std::fs::remove_dir(dir)
}

/// Rewrites the index of the output folder holding the run directory `run` (`OUT/index.html`,
/// where OUT holds the `latest` link), when the lab wrote the one there (or there is none). Its failure is a warning: the results
/// themselves are written.
pub fn index_beside(run: &Path) {
    let Some(out) = run.parent().filter(|p| !p.as_os_str().is_empty()) else {
        return;
    };
    // Only an output folder the lab runs into (it holds the `latest` link), never any parent.
    if std::fs::symlink_metadata(out.join(LATEST)).is_err() {
        return;
    }
    match analyzer::html::write_index(out) {
        Ok(true) => {}
        Ok(false) => eprintln!(
            "lab: {} was not written by the lab; left alone",
            out.join("index.html").display()
        ),
        Err(e) => eprintln!(
            "lab: warning: could not write {}: {e}",
            out.join("index.html").display()
        ),
    }
}
