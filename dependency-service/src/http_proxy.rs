//! `lab proxy --http`: an HTTP reverse proxy with faults, in front of any HTTP/1.1 upstream
//! ([docs/http-proxy.md]). A scenario's timeline drives it (`down`, `freeze`, `rate_limited`
//! and the HTTP fault phases `abort`, `delay`, `hang`, `reset`), decided by the core's
//! [`e03_model::fault_proxy::FaultProxy`]; every request is logged in the lab's server log schema
//! (`arrival`, `response`, `proxied`), so `lab analyze --server-log` counts what it saw.
//!
//! This file is the command line ([`main_entry`]: flags to a typed [`HttpProxyPlan`], once)
//! and the server ([`BoundHttpProxy::serve`]); one request's way through is `http_forward.rs`.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use axum::Router;
use e03_io::exit::USAGE;
use e03_model::events::RunTag;
use e03_model::fault_proxy::FaultProxy;
use e03_model::timeline::Timeline;
use e03_plan::{Params, Scenario};
use tokio::net::TcpListener;

use crate::http_forward::{handle, Forwarder, UPSTREAM_TIMEOUT};
pub use crate::http_proxy_error::ProxyError;
use crate::proxy_run::ProxyRun;

/// Where it listens unless told: loopback (a fault injector is not for the network unless
/// asked).
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8480";

const HELP: &str = "\
Usage: lab proxy --http --upstream URL [--listen ADDR] [--scenario FILE|NAME] [--fault-headers]
                 [--timeline-start process|first-request] [--log FILE] [--seed N]
                 [--upstream-timeout-ms MS]

An HTTP reverse proxy with faults in front of any HTTP/1.1 service (docs/http-proxy.md).
Every request is forwarded to URL, or answered, delayed, held or reset by the phase of the
scenario's timeline it arrives in: down (its status), freeze (held, then 503), rate_limited
(429 with Retry-After over the limit), abort, delay, hang, reset.

Options:
  --upstream URL      the service behind the proxy, http://HOST:PORT[/PATH] (required)
  --listen ADDR       where the proxy listens [default: 127.0.0.1:8480] (port 0: any free port)
  --scenario S        a scenario file or a built-in scenario with one dependency [default: none:
                      every request forwarded]
  --fault-headers     honour Envoy's fault headers where the scenario leaves a request alone:
                      x-envoy-fault-abort-request (a status), x-envoy-fault-delay-request (ms),
                      x-envoy-fault-throughput-response (KiB/s), each with its -percentage
  --timeline-start W  process (the default) or first-request: when the timeline's time zero is
  --log FILE          JSON Lines, the lab's server log schema (a new file; never overwritten);
                      lab analyze --server-log FILE reads it
  --seed N            seeds the draws (a phase's percent, a delay's length) [default: 42]
  --upstream-timeout-ms MS  the longest wait for the upstream's answer [default: 30000]
  --control-listen ADDR  the lab's control API (health, clock, start, stop) as lab serve has it:
                      runs come by start calls with their scenario (lab run --upstream URL)
  --log-dir DIR       with --control-listen: where each run's log goes, as lab serve's
  --timeline-json T   instead of --scenario: the timeline itself, as the lab's JSON (lab run
                      gives it to the proxy in front of a chain's layer, docs/chains.md)

Prints `listening http=IP:PORT` first; serves until SIGINT or SIGTERM (exit 0).";

/// The service behind the proxy: an `http://` URL without a query, its path ending in `/` (a
/// request's path is joined to it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstream(pub reqwest::Url);

