//! `lab soak`: a very short soak samples both processes every second into soak.csv, prints their
//! growth and passes; bad input exits 2.

mod common;

use common::{lab, temp, text};

#[test]
fn a_short_soak_samples_both_processes_every_second_and_passes() {
    let out = temp("soak", "short");
    let output = lab()
        .args(["soak", "--minutes", "0.2", "--out"])
        .arg(&out)
        .output()
        .expect("lab runs");
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("soak: PASS"), "{stdout}");
    for process in ["dependency", "swarm"] {
        assert!(stdout.contains(&format!("| {process} | ")), "{stdout}");
    }
    let csv = std::fs::read_to_string(out.join("latest/soak.csv")).expect("soak.csv written");
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("t_s,process,pid,rss_kib,fds,tasks,rss_anon_kib,rss_file_kib")
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    for process in ["dependency", "swarm"] {
        let mine: Vec<&Vec<&str>> = rows.iter().filter(|r| r[1] == process).collect();
        // 12 s of traffic sampled every second.
        assert!(mine.len() >= 10, "{process}: {} samples\n{csv}", mine.len());
        let times: Vec<f64> = mine.iter().map(|r| r[0].parse().unwrap()).collect();
        assert!(
            times
                .windows(2)
                .all(|w| w[1] - w[0] > 0.5 && w[1] - w[0] < 2.5),
            "{times:?}"
        );
        for r in &mine {
            let n: Vec<u64> = r[3..].iter().map(|v| v.parse().unwrap()).collect();
            assert!(n.iter().all(|v| *v > 0), "{r:?}");
            // VmRSS is its anonymous, file-backed and shared parts (read at the same moment;
            // the shared part is small).
            assert!(n[3] + n[4] <= n[0] && n[0] - n[3] - n[4] < 1024, "{r:?}");
        }
        assert!(
            stdout.contains(&format!(
                "{process}: RSS after the warm-up -> end: anonymous"
            )),
            "{stdout}"
        );
    }
    // The traffic's logs were analysed like a run's.
    assert!(out.join("latest/e03a/summary.json").is_file());
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn bad_soak_input_exits_2_and_creates_nothing() {
    let out = temp("soak", "bad").join("results");
    for minutes in ["0", "-1", "abc", "", "2000"] {
        let output = lab()
            .args(["soak", "--minutes", minutes, "--out"])
            .arg(&out)
            .output()
            .unwrap();
        let (_, stderr) = text(&output);
        assert_eq!(output.status.code(), Some(2), "{minutes:?}: {stderr}");
        assert!(
            stderr.contains(&format!("invalid --minutes {minutes:?}")),
            "{stderr}"
        );
    }
    let output = lab().args(["soak", "--minuts", "1"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(!out.exists());
    let _ = std::fs::remove_dir_all(out.parent().unwrap());
}
