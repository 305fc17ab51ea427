//! The `[chain]` table of a scenario file (config layer): read and checked into the model's
//! [`ChainDef`]. The chain's state machines are in [`e03_model::chain`]; a variant's fault proxies
//! (`[[chain.variant.proxy]]`) in [`e03_model::chain_proxy`].

use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use e03_model::chain::{
    Bottom, ChainDef, ChainProxy, ChainVariant, HopSpec, MAX_CHAIN_MS, MAX_HOPS, MAX_REQUESTS,
};
use e03_model::http_fault::HttpFaultWindow;
use e03_model::spec_error::SpecError;
use e03_model::timeline::{PhaseKind, Timeline};

use super::phases::{read_timeline, FilePhase};
use super::ScenarioError;

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
    variant: Vec<FileVariant>,
}

/// One `[[chain.variant]]` table as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileVariant {
    id: String,
    #[serde(default)]
    label: String,
    top: HopSpec,
    #[serde(default)]
    hops: Vec<HopSpec>,
    #[serde(default)]
    propagate: bool,
    #[serde(default)]
    proxy: Vec<Spanned<FileProxy>>,
}

/// One `[[chain.variant.proxy]]` table as written: the layer it stands in front of, by name,
/// and its phases, each a `[[timeline]]` entry of an HTTP fault.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileProxy {
    before: String,
    timeline: Vec<Spanned<FilePhase>>,
}

fn one() -> u32 {
    1
}

impl FileChain {
    /// Checks the table; the error names the key, what it accepts and its line (`at`: the
    /// table's offset in `text`, for the errors of no key of their own).
    pub fn validate(
        mut self,
        text: &str,
        origin: &str,
        at: usize,
    ) -> Result<ChainDef, ScenarioError> {
        let written: Vec<Vec<Spanned<FileProxy>>> = self
            .variant
            .iter_mut()
            .map(|v| std::mem::take(&mut v.proxy))
            .collect();
        let mut def = self
            .checked()
            .map_err(|e| ScenarioError::at(origin, text, Some(at), e.to_string()))?;
        for (v, proxies) in def.variants.iter_mut().zip(written) {
            for p in proxies {
                let place = p.span().start;
                let fail = |m: String| {
                    ScenarioError::at(
                        origin,
                        text,
                        Some(place),
                        format!("[[chain.variant.proxy]] of variant {:?}: {m}", v.id),
                    )
                };
                let p = p.into_inner();
                let layer = layer_named(v, &p.before).map_err(|e| fail(e.to_string()))?;
                if v.proxy_before(layer).is_some() {
                    return Err(fail(format!(
                        "before = {:?}: a layer has one proxy in front of it at most",
                        p.before
                    )));
                }
                if p.timeline.is_empty() {
                    return Err(fail(
                        "timeline = []: expected at least one phase, e.g. { phase = \"abort\", \
                         start_s = 0.0, end_s = 3600.0, status = 503 }"
                            .into(),
                    ));
                }
                if let Some(other) = p.timeline.iter().find(|f| !f.get_ref().is_http()) {
                    return Err(ScenarioError::at(
                        origin,
                        text,
                        Some(other.span().start),
                        format!(
                            "[[chain.variant.proxy]] of variant {:?}: the {} phase: a chain's \
                             proxy applies the HTTP fault phases only: abort, delay, hang or \
                             reset",
                            v.id,
                            other.get_ref().phase_name()
                        ),
                    ));
                }
                let mut timeline = Timeline::default();
                for w in read_timeline(
                    "[[chain.variant.proxy]] timeline:",
                    &p.timeline,
                    text,
                    origin,
                    1,
                )? {
                    if let PhaseKind::Http { rule } = w.phase {
                        timeline.http.push(HttpFaultWindow {
                            start: Duration::from_secs_f64(w.start_s),
                            end: Duration::from_secs_f64(w.end_s),
                            rule,
                        });
                    }
                }
                v.proxies.push(ChainProxy { layer, timeline });
            }
        }
        Ok(def)
    }

