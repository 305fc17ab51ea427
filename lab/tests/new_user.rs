//! What a new user found (issue 28, item 4): inputs that failed badly, each pinned here. Bad
//! input exits 2 naming what the user typed and the cause; nothing is created, and `OUT/latest`
//! does not move, for a command that fails before its run starts.

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::{lab, temp, text};

fn run(cmd: &mut Command) -> (Option<i32>, String) {
    let out: Output = cmd.output().expect("lab runs");
    (out.status.code(), text(&out).1)
}

/// The entries of `dir` (names, sorted) and where its `latest` link points.
fn listing(dir: &Path) -> (Vec<String>, Option<std::path::PathBuf>) {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    (names, std::fs::read_link(dir.join("latest")).ok())
}

/// An OUT that already holds one run (`old`, with a file) and `latest` pointing at it.
fn out_with_an_earlier_run(name: &str) -> std::path::PathBuf {
    let out = temp("newuser", name);
    std::fs::create_dir_all(out.join("old/e03b")).unwrap();
    std::fs::write(out.join("old/e03b/summary.json"), "{}").unwrap();
    std::os::unix::fs::symlink("old", out.join("latest")).unwrap();
    out
}

#[test]
fn an_out_that_cannot_hold_a_run_folder_exits_2_naming_out_and_the_cause() {
    let dir = temp("newuser", "out");
    let file = dir.join("afile");
    std::fs::write(&file, "mine").unwrap();
    // Root can write anywhere a permission bit forbids, so the unwritable places are ones no
    // one can create a folder in: a path under a regular file, and /sys (sysfs).
    let mut cases = vec![
        (file.clone(), "it is a file, not a folder"),
        (file.join("sub"), "Not a directory"),
    ];
    if Path::new("/sys/kernel").is_dir() {
        cases.push((
            Path::new("/sys/e03-lab-newuser-out").to_path_buf(),
            "(os error",
        ));
    }
    for (out, cause) in &cases {
        for sub in [
            &["run", "e03b", "--seed", "1"][..],
            &["simulate", "e03b", "--seeds", "1"][..],
        ] {
            let (code, stderr) = run(lab().args(sub).arg("--out").arg(out));
            assert_eq!(code, Some(2), "{sub:?} --out {out:?}: {stderr}");
            assert!(
                stderr.contains(&format!("invalid --out {:?}", out.display().to_string())),
                "{stderr}"
            );
            assert!(stderr.contains(cause), "{cause:?} not in {stderr}");
            assert_eq!(
                stderr.matches("(os error").count().min(1),
                stderr.matches("(os error").count(),
                "{stderr}"
            );
        }
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn serve_with_its_work_or_control_port_in_use_exits_2() {
    let logs = temp("newuser", "serve");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    for (flag, other) in [
        ("--listen", "--control-listen"),
        ("--control-listen", "--listen"),
    ] {
        let (code, stderr) = run(lab()
            .args(["serve", flag])
            .arg(format!("127.0.0.1:{port}"))
            .args([other, "127.0.0.1:0", "--log-dir"])
            .arg(&logs));
        assert_eq!(code, Some(2), "{flag}: {stderr}");
        assert!(
            stderr.contains(&format!("cannot listen on {flag} 127.0.0.1:{port}")),
            "{stderr}"
        );
        assert!(stderr.contains("in use"), "{stderr}");
    }
    let _ = std::fs::remove_dir_all(&logs);
}

#[test]
fn a_bad_metrics_address_exits_2_before_anything_is_created() {
    let out = out_with_an_earlier_run("metrics");
    let before = listing(&out);
    let (code, stderr) = run(lab()
        .args(["run", "e03b", "--seed", "1", "--out"])
        .arg(&out)
        .env("E03_METRICS_LISTEN", "nope"));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("E03_METRICS_LISTEN"), "{stderr}");
    assert!(stderr.contains("\"nope\""), "{stderr}");
    assert_eq!(listing(&out), before, "nothing created, latest not moved");
    let fresh = temp("newuser", "metrics-fresh").join("results");
    let (code, _) = run(lab()
        .args(["run", "e03b", "--out"])
        .arg(&fresh)
        .env("E03_METRICS_LISTEN", "nope"));
    assert_eq!(code, Some(2));
    assert!(!fresh.exists(), "no --out folder made for bad input");
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_dir_all(fresh.parent().unwrap());
}

#[test]
fn a_failure_before_the_run_starts_leaves_no_empty_run_folder_and_latest_in_place() {
    // Fails in the swarm child, after the lab claimed its run folder: the metrics port is taken.
    let out = out_with_an_earlier_run("nofolder");
    let before = listing(&out);
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let (code, stderr) = run(lab()
        .args(["run", "e03b", "--seed", "1", "--strategies", "A", "--out"])
        .arg(&out)
        .env("E03_METRICS_LISTEN", &addr));
    assert_ne!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "cannot listen on --metrics-listen (E03_METRICS_LISTEN) {addr}"
        )),
        "{stderr}"
    );
    assert_eq!(listing(&out), before, "{stderr}");
    // Fails in the parser: an empty --seeds.
    let (code, stderr) = run(lab()
        .args(["run", "e03b", "--seeds", "", "--out"])
        .arg(&out));
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(listing(&out), before, "{stderr}");
    // Fails at the claim: --out under a file.
    let (code, stderr) = run(lab()
        .args(["run", "e03b", "--out"])
        .arg(out.join("old/e03b/summary.json/x")));
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(listing(&out), before, "{stderr}");
    // With no earlier run, a failed run leaves no `latest` behind either.
    let empty = temp("newuser", "nofolder-empty");
    let (code, stderr) = run(lab()
        .args(["run", "e03b", "--seed", "1", "--strategies", "A", "--out"])
        .arg(&empty)
        .env("E03_METRICS_LISTEN", &addr));
    assert_ne!(code, Some(0), "{stderr}");
    assert_eq!(listing(&empty), (vec![], None), "{stderr}");
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_dir_all(&empty);
}

