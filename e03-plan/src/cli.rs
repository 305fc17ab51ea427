//! Command-line flags and env vars for every run parameter (feature `cli`).
//!
//! Each parameter of [`PARAMS`] becomes a `--flag VALUE` that falls back to its env var; the
//! values actually given are collected, unparsed, into the raw map that
//! [`crate::Params::from_raw`] validates. A flag wins over its env var.

use std::collections::BTreeMap;

use clap::parser::ValueSource;
use clap::{Arg, ArgMatches, Command};

use crate::params::PARAMS;
use crate::{ParamError, Params};

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
    "E03_ANSWER_SPIN_US",
    "E03_SCENARIOS_AT_ONCE",
    "E03_SHARD",
    "E03_SWARM_SHARDS",
    "E03_SEND_LOGS",
    "E03_SWARM_REPORT",
    "E03_RUN_ID",
    "E03_OVERWRITE",
    "E03_HOST_RESULTS",
    "E03_ALLOW_ROOT",
    "E03_POLICIES",
    "E03_METRICS_LISTEN",
    "E03_PROGRESS",
    "E03_REALTIME",
    "E03_TIMELINE_START",
    "E03_TARGET_URL",
    "E03_TARGET_METHOD",
    "E03_OPERATIONS",
    "E03_AUDIT_PROBE",
    "E03_PROXY_API",
    "E03_WIRE_PROXY",
    "E03_WIRE_UPSTREAM",
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
            let v = m.get_one::<String>(p.env)?;
            // An empty env var is "not given": compose passes every parameter, empty when the
            // user left it unset, so that each scenario keeps its own settings.
            let from_env = m.value_source(p.env) == Some(ValueSource::EnvVariable);
            (!(from_env && v.trim().is_empty())).then(|| (p.env.to_string(), v.clone()))
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

/// Validates the parameters given (by flag or env var); an invalid value is reported under the
/// name the user typed: `--clients="-5"` for a flag, `E03_CLIENTS="-5"` for an env var.
pub fn params_from_matches(m: &ArgMatches) -> Result<Params, ParamError> {
    empty_flag(m)?;
    Params::from_raw(&raw_params(m)).map_err(|e| blame_given(m, e, &BTreeMap::new(), "its default"))
}

/// The parameters of one scenario: its file's settings under the values given by flag or env
/// var (see [`Params::for_scenario`]); errors name what the user typed, as
/// [`params_from_matches`] does.
pub fn params_for_scenario(
    m: &ArgMatches,
    scenario: &crate::Scenario,
) -> Result<Params, ParamError> {
    empty_flag(m)?;
    let def = scenario.def();
    let source = format!("{}'s setting", scenario.name());
    let params = Params::for_scenario(scenario, &raw_params(m))
        .map_err(|e| blame_given(m, e, &def.settings, &source))?;
    // A run that would end before a phase of its scenario is refused, naming what was typed.
    params
        .check_reaches(scenario)
        .map_err(|e| typed_name(m, e))?;
    Ok(params)
}

/// A parameter flag typed with an empty value (`--seeds ""`) is refused: it would silently run
/// the default. (An empty env var stays "not given" ([`raw_params`]): compose passes each
/// parameter so when the user left it unset.)
fn empty_flag(m: &ArgMatches) -> Result<(), ParamError> {
    for p in PARAMS {
        let typed = m.try_contains_id(p.env).unwrap_or(false)
            && m.value_source(p.env) == Some(ValueSource::CommandLine);
        if typed
            && m.get_one::<String>(p.env)
                .is_some_and(|v| v.trim().is_empty())
        {
            return Err(ParamError::Invalid {
                name: format!("--{}", p.flag),
                value: String::new(),
                accepts: format!(
                    "{} (an empty value; leave the flag out for the default)",
                    p.accepts
                ),
            });
        }
    }
    Ok(())
}

