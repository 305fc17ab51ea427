//! Command-line flags and env vars for every run parameter (feature `cli`).
//!
//! Each parameter of [`PARAMS`] becomes a `--flag VALUE` that falls back to its env var; the
//! values actually given are collected, unparsed, into the raw map that
//! [`crate::Params::from_raw`] validates. A flag wins over its env var.

use std::collections::BTreeMap;

use clap::{Arg, ArgMatches, Command};

use crate::params::PARAMS;

/// Env vars of the lab that are not run parameters (addresses, directories, scenario).
pub const OTHER_ENV: &[&str] = &[
    "E03_LISTEN",
    "E03_CONTROL_LISTEN",
    "E03_LOG_DIR",
    "E03_OUT",
    "E03_SCENARIO",
    "E03_SCENARIOS",
    "E03_TARGETS",
    "E03_UID",
    "E03_GID",
    "E03_SEQUENTIAL",
    "E03_SWARM_REPORT",
];

/// Adds one flag per parameter to `cmd`.
pub fn with_param_args(mut cmd: Command) -> Command {
    for p in PARAMS {
        let help = format!(
            "{} [default: {}] (accepts {})",
            p.help,
            if p.default.is_empty() {
                "unset"
            } else {
                p.default
            },
            p.accepts
        );
        cmd = cmd.arg(
            Arg::new(p.env)
                .long(p.flag)
                .env(p.env)
                .value_name("VALUE")
                .allow_hyphen_values(true)
                .help(help)
                .help_heading("Run parameters"),
        );
    }
    cmd
}

/// The parameters given (by flag or env var), unparsed, keyed by env name.
pub fn raw_params(m: &ArgMatches) -> BTreeMap<String, String> {
    PARAMS
        .iter()
        .filter_map(|p| {
            m.get_one::<String>(p.env)
                .map(|v| (p.env.to_string(), v.clone()))
        })
        .collect()
}

/// Env vars that start with `E03_` but are neither a parameter nor another known setting:
/// almost always a typo, which must not silently run the defaults.
pub fn unknown_env<I: IntoIterator<Item = String>>(names: I) -> Vec<String> {
    names
        .into_iter()
        .filter(|n| n.starts_with("E03_"))
        .filter(|n| !PARAMS.iter().any(|p| p.env == n) && !OTHER_ENV.contains(&n.as_str()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_are_collected_by_env_name() {
        let cmd = with_param_args(Command::new("t"));
        let m = cmd
            .try_get_matches_from(["t", "--workers", "12", "--seed", "7"])
            .unwrap();
        let raw = raw_params(&m);
        assert_eq!(raw.get("E03_WORKERS").map(String::as_str), Some("12"));
        assert_eq!(raw.get("E03_SEED").map(String::as_str), Some("7"));
    }

    #[test]
    fn typos_in_env_names_are_found() {
        let names = ["E03_WORKER", "E03_WORKERS", "E03_LISTEN", "PATH"].map(String::from);
        assert_eq!(unknown_env(names), vec!["E03_WORKER".to_string()]);
    }
}