#[test]
fn a_seed_flag_wins_over_a_bad_seed_env_var() {
    // Flags win over env vars everywhere in the lab (e03_plan::cli); the children get only the
    // values the lab validated, so the `abc` the flag replaced never reaches them.
    let out = temp("newuser", "seedflag");
    let (code, stderr) = run(lab()
        .args(["run", "e03b", "--seed", "5", "--strategies", "A", "--out"])
        .arg(&out)
        .args([
            "--clients",
            "20",
            "--duration-s",
            "2",
            "--think-min-ms",
            "200",
        ])
        .args(["--think-max-ms", "400", "--freeze-start-s", "0.8"])
        .args(["--freeze-end-s", "1.2", "--recovery-end-s", "1.5"])
        .env("E03_SEED", "abc"));
    assert!(!stderr.contains("did not report its addresses"), "{stderr}");
    assert!(
        out.join("latest/e03b/client-A-seed5.jsonl").is_file(),
        "the run used the flag's seed: {stderr}"
    );
    assert_eq!(code, Some(0), "{stderr}");
    // Without the flag, the env var's bad value is an error naming it.
    let (code, stderr) = run(lab()
        .args(["run", "e03b", "--out"])
        .arg(out.join("x"))
        .env("E03_SEED", "abc"));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("invalid E03_SEED=\"abc\""), "{stderr}");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn an_empty_seeds_flag_exits_2() {
    let out = temp("newuser", "seeds");
    for sub in ["run", "simulate"] {
        let (code, stderr) = run(lab()
            .args([sub, "e03b", "--seeds", "", "--out"])
            .arg(out.join(sub)));
        assert_eq!(code, Some(2), "{sub}: {stderr}");
        assert!(stderr.contains("invalid --seeds=\"\""), "{stderr}");
        assert!(!out.join(sub).exists());
    }
    // An empty env var still means "not given": compose passes every parameter the user left
    // unset so (`E03_SEEDS=`, `E03_WORKERS=`, ...), and each scenario keeps its own settings.
    let (code, stderr) = run(lab()
        .args(["simulate", "e03b", "--out"])
        .arg(out.join("env"))
        .env("E03_SEEDS", "")
        .env("E03_WORKERS", "")
        .env("E03_ATTEMPT_TIMEOUT_MS", " "));
    assert_eq!(code, Some(0), "{stderr}");
    let (code, stderr) = run(lab()
        .args(["simulate", "slow-network", "--out"])
        .arg(out.join("env-slow"))
        .env("E03_CLIENTS", "")
        .env("E03_ATTEMPT_TIMEOUT_MS", "")
        .env("E03_STRATEGIES", ""));
    assert_eq!(code, Some(0), "{stderr}");
    let plan =
        std::fs::read_to_string(out.join("env-slow/latest/simulated/slow-network/summary.json"))
            .unwrap_or_default();
    // slow-network's own 250 ms attempts and its strategies A and C, not the defaults.
    assert!(plan.contains("\"C\"") && !plan.contains("\"B\""), "{plan}");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn a_bad_strategy_list_names_the_unknown_id_or_the_repeat() {
    for (list, says) in [
        ("A,Z", "(\"Z\" is not one)"),
        ("A,A", "(\"A\" is repeated)"),
        ("A,,B", "(an empty entry)"),
    ] {
        let (code, stderr) = run(lab().args([
            "simulate",
            "e03b",
            "--strategies",
            list,
            "--out",
            "/nonexistent/x",
        ]));
        assert_eq!(code, Some(2), "{list}: {stderr}");
        assert!(
            stderr.contains(&format!("invalid --strategies={list:?}")),
            "{stderr}"
        );
        assert!(stderr.contains(says), "{says} not in {stderr}");
    }
}

#[test]
fn an_order_conflict_names_the_flag_the_user_gave_and_the_value_it_conflicts_with() {
    let (code, stderr) = run(lab().args([
        "run",
        "e03b",
        "--freeze-start-s",
        "12",
        "--out",
        "/nonexistent/x",
    ]));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("invalid --freeze-start-s=\"12\""),
        "{stderr}"
    );
    assert!(
        stderr.contains("not after E03_FREEZE_END_S, which is 10 here (e03b's setting; --freeze-end-s moves it)"),
        "{stderr}"
    );
    assert!(!stderr.contains("invalid E03_FREEZE_END_S"), "{stderr}");
    // A built-in default (no scenario setting) is named as such; the env var the user set is
    // named as typed.
    let (code, stderr) = run(lab()
        .args(["simulate", "e03b", "--out", "/nonexistent/x"])
        .env("E03_THINK_MIN_MS", "900000"));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("invalid E03_THINK_MIN_MS=\"900000\""),
        "{stderr}"
    );
    assert!(
        stderr.contains("not after E03_THINK_MAX_MS, which is"),
        "{stderr}"
    );
    // Both given: the later one is blamed, as before.
    let (code, stderr) = run(lab().args([
        "simulate",
        "e03b",
        "--freeze-start-s",
        "12",
        "--freeze-end-s",
        "11",
        "--out",
        "/nonexistent/x",
    ]));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("invalid --freeze-end-s=\"11\""), "{stderr}");
}

