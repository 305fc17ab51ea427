//! The simulated lab: the same core on a virtual clock, sweeps over parameters, and the
//! comparison of a live run with its simulation.

use anyhow::Context;
use e03_io::progress::ProgressMode;

use crate::args::{RunPlan, SimPlan};
use crate::outdir;

/// Exit code 0, 1 on an error, [`crate::live::CHECK_FAILED`] when a scenario's check against
/// its source's figures failed, or [`crate::gate::THRESHOLD_BROKEN`] when a threshold broke.
pub fn simulate(plan: &SimPlan) -> i32 {
    crate::gate::start();
    let code = match simulate_inner(plan) {
        Ok(code) => code,
        Err(e) => crate::outdir::fail("lab", &e),
    };
    crate::gate::finish(plan.junit.as_deref(), code)
}

/// The exit code of the judged scenarios: 0, 3 (a check failed) or 99 (a threshold broke).
fn simulate_inner(plan: &SimPlan) -> anyhow::Result<i32> {
    let mut worst = 0;
    // Checked in main before anything ran.
    let progress = crate::progress::mode_from_env().unwrap_or(ProgressMode::Auto);
    let claim = outdir::claim_undoable(&plan.out, &plan.choice)?;
    let run = claim.run.clone();
    eprintln!(
        "lab: run {} writes into {}",
        run.id,
        outdir::shown(&run.dir)
    );
    // Ctrl-C or SIGTERM: nothing half-written stays behind (see `on_stop`).
    let writing = crate::sim_stop::watch(claim, plan.out.clone())?;
    let mut out = std::io::stdout().lock();
    for (i, (scenario, params)) in plan.scenarios.iter().zip(&plan.params).enumerate() {
        let dir = run.dir.join("simulated").join(scenario.name());
        writing.begin(&dir);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        e03_io::scenario_files::keep(&dir, &plan.definitions[i]).map_err(anyhow::Error::msg)?;
        if let Some((_, text)) = &plan.policies {
            e03_io::scenario_files::keep_policies(&dir, text).map_err(anyhow::Error::msg)?;
        }
        if crate::chain::is_chain(scenario) {
            // Its variants on the simulator's chain model; it prints its own results line.
            let never = std::sync::atomic::AtomicBool::new(false);
            let whole = writing.hold();
            let passed = crate::chain::run_scenario(&run.dir, scenario, &never, false)?
                .expect("a simulation is never stopped");
            if !passed {
                worst = worst.max(crate::live::CHECK_FAILED);
            }
            drop(whole);
            writing.done(&dir);
            continue;
        }
        if plan.sweeps.is_empty() {
            let summary = crate::progress::watch(progress, scenario.name(), || {
                simulator::simulate(scenario.clone(), params)
            });
            // From here to the scenario's end a stop waits: the outputs are written whole.
            let _whole = writing.hold();
            crate::front::print_tables(&summary, &dir)?;
            analyzer::write_outputs(&dir, &summary)?;
            outdir::index_beside(&run.dir);
            // Checks and thresholds, judged as a live run's are.
            let code = crate::gate::judge(&summary, &dir, 0);
            worst = worst.max(code);
        } else {
            let label = format!("{} sweep", scenario.name());
            let result = crate::progress::watch(progress, &label, || {
                simulator::sweep(scenario.clone(), &plan.raw, &plan.sweeps)
            })?;
            let _whole = writing.hold();
            simulator::print_sweep(&mut out, &result)?;
            analyzer::outputs::write_csv_rows(
                &dir.join("sweep.csv"),
                &simulator::sweep_csv_rows(&result),
            )?;
        }
        use std::io::Write;
        out.flush()?;
        crate::front::results(&dir, &outdir::shown(&dir))?;
        writing.done(&dir);
    }
    Ok(worst)
}

/// Live, then simulated, then both side by side.
pub fn compare(plan: &SimPlan) -> i32 {
    let crate::args::ChildSettings {
        progress,
        answer_spin,
        metrics_listen,
    } = match crate::args::child_settings(&|k| std::env::var(k).ok()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("lab: {e}");
            return crate::EXIT_USAGE;
        }
    };
    let live_plan = RunPlan {
        junit: None,
        scenarios: plan.scenarios.clone(),
        scenario_args: plan.scenario_args.clone(),
        definitions: plan.definitions.clone(),
        params: plan.params.clone(),
        progress,
        answer_spin,
        metrics_listen,
        out: plan.out.clone(),
        sequential: plan.sequential,
        scenarios_at_once: 1,
        swarm_shards: plan.swarm_shards,
        upstream: None,
        choice: plan.choice.clone(),
        policies: plan.policies.clone(),
    };
    let claim = match outdir::claim_undoable(&plan.out, &plan.choice) {
        Ok(claim) => claim,
        Err(e) => {
            return crate::outdir::fail("lab", &e);
        }
    };
    let code = crate::live::run_in(&live_plan, &claim.run);
    if code != 0 {
        claim.abandon_if_empty(&plan.out);
        return code;
    }
    let run = claim.run;
    let mut out = std::io::stdout().lock();
    let mut code = 0;
    for scenario in &plan.scenarios {
        if crate::chain::is_chain(scenario) {
            // A chain's tables are the same live and simulated: its simulated ones follow.
            let never = std::sync::atomic::AtomicBool::new(false);
            match crate::chain::run_scenario(&run.dir, scenario, &never, false) {
                Ok(Some(true)) => {}
                Ok(_) => code = crate::live::CHECK_FAILED,
                Err(e) => return crate::outdir::fail("lab", &e),
            }
            continue;
        }
        let live = match analyzer::analyze_dir(
            &run.dir.join(scenario.name()),
            scenario.clone(),
            simulator::model_run,
        ) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("lab: {e}");
                return 1;
            }
        };
        // The model of the runs the logs recorded (their typed parameters: the plan's).
        if let Err(e) = simulator::Beside::of(&live).print_means(&mut out) {
            eprintln!("lab: {e}");
            return 1;
        }
    }
    code
}
