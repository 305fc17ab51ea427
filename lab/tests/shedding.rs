//! The `shedding` scenario (issue 24): each row of its table faces the server policy the row
//! names (a strategy table's `queue_policy` and `admission`), live as simulated, and the
//! analyzer counts throughput, goodput and wasted work from the logs, and success by class
//! (half the operations are best effort; the `priority` row sheds them first).

mod common;

use common::{files, lab, log_records, temp, text};

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
    assert_eq!(stdout.matches("PASS").count(), 10, "{stdout}");
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
    // Priority admission keeps every critical operation and sheds best effort; FIFO serves
    // both classes alike (as badly). Every row sees the same classes (drawn by arrival).
    let class = |id: &str| {
        let r = runs.iter().find(|r| r["strategy"] == id).unwrap();
        let (ops, ok) = (
            r["operations"].as_u64().unwrap(),
            r["succeeded"].as_u64().unwrap(),
        );
        let be = &r["best_effort"];
        let (be_ops, be_ok) = (
            be["operations"].as_u64().unwrap(),
            be["succeeded"].as_u64().unwrap(),
        );
        (ops - be_ops, ok - be_ok, be_ops, be_ok)
    };
    let (c_ops, c_ok, be_ops, be_ok) = class("priority");
    assert_eq!(c_ok, c_ops, "every critical operation succeeds");
    assert!(be_ok * 2 < be_ops && be_ok > 0, "{be_ok} of {be_ops}");
    assert!((0.45..0.55).contains(&(be_ops as f64 / (be_ops + c_ops) as f64)));
    let (f_c_ops, f_c_ok, f_be_ops, _) = class("fifo");
    assert_eq!((f_c_ops, f_be_ops), (c_ops, be_ops), "the same classes");
    assert!(f_c_ok * 5 < f_c_ops, "{f_c_ok} of {f_c_ops}");
    assert!(stdout.contains("critical success"), "{stdout}");
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
        log_records(&dir, &format!("server-{id}-"))
            .into_iter()
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

#[test]
fn live_priority_admission_sheds_best_effort_at_once_and_keeps_critical() {
    let dir = temp("shedding", "priority");
    let o = lab()
        .args([
            "run",
            "shedding",
            "--duration-s",
            "3",
            "--strategies",
            "priority",
            "--run-id",
            "p",
            "--out",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    let server = log_records(&dir, "server-priority-");
    // The class each arrival's header gave, by the service's number.
    let class: std::collections::HashMap<u64, bool> = server
        .iter()
        .filter(|r| r["type"] == "arrival")
        .map(|r| {
            let d = &r["data"];
            (d["seq"].as_u64().unwrap(), d["class"] == "best_effort")
        })
        .collect();
    let best_effort = class.values().filter(|b| **b).count();
    assert!(
        (0.4..0.6).contains(&(best_effort as f64 / class.len() as f64)),
        "{best_effort} of {}",
        class.len()
    );
    // Shed: 503 at once, without a worker, and only best effort.
    let shed: Vec<&serde_json::Value> = server
        .iter()
        .filter(|r| r["type"] == "response" && r["data"]["cause"] == "shed")
        .map(|r| &r["data"])
        .collect();
    assert!(shed.len() > 100, "{}", shed.len());
    for d in &shed {
        assert_eq!(d["status"], 503, "{d}");
        assert!(d.get("admit_us").is_none(), "{d}");
        assert!(
            class[&d["seq"].as_u64().unwrap()],
            "a critical request shed: {d}"
        );
    }
    // The client's operation records carry the class; the analyzer's tally counts them.
    let client = log_records(&dir, "client-priority-");
    let ops: Vec<&serde_json::Value> = client
        .iter()
        .filter(|r| r["type"] == "operation")
        .map(|r| &r["data"])
        .collect();
    let be_ops = ops.iter().filter(|d| d["class"] == "best_effort").count() as u64;
    let critical_failed = ops
        .iter()
        .filter(|d| d.get("class").is_none() && d["outcome"] != "success")
        .count();
    assert_eq!(critical_failed, 0, "every critical operation succeeds");
    let summary = files(&dir, "summary", ".json");
    let runs = runs(&summary[0]);
    assert_eq!(runs[0]["best_effort"]["operations"].as_u64(), Some(be_ops));
    assert!(stdout.contains("critical success"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}
