//! Reading a table of a user's TOML file (a `[[strategy]]`, a `[[check]]`): an error that
//! names the key and where its value stands, and the line of that place, so that every message
//! says `file:line`. A leaf that imports nothing of the crate.

use std::collections::BTreeMap;

use toml::Spanned;

/// What is wrong with a strategy table: the key (empty for the table as a whole), where its
/// value starts in the file's text (if known) and what is expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableError {
    pub key: String,
    pub offset: Option<usize>,
    pub message: String,
}

/// An error about `key` of a table that starts at `at`, placed at the key's value if present.
pub(crate) fn fail_at<T>(
    table: &BTreeMap<String, Spanned<toml::Value>>,
    at: usize,
    key: &str,
    message: String,
) -> Result<T, TableError> {
    Err(TableError {
        key: key.to_string(),
        offset: Some(table.get(key).map_or(at, |v| v.span().start)),
        message,
    })
}

/// The 1-based line of byte `offset` in `text`.
pub(crate) fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}
