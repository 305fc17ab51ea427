//! A user's policy file (`--policies FILE.toml`, `E03_POLICIES`): its `[[strategy]]` tables
//! define strategies `--strategies` can name, live and simulated; the run folder keeps it, so a
//! fresh `lab analyze` knows them; a bad file or an unknown id is refused with exit 2, naming
//! the file, the line, the key and what is accepted.

mod common;

use std::path::PathBuf;

use common::{lab, text};

fn temp(name: &str) -> PathBuf {
    common::temp("pol", name)
}

/// A constant-wait policy with Envoy's budget, named `steady-50`.
const POLICIES: &str = r#"
[[strategy]]
id = "steady-50"
name = "every 50 ms, envoy budget"
backoff = "constant"
wait_ms = 50
budget = { kind = "envoy" }
"#;

/// A small E03-B: 30 clients, the freeze moved to 1.0-1.5 s, 3 s of operations.
const SMALL: [&str; 12] = [
    "--clients",
    "30",
    "--duration-s",
    "3",
    "--freeze-start-s",
    "1.0",
    "--freeze-end-s",
    "1.5",
    "--recovery-end-s",
    "2.0",
    "--seed",
    "3",
];

#[test]
fn a_policy_file_defines_strategies_for_live_and_simulated_runs() {
    let dir = temp("ok");
    let file = dir.join("mine.toml");
    std::fs::write(&file, POLICIES).unwrap();
    let out = dir.join("results");
    for sub in ["simulate", "run"] {
        let o = lab()
            .args([sub, "e03b", "--policies"])
            .arg(&file)
            .args(["--strategies", "C,steady-50"])
            .args(SMALL)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        let (stdout, stderr) = text(&o);
        assert_eq!(o.status.code(), Some(0), "{sub}: {stdout}\n{stderr}");
        assert!(
            stdout.contains("steady-50 every 50 ms, envoy budget"),
            "{sub}: {stdout}"
        );
    }
    // Both folders keep the file; a fresh process analyses the live one from what it kept.
    let latest = out.join("latest").join("e03b");
    assert_eq!(
        std::fs::read_to_string(latest.join("policies.toml")).unwrap(),
        POLICIES
    );
    let o = lab().arg("analyze").arg(&latest).output().unwrap();
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("steady-50"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_policy_file_or_an_unknown_id_is_refused_with_exit_2() {
    let dir = temp("bad");
    let file = dir.join("bad.toml");
    std::fs::write(
        &file,
        "[[strategy]]\nid = \"mine\"\nbackoff = \"constant\"\nwait_ms = 20\njitter = \"wobbly\"\n",
    )
    .unwrap();
    let o = lab()
        .args(["simulate", "e03b", "--policies"])
        .arg(&file)
        .args(["--strategies", "mine", "--out"])
        .arg(dir.join("results"))
        .output()
        .unwrap();
    let (_, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "policy file {}:5: [[strategy]] jitter",
            file.display()
        )),
        "{stderr}"
    );
    assert!(stderr.contains("none"), "names what it accepts: {stderr}");

    // The same through the env var, and a file that is not there.
    let o = lab()
        .args(["simulate", "e03b", "--out"])
        .arg(dir.join("results"))
        .env("E03_POLICIES", dir.join("missing.toml"))
        .output()
        .unwrap();
    let (_, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("E03_POLICIES"), "{stderr}");

    // An unknown preset: the error lists A to F, the presets and the file's ids.
    let o = lab()
        .args(["simulate", "e03b", "--strategies", "C,aws-2027", "--out"])
        .arg(dir.join("results"))
        .output()
        .unwrap();
    let (_, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("aws-2027"), "{stderr}");
    assert!(
        stderr.contains("A,B,C,D,E,F,grpc,aws-standard,aws-2026"),
        "{stderr}"
    );
    // Nothing half-written that looks like a result.
    assert!(!dir.join("results").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A standalone dependency (`lab serve --scenario FILE` with `E03_POLICIES`) reads a scenario
/// file that names a policy id, keeps both files beside its log, and a fresh `lab analyze
/// --server-log` reads that log from what the folder kept (it never saw either file).
#[test]
fn a_served_user_file_naming_a_policy_is_analysed_from_what_its_folder_kept() {
    let dir = temp("serve");
    let policies = dir.join("mine.toml");
    std::fs::write(&policies, POLICIES).unwrap();
    let scenario = dir.join("served.toml");
    std::fs::write(
        &scenario,
        "name = \"served-pol\"\ntitle = \"Served with a policy\"\ndescription = \"d\"\n\
         [policy]\nstrategies = [\"steady-50\"]\n",
    )
    .unwrap();
    let logs = dir.join("logs");
    // Without the policy file the scenario's id is unknown: refused, exit 2, nothing served.
    let o = lab()
        .args(["serve", "--scenario"])
        .arg(&scenario)
        .args(["--listen", "127.0.0.1:0", "--control-listen", "127.0.0.1:0"])
        .arg("--log-dir")
        .arg(&logs)
        .output()
        .unwrap();
    let (_, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("steady-50"), "{stderr}");
    let mut serve = lab();
    serve
        .args(["serve", "--scenario"])
        .arg(&scenario)
        .env("E03_POLICIES", &policies)
        .arg("--log-dir")
        .arg(&logs);
    let (child, work) = common::serve_standalone(serve);
    let answer = common::http(&work, "GET", "/work", "");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer:.80}");
    assert_eq!(common::terminate(child), Some(0));
    let kept = logs.join("standalone");
    assert_eq!(
        std::fs::read_to_string(kept.join("policies.toml")).unwrap(),
        POLICIES
    );
    assert!(std::fs::read_to_string(kept.join("scenario.toml"))
        .unwrap()
        .contains("served-pol"));
    let out = dir.join("analysed");
    let o = lab()
        .args(["analyze", "--server-log"])
        .arg(kept.join("server-standalone.jsonl"))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("(Served with a policy)"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}
