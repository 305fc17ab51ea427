//! What `lab proxy --http` cannot use or cannot start: [`ProxyError`]. A usage error names the
//! flag, the value and what the flag accepts; a start error names the flag whose address or
//! file failed, and the system's reason.

use e03_plan::ParamError;

/// A `lab proxy --http` command line that cannot be used, or a proxy that cannot start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProxyError {
    /// A flag's value the flag does not accept.
    #[error("invalid --{flag} {value:?}: expected {accepts}")]
    Invalid {
        flag: String,
        value: String,
        accepts: String,
    },
    /// A flag given twice.
    #[error("{flag} given twice")]
    Twice { flag: String },
    /// A flag without its value.
    #[error("{flag} needs a value; see lab proxy --http --help")]
    NeedsValue { flag: String },
    /// An argument the proxy does not take.
    #[error("unknown argument {arg:?}; see lab proxy --http --help")]
    Unknown { arg: String },
    /// No `--upstream`.
    #[error("--upstream URL is required: the service behind the proxy, http://HOST:PORT")]
    NoUpstream,
    /// `--timeline-json` and `--scenario` together.
    #[error("--timeline-json with --scenario: give one of them")]
    TimelineAndScenario,
    /// A standalone proxy's flag given with `--control-listen`.
    #[error(
        "--{flag} with --control-listen: a controlled proxy's runs come with their scenario by \
         start calls (lab run --upstream), logged under --log-dir"
    )]
    WithControl { flag: String },
    /// `--log-dir` without `--control-listen`.
    #[error("--log-dir is for --control-listen (a standalone proxy: --log FILE)")]
    LogDirAlone,
    /// A `--scenario` the proxy cannot run: `why` (the scenario file's error, or what the
    /// proxy cannot apply).
    #[error("invalid --scenario {value:?}: {why}")]
    Scenario { value: String, why: String },
    /// The scenario's own settings (a scenario file's `[settings]`).
    #[error(transparent)]
    Params(#[from] ParamError),
    /// `--timeline-json` that is not a timeline: the JSON reader's message.
    #[error("invalid --timeline-json: {json}: expected a timeline as the lab writes it")]
    TimelineJson { json: String },
    /// `--timeline-json` with a phase a proxy cannot apply.
    #[error("invalid --timeline-json: its {phase} phase cannot be applied by a proxy: {why}")]
    TimelinePhase {
        phase: &'static str,
        why: &'static str,
    },
    /// `--listen` or `--control-listen` that cannot be bound (`error`: the system's reason).
    #[error("cannot listen on {flag} {addr}: {error}")]
    Listen {
        flag: &'static str,
        addr: String,
        error: String,
    },
    /// A bound listener without an address (`error`: the system's reason).
    #[error("{error}")]
    LocalAddr { error: String },
    /// The HTTP client towards the upstream could not be built.
    #[error("cannot build the upstream client: {error}")]
    Client { error: String },
    /// `--log FILE` could not be created.
    #[error("cannot create --log {}: {error}", path.display())]
    CreateLog {
        path: std::path::PathBuf,
        error: String,
    },
    /// The log writer could not start.
    #[error("cannot start the log writer: {error}")]
    LogWriter { error: String },
}

impl ProxyError {
    /// A usage error: the flag (without its dashes), the value and what it accepts.
    pub fn invalid(flag: &str, value: &str, accepts: &str) -> Self {
        ProxyError::Invalid {
            flag: flag.to_string(),
            value: value.to_string(),
            accepts: accepts.to_string(),
        }
    }
}
