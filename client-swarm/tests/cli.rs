//! The `client-swarm` binary: bad input exits 2 naming the variable before anything is sent; a
//! short run against fake dependencies exits 0 with its logs; SIGTERM exits 130.

mod common;

use std::process::Output;
use std::time::Duration;

use common::{fake_dependency, read_log, temp_dir};
use e03_model::events::Event;

const BIN: &str = env!("CARGO_BIN_EXE_client-swarm");

/// The binary with a clean environment (no stray E03_* from the caller) and `env` added.
fn swarm(args: &[&str], env: &[(&str, &str)]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.env_clear()
        .args(args)
        .envs(env.iter().copied())
        .kill_on_drop(true);
    cmd
}

async fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    tokio::time::timeout(Duration::from_secs(60), swarm(args, env).output())
        .await
        .expect("the binary finishes")
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const TARGETS: &str = "A=http://127.0.0.1:9@http://127.0.0.1:9";

#[tokio::test]
async fn bad_input_exits_2_and_names_the_variable() {
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);
    let cases: &[Case] = &[
        (
            &["--targets", TARGETS],
            &[("E03_CLIENTS", "abc")],
            "E03_CLIENTS",
        ),
        (
            &["--targets", TARGETS],
            &[("E03_CLIENT", "5")],
            "E03_CLIENT",
        ),
        (
            &["--targets", TARGETS, "--duration-s", "-1"],
            &[],
            "invalid --duration-s=\"-1\"",
        ),
        (
            &["--targets", TARGETS, "--scenarios", "x"],
            &[],
            "E03_SCENARIOS",
        ),
        // Chain scenarios need the hop services, which `lab swarm` drives.
        (
            &["--targets", TARGETS, "--scenarios", "amplification"],
            &[],
            "amplification are chain scenarios, which run through the hop services",
        ),
        (&["--targets", "A=nope"], &[], "E03_TARGETS"),
        (&[], &[("E03_TARGETS", TARGETS)], "E03_STRATEGIES"), // B, C, D have no target
        (&[], &[], "--targets"),
        (
            &["--targets", TARGETS, "--strategies", "A"],
            &[("TOKIO_WORKER_THREADS", "0")],
            "TOKIO_WORKER_THREADS",
        ),
    ];
    for (args, env, named) in cases {
        let o = run(args, env).await;
        assert_eq!(o.status.code(), Some(2), "{args:?} {env:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(named),
            "{args:?} {env:?}: {}",
            stderr(&o)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_run_exits_0_with_one_progress_line_per_run_and_its_logs() {
    let (url, dep) = fake_dependency(Duration::from_millis(2)).await;
    let out = temp_dir("cli-run");
    let targets = format!("B={url}@{url}");
    let o = run(
        &[
            "--targets",
            &targets,
            "--scenarios",
            "e03b",
            "--out",
            out.to_str().unwrap(),
        ],
        &[
            ("E03_STRATEGIES", "B"),
            ("E03_SEEDS", "3,4"),
            ("E03_CLIENTS", "4"),
            ("E03_DURATION_S", "0.5"),
            // A run must reach its scenario's phases: E03-B's freeze moves inside the 0.5 s.
            ("E03_FREEZE_START_S", "0.1"),
            ("E03_FREEZE_END_S", "0.2"),
            ("E03_RECOVERY_END_S", "0.3"),
            ("E03_THINK_MIN_MS", "100"),
            ("E03_THINK_MAX_MS", "100"),
            ("RUST_LOG", "warn"),
        ],
    )
    .await;
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let progress: Vec<_> = stderr(&o)
        .lines()
        .filter(|l| l.starts_with("client-swarm: e03b seed"))
        .map(String::from)
        .collect();
    assert_eq!(progress.len(), 2, "{}", stderr(&o));
    assert!(progress[0].contains("seed 3 done") && progress[1].contains("seed 4 done"));
    let seeds: Vec<u64> = dep.starts.lock().unwrap().iter().map(|s| s.seed).collect();
    assert_eq!(seeds, [3, 4], "one run per seed, in order");
    for seed in [3, 4] {
        let log = read_log(&out.join(format!("e03b/client-B-seed{seed}.jsonl")));
        assert!(matches!(log.last(), Some(Event::RunEnd(e)) if e.complete));
    }
    std::fs::remove_dir_all(out).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_stops_the_run_and_exits_130() {
    let (url, dep) = fake_dependency(Duration::from_millis(2)).await;
    let out = temp_dir("cli-term");
    let targets = format!("A={url}@{url}");
    let child = swarm(
        &[
            "--targets",
            &targets,
            "--scenarios",
            "e03a",
            "--out",
            out.to_str().unwrap(),
        ],
        &[
            ("E03_STRATEGIES", "A"),
            ("E03_CLIENTS", "5"),
            ("E03_DURATION_S", "60"),
        ],
    )
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    let pid = child.id().unwrap();
    // Wait until the run has started (the dependency got its start call), bounded.
    for _ in 0..200 {
        if !dep.starts.lock().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let o = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
        .await
        .expect("stops promptly")
        .unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    assert!(!dep.stops.lock().unwrap()[0].complete);
    let log = read_log(&out.join("e03a/client-A-seed42.jsonl"));
    assert!(matches!(log.last(), Some(Event::RunEnd(e)) if !e.complete));
    std::fs::remove_dir_all(out).unwrap();
}
