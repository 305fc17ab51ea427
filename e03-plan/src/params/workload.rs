//! A run's workload built from [`Params`]: the one machine a driver drives
//! ([`e03_model::workload::Workload`]: the steps, the open loop, fan-out or N clients, behind a
//! balancer over replicas), for the whole run or one shard of it, and why a run cannot be split
//! over shard processes.

use super::Params;

impl Params {
    /// The workload of one strategy's run with this seed, in the shape the parameters give:
    /// the step workload (`E03_WORKLOAD=steps`, at the strategy's load level or the first one),
    /// the open loop (`open_loop`), or N clients as one machine (closed loop, group, fixed
    /// rate). Every driver drives whichever it is through [`Workload`](e03_model::workload::Workload).
    pub fn workload(
        &self,
        strategy: &e03_model::strategy::Strategy,
        seed: u64,
    ) -> Box<dyn e03_model::workload::Workload + Send> {
        let inner = self.workload_of_one(strategy, seed);
        match self.replicas() {
            1 => inner,
            n => Box::new(e03_model::workload::Balanced::new(
                inner,
                self.balancer(),
                n as usize,
                seed,
            )),
        }
    }

    /// [`Self::workload`] against one replica (no balancer).
    fn workload_of_one(
        &self,
        strategy: &e03_model::strategy::Strategy,
        seed: u64,
    ) -> Box<dyn e03_model::workload::Workload + Send> {
        use e03_model::workload::{Arrivals, Clients, FanOut, Steps};
        if self.is_steps() {
            let load = strategy.load.unwrap_or(self.steps().loads[0]);
            let timeout = self.limits().attempt_timeout;
            Box::new(Steps::new(self.step_config(load), strategy, seed, timeout))
        } else if self.is_open_loop() {
            Box::new(Arrivals::new(self.open_loop(seed), strategy))
        } else if let Some(fan) = self.fanout() {
            let config = self.session_config();
            Box::new(FanOut::new(
                seed,
                self.swarm().clients,
                fan,
                self.swarm().fanout_quorum,
                config,
                strategy,
            ))
        } else {
            let config = self.session_config();
            Box::new(Clients::new(seed, self.swarm().clients, config, strategy))
        }
    }
}

impl Params {
    /// Why this run cannot be split over `count` swarm processes (shards, [`e03_model::shard`]),
    /// as a message naming the setting and what would work; `None` when it can. Shards split a
    /// closed loop's clients (a group, fixed-rate callers, a ramp alike); a budget or breaker
    /// shared by the whole fleet would need one place shared by every process, which the lab
    /// does not build (docs/budget-scope.md says what a user would use).
    pub fn unshardable(&self, count: u32) -> Option<String> {
        if count <= 1 {
            return None;
        }
        if self.replicas() > 1 {
            return Some(format!(
                "E03_SHARD: a run over replicas (E03_REPLICAS={}) runs in one swarm process: its \
                 balancer's outlier detection counts every caller's failures, as one sidecar's",
                self.replicas()
            ));
        }
        let workload = if self.is_steps() {
            Some("the step workload (E03_WORKLOAD=steps)")
        } else if self.is_open_loop() {
            Some("the open loop (E03_WORKLOAD=open_loop)")
        } else if self.fanout().is_some() {
            Some("fan-out (E03_WORKLOAD=fan_out)")
        } else {
            None
        };
        if let Some(w) = workload {
            return Some(format!(
                "E03_SHARD: {w} runs in one swarm process; {count} shards split the clients of a \
                 closed loop (or a group, fixed-rate callers, a ramp)"
            ));
        }
        let stateful = self
            .strategies()
            .iter()
            .find(|s| e03_model::policy::holds_state(s));
        // Shard scope: holder `c mod S` is within one process `c mod count` when count divides S.
        let shards = self.swarm.shards;
        if let (Some(s), e03_model::policy::BudgetScope::Shard) =
            (stateful, self.swarm.budget_scope)
        {
            if !shards.is_multiple_of(count) {
                return Some(format!(
                    "E03_SHARDS={shards} with {count} shard processes: strategy {}'s budget or \
                     breaker of one shard would be split over processes; give --shards a \
                     multiple of {count}",
                    s.id
                ));
            }
        }
        if self.swarm.budget_scope == e03_model::policy::BudgetScope::Fleet {
            if let Some(s) = stateful {
                return Some(format!(
                    "E03_BUDGET_SCOPE=fleet with {count} shards: strategy {}'s budget or breaker \
                     would need one place shared by {count} processes, which the lab does not \
                     build; use --budget-scope shard --shards {count} (one per shard process), \
                     or client (docs/budget-scope.md)",
                    s.id
                ));
            }
        }
        None
    }

