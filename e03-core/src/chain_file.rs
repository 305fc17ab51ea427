//! The `[chain]` table of a scenario file (config layer): read and checked into the model's
//! [`ChainDef`]. The chain's state machines are in [`crate::chain`].

use serde::Deserialize;

use crate::chain::{Bottom, ChainDef, ChainVariant, MAX_CHAIN_MS, MAX_HOPS, MAX_REQUESTS};

/// The `[chain]` table as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileChain {
    bottom: String,
    status: Option<u16>,
    hold_ms: Option<u64>,
    #[serde(default = "one")]
    requests: u32,
    #[serde(default)]
    variant: Vec<ChainVariant>,
}

fn one() -> u32 {
    1
}

impl FileChain {
    /// Checks the table; the message names the key and what it accepts.
    pub fn validate(self) -> Result<ChainDef, String> {
        let bottom = match self.bottom.as_str() {
            "fail" => {
                if self.hold_ms.is_some() {
                    return Err("[chain] hold_ms is only for bottom = \"hang\"".into());
                }
                let status = self.status.unwrap_or(503);
                if !(400..=599).contains(&status) {
                    return Err(format!(
                        "[chain] status = {status}: expected an HTTP error status from 400 to 599"
                    ));
                }
                Bottom::Fail { status }
            }
            "hang" => {
                if self.status.is_some() {
                    return Err("[chain] status is only for bottom = \"fail\"".into());
                }
                let hold_ms = self.hold_ms.ok_or_else(|| {
                    "[chain] bottom = \"hang\" needs hold_ms: how long every call is held, in ms"
                        .to_string()
                })?;
                if !(1..=MAX_CHAIN_MS).contains(&hold_ms) {
                    return Err(format!(
                        "[chain] hold_ms = {hold_ms}: expected a whole number of ms from 1 to \
                         {MAX_CHAIN_MS}"
                    ));
                }
                Bottom::Hang { hold_ms }
            }
            other => {
                return Err(format!(
                    "[chain] bottom = {other:?}: expected \"fail\" or \"hang\""
                ))
            }
        };
        if !(1..=MAX_REQUESTS).contains(&self.requests) {
            return Err(format!(
                "[chain] requests = {}: expected a whole number from 1 to {MAX_REQUESTS}",
                self.requests
            ));
        }
        if self.variant.is_empty() {
            return Err("[chain] needs at least one [[chain.variant]] table".into());
        }
        let mut seen: Vec<&str> = Vec::new();
        for v in &self.variant {
            if !crate::names::valid_name(&v.id) {
                return Err(format!(
                    "[[chain.variant]] id = {:?}: expected 1 to 32 characters from a-z, 0-9, '-' \
                     and '_'",
                    v.id
                ));
            }
            if seen.contains(&v.id.as_str()) {
                return Err(format!(
                    "[[chain.variant]] id = {:?}: expected ids that differ",
                    v.id
                ));
            }
            seen.push(&v.id);
            v.top.check(&format!("[[chain.variant]] {:?} top", v.id))?;
            if v.hops.len() > MAX_HOPS {
                return Err(format!(
                    "[[chain.variant]] {:?} hops: {} hops, expected at most {MAX_HOPS}",
                    v.id,
                    v.hops.len()
                ));
            }
            for (i, h) in v.hops.iter().enumerate() {
                h.check(&format!("[[chain.variant]] {:?} hop {}", v.id, i + 1))?;
            }
        }
        Ok(ChainDef {
            bottom,
            requests: self.requests,
            variants: self.variant,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_tables_name_the_key() {
        let bad = |text: &str| {
            toml::from_str::<FileChain>(text)
                .map_err(|e| e.to_string())
                .and_then(FileChain::validate)
                .unwrap_err()
        };
        assert!(bad("bottom = \"melt\"\n").contains("bottom = \"melt\""));
        assert!(bad("bottom = \"hang\"\n").contains("needs hold_ms"));
        let e = bad(
            "bottom = \"fail\"\n[[variant]]\nid = \"x\"\ntop = { name = \"t\", attempts = 0 }\n",
        );
        assert!(e.contains("attempts = 0"), "{e}");
    }
}
