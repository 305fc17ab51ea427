//! A value given whole that cannot be used: [`SpecError`], the error of the checks of a table,
//! a control call's body or a spec, naming the key as the user wrote it and what it accepts.
//! The file readers put it after the file's name and line (`e03_plan::scenario::ScenarioError`,
//! `e03_plan::strategy_table::PolicyFileError`).

use std::fmt::Display;

/// A value given whole that cannot be used. Every variant names the key (with the table or the
/// prefix it was written under) and what the key accepts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// `KEY = VALUE: expected ACCEPTS`.
    #[error("{key} = {value}: expected {accepts}")]
    Value {
        key: String,
        value: String,
        accepts: String,
    },
    /// `KEY: expected ACCEPTS`: the value is not of the shape the key takes.
    #[error("{key}: expected {accepts}")]
    Expected { key: String, accepts: String },
    /// `expected KEY, WHAT`: a key the value needs is missing.
    #[error("expected {key}, {what}")]
    Missing { key: String, what: String },
    /// `KEY: VALUE is not ACCEPTS`.
    #[error("{key}: {value} is not {accepts}")]
    Not {
        key: String,
        value: String,
        accepts: String,
    },
    /// `KIND: KEY must be ACCEPTS`: a field of a kind of budget (or other tagged value).
    #[error("{kind}: {key} must be {accepts}")]
    Must {
        kind: String,
        key: String,
        accepts: String,
    },
    /// A key the table does not take.
    #[error("unknown key `{key}` in {table}: expected {accepts}")]
    UnknownKey {
        table: String,
        key: String,
        accepts: String,
    },
    /// A scenario definition's settings that break a rule of the parameters: `message` is
    /// the parameter's error, which names the parameter (the model layer does not know its
    /// type).
    #[error("scenario {scenario:?}: {message}")]
    Settings { scenario: String, message: String },
    /// A rule between keys, or a key that belongs to another kind: `message` names `key` and
    /// what it needs.
    #[error("{message}")]
    Rule { key: String, message: String },
}

impl SpecError {
    pub fn value(key: impl Display, value: impl Display, accepts: impl Display) -> Self {
        SpecError::Value {
            key: key.to_string(),
            value: value.to_string(),
            accepts: accepts.to_string(),
        }
    }

    pub fn expected(key: impl Display, accepts: impl Display) -> Self {
        SpecError::Expected {
            key: key.to_string(),
            accepts: accepts.to_string(),
        }
    }

    pub fn missing(key: impl Display, what: impl Display) -> Self {
        SpecError::Missing {
            key: key.to_string(),
            what: what.to_string(),
        }
    }

    pub fn not(key: impl Display, value: impl Display, accepts: impl Display) -> Self {
        SpecError::Not {
            key: key.to_string(),
            value: value.to_string(),
            accepts: accepts.to_string(),
        }
    }

    pub fn unknown_key(table: impl Display, key: impl Display, accepts: impl Display) -> Self {
        SpecError::UnknownKey {
            table: table.to_string(),
            key: key.to_string(),
            accepts: accepts.to_string(),
        }
    }

    pub fn rule(key: impl Display, message: impl Display) -> Self {
        SpecError::Rule {
            key: key.to_string(),
            message: message.to_string(),
        }
    }

    /// The same error with its key written under `prefix` (`role.` + `bottom status`): the
    /// key, and a rule's text, which starts with it.
    pub fn within(self, prefix: &str) -> Self {
        let under = |key: String| format!("{prefix}{key}");
        match self {
            SpecError::Value {
                key,
                value,
                accepts,
            } => SpecError::Value {
                key: under(key),
                value,
                accepts,
            },
            SpecError::Expected { key, accepts } => SpecError::Expected {
                key: under(key),
                accepts,
            },
            SpecError::Missing { key, what } => SpecError::Missing {
                key: under(key),
                what,
            },
            SpecError::Not {
                key,
                value,
                accepts,
            } => SpecError::Not {
                key: under(key),
                value,
                accepts,
            },
            SpecError::Must { kind, key, accepts } => SpecError::Must {
                kind: under(kind),
                key,
                accepts,
            },
            SpecError::UnknownKey {
                table,
                key,
                accepts,
            } => SpecError::UnknownKey {
                table: under(table),
                key,
                accepts,
            },
            SpecError::Settings { scenario, message } => SpecError::Settings { scenario, message },
            SpecError::Rule { key, message } => SpecError::Rule {
                key: under(key),
                message: under(message),
            },
        }
    }

    /// The key the error names, as written.
    pub fn key(&self) -> &str {
        match self {
            SpecError::Value { key, .. }
            | SpecError::Expected { key, .. }
            | SpecError::Missing { key, .. }
            | SpecError::Not { key, .. }
            | SpecError::Must { key, .. }
            | SpecError::UnknownKey { key, .. }
            | SpecError::Rule { key, .. } => key,
            SpecError::Settings { .. } => "settings",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_form_names_the_key_and_what_it_accepts() {
        let e = SpecError::value("[chain] requests", 0, "a whole number from 1 to 1000");
        assert_eq!(
            e.to_string(),
            "[chain] requests = 0: expected a whole number from 1 to 1000"
        );
        assert_eq!(e.key(), "[chain] requests");
        assert_eq!(
            SpecError::expected("hedge", "a table").to_string(),
            "hedge: expected a table"
        );
        assert_eq!(
            SpecError::missing("delay_ms", "the delay in milliseconds").to_string(),
            "expected delay_ms, the delay in milliseconds"
        );
        assert_eq!(
            SpecError::not("toxicity", 2, "a probability from 0 to 1").to_string(),
            "toxicity: 2 is not a probability from 0 to 1"
        );
        assert_eq!(
            SpecError::unknown_key("hedge", "x", "max_attempts").to_string(),
            "unknown key `x` in hedge: expected max_attempts"
        );
        assert_eq!(
            SpecError::value("bottom status", 200, "an HTTP error status")
                .within("role.")
                .to_string(),
            "role.bottom status = 200: expected an HTTP error status"
        );
        let e = SpecError::rule("status", "status is only for bottom = \"fail\"");
        assert_eq!(e.to_string(), "status is only for bottom = \"fail\"");
        assert_eq!(e.key(), "status");
    }
}
