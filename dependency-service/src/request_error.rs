//! What the dependency service refuses in a call's body: [`RequestError`], the `400` (or the
//! `500` of a log not written whole) of a start call, of the fault proxy's API and of its
//! `/lab/log`. Its text names the field and what it accepts.

/// A control or proxy-API call that cannot be served as asked.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RequestError {
    /// A start call's body is not a [`e03_plan::control::StartRun`]: the JSON reader's message
    /// (which carries the core's [`e03_plan::control::ControlError`] text).
    #[error("malformed start call JSON: {json}")]
    StartJson { json: String },
    /// `strategy` is not a strategy id.
    #[error("invalid strategy {id:?}: expected 1 to 32 ASCII letters, digits or '-'")]
    Strategy { id: String },
    /// `run` is empty, too long or holds control characters.
    #[error("invalid run id {run:?}: expected 1 to {most} printable characters")]
    RunId { run: String, most: usize },
    /// `run_dir` is not one folder name.
    #[error(
        "invalid run_dir {dir:?}: expected one folder name of 1 to 255 ASCII letters, digits, \
         '-', '_' or '.', not starting with '.'"
    )]
    RunDir { dir: String },
    /// `start_unix_ms` too far from the service's clock.
    #[error(
        "invalid start_unix_ms {start_unix_ms}: expected a time within {within_s} s of the \
         service's clock"
    )]
    StartTime { start_unix_ms: u64, within_s: u64 },
    /// A run with wire phases, and no fault proxy in front of this dependency.
    #[error(
        "scenario {scenario} has a wire phase ({fault} from {start_s} s), and this dependency has \
         no fault proxy in front of it: start it from `lab run`, or as `lab serve --scenario \
         {scenario}` (docs/wire.md)"
    )]
    NoWireFront {
        scenario: String,
        fault: String,
        start_s: f64,
    },
    /// A proxy-API body (`what`: proxy, toxic, log) that is not its JSON.
    #[error("invalid {what}: {json}")]
    Body { what: String, json: String },
    /// `/lab/log`'s `file` is not a proxy log's path under `--log-dir`.
    #[error(
        "invalid log: file {file:?}: expected a relative path under --log-dir, without '..', to \
         a file named wire-*.jsonl"
    )]
    ProxyLog { file: String },
    /// A proxy's `listen` address that cannot be bound (`error`: the system's reason).
    #[error("invalid proxy: listen {listen:?}: {error}")]
    Listen { listen: String, error: String },
    /// The bound listener has no address (`error`: the system's reason).
    #[error("{error}")]
    LocalAddr { error: String },
    /// The run's log was not written whole when the run ended.
    #[error("the log was not written whole: {error}")]
    LogNotWhole { error: String },
}