    /// [`Params::workload`] for the shard `shard` of a run split over swarm processes: its
    /// clients only ([`e03_model::workload::Clients::shard`]). The whole run for
    /// [`e03_model::shard::Shard::WHOLE`]; the caller checked [`Params::unshardable`].
    pub fn shard_workload(
        &self,
        strategy: &e03_model::strategy::Strategy,
        seed: u64,
        shard: e03_model::shard::Shard,
    ) -> Box<dyn e03_model::workload::Workload + Send> {
        if shard.is_whole() {
            return self.workload(strategy, seed);
        }
        assert!(
            self.unshardable(shard.count).is_none(),
            "a run that cannot be sharded was checked before"
        );
        let config = self.session_config();
        Box::new(e03_model::workload::Clients::shard(
            seed,
            self.swarm().clients,
            config,
            strategy,
            shard,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::raw;

    /// Which runs split over swarm processes: a closed loop with no shared state, or state held
    /// per shard process; a fleet-wide budget, split holders or an open loop are refused,
    /// naming the setting.
    #[test]
    fn a_run_splits_over_shards_only_where_no_state_spans_processes() {
        let p = |pairs: &[(&str, &str)]| Params::from_raw(&raw(pairs)).unwrap();
        assert_eq!(p(&[]).unshardable(1), None);
        assert_eq!(p(&[("E03_STRATEGIES", "A,B,C")]).unshardable(4), None);
        let e = p(&[]).unshardable(4).unwrap();
        assert!(
            e.contains("E03_BUDGET_SCOPE=fleet") && e.contains("strategy D"),
            "{e}"
        );
        let shard = |n: &str| p(&[("E03_BUDGET_SCOPE", "shard"), ("E03_SHARDS", n)]);
        assert_eq!(shard("4").unshardable(4), None);
        assert_eq!(shard("200").unshardable(4), None);
        let e = shard("2").unshardable(4).unwrap();
        assert!(
            e.contains("E03_SHARDS=2") && e.contains("multiple of 4"),
            "{e}"
        );
        assert_eq!(p(&[("E03_BUDGET_SCOPE", "client")]).unshardable(4), None);
        let open = p(&[("E03_WORKLOAD", "open_loop"), ("E03_STRATEGIES", "C")]);
        let e = open.unshardable(2).unwrap();
        assert!(e.contains("open loop"), "{e}");
    }

    #[test]
    fn each_strategy_runs_once_per_load_and_the_ids_survive_a_round_trip() {
        let raw = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<std::collections::BTreeMap<_, _>>()
        };
        let p = crate::Params::from_raw(&raw(&[
            ("E03_WORKLOAD", "steps"),
            ("E03_STRATEGIES", "A,B"),
            ("E03_STEP_LOADS", "3,6"),
        ]))
        .unwrap();
        let ids: Vec<&str> = p.strategies().iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["A-L3", "B-L3", "A-L6", "B-L6"]);
        assert_eq!(p.strategies()[3].load, Some(6));
        assert_eq!(p.strategies()[3].base_id(), "B");
        assert_eq!(p.step_config(6).load, 6);
        // What a driver passes on reads back the same.
        assert_eq!(crate::Params::from_raw(&p.to_raw()).unwrap(), p);
        for bad in ["3,3", "0", "", "1,2,3,4,5,6,7,8,9"] {
            let e = crate::Params::from_raw(&raw(&[
                ("E03_WORKLOAD", "steps"),
                ("E03_STEP_LOADS", bad),
            ]));
            assert!(e.is_err(), "{bad:?}");
        }
        let e = crate::Params::from_raw(&raw(&[("E03_BURST_ITEMS", "200")])).unwrap_err();
        assert!(e.to_string().contains("E03_BURST_ITEMS"), "{e}");
    }
}
