//! A parameter value that cannot be used: the error of every check of the parameters, naming
//! the parameter, the value given and what it accepts (or the unknown name).

/// A parameter value that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamError {
    #[error("invalid {name}={value:?}: expected {accepts}")]
    Invalid {
        name: String,
        value: String,
        accepts: String,
    },
    #[error("unknown parameter {name:?}: expected one of the E03_* parameter names (see --help)")]
    Unknown { name: String },
    /// `known`: the built-in scenarios' names, as the message lists them.
    #[error("unknown scenario {value:?}: expected {known}, all, or a scenario file (NAME.toml)")]
    UnknownScenario { value: String, known: String },
    /// A scenario with an HTTP fault phase, which only `lab proxy --http` applies, given to
    /// a driver of the lab's own dependency.
    #[error(
        "scenario {scenario}: its {phase} phase at {start_s} s is an HTTP fault of `lab proxy \
         --http` (docs/http-proxy.md); lab run, simulate and serve drive the lab's own \
         dependency, which does not apply abort, delay, hang or reset phases"
    )]
    ProxyOnly {
        scenario: String,
        phase: &'static str,
        /// Its start, in seconds, as written.
        start_s: String,
    },
}
