//! One typed plan per child: `lab serve --plan FILE` and `lab swarm --plan FILE`, real
//! processes, started in an environment full of `E03_*` variables that contradict the plan
//! (other seed, fail rate, clients, strategies, policies file, targets, output directory, even
//! unknown names and invalid values). The children run the plan: the logs hold the plan's seed,
//! strategy and parameters, and nothing goes where the environment points.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use common::{lab, temp, text};
use e03_plan::{Params, Scenario};

/// The environment a child must ignore: every value contradicts the plan, some are invalid
/// (a flag-and-env child would refuse to start), one is no setting at all.
fn conflicting_env(cmd: &mut Command, elsewhere: &Path) {
    cmd.envs([
        ("E03_SEED", "7"),
        ("E03_SEEDS", "1-3"),
        ("E03_FAIL_RATE", "0.9"),
        ("E03_CLIENTS", "999"),
        ("E03_DURATION_S", "600"),
        ("E03_STRATEGIES", "D"),
        ("E03_WORKERS", "0"),
        ("E03_SCENARIOS", "e03a"),
        ("E03_SCENARIO", "e03a"),
        ("E03_TARGETS", "D=http://127.0.0.1:9@http://127.0.0.1:9"),
        ("E03_POLICIES", "/nonexistent/policies.toml"),
        ("E03_PROGRESS", "fancy"),
        ("E03_ANSWER_SPIN_US", "many"),
        ("E03_LISTEN", "nope"),
        ("E03_METRICS_LISTEN", "nope"),
        ("E03_OVERWRITE", "0"),
        ("E03_UID", "0"),
        ("E03_NOT_A_SETTING", "1"),
    ]);
    cmd.env("E03_OUT", elsewhere).env("E03_LOG_DIR", elsewhere);
}

/// The `run_start` record (first line) of a JSONL log: its data.
fn run_start(path: &Path) -> serde_json::Value {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let first: serde_json::Value =
        serde_json::from_str(text.lines().next().expect("a record")).expect("a JSON record");
    assert_eq!(first["type"], "run_start", "{first}");
    first["data"].clone()
}

/// The `run_start` record's `params` map (env name to value).
fn run_start_params(path: &Path) -> serde_json::Value {
    run_start(path)["params"].clone()
}

