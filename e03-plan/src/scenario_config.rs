//! The model's configuration for one scenario: a run's [`Params`] read against its
//! [`Scenario`] (the scenario's timeline with E03's timeline parameters applied, the
//! dependency's configuration per strategy and replica). Apart from `params/` so that the
//! parameters do not name the scenarios, which are built on them: the arrows run
//! `scenario_config -> scenario -> params`.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::params::{ms, secs, ParamError, Params};
use crate::scenario::Scenario;
use e03_model::dependency::ServiceConfig;
use e03_model::faults::FaultModel;
use e03_model::http_fault::HttpFaultWindow;
use e03_model::timeline::{
    DegradedWindow, DownWindow, FreezeWindow, PhaseKind, RateLimitWindow, Timeline, WireFault,
    WireWindow,
};

impl Params {
    /// The parameters of one scenario: its file's settings, overridden by `raw` (the user's
    /// env vars and flags, keyed by env name). Validated like [`Params::from_raw`].
    pub fn for_scenario(
        scenario: &Scenario,
        raw: &BTreeMap<String, String>,
    ) -> Result<Params, ParamError> {
        let def = scenario.def();
        let mut all = def.settings.clone();
        all.extend(raw.iter().map(|(k, v)| (k.clone(), v.clone())));
        Params::from_raw_with(&all, &def.own_strategies())
    }

    /// The dependency's configuration for one scenario and seed: the scenario's timeline of
    /// phases, with its first freeze and the degraded phase after it moved to these parameters
    /// (`E03_FREEZE_*`, `E03_RECOVERY_*`), and, for a scenario with a `[faults]` table, the
    /// transient faults of these parameters. The E03 parameters move what a scenario has; they
    /// do not add what it lacks (E03-B has no transient faults whatever `E03_FAIL_RATE` says).
    pub fn service_config(&self, scenario: &Scenario, seed: u64) -> ServiceConfig {
        self.service_config_for(scenario, seed, "")
    }

    /// [`Self::service_config`] for the dependency that `strategy`'s runs face: with the
    /// strategy table's own queue policy and admission ([`e03_model::strategy::ServerSide`]) where
    /// it sets them. An id the run does not have (a standalone run's) takes the run's.
    pub fn service_config_for(
        &self,
        scenario: &Scenario,
        seed: u64,
        strategy: &str,
    ) -> ServiceConfig {
        self.replica_config_for(scenario, seed, strategy, 0)
    }

    /// [`Self::service_config_for`] of replica `replica`: its own timeline
    /// ([`Self::timeline_of`]); the rest is every replica's.
    pub fn replica_config_for(
        &self,
        scenario: &Scenario,
        seed: u64,
        strategy: &str,
        replica: u32,
    ) -> ServiceConfig {
        // The row's own server side, where its table sets one (a single lookup).
        let server = self
            .strategy(strategy)
            .map(|s| s.server)
            .unwrap_or_default();
        let mut queue_policy = self.queue_policy();
        if let Some(d) = server.queue_policy {
            queue_policy.discipline = d;
        }
        let s = self.service();
        ServiceConfig {
            workers: s.workers,
            queue: s.queue,
            service_time: ms(s.service_ms),
            queue_policy,
            admission: server.admission.unwrap_or_else(|| self.admission()),
            priority_reserve: s.priority_reserve,
            concurrency_limit: server
                .concurrency_limit
                .unwrap_or_else(|| {
                    e03_model::limit::LimitKind::parse(&s.concurrency_limit).unwrap_or_default()
                })
                .limit(ms(s.limit_timeout_ms)),
            timeline: self.timeline_of(scenario, replica),
            faults: if !scenario.def().has_faults
                || (s.fail_rate == 0.0
                    && s.slow_rate == 0.0
                    && s.lost_rate == 0.0
                    && s.permanent_rate == 0.0
                    && s.timeout_rate == 0.0
                    && s.cutoff_rate == 0.0
                    && s.tail_rate == 0.0
                    && s.input_tokens == 0)
            {
                FaultModel::default()
            } else {
                FaultModel {
                    fail_rate: s.fail_rate,
                    slow_rate: s.slow_rate,
                    slow_delay: ms(s.slow_ms),
                    lost_rate: s.lost_rate,
                    permanent_rate: s.permanent_rate,
                    timeout_rate: s.timeout_rate,
                    cutoff_rate: s.cutoff_rate,
                    input_tokens: s.input_tokens,
                    output_tokens: s.output_tokens,
                    tail_rate: s.tail_rate,
                    tail_factor: s.tail_factor,
                }
            },
            seed,
        }
    }

