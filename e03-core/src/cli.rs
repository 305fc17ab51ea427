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
    "E03_RUN_ID",
    "E03_OVERWRITE",
    "E03_HOST_RESULTS",
    "E03_ALLOW_ROOT",
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

/// An error and its causes on one line, `outer: cause: cause`, leaving out a cause whose text the
/// message already holds (error types that print their source inside their own message would
/// otherwise show it twice: `Permission denied (os error 13): Permission denied (os error 13)`).
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let c = cause.to_string();
        if !text.contains(&c) {
            text.push_str(": ");
            text.push_str(&c);
        }
        source = cause.source();
    }
    text
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

    #[derive(Debug)]
    struct Outer(std::io::Error);
    impl std::fmt::Display for Outer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "writing x.jsonl: {}", self.0)
        }
    }
    impl std::error::Error for Outer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn a_cause_is_printed_once() {
        let e = Outer(std::io::Error::from(std::io::ErrorKind::PermissionDenied));
        let text = error_chain(&e);
        assert_eq!(text.matches("permission denied").count(), 1, "{text}");
        assert!(text.starts_with("writing x.jsonl: "), "{text}");
    }
}
