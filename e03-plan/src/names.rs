//! The lab's names: which strings may name a scenario, a strategy and a run folder. A leaf
//! that imports nothing of the crate, so that the scenario files, the parameters and the
//! control protocol can all check a name without naming each other.

/// Whether a string can name a scenario (and a chain's variant): 1 to 32 lowercase ASCII
/// letters, digits, '-' or '_', starting with a letter or a digit.
pub(crate) fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    (1..=32).contains(&name.len())
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

/// Whether a strategy id is safe to put in a file name: 1 to 32 ASCII letters, digits or '-'
/// (a scenario's own strategies are like `immediate-20ms`), not starting with '-'.
pub fn valid_strategy_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 32
        && !id.starts_with('-')
        && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

/// Whether a run directory name is one safe path component: 1 to 255 ASCII letters, digits,
/// '-', '_' or '.', not starting with '.' (so never `.`, `..` or hidden).
pub fn valid_run_dir(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}
