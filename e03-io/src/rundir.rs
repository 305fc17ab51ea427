//! Where a run writes: a directory of its own, `OUT/<run id>/`, never a shared one.
//!
//! Every `lab run`, `simulate` and `compare` claims a fresh run directory under OUT (the id is
//! the UTC start time, `20261130-141224`, with `-2`, `-3`.. when two runs start in the same
//! second) and points the symlink `OUT/latest` at it. Inside, each scenario has its own folder:
//! `OUT/<run id>/e03b/` (live logs and results) and `OUT/<run id>/simulated/e03b/`. The lab never
//! deletes anything: a user's file anywhere under OUT stays. Reusing a run id (`--run-id NAME`)
//! is a conscious choice: refused when OUT/NAME exists, unless `--overwrite` is given, and even
//! then only the log files the lab writes (`server-*-seedN.jsonl`, `client-*-seedN.jsonl`) are
//! removed from its scenario folders, so that old logs do not mix into the new analysis.
//!
//! The compose swarm (`--claim-run-dir`) claims its run directory the same way under its
//! `--out` (`/results`), with `E03_RUN_ID` and `E03_OVERWRITE` in place of the flags.

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::error::InputError;

pub use crate::names::LATEST;

/// A run directory claimed under OUT.
#[derive(Debug, Clone)]
pub struct RunDir {
    pub id: String,
    /// `OUT/<id>`.
    pub dir: PathBuf,
}

/// How the user chose the run directory (validated by the argument parser).
#[derive(Debug, Clone, Default)]
pub struct RunChoice {
    /// `--run-id NAME`, or a fresh time-stamped id when `None`.
    pub id: Option<String>,
    /// `--overwrite`: reuse an existing `OUT/NAME`.
    pub overwrite: bool,
}

/// Why `--run-id` is not acceptable (a usage error, exit code 2).
pub fn check_choice(out: &Path, choice: &RunChoice, flag: &str) -> Result<(), InputError> {
    let Some(id) = &choice.id else {
        return Ok(());
    };
    let valid = !id.is_empty()
        && id != "."
        && id != ".."
        && id != LATEST
        && id != "simulated"
        && !id.starts_with('.')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !valid {
        return Err(InputError::RunId {
            flag: flag.to_string(),
            id: id.clone(),
        });
    }
    let dir = out.join(id);
    if dir.exists() && !choice.overwrite {
        return Err(InputError::RunExists { dir });
    }
    Ok(())
}

/// Claims the run directory: creates `OUT/<id>/` and points `OUT/latest` at it.
pub fn claim(out: &Path, choice: &RunChoice) -> anyhow::Result<RunDir> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let run = match &choice.id {
        Some(id) => {
            let dir = out.join(id);
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            RunDir {
                id: id.clone(),
                dir,
            }
        }
        None => fresh(out, &timestamp_id(std::time::SystemTime::now()))?,
    };
    point_latest(out, &run.id);
    Ok(run)
}

/// `OUT/<base>`, or `OUT/<base>-2`.. when taken (created atomically, so two runs never share).
fn fresh(out: &Path, base: &str) -> anyhow::Result<RunDir> {
    for n in 1u32.. {
        let id = if n == 1 {
            base.to_string()
        } else {
            format!("{base}-{n}")
        };
        let dir = out.join(&id);
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(RunDir { id, dir }),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("creating {}", dir.display())),
        }
    }
    unreachable!("some suffix is free")
}

