//! `lab map`: bad input names the flag (exit 2); a small map prints its cells and writes the
//! heat map (SVG and PNG), the CSV and the JSON.

mod common;

use common::{lab, temp, text};

#[test]
fn bad_map_input_names_the_flag_and_exits_2() {
    for (args, says) in [
        (vec!["--loads", "0,0.5"], "invalid --loads"),
        (vec!["--freezes", "x"], "invalid --freezes"),
        (vec!["--horizon-s", "0"], "invalid --horizon-s"),
        (vec!["--verify", "99"], "invalid --verify"),
        (vec!["--rate", "-1"], "invalid --rate"),
        (vec!["e03a"], "has no freeze phase"),
    ] {
        let dir = temp("map-bad", "x");
        let o = lab()
            .arg("map")
            .args(&args)
            .args(["--out", dir.to_str().unwrap()])
            .output()
            .unwrap();
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn a_small_map_finds_a_metastable_cell_and_writes_its_figure() {
    let dir = temp("map", "small");
    let o = lab()
        .args([
            "map",
            "--loads",
            "0.2,0.8",
            "--freezes",
            "3",
            "--horizon-s",
            "20",
            "--strategies",
            "A,D",
            "--seeds",
            "1",
            "--run-id",
            "m",
            "--out",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    // A: recovers at 20% load, stays down at 80%; D recovers at both.
    let a = out.split("A immediate retry").nth(1).unwrap();
    let a_row = a
        .lines()
        .find(|l| l.trim_start().starts_with("3 s"))
        .unwrap();
    assert!(a_row.trim_end().ends_with('M'), "{out}");
    let d = out.split("D backoff").nth(1).unwrap();
    let d_row = d
        .lines()
        .find(|l| l.trim_start().starts_with("3 s"))
        .unwrap();
    assert!(!d_row.contains('M'), "{out}");
    let map = dir.join("m/map");
    for f in ["phase-map.svg", "phase-map.png", "map.csv", "map.json"] {
        assert!(map.join(f).is_file(), "{f} missing");
    }
    let csv = std::fs::read_to_string(map.join("map.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 4, "{csv}");
    assert!(csv.contains("A,0.8,200,3,1,metastable,"), "{csv}");
    let svg = std::fs::read_to_string(map.join("phase-map.svg")).unwrap();
    assert!(svg.contains("offered load (share of capacity)"));
}
