//! Issue 54, item 6, "a quiet, even front", as a new user met it: error prefixes that varied
//! (`dependency-service:`, `error:`, `lab list:`). Beside `new_user.rs`, which pins the rest of
//! what that user found.

mod common;

use common::{lab, temp, text};

/// The lines of `stderr` that name a program the user did not type, or clap's own `error:`.
fn foreign_prefixes(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| {
            ["error:", "ERROR:", "warning:", "dependency-service:", "client-swarm:", "health:"]
                .iter()
                .any(|p| l.starts_with(p))
                || l.starts_with("lab: lab")
                || l.starts_with("lab: error")
                // `lab list: `, `lab serve: `: a prefix of its own per command.
                || l.split_once(':').is_some_and(|(head, _)| {
                    head.starts_with("lab ") && head.split(' ').count() == 2
                })
        })
        .collect()
}

/// Before: `lab list nope.toml` said `lab list: ...`, `lab serve --listen nope` said
/// `dependency-service: ...`, `lab analyze /nowhere` and every bad flag said `error: ...`,
/// `lab swarm` said `client-swarm: ...`. Now every command's error starts with `lab: `, once,
/// and the exit codes are as before (bad input 2). `lab proxy` is the one left: its entry is
/// not this change's to edit (docs/running.md says so).
#[test]
fn every_command_says_its_errors_after_one_lab_prefix() {
    let out = temp("front", "prefix");
    let missing = out.join("missing");
    let missing = missing.to_str().unwrap();
    let cases: &[&[&str]] = &[
        &["bogus"],
        &["run", "--bogus"],
        &["run", "e03b", "--seeds", "abc", "--out", missing],
        &["simulate", "e03b", "--strategies", "Z", "--out", missing],
        &["compare", "e03b", "--bogus"],
        &["list", "nope.toml"],
        &["replica", "nope"],
        &["report", "--out", missing],
        &["map", "--bogus"],
        &["soak", "--bogus"],
        &["audit", "--bogus"],
        &["serve", "--listen", "nope"],
        &["serve", "--bogus"],
        &["hop", "--bogus"],
        &["swarm", "--bogus"],
        &["swarm", "--targets", "x", "--out", missing],
        &["client", "--bogus"],
        &["analyze", missing],
        &["analyze", "--bogus"],
    ];
    for args in cases {
        let o = lab().args(*args).output().unwrap();
        let (_, stderr) = text(&o);
        assert_eq!(o.status.code(), Some(2), "lab {args:?}: {stderr}");
        assert!(stderr.starts_with("lab: "), "lab {args:?}: {stderr}");
        assert_eq!(
            foreign_prefixes(&stderr),
            Vec::<&str>::new(),
            "lab {args:?}"
        );
    }
    // A failure inside `lab run`'s swarm child (its metrics port is taken): the child's error
    // and the lab's each start with `lab: `, none twice, and the run fails with 1.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let o = lab()
        .args(["run", "e03b", "--seed", "1", "--strategies", "A", "--out"])
        .arg(&out)
        .env("E03_METRICS_LISTEN", &addr)
        .output()
        .unwrap();
    let (_, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "\nlab: cannot listen on --metrics-listen (E03_METRICS_LISTEN) {addr}"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("\nlab: the client swarm failed"),
        "{stderr}"
    );
    assert_eq!(foreign_prefixes(&stderr), Vec::<&str>::new());
    let _ = std::fs::remove_dir_all(&out);
}
