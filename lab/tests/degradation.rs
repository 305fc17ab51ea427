//! `degradation` (issue 24; the reliability-patterns article's product page): each page is a fan-out of five calls, one
//! to each of five dependencies (five dependency processes, the partition balancer); the
//! recommendations (dependency 4) answer 503 from 10 s to 30 s, the reviews (3) from 15 s to
//! 25 s. Live, each dependency gets only its own call of every page, each page's record says
//! how it was served, the checks pass and live agrees with the simulation of the same seed.

mod common;

use common::{
    files, lab, log_records, run_live, run_of as run, simulate_model, summary, temp, text,
};

/// A run's fan-out figures: requests, the share that succeeded, the share served degraded.
fn pages(r: &serde_json::Value) -> (f64, f64, f64) {
    let f = &r["fanout"];
    let n = f["requests"].as_f64().unwrap();
    (
        n,
        f["succeeded"].as_f64().unwrap() / n,
        f["degraded"].as_f64().unwrap() / n,
    )
}

#[test]
fn live_pages_fall_back_per_dependency_and_agree_with_their_simulation() {
    let (dir, stdout) = run_live("degradation");
    assert_eq!(stdout.matches("PASS").count(), 4, "{stdout}");
    assert!(!stdout.contains("FAIL"), "{stdout}");
    assert!(stdout.contains("served degraded"), "{stdout}");

    // The partition: dependency r received exactly the calls of clients r, r + 5, ... (call r
    // of every page), and every one of them.
    for r in 0..5u64 {
        let arrivals: Vec<u64> = log_records(&dir, &format!("server-fallback-seed42-replica{r}"))
            .iter()
            .filter(|x| x["type"] == "arrival")
            .map(|x| x["data"]["client"].as_u64().unwrap())
            .collect();
        assert!(arrivals.len() > 2000, "replica {r}: {}", arrivals.len());
        assert!(arrivals.iter().all(|c| c % 5 == r), "replica {r}");
    }

    // Each page's record: with the fallbacks, a page served degraded started while the
    // recommendations or the reviews were down, and one of them failed; without, such a page
    // failed.
    let starts = |strategy: &str, pick: &dyn Fn(&serde_json::Value) -> bool| -> Vec<f64> {
        log_records(&dir, &format!("client-{strategy}-seed42"))
            .iter()
            .filter(|x| x["type"] == "fan_out" && pick(&x["data"]))
            .map(|x| x["data"]["start_us"].as_f64().unwrap() / 1e6)
            .collect()
    };
    let degraded = starts("fallback", &|f| f["fallbacks"].as_u64().unwrap_or(0) > 0);
    assert!(degraded.len() > 1000, "{}", degraded.len());
    assert!(
        degraded.iter().all(|t| (9.9..30.0).contains(t)),
        "{degraded:?}"
    );
    let failed = starts("fallback", &|f| f["failed"].as_u64().unwrap() > 0);
    assert!(failed.is_empty(), "{failed:?}");
    let failed = starts("no-fallback", &|f| f["failed"].as_u64().unwrap() > 0);
    assert!(failed.len() > 1000, "{}", failed.len());
    assert!(failed.iter().all(|t| (9.9..30.0).contains(t)), "{failed:?}");
    assert!(starts("no-fallback", &|f| f.get("fallbacks").is_some()).is_empty());

    // Live against the model, seed 42: pages within 5%, success and degraded share within 5
    // points.
    let (sim_dir, sim) = simulate_model("degradation");
    let live = summary(&dir);
    for id in ["no-fallback", "fallback", "retry-fallback"] {
        let (l, s) = (run(&live, id), run(&sim, id));
        assert_eq!(l["matched"]["unmatched_client"], 0, "{id}");
        assert_eq!(l["matched"]["unmatched_server"], 0, "{id}");
        let ((ln, ls, ld), (sn, ss, sd)) = (pages(l), pages(s));
        assert!(
            (ln / sn - 1.0).abs() <= 0.05,
            "{id}: pages live {ln} sim {sn}"
        );
        assert!((ls - ss).abs() <= 0.05, "{id}: success live {ls} sim {ss}");
        assert!((ld - sd).abs() <= 0.05, "{id}: degraded live {ld} sim {sd}");
    }
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&sim_dir);
}

#[test]
fn fallbacks_and_a_partition_refuse_what_they_cannot_do_with_exit_2() {
    let dir = temp("degradation", "bad");
    // More fallbacks than calls, and fallbacks outside a fan-out.
    for (args, says) in [
        (
            vec!["--fanout", "1"],
            "strategy \"fallback\" has fallbacks = 2: a fallback serves a call of a fan-out \
             request, so fallbacks is at most E03_FANOUT (1 here)",
        ),
        (
            vec!["--workload", "closed_loop"],
            "and 0 with any other workload",
        ),
        (
            vec!["--outlier-5xx", "5"],
            "invalid E03_BALANCER=\"partition\": expected round_robin, least_outstanding or \
             failover with E03_OUTLIER_5XX or E03_HEALTH_INTERVAL_MS above 0",
        ),
        (
            vec!["--health-interval-ms", "1000"],
            "E03_HEALTH_INTERVAL_MS above 0",
        ),
    ] {
        let o = lab()
            .args(["simulate", "degradation"])
            .args(&args)
            .arg("--out")
            .arg(&dir)
            .output()
            .unwrap();
        let (stdout, stderr) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stdout}\n{stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    // A bad value in a scenario file names the file, its line and the key.
    let head = "name = \"x\"\ntitle = \"t\"\ndescription = \"d\"\n\
                [workload]\nkind = \"fan_out\"\nfanout = 3\n\
                [policy]\nstrategies = [\"fb\"]\n[[strategy]]\nid = \"fb\"\nbackoff = \"none\"\n";
    let path = dir.join("x.toml");
    std::fs::write(&path, format!("{head}fallbacks = -1\n")).unwrap();
    let o = lab()
        .arg("simulate")
        .arg(&path)
        .arg("--out")
        .arg(&dir)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("x.toml:12")
            && stderr.contains("fallbacks = -1: expected a whole number from 0 to 1000"),
        "{stderr}"
    );
    // Nothing that looks like a result was written.
    assert!(files(&dir, "summary", ".json").is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}
