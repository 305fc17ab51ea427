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
    /// Parameters read back whole (JSON) that break a rule between parameters; `name` names it.
    #[error("parameters break the rule on {name}")]
    BrokenRule { name: String },
    /// Parameters read back whole that pair `E03_BALANCER=partition` with ejection.
    #[error("E03_BALANCER=partition with health checks or outlier detection")]
    PartitionEjects,
    /// A strategy read back whole with more fallbacks than `E03_FANOUT` gives a request.
    #[error("strategy {id:?} has more fallbacks than calls per request")]
    TooManyFallbacks { id: String },
    /// A strategy listed twice in parameters read back whole.
    #[error("strategy {id:?} is listed twice")]
    ListedTwice { id: String },
    /// Parameters read back whole with no strategy.
    #[error("parameters with no strategy")]
    NoStrategy,
    /// A strategy id read back whole that is not an id.
    #[error("invalid strategy id {id:?}: expected 1 to 32 ASCII letters, digits or '-'")]
    StrategyId { id: String },
}
