//! Chain scenarios through the lab's command line: `amplification` live over loopback HTTP
//! (one `lab hop` process per layer) and simulated prints the published 27, 3 and 243 with
//! PASS; a bad hop configuration is refused with exit 2; the compose path (hop services started
//! without a role, configured by `lab swarm --chain-hops` per variant, tables by `lab report`)
//! gives the same figures on loopback. Live and simulated, the run writes `report.html` (the
//! blocks of `chain.md`, the figure inlined) and `OUT/index.html` links it.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};

use common::lab;

/// The cells of the row of `variant` in the chain checks table.
fn check_cells(out: &str, variant: &str) -> Vec<String> {
    let table = out
        .split("Checks: ours against a source's published figure, the model's, or a threshold:")
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
    assert_published(&out);
    assert_report_and_index(&dir, command == "run");
}

/// The chain run wrote `report.html` beside `chain.md` (the figure inlined, the checks with
/// PASS, the conclusion, the table's row of the 5-layer chain) and `chain.json`, and
/// `OUT/index.html` links to the page.
fn assert_report_and_index(out: &std::path::Path, live: bool) {
    let run = std::fs::read_link(out.join("latest")).expect("OUT/latest");
    let run = run.file_name().unwrap().to_string_lossy().into_owned();
    let rel = if live {
        format!("{run}/amplification")
    } else {
        format!("{run}/simulated/amplification")
    };
    let dir = out.join(&rel);
    let md = std::fs::read_to_string(dir.join("chain.md")).expect("chain.md");
    let html = std::fs::read_to_string(dir.join("report.html")).expect("a chain run's report.html");
    for part in [
        "<svg role=\"img\" aria-label=\"calls per top request at each layer\"",
        "data-figure=\"calls_per_layer\"",
        "<table class=\"chain\">",
        "<table class=\"checks\">",
        "<td class=\"pass\">PASS</td>",
        "<p class=\"conclusion\">Calls at the bottom per top request: every-layer 27, \
         top-only 3, five-layers 243.",
        "<td>client 3, gateway 3, order 9, inventory 27, stock 81, pricing 243, bottom 729</td>",
    ] {
        assert!(html.contains(part), "report.html lacks {part}:\n{html}");
    }
    assert!(!html.contains("class=\"missing\""), "{html}");
    // The same blocks as chain.md: its conclusion and its table's cells.
    assert!(
        md.contains(
            "Calls at the bottom per top request: every-layer 27, top-only 3, five-layers 243."
        ),
        "{md}"
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("chain.json")).expect("chain.json"))
            .unwrap();
    assert_eq!(summary["scenario"], "amplification");
    assert_eq!(summary["simulated"], !live);
    assert_eq!(
        summary["variants"][2]["calls_per_layer"],
        serde_json::json!([3, 3, 9, 27, 81, 243, 729])
    );
    let index = std::fs::read_to_string(out.join("index.html")).expect("OUT/index.html");
    assert!(
        index.contains(&format!("href=\"{rel}/report.html\"")),
        "index.html does not link {rel}/report.html:\n{index}"
    );
    assert!(index.contains("amplification (chain)"), "{index}");
    assert!(
        index.contains(if live {
            "<td>live</td>"
        } else {
            "<td>simulated</td>"
        }),
        "{index}"
    );
}

