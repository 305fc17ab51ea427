//! A scenario file that cannot be used: [`ScenarioError`], whose text names the file, the
//! line and what is expected.

use crate::toml_table::line_of;

/// A scenario file that cannot be used. Its text names the file, the line and what is expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("scenario file {origin}{line}: {message}")]
pub struct ScenarioError {
    /// The file's path (or `built-in NAME.toml`).
    pub origin: String,
    /// `:LINE` when the error has a place in the file, else empty.
    pub(super) line: String,
    pub message: String,
}

impl ScenarioError {
    pub(super) fn at(origin: &str, text: &str, offset: Option<usize>, message: String) -> Self {
        let line = offset
            .map(|o| format!(":{}", line_of(text, o)))
            .unwrap_or_default();
        ScenarioError {
            origin: origin.to_string(),
            line,
            message,
        }
    }

    /// The 1-based line of the error, when it has one.
    pub fn line(&self) -> Option<usize> {
        self.line.trim_start_matches(':').parse().ok()
    }
}