#[test]
fn a_closed_stdout_ends_a_printing_command_quietly() {
    let out = temp("newuser", "pipe");
    for args in [
        &["simulate", "e03b", "--seeds", "1-3", "--out"][..],
        &["list"][..],
        &["replica", "ratelimit"][..],
    ] {
        let mut cmd = lab();
        cmd.args(args);
        if args.len() > 2 {
            cmd.arg(&out);
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The reader goes away before the lab writes (as `| head -3` does after 3 lines).
        drop(child.stdout.take());
        let output = child.wait_with_output().unwrap();
        let (_, stderr) = text(&output);
        assert!(
            matches!(output.status.code(), Some(0 | 141)),
            "{args:?}: {:?} {stderr}",
            output.status
        );
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(!stderr.contains("Broken pipe"), "{args:?}: {stderr}");
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// Issue 26, tried as a new user would: `lab serve --scenario budget` ran E03-A's parameters,
/// and `lab analyze` then titled its log "E03-B outage". Now the service runs budget (down from
/// its first instant: 503 at once) and the analyzer titles the log with budget's title.
#[test]
fn a_served_scenario_is_the_one_lab_analyze_titles() {
    let logs = temp("newuser", "serve-budget");
    let mut serve = lab();
    serve
        .args(["serve", "--scenario", "budget", "--log-dir"])
        .arg(&logs);
    let (child, work) = common::serve_standalone(serve);
    let answer = common::http(&work, "GET", "/work", "");
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer:.80}");
    assert_eq!(common::terminate(child), Some(0));
    let out = temp("newuser", "serve-budget-out");
    let o = lab()
        .args(["analyze", "--server-log"])
        .arg(logs.join("standalone/server-standalone.jsonl"))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains("Load at the dependency (budget: 10,000 requests against a dependency"),
        "{stdout}"
    );
    assert!(!stdout.contains("E03-B"), "{stdout}");
    let _ = std::fs::remove_dir_all(logs);
    let _ = std::fs::remove_dir_all(out);
}

/// Issue 54: `--out ''` wrote a run folder and `latest` into the current directory, exit 0,
/// although docs/inputs.md says an empty value exits 2. It exits 2 naming `--out`, and the
/// folder it ran in stays empty.
#[test]
fn an_empty_out_exits_2_naming_out_and_writes_nothing() {
    let cwd = temp("newuser", "empty-out");
    std::fs::create_dir_all(&cwd).unwrap();
    for sub in [
        &["run", "e03b", "--seed", "1"][..],
        &["simulate", "e03b", "--seeds", "1"][..],
    ] {
        let (code, stderr) = run(lab().current_dir(&cwd).args(sub).args(["--out", ""]));
        assert_eq!(code, Some(2), "{sub:?} --out '': {stderr}");
        assert!(stderr.contains("--out"), "{sub:?}: {stderr}");
        assert_eq!(
            listing(&cwd),
            (vec![], None),
            "{sub:?}: something was written"
        );
    }
    let _ = std::fs::remove_dir_all(&cwd);
}

/// Issue 54: there was no `--version`, and `lab help serve` listed no options while `lab serve
/// --help` did. `lab --version` names the lab and its version; `lab help CMD` prints exactly
/// what `lab CMD --help` prints, for every command.
#[test]
fn version_and_help_for_every_command() {
    let o = lab().arg("--version").output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        format!("lab {}\n", env!("CARGO_PKG_VERSION"))
    );
    for cmd in [
        "run", "simulate", "compare", "list", "report", "map", "replica", "soak", "audit", "serve",
        "hop", "proxy", "swarm", "analyze", "client",
    ] {
        let help = lab().args(["help", cmd]).output().unwrap();
        let flag = lab().args([cmd, "--help"]).output().unwrap();
        assert_eq!(flag.status.code(), Some(0), "lab {cmd} --help");
        assert_eq!(help.status.code(), Some(0), "lab help {cmd}");
        assert!(!flag.stdout.is_empty(), "lab {cmd} --help printed nothing");
        assert_eq!(
            String::from_utf8_lossy(&help.stdout),
            String::from_utf8_lossy(&flag.stdout),
            "lab help {cmd} and lab {cmd} --help differ"
        );
    }
}