    /// The checks of every key but the proxies'; the message names the key and what it
    /// accepts.
    fn checked(self) -> Result<ChainDef, SpecError> {
        let bottom = match self.bottom.as_str() {
            "fail" => {
                if self.hold_ms.is_some() {
                    return Err(SpecError::rule(
                        "[chain] hold_ms",
                        "[chain] hold_ms is only for bottom = \"hang\"",
                    ));
                }
                let status = self.status.unwrap_or(503);
                if !(400..=599).contains(&status) {
                    return Err(SpecError::value(
                        "[chain] status",
                        status,
                        "an HTTP error status from 400 to 599",
                    ));
                }
                Bottom::Fail { status }
            }
            "hang" => {
                if self.status.is_some() {
                    return Err(SpecError::rule(
                        "[chain] status",
                        "[chain] status is only for bottom = \"fail\"",
                    ));
                }
                let hold_ms = self.hold_ms.ok_or_else(|| {
                    SpecError::rule(
                        "[chain] hold_ms",
                        "[chain] bottom = \"hang\" needs hold_ms: how long every call is held, \
                         in ms",
                    )
                })?;
                if !(1..=MAX_CHAIN_MS).contains(&hold_ms) {
                    return Err(SpecError::value(
                        "[chain] hold_ms",
                        hold_ms,
                        format!("a whole number of ms from 1 to {MAX_CHAIN_MS}"),
                    ));
                }
                Bottom::Hang { hold_ms }
            }
            other => {
                return Err(SpecError::value(
                    "[chain] bottom",
                    format!("{other:?}"),
                    "\"fail\" or \"hang\"",
                ))
            }
        };
        if !(1..=MAX_REQUESTS).contains(&self.requests) {
            return Err(SpecError::value(
                "[chain] requests",
                self.requests,
                format!("a whole number from 1 to {MAX_REQUESTS}"),
            ));
        }
        if self.variant.is_empty() {
            return Err(SpecError::rule(
                "[[chain.variant]]",
                "[chain] needs at least one [[chain.variant]] table",
            ));
        }
        let mut seen: Vec<&str> = Vec::new();
        for v in &self.variant {
            if !crate::names::valid_name(&v.id) {
                return Err(SpecError::value(
                    "[[chain.variant]] id",
                    format!("{:?}", v.id),
                    "1 to 32 characters from a-z, 0-9, '-' and '_'",
                ));
            }
            if seen.contains(&v.id.as_str()) {
                return Err(SpecError::value(
                    "[[chain.variant]] id",
                    format!("{:?}", v.id),
                    "ids that differ",
                ));
            }
            seen.push(&v.id);
            v.top.check(&format!("[[chain.variant]] {:?} top", v.id))?;
            if v.hops.len() > MAX_HOPS {
                return Err(SpecError::rule(
                    format!("[[chain.variant]] {:?} hops", v.id),
                    format!(
                        "[[chain.variant]] {:?} hops: {} hops, expected at most {MAX_HOPS}",
                        v.id,
                        v.hops.len()
                    ),
                ));
            }
            for (i, h) in v.hops.iter().enumerate() {
                h.check(&format!("[[chain.variant]] {:?} hop {}", v.id, i + 1))?;
            }
        }
        Ok(ChainDef {
            bottom,
            requests: self.requests,
            variants: self
                .variant
                .into_iter()
                .map(FileVariant::into_variant)
                .collect(),
        })
    }
}

impl FileVariant {
    /// The model's variant, its proxies not read yet.
    fn into_variant(self) -> ChainVariant {
        ChainVariant {
            id: self.id,
            label: self.label,
            top: self.top,
            hops: self.hops,
            propagate: self.propagate,
            proxies: Vec::new(),
        }
    }
}

