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
pub fn swarm(args: &[std::ffi::OsString]) -> i32 {
    let child = crate::child_args("lab swarm", args);
    // Chain scenarios run through the hop services (compose's hop-N; `--chain-hops`), after
    // the others, as `lab run` runs them.
    if let Some((_, scenarios)) = client_swarm::out_and_scenarios(&child) {
        if scenarios.iter().all(crate::chain::is_chain) {
            return crate::chain::swarm(&child, true, None);
        }
        if scenarios.iter().any(crate::chain::is_chain) {
            return mixed_swarm(&child);
        }
    }
    ordinary_swarm(child)
}

/// `lab swarm` with a list that mixes chain scenarios with others (compose's
/// `E03_SCENARIOS=e03b,amplification`): the others first, as one swarm run against the
/// dependencies, which claims the run directory; then the chains in that directory through the
/// hop services. The dependencies and the hops are shut down at the very end (with
/// `--shutdown-targets`), whatever happened; the chains do not run after a failed or stopped
/// first part, and its exit code is the command's.
fn mixed_swarm(child: &[std::ffi::OsString]) -> i32 {
    let value = client_swarm::scenarios_value(child).unwrap_or_default();
    let (mut chains, mut others) = (Vec::new(), Vec::new());
    for token in value.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        // `all` is E03-A and E03-B; a file is one scenario: a name is one kind or the other.
        let chain = e03_io::scenario_files::resolve(token)
            .is_ok_and(|found| found.iter().any(|a| crate::chain::is_chain(&a.scenario)));
        if chain {
            chains.push(token);
        } else {
            others.push(token);
        }
    }
    let first = with_args(
        child,
        &["--shutdown-targets", "--scenarios"],
        &["--scenarios".into(), others.join(",")],
    );
    let code = ordinary_swarm(first.clone());
    // The run directory the first part claimed (or `--out`).
    let claimed = client_swarm::out_and_scenarios(&first).map(|(dir, _)| dir);
    let second = with_args(
        child,
        &["--scenarios"],
        &["--scenarios".into(), chains.join(",")],
    );
    let chain_code = crate::chain::swarm(&second, code == 0 && claimed.is_some(), claimed);
    if code != 0 {
        code
    } else {
        chain_code
    }
}

/// `args` without the flags `drop` (with their values, given as `--flag V` or `--flag=V`;
/// `--claim-run-dir` and `--shutdown-targets` take none), then `add`.
fn with_args(
    args: &[std::ffi::OsString],
    drop: &[&str],
    add: &[String],
) -> Vec<std::ffi::OsString> {
    let bare = ["--claim-run-dir", "--shutdown-targets"];
    let mut out = Vec::new();
    let mut skip_value = false;
    for (i, a) in args.iter().enumerate() {
        if skip_value {
            skip_value = false;
            continue;
        }
        let text = a.to_string_lossy();
        let name = text.split('=').next().unwrap_or_default();
        if i > 0 && drop.contains(&name) {
            skip_value = !bare.contains(&name) && !text.contains('=');
            continue;
        }
        out.push(a.clone());
    }
    out.extend(add.iter().map(std::ffi::OsString::from));
    out
}

/// `lab swarm` with no chain scenario: the swarm itself, and what it logged analysed when a
/// signal stopped it.
fn ordinary_swarm(child: Vec<std::ffi::OsString>) -> i32 {
    // `lab run` analyses after its swarm itself: its plan says so.
    let report = client_swarm::report_when_stopped(&child);
    let code = client_swarm::main_entry(child.clone());
    if code == EXIT_STOPPED && report {
        if let Some((out, scenarios)) = client_swarm::out_and_scenarios(&child) {
            eprintln!("lab: stopped; analysing what the logs hold (marked incomplete)");
            let existing: Vec<_> = scenarios
                .into_iter()
                .filter(|s| out.join(s.name()).is_dir())
                .collect();
            if let Err(e) = report_scenarios(&out, &existing) {
                eprintln!("lab: {}", chain(&e));
            }
        }
    }
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_args_drops_flags_with_their_values_and_appends() {
        let args: Vec<std::ffi::OsString> = [
            "lab swarm",
            "--scenarios",
            "e03b,deadline",
            "--claim-run-dir",
            "--out=/r",
            "--shutdown-targets",
            "--run-id",
            "x",
        ]
        .iter()
        .map(Into::into)
        .collect();
        let got = with_args(
            &args,
            &["--scenarios", "--shutdown-targets", "--out"],
            &["--scenarios".into(), "e03b".into()],
        );
        let want: Vec<std::ffi::OsString> = [
            "lab swarm",
            "--claim-run-dir",
            "--run-id",
            "x",
            "--scenarios",
            "e03b",
        ]
        .iter()
        .map(Into::into)
        .collect();
        assert_eq!(got, want);
    }
}