fn assert_published(out: &str) {
    for (variant, n) in [
        ("every-layer", "27"),
        ("top-only", "3"),
        ("five-layers", "243"),
    ] {
        let cells = check_cells(out, variant);
        let published = format!("published {n}");
        assert_eq!(cells[2..], [&published, n, "exact", "PASS"], "{cells:?}");
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

/// Hop services as compose starts them (`lab hop --listen .. --log-dir`), on loopback port 0;
/// killed when dropped (the swarm normally shuts them down).
struct Services(Vec<Child>);

impl Drop for Services {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Starts `n` unconfigured hops logging under `log_dir`; their base URLs.
fn hop_services(n: usize, log_dir: &std::path::Path) -> (Services, Vec<String>) {
    let mut services = Services(Vec::new());
    let mut urls = Vec::new();
    for _ in 0..n {
        let mut child = lab()
            .args(["hop", "--listen", "127.0.0.1:0", "--log-dir"])
            .arg(log_dir)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        services.0.push(child);
        let addr = line.trim().strip_prefix("listening work=").expect(&line);
        urls.push(format!("http://{addr}"));
    }
    (services, urls)
}

/// `--shutdown-targets` stopped every hop service (bounded wait for their exit).
fn assert_exits(services: &mut Services) {
    for c in &mut services.0 {
        let mut exited = false;
        for _ in 0..250 {
            if c.try_wait().unwrap().is_some() {
                exited = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(
            exited,
            "a hop service still runs after the swarm shut it down"
        );
    }
}

#[test]
fn amplification_through_hop_services_gives_27_3_and_243_and_shuts_them_down() {
    let dir = common::temp("chains", "services");
    let (mut services, urls) = hop_services(6, &dir);
    // No dependency listens at the target: shutting it down fails, and is only said.
    let o = lab()
        .args([
            "swarm",
            "--targets",
            "A=http://127.0.0.1:9@http://127.0.0.1:9",
            "--scenarios",
            "amplification",
            "--claim-run-dir",
            "--run-id",
            "chain",
            "--shutdown-targets",
            "--chain-hops",
            &urls.join(","),
            "--out",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    let (out, err) = common::text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    assert!(
        err.contains("five-layers: 3 top requests through 6 hop services"),
        "{err}"
    );
    // The hops logged into the run's directory, as they were configured per variant.
    let bottom =
        std::fs::read_to_string(dir.join("chain/amplification/every-layer/layer-4-bottom.jsonl"))
            .unwrap();
    assert_eq!(bottom.lines().count(), 81);
    let pricing =
        std::fs::read_to_string(dir.join("chain/amplification/five-layers/layer-5-pricing.jsonl"))
            .unwrap();
    assert_eq!(pricing.lines().count(), 243);
    assert_exits(&mut services);
    // The analyzer (compose's `lab report`) prints the published figures from those logs.
    let o = lab()
        .args(["report", "--out"])
        .arg(&dir)
        .arg("amplification")
        .output()
        .unwrap();
    let (out, err) = common::text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    assert_published(&out);
    // ... and writes the same report.html and index as `lab run`.
    assert_report_and_index(&dir, true);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn too_few_hop_services_are_refused_before_any_traffic() {
    let dir = common::temp("chains", "few");
    let o = lab()
        .args([
            "swarm",
            "--targets",
            "A=http://127.0.0.1:9@http://127.0.0.1:9",
            "--scenarios",
            "amplification",
            "--chain-hops",
            "http://127.0.0.1:9,http://127.0.0.1:9,http://127.0.0.1:9,http://127.0.0.1:9",
            "--out",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    let (_, err) = common::text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("five-layers needs 6 hop services (5 hops and the bottom)"),
        "{err}"
    );
    assert!(
        std::fs::read_dir(&dir).unwrap().next().is_none(),
        "nothing is written"
    );
    let o = lab()
        .args([
            "swarm",
            "--targets",
            "A=http://127.0.0.1:9@http://127.0.0.1:9",
            "--scenarios",
            "amplification",
            "--out",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    let (_, err) = common::text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--chain-hops"), "{err}");
    // A chain scenario with an E03 one: the E03 part fails (its target is no dependency: a
    // hop service answers its health check, then refuses the run's control call, at once; a
    // target that never answers fails the same way after the health wait's 30 s), so the
    // chains do not run, and the hop services are still shut down.
    let (mut services, urls) = hop_services(1, &dir);
    let (_not_a_dependency, target) = hop_services(1, &dir);
    let target = format!("A={0}@{0}", target[0]);
    let o = lab()
        .args([
            "swarm",
            "--targets",
            &target,
            "--strategies",
            "A",
            "--scenarios",
            "amplification,e03b",
            "--shutdown-targets",
            "--chain-hops",
            &urls[0],
            "--out",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    let (_, err) = common::text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(!err.contains("top requests through"), "no chain ran: {err}");
    assert_exits(&mut services);
    assert!(!dir.join("amplification").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Compose's swarm with `E03_SCENARIOS=e03b,amplification`: the E03-B run against the
/// dependency first, then the chain through the hop services, both in the one run directory it
/// claimed; every service is shut down at the end, and `lab report` prints both scenarios'
/// tables from those logs.
#[test]
fn compose_swarm_runs_a_chain_beside_e03b_in_one_run_directory() {
    let dir = common::temp("chains", "compose-mixed");
    std::fs::create_dir_all(&dir).unwrap();
    let (mut dependency, target) = common::serve_dependency(&dir, &[]);
    let (mut services, urls) = hop_services(6, &dir);
    let o = lab()
        .args([
            "swarm",
            "--targets",
            &target,
            "--strategies",
            "A",
            "--scenarios",
            "e03b,amplification",
            "--clients",
            "10",
            "--duration-s",
            "1",
            "--freeze-start-s",
            "0.3",
            "--freeze-end-s",
            "0.5",
            "--recovery-end-s",
            "0.7",
            "--claim-run-dir",
            "--run-id",
            "mixed",
            "--shutdown-targets",
            "--chain-hops",
            &urls.join(","),
            "--out",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    let (out, err) = common::text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    let run = dir.join("mixed");
    assert!(run.join("e03b/client-A-seed42.jsonl").is_file(), "{err}");
    let bottom =
        std::fs::read_to_string(run.join("amplification/every-layer/layer-4-bottom.jsonl"))
            .unwrap();
    assert_eq!(bottom.lines().count(), 81);
    assert!(std::fs::read_to_string(run.join("amplification/every-layer/top.jsonl")).is_ok());
    assert_exits(&mut services);
    let mut exited = false;
    for _ in 0..250 {
        if dependency.0.try_wait().unwrap().is_some() {
            exited = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        exited,
        "the dependency still runs after the swarm shut it down"
    );
    // The analyzer (compose's `lab report`) reads both from the one folder.
    let o = lab()
        .args(["report", "--out"])
        .arg(&dir)
        .arg("e03b,amplification")
        .output()
        .unwrap();
    let (out, err) = common::text(&o);
    assert!(matches!(o.status.code(), Some(0 | 3)), "{out}\n{err}");
    assert!(out.contains("E03-B"), "{out}");
    assert_published(&out);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A chain scenario named beside another: one run folder holds both, each with its own
/// tables, and the exit code is the run's (here 0). Live and simulated.
fn mixed(command: &str) {
    let dir = common::temp("chains", &format!("mixed-{command}"));
    let o = lab()
        .args([
            command,
            "amplification,e03a",
            "--strategies",
            "C",
            "--duration-s",
            "2",
            "--out",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    assert_published(&out);
    // Live, E03-A's table first (its dependencies and swarm), the chain's after it;
    // simulated, in the order named.
    let e03a = out
        .find("E03-A")
        .unwrap_or_else(|| panic!("no E03-A table:\n{out}"));
    let chain = out
        .find("Checks: ours against a source's published figure, the model's, or a threshold:")
        .unwrap();
    assert_eq!(e03a < chain, command == "run", "{out}");
    let run = std::fs::read_link(dir.join("latest")).expect("OUT/latest");
    let base = if command == "run" {
        dir.join(&run)
    } else {
        dir.join(&run).join("simulated")
    };
    assert!(base.join("amplification/chain.md").is_file());
    assert!(base.join("e03a/report.md").is_file());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_chain_runs_beside_other_scenarios_live_and_simulated() {
    mixed("simulate");
    mixed("run");
}

/// `lab compare` of a chain prints its live tables, then its simulated ones; a sweep over a
/// list with a chain is refused before anything runs, naming the flag and the chain.
#[test]
fn compare_prints_a_chains_two_tables_and_a_sweep_refuses_it() {
    let dir = common::temp("chains", "compare");
    let o = lab()
        .args(["compare", "amplification", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert_eq!(
        out.matches(
            "Checks: ours against a source's published figure, the model's, or a threshold:"
        )
        .count(),
        2,
        "{out}"
    );
    let (live, simulated) = out.split_at(out.rfind("Checks: ours against").unwrap());
    assert!(live.contains("LIVE") || live.contains("live"), "{live}");
    assert!(simulated.contains("27"), "{simulated}");
    let _ = std::fs::remove_dir_all(&dir);

    let o = lab()
        .args([
            "simulate",
            "e03b,deadline",
            "--sweep",
            "queue=50,100",
            "--out",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--sweep") && err.contains("deadline is a chain scenario"),
        "{err}"
    );
    assert!(!dir.exists(), "nothing is written for refused input");
}
