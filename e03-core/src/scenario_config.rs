//! The model's configuration for one scenario: a run's [`Params`] read against its
//! [`Scenario`] (the scenario's timeline with E03's timeline parameters applied, the
//! dependency's configuration per strategy and replica). Apart from `params.rs` so that the
//! parameters do not name the scenarios, which are built on them: the arrows run
//! `scenario_config -> scenario -> params`.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::dependency::ServiceConfig;
use crate::faults::FaultModel;
use crate::params::{ms, secs, ParamError, Params};
use crate::scenario::Scenario;
use crate::timeline::{
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
    /// strategy table's own queue policy and admission ([`crate::strategy::ServerSide`]) where
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
                    crate::limit::LimitKind::parse(&s.concurrency_limit).unwrap_or_default()
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
            .copied()
            .collect();
        let freeze_at = phases.iter().position(|p| p.phase == PhaseKind::Freeze);
        let mut timeline = Timeline::default();
        for (i, p) in phases.iter().enumerate() {
            let (start, end) = (secs(p.start_s), secs(p.end_s));
            let after_freeze =
                freeze_at.is_some_and(|f| f + 1 == i && phases[f].end_s == p.start_s);
            match p.phase {
                PhaseKind::Up => {}
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