    /// The scenario's timeline with E03's timeline parameters applied: they move its freeze
    /// and the degraded phase that starts where the freeze ends; other phases stay as written.
    pub fn timeline(&self, scenario: &Scenario) -> Timeline {
        self.timeline_of(scenario, 0)
    }

    /// [`Self::timeline`] of replica `replica` (`E03_REPLICAS`): the phases of every replica
    /// and its own (`[[timeline]] replica`).
    pub fn timeline_of(&self, scenario: &Scenario, replica: u32) -> Timeline {
        let s = self.service();
        let phases: Vec<_> = scenario
            .def()
            .phases
            .iter()
            .filter(|p| p.replica.is_none_or(|r| r == replica))
            .cloned()
            .collect();
        let freeze_at = phases.iter().position(|p| p.phase == PhaseKind::Freeze);
        let mut timeline = Timeline::default();
        for (i, p) in phases.iter().enumerate() {
            let (start, end) = (secs(p.start_s), secs(p.end_s));
            let after_freeze =
                freeze_at.is_some_and(|f| f + 1 == i && phases[f].end_s == p.start_s);
            match p.phase.clone() {
                PhaseKind::Up => {}
                PhaseKind::Http { rule } => {
                    timeline.http.push(HttpFaultWindow { start, end, rule })
                }
                PhaseKind::Down { status, latency_ms } => timeline.down.push(DownWindow {
                    start,
                    end,
                    status,
                    latency: s
                        .down_latency_ms
                        .map_or(Duration::from_millis(latency_ms), ms),
                }),
                PhaseKind::RateLimited {
                    calls,
                    window_ms,
                    count_rejected,
                    retry_after_ms,
                } => timeline.rate_limited.push(RateLimitWindow {
                    start,
                    end,
                    calls,
                    window: Duration::from_millis(window_ms),
                    count_rejected,
                    retry_after: retry_after_ms.map(Duration::from_millis),
                }),
                PhaseKind::Freeze => {
                    timeline.freeze = Some(FreezeWindow {
                        start: secs(s.freeze_start_s),
                        end: secs(s.freeze_end_s),
                    })
                }
                PhaseKind::Degraded { .. } if after_freeze => {
                    timeline.degraded = Some(DegradedWindow {
                        start: secs(s.freeze_end_s),
                        end: secs(s.recovery_end_s),
                        capacity_factor: s.recovery_factor,
                    })
                }
                PhaseKind::Degraded { capacity_factor } => {
                    timeline.degraded = Some(DegradedWindow {
                        start,
                        end,
                        capacity_factor,
                    })
                }
                PhaseKind::Refused { latency_ms } => timeline.wire.push(WireWindow {
                    start,
                    end,
                    fault: WireFault::Refused,
                    latency: s
                        .down_latency_ms
                        .map_or(Duration::from_millis(latency_ms), ms),
                }),
                PhaseKind::Toxic {
                    toxic,
                    stream,
                    toxicity,
                } => timeline.wire.push(WireWindow {
                    start,
                    end,
                    fault: WireFault::Toxic {
                        toxic,
                        stream,
                        toxicity,
                    },
                    latency: Duration::ZERO,
                }),
            }
        }
        timeline
    }

    /// E03-B's timeline under these parameters.
    pub fn outage_timeline(&self) -> Timeline {
        self.timeline(&Scenario::e03b())
    }

