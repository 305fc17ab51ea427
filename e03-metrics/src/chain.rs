//! The figures of a chain run (see [`e03_model::chain`]): calls per layer, calls at the bottom
//! per top request, how long the top operations lasted, and the work the lower layers did for
//! a top caller that had already given up. Computed from the records the hops and the top
//! caller log (live) or the simulator produces (the same records).

use e03_model::chain::{CallRecord, ChainVariant, TopRecord};
use e03_model::events::ProxiedRecord;
use e03_plan::checks::{CheckMetric, CheckSpec, Published};

use crate::checks::CheckRow;
use crate::table::Table;

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
    /// Calls sent to a layer with a fault proxy in front of it, as that proxy received them,
    /// per layer (index as above; 0 where no proxy stands).
    pub proxied_per_layer: Vec<u64>,
    /// Of those, the calls the proxy never forwarded (answered, reset or held): the layer did
    /// not see them.
    pub not_forwarded_per_layer: Vec<u64>,
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
    /// Computes a variant's figures from its records: the top caller's, the layers' and the
    /// records of the proxy in front of a layer (with that layer).
    pub fn of(
        variant: &ChainVariant,
        tops: &[TopRecord],
        calls: &[CallRecord],
        proxied: &[(u32, ProxiedRecord)],
    ) -> ChainRun {
        let layers = variant.bottom_layer() as usize + 1;
        let mut calls_per_layer = vec![0u64; layers];
        let mut refused_per_layer = vec![0u64; layers];
        let mut proxied_per_layer = vec![0u64; layers];
        let mut not_forwarded_per_layer = vec![0u64; layers];
        for (layer, p) in proxied {
            let l = (*layer as usize).min(layers - 1);
            proxied_per_layer[l] += 1;
            if !p.forwarded() {
                not_forwarded_per_layer[l] += 1;
            }
        }
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
            proxied_per_layer,
            not_forwarded_per_layer,
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
                .map(|(i, n)| {
                    let name = r.variant.layer_name(i as u32);
                    match r.variant.proxy_before(i as u32) {
                        None => format!("{name} {n}"),
                        Some(_) => format!(
                            "{name} {n} (its proxy: {} received, {} not forwarded)",
                            r.proxied_per_layer[i], r.not_forwarded_per_layer[i]
                        ),
                    }
                })
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
                published: crate::checks::against(c),
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
        headers: ["variant", "figure", "against", "ours", "band", "check"]
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

/// `values` of the runs as `id value, id value, ...` (the table's order).
fn listed(runs: &[ChainRun], value: impl Fn(&ChainRun) -> String) -> String {
    runs.iter()
        .map(|r| format!("{} {}", r.variant.id, value(r)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The conclusion of a chain run, from the same figures as [`chain_table`] and the check rows:
/// calls at the bottom per top request (and how many times more the most sends than the
/// fewest), the longest top operation when the variants differ, the work the lower layers did
/// after the top caller had given up, the top requests that succeeded, and the checks' tally.
pub fn chain_conclusion(runs: &[ChainRun], rows: &[CheckRow]) -> Vec<String> {
    let mut out = Vec::new();
    if runs.is_empty() {
        return out;
    }
    let by = |f: fn(&ChainRun) -> f64| {
        let most = runs
            .iter()
            .max_by(|a, b| f(a).total_cmp(&f(b)))
            .expect("runs");
        let fewest = runs
            .iter()
            .min_by(|a, b| f(a).total_cmp(&f(b)))
            .expect("runs");
        (most, fewest)
    };
    let (most, fewest) = by(ChainRun::bottom_per_request);
    let bottom = |r: &ChainRun| num(r.bottom_per_request());
    if runs.len() == 1 || most.bottom_per_request() == fewest.bottom_per_request() {
        out.push(format!(
            "Calls at the bottom per top request: {} in every variant.",
            bottom(most)
        ));
    } else {
        let mut line = format!(
            "Calls at the bottom per top request: {}. The most, {}, sends {}",
            listed(runs, bottom),
            most.variant.id,
            bottom(most)
        );
        if fewest.bottom_per_request() > 0.0 {
            line += &format!(
                ", {}x as many as the fewest, {} ({}).",
                num(most.bottom_per_request() / fewest.bottom_per_request()),
                fewest.variant.id,
                bottom(fewest)
            );
        } else {
            line += &format!("; {} sends none.", fewest.variant.id);
        }
        out.push(line);
    }
    let (longest, shortest) = by(|r| r.op_max_ms);
    if longest.op_max_ms - shortest.op_max_ms > 100.0
        && longest.op_max_ms > 1.5 * shortest.op_max_ms
    {
        out.push(format!(
            "Longest top operation: {} (ms). {} made its caller wait {}x as long as {}.",
            listed(runs, |r| num(r.op_max_ms)),
            longest.variant.id,
            num(longest.op_max_ms / shortest.op_max_ms.max(0.001)),
            shortest.variant.id
        ));
    }
    if runs.iter().any(|r| r.wasted_ms > 0.0) {
        let (most, least) = by(|r| r.wasted_ms);
        out.push(format!(
            "Work the lower layers did after the top caller had given up, per top request: {} \
             (ms; calls ending after the top's end, per request: {}). The most in {}, the least \
             in {}.",
            listed(runs, |r| num(r.wasted_ms)),
            listed(
                runs,
                |r| num(r.late_calls as f64 / r.requests.max(1) as f64)
            ),
            most.variant.id,
            least.variant.id
        ));
    } else {
        out.push(
            "No lower layer worked on after its top caller had given up, in any variant.".into(),
        );
    }
    if runs.iter().all(|r| r.succeeded == 0) {
        out.push("No top request succeeded, in any variant.".into());
    } else if runs.iter().all(|r| r.succeeded == r.requests) {
        out.push("Every top request succeeded, in every variant.".into());
    } else {
        out.push(format!(
            "Top requests that succeeded: {}.",
            listed(runs, |r| format!("{} of {}", r.succeeded, r.requests))
        ));
    }
    if !rows.is_empty() {
        let count = |v: &str| rows.iter().filter(|r| r.verdict() == v).count();
        let failed: Vec<String> = rows
            .iter()
            .filter(|r| r.pass == Some(false))
            .map(|r| format!("{} of {}", r.metric, r.strategy))
            .collect();
        let mut line = format!("Checks: {} PASS, {} FAIL", count("PASS"), count("FAIL"));
        let other = rows.len() - count("PASS") - count("FAIL");
        if other > 0 {
            line += &format!(", {other} reported only");
        }
        if failed.is_empty() {
            line += ".";
        } else {
            line += &format!(" ({}).", failed.join(", "));
        }
        out.push(line);
    }
    out
}

/// The chain run as JSON (`chain.json`, the chain's summary beside its report): the scenario,
/// live or simulated, each variant's figures unrounded (the table's cells are these, rounded)
/// with its layers' names, and the check rows.
pub fn chain_json(
    scenario: &str,
    title: &str,
    live: bool,
    runs: &[ChainRun],
    rows: &[CheckRow],
) -> serde_json::Value {
    let variants: Vec<serde_json::Value> = runs
        .iter()
        .map(|r| {
            serde_json::json!({
                "id": r.variant.id,
                "label": r.variant.label,
                "requests": r.requests,
                "layers": (0..r.calls_per_layer.len())
                    .map(|l| r.variant.layer_name(l as u32))
                    .collect::<Vec<_>>(),
                "calls_per_layer": r.calls_per_layer,
                "proxied_per_layer": r.proxied_per_layer,
                "not_forwarded_per_layer": r.not_forwarded_per_layer,
                "refused_per_layer": r.refused_per_layer,
                "bottom_per_request": r.bottom_per_request(),
                "succeeded": r.succeeded,
                "op_max_ms": r.op_max_ms,
                "op_mean_ms": r.op_mean_ms,
                "wasted_ms": r.wasted_ms,
                "late_calls": r.late_calls,
                "late_calls_per_request": r.late_calls as f64 / r.requests.max(1) as f64,
            })
        })
        .collect();
    let checks: Vec<serde_json::Value> = rows
        .iter()
        .map(|r| {
            serde_json::json!({
                "variant": r.strategy,
                "figure": r.metric,
                "published": r.published,
                "ours": r.ours,
                "band": r.band,
                "check": r.verdict(),
            })
        })
        .collect();
    serde_json::json!({
        "scenario": scenario,
        "title": title,
        "kind": "chain",
        "simulated": !live,
        "complete": true,
        "variants": variants,
        "checks": checks,
    })
}

/// Whether any chain check of `def`'s runs failed (or could not be computed).
pub fn any_failed(rows: &[CheckRow]) -> bool {
    rows.iter().any(|r| r.pass == Some(false))
}

#[cfg(test)]
mod tests {
    use super::*;
    use e03_model::chain::HopSpec;

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
            proxies: Vec::new(),
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
        let r = ChainRun::of(&v, &tops, &calls, &[]);
        assert_eq!(r.calls_per_layer, vec![1, 1, 2]);
        assert_eq!(r.bottom_per_request(), 2.0);
        assert_eq!(r.late_calls, 2);
        assert_eq!(r.wasted_ms, 2500.0);
        assert_eq!(r.op_max_ms, 1000.0);
        assert_eq!(r.figure(&CheckMetric::LateCalls), Some(2.0));
    }

    #[test]
    fn the_conclusion_names_the_multiplier_the_wasted_work_and_a_failed_check() {
        let mut fast = variant(1);
        fast.id = "one-hop".into();
        let mut deep = variant(2);
        deep.id = "two-hops".into();
        let tops = [TopRecord {
            req: 1,
            start_us: 0,
            end_us: 1_000_000,
            status: 503,
            attempts: 1,
        }];
        let a = ChainRun::of(&fast, &tops, &[call(1, 1, 0, 10), call(2, 1, 0, 10)], &[]);
        let bottom: Vec<CallRecord> = (0..4).map(|_| call(3, 1, 0, 1_500_000)).collect();
        let b = ChainRun::of(&deep, &tops, &bottom, &[]);
        let row = |strategy: &str, pass| CheckRow {
            metric: "bottom calls per top request".into(),
            strategy: strategy.into(),
            seed: 0,
            ours: "4".into(),
            published: "3".into(),
            band: "exact".into(),
            pass: Some(pass),
        };
        let lines = chain_conclusion(&[a, b], &[row("one-hop", true), row("two-hops", false)]);
        assert_eq!(
            lines[0],
            "Calls at the bottom per top request: one-hop 1, two-hops 4. The most, two-hops, \
             sends 4, 4x as many as the fewest, one-hop (1)."
        );
        assert!(
            lines[1].starts_with(
                "Work the lower layers did after the top caller had given up, per top request: \
                 one-hop 0, two-hops 2000 (ms;"
            ),
            "{lines:?}"
        );
        assert_eq!(lines[2], "No top request succeeded, in any variant.");
        assert_eq!(
            lines[3],
            "Checks: 1 PASS, 1 FAIL (bottom calls per top request \
             of two-hops)."
        );
    }
}
