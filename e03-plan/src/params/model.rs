//! The model's configs built from [`Params`]: the config layer turns the checked values into
//! what the model's state machines take (admission and queue policy, attempt limits, start
//! rules, the step workload's config, the open loop, the policies, the balancer, a client
//! session's config), so that the model names no parameter.

use std::time::Duration;

use e03_model::operation::Limits;
use e03_model::strategy::Strategy;

use super::values::{ms, secs};
use super::Params;

impl Params {
    /// Which requests the dependency admits (`E03_ADMISSION`).
    pub fn admission(&self) -> e03_model::dependency::AdmissionRule {
        e03_model::dependency::AdmissionRule::parse(&self.service.admission).unwrap_or_default()
    }

    /// Whether the dependency admits by deadline (`E03_ADMISSION=deadline`): its callers then
    /// send each attempt's timeout in the deadline header.
    pub fn admits_by_deadline(&self) -> bool {
        self.admission() == e03_model::dependency::AdmissionRule::Deadline
    }

    /// The share of operations that are best effort, in parts per million
    /// (`E03_BEST_EFFORT_SHARE`).
    pub fn best_effort_ppm(&self) -> u32 {
        (self.swarm.best_effort_share * 1e6).round() as u32
    }

    /// How the dependency serves its queue (`E03_QUEUE_POLICY`, `E03_QUEUE_TARGET_MS`,
    /// `E03_QUEUE_INTERVAL_MS`).
    pub fn queue_policy(&self) -> e03_model::dependency::QueuePolicy {
        use e03_model::dependency::{QueueDiscipline, QueuePolicy};
        let s = &self.service;
        QueuePolicy {
            discipline: QueueDiscipline::parse(&s.queue_policy).unwrap_or_default(),
            target: ms(s.queue_target_ms),
            interval: ms(s.queue_interval_ms),
        }
    }

    /// Whether the dependency that `strategy`'s runs face admits by deadline: the strategy
    /// table's `admission` where it sets one, `E03_ADMISSION` otherwise. The swarm sends the
    /// deadline header exactly then.
    pub fn admits_by_deadline_for(&self, strategy: &str) -> bool {
        self.admission_for(strategy) == e03_model::dependency::AdmissionRule::Deadline
    }

    /// Which requests the dependency that `strategy`'s runs face admits: the strategy table's
    /// `admission` where it sets one, `E03_ADMISSION` otherwise.
    pub fn admission_for(&self, strategy: &str) -> e03_model::dependency::AdmissionRule {
        self.strategy(strategy)
            .and_then(|s| s.server.admission)
            .unwrap_or_else(|| self.admission())
    }

    pub fn limits(&self) -> Limits {
        Limits {
            max_attempts: self.swarm.max_attempts,
            attempt_timeout: ms(self.swarm.attempt_timeout_ms),
            deadline: ms(self.swarm.deadline_ms),
        }
    }

    pub fn duration(&self) -> Duration {
        secs(self.swarm.duration_s)
    }

    /// The swarm's connect timeout, if it has one (`E03_CONNECT_TIMEOUT_MS`).
    pub fn connect_timeout(&self) -> Option<Duration> {
        self.swarm.connect_timeout_ms.map(ms)
    }

    pub fn think_range(&self) -> (Duration, Duration) {
        (ms(self.swarm.think_min_ms), ms(self.swarm.think_max_ms))
    }

    /// When the clients' operations start (`E03_WORKLOAD`, `E03_PERIOD_MS`).
    pub fn starts(&self) -> e03_model::session::Starts {
        use e03_model::session::Starts;
        match self.swarm.workload.as_str() {
            "group" => Starts::AtZero,
            "ramp" => Starts::Ramp(ms(self.swarm.period_ms)),
            "fixed_rate" => Starts::Every(ms(self.swarm.period_ms)),
            "open_loop" => Starts::OnDemand,
            _ => Starts::ClosedLoop,
        }
    }

    /// True for the step workload (`E03_WORKLOAD=steps`, the rate-limit article).
    pub fn is_steps(&self) -> bool {
        self.swarm.workload == "steps"
    }

