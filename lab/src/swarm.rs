//! `lab swarm`: the client swarm as compose runs it (`lab run` starts it as a child with its
//! plan). A list of ordinary scenarios runs as one swarm; chain scenarios run through the hop
//! services ([`crate::chain::swarm`]); a list that mixes both runs the others first, then the
//! chains in the run directory they claimed. A swarm stopped by a signal still has its logs
//! analysed, marked incomplete.

use crate::errors::chain;

use crate::live::report_scenarios;
use crate::EXIT_STOPPED;

/// `lab swarm`: the client swarm; if a signal stopped it, the analyzer still writes what the
/// logs hold, marked incomplete (in compose the analyzer container never starts after Ctrl-C).
/// The command line is resolved once ([`client_swarm::resolve_swarm`]) into the ordinary
/// scenarios and the chain scenarios; chain scenarios run through the hop services (compose's
/// hop-N; `--chain-hops`), after the others, as `lab run` runs them.
pub fn swarm(args: &[std::ffi::OsString]) -> i32 {
    let child = crate::child_args("lab swarm", args);
    let command = match client_swarm::resolve_swarm(&child) {
        Ok(c) => c,
        Err(refused) => return refused.exit(),
    };
    match (command.swarm, command.chains) {
        (Some(swarm), None) => ordinary_swarm(swarm).code,
        (None, Some(chains)) => crate::chain::swarm(&chains, true, None),
        (Some(swarm), Some(chains)) => mixed_swarm(swarm, &chains),
        (None, None) => 0,
    }
}

/// `lab swarm` with a list that mixes chain scenarios with others (compose's
/// `E03_SCENARIOS=e03b,amplification`): the others first, as one swarm run against the
/// dependencies, which claims the run directory; then the chains in that directory through the
/// hop services. The dependencies and the hops are shut down at the very end (with
/// `--shutdown-targets`), whatever happened; the chains do not run after a failed or stopped
/// first part, and its exit code is the command's.
fn mixed_swarm(swarm: client_swarm::Swarm, chains: &client_swarm::ChainArgs) -> i32 {
    let first = ordinary_swarm(swarm.keeping_targets_up());
    let chain_code = crate::chain::swarm(chains, first.code == 0, Some(first.run_dir));
    if first.code != 0 {
        first.code
    } else {
        chain_code
    }
}

/// `lab swarm` with no chain scenario: the swarm itself, and what it logged analysed when a
/// signal stopped it.
fn ordinary_swarm(swarm: client_swarm::Swarm) -> client_swarm::SwarmEnd {
    // `lab run` analyses after its swarm itself: its plan says so.
    let report = swarm.report_when_stopped();
    let scenarios = swarm.scenarios().to_vec();
    let end = swarm.run();
    if end.code == EXIT_STOPPED && report {
        eprintln!("lab: stopped; analysing what the logs hold (marked incomplete)");
        let existing: Vec<_> = scenarios
            .into_iter()
            .filter(|s| end.run_dir.join(s.name()).is_dir())
            .collect();
        if let Err(e) = report_scenarios(&end.run_dir, &existing) {
            eprintln!("lab: {}", chain(&e));
        }
    }
    end
}
