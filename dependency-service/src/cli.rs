//! The command line: raw arguments and env vars, then a validated [`Plan`], then the service.
//!
//! ```text
//! dependency-service [--listen ADDR] [--control-listen ADDR] [--log-dir DIR] [--scenario NAME|FILE|none]
//!                    [--timeline-start process|first-request] [--proxy-api ADDR]
//!                    [run-parameter flags]
//! dependency-service health [URL]
//! ```
//!
//! Every bad value is reported on one line naming the flag and env var, the value and what is
//! accepted, with exit code 2 and nothing written. `health` is the Docker healthcheck of an
//! image with no curl: exit 0 on a 200 within 2 s, else 1.

use std::ffi::OsString;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Arg, ArgMatches, Command};
use e03_io::scenario_files::Policies;
use e03_plan::strategy_table::StrategySpec;
use e03_plan::{ParamError, Params, Scenario};

use crate::listen::shutdown_signal;
use crate::server::{serve, ServiceOptions};
use crate::service::StandaloneRun;

pub const DEFAULT_HEALTH_URL: &str = "http://127.0.0.1:8081/health";
const HEALTH_TIMEOUT: Duration = Duration::from_secs(2);

/// A value on the command line or in the environment that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("invalid --{flag} (env {env}) value {value:?}: expected {accepts}")]
    Setting {
        flag: &'static str,
        env: &'static str,
        value: String,
        accepts: &'static str,
    },
    #[error("{0}")]
    Param(String),
    #[error("{}", e03_plan::cli::unknown_env_message(.0))]
    UnknownEnv(String),
    /// `--plan FILE` that cannot be read (`error`: the system's reason).
    #[error("invalid --plan {:?}: cannot read it: {error}", path.display())]
    PlanRead {
        path: std::path::PathBuf,
        error: String,
    },
    /// `--plan FILE` that is not a plan (`error`: the JSON reader's message).
    #[error("invalid --plan {:?}: {error}", path.display())]
    PlanJson {
        path: std::path::PathBuf,
        error: String,
    },
    /// `--plan` with other flags.
    #[error("--plan FILE takes no other flag: the plan is the whole setting")]
    PlanAlone,
}

/// What the command line asks for, validated: the service's plan. `lab run` writes it as JSON
/// and starts `lab serve --plan FILE`, which reads no other flag and no `E03_*` variable; the
/// runs themselves come by control call with their typed parameters ([`e03_plan::control::StartRun`]).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Plan {
    pub listen: SocketAddr,
    pub control_listen: SocketAddr,
    pub log_dir: PathBuf,
    /// Scenario of the run started at process start; `None` (`--scenario none`): no run until a
    /// control call starts one (the lab and compose start every run by control call).
    pub scenario: Option<Scenario>,
    /// A scenario file's text (`--scenario FILE`), kept beside the standalone log as
    /// `scenario.toml` so `lab analyze` knows the scenario; `None` for a built-in one.
    #[serde(default)]
    pub scenario_text: Option<String>,
    /// The user's policy file's text (`E03_POLICIES`) that a scenario file was read with, kept
    /// beside it as `policies.toml` (the file may name its strategies).
    #[serde(default)]
    pub policies_text: Option<String>,
    /// When the standalone run's timeline starts (`--timeline-start`).
    #[serde(default)]
    pub timeline_start: TimelineStart,
    pub params: Params,
    /// `--answer-spin-us`: how long before each due instant the timer spins.
    pub answer_spin: std::time::Duration,
    /// A fault proxy in front of the work listener, for runs with wire phases (issue 27,
    /// [`crate::wire_front`]): set by the lab for a lane whose scenarios have them, and for a
    /// standalone run whose scenario has them.
    #[serde(default)]
    pub wire_front: bool,
    /// `--proxy-api ADDR`: the fault proxy in front, with its Toxiproxy API served here, so a
    /// user's Toxiproxy client can add faults of its own during a run (implies `wire_front`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_api: Option<SocketAddr>,
    /// `--wire-proxy URL --wire-upstream HOST:PORT`: the fault proxy is a `lab proxy` of its
    /// own (compose's `wire-*` services), in front of this dependency for runs with wire
    /// phases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wire_proxy: Option<crate::wire_front::RemoteFront>,
    /// `--send-logs URL` (`E03_SEND_LOGS`): the analyzer's collector, to which each run's logs
    /// go when the run ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_logs: Option<String>,
}

