//! The [`Scenario`] value: a [`ScenarioDef`] shared by `Arc`, passed around like an id, equal
//! by name; the built-in ones found by name (parsed once), a user's made from its definition,
//! and the scenario list a run names (`all`, a name).

use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};

use crate::params::ParamError;
use crate::strategy_table::StrategySpec;
use e03_model::timeline::PhaseWindow;

use super::catalogue::builtins;
use super::def::ScenarioDef;
use super::error::ScenarioError;

/// A scenario: its [`ScenarioDef`] by value, shared (`Arc`), so that tables, logs and plans
/// pass it around like an id. There is no process-wide table of scenarios: [`Scenario::named`]
/// finds the built-in ones (compiled in, the same in every process), and a user's file becomes a
/// scenario with [`Scenario::from_def`], which the plan then carries to every process that needs
/// it. Two scenarios are equal when their names are. It serializes as its name; only a built-in
/// one deserializes from a name alone (a user's travels with its definition, as in
/// [`crate::control::StartRun`]).
#[derive(Clone)]
pub struct Scenario(Arc<ScenarioDef>);

/// The built-in scenarios, parsed once: constant data, like the text they come from.
fn catalogue() -> &'static [Scenario] {
    static CATALOGUE: OnceLock<Vec<Scenario>> = OnceLock::new();
    CATALOGUE.get_or_init(|| {
        builtins()
            .into_iter()
            .map(|d| Scenario(Arc::new(d)))
            .collect()
    })
}

impl Scenario {
    /// E03-A, transient faults (built in).
    pub fn e03a() -> Scenario {
        Scenario::named("e03a").expect("built in")
    }

    /// E03-B, the outage (built in).
    pub fn e03b() -> Scenario {
        Scenario::named("e03b").expect("built in")
    }

    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// The scenario's data.
    pub fn def(&self) -> &ScenarioDef {
        &self.0
    }

    pub fn title(&self) -> &str {
        &self.0.title
    }

    /// The built-in scenario called `name`.
    pub fn named(name: &str) -> Option<Scenario> {
        catalogue().iter().find(|s| s.name() == name).cloned()
    }

    /// The built-in scenarios, in catalogue order.
    pub fn builtins() -> Vec<Scenario> {
        catalogue().to_vec()
    }

    /// A user's scenario (a file a binary read, or a definition a control call carried). A
    /// built-in name is refused unless the definition is that built-in one (a file must not
    /// silently replace a built-in scenario); the user's strategies it was read with
    /// ([`ScenarioDef::policies`]) may differ. Two files of one run under one name are refused
    /// where the run's list is made (`e03_io::scenario_files`).
    pub fn from_def(def: ScenarioDef) -> Result<Scenario, ScenarioError> {
        if let Some(known) = Scenario::named(&def.name) {
            let mut bare = def.clone();
            bare.policies.clear();
            if *known.def() != bare {
                return Err(ScenarioError {
                    origin: def.name.clone(),
                    line: String::new(),
                    message: format!(
                        "the name {:?} is taken by a built-in scenario: give the file another \
                         name",
                        def.name
                    ),
                });
            }
        }
        Ok(Scenario(Arc::new(def)))
    }

    /// This scenario read with a user's policy file: its strategies may name `policies`' ids
    /// (see [`ScenarioDef::policies`]). The name stays the same.
    /// The same scenario, its name kept, with its timeline's phases replaced (the phase map's
    /// cells move a phase's end): checked as [`ScenarioDef::check`] checks a definition.
    pub fn with_phases(
        &self,
        phases: Vec<PhaseWindow>,
    ) -> Result<Scenario, e03_model::spec_error::SpecError> {
        let mut def = (*self.0).clone();
        def.phases = phases;
        def.check()?;
        Ok(Scenario(Arc::new(def)))
    }

    pub fn with_policies(&self, policies: &[StrategySpec]) -> Scenario {
        if policies.is_empty() && self.0.policies.is_empty() {
            return self.clone();
        }
        let mut def = (*self.0).clone();
        def.policies = policies.to_vec();
        Scenario(Arc::new(def))
    }

    /// A scenario name, or `all` for the E03 experiment (E03-A, then E03-B: what compose and
    /// `lab run all` have always run; the catalogue's other scenarios run by name). Only built-in
    /// names: files are read by the binaries (the core does no IO; see `e03_io::scenario_files`).
    pub fn parse_list(value: &str) -> Result<Vec<Scenario>, ParamError> {
        let lower = value.trim().to_ascii_lowercase();
        let alias = match lower.as_str() {
            "e03-a" | "a" => "e03a",
            "e03-b" | "b" => "e03b",
            other => other,
        };
        if alias == "all" {
            return Ok(vec![Scenario::e03a(), Scenario::e03b()]);
        }
        Scenario::named(alias)
            .map(|s| vec![s])
            .ok_or_else(|| ParamError::UnknownScenario {
                known: Scenario::known_names().join(", "),
                value: value.to_string(),
            })
    }

