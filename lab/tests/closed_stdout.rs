//! `lab analyze DIR | head` closed the analysis' stdout before its outputs were written: the
//! tables are printed first, and a failed print ended the command before report.md, report.html
//! and summary.json (and `--server-log`'s panicked on the closed pipe). The outputs are now
//! written whole whatever became of stdout; the command then says what failed, exit 1.

mod common;

use std::process::Stdio;

use common::{lab, temp, text};

#[test]
fn a_closed_stdout_costs_no_output() {
    let out = temp("closed-stdout", "run");
    let o = lab()
        .args(["run", "e03a", "--clients", "10", "--duration-s", "2"])
        .args(["--strategies", "C", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    let dir = out.join("latest/e03a");
    for f in ["report.md", "report.html", "summary.json"] {
        std::fs::remove_file(dir.join(f)).unwrap();
    }
    let mut child = lab()
        .arg("analyze")
        .arg(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The reader leaves at once, as `| head -0` would.
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    let (_, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("writing to stdout"), "{stderr}");
    assert!(stderr.contains("the outputs are written whole"), "{stderr}");
    for f in ["report.md", "report.html", "summary.json"] {
        assert!(dir.join(f).is_file(), "{f} not written");
    }
    let _ = std::fs::remove_dir_all(&out);
}
