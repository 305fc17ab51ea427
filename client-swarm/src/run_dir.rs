//! Where a swarm writes, checked and claimed before any traffic: uid 0 in compose refused, an
//! output directory the swarm cannot write (with the command that fixes it), an earlier run's
//! logs this run would mix with ([`preflight`]), and `--claim-run-dir`'s `OUT/<run id>/` with
//! `OUT/latest` ([`claim_run_dir`]); a run returns the directory it claimed
//! ([`crate::SwarmEnd`]).
//!
//! Shared by the swarm's own run ([`claim_if_asked`]) and the chain scenarios' run
//! (`crate::chain_args`), which claim their directory the same way.

use std::path::Path;

use e03_io::rundir::{self as outdir, RunChoice, RunDir};
use e03_plan::Scenario;

use crate::setup::Setup;
use crate::usage_error::UsageError;

/// Checks, before any traffic, what would otherwise fail in the middle of a run: uid 0 in compose
/// (refused unless `E03_ALLOW_ROOT=1`), an output directory the swarm cannot write (with the
/// command that fixes it), and an earlier run's logs that this run would mix with (refused unless
/// `E03_OVERWRITE=1`). `env` reads an environment variable.
pub(crate) fn preflight(
    out: &Path,
    scenarios: &[Scenario],
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(), UsageError> {
    preflight_shard(out, scenarios, None, env)
}

/// [`preflight`] for one shard of a run split over swarm processes: the logs of the run's other
/// shards (written at the same time into the same folder) are not an earlier run's.
pub(crate) fn preflight_shard(
    out: &Path,
    scenarios: &[Scenario],
    shard: Option<e03_model::shard::Shard>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(), UsageError> {
    let shard = shard.filter(|s| !s.is_whole());
    let sibling = |name: &str| {
        shard.is_some_and(|s| {
            (0..s.count)
                .filter(|&i| i != s.index)
                .any(|i| name.ends_with(&format!("-shard{i}of{}.jsonl", s.count)))
        })
    };
    refuse_root(env)?;
    let on = |name: &str| env(name).is_some_and(|v| v == "1" || v == "true");
    for scenario in scenarios {
        let dir = out.join(scenario.name());
        let probe = dir.join(format!(".e03-write-check-{}", std::process::id()));
        let written = std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::write(&probe, b""))
            .and_then(|()| std::fs::remove_file(&probe));
        if let Err(e) = written {
            return Err(UsageError::Unwritable {
                dir,
                error: e.to_string(),
                fix: chown_fix(env),
            });
        }
        let earlier = std::fs::read_dir(&dir)
            .map(|entries| {
                entries.filter_map(Result::ok).any(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    name.starts_with("client-") && name.ends_with(".jsonl") && !sibling(&name)
                })
            })
            .unwrap_or(false);
        if earlier && !on("E03_OVERWRITE") {
            return Err(UsageError::EarlierRun { dir });
        }
    }
    Ok(())
}

/// uid 0 in compose is refused unless `E03_ALLOW_ROOT=1`.
pub(crate) fn refuse_root(env: &dyn Fn(&str) -> Option<String>) -> Result<(), UsageError> {
    let on = |name: &str| env(name).is_some_and(|v| v == "1" || v == "true");
    if env("E03_UID").as_deref() == Some("0") && !on("E03_ALLOW_ROOT") {
        return Err(UsageError::Root);
    }
    Ok(())
}

/// In compose (`E03_UID` set): how to give the container user the results folder.
fn chown_fix(env: &dyn Fn(&str) -> Option<String>) -> String {
    let uid = env("E03_UID").filter(|v| !v.is_empty());
    let gid = env("E03_GID").filter(|v| !v.is_empty());
    match (&uid, &gid) {
        (Some(u), g) => {
            let g = g.as_deref().unwrap_or(u);
            format!(
                "; the containers run as {u}:{g} (E03_UID:E03_GID); on the host, give them the \
                 results folder: sudo chown -R {u}:{g} results"
            )
        }
        (None, _) => String::new(),
    }
}