/// Default of `--answer-spin-us`: 200 µs (see [`ANSWER_SPIN_HELP`]).
pub const ANSWER_SPIN_US: &str = "200";

/// Most µs of `--answer-spin-us`.
const MAX_ANSWER_SPIN_US: u64 = 5_000;

const ANSWER_SPIN_HELP: &str = "µs before each of the schedule's due instants (ends of work, \
     late answers, freeze edges) during which the timer thread spins instead of sleeping, so \
     answers leave on time; it costs CPU, up to this much per due instant (0: sleep; at most \
     5000). `lab run` sets 0 when several scenarios run at once";

pub fn command() -> Command {
    let cmd = Command::new("dependency-service")
        .about("The E03 dependency: a bounded worker pool that freezes on a timeline")
        .after_help(
            "Or: --plan FILE alone serves the plan in FILE (JSON, as `lab run` writes it for its \
             dependencies) and reads no other flag and no E03_* variable.",
        )
        .arg(
            Arg::new("listen")
                .long("listen")
                .env("E03_LISTEN")
                .default_value("127.0.0.1:8080")
                .value_name("ADDR")
                .help(
                    "Work endpoint address (GET /work); loopback unless asked: a fault injector \
                     is not reachable from the network by default (compose passes 0.0.0.0:8080)",
                ),
        )
        .arg(
            Arg::new("control-listen")
                .long("control-listen")
                .env("E03_CONTROL_LISTEN")
                .default_value("127.0.0.1:8081")
                .value_name("ADDR")
                .help("Control endpoint address (POST /control/start, /control/stop)"),
        )
        .arg(
            Arg::new("log-dir")
                .long("log-dir")
                .env("E03_LOG_DIR")
                .default_value("logs")
                .value_name("DIR")
                .help("Directory of the run logs"),
        )
        .arg(
            Arg::new("send-logs")
                .long("send-logs")
                .env(e03_io::ship::SEND_LOGS_ENV)
                .value_name("URL")
                .help(e03_io::ship::SEND_LOGS_HELP),
        )
        .arg(
            Arg::new("answer-spin-us")
                .long("answer-spin-us")
                .env("E03_ANSWER_SPIN_US")
                .default_value(ANSWER_SPIN_US)
                .value_name("US")
                .help(ANSWER_SPIN_HELP),
        )
        .arg(
            Arg::new("scenario")
                .long("scenario")
                .env("E03_SCENARIO")
                .default_value("e03b")
                .value_name("NAME|FILE|none")
                .help(
                    "Scenario of the run started without a control call: a built-in scenario \
                     with a single dependency (`lab list`), or a scenario file; its own \
                     parameters apply under the flags given (none: wait for a control call)",
                ),
        )
        .arg(
            Arg::new("timeline-start")
                .long("timeline-start")
                .env("E03_TIMELINE_START")
                .default_value("process")
                .value_name("process|first-request")
                .help(
                    "When that run's timeline starts: at the process's start, or at the first \
                     request it receives (so a client started later still meets every phase)",
                ),
        )
        .arg(
            Arg::new("proxy-api")
                .long("proxy-api")
                .env("E03_PROXY_API")
                .value_name("ADDR")
                .help(
                    "Put the fault proxy in front of the work address (named `dependency`) and \
                     serve its Toxiproxy API here, for a Toxiproxy client to drive during a \
                     run; its log is the run's wire-*.jsonl (docs/wire.md)",
                ),
        )
        .arg(
            Arg::new("wire-proxy")
                .long("wire-proxy")
                .env("E03_WIRE_PROXY")
                .value_name("URL")
                .help(
                    "The fault proxy is a `lab proxy --log-dir DIR` of its own, its API at URL \
                     (http://HOST:PORT): for runs with wire phases the dependency makes its \
                     proxy `dependency` there, on a free port, in front of --wire-upstream, \
                     and tells callers to send their work to it (docs/wire.md, compose)",
                ),
        )
        .arg(
            Arg::new("wire-upstream")
                .long("wire-upstream")
                .env("E03_WIRE_UPSTREAM")
                .value_name("HOST:PORT")
                .help(
                    "This dependency's work address as the --wire-proxy reaches it [default: \
                     the work listener's address, when it is not 0.0.0.0 or [::]]",
                ),
        )
        .subcommand(
            Command::new("health")
                .about("GET a health URL; exit 0 on 200 within 2 s, else 1")
                .arg(
                    Arg::new("url")
                        .value_name("URL")
                        .default_value(DEFAULT_HEALTH_URL),
                ),
        );
    // `--service-ms -1` must reach validation (and its clear message), not read as a flag.
    e03_plan::params::PARAMS
        .iter()
        .fold(e03_plan::cli::with_param_args(cmd), |cmd, p| {
            cmd.mut_arg(p.env, |a| a.allow_negative_numbers(true))
        })
}

