//! `lab proxy` as a program: its address line, its API, a clean stop on SIGTERM, and bad input
//! (exit 2 naming the flag). The toxics themselves are pinned in dependency-service/tests/proxy.rs.

mod common;

use common::{http, lab, lab_proxy, temp, text};

#[test]
fn lab_proxy_prints_its_api_serves_it_and_stops_on_sigterm() {
    let dir = temp("proxy", "run");
    let log = dir.join("proxy.jsonl");
    let (mut child, api) = lab_proxy(&log);
    let answer = http(
        &api,
        "POST",
        "/proxies",
        r#"{"name":"dep","listen":"127.0.0.1:0","upstream":"127.0.0.1:9"}"#,
    );
    assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");
    assert!(answer.contains(r#""name":"dep""#), "{answer}");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.0.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert_eq!(child.0.wait().unwrap().code(), Some(0));
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains(r#""what":"proxy_created""#), "{logged}");
}

#[test]
fn bad_input_names_the_flag_and_exits_2() {
    for (args, said) in [
        (&["proxy", "--seed", "x"][..], "invalid --seed \"x\""),
        (
            &["proxy", "--api", "nowhere"][..],
            "invalid --api \"nowhere\"",
        ),
        (&["proxy", "--frob", "1"][..], "unknown argument \"--frob\""),
        (
            &["proxy", "--log", "/nonexistent-e03/dir/x.jsonl"][..],
            "invalid --log",
        ),
        (
            &["serve", "--scenario", "none", "--proxy-api", "nowhere"][..],
            "invalid --proxy-api (env E03_PROXY_API) value \"nowhere\"",
        ),
    ] {
        let o = lab().args(args).output().unwrap();
        let (_, stderr) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(said), "{args:?}: {stderr}");
    }
}