impl Upstream {
    /// `value` as an upstream; the error names `--upstream` and what it accepts.
    pub fn parse(value: &str) -> Result<Upstream, ProxyError> {
        let accepts = "an http:// URL of the service behind the proxy (http://HOST:PORT[/PATH])";
        let mut url = reqwest::Url::parse(value)
            .map_err(|_| ProxyError::invalid("upstream", value, accepts))?;
        if url.scheme() != "http" || url.host().is_none() || url.query().is_some() {
            return Err(ProxyError::invalid("upstream", value, accepts));
        }
        if !url.path().ends_with('/') {
            let p = format!("{}/", url.path());
            url.set_path(&p);
        }
        Ok(Upstream(url))
    }
}

impl std::fmt::Display for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// A `lab proxy --http` command line, parsed once.
#[derive(Debug, Clone)]
pub struct HttpProxyPlan {
    pub listen: String,
    pub upstream: reqwest::Url,
    pub scenario: Option<Scenario>,
    /// The timeline itself (`--timeline-json`, a chain's proxy), instead of a scenario's.
    pub timeline: Option<Timeline>,
    /// A scenario file's text, kept beside the log as `scenario.toml`.
    pub scenario_text: Option<String>,
    pub first_request: bool,
    /// Envoy's fault headers honoured (`--fault-headers`).
    pub fault_headers: bool,
    pub log: Option<PathBuf>,
    /// A control listener (`--control-listen`): runs come by start calls, as to `lab serve`,
    /// each logged under `--log-dir`.
    pub control_listen: Option<String>,
    pub log_dir: Option<PathBuf>,
    pub seed: u64,
    pub upstream_timeout: Duration,
}