fn setting(m: &ArgMatches, id: &str) -> String {
    m.get_one::<String>(id).cloned().unwrap_or_default()
}

fn address(
    m: &ArgMatches,
    flag: &'static str,
    env: &'static str,
) -> Result<SocketAddr, ConfigError> {
    let value = setting(m, flag);
    let bad = || ConfigError::Setting {
        flag,
        env,
        value: value.clone(),
        accepts: "an address and port like 0.0.0.0:8080 or localhost:8080",
    };
    if let Ok(addr) = value.trim().parse() {
        return Ok(addr);
    }
    // A host name (`localhost:8080`): resolved, IPv4 first.
    let addrs: Vec<SocketAddr> = std::net::ToSocketAddrs::to_socket_addrs(value.trim())
        .map_err(|_| bad())?
        .collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or(addrs.first())
        .copied()
        .ok_or_else(bad)
}

/// An address of `--listen` / `--control-listen` that cannot be bound: the user's input (exit
/// code 2, as for any bad flag).
#[derive(Debug)]
struct BindError(String);

impl std::fmt::Display for BindError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BindError {}

/// The error of a failed bind, with the flag that moves the address when it is taken.
fn bind_error(e: std::io::Error, flag: &str, env: &str, addr: SocketAddr) -> anyhow::Error {
    anyhow::Error::new(BindError(if e.kind() == std::io::ErrorKind::AddrInUse {
        format!(
            "cannot listen on --{flag} {addr}: the address is in use (another `lab serve`?); \
             move it with --{flag} {}:PORT, or {}:0 for any free port (env {env})",
            addr.ip(),
            addr.ip()
        )
    } else {
        format!("cannot listen on --{flag} {addr} (env {env}): {e}")
    }))
}

/// When a standalone run's timeline starts (`--timeline-start`, `E03_TIMELINE_START`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TimelineStart {
    /// At the process's start (the default).
    #[default]
    Process,
    /// At the first request the service receives.
    FirstRequest,
}

impl TimelineStart {
    fn parse(value: &str) -> Result<TimelineStart, ConfigError> {
        match value.trim() {
            "process" => Ok(TimelineStart::Process),
            "first-request" => Ok(TimelineStart::FirstRequest),
            _ => Err(ConfigError::Setting {
                flag: "timeline-start",
                env: "E03_TIMELINE_START",
                value: value.to_string(),
                accepts: "process or first-request",
            }),
        }
    }
}

/// `--scenario` of a standalone service: `none`, one built-in scenario with a single dependency
/// or one scenario file (read and checked here, its text kept for the log's folder); it carries
/// the user's policy file's strategies (`policies`), which its settings may name.
fn standalone_scenario(
    value: &str,
    policies: &[StrategySpec],
) -> Result<(Option<Scenario>, Option<String>), ConfigError> {
    const ACCEPTS: &str = "none, a built-in scenario with a single dependency (`lab list`; not a \
                           chain: amplification and deadline run their hops with `lab run`) or a \
                           scenario file";
    let refuse = |why: String| {
        ConfigError::Param(format!(
            "invalid --scenario (env E03_SCENARIO) value {value:?}: {why}; expected {ACCEPTS}"
        ))
    };
    if value.trim().eq_ignore_ascii_case("none") {
        return Ok((None, None));
    }
    let mut args =
        e03_io::scenario_files::resolve_with(value, policies).map_err(|e| refuse(e.to_string()))?;
    if args.len() != 1 {
        return Err(refuse("one dependency serves one scenario".into()));
    }
    let arg = args.remove(0);
    if arg.scenario.def().chain.is_some() {
        return Err(refuse(format!(
            "{} is a chain of services, not a single dependency",
            arg.scenario.name()
        )));
    }
    Ok((Some(arg.scenario), arg.file.map(|_| arg.text)))
}

