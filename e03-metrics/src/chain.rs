//! The figures of a chain run (see [`e03_core::chain`]): calls per layer, calls at the bottom
//! per top request, how long the top operations lasted, and the work the lower layers did for
//! a top caller that had already given up. Computed from the records the hops and the top
//! caller log (live) or the simulator produces (the same records).

use e03_core::chain::{CallRecord, ChainVariant, TopRecord};
use e03_core::checks::{CheckMetric, CheckSpec, Published};

use crate::checks::CheckRow;
use crate::tables::Table;

/// The figures of one variant's run.
#[derive(Debug, Clone, PartialEq)]
pub struct ChainRun {
    pub variant: ChainVariant,
    /// Top requests made.
    pub requests: u64,
    /// Calls that arrived at each layer: index 0 is the top caller's operations, then the hops,
    /// then the bottom.
    pub calls_per_layer: Vec<u64>,
    /// Calls refused at arrival (deadline passed), per layer (index as above).
    pub refused_per_layer: Vec<u64>,
    /// The longest and the mean top operation, in ms.
    pub op_max_ms: f64,
    pub op_mean_ms: f64,
    /// Top requests that succeeded.
    pub succeeded: u64,
    /// Lower-layer work after the top caller had given up: total ms of every call's time past
    /// the top's end, and the calls that ended after it.
    pub wasted_ms: f64,
    pub late_calls: u64,
}

impl ChainRun {
    /// Computes a variant's figures from its records.
    pub fn of(variant: &ChainVariant, tops: &[TopRecord], calls: &[CallRecord]) -> ChainRun {
        let layers = variant.bottom_layer() as usize + 1;
        let mut calls_per_layer = vec![0u64; layers];
        let mut refused_per_layer = vec![0u64; layers];
        calls_per_layer[0] = tops.len() as u64;
        let mut wasted_us = 0u64;
        let mut late_calls = 0u64;
        for c in calls {
            let l = (c.layer as usize).min(layers - 1);
            calls_per_layer[l] += 1;
            if c.refused {
                refused_per_layer[l] += 1;
            }
            if let Some(top) = tops.iter().find(|t| t.req == c.req) {
                if c.end_us > top.end_us {
                    late_calls += 1;
                    wasted_us += c.end_us - c.start_us.max(top.end_us);
                }
            }
        }
        let durations: Vec<f64> = tops
            .iter()
            .map(|t| t.end_us.saturating_sub(t.start_us) as f64 / 1000.0)
            .collect();
        let n = tops.len().max(1) as f64;
        ChainRun {
            variant: variant.clone(),
            requests: tops.len() as u64,
            calls_per_layer,
            refused_per_layer,
            op_max_ms: durations.iter().copied().fold(0.0, f64::max),
            op_mean_ms: durations.iter().sum::<f64>() / n,
            succeeded: tops.iter().filter(|t| t.status == 200).count() as u64,
            wasted_ms: wasted_us as f64 / 1000.0 / n,
            late_calls,
        }
    }

    /// Calls at the bottom layer per top request.
    pub fn bottom_per_request(&self) -> f64 {
        self.calls_per_layer.last().copied().unwrap_or(0) as f64 / self.requests.max(1) as f64
    }

    /// A check's figure for this run.
    pub fn figure(&self, metric: &CheckMetric) -> Option<f64> {
        match metric {
            CheckMetric::BottomCallsPerRequest => Some(self.bottom_per_request()),
            CheckMetric::OpMaxMs => Some(self.op_max_ms),
            CheckMetric::WastedMs => Some(self.wasted_ms),
            CheckMetric::LateCalls => Some(self.late_calls as f64 / self.requests.max(1) as f64),
            _ => None,
        }
    }
}

/// Round to 0.1 and drop a trailing `.0`.
fn num(v: f64) -> String {
    let r = (v * 10.0).round() / 10.0;
    if r.fract() == 0.0 {
        format!("{r:.0}")
    } else {
        format!("{r:.1}")
    }
}

