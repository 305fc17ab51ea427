//! Helpers shared by the lab's integration tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `lab` binary with a clean environment for the parameters: only what each test sets.
pub fn lab() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lab"));
    for (k, _) in std::env::vars() {
        if k.starts_with("E03_") {
            cmd.env_remove(k);
        }
    }
    cmd
}

/// A fresh, empty temporary folder `e03-lab-<tag>-<name>-<pid>` (removed first if a previous
/// run left it).
#[allow(dead_code)] // not every test binary uses every helper
pub fn temp(tag: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("e03-lab-{tag}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A finished command's stdout and stderr as text.
#[allow(dead_code)]
pub fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A `lab` child, killed when dropped, pass or fail.
#[allow(dead_code)]
pub struct Running(pub std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `lab ARGS` with its stdout piped and its stderr dropped; the child and the first line it
/// printed (a server's addresses), trimmed.
#[allow(dead_code)]
pub fn spawn_first_line(args: &[&str]) -> (Running, String) {
    let mut cmd = lab();
    cmd.args(args);
    spawn_command_first_line(cmd)
}

/// [`spawn_first_line`] of a command the caller built (its own env vars).
#[allow(dead_code)]
pub fn spawn_command_first_line(mut cmd: Command) -> (Running, String) {
    use std::io::BufRead;
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    (Running(child), line.trim().to_string())
}

/// A standalone `lab serve` of `cmd` (its flags and env set by the caller; addresses on free
/// loopback ports added here): the child and its work address.
#[allow(dead_code)]
pub fn serve_standalone(mut cmd: Command) -> (Running, String) {
    cmd.args(["--listen", "127.0.0.1:0", "--control-listen", "127.0.0.1:0"]);
    let (child, line) = spawn_command_first_line(cmd);
    let work = line
        .strip_prefix("listening work=")
        .and_then(|r| r.split_once(" control="))
        .unwrap_or_else(|| panic!("no work address in {line:?}"))
        .0
        .to_string();
    (child, work)
}

/// Ends a served child as Ctrl-C or compose would (SIGTERM); its exit code.
#[allow(dead_code)]
pub fn terminate(mut child: Running) -> Option<i32> {
    let killed = Command::new("kill")
        .args(["-TERM", &child.0.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    child.0.wait().unwrap().code()
}

/// `lab proxy` with its API on a free loopback port, logging into `log`; the child and the API's
/// address.
#[allow(dead_code)]
pub fn lab_proxy(log: &std::path::Path) -> (Running, String) {
    let (child, line) = spawn_first_line(&[
        "proxy",
        "--api",
        "127.0.0.1:0",
        "--log",
        log.to_str().unwrap(),
    ]);
    let api = line
        .strip_prefix("listening api=")
        .unwrap_or_else(|| panic!("no API address in {line:?}"))
        .to_string();
    (child, api)
}

/// One HTTP/1.1 exchange on a fresh connection (`Connection: close`); the whole answer.
#[allow(dead_code)]
pub fn http(addr: &str, method: &str, path: &str, body: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    answer
}

/// Every file under `dir` (recursively, not through the `latest` link) whose name starts with
/// `prefix` and ends with `suffix`.
#[allow(dead_code)]
pub fn files(dir: &Path, prefix: &str, suffix: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                stack.push(p);
            } else if p
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix) && n.ends_with(suffix))
            {
                out.push(p);
            }
        }
    }
    out
}

/// The records of the one JSON Lines log under `dir` whose name starts with `prefix`.
#[allow(dead_code)]
pub fn log_records(dir: &Path, prefix: &str) -> Vec<serde_json::Value> {
    let log = files(dir, prefix, ".jsonl");
    assert_eq!(log.len(), 1, "{log:?}");
    std::fs::read_to_string(&log[0])
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .collect()
}

/// A `lab serve` on loopback port 0 logging into `dir`, as compose starts the dependency (no
/// standalone run, `--scenario none`), with `more` arguments; the child and its
/// `A=WORK@CONTROL` target for `lab swarm --targets`.
#[allow(dead_code)]
pub fn serve_dependency(dir: &Path, more: &[&str]) -> (Running, String) {
    let dir = dir.to_str().expect("a UTF-8 temp path");
    let args = [
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--control-listen",
            "127.0.0.1:0",
            "--scenario",
            "none",
            "--log-dir",
            dir,
        ],
        more,
    ]
    .concat();
    let (child, line) = spawn_first_line(&args);
    let addr = |key: &str| {
        line.split_whitespace()
            .find_map(|p| p.strip_prefix(key))
            .unwrap_or_else(|| panic!("no {key} in {line:?}"))
            .to_string()
    };
    let target = format!("A=http://{}@http://{}", addr("work="), addr("control="));
    (child, target)
}

/// Waits up to `limit` for `child` to exit by itself; its exit code, or `None` (then killed).
#[allow(dead_code)]
pub fn exit_within(child: &mut std::process::Child, limit: std::time::Duration) -> Option<i32> {
    let deadline = std::time::Instant::now() + limit;
    while std::time::Instant::now() < deadline {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status.code();
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// The one `summary.json` under `dir`, parsed.
#[allow(dead_code)]
pub fn summary(dir: &Path) -> serde_json::Value {
    let s = files(dir, "summary", ".json");
    assert_eq!(s.len(), 1, "{s:?}");
    serde_json::from_str(&std::fs::read_to_string(&s[0]).unwrap()).unwrap()
}

/// The run of strategy `id` in a parsed summary.
#[allow(dead_code)]
pub fn run_of<'a>(s: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    s["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["strategy"] == id)
        .unwrap_or_else(|| panic!("no run of {id}"))
}

/// `lab run SCENARIO` (seed 42, its own settings) into a fresh folder, which must exit 0:
/// the folder and the run's stdout.
#[allow(dead_code)]
pub fn run_live(scenario: &str) -> (PathBuf, String) {
    let dir = temp(scenario, "live");
    let o = lab()
        .args(["run", scenario, "--run-id", "l", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    (dir, stdout)
}

/// `lab simulate SCENARIO` (seed 42) into a fresh folder, which must exit 0: the folder and
/// its summary, for a live run to be checked against.
#[allow(dead_code)]
pub fn simulate_model(scenario: &str) -> (PathBuf, serde_json::Value) {
    let dir = temp(scenario, "model");
    let o = lab()
        .args(["simulate", scenario, "--run-id", "m", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let s = summary(&dir);
    (dir, s)
}
