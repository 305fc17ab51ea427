//! Chain scenarios through the lab's command line: `amplification` live over loopback HTTP
//! (one `lab hop` process per layer) and simulated prints the published 27, 3 and 243 with
//! PASS; a bad hop configuration is refused with exit 2.

mod common;

use common::lab;

/// The cells of the row of `variant` in the chain checks table.
fn check_cells(out: &str, variant: &str) -> Vec<String> {
    let table = out
        .split("Checks against the source's figures:")
        .nth(1)
        .expect("a check table");
    table
        .lines()
        .filter(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<String> = l.split('|').map(|c| c.trim().to_string()).collect();
            cells[1..cells.len() - 1].to_vec()
        })
        .find(|cells| cells[0] == variant)
        .unwrap_or_else(|| panic!("no row {variant} in\n{out}"))
}

fn amplification(command: &str) {
    let dir = common::temp("chains", command);
    let o = lab()
        .args([command, "amplification", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    for (variant, n) in [
        ("every-layer", "27"),
        ("top-only", "3"),
        ("five-layers", "243"),
    ] {
        let cells = check_cells(&out, variant);
        assert_eq!(cells[2..], [n, n, "exact", "PASS"], "{cells:?}");
    }
    // Calls per layer: 3 top requests, each layer multiplying by its attempts.
    assert!(
        out.contains("client 3, gateway 3, order 9, inventory 27, bottom 81"),
        "{out}"
    );
}

#[test]
fn amplification_live_gives_exactly_27_3_and_243() {
    amplification("run");
}

#[test]
fn amplification_simulated_gives_exactly_27_3_and_243() {
    amplification("simulate");
}

#[test]
fn a_bad_hop_configuration_names_the_flag_and_exits_2() {
    let o = lab()
        .args(["hop", "--config", "{\"layer\": 1}"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--config"), "{err}");
}