/// Points `OUT/latest` at `id` (replacing an older link atomically). A `latest` that is not a
/// symlink belongs to the user: it is left alone, with a warning.
fn point_latest(out: &Path, id: &str) {
    let link = out.join(LATEST);
    if let Ok(meta) = std::fs::symlink_metadata(&link) {
        if !meta.file_type().is_symlink() {
            eprintln!(
                "lab: warning: {} is not a symlink the lab made; left as it is",
                link.display()
            );
            return;
        }
    }
    let tmp = out.join(format!(".{LATEST}.{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let made = std::os::unix::fs::symlink(id, &tmp).and_then(|()| std::fs::rename(&tmp, &link));
    if let Err(e) = made {
        let _ = std::fs::remove_file(&tmp);
        eprintln!(
            "lab: warning: could not point {} at {id}: {e}",
            link.display()
        );
    }
}

/// With `--overwrite`: removes the logs an earlier run left in `dir` (only files named like the
/// lab's logs), so that they do not mix into this run's analysis.
pub fn remove_old_logs(dir: &Path) -> anyhow::Result<()> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries {
        let entry = entry.with_context(|| format!("reading {}", dir.display()))?;
        let name = entry.file_name();
        if is_lab_log(&name.to_string_lossy()) && entry.file_type()?.is_file() {
            let path = entry.path();
            std::fs::remove_file(&path)
                .with_context(|| format!("removing the old log {}", path.display()))?;
        }
    }
    Ok(())
}

/// `server-<strategy>-seed<N>.jsonl` or `client-<strategy>-seed<N>.jsonl`.
fn is_lab_log(name: &str) -> bool {
    let Some(rest) = name
        .strip_prefix("server-")
        .or_else(|| name.strip_prefix("client-"))
        .and_then(|r| r.strip_suffix(".jsonl"))
    else {
        return false;
    };
    rest.rsplit_once("-seed").is_some_and(|(strategy, seed)| {
        e03_plan::control::valid_strategy_id(strategy) && seed.parse::<u64>().is_ok()
    })
}

/// `YYYYMMDD-HHMMSS` in UTC.
fn timestamp_id(now: std::time::SystemTime) -> String {
    let secs = now
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}{m:02}{d:02}-{:02}{:02}{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// `YYYY-MM-DDTHH:MM:SS` in UTC, without a zone (the JUnit schema's timestamp).
pub fn iso_utc(now: std::time::SystemTime) -> String {
    let id = timestamp_id(now);
    format!(
        "{}-{}-{}T{}:{}:{}",
        &id[0..4],
        &id[4..6],
        &id[6..8],
        &id[9..11],
        &id[11..13],
        &id[13..15]
    )
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// The path to print: inside a container (`/results/..`) the host's folder when compose said
/// where it is (`E03_HOST_RESULTS`), so that the user can open it.
pub fn shown(path: &Path) -> String {
    shown_under(path, std::env::var("E03_HOST_RESULTS").ok().as_deref())
}

/// [`shown`] with the host's path of `/results` given (a swarm's plan holds it).
pub fn shown_under(path: &Path, host_results: Option<&str>) -> String {
    if let Some(host) = host_results.filter(|h| !h.is_empty()) {
        if let Ok(rest) = path.strip_prefix("/results") {
            return Path::new(host).join(rest).display().to_string();
        }
    }
    path.display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("e03-outdir-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn iso_timestamps_are_the_ids_in_junits_form() {
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_796_567_405);
        assert_eq!(timestamp_id(t), "20261206-143005");
        assert_eq!(iso_utc(t), "2026-12-06T14:30:05");
    }

    #[test]
    fn timestamps_are_utc_calendar_dates() {
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_796_047_944);
        assert_eq!(timestamp_id(t), "20261130-141224");
        assert_eq!(timestamp_id(std::time::UNIX_EPOCH), "19700101-000000");
    }

    #[test]
    fn two_runs_in_the_same_second_get_their_own_directories() {
        let out = temp("fresh");
        std::fs::create_dir_all(&out).unwrap();
        let a = fresh(&out, "20261130-141224").unwrap();
        let b = fresh(&out, "20261130-141224").unwrap();
        assert_eq!(a.id, "20261130-141224");
        assert_eq!(b.id, "20261130-141224-2");
        let _ = std::fs::remove_dir_all(&out);
    }

    #[test]
    fn latest_follows_the_newest_run_but_a_users_latest_is_kept() {
        let out = temp("latest");
        let first = claim(&out, &RunChoice::default()).unwrap();
        std::fs::write(first.dir.join("notes.txt"), "mine").unwrap();
        let second = claim(
            &out,
            &RunChoice {
                id: Some("named".into()),
                overwrite: false,
            },
        )
        .unwrap();
        assert_eq!(second.dir, out.join("named"));
        assert_eq!(
            std::fs::read_link(out.join(LATEST)).unwrap(),
            PathBuf::from("named")
        );
        assert!(first.dir.join("notes.txt").exists());

        let user = temp("user-latest");
        std::fs::create_dir_all(user.join(LATEST)).unwrap();
        claim(&user, &RunChoice::default()).unwrap();
        assert!(user.join(LATEST).is_dir() && !user.join(LATEST).is_symlink());
        let _ = std::fs::remove_dir_all(&out);
        let _ = std::fs::remove_dir_all(&user);
    }

    #[test]
    fn reusing_a_run_id_needs_overwrite_and_keeps_the_users_files() {
        let out = temp("reuse");
        let dir = out.join("r1/e03b");
        std::fs::create_dir_all(&dir).unwrap();
        let choice = RunChoice {
            id: Some("r1".into()),
            overwrite: false,
        };
        let err = check_choice(&out, &choice, "--run-id")
            .unwrap_err()
            .to_string();
        assert!(err.contains("--overwrite"), "{err}");
        let choice = RunChoice {
            overwrite: true,
            ..choice
        };
        check_choice(&out, &choice, "--run-id").unwrap();
        for f in [
            "server-A-seed42.jsonl",
            "client-D1-seed7.jsonl",
            "notes.txt",
        ] {
            std::fs::write(dir.join(f), "x").unwrap();
        }
        std::fs::write(dir.join("client-notes.jsonl"), "x").unwrap();
        remove_old_logs(&dir).unwrap();
        assert!(!dir.join("server-A-seed42.jsonl").exists());
        assert!(!dir.join("client-D1-seed7.jsonl").exists());
        assert!(dir.join("notes.txt").exists());
        assert!(dir.join("client-notes.jsonl").exists());
        let _ = std::fs::remove_dir_all(&out);
    }

    #[test]
    fn run_ids_that_escape_or_collide_are_refused() {
        let out = temp("names");
        for bad in ["", "..", "a/b", LATEST, "simulated", ".hidden"] {
            let choice = RunChoice {
                id: Some(bad.into()),
                overwrite: true,
            };
            assert!(check_choice(&out, &choice, "--run-id").is_err(), "{bad:?}");
        }
    }
}