/// Issue 54: a run that never met its scenario exited 0 with tables of `n/a`: `lab run e03b
/// --duration-s 0.5` ends before the freeze at 8.5 s, and a file with a down phase at 50-60 s
/// in a 10 s run. Each is refused, exit 2, before anything is written, naming the duration as
/// the user gave it and the phase it would never reach.
#[test]
fn a_run_that_ends_before_a_phase_of_its_scenario_exits_2_naming_the_phase() {
    let out = out_with_an_earlier_run("never-met");
    let before = listing(&out);
    for sub in [
        &["run", "e03b", "--duration-s", "0.5"][..],
        &["simulate", "e03b", "--duration-s", "0.5"][..],
    ] {
        let (code, stderr) = run(lab().args(sub).arg("--out").arg(&out));
        assert_eq!(code, Some(2), "{sub:?}: {stderr}");
        assert!(
            stderr.contains("invalid --duration-s=\"0.5\""),
            "{sub:?}: {stderr}"
        );
        assert!(
            stderr.contains("its freeze starts at 8.5 s"),
            "{sub:?}: {stderr}"
        );
        assert_eq!(listing(&out), before, "{sub:?}: something was written");
    }
    let file = out.join("late.toml");
    std::fs::write(
        &file,
        "name = \"late\"\ntitle = \"Late\"\ndescription = \"A down phase after the run.\"\n\n\
         [[timeline]]\nphase = \"down\"\nstart_s = 50.0\nend_s = 60.0\n\n\
         [workload]\nclients = 10\nduration_s = 10\n",
    )
    .unwrap();
    let before = listing(&out);
    let (code, stderr) = run(lab().args(["simulate"]).arg(&file).arg("--out").arg(&out));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("E03_DURATION_S=\"10\""), "{stderr}");
    assert!(stderr.contains("its down phase starts at 50 s"), "{stderr}");
    assert_eq!(listing(&out), before, "something was written");
    let _ = std::fs::remove_dir_all(&out);
}

