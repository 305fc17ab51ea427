//! The exit codes of every lab process, in one place (docs/running.md, "Commands").

/// Everything ran and every check passed.
pub const OK: i32 = 0;
/// A run failed, is incomplete, or its counts do not match.
pub const FAILED: i32 = 1;
/// Bad input: a flag, env var or file key; nothing was written that looks like a result.
pub const USAGE: i32 = 2;
/// The runs are sound, but a check against the source's published figures failed.
pub const CHECK_FAILED: i32 = 3;
/// A scenario's `[[threshold]]` broke, or `lab audit --require` was not met: k6's code for a
/// broken threshold (docs/ci-gates.md).
pub const THRESHOLD_BROKEN: i32 = 99;
/// Stopped by a signal (SIGINT, SIGTERM): 128 + 2, what a shell reports for Ctrl-C.
pub const STOPPED: i32 = 130;
/// The reader of stdout went away (`lab simulate e03b | head -3`): what a shell reports for a
/// process that SIGPIPE ended (128 + 13), without a word on stderr.
pub const BROKEN_PIPE: i32 = 141;
