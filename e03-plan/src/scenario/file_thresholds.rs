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
        not_run(&spec.check, t, run_ids, origin, text, "[[threshold]] key")?;
        out.push(spec);
    }
    Ok(out)
}

/// Refuses a check or threshold table `t` whose `strategy` or `versus` names a strategy the
/// scenario does not run (`run_ids`), naming `table`, the key and its line. A `table` ending in
/// ` key` names the key as the threshold's other errors do (`[[threshold]] key \`strategy\`:`).
pub(super) fn not_run(
    spec: &crate::checks::CheckSpec,
    t: &Table,
    run_ids: &[String],
    origin: &str,
    text: &str,
    table: &str,
) -> Result<(), ScenarioError> {
    let Some(id) = spec
        .strategies()
        .into_iter()
        .find(|id| !run_ids.iter().any(|r| r == id))
    else {
        return Ok(());
    };
    let key = if id == spec.strategy {
        "strategy"
    } else {
        "versus"
    };
    let named = match table.strip_suffix(" key") {
        Some(table) => format!("{table} key `{key}`:"),
        None => table.to_string(),
    };
    Err(ScenarioError::at(
        origin,
        text,
        t.get_ref().get(key).map(|v| v.span().start),
        format!(
            "{named} {key} = {id:?}: expected a strategy the scenario runs ({})",
            run_ids.join(", ")
        ),
    ))
}
