//! `lab proxy` as a program: its address line, its API, a clean stop on SIGTERM, and bad input
//! (exit 2 naming the flag). The toxics themselves are pinned in dependency-service/tests/proxy.rs.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::Stdio;

use common::{lab, temp, text};

#[test]
fn lab_proxy_prints_its_api_serves_it_and_stops_on_sigterm() {
    let dir = temp("proxy", "run");
    let log = dir.join("proxy.jsonl");
    let mut child = lab()
        .args(["proxy", "--api", "127.0.0.1:0", "--log"])
        .arg(&log)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let api = line
        .trim()
        .strip_prefix("listening api=")
        .unwrap()
        .to_string();
    let mut s = std::net::TcpStream::connect(&api).unwrap();
    let body = r#"{"name":"dep","listen":"127.0.0.1:0","upstream":"127.0.0.1:9"}"#;
    write!(
        s,
        "POST /proxies HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");
    assert!(answer.contains(r#""name":"dep""#), "{answer}");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(0));
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
    ] {
        let o = lab().args(args).output().unwrap();
        let (_, stderr) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(said), "{args:?}: {stderr}");
    }
}
