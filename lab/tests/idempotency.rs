//! `lab run idempotency`, short and live: the ledger (written by the services) and the logs
//! agree, and a key per operation never charges twice.

mod common;

use common::{lab, text};

#[test]
fn a_short_live_idempotency_run_counts_duplicates_from_the_ledger_and_the_logs_alike() {
    let out = common::temp("idem", "run").join("results");
    let o = lab()
        .args([
            "run",
            "idempotency",
            "--seed",
            "7",
            "--duration-s",
            "2",
            "--clients",
            "8",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    // Exit 0: every check passed (a failed check exits 3).
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("Charges, lost answers"), "{stdout}");
    let dir = out.join("latest").join("idempotency");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    for run in summary["runs"].as_array().unwrap() {
        let id = run["strategy"].as_str().unwrap();
        let l = &run["ledger"];
        let n = |k: &str| {
            l[k].as_u64()
                .unwrap_or_else(|| panic!("{id}: no {k} in {l}"))
        };
        assert!(n("retried_lost") > 0, "{id}: {l}");
        if id == "key-per-op" {
            assert_eq!(n("duplicate_charges"), 0, "{l}");
        } else {
            assert_eq!(n("duplicate_charges"), n("retried_lost"), "{id}: {l}");
        }
        // The ledger file is there, one line per charge.
        let ledger = std::fs::read_to_string(dir.join(format!("ledger-{id}-seed7.jsonl"))).unwrap();
        assert_eq!(ledger.lines().count() as u64, n("charges"), "{id}");
    }
}