impl HttpProxyPlan {
    /// The plan of `args` (after `lab proxy`), or the message of a usage error; `Ok(None)`:
    /// help was asked for.
    pub fn parse(args: &[String]) -> Result<Option<HttpProxyPlan>, ProxyError> {
        let mut given: BTreeMap<&str, String> = BTreeMap::new();
        let mut rest = args.iter();
        while let Some(a) = rest.next() {
            let (flag, inline) = match a.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
                _ => (a.as_str(), None),
            };
            match flag {
                "-h" | "--help" => return Ok(None),
                "--http" => continue,
                "--fault-headers" => {
                    if given.insert("fault-headers", String::new()).is_some() {
                        return Err(ProxyError::Twice {
                            flag: "--fault-headers".into(),
                        });
                    }
                    continue;
                }
                "--upstream"
                | "--listen"
                | "--scenario"
                | "--timeline-start"
                | "--log"
                | "--seed"
                | "--upstream-timeout-ms"
                | "--control-listen"
                | "--timeline-json"
                | "--log-dir" => {
                    let Some(v) = inline.or_else(|| rest.next().cloned()) else {
                        return Err(ProxyError::NeedsValue {
                            flag: flag.to_string(),
                        });
                    };
                    if given.insert(&flag[2..], v).is_some() {
                        return Err(ProxyError::Twice {
                            flag: flag.to_string(),
                        });
                    }
                }
                _ => return Err(ProxyError::Unknown { arg: a.clone() }),
            }
        }
        let upstream = given.get("upstream").ok_or(ProxyError::NoUpstream)?;
        let url = Upstream::parse(upstream)?.0;
        let listen = given
            .get("listen")
            .cloned()
            .unwrap_or_else(|| DEFAULT_LISTEN.into());
        if listen.parse::<SocketAddr>().is_err() {
            return Err(ProxyError::invalid(
                "listen",
                &listen,
                "an address, IP:PORT (127.0.0.1:8480)",
            ));
        }
        let (scenario, scenario_text) = match given.get("scenario").map(String::as_str) {
            None | Some("none") => (None, None),
            Some(v) => {
                let (s, text) = scenario_of(v)?;
                (Some(s), text)
            }
        };
        let timeline = match given.get("timeline-json") {
            None => None,
            Some(_) if given.contains_key("scenario") => {
                return Err(ProxyError::TimelineAndScenario)
            }
            Some(v) => Some(timeline_of(v)?),
        };
        let first_request = match given.get("timeline-start").map(String::as_str) {
            None | Some("process") => false,
            Some("first-request") => true,
            Some(v) => {
                return Err(ProxyError::invalid(
                    "timeline-start",
                    v,
                    "process or first-request",
                ));
            }
        };
        let log = given.get("log").map(PathBuf::from);
        if let Some(path) = &log {
            if path.as_os_str().is_empty() || path.exists() {
                return Err(ProxyError::invalid(
                    "log",
                    &path.display().to_string(),
                    "a new file (the proxy never writes over a file)",
                ));
            }
        }
        let control_listen = given.get("control-listen").cloned();
        if let Some(c) = &control_listen {
            if c.parse::<SocketAddr>().is_err() {
                return Err(ProxyError::invalid(
                    "control-listen",
                    c,
                    "an address, IP:PORT (127.0.0.1:8481)",
                ));
            }
            if let Some(clash) = ["scenario", "timeline-json", "log", "timeline-start"]
                .into_iter()
                .find(|k| given.contains_key(k))
            {
                return Err(ProxyError::WithControl {
                    flag: clash.to_string(),
                });
            }
        }
        let log_dir = given.get("log-dir").map(PathBuf::from);
        match (&log_dir, &control_listen) {
            (Some(_), None) => return Err(ProxyError::LogDirAlone),
            (Some(d), Some(_)) if !d.is_dir() => {
                return Err(ProxyError::invalid(
                    "log-dir",
                    &d.display().to_string(),
                    "an existing directory",
                ))
            }
            _ => {}
        }
        let seed = match given.get("seed") {
            None => 42,
            Some(v) => v.trim().parse().map_err(|_| {
                ProxyError::invalid("seed", v, "a whole number from 0 to 18446744073709551615")
            })?,
        };
        let upstream_timeout = match given.get("upstream-timeout-ms") {
            None => UPSTREAM_TIMEOUT,
            Some(v) => match v.trim().parse::<u64>() {
                Ok(ms @ 1..=3_600_000) => Duration::from_millis(ms),
                _ => {
                    return Err(ProxyError::invalid(
                        "upstream-timeout-ms",
                        v,
                        "a whole number of milliseconds from 1 to 3600000",
                    ))
                }
            },
        };
        Ok(Some(HttpProxyPlan {
            listen,
            upstream: url,
            scenario,
            timeline,
            scenario_text,
            first_request,
            fault_headers: given.contains_key("fault-headers"),
            log,
            control_listen,
            log_dir,
            seed,
            upstream_timeout,
        }))
    }

    /// The run's parameters: the scenario's own (the proxy takes no `E03_*` flag).
    fn params(&self) -> Params {
        match &self.scenario {
            Some(s) => Params::for_scenario(s, &BTreeMap::new())
                .expect("a checked scenario's own settings are valid"),
            None => Params::default(),
        }
    }
}

/// `--scenario`'s value: one scenario with a single dependency whose phases a proxy can apply.
fn scenario_of(value: &str) -> Result<(Scenario, Option<String>), ProxyError> {
    const ACCEPTS: &str = "none, a scenario file or a built-in scenario with one dependency";
    let mut args =
        e03_io::scenario_files::resolve_with(value, &[]).map_err(|e| ProxyError::Scenario {
            value: value.to_string(),
            why: e.to_string(),
        })?;
    if args.len() != 1 {
        return Err(ProxyError::invalid("scenario", value, ACCEPTS));
    }
    let arg = args.remove(0);
    let s = arg.scenario;
    let why = if s.def().chain.is_some() {
        Some("it is a chain of services, not one dependency".to_string())
    } else if s.def().phases.iter().any(|p| p.replica.is_some()) {
        Some("it has a phase of one replica; a proxy stands in front of one service".into())
    } else {
        let params = Params::for_scenario(&s, &BTreeMap::new())?;
        FaultProxy::cannot_apply(&params.timeline(&s))
            .map(|(phase, why)| format!("its {phase} phase cannot be applied by a proxy: {why}"))
    };
    if let Some(why) = why {
        return Err(ProxyError::Scenario {
            value: value.to_string(),
            why,
        });
    }
    Ok((s, arg.file.map(|_| arg.text)))
}

