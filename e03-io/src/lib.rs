//! The lab's shared file IO, one crate under the drivers (the live service and swarm, the
//! simulator's `lab simulate` and `lab map`): without its features nothing here starts a
//! runtime or opens a socket, so the simulated path needs no live crate to claim a run folder
//! or read a scenario file.
//!
//! - [`rundir`]: the run directory, `OUT/<run id>/`, claimed once per run, and `OUT/latest`.
//! - [`scenario_files`]: scenario arguments (built-in names and files) and policy files, read,
//!   validated and kept beside the run's outputs.
//! - [`progress`]: the progress setting every driver shares.
//! - [`exit`]: the exit codes every process uses.
//! - [`logs`]: the names of a chain run's logs, JSON Lines written at once, atomic writes.
//! - [`sink`] (feature `sink`, the live processes only): the one JSON Lines writer of every
//!   live log, off the request path.
//! - [`ship`] (feature `ship`, the live processes only, the one place here that opens a
//!   socket): logs sent to the analyzer over HTTP with a checksum and a retry, and the
//!   analyzer's collector that stores them.

pub mod error;
pub mod exit;
pub mod logs;
mod names;
pub mod progress;
pub mod rundir;
pub mod scenario_files;
#[cfg(feature = "ship")]
pub mod ship;
#[cfg(feature = "sink")]
pub mod sink;