/// `--claim-run-dir`: claims `out/<id>/` (the given id, refused when it exists unless
/// `E03_OVERWRITE=1`, whose earlier logs are then removed; else a fresh time stamp) and points
/// `out/latest` at it. Every error is a usage error, said on one line.
pub(crate) fn claim_run_dir(
    out: &Path,
    id: Option<String>,
    scenarios: &[Scenario],
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<RunDir, UsageError> {
    refuse_root(env)?;
    let choice = RunChoice {
        id,
        overwrite: env("E03_OVERWRITE").is_some_and(|v| v == "1" || v == "true"),
    };
    outdir::check_choice(out, &choice, "--run-id (E03_RUN_ID)")?;
    let run = outdir::claim(out, &choice).map_err(|e| UsageError::Unwritable {
        dir: out.to_path_buf(),
        error: e.root_cause().to_string(),
        fix: chown_fix(env),
    })?;
    if choice.id.is_some() {
        for scenario in scenarios {
            outdir::remove_old_logs(&run.dir.join(scenario.name()))
                .map_err(|e| UsageError::OldLogs(format!("{e:#}")))?;
        }
    }
    Ok(run)
}

/// With `--claim-run-dir`: claims the run directory and makes it the setup's output directory.
pub(crate) fn claim_if_asked(
    setup: &mut Setup,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(), UsageError> {
    let Some(id) = setup.claim.take() else {
        return Ok(());
    };
    let run = claim_run_dir(&setup.out, id, &setup.scenarios, env)?;
    eprintln!(
        "{}: run {} writes into {}",
        crate::program::name(),
        run.id,
        outdir::shown_under(&run.dir, setup.host.host_results.as_deref())
    );
    setup.out = run.dir;
    setup.run_dir = Some(run.id);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preflight_refuses_root_unwritable_and_mixing_before_any_traffic() {
        use std::collections::HashMap;
        let dir = std::env::temp_dir().join(format!("swarm-preflight-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let vars = |pairs: &[(&str, &str)]| -> HashMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let check = |env: HashMap<String, String>| {
            preflight(&dir, &[Scenario::e03b()], &move |k| env.get(k).cloned())
        };
        let err = check(vars(&[("E03_UID", "0")])).unwrap_err().to_string();
        assert!(
            err.contains("E03_ALLOW_ROOT=1") && err.contains("chown"),
            "{err}"
        );
        check(vars(&[("E03_UID", "0"), ("E03_ALLOW_ROOT", "1")])).unwrap();
        assert!(dir.join("e03b").is_dir());

        std::fs::write(dir.join("e03b/client-A-seed42.jsonl"), "").unwrap();
        let err = check(vars(&[])).unwrap_err().to_string();
        assert!(err.contains("E03_OVERWRITE=1"), "{err}");
        check(vars(&[("E03_OVERWRITE", "1")])).unwrap();

        // A file where the scenario folder should be: nothing can be written there.
        let blocked = dir.join("blocked");
        std::fs::write(&blocked, "").unwrap();
        let env = vars(&[("E03_UID", "1000"), ("E03_GID", "1000")]);
        let err = preflight(&blocked, &[Scenario::e03b()], &move |k| env.get(k).cloned())
            .unwrap_err()
            .to_string();
        assert!(err.contains("cannot write into"), "{err}");
        assert!(err.contains("sudo chown -R 1000:1000 results"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_swarm_claims_a_run_directory_of_its_own_under_out() {
        use std::collections::HashMap;
        let out = std::env::temp_dir().join(format!("swarm-claim-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(out.join("notes.txt"), "mine").unwrap();
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            let map: HashMap<&str, &str> = pairs.iter().copied().collect();
            move |k: &str| map.get(k).map(|v| v.to_string())
        };
        let none = env(&[]);
        let scenarios = [Scenario::e03a(), Scenario::e03b()];

        // Two plain runs (no E03_RUN_ID): two directories, latest at the second.
        let first = claim_run_dir(&out, None, &scenarios, &none).unwrap();
        let second = claim_run_dir(&out, None, &scenarios, &none).unwrap();
        assert_ne!(first.dir, second.dir);
        assert!(first.dir.is_dir() && second.dir.is_dir());
        assert!(
            e03_plan::control::valid_run_dir(&second.id),
            "{}",
            second.id
        );
        assert_eq!(
            std::fs::read_link(out.join(outdir::LATEST)).unwrap(),
            std::path::PathBuf::from(&second.id)
        );
        assert_eq!(
            std::fs::read_to_string(out.join("notes.txt")).unwrap(),
            "mine"
        );

        // A given id: used as is; again only with E03_OVERWRITE=1, which removes only the
        // lab's logs.
        let named = claim_run_dir(&out, Some("named".into()), &scenarios, &none).unwrap();
        assert_eq!(named.dir, out.join("named"));
        std::fs::create_dir_all(named.dir.join("e03b")).unwrap();
        std::fs::write(named.dir.join("e03b/client-A-seed42.jsonl"), "").unwrap();
        std::fs::write(named.dir.join("e03b/mine.txt"), "").unwrap();
        let err = claim_run_dir(&out, Some("named".into()), &scenarios, &none)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("already exists") && err.contains("E03_OVERWRITE=1"),
            "{err}"
        );
        assert!(named.dir.join("e03b/client-A-seed42.jsonl").exists());
        let overwrite = env(&[("E03_OVERWRITE", "1")]);
        claim_run_dir(&out, Some("named".into()), &scenarios, &overwrite).unwrap();
        assert!(!named.dir.join("e03b/client-A-seed42.jsonl").exists());
        assert!(named.dir.join("e03b/mine.txt").exists());

        let err = claim_run_dir(&out, Some("../up".into()), &scenarios, &none)
            .unwrap_err()
            .to_string();
        assert!(err.contains("--run-id (E03_RUN_ID)"), "{err}");
        let root = env(&[("E03_UID", "0")]);
        let err = claim_run_dir(&out, None, &scenarios, &root)
            .unwrap_err()
            .to_string();
        assert!(err.contains("E03_ALLOW_ROOT=1"), "{err}");

        // An --out that cannot be created: the fix is named.
        let blocked = out.join("notes.txt").join("results");
        let compose = env(&[("E03_UID", "1000"), ("E03_GID", "1000")]);
        let err = claim_run_dir(&blocked, None, &scenarios, &compose)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("cannot write into") && err.contains("sudo chown -R 1000:1000 results"),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(&out);
    }
}