/// One row per variant: calls per layer (named), bottom calls per top request, operation
/// times, wasted work.
pub fn chain_table(runs: &[ChainRun]) -> Table {
    let headers = [
        "variant",
        "requests",
        "calls per layer (top first)",
        "bottom per request",
        "ok",
        "op max ms",
        "op mean ms",
        "wasted ms/request",
        "late calls/request",
        "refused",
    ];
    let rows = runs
        .iter()
        .map(|r| {
            let layers: Vec<String> = r
                .calls_per_layer
                .iter()
                .enumerate()
                .map(|(i, n)| format!("{} {n}", r.variant.layer_name(i as u32)))
                .collect();
            vec![
                r.variant.id.clone(),
                r.requests.to_string(),
                layers.join(", "),
                num(r.bottom_per_request()),
                r.succeeded.to_string(),
                num(r.op_max_ms),
                num(r.op_mean_ms),
                num(r.wasted_ms),
                num(r.late_calls as f64 / r.requests.max(1) as f64),
                r.refused_per_layer.iter().sum::<u64>().to_string(),
            ]
        })
        .collect();
    Table {
        headers: headers.iter().map(|h| h.to_string()).collect(),
        rows,
    }
}

/// The scenario's chain checks on these runs (those for `live` or simulated runs).
pub fn chain_checks(checks: &[CheckSpec], runs: &[ChainRun], live: bool) -> Vec<CheckRow> {
    checks
        .iter()
        .filter(|c| c.metric.is_chain() && c.mode.applies(live))
        .map(|c| {
            let mut row = CheckRow {
                metric: c.metric_label(),
                strategy: c.strategy.clone(),
                seed: 0,
                ours: "not run".into(),
                published: match &c.published {
                    Published::Number(n) => num(*n),
                    _ => "-".into(),
                },
                band: c.band.describe(),
                pass: None,
            };
            if let Some(v) = runs
                .iter()
                .find(|r| r.variant.id == c.strategy)
                .and_then(|r| r.figure(&c.metric))
            {
                row.ours = num(v);
                if let Published::Number(p) = c.published {
                    row.pass = Some(c.band.holds(v, p));
                }
            }
            row
        })
        .collect()
}

/// The check rows as a table.
pub fn check_rows_table(rows: &[CheckRow]) -> Table {
    Table {
        headers: ["variant", "figure", "published", "ours", "band", "check"]
            .iter()
            .map(|h| h.to_string())
            .collect(),
        rows: rows
            .iter()
            .map(|r| {
                vec![
                    r.strategy.clone(),
                    r.metric.clone(),
                    r.published.clone(),
                    r.ours.clone(),
                    r.band.clone(),
                    r.verdict().to_string(),
                ]
            })
            .collect(),
    }
}

/// Whether any chain check of `def`'s runs failed (or could not be computed).
pub fn any_failed(rows: &[CheckRow]) -> bool {
    rows.iter().any(|r| r.pass == Some(false))
}

#[cfg(test)]
mod tests {
    use super::*;
    use e03_core::chain::HopSpec;

    fn variant(hops: usize) -> ChainVariant {
        let h = |n: &str| HopSpec {
            name: n.into(),
            attempts: 3,
            timeout_ms: 1000,
            backoff_ms: 0,
            deadline_ms: None,
        };
        ChainVariant {
            id: "v".into(),
            label: String::new(),
            top: h("client"),
            hops: (0..hops).map(|i| h(&format!("h{i}"))).collect(),
            propagate: false,
        }
    }

    fn call(layer: u32, req: u64, start_us: u64, end_us: u64) -> CallRecord {
        CallRecord {
            layer,
            req,
            start_us,
            end_us,
            status: 503,
            refused: false,
        }
    }

    #[test]
    fn calls_are_counted_per_layer_and_work_after_the_top_gave_up_is_wasted() {
        let v = variant(1);
        let tops = [TopRecord {
            req: 1,
            start_us: 0,
            end_us: 1_000_000,
            status: 504,
            attempts: 1,
        }];
        let calls = [
            call(1, 1, 0, 3_000_000),         // 2 s after the top left
            call(2, 1, 0, 500_000),           // done in time
            call(2, 1, 2_000_000, 2_500_000), // all of it late
        ];
        let r = ChainRun::of(&v, &tops, &calls);
        assert_eq!(r.calls_per_layer, vec![1, 1, 2]);
        assert_eq!(r.bottom_per_request(), 2.0);
        assert_eq!(r.late_calls, 2);
        assert_eq!(r.wasted_ms, 2500.0);
        assert_eq!(r.op_max_ms, 1000.0);
        assert_eq!(r.figure(&CheckMetric::LateCalls), Some(2.0));
    }
}