/// A parameter error, already under the name the user typed (flag or env var).
fn param_error(e: ParamError) -> ConfigError {
    ConfigError::Param(e.to_string())
}

/// `--answer-spin-us` (`E03_ANSWER_SPIN_US`), checked.
pub fn answer_spin_us(spin: &str) -> Result<std::time::Duration, ConfigError> {
    match spin.trim().parse::<u64>() {
        Ok(us) if us <= MAX_ANSWER_SPIN_US => Ok(std::time::Duration::from_micros(us)),
        _ => Err(ConfigError::Setting {
            flag: "answer-spin-us",
            env: "E03_ANSWER_SPIN_US",
            value: spin.to_string(),
            accepts: "a whole number of microseconds from 0 to 5000",
        }),
    }
}

/// `PROGRAM --plan FILE`: the plan in FILE ([`Plan`] as JSON); `None` for any other command
/// line, `Err` when `--plan` comes with other flags or the file is not a plan.
fn plan_file(args: &[OsString]) -> Option<Result<Plan, ConfigError>> {
    match args {
        [_, flag, file] if flag == "--plan" => {
            let path = std::path::PathBuf::from(file);
            Some(
                std::fs::read_to_string(&path)
                    .map_err(|e| ConfigError::PlanRead {
                        path: path.clone(),
                        error: e.to_string(),
                    })
                    .and_then(|text| {
                        serde_json::from_str(&text).map_err(|e| ConfigError::PlanJson {
                            path: path.clone(),
                            error: e.to_string(),
                        })
                    }),
            )
        }
        _ if args.iter().skip(1).any(|a| a == "--plan") => Some(Err(ConfigError::PlanAlone)),
        _ => None,
    }
}

impl Plan {
    /// Validates the matches and the names of the process's env vars.
    /// The plan of the flags and env vars in `m`; `policies`: the user's policy file
    /// (`E03_POLICIES`), read by the caller.
    pub fn from_matches<I: IntoIterator<Item = String>>(
        m: &ArgMatches,
        env_names: I,
        policies: Option<&Policies>,
    ) -> Result<Plan, ConfigError> {
        if let Some(name) = e03_plan::cli::unknown_env(env_names).into_iter().next() {
            return Err(ConfigError::UnknownEnv(name));
        }
        let listen = address(m, "listen", "E03_LISTEN")?;
        let control_listen = address(m, "control-listen", "E03_CONTROL_LISTEN")?;
        let log_dir = setting(m, "log-dir");
        if log_dir.trim().is_empty() {
            return Err(ConfigError::Setting {
                flag: "log-dir",
                env: "E03_LOG_DIR",
                value: log_dir,
                accepts: "a directory path",
            });
        }
        let specs = policies.map(|p| p.specs.as_slice()).unwrap_or_default();
        let (scenario, scenario_text) = standalone_scenario(&setting(m, "scenario"), specs)?;
        // Kept with a scenario file, whose strategies may name the policy file's.
        let policies_text = policies
            .filter(|_| scenario_text.is_some())
            .map(|p| p.text.clone());
        let timeline_start = TimelineStart::parse(&setting(m, "timeline-start"))?;
        let answer_spin = answer_spin_us(&setting(m, "answer-spin-us"))?;
        let params = match &scenario {
            // The scenario's own parameters under the flags and env vars given, as `lab run`.
            Some(s) => e03_plan::cli::params_for_scenario(m, s),
            None => e03_plan::cli::params_from_matches(m),
        }
        .map_err(param_error)?;
        let proxy_api = match m.get_one::<String>("proxy-api") {
            Some(v) if !v.trim().is_empty() => Some(address(m, "proxy-api", "E03_PROXY_API")?),
            _ => None,
        };
        let wire_proxy = remote_front(m, listen)?;
        if wire_proxy.is_some() && proxy_api.is_some() {
            return Err(ConfigError::Setting {
                flag: "proxy-api",
                env: "E03_PROXY_API",
                value: setting(m, "proxy-api"),
                accepts: "nothing with --wire-proxy (E03_WIRE_PROXY): a Toxiproxy client drives \
                          that proxy's own API",
            });
        }
        let send_logs = e03_io::ship::collector_url(&setting(m, "send-logs")).map_err(|_| {
            ConfigError::Setting {
                flag: "send-logs",
                env: "E03_SEND_LOGS",
                value: setting(m, "send-logs"),
                accepts: "the analyzer's base URL, http://HOST:PORT (`lab report --listen ADDR` \
                          there), for example http://analyzer:9100",
            }
        })?;
        let wire_front = wire_proxy.is_none()
            && (proxy_api.is_some()
                || scenario
                    .as_ref()
                    .is_some_and(|s| !params.timeline(s).wire.is_empty()));
        Ok(Plan {
            listen,
            control_listen,
            log_dir: PathBuf::from(log_dir),
            scenario,
            scenario_text,
            policies_text,
            timeline_start,
            params,
            answer_spin,
            wire_front,
            proxy_api,
            wire_proxy,
            send_logs,
        })
    }
}