/// The layer a proxy's `before` names: a hop of `v` by its name, or `"bottom"`; the message
/// says what it accepts.
fn layer_named(v: &ChainVariant, before: &str) -> Result<u32, SpecError> {
    let names: Vec<&str> = v.hops.iter().map(|h| h.name.as_str()).collect();
    let accepts = || {
        let mut all: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
        all.push("\"bottom\"".into());
        all.join(", ")
    };
    if before == "bottom" {
        return Ok(v.bottom_layer());
    }
    match names.iter().filter(|n| **n == before).count() {
        1 => Ok(names.iter().position(|n| *n == before).expect("found") as u32 + 1),
        0 => Err(SpecError::value(
            "before",
            format!("{before:?}"),
            format!(
                "the name of a hop of this variant or \"bottom\" (the layer the proxy stands \
                 in front of): {}",
                accepts()
            ),
        )),
        _ => Err(SpecError::rule(
            "before",
            format!(
                "before = {before:?}: more than one hop has that name; give the hops names \
                 that differ"
            ),
        )),
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
                .and_then(|c| c.validate(text, "t.toml", 0).map_err(|e| e.to_string()))
                .unwrap_err()
        };
        assert!(bad("bottom = \"melt\"\n").contains("bottom = \"melt\""));
        assert!(bad("bottom = \"hang\"\n").contains("needs hold_ms"));
        let e = bad(
            "bottom = \"fail\"\n[[variant]]\nid = \"x\"\ntop = { name = \"t\", attempts = 0 }\n",
        );
        assert!(e.contains("attempts = 0"), "{e}");
    }

    #[test]
    fn a_proxy_stands_before_one_named_layer_with_http_faults_only() {
        let chain = |proxies: &str| {
            format!(
                "bottom = \"fail\"\n[[variant]]\nid = \"v\"\ntop = {{ name = \"t\", attempts = 1 }}\n\
                 hops = [{{ name = \"a\", attempts = 2 }}, {{ name = \"b\", attempts = 2 }}]\n\
                 {proxies}"
            )
        };
        let read = |text: &str| {
            toml::from_str::<FileChain>(text)
                .map_err(|e| e.to_string())
                .and_then(|c| c.validate(text, "t.toml", 0).map_err(|e| e.to_string()))
        };
        let abort = "{ phase = \"abort\", start_s = 0.0, end_s = 60.0, status = 503 }";
        let ok = read(&chain(&format!(
            "[[variant.proxy]]\nbefore = \"b\"\ntimeline = [{abort}]\n\
             [[variant.proxy]]\nbefore = \"bottom\"\ntimeline = [{abort}]\n"
        )))
        .unwrap();
        let v = &ok.variants[0];
        assert_eq!(
            v.proxies.iter().map(|p| p.layer).collect::<Vec<_>>(),
            [2, 3]
        );
        assert_eq!(v.proxy_before(2).unwrap().timeline.http.len(), 1);
        assert!(v.proxy_before(1).is_none());
        let twice = read(&chain(&format!(
            "[[variant.proxy]]\nbefore = \"a\"\ntimeline = [{abort}]\n\
             [[variant.proxy]]\nbefore = \"a\"\ntimeline = [{abort}]\n"
        )))
        .unwrap_err();
        assert!(
            twice.contains("one proxy in front of it at most"),
            "{twice}"
        );
        let empty = read(&chain("[[variant.proxy]]\nbefore = \"a\"\ntimeline = []\n")).unwrap_err();
        assert!(empty.contains("expected at least one phase"), "{empty}");
        let top = read(&chain(&format!(
            "[[variant.proxy]]\nbefore = \"t\"\ntimeline = [{abort}]\n"
        )))
        .unwrap_err();
        assert!(top.contains("\"a\", \"b\", \"bottom\""), "{top}");
        let down = read(&chain(
            "[[variant.proxy]]\nbefore = \"a\"\ntimeline = [{ phase = \"down\", start_s = 0.0, \
             end_s = 1.0 }]\n",
        ))
        .unwrap_err();
        assert!(down.contains("the down phase"), "{down}");
    }
}