/// `--timeline-json`'s value: a timeline whose phases a proxy can apply.
fn timeline_of(value: &str) -> Result<Timeline, ProxyError> {
    let timeline: Timeline = serde_json::from_str(value).map_err(|e| ProxyError::TimelineJson {
        json: e.to_string(),
    })?;
    match FaultProxy::cannot_apply(&timeline) {
        Some((phase, why)) => Err(ProxyError::TimelinePhase { phase, why }),
        None => Ok(timeline),
    }
}

/// A bound proxy, before it serves.
pub struct BoundHttpProxy {
    pub addr: SocketAddr,
    /// The control listener's address (`--control-listen`).
    pub control: Option<SocketAddr>,
    listener: TcpListener,
    control_listener: Option<TcpListener>,
    fwd: Arc<Forwarder>,
    log_dir: Option<PathBuf>,
}

impl BoundHttpProxy {
    /// Binds the listeners, and for a standalone proxy opens the log, keeps the scenario beside
    /// it and starts its run.
    pub async fn bind(plan: &HttpProxyPlan) -> Result<Self, ProxyError> {
        let listener = TcpListener::bind(&plan.listen)
            .await
            .map_err(|e| ProxyError::Listen {
                flag: "--listen",
                addr: plan.listen.clone(),
                error: e.to_string(),
            })?;
        let local = |e: std::io::Error| ProxyError::LocalAddr {
            error: e.to_string(),
        };
        let addr = listener.local_addr().map_err(local)?;
        let control_listener = match &plan.control_listen {
            None => None,
            Some(c) => Some(TcpListener::bind(c).await.map_err(|e| ProxyError::Listen {
                flag: "--control-listen",
                addr: c.clone(),
                error: e.to_string(),
            })?),
        };
        let control = match &control_listener {
            Some(l) => Some(l.local_addr().map_err(local)?),
            None => None,
        };
        let client = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(plan.upstream_timeout)
            .build()
            .map_err(|e| ProxyError::Client {
                error: e.to_string(),
            })?;
        let fwd = Arc::new(Forwarder {
            upstream: plan.upstream.clone(),
            client,
            fault_headers: plan.fault_headers,
            own_health: plan.control_listen.is_some(),
            run: RwLock::new(None),
        });
        if plan.control_listen.is_none() {
            let run = Arc::new(standalone_run(plan)?);
            if !plan.first_request {
                run.start_at(None);
            }
            fwd.replace(Some(run));
        }
        Ok(BoundHttpProxy {
            addr,
            control,
            listener,
            control_listener,
            fwd,
            log_dir: plan.log_dir.clone(),
        })
    }

    /// Serves until `stop` resolves (or a control call asks); the log is whole when this
    /// returns.
    pub async fn serve(self, stop: impl std::future::Future<Output = ()> + Send + 'static) {
        let shutdown = Arc::new(tokio::sync::Notify::new());
        let asked = Arc::clone(&shutdown);
        let stop_rx = crate::listen::stop_channel(async move {
            tokio::select! {
                () = stop => {}
                () = asked.notified() => {}
            }
        });
        let app = Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&self.fwd));
        let graceful = hyper_util::server::graceful::GracefulShutdown::new();
        let work = crate::listen::accept_loop(
            self.listener,
            app,
            &graceful,
            crate::listen::MAX_WORK_CONNECTIONS,
            stop_rx.clone(),
        );
        match self.control_listener {
            Some(l) => {
                let control = crate::http_control::router(crate::http_control::Control {
                    fwd: Arc::clone(&self.fwd),
                    log_dir: self.log_dir.clone().unwrap_or_else(|| PathBuf::from(".")),
                    shutdown,
                });
                let control = crate::listen::accept_loop(
                    l,
                    control,
                    &graceful,
                    crate::listen::MAX_CONTROL_CONNECTIONS,
                    stop_rx,
                );
                tokio::join!(work, control);
            }
            None => work.await,
        }
        crate::listen::drain(graceful, "http proxy").await;
        if let Some(run) = self.fwd.replace(None) {
            if let Err(e) = run.end(false).await {
                eprintln!("lab: {e}");
            }
        }
    }
}