/// `--wire-proxy URL` with `--wire-upstream HOST:PORT` (which may be left out when the work
/// listener `listen` is on one address: the proxy reaches it there).
fn remote_front(
    m: &ArgMatches,
    listen: SocketAddr,
) -> Result<Option<crate::wire_front::RemoteFront>, ConfigError> {
    let api = setting(m, "wire-proxy").trim().to_string();
    let upstream = setting(m, "wire-upstream").trim().to_string();
    if api.is_empty() && upstream.is_empty() {
        return Ok(None);
    }
    let url_ok = reqwest::Url::parse(&api).is_ok_and(|u| {
        u.scheme() == "http" && u.host_str().is_some() && matches!(u.path(), "" | "/")
    });
    if !url_ok {
        return Err(ConfigError::Setting {
            flag: "wire-proxy",
            env: "E03_WIRE_PROXY",
            value: api,
            accepts: "the URL of a `lab proxy` API, like http://wire-a:8474, with --wire-upstream",
        });
    }
    if upstream.is_empty() && !listen.ip().is_unspecified() {
        // The work listener's own address.
        return Ok(Some(crate::wire_front::RemoteFront {
            api,
            upstream: None,
        }));
    }
    let port_ok = upstream
        .rsplit_once(':')
        .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0));
    if !port_ok {
        return Err(ConfigError::Setting {
            flag: "wire-upstream",
            env: "E03_WIRE_UPSTREAM",
            value: upstream,
            accepts: "HOST:PORT, this dependency's work address as the --wire-proxy reaches it, \
                      like dep-a:8080 (needed when --listen is 0.0.0.0 or [::])",
        });
    }
    Ok(Some(crate::wire_front::RemoteFront {
        api,
        upstream: Some(upstream),
    }))
}

/// The whole CLI (`args[0]` is the program name); builds its own tokio runtime; returns the exit
/// code.
pub fn main_entry(args: Vec<OsString>) -> i32 {
    // `lab` when run as `lab serve`, else `dependency-service`: every message starts with it.
    let name = e03_plan::cli::program_name(args.first().map_or("lab".as_ref(), |a| a.as_os_str()));
    if let Some(plan) = plan_file(&args) {
        return match plan {
            Ok(plan) => serve_plan(plan, &name),
            Err(e) => {
                eprintln!("{name}: {e}");
                e03_io::exit::USAGE
            }
        };
    }
    let m = match command().try_get_matches_from(args) {
        Ok(m) => m,
        Err(e) => return e03_plan::cli::clap_exit(&name, &e),
    };
    if let Some(("health", sub)) = m.subcommand() {
        return health(&setting(sub, "url"), &name);
    }
    // A user's policy file (E03_POLICIES): the standalone scenario may name its strategies (a
    // control call carries its strategies by value).
    let policies = match e03_io::scenario_files::load_policies_from_env() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{name}: {e}");
            return e03_io::exit::USAGE;
        }
    };
    let env_names = std::env::vars_os().filter_map(|(k, _)| k.into_string().ok());
    let plan = match Plan::from_matches(&m, env_names, policies.as_ref()) {
        Ok(plan) => plan,
        Err(e) => {
            eprintln!("{name}: {e}");
            return e03_io::exit::USAGE;
        }
    };
    serve_plan(plan, &name)
}