    /// The names of the built-in scenarios, for error messages.
    pub fn known_names() -> Vec<String> {
        catalogue().iter().map(|s| s.name().to_string()).collect()
    }
}

impl PartialEq for Scenario {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for Scenario {}

impl std::hash::Hash for Scenario {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.name().hash(h);
    }
}

impl PartialOrd for Scenario {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Scenario {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.name().cmp(other.name())
    }
}

impl std::fmt::Debug for Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Scenario({})", self.name())
    }
}

impl std::fmt::Display for Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Scenario {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Scenario {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        Scenario::named(&name).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown scenario {name:?}: expected a built-in one ({}); a user's scenario \
                 travels with its definition",
                Scenario::known_names().join(", ")
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Params;
    use crate::scenario::{parse, parse_with, BUILTIN_FILES};
    use std::collections::BTreeMap;

    const MINIMAL: &str = "name = \"mine\"\ntitle = \"Mine\"\ndescription = \"d\"\n";

    #[test]
    fn handles_compare_by_name_and_find_their_data() {
        assert_eq!(
            Scenario::builtins()[..2],
            [Scenario::e03a(), Scenario::e03b()]
        );
        assert_eq!(Scenario::e03b().title(), "E03-B outage");
        // `all` is the E03 experiment, not the whole catalogue (herd alone is 1000 clients).
        assert_eq!(
            Scenario::parse_list("all").unwrap(),
            [Scenario::e03a(), Scenario::e03b()]
        );
        assert_eq!(Scenario::parse_list("E03-B").unwrap(), [Scenario::e03b()]);
        let json = serde_json::to_string(&Scenario::e03a()).unwrap();
        assert_eq!(json, "\"e03a\"");
        assert_eq!(
            serde_json::from_str::<Scenario>(&json).unwrap(),
            Scenario::e03a()
        );
        assert!(serde_json::from_str::<Scenario>("\"nope\"").is_err());
    }

    #[test]
    fn a_user_scenario_is_a_value_not_an_entry_in_a_process_table() {
        let mine = parse(&MINIMAL.replace("mine", "reg-test"), "x.toml").unwrap();
        let s = Scenario::from_def(mine.clone()).unwrap();
        assert_eq!(s.def(), &mine);
        assert_eq!(Scenario::from_def(mine).unwrap(), s);
        // Making it left nothing behind: its name alone means nothing to this process.
        assert!(Scenario::named("reg-test").is_none());
        assert!(Scenario::parse_list("reg-test").is_err());
        assert!(serde_json::from_str::<Scenario>("\"reg-test\"").is_err());
        // A file cannot take a built-in name, unless it is that built-in scenario.
        let fake = parse(&MINIMAL.replace("mine", "e03b"), "x.toml").unwrap();
        let e = Scenario::from_def(fake).unwrap_err();
        assert!(e.message.contains("taken by a built-in scenario"), "{e}");
        let same = parse(BUILTIN_FILES[1].1, "copy.toml").unwrap();
        assert_eq!(Scenario::from_def(same).unwrap(), Scenario::e03b());
    }

    #[test]
    fn a_users_policies_travel_with_the_scenario() {
        let policies = crate::strategy_table::parse_policy_file(
            "[[strategy]]\nid = \"mine\"\nmax_attempts = 2\nbackoff = \"none\"\n",
            "p.toml",
        )
        .unwrap();
        let text = format!("{MINIMAL}[policy]\nstrategies = \"A,mine\"\n");
        let e = parse(&text, "x.toml").unwrap_err();
        assert!(e.message.contains("\"mine\" is not one"), "{e}");
        let def = parse_with(&text, "x.toml", &policies).unwrap();
        assert_eq!(def.policies, policies);
        let s = Scenario::from_def(def).unwrap();
        let p = Params::for_scenario(&s, &BTreeMap::new()).unwrap();
        let ids: Vec<&str> = p.strategies().iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["A", "mine"]);
        assert_eq!(p.strategies()[1].max_attempts, Some(2));
        // Sent as JSON (a plan, a start call), the definition keeps them.
        let back: ScenarioDef =
            serde_json::from_str(&serde_json::to_string(s.def()).unwrap()).unwrap();
        assert_eq!(back.policies, policies);
        back.check().unwrap();
        // A built-in scenario run with the file may name them too, under its own name.
        let raw = BTreeMap::from([("E03_STRATEGIES".to_string(), "mine".to_string())]);
        assert!(Params::for_scenario(&Scenario::e03b(), &raw).is_err());
        let b = Scenario::e03b().with_policies(&policies);
        assert_eq!(b, Scenario::e03b());
        assert_eq!(
            Params::for_scenario(&b, &raw).unwrap().strategies()[0].id,
            "mine"
        );
    }
}
