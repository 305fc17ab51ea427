//! Where a run writes: a directory of its own, `OUT/<run id>/`, never a shared one.
//!
//! The claim itself lives in [`client_swarm::outdir`], so that the compose swarm (which claims
//! its run directory under `/results` itself) and `lab run`/`simulate`/`compare` share one
//! implementation.

pub use client_swarm::outdir::{
    check_choice, claim, remove_old_logs, shown, RunChoice, RunDir, LATEST,
};