    /// The step workload's configuration for a strategy run at load `load` (burst items per
    /// step).
    pub fn step_config(&self, load: u32) -> e03_model::steps::StepConfig {
        let p = &self.steps;
        e03_model::steps::StepConfig {
            step: ms(p.step_ms),
            steps: p.steps,
            batch_items: p.batch_items,
            burst_start: p.burst_start,
            burst_items: p.burst_items,
            load,
            step_calls: p.step_calls,
            max_attempts: self.swarm.max_attempts,
            interactive_every: p.interactive_every,
            interactive_until: p.interactive_until,
            interactive_budget: p.interactive_budget,
        }
    }

    /// The fan-out workload's calls per request (`E03_WORKLOAD=fan_out`, `E03_FANOUT`).
    pub fn fanout(&self) -> Option<u32> {
        (self.swarm.workload == "fan_out").then_some(self.swarm.fanout)
    }

    /// The latency past which a fan-out request is slow (`E03_FANOUT_SLOW_MS`).
    pub fn fanout_slow(&self) -> Duration {
        ms(self.swarm.fanout_slow_ms)
    }

    /// True for the open-loop workload (`E03_WORKLOAD=open_loop`).
    pub fn is_open_loop(&self) -> bool {
        self.swarm.workload == "open_loop"
    }

    /// The open loop's offered load over the run (`E03_RATE`, `E03_RATE_PEAK`).
    pub fn rate_shape(&self) -> e03_model::arrivals::RateShape {
        e03_model::arrivals::RateShape {
            base: self.swarm.rate,
            peak: self.swarm.rate_peak,
            duration: self.duration(),
        }
    }

    /// The open loop of one seed: its arrivals and its slot pool (`E03_MAX_IN_FLIGHT`).
    pub fn open_loop(&self, seed: u64) -> e03_model::arrivals::OpenLoop {
        e03_model::arrivals::OpenLoop::new(
            seed,
            self.session_config(),
            self.rate_shape(),
            self.swarm.max_in_flight,
        )
    }

    /// Operations per client at most (`E03_OPS_PER_CLIENT`, 0 for no limit).
    pub fn max_ops(&self) -> Option<u32> {
        (self.swarm.ops_per_client > 0)
            .then(|| self.swarm.ops_per_client.min(u32::MAX as u64) as u32)
    }

    /// The policy instances of `strategy` in a run with this seed, one per holder of
    /// `E03_BUDGET_SCOPE` ([`e03_model::policy::Policies`]).
    pub fn policies(&self, strategy: &Strategy, seed: u64) -> e03_model::policy::Policies {
        e03_model::policy::Policies::new(strategy, seed, self.swarm.budget_scope, self.swarm.shards)
    }

    /// `E03_REPLICAS`: copies of the dependency.
    pub fn replicas(&self) -> u32 {
        self.service.replicas
    }

    /// The callers' balancer over the replicas (`E03_BALANCER`, `E03_OUTLIER_5XX`,
    /// `E03_EJECTION_MS`, `E03_OUTLIER_INTERVAL_MS`, `E03_HEALTH_INTERVAL_MS`,
    /// `E03_UNHEALTHY_THRESHOLD`), with Envoy's other defaults and a readiness probe's (a 1 s
    /// timeout, back after 1 good probe).
    pub fn balancer(&self) -> e03_model::balancer::BalancerSpec {
        let w = &self.swarm;
        let mut spec = e03_model::balancer::BalancerSpec::new(
            e03_model::balancer::Pick::parse(&w.balancer)
                .unwrap_or(e03_model::balancer::Pick::RoundRobin),
        );
        if w.health_interval_ms > 0 {
            spec.health = Some(e03_model::balancer::HealthCheckSpec {
                interval: Duration::from_millis(w.health_interval_ms),
                unhealthy_threshold: w.unhealthy_threshold,
                ..e03_model::balancer::HealthCheckSpec::default()
            });
        }
        if w.outlier_5xx > 0 {
            spec.outlier = Some(e03_model::balancer::OutlierSpec {
                consecutive_5xx: w.outlier_5xx,
                interval: Duration::from_millis(w.outlier_interval_ms),
                base_ejection_time: Duration::from_millis(w.ejection_ms),
                ..e03_model::balancer::OutlierSpec::default()
            });
        }
        spec
    }
}

/// The plan builds the model's configs: a client session's, from the parameters.
impl Params {
    pub fn session_config(&self) -> e03_model::session::SessionConfig {
        e03_model::session::SessionConfig {
            limits: self.limits(),
            duration: self.duration(),
            think: self.think_range(),
            starts: self.starts(),
            max_ops: self.max_ops(),
            best_effort_ppm: self.best_effort_ppm(),
        }
    }
}
