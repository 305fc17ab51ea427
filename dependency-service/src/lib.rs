//! The lab's dependency service: an HTTP endpoint backed by the core's capacity model (a bounded
//! worker pool and queue that freezes on a timeline), logging every arrival before deciding
//! about it. The server log is the lab's source of truth for load.
//!
//! Map of the modules:
//!
//! - `server`: [`serve`] two listeners (work, control) with hyper connection limits and
//!   graceful shutdown; [`ServiceOptions`].
//! - `listen`: the listener plumbing every server of the crate shares: the accept loop with its
//!   limits, its stop and drain; [`shutdown_signal`].
//! - `routes`: the axum routers (`GET /work`, `GET /health`, `POST /control/start|stop`).
//! - `service`: the current run and starting/stopping runs; [`StandaloneRun`].
//! - `run`: one live run: a thin driver of the core's `DependencySchedule` (the model and its
//!   due instants in logical time), woken by the precise timer; its answers and log records.
//!   The server log is written by the lab's one writer, `e03_io::sink::LogSink` (a thread of
//!   its own; bounded, it never drops a record).
//! - `identity`: the `x-e03-*` headers of an attempt.
//! - `metrics`: the Prometheus metrics served at `GET /metrics` on the work listener.
//! - `cli`: [`main_entry`], the whole command line (also the lab's `serve` subcommand).
//! - `proxy`: `lab proxy`, the TCP fault proxy with Toxiproxy's API (its command line and the
//!   API served); its parts: `proxies` (the proxies and what they share), `proxy_api` (the HTTP
//!   API's handlers), `proxy_link` (one proxy's listener and its connections' links).
//! - `http_proxy`: `lab proxy --http`, the HTTP fault proxy in front of any upstream (its
//!   command line and server); `http_forward`: one request through it, the core's
//!   `fault_proxy` deciding; `proxy_run`: one run of it (its log and counts); `http_control`:
//!   its control API for `lab run --upstream`; `paced`: an answer sent at a rate; `lost`: a
//!   lost answer (a reset after the work was done).

pub mod audit;
mod cli;
pub mod hop;
mod hop_error;
mod http_control;
mod http_forward;
pub mod http_proxy;
mod http_proxy_error;
mod identity;
mod listen;
mod lost;
mod metrics;
mod paced;
mod proxies;
pub mod proxy;
mod proxy_api;
mod proxy_link;
mod proxy_run;
mod request_error;
mod routes;
mod run;
mod server;
mod service;
pub mod wire_front;

pub use cli::{answer_spin_us, main_entry, Plan as ServePlan, ANSWER_SPIN_US, DEFAULT_HEALTH_URL};
pub use identity::Identity;
pub use listen::shutdown_signal;
pub use request_error::RequestError;
pub use routes::{charge_request, validate_start, MAX_AMOUNT};
pub use server::{serve, ServiceOptions};
pub use service::{RunSpec, StandaloneRun};
