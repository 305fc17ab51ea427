//! The `shedding` scenario (issue 24): each row of its table faces the server policy the row
//! names (a strategy table's `queue_policy` and `admission`), live as simulated, and the
//! analyzer counts throughput, goodput and wasted work from the logs.

mod common;

use common::{files, lab, temp, text};

/// The runs of a `summary.json`, by strategy id.
fn runs(summary: &std::path::Path) -> Vec<serde_json::Value> {
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(summary).unwrap()).unwrap();
    s["runs"].as_array().unwrap().clone()
}

fn open_loop<'a>(runs: &'a [serde_json::Value], id: &str) -> &'a serde_json::Value {
    &runs.iter().find(|r| r["strategy"] == id).unwrap()["open_loop"]
}

#[test]
fn simulated_shedding_passes_its_checks_fifo_works_for_nobody_and_codel_for_its_callers() {
    let dir = temp("shedding", "sim");
    let o = lab()
        .args(["simulate", "shedding", "--run-id", "s", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    assert_eq!(stdout.matches("PASS").count(), 7, "{stdout}");
    assert!(!stdout.contains("FAIL"), "{stdout}");
    let summary = files(&dir, "summary", ".json");
    let runs = runs(&summary[0]);
    let (fifo, codel) = (open_loop(&runs, "fifo"), open_loop(&runs, "codel"));
    // Both work at capacity (250/s): the difference is whom for.
    for o in [fifo, codel] {
        let t = o["throughput_per_s"].as_f64().unwrap();
        assert!((240.0..=251.0).contains(&t), "{o}");
    }
    assert!(fifo["goodput_per_s"].as_f64().unwrap() < 50.0, "{fifo}");
    assert!(codel["goodput_per_s"].as_f64().unwrap() > 225.0, "{codel}");
    assert!(dir.join("s/simulated/shedding/goodput.svg").exists());
    let csv = std::fs::read_to_string(dir.join("s/simulated/shedding/open_loop_1s.csv")).unwrap();
    assert!(
        csv.lines().next().unwrap().ends_with(",worked,useful"),
        "{csv}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn live_shedding_rows_face_their_own_policy_and_goodput_is_counted_from_the_logs() {
    let dir = temp("shedding", "live");
    let o = lab()
        .args([
            "run",
            "shedding",
            "--duration-s",
            "4",
            "--strategies",
            "fifo,codel,aimd",
            "--run-id",
            "l",
            "--out",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    // The checks are the 20 s run's: in 4 s FIFO's queue passes its callers' 1 s only half way
    // through, so its goodput is still three quarters of capacity, and its two checks fail (exit
    // 3, each named) while CoDel's pass.
    assert_eq!(o.status.code(), Some(3), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("FAIL goodput / capacity of fifo"),
        "{stderr}"
    );
    assert!(
        stderr.contains("FAIL wasted work / work done of fifo"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("of codel") && !stderr.contains("of aimd"),
        "{stderr}"
    );
    // Each row's dependency ran its own queue policy: FIFO drops nobody, CoDel drops.
    let causes = |id: &str| -> Vec<String> {
        let log = files(&dir, &format!("server-{id}-"), ".jsonl");
        assert_eq!(log.len(), 1, "{log:?}");
        std::fs::read_to_string(&log[0])
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|r| r["type"] == "response")
            .map(|r| r["data"]["cause"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(causes("fifo").iter().all(|c| c == "ok"));
    assert!(
        causes("codel")
            .iter()
            .filter(|c| *c == "queue_timeout")
            .count()
            > 100
    );
    // The AIMD limit refuses at once what is over it (503, cause limited), never queue-drops.
    let aimd = causes("aimd");
    assert!(aimd.iter().filter(|c| *c == "limited").count() > 100);
    assert!(aimd.iter().all(|c| c == "ok" || c == "limited"));
    let summary = files(&dir, "summary", ".json");
    let runs = runs(&summary[0]);
    let (fifo, codel) = (open_loop(&runs, "fifo"), open_loop(&runs, "codel"));
    assert!(open_loop(&runs, "aimd")["goodput_per_s"].as_f64().unwrap() / 250.0 >= 0.9);
    let share = |o: &serde_json::Value, k: &str| o[k].as_f64().unwrap() / 250.0;
    // Half of FIFO's 4 s is served after its callers' 1 s; CoDel serves its callers.
    assert!(share(codel, "goodput_per_s") >= 0.9, "{codel}");
    assert!(share(fifo, "goodput_per_s") < 0.85, "{fifo}");
    for o in [fifo, codel] {
        assert!(share(o, "throughput_per_s") > 0.9, "{o}");
        let (worked, useful) = (o["worked"].as_u64().unwrap(), o["useful"].as_u64().unwrap());
        assert!(useful <= worked, "{o}");
    }
    assert!(fifo["worked"].as_u64().unwrap() - fifo["useful"].as_u64().unwrap() > 100);
    assert!(stdout.contains("goodput/s (of capacity)"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}
