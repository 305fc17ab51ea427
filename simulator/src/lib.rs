//! A discrete-event simulator of the E03 lab.
//!
//! It drives the *same* state machines as the live lab (the core's
//! [`e03_model::DependencySchedule`], [`e03_model::Operation`], strategies and retry budget) from a virtual clock instead of tokio's:
//! no sockets, no sleeps. A run of E03-B (30 s, 200 clients, about 3 000 requests) takes
//! milliseconds, so hundreds of seeds and parameter sweeps take seconds, and the analyzer's own
//! accumulator measures each run, so a simulated run reports the very figures a live run does.
//!
//! Map of the modules:
//!
//! - [`queue`]: the clients' event queue, ordered by `(time, rank, insertion order)`:
//!   byte-for-byte reproducible runs. The dependency's due instants are the core schedule's.
//! - [`service`]: [`replay`] drives the core's dependency schedule alone with a recorded arrival
//!   list.
//! - [`engine`]: one run: the run's workload (closed loop, group, fixed rate, open loop,
//!   the rate-limit article's steps) exactly as the live swarm, reporting to an [`Observer`]; its wire
//!   connection model (`engine/connections.rs`) is a file of its own, private to it (what each
//!   wire fault does is the model's rule, `e03_model::timeline::WireFault`).
//! - [`run`]: [`simulate_run`] and parallel runs over std threads.
//! - [`sweep`]: parameter grids (`E03_QUEUE=50,100,200`), their tables and CSV rows.
//! - [`map`]: the phase map of an open loop: load x trigger size, recovered or metastable.
//! - [`stats`]: the figures of a run as a list, and their spread over seeds.
//! - [`beside`]: a live run beside its model, the one place every comparison starts from
//!   (`lab run`'s and `lab analyze`'s `live_model` checks, `lab compare`, `lab map --verify`).
//! - [`compare`]: the means table of live against simulated, side by side.
//! - [`replica002`]: a port of the rate-limit article's own rate-limit simulation, checked against its table.
//!
//! Modelling choices: network latency is zero (an attempt arrives the instant it is sent, and
//! is due, sent and arrived at one instant), unless a scenario's wire phase adds one
//! (the engine's connection model, `engine/connections.rs`, "The wire"); request ids are sending numbers (arrival numbers but for a latency
//! on the requests); an attempt whose
//! answer lands exactly at its timeout counts as answered. Everything else (random streams,
//! operation numbering, fault keys, think and start rules) is the live swarm's and service's.

pub mod beside;
pub mod chain;
pub mod compare;
pub mod engine;

pub mod map;
pub mod queue;
pub mod replica002;
pub mod run;
pub mod service;
pub mod stats;
pub mod sweep;

pub use beside::{model_run, Beside};
pub use compare::print_comparison;
pub use engine::{Engine, Observer};
pub use map::{phase_map, MapError, MapSpec};
pub use run::{simulate, simulate_run};
pub use service::{replay, Decision};
pub use sweep::{
    grid, parse_sweep, print_sweep, sweep, sweep_csv_rows, SweepAxis, SweepPoint, SweepResult,
};
