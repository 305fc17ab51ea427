//! What a hop of a chain cannot use: [`HopError`], the error of `lab hop`'s arguments, of a
//! `POST /control/configure` body and of a call's headers. Its text names the flag, the key or
//! the header, and what it accepts.

use e03_model::spec_error::SpecError;

/// What `lab hop` accepts, in the messages of its arguments.
pub const HOP_USAGE: &str = "expected `lab hop --config JSON` or `lab hop --listen IP:PORT \
                             --log-dir DIR` (see lab hop --help)";

/// A hop's argument, configuration or call header that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HopError {
    /// `layer` out of the chain's range (`most`: the most hops plus the bottom).
    #[error(
        "layer = {layer}: expected a whole number from 1 to {most} (1: called by the top caller)"
    )]
    Layer { layer: u32, most: u32 },
    /// A key of `role.spec`, or of `role.bottom` (its key then reads `role.bottom ...`).
    #[error(transparent)]
    Role(#[from] SpecError),
    /// `role.upstream` is not a plain HTTP base URL.
    #[error("role.upstream = {upstream:?}: expected the upstream's base URL, http://HOST:PORT")]
    Upstream { upstream: String },
    /// `log` is not a relative path of plain names ending in `.jsonl`.
    #[error(
        "log = {log:?}: expected a relative path of plain names (letters, digits, '.', '-', \
         '_'; no '..') ending in .jsonl, under the hop's --log-dir"
    )]
    LogName { log: String },
    /// A request or deadline header that is not a whole number (`value`: as received, quoted).
    #[error("header {name}: expected a whole number (ms or a request number), got {value}")]
    Header { name: String, value: String },
    /// A configure body that is not a hop's JSON: the JSON reader's message.
    #[error(
        "invalid hop configuration: {json}; expected JSON {{\"layer\": 1, \"log\": \
         \"RUN/SCENARIO/VARIANT/layer-1-NAME.jsonl\", \"role\": ...}} (see lab hop --help)"
    )]
    SetupJson { json: String },
    /// A configure body whose values cannot be used.
    #[error("invalid hop configuration: {0}")]
    Setup(Box<HopError>),
    /// An argument `lab hop` does not take.
    #[error("unexpected argument {arg:?}: {HOP_USAGE}")]
    Unexpected { arg: String },
    /// A flag given without its value.
    #[error("{flag} needs a value: {HOP_USAGE}")]
    NeedsValue { flag: String },
    /// `--config` is not a hop's JSON: the JSON reader's message.
    #[error("--config: {json}: expected a hop configuration in JSON (see lab hop --help)")]
    ConfigJson { json: String },
    /// `--config`'s values cannot be used.
    #[error("--config: {0}")]
    Config(Box<HopError>),
    /// `--log-dir` is not a directory.
    #[error("--log-dir {dir:?}: no such directory (the folder the hop's logs go under)")]
    LogDir { dir: String },
    /// Neither `--config` alone nor `--listen` with `--log-dir`.
    #[error("{HOP_USAGE}")]
    Usage,
}