/// [`typed_name`], and for a broken ordering rule ([`crate::params::ORDER_RULES`]) whose later
/// parameter the user did not give but whose earlier one they did, the error names the one the
/// user gave and the value it conflicts with: `--freeze-start-s="12"` against E03_FREEZE_END_S
/// 10, `settings`' value (from `source`) or the parameter's default.
fn blame_given(
    m: &ArgMatches,
    e: ParamError,
    settings: &BTreeMap<String, String>,
    source: &str,
) -> ParamError {
    let given = raw_params(m);
    if let ParamError::Invalid { name, .. } = &e {
        let rule = crate::params::ORDER_RULES.iter().find(|(later, earlier)| {
            later == name && !given.contains_key(*later) && given.contains_key(*earlier)
        });
        if let Some((later, earlier)) = rule {
            let (spec_later, spec_earlier) = (
                crate::params::spec(later).expect("a parameter"),
                crate::params::spec(earlier).expect("a parameter"),
            );
            let (value, from) = match settings.get(*later) {
                Some(v) => (v.clone(), source),
                None => (spec_later.default.to_string(), "its default"),
            };
            let accepts = spec_earlier
                .accepts
                .split(", not ")
                .next()
                .unwrap_or_default();
            return typed_name(
                m,
                ParamError::Invalid {
                    name: earlier.to_string(),
                    value: given[*earlier].clone(),
                    accepts: format!(
                        "{accepts}, not after {later}, which is {value} here ({from}; \
                         --{} moves it)",
                        spec_later.flag
                    ),
                },
            );
        }
    }
    typed_name(m, e)
}

/// An invalid value named by its flag when the user typed the flag, by its env var otherwise.
fn typed_name(m: &ArgMatches, e: ParamError) -> ParamError {
    match e {
        ParamError::Invalid {
            name,
            value,
            accepts,
        } => {
            let typed = PARAMS
                .iter()
                .find(|p| p.env == name)
                .filter(|p| {
                    m.try_contains_id(p.env).unwrap_or(false)
                        && m.value_source(p.env) == Some(ValueSource::CommandLine)
                })
                .map_or(name, |p| format!("--{}", p.flag));
            ParamError::Invalid {
                name: typed,
                value,
                accepts,
            }
        }
        other => other,
    }
}

