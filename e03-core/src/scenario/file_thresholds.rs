//! A scenario file's `[[threshold]]` tables ([`crate::thresholds`]), read and their strategies
//! checked against the run's, each error naming the file, the line and the key.

use std::collections::BTreeMap;

use toml::Spanned;

use crate::thresholds::{parse_threshold_table, ThresholdSpec};

use super::error::ScenarioError;

type Table = Spanned<BTreeMap<String, Spanned<toml::Value>>>;

/// Reads the file's thresholds; `run_ids`: the strategies the scenario runs.
pub(super) fn read(
    tables: &[Table],
    run_ids: &[String],
    origin: &str,
    text: &str,
) -> Result<Vec<ThresholdSpec>, ScenarioError> {
    let mut out = Vec::new();
    for t in tables {
        let spec = parse_threshold_table(t.get_ref(), t.span().start).map_err(|e| {
            ScenarioError::at(
                origin,
                text,
                e.offset,
                format!("[[threshold]] key `{}`: {}", e.key, e.message),
            )
        })?;
        if let Some(id) = spec
            .check
            .strategies()
            .into_iter()
            .find(|id| !run_ids.iter().any(|r| r == id))
        {
            let key = if id == spec.check.strategy {
                "strategy"
            } else {
                "versus"
            };
            let offset = t.get_ref().get(key).map(|v| v.span().start);
            return Err(ScenarioError::at(
                origin,
                text,
                offset,
                format!(
                    "[[threshold]] key `{key}`: {key} = {id:?}: expected a strategy the scenario \
                     runs ({})",
                    run_ids.join(", ")
                ),
            ));
        }
        out.push(spec);
    }
    Ok(out)
}
