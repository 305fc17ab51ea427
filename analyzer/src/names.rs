//! The names of the files the analyzer writes that another of its modules reads back: on their
//! own, below both, so that a chain run's writer ([`crate::chain`]) and the index of an output
//! folder ([`crate::html::index_entries`]) share a name without importing each other.

/// The name of a chain run's JSON summary (beside `chain.md`): what its report's tables show,
/// unrounded ([`e03_metrics::chain::chain_json`]).
pub const CHAIN_JSON: &str = "chain.json";