/// Serves a validated plan until shut down; the exit code.
fn serve_plan(plan: Plan, name: &str) -> i32 {
    init_tracing();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .on_thread_start(precise_timer::realtime::on_worker_start)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("{name}: cannot start the runtime: {e}");
            return e03_io::exit::FAILED;
        }
    };
    match rt.block_on(run(plan)) {
        Ok(()) => e03_io::exit::OK,
        Err(e) => {
            eprintln!(
                "{name}: {}",
                e03_plan::cli::error_chain(AsRef::<dyn std::error::Error>::as_ref(&e))
            );
            if e.is::<BindError>() {
                e03_io::exit::USAGE
            } else {
                e03_io::exit::FAILED
            }
        }
    }
}

async fn run(plan: Plan) -> anyhow::Result<()> {
    // With a fault proxy in front, callers reach the proxy on the work address and the
    // dependency listens behind it on loopback.
    let behind = if plan.wire_front {
        "127.0.0.1:0".parse().expect("an address")
    } else {
        plan.listen
    };
    let work = tokio::net::TcpListener::bind(behind)
        .await
        .map_err(|e| bind_error(e, "listen", "E03_LISTEN", plan.listen))?;
    let front = if plan.wire_front {
        let front = crate::wire_front::WireFront::start(
            plan.listen,
            work.local_addr()?,
            plan.params.seed(),
        )
        .await
        .map_err(|e| BindError(format!("--listen {}: {e}", plan.listen)))?;
        Some(std::sync::Arc::new(front))
    } else if let Some(remote) = &plan.wire_proxy {
        let upstream = match &remote.upstream {
            Some(u) => u.clone(),
            None => work.local_addr()?.to_string(),
        };
        let front =
            crate::wire_front::WireFront::remote(&remote.api, &upstream, REMOTE_PROXY_WAIT).await?;
        Some(std::sync::Arc::new(front))
    } else {
        None
    };
    let control = tokio::net::TcpListener::bind(plan.control_listen)
        .await
        .map_err(|e| {
            bind_error(
                e,
                "control-listen",
                "E03_CONTROL_LISTEN",
                plan.control_listen,
            )
        })?;
    // The proxy's API for a user's Toxiproxy client (`--proxy-api`), served until the process
    // ends.
    let proxy_api = match (plan.proxy_api, &front) {
        (Some(addr), Some(front)) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| bind_error(e, "proxy-api", "E03_PROXY_API", addr))?;
            let bound = listener.local_addr()?;
            let api = front
                .api()
                .expect("--proxy-api goes with a proxy in process");
            tokio::spawn(async move {
                if let Err(e) = axum::serve(listener, api).await {
                    tracing::error!("the proxy API stopped: {e}");
                }
            });
            Some(bound)
        }
        _ => None,
    };
    let mut out = std::io::stdout().lock();
    write!(
        out,
        "listening work={} control={}",
        front
            .as_ref()
            .and_then(|f| f.local_addr())
            .unwrap_or(work.local_addr()?),
        control.local_addr()?
    )?;
    match proxy_api {
        Some(api) => writeln!(out, " proxy_api={api}")?,
        None => writeln!(out)?,
    }
    out.flush()?;
    drop(out);
    let remote = front.clone().filter(|_| plan.wire_proxy.is_some());
    let opts = ServiceOptions {
        wire_front: front,
        answer_spin: plan.answer_spin,
        log_dir: plan.log_dir,
        send_logs: plan.send_logs,
        standalone: plan.scenario.map(|scenario| StandaloneRun {
            scenario,
            params: plan.params,
            text: plan.scenario_text,
            policies_text: plan.policies_text,
            at_first_request: plan.timeline_start == TimelineStart::FirstRequest,
        }),
    };
    let served = serve(work, control, opts, shutdown_signal()).await;
    // A proxy of its own ends with its dependency (compose's run is over).
    if let Some(front) = remote {
        front.shutdown_remote().await;
    }
    served
}