#[test]
fn children_run_their_plan_not_the_environment() {
    let dir = temp("plan", "children");
    let out = dir.join("run");
    let elsewhere = dir.join("elsewhere");
    std::fs::create_dir_all(&out).unwrap();

    // The service's plan: loopback, logs into the run directory, runs only by control call.
    let serve_plan = dependency_service::ServePlan {
        listen: "127.0.0.1:0".parse().unwrap(),
        control_listen: "127.0.0.1:0".parse().unwrap(),
        log_dir: out.clone(),
        scenario: None,
        scenario_text: None,
        policies_text: None,
        timeline_start: Default::default(),
        params: Params::default(),
        answer_spin: std::time::Duration::ZERO,
        wire_front: false,
        proxy_api: None,
        wire_proxy: None,
        send_logs: None,
    };
    let serve_file = dir.join("serve.json");
    std::fs::write(&serve_file, serde_json::to_string(&serve_plan).unwrap()).unwrap();
    let mut serve = lab();
    serve.arg("serve").arg("--plan").arg(&serve_file);
    conflicting_env(&mut serve, &elsewhere);
    let mut service = serve
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("lab serve starts");
    let mut line = String::new();
    BufReader::new(service.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = |key: &str| {
        line.split_whitespace()
            .find_map(|p| p.strip_prefix(key))
            .unwrap_or_else(|| panic!("lab serve --plan did not start: {line:?}"))
            .to_string()
    };
    let (work, control) = (addr("work="), addr("control="));

    // The swarm's plan: e03b, seed 11, strategy B, 4 clients for 1.5 s, no faults.
    let raw: BTreeMap<String, String> = [
        ("E03_SEED", "11"),
        ("E03_STRATEGIES", "B"),
        ("E03_CLIENTS", "4"),
        ("E03_DURATION_S", "1.5"),
        ("E03_FREEZE_START_S", "0.3"),
        ("E03_FREEZE_END_S", "0.5"),
        ("E03_RECOVERY_END_S", "0.7"),
        ("E03_THINK_MIN_MS", "100"),
        ("E03_THINK_MAX_MS", "200"),
        ("E03_FAIL_RATE", "0.0"),
        ("E03_WORKERS", "6"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let params = Params::for_scenario(&Scenario::e03b(), &raw).unwrap();
    let swarm_plan = client_swarm::SwarmRunPlan {
        targets: vec![client_swarm::Target {
            replica: 0,
            strategy: "B".into(),
            work_url: format!("http://{work}"),
            control_url: format!("http://{control}"),
        }],
        scenarios: vec![client_swarm::PlannedScenario {
            definition: Scenario::e03b().def().clone(),
            text: "# e03b, kept by the plan test\n".into(),
            params,
        }],
        out: out.clone(),
        claim: None,
        shutdown_targets: true,
        chain_hops: Vec::new(),
        policies: None,
        metrics_listen: None,
        progress: client_swarm::progress::ProgressMode::Off,
        host: client_swarm::HostSettings::default(),
        report_when_stopped: false,
        shard: None,
        send_logs: None,
    };
    let swarm_file = dir.join("swarm.json");
    std::fs::write(&swarm_file, serde_json::to_string(&swarm_plan).unwrap()).unwrap();
    let mut swarm = lab();
    swarm.arg("swarm").arg("--plan").arg(&swarm_file);
    conflicting_env(&mut swarm, &elsewhere);
    let done = swarm.output().expect("lab swarm runs");
    let (_, stderr) = text(&done);
    // The service was asked to shut down by the swarm (the plan's `shutdown_targets`).
    let served = service.wait_with_output().expect("lab serve exits");
    let service_err = String::from_utf8_lossy(&served.stderr);
    assert_eq!(
        done.status.code(),
        Some(0),
        "swarm: {stderr}\nservice: {service_err}"
    );
    assert!(served.status.success(), "service: {service_err}");
    assert!(
        stderr.contains("e03b seed 11 done"),
        "the plan's scenario and seed ran: {stderr}"
    );

    // The plan's run, and nothing else: seed 11 (not 7 or 1-3), strategy B (not D), e03b (not
    // e03a), in the plan's directory (not E03_OUT/E03_LOG_DIR).
    let client_log = out.join("e03b/client-B-seed11.jsonl");
    let server_log = out.join("e03b/server-B-seed11.jsonl");
    for (log, side) in [(&client_log, "client"), (&server_log, "server")] {
        let p = run_start_params(log);
        assert_eq!(p["E03_SEED"], "11", "{side}: {p}");
        assert_eq!(p["E03_STRATEGIES"], "B", "{side}: {p}");
        assert_eq!(p["E03_CLIENTS"], "4", "{side}: {p}");
        assert_eq!(p["E03_FAIL_RATE"], "0", "{side}: {p}");
        assert_eq!(p["E03_WORKERS"], "6", "{side}: {p}");
        assert_eq!(p["E03_DURATION_S"], "1.5", "{side}: {p}");
        // The same parameters typed: the plan's, as the analyzer reads them back.
        let typed: Params = serde_json::from_value(run_start(log)["typed_params"].clone())
            .unwrap_or_else(|e| panic!("{side}: typed_params: {e}"));
        assert_eq!(typed, swarm_plan.scenarios[0].params, "{side}");
    }
    let files: Vec<String> = std::fs::read_dir(out.join("e03b"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        files
            .iter()
            .all(|f| !f.contains("seed7") && !f.contains("-D-") && !f.contains("seed1.")),
        "{files:?}"
    );
    assert!(!out.join("e03a").exists(), "E03_SCENARIOS was read");
    assert!(!elsewhere.exists(), "E03_OUT or E03_LOG_DIR was read");
    // The clients' attempts: 4 clients (not 999) with 100-200 ms think times for 1.5 s.
    let attempts = std::fs::read_to_string(&client_log)
        .unwrap()
        .lines()
        .filter(|l| l.contains("\"type\":\"attempt\""))
        .count();
    assert!(
        (4..=200).contains(&attempts),
        "4 clients for 1.5 s, not 999: {attempts} attempts"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_plan_file_is_the_whole_setting_and_is_checked() {
    let dir = temp("plan", "checked");
    // `--plan` with another flag: refused, exit 2.
    let o = lab()
        .args(["swarm", "--plan", "x.json", "--seed", "3"])
        .output()
        .unwrap();
    let (_, e) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("--plan FILE takes no other flag"), "{e}");
    // A plan whose typed parameters break a rule: refused, naming the parameter.
    let mut p = serde_json::to_value(client_swarm::SwarmRunPlan {
        targets: vec![client_swarm::Target {
            replica: 0,
            strategy: "A".into(),
            work_url: "http://127.0.0.1:9".into(),
            control_url: "http://127.0.0.1:9".into(),
        }],
        scenarios: vec![client_swarm::PlannedScenario {
            definition: Scenario::e03b().def().clone(),
            text: String::new(),
            params: Params::for_scenario(
                &Scenario::e03b(),
                &[("E03_STRATEGIES".to_string(), "A".to_string())].into(),
            )
            .unwrap(),
        }],
        out: dir.join("out"),
        claim: None,
        shutdown_targets: false,
        chain_hops: Vec::new(),
        policies: None,
        metrics_listen: None,
        progress: client_swarm::progress::ProgressMode::Off,
        host: client_swarm::HostSettings::default(),
        report_when_stopped: false,
        shard: None,
        send_logs: None,
    })
    .unwrap();
    p["scenarios"][0]["params"]["swarm"]["clients"] = serde_json::json!(0);
    let file = dir.join("bad.json");
    std::fs::write(&file, p.to_string()).unwrap();
    let o = lab()
        .arg("swarm")
        .arg("--plan")
        .arg(&file)
        .output()
        .unwrap();
    let (_, e) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains("invalid --plan") && e.contains("E03_CLIENTS"),
        "{e}"
    );
    assert!(!dir.join("out").exists(), "nothing written: {e}");
    let o = lab()
        .args(["serve", "--plan"])
        .arg(dir.join("missing.json"))
        .output()
        .unwrap();
    let (_, e) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains("invalid --plan") && e.contains("cannot read it"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
