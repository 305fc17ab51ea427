//! `lab replica ratelimit`: the port of the rate-limit article's own simulation, with the article's seeds and
//! any other.

mod common;
use common::{lab, text};

#[test]
fn the_articles_two_seeds_print_the_published_figures_with_pass() {
    let o = lab()
        .args([
            "replica",
            "ratelimit",
            "--seed",
            "20260218",
            "--seed=20260219",
        ])
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    // 48 published cells for the first seed, 12 (completion, interactive) for the second.
    assert!(out.contains("60 of 60 published cells reproduced"), "{out}");
    assert!(!out.contains("FAIL"), "{out}");
    let heavy_fixed = out
        .lines()
        .find(|l| l.starts_with("heavy fixed completion"))
        .unwrap();
    assert!(heavy_fixed.contains("0.8000") && heavy_fixed.contains("PASS"));
}

#[test]
fn another_seed_prints_a_table_without_a_published_column_and_exits_0() {
    let o = lab()
        .args(["replica", "ratelimit", "--seed", "7"])
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with("seed 7 ")).collect();
    assert_eq!(rows.len(), 48, "{out}");
    assert!(rows
        .iter()
        .all(|r| !r.contains("PASS") && !r.contains("FAIL")));
    assert!(out.contains("none published for these seeds"), "{out}");
}

#[test]
fn a_bad_or_repeated_seed_is_refused_naming_the_flag() {
    for (args, says) in [
        (
            vec!["--seed", "abc"],
            "--seed \"abc\": expected a whole number",
        ),
        (
            vec!["--seed", "-1"],
            "expected a whole number from 0 to 4294967295",
        ),
        (
            vec!["--seed", "1", "--seed", "1"],
            "--seed 1 is given twice",
        ),
        (vec!["--seed"], "--seed: expected a seed"),
    ] {
        let o = lab()
            .args(["replica", "ratelimit"])
            .args(&args)
            .output()
            .unwrap();
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {out}{err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(
            out.is_empty(),
            "{args:?}: nothing printed on bad input: {out}"
        );
    }
}