    /// Whether a run of these parameters meets its scenario: every phase of its timeline (E03's
    /// timeline parameters applied, every replica's) starts before the run ends. A run that
    /// ended first would show tables of `n/a` for what it never saw, and exit 0 (issue "Outputs
    /// that never overstate"); it is refused instead, naming `E03_DURATION_S` (the driver names
    /// the flag when the user typed it) and the phase. The step workload and the chains set
    /// their own length and are not checked here.
    pub fn check_reaches(&self, scenario: &Scenario) -> Result<(), ParamError> {
        if let Some(p) = scenario.def().phases.iter().find_map(|p| match &p.phase {
            PhaseKind::Http { rule } => Some((rule.fault.phase_name(), p.start_s)),
            _ => None,
        }) {
            return Err(ParamError::ProxyOnly {
                scenario: scenario.name().to_string(),
                phase: p.0,
                start_s: p.1.to_string(),
            });
        }
        if self.is_steps() || scenario.def().chain.is_some() {
            return Ok(());
        }
        let end = self.duration();
        let mut starts: Vec<(Duration, &'static str)> = Vec::new();
        for replica in 0..self.service().replicas.max(1) {
            let t = self.timeline_of(scenario, replica);
            starts.extend(t.freeze.map(|f| (f.start, "freeze")));
            starts.extend(t.degraded.map(|d| (d.start, "degraded phase")));
            starts.extend(t.down.iter().map(|d| (d.start, "down phase")));
            starts.extend(
                t.rate_limited
                    .iter()
                    .map(|r| (r.start, "rate-limited phase")),
            );
            starts.extend(t.wire.iter().map(|w| (w.start, "wire fault")));
        }
        let Some(&(start, what)) = starts.iter().filter(|(s, _)| *s >= end).min() else {
            return Ok(());
        };
        Err(ParamError::Invalid {
            name: "E03_DURATION_S".into(),
            value: self.swarm().duration_s.to_string(),
            accepts: format!(
                "more than {start} s: the run must reach every phase of {name}, and its {what} \
                 starts at {start} s (a run that ends first never sees it)",
                start = start.as_secs_f64(),
                name = scenario.name(),
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::raw;

    fn err(pairs: &[(&str, &str)]) -> String {
        Params::from_raw(&raw(pairs)).unwrap_err().to_string()
    }

    #[test]
    fn down_latency_overrides_every_down_phase_and_defaults_to_the_scenarios_own() {
        let gateway = Scenario::named("gateway4").unwrap();
        let own = Params::for_scenario(&gateway, &BTreeMap::new()).unwrap();
        // The file's own latency_ms (26 ms) by default.
        assert_eq!(
            own.timeline(&gateway).down[0].latency,
            Duration::from_millis(26)
        );
        let set = Params::for_scenario(&gateway, &raw(&[("E03_DOWN_LATENCY_MS", "0.5")])).unwrap();
        assert_eq!(
            set.timeline(&gateway).down[0].latency,
            Duration::from_micros(500)
        );
        let model = own.clone().with_down_latency(Duration::from_micros(1250));
        assert_eq!(
            model.timeline(&gateway).down[0].latency,
            Duration::from_micros(1250)
        );
        // Carried through the raw map a child receives.
        let back = Params::for_scenario(&gateway, &model.to_raw()).unwrap();
        assert_eq!(back.service().down_latency_ms, Some(1.25));
        for bad in ["-1", "600001", "x", ""] {
            let e = err(&[("E03_DOWN_LATENCY_MS", bad)]);
            assert!(
                e.contains("E03_DOWN_LATENCY_MS") && e.contains("or scenario"),
                "{e}"
            );
        }
    }

    #[test]
    fn a_row_s_own_server_policy_overrides_the_run_s_and_only_for_its_dependency() {
        use e03_model::dependency::QueueDiscipline;
        let shed = Scenario::named("shedding").unwrap();
        let raw = BTreeMap::from([("E03_QUEUE_POLICY".to_string(), "codel".to_string())]);
        let p = Params::for_scenario(&shed, &raw).unwrap();
        let c = |id: &str| p.service_config_for(&shed, 1, id);
        // The table's own policy wins over the run's codel; the run's target stays.
        assert_eq!(c("fifo").queue_policy.discipline, QueueDiscipline::Fifo);
        assert_eq!(
            c("adaptive-lifo").queue_policy.discipline,
            QueueDiscipline::AdaptiveLifo
        );
        assert_eq!(c("fifo").queue_policy.target, Duration::from_millis(5));
        use e03_model::dependency::AdmissionRule;
        assert_eq!(c("by-deadline").admission, AdmissionRule::Deadline);
        assert_eq!(c("codel").admission, AdmissionRule::All);
        assert!(p.admits_by_deadline_for("by-deadline") && !p.admits_by_deadline_for("fifo"));
        use e03_model::limit::{AimdLimit, ConcurrencyLimit, Gradient2Limit};
        assert_eq!(
            c("aimd").concurrency_limit,
            Some(ConcurrencyLimit::Aimd(AimdLimit::default()))
        );
        assert_eq!(
            c("gradient2").concurrency_limit,
            Some(ConcurrencyLimit::Gradient2(Gradient2Limit::default()))
        );
        assert_eq!(c("fifo").concurrency_limit, None);
        // The run's limit and its timeout reach every row that does not set its own.
        let raw = BTreeMap::from([
            ("E03_CONCURRENCY_LIMIT".to_string(), "aimd".to_string()),
            ("E03_LIMIT_TIMEOUT_MS".to_string(), "100".to_string()),
        ]);
        let q = Params::for_scenario(&shed, &raw).unwrap();
        let Some(ConcurrencyLimit::Aimd(limit)) = q
            .service_config_for(&shed, 1, "standalone")
            .concurrency_limit
        else {
            panic!("an AIMD limit")
        };
        assert_eq!(
            (limit.timeout, limit.max),
            (Duration::from_millis(100), 200)
        );
        assert_eq!(
            q.service_config_for(&shed, 1, "fifo").concurrency_limit,
            None
        );
        for (env, bad) in [
            ("E03_CONCURRENCY_LIMIT", "vegas"),
            ("E03_LIMIT_TIMEOUT_MS", "0"),
            ("E03_ADMISSION", "low"),
            ("E03_PRIORITY_RESERVE", "1.5"),
            ("E03_BEST_EFFORT_SHARE", "-0.1"),
        ] {
            let raw = BTreeMap::from([(env.to_string(), bad.to_string())]);
            let e = Params::for_scenario(&shed, &raw).unwrap_err().to_string();
            assert!(e.contains(env), "{e}");
        }
        // An id the run does not have (a standalone run's) takes the run's own.
        assert_eq!(
            c("standalone").queue_policy.discipline,
            QueueDiscipline::Codel
        );
        assert_eq!(p.service_config(&shed, 1), c("standalone"));
    }

    #[test]
    fn user_values_override_the_scenario_file() {
        let p = Params::for_scenario(
            &Scenario::e03a(),
            &raw(&[("E03_FAIL_RATE", "0.2"), ("E03_WORKERS", "3")]),
        )
        .unwrap();
        assert_eq!(p.service().fail_rate, 0.2);
        assert_eq!(p.service().slow_rate, 0.01, "the file's value stays");
        assert_eq!(p.service().workers, 3);
        let b = Params::for_scenario(&Scenario::e03b(), &raw(&[("E03_FREEZE_START_S", "5")]))
            .unwrap()
            .service_config(&Scenario::e03b(), 1);
        assert_eq!(b.timeline.freeze.unwrap().start, Duration::from_secs(5));
        assert_eq!(b.timeline.freeze.unwrap().end, Duration::from_secs(10));
    }

    #[test]
    fn a_scenario_file_gives_its_timeline_to_the_model() {
        let text = "name = \"params-timeline\"\ntitle = \"t\"\ndescription = \"d\"\n\
            [[timeline]]\nphase = \"down\"\nstart_s = 1\nend_s = 2\nstatus = 500\nlatency_ms = 26\n\
            [[timeline]]\nphase = \"degraded\"\nstart_s = 4\nend_s = 6\ncapacity_factor = 0.25\n";
        let def = crate::scenario::parse(text, "t.toml").unwrap();
        let sc = Scenario::from_def(def).unwrap();
        let p = Params::for_scenario(&sc, &raw(&[("E03_FREEZE_START_S", "0.5")])).unwrap();
        let t = p.timeline(&sc);
        assert_eq!(
            t.freeze, None,
            "E03_FREEZE_* add no freeze to a scenario without one"
        );
        assert_eq!(
            t.down,
            [DownWindow {
                start: Duration::from_secs(1),
                end: Duration::from_secs(2),
                status: 500,
                latency: Duration::from_millis(26),
            }]
        );
        let d = t.degraded.unwrap();
        assert_eq!(
            (d.start, d.end),
            (Duration::from_secs(4), Duration::from_secs(6))
        );
        assert_eq!(d.capacity_factor, 0.25);
        assert_eq!(
            t.incident(),
            Some((Duration::from_secs(1), Duration::from_secs(6)))
        );
    }

    #[test]
    fn scenarios_pick_their_own_model() {
        let none = BTreeMap::new();
        let a = Params::for_scenario(&Scenario::e03a(), &none)
            .unwrap()
            .service_config(&Scenario::e03a(), 1);
        assert_eq!(a, Params::default().service_config(&Scenario::e03a(), 1));
        let b = Params::default().service_config(&Scenario::e03b(), 1);
        assert_eq!(
            b.faults,
            FaultModel::default(),
            "E03_FAIL_RATE adds no faults to e03b"
        );
        assert_eq!(a.timeline, Timeline::default());
        assert_eq!(a.faults.fail_rate, 0.05);
        assert_eq!(a.faults.slow_rate, 0.01);
        let p = Params::for_scenario(&Scenario::e03b(), &none).unwrap();
        let b = p.service_config(&Scenario::e03b(), 1);
        assert_eq!(b.faults, FaultModel::default());
        assert_eq!(
            b.timeline.freeze.unwrap().start,
            Duration::from_millis(8500)
        );
    }
}
