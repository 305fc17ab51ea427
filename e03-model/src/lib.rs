//! The lab's model: every state machine the live lab and the simulator share, and nothing else.
//!
//! Nothing in this crate reads a clock, does IO or parses a user's input (no TOML, no flags, no
//! parameter table: that is the plan crate, `e03-plan`, which builds this crate's typed configs).
//! Every method that depends on time takes `now`, a [`std::time::Duration`] since the run's time
//! zero, and returns a decision. The live dependency service and client swarm supply `now` from
//! tokio; the simulator supplies it from its event queue and gets the same decisions.
//!
//! Map of the modules:
//!
//! - [`timeline`]: the freeze window, the degraded window after it and the down windows.
//! - [`wire`]: Toxiproxy's toxics as data and as links (what passes, when, and what each toxic
//!   does to a connection), read by the live proxy and the simulator.
//! - [`wire_connections`]: the clients' connections to the proxy in front as a timeline's wire
//!   phases act on them (draws, opening, resets, closes, limits), a state machine the
//!   simulator drives.
//! - [`dependency`]: the dependency's capacity model (workers, bounded queue, freeze, degraded
//!   service time, transient faults) as a state machine.
//! - [`schedule`]: the dependency's whole schedule (the model, its due instants, freeze edges,
//!   late answers, same-instant order) in logical time, driven alike by the live service and
//!   the simulator.
//! - [`faults`]: the per-request fate of E03-A (transient 503, slow answer), the retry-logic article (lost
//!   answer, permanent error) and the rate-limit article (timeout before output, cut-off output, and the token
//!   cost of each answer), a pure function of the seed and the request's identity.
//! - [`ledger`]: the dependency's ledger of charges and its idempotency-key store, and the
//!   clients' key policies (the retry-logic article).
//! - [`strategy`]: retry strategies as data (backoff, cap, jitter kind, budget).
//! - [`budget`]: the policy-layer trait (deposit, admit, record, withdraw) and the retry budgets
//!   (token bucket, the reliability-patterns article's ratio, gRPC, AWS, Finagle/tower, Envoy, SRE adaptive throttling).
//! - [`breaker`]: the circuit breaker.
//! - [`hedge`]: hedging (gRPC A6's hedging policy, Tail at Scale's percentile delay).
//! - [`adaptive`]: the AWS SDKs' adaptive retry mode's client-side rate limiter (CUBIC).
//! - [`bulkhead`]: a caller's slots for calls in flight, shared or per dependency (the reliability-patterns article).
//! - [`balancer`]: a caller's client-side balancer over a dependency's replicas: round robin,
//!   least outstanding, failover, Envoy's outlier detection and active health checks.
//! - [`policy`]: one strategy's shared budget and breaker, as the drivers hold them, per fleet,
//!   shard or client.
//! - [`clock`]: a caller's clock offset to a server, NTP style (the sample of least round trip).
//! - [`operation`]: one client operation's attempt/deadline state machine.
//! - [`arrivals`]: the open loop's Poisson arrivals (constant or ramped rate) and its bounded
//!   pool of on-demand sessions.
//! - [`session`]: one closed-loop client's life (starts, think times, numbering, attempts)
//!   around [`operation`], driven live and simulated alike.
//! - [`shard`]: a run's clients split over N swarm processes (shard `I/N` runs clients
//!   `I, I + N, ...`).
//! - [`priority`]: an operation's class (critical or best effort), drawn once per operation.
//! - [`steps`]: the rate-limit article's step workload: a batch job (arrival schedule, calls per step, retries
//!   in whole steps) and an interactive flow with a latency budget, sharing one rate limit.
//! - [`workload`]: the one workload interface ([`workload::Workload`]) every driver drives, and
//!   its machines: N sessions as one (closed loop, group, fixed rate), the open loop, the steps.
//! - [`events`]: the JSON Lines event schema every process logs.
//! - [`rng`]: seeded, portable random streams, one per purpose and client.

pub mod adaptive;
pub mod arrivals;
pub mod attempt;
pub mod audit;
pub mod balancer;
pub mod breaker;
pub mod budget;
pub mod bulkhead;
pub mod cause;
pub mod chain;
pub mod chain_proxy;
pub mod clock;
pub mod dependency;
pub mod events;
pub mod fault_headers;
pub mod fault_proxy;
pub mod faults;
pub mod hedge;
pub mod http_fault;
pub mod identity_headers;
pub mod ledger;
pub mod limit;
pub mod node;
pub mod operation;
pub mod policy;
pub mod priority;
pub mod rng;
pub mod schedule;
pub mod session;
pub mod shard;
pub mod sliding_window;
pub mod spec_error;
pub mod steps;
pub mod strategy;
pub mod timeline;
pub mod wire;
pub mod wire_connections;
pub mod workload;

pub use budget::{RetryBudget, TokenBucket, Unlimited};
pub use dependency::{Admission, Completion, DependencyModel, ReqId, WorkDone};
pub use node::DependencyNode;
pub use operation::{AttemptResult, Decision, GiveUp, OpOutcome, Operation};
pub use schedule::DependencySchedule;
pub use spec_error::SpecError;
pub use strategy::{Backoff, Jitter, Strategy};
pub use timeline::Timeline;