/// Issue 54: a full disk (`--out` on a 64 KB tmpfs) exited 1 with a Rust debug dump
/// (`BackendError(DrawingError(ImageError(IoError(Custom { ...`), and left a truncated PNG and a
/// summary.json that looked like results. Now the message names the file and the cause, and
/// the outputs are written whole or not at all: none of them is left in the scenario's folder.
/// Mounts a tmpfs of its own, so it needs root (CI runs as root); elsewhere it says so and
/// checks nothing.
#[test]
fn a_full_disk_is_a_message_and_leaves_no_half_written_outputs() {
    let uid = Command::new("id").arg("-u").output().unwrap();
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        eprintln!("not checked: mounting a small tmpfs needs root");
        return;
    }
    let disk = temp("newuser", "full-disk");
    std::fs::create_dir_all(&disk).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
        .arg(&disk)
        .status()
        .unwrap();
    assert!(mounted.success(), "mount -t tmpfs failed as root");
    let out = lab()
        .args(["simulate", "e03b", "--seeds", "1", "--out"])
        .arg(disk.join("out"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let mut left: Vec<String> = Vec::new();
    for entry in walk(&disk.join("out")) {
        left.push(entry.strip_prefix(&disk).unwrap().display().to_string());
    }
    let _ = Command::new("umount").arg(&disk).status();
    let _ = std::fs::remove_dir_all(&disk);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("No space left on device"), "{stderr}");
    assert!(
        !stderr.contains("Custom {") && !stderr.contains("Error("),
        "{stderr}"
    );
    // Only the scenario file the run keeps as its input, and the links and folders.
    let outputs: Vec<&String> = left
        .iter()
        .filter(|p| !p.ends_with("scenario.toml") && !p.ends_with("latest"))
        .collect();
    assert!(
        outputs.is_empty(),
        "half-written outputs left: {outputs:?}\n{stderr}"
    );
}

/// Every file and link under `dir` (not the folders).
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for e in entries.flatten() {
        let t = e.file_type().unwrap();
        if t.is_dir() {
            found.extend(walk(&e.path()));
        } else {
            found.push(e.path());
        }
    }
    found
}