/// The known name closest to a misspelled one (`E03_CLIENT` -> `E03_CLIENTS`, `queu` ->
/// `queue`), if one is within two edits; env names for `E03_*`, flag names otherwise.
pub fn did_you_mean(name: &str) -> Option<String> {
    let upper = name.to_ascii_uppercase();
    let candidates: Vec<String> = if upper.starts_with("E03_") {
        PARAMS
            .iter()
            .map(|p| p.env.to_string())
            .chain(OTHER_ENV.iter().map(|s| s.to_string()))
            .collect()
    } else {
        PARAMS.iter().map(|p| p.flag.to_string()).collect()
    };
    let probe = if upper.starts_with("E03_") {
        upper
    } else {
        name.trim_start_matches('-').to_ascii_lowercase()
    };
    candidates
        .into_iter()
        .map(|c| (strsim::damerau_levenshtein(&probe, &c), c))
        .filter(|(d, c)| *d <= 2 && *c != name)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// The error for an `E03_*` env var that is neither a parameter nor a setting.
pub fn unknown_env_message(name: &str) -> String {
    let hint = did_you_mean(name).map_or(String::new(), |c| format!("did you mean {c}? "));
    format!(
        "unknown environment variable {name}: not a parameter or setting of the lab; {hint}\
         (accepted: the E03_* names listed by --help)"
    )
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

/// The name a program's messages start with (`NAME: ...`): `lab` for every part of the lab run
/// as `lab SUB` (its `args[0]` is `lab serve`, `lab swarm`, ...), else the binary's file name
/// (`dependency-service`, `client-swarm`), so one command speaks with one voice.
pub fn program_name(arg0: &std::ffi::OsStr) -> String {
    let arg0 = arg0.to_string_lossy();
    let first = arg0.split_whitespace().next().unwrap_or("");
    match std::path::Path::new(first).file_name() {
        Some(n) if n == "lab" => "lab".into(),
        Some(n) => n.to_string_lossy().into_owned(),
        None => "lab".into(),
    }
}

/// What a failed clap parse prints and its exit code: help and version as clap renders them
/// (stdout, 0); a usage error as `NAME: message` with clap's usage and hint under it (stderr,
/// 2), clap's own `error:` replaced by the program's name as every other error of it reads.
pub fn clap_message(name: &str, e: &clap::Error) -> (String, i32) {
    if !e.use_stderr() {
        return (e.render().to_string(), 0);
    }
    (format!("{name}: {}", clap_body(e)), 2)
}

/// A clap usage error's text without clap's own `error: ` (for a caller that adds its prefix).
pub fn clap_body(e: &clap::Error) -> String {
    let text = e.render().to_string();
    text.strip_prefix("error: ").unwrap_or(&text).to_string()
}

/// [`clap_message`] printed where it belongs (stdout or stderr); returns the exit code.
pub fn clap_exit(name: &str, e: &clap::Error) -> i32 {
    let (text, code) = clap_message(name, e);
    if code == 0 {
        print!("{text}");
    } else {
        eprint!("{text}");
    }
    code
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
    fn a_bad_value_is_reported_under_the_name_the_user_typed() {
        let cmd = with_param_args(Command::new("t"));
        let m = cmd.try_get_matches_from(["t", "--clients", "-5"]).unwrap();
        let e = params_from_matches(&m).unwrap_err().to_string();
        assert!(e.starts_with("invalid --clients=\"-5\""), "{e}");
        assert!(!e.contains("E03_CLIENTS"), "{e}");
    }

    #[test]
    fn misspelled_names_get_a_suggestion() {
        assert_eq!(did_you_mean("E03_CLIENT").as_deref(), Some("E03_CLIENTS"));
        assert_eq!(did_you_mean("E03_WORKRES").as_deref(), Some("E03_WORKERS"));
        assert_eq!(did_you_mean("E03_OUTT").as_deref(), Some("E03_OUT"));
        assert_eq!(did_you_mean("queu").as_deref(), Some("queue"));
        assert_eq!(did_you_mean("E03_SOMETHING_ELSE"), None);
        let m = unknown_env_message("E03_CLIENT");
        assert!(m.contains("did you mean E03_CLIENTS?"), "{m}");
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

    #[test]
    fn a_part_run_as_lab_sub_speaks_as_lab_and_a_binary_as_itself() {
        for (arg0, name) in [
            ("lab serve", "lab"),
            ("lab", "lab"),
            ("/usr/local/bin/lab", "lab"),
            ("dependency-service", "dependency-service"),
            ("/x/target/debug/client-swarm", "client-swarm"),
        ] {
            assert_eq!(program_name(std::ffi::OsStr::new(arg0)), name, "{arg0}");
        }
    }

    #[test]
    fn a_usage_error_starts_with_the_program_name_and_help_is_left_alone() {
        let cmd = || Command::new("lab run").arg(Arg::new("x").long("x"));
        let e = cmd()
            .try_get_matches_from(["lab run", "--bogus"])
            .unwrap_err();
        let (text, code) = clap_message("lab", &e);
        assert_eq!(code, 2);
        assert!(
            text.starts_with("lab: unexpected argument '--bogus'"),
            "{text}"
        );
        assert!(!text.contains("error:"), "{text}");
        assert!(text.contains("Usage: lab run"), "{text}");
        let e = cmd()
            .try_get_matches_from(["lab run", "--help"])
            .unwrap_err();
        let (text, code) = clap_message("lab", &e);
        assert_eq!(code, 0);
        assert!(text.starts_with("Usage: lab run"), "{text}");
    }
}