/// The run of a proxy without a control listener: its scenario, its log (`--log`), time zero at
/// its start or its first request.
fn standalone_run(plan: &HttpProxyPlan) -> Result<ProxyRun, ProxyError> {
    let log = match &plan.log {
        None => None,
        Some(path) => {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(path)
                .map_err(|e| ProxyError::CreateLog {
                    path: path.clone(),
                    error: e.to_string(),
                })?;
            keep_scenario(path, plan.scenario_text.as_deref());
            Some(
                e03_io::sink::LogSink::to_file(file, path.clone()).map_err(|e| {
                    ProxyError::LogWriter {
                        error: e.to_string(),
                    }
                })?,
            )
        }
    };
    let params = plan.params();
    let name = plan
        .scenario
        .as_ref()
        .map_or("none", |s| s.name())
        .to_string();
    let timeline = match (&plan.timeline, &plan.scenario) {
        (Some(t), _) => t.clone(),
        (None, Some(s)) => params.timeline(s),
        (None, None) => Default::default(),
    };
    Ok(ProxyRun::new(
        FaultProxy::new(
            timeline,
            e03_model::rng::stream(plan.seed, e03_model::rng::Stream::Wire, u32::MAX),
        ),
        RunTag {
            run: format!("proxy-{name}-{}", std::process::id()),
            seed: plan.seed,
            strategy: "proxy".into(),
        },
        name,
        params.clone(),
        log,
        plan.log
            .as_ref()
            .map_or(String::new(), |p| p.display().to_string()),
    ))
}

/// Keeps a scenario file's text beside the log as `scenario.toml`, so `lab analyze
/// --server-log` titles and shades it; never over a file of that name the lab did not write.
fn keep_scenario(log: &std::path::Path, text: Option<&str>) {
    let Some(text) = text else { return };
    let dir = log
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let path = dir.join(e03_io::scenario_files::SCENARIO_FILE);
    match std::fs::read_to_string(&path) {
        Ok(old) if old == text => {}
        Ok(_) => eprintln!(
            "lab: {} exists and is not this scenario: not kept beside the log (give \
             lab analyze --scenario FILE)",
            path.display()
        ),
        Err(_) => {
            if let Err(e) = e03_io::scenario_files::keep(dir, text) {
                eprintln!("lab: {e}");
            }
        }
    }
}

/// `lab proxy --http ...` (`args` as given after the program's name).
pub fn main_entry(args: Vec<std::ffi::OsString>) -> i32 {
    let args: Vec<String> = args
        .into_iter()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let plan = match HttpProxyPlan::parse(&args) {
        Ok(Some(p)) => p,
        Ok(None) => {
            println!("{HELP}");
            return 0;
        }
        Err(e) => {
            eprintln!("lab: {e}");
            return USAGE;
        }
    };
    let rt = match crate::listen::proxy_runtime() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("lab: cannot start the runtime: {e}");
            return e03_io::exit::FAILED;
        }
    };
    rt.block_on(async {
        let bound = match BoundHttpProxy::bind(&plan).await {
            Ok(b) => b,
            Err(e) => {
                eprintln!("lab: {e}");
                return USAGE;
            }
        };
        match bound.control {
            Some(c) => println!("listening http={} control={c}", bound.addr),
            None => println!("listening http={}", bound.addr),
        }
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
        bound.serve(crate::listen::shutdown_signal()).await;
        0
    })
}
