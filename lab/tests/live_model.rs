//! `mode = "live_model"` checks on a real live run: the analyzer measures the failure latency
//! in the logs, simulates the same runs with it, and judges the live figures against that model.

mod common;
use common::{lab, temp, text};

#[test]
fn a_live_gateway4_run_is_judged_against_the_model_at_its_measured_failure_latency() {
    let out_dir = temp("live-model", "gateway4");
    let o = lab()
        .args(["run", "gateway4", "--out"])
        .arg(&out_dir)
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert!(matches!(o.status.code(), Some(0) | Some(3)), "{out}\n{err}");
    // Both live_model rows were judged (not "no model run"), against the model's figure.
    let rows: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("| attempts ") && l.contains("model "))
        .collect();
    assert_eq!(rows.len(), 2, "{out}");
    assert!(
        rows.iter()
            .all(|r| r.contains("PASS") || r.contains("FAIL")),
        "{rows:?}"
    );
    // The measured latency is the gateway's 26 ms DOWN answer plus the HTTP round trip.
    let note = out
        .lines()
        .find(|l| l.starts_with("- model: the same runs simulated with every down answer "))
        .unwrap_or_else(|| panic!("no model note: {out}"));
    let ms: f64 = note
        .trim_start_matches("- model: the same runs simulated with every down answer ")
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!((26.0..100.0).contains(&ms), "{note}");
    // A FAIL names its cell: the metric, ours, what ours is compared with (the model's figure
    // for a live_model check, a source's otherwise, each named as such) and the band.
    for line in err.lines().filter(|l| l.contains("FAIL")) {
        let model = line.contains(", model ") && !line.contains("published model");
        assert!(
            line.contains(": ours ")
                && (model || line.contains(", published "))
                && line.contains(", band "),
            "{line}"
        );
    }
    // The machine's own floor, measured before the traffic, kept and printed beside the lab's
    // lateness.
    let floor = out
        .lines()
        .find(|l| l.starts_with("Machine floor (SCHED_"))
        .unwrap_or_else(|| panic!("no machine floor line: {out}"));
    assert!(
        floor.contains("the lab's worst send lateness p99"),
        "{floor}"
    );
    let machine = std::fs::read_dir(&out_dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("machine.json"))
        .find(|p| p.exists())
        .expect("OUT/<run id>/machine.json");
    let machine_dir = machine.parent().unwrap().to_path_buf();
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&machine).unwrap()).unwrap();
    assert!(m["wake_samples"].as_u64().unwrap() > 0, "{m}");
    assert!(m["wake_p99_ms"].as_f64().unwrap() >= 0.0, "{m}");
    assert!(
        err.contains("this machine wakes a sleeping thread"),
        "{err}"
    );
    // `lab analyze` of the same logs judges the same rows against the model too: the analyzer
    // runs no model of its own, the lab hands it the simulator's.
    let scenario_dir = machine_dir.join("gateway4");
    let o = lab().arg("analyze").arg(&scenario_dir).output().unwrap();
    let (again, err) = text(&o);
    assert!(
        matches!(o.status.code(), Some(0) | Some(3)),
        "{again}\n{err}"
    );
    let judged: Vec<&str> = again
        .lines()
        .filter(|l| l.starts_with("| attempts ") && l.contains("model "))
        .collect();
    assert_eq!(judged, rows, "{again}");
    assert!(!again.contains("no model run"), "{again}");
    let _ = std::fs::remove_dir_all(&out_dir);
}

#[test]
fn a_bad_realtime_setting_is_refused_naming_the_variable() {
    let o = lab()
        .args(["simulate", "e03b"])
        .env("E03_REALTIME", "yes")
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    assert!(
        err.contains("invalid E03_REALTIME value \"yes\": expected auto") && out.is_empty(),
        "{err}"
    );
}
