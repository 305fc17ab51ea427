//! The dependency decides the same whether it is driven by the simulated swarm or by a
//! recorded list of arrival times (as the live service is driven by real requests): record a
//! whole run's arrivals and decisions, replay the arrival list, compare decision by decision.

use std::time::Duration;

use e03_model::{Admission, ReqId};
use e03_plan::{Params, Scenario};
use simulator::queue::Nanos;
use simulator::{replay, Decision, Engine, Observer};

#[derive(Default)]
struct Admissions {
    arrivals: Vec<Nanos>,
    decided: Vec<(Nanos, ReqId, Admission)>,
    operations: u64,
}

impl Observer for Admissions {
    fn arrival(&mut self, t: Nanos, req: ReqId, _client: u32, _op: u32, _attempt: u32) {
        assert_eq!(
            req as usize,
            self.arrivals.len(),
            "request ids are arrival numbers"
        );
        self.arrivals.push(t);
    }
    fn admission(&mut self, t: Nanos, req: ReqId, admission: Admission) {
        self.decided.push((t, req, admission));
    }
    fn operation(&mut self, _: &e03_model::workload::Ended) {
        self.operations += 1;
    }
}

#[test]
fn e03b_run_admissions_equal_a_replay_of_its_arrivals() {
    let p = Params::default();
    for id in ["A", "B", "C", "D"] {
        let s = p.strategy(id).unwrap();
        let rec = Engine::new(Scenario::e03b(), &p, s, 42, Admissions::default()).run();
        assert!(rec.operations > 1000);
        let list: Vec<Duration> = rec
            .arrivals
            .iter()
            .map(|t| Duration::from_nanos(*t))
            .collect();
        let replayed: Vec<(Nanos, ReqId, Admission)> =
            replay(p.service_config(&Scenario::e03b(), 42), &list)
                .into_iter()
                .filter_map(|d| match d {
                    Decision::Admitted { t, req, admission } => Some((t, req, admission)),
                    _ => None,
                })
                .collect();
        assert_eq!(rec.decided, replayed, "strategy {id}");
        // The outage really loads the dependency: every kind of decision occurs.
        for kind in [
            |a: &Admission| matches!(a, Admission::Held),
            |a: &Admission| matches!(a, Admission::Start { .. }),
        ] {
            assert!(rec.decided.iter().any(|d| kind(&d.2)), "strategy {id}");
        }
    }
    // Immediate retries overflow the queue at the freeze's end.
    let a = Engine::new(
        Scenario::e03b(),
        &p,
        p.strategy("A").unwrap(),
        42,
        Admissions::default(),
    )
    .run();
    assert!(a.decided.iter().any(|d| d.2 == Admission::Rejected));
    assert!(a.decided.iter().any(|d| d.2 == Admission::Queued));
}
