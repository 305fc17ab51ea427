//! A swarm started with `--plan FILE` reads its typed plan and no raw parameter map (issue 50,
//! "parsed once"): `lab swarm`'s child resolves its command line once
//! ([`client_swarm::resolve_swarm`]), and everything it needs of the plan (the scenarios,
//! whether a stopped run is reported) is read from the typed result.

use std::ffi::OsString;

use e03_plan::params::raw_reads;
use e03_plan::{Params, Scenario};

#[test]
fn a_child_started_with_plan_reads_no_raw_parameter_map() {
    let dir = std::env::temp_dir().join(format!("e03-plan-reads-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Made at the edge, before counting: the one read of the user's input.
    let params = Params::for_scenario(
        &Scenario::e03b(),
        &[("E03_STRATEGIES".to_string(), "B,C".to_string())].into(),
    )
    .unwrap();
    let plan = client_swarm::SwarmRunPlan {
        targets: ["B", "C"]
            .iter()
            .map(|s| client_swarm::Target {
                replica: 0,
                strategy: (*s).into(),
                work_url: "http://127.0.0.1:9".into(),
                control_url: "http://127.0.0.1:9".into(),
            })
            .collect(),
        scenarios: vec![client_swarm::PlannedScenario {
            definition: Scenario::e03b().def().clone(),
            text: String::new(),
            params: params.clone(),
        }],
        out: dir.join("out"),
        claim: None,
        shutdown_targets: false,
        chain_hops: Vec::new(),
        policies: None,
        metrics_listen: None,
        progress: client_swarm::progress::ProgressMode::Off,
        host: client_swarm::HostSettings::default(),
        report_when_stopped: true,
        shard: None,
        send_logs: None,
    };
    let file = dir.join("swarm.json");
    std::fs::write(&file, serde_json::to_string(&plan).unwrap()).unwrap();
    let args: Vec<OsString> = vec!["lab swarm".into(), "--plan".into(), file.into()];
    // The built-in scenarios are read once per process when first named; not the plan's.
    assert!(Scenario::builtins().len() > 20);

    let before = raw_reads();
    let command = client_swarm::resolve_swarm(&args).unwrap();
    assert_eq!(raw_reads(), before, "the child read a raw parameter map");
    assert!(command.chains.is_none());
    let swarm = command.swarm.unwrap();
    assert_eq!(swarm.scenarios(), [Scenario::e03b()]);
    assert!(swarm.report_when_stopped());
    // The same plan, seen as a plan (`resolve_plan`, for a look at it): no raw read either.
    let read = client_swarm::resolve_plan(&args).unwrap();
    assert_eq!(raw_reads(), before, "the child read a raw parameter map");
    assert_eq!(read.scenarios[0].params, params);
    assert_eq!(read.out, dir.join("out"));
    assert!(!dir.join("out").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