/// How long the dependency waits for its `--wire-proxy` to answer at start.
const REMOTE_PROXY_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Logs and tracing go to stderr; `RUST_LOG` filters, default info. A no-op if the caller (the
/// lab binary) already installed a subscriber.
fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

fn health(url: &str, name: &str) -> i32 {
    let check = async {
        let client = reqwest::Client::builder()
            .no_proxy()
            .timeout(HEALTH_TIMEOUT)
            .build()?;
        let res = client.get(url).send().await?;
        Ok::<_, reqwest::Error>(res.status())
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("{name}: health: cannot start the runtime: {e}");
            return 1;
        }
    };
    match rt.block_on(check) {
        Ok(s) if s.as_u16() == 200 => 0,
        Ok(s) => {
            eprintln!("{name}: health: {url} answered {s}");
            1
        }
        Err(e) => {
            eprintln!("{name}: health: {url}: {e}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(args: &[&str], env: &[&str]) -> Result<Plan, String> {
        let m = command()
            .try_get_matches_from(std::iter::once("dependency-service").chain(args.iter().copied()))
            .map_err(|e| e.to_string())?;
        Plan::from_matches(&m, env.iter().map(|s| s.to_string()), None).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_follow_the_spec() {
        let p = plan(&[], &[]).unwrap();
        // Loopback by default (issue 54): a fault injector is reachable from the network only
        // when asked.
        assert_eq!(p.listen.to_string(), "127.0.0.1:8080");
        assert_eq!(p.control_listen.to_string(), "127.0.0.1:8081");
        assert_eq!(p.log_dir, PathBuf::from("logs"));
        assert_eq!(p.scenario, Some(Scenario::e03b()));
        assert_eq!(plan(&["--scenario", "none"], &[]).unwrap().scenario, None);
        assert_eq!(p.params.service().workers, 10);
        assert_eq!(p.answer_spin, std::time::Duration::from_micros(200));
        let off = plan(&["--answer-spin-us", "0"], &[]).unwrap();
        assert_eq!(off.answer_spin, std::time::Duration::ZERO);
    }

    #[test]
    fn a_bad_answer_spin_names_its_flag_and_env_var() {
        for bad in ["-1", "5001", "fast"] {
            assert_eq!(
                plan(&[&format!("--answer-spin-us={bad}")], &[]).unwrap_err(),
                format!(
                    "invalid --answer-spin-us (env E03_ANSWER_SPIN_US) value \"{bad}\": expected a whole number of microseconds from 0 to 5000"
                )
            );
        }
    }

    #[test]
    fn bad_values_name_their_flag_and_env_var() {
        assert_eq!(
            plan(&["--listen", "nowhere"], &[]).unwrap_err(),
            "invalid --listen (env E03_LISTEN) value \"nowhere\": expected an address and port like 0.0.0.0:8080 or localhost:8080"
        );
        // A host name is resolved (IPv4 first).
        let p = plan(&["--listen", "localhost:8080"], &[]).unwrap();
        assert_eq!(p.listen, "127.0.0.1:8080".parse().unwrap());
        assert!(plan(&["--scenario", "all"], &[])
            .unwrap_err()
            .starts_with("invalid --scenario (env E03_SCENARIO) value \"all\""));
        assert_eq!(
            plan(&["--workers", "0"], &[]).unwrap_err(),
            "invalid --workers=\"0\": expected a whole number from 1 to 10000"
        );
        assert!(plan(&[], &["E03_WORKER"])
            .unwrap_err()
            .contains("unknown environment variable E03_WORKER: not a parameter or setting of the lab; did you mean E03_WORKERS?"));
        let p = plan(
            &["--scenario", "e03a", "--workers", "3"],
            &["E03_WORKERS", "PATH"],
        )
        .unwrap();
        assert_eq!(
            (p.scenario, p.params.service().workers),
            (Some(Scenario::e03a()), 3)
        );
    }
}
