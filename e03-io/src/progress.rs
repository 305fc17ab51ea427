//! The progress setting (`--progress`, `E03_PROGRESS`) every driver shares: the live swarm's
//! line or bar, and `lab simulate`'s. Showing it is the driver's.

use std::str::FromStr;

use crate::error::InputError;

/// How a run shows its progress on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProgressMode {
    /// A bar on a terminal, lines otherwise.
    Auto,
    Bar,
    Lines,
    Off,
}

impl FromStr for ProgressMode {
    type Err = InputError;

    fn from_str(s: &str) -> Result<Self, InputError> {
        match s.trim() {
            "" | "auto" => Ok(ProgressMode::Auto),
            "bar" => Ok(ProgressMode::Bar),
            "lines" => Ok(ProgressMode::Lines),
            "off" => Ok(ProgressMode::Off),
            other => Err(InputError::Progress {
                value: other.to_string(),
            }),
        }
    }
}
