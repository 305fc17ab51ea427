//! The figures of spec section 6 as a list of named accessors, and their spread over seeds:
//! they live in the pure `e03-metrics` crate, shared with the analyzer's tables.

pub use e03_metrics::stats::*;
