//! One swarm run: every strategy of the plan at the same time, each against its own dependency,
//! all sharing one time zero.
//!
//! The order of a run, per strategy:
//!
//! 1. resolve its target and build its HTTP client (bad input fails here, before anything is
//!    sent), and measure the swarm's clock offset to its dependency (`GET /control/clock`,
//!    NTP style, [`e03_model::clock`]);
//! 2. open its client log and write `run_start` (with the offset);
//! 3. `POST /control/start` with the shared `start_unix_ms` (time zero a little in the future,
//!    converted once into a tokio `Instant` so both sides count from the same moment), sent on
//!    the dependency's clock: shifted by the offset, to the nearest ms (0 on one host);
//! 4. drive the run's workload (`Params::workload`: the closed loop's `clients`, a group, fixed
//!    rate, the open loop's Poisson arrivals, the steps) with `drive` until it is done (the last
//!    operation started before the duration ends within its deadline);
//! 5. `POST /control/stop` (its answer is the server's counts), write `run_end`, flush and close.
//!
//! When the shutdown future resolves, clients stop starting attempts, abort the ones in flight
//! (logged as aborted), and the run is stopped with `complete: false` everywhere.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use e03_model::events::{us, Event, RunEnd, RunStart, RunTag, Source};
use e03_model::shard::Shard;
use e03_model::Strategy;
use e03_plan::control::{run_id, RunCounts, StartRun};
use e03_plan::log_names::shard_log_path;
use precise_timer::PreciseTimer;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::client::{ClientTotals, StrategyRun};
use crate::error::SwarmError;
use crate::http::{build_client, endpoint, start_run, stop_run, WorkEndpoint};
use crate::log::ClientLog;
use crate::plan::{SeedRun, StrategyReport, SwarmReport, Target};
use crate::stop::{stop_pair, StopSignal};

/// Runs `plan` to its end, or until `shutdown` resolves (then the report says incomplete).
pub async fn run_swarm(
    plan: SeedRun,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<SwarmReport> {
    let (trigger, stop) = stop_pair();
    let watcher = tokio::spawn(async move {
        shutdown.await;
        trigger.stop();
    });
    let result = run_plan(plan, stop).await;
    watcher.abort();
    Ok(result?)
}

/// One strategy, resolved: its target, client and log.
struct Prepared {
    /// The swarm's clock offset to this dependency, if it answers `GET /control/clock`.
    clock: Option<e03_model::clock::ClockOffset>,
    strategy: Strategy,
    control_url: String,
    work: WorkEndpoint,
    log: ClientLog,
    tag: RunTag,
    /// Time zero of this strategy's run (a shard's is its dependency's).
    t0: Instant,
    /// A shard registered for its run already (its start call is made).
    registered: bool,
    /// The other replicas of its dependency (`E03_REPLICAS`), replica 1 first.
    replicas: Vec<Replica>,
}

/// Replica `r` (1 or more) of a strategy's dependency: where its run is controlled and its
/// work goes, and the swarm's clock offset to it.
struct Replica {
    control_url: String,
    work: WorkEndpoint,
    clock: Option<e03_model::clock::ClockOffset>,
}

/// A shard's registration for its run with the dependency of `strategy` (see
/// [`StartRun::shard`]): the run's id, its time zero on this swarm's clock (ms since the epoch
/// and as an `Instant`) and where its work goes.
struct Registration {
    run: String,
    start_unix_ms: u64,
    t0: Instant,
    work: Option<String>,
}

/// Registers shard `plan.shard` for the run of `strategy` at `control`, proposing time zero
/// `start_unix_ms` (this swarm's clock): the first shard's proposal is the run's time zero.
///
/// While the dependency is busy with the run before (its other shards have not all stopped
/// it; shards go through the seeds at their own pace) it asks again every 100 ms, for at most
/// [`crate::http::SHARD_PATIENCE`], each time proposing time zero `delay` from then.
async fn register(
    plan: &SeedRun,
    strategy: &Strategy,
    http: &reqwest::Client,
    control: &str,
    clock: Option<e03_model::clock::ClockOffset>,
    start_unix_ms: u64,
) -> Result<Registration, SwarmError> {
    let patience = std::time::Instant::now() + crate::http::SHARD_PATIENCE;
    let mut start_unix_ms = start_unix_ms;
    loop {
        match register_once(plan, strategy, http, control, clock, start_unix_ms).await {
            Err(e) if crate::http::is_busy(&e) && std::time::Instant::now() < patience => {
                tokio::time::sleep(Duration::from_millis(100)).await;
                start_unix_ms = time_zero(plan.start_delay).0;
            }
            other => return other,
        }
    }
}

/// One start call of [`register`].
async fn register_once(
    plan: &SeedRun,
    strategy: &Strategy,
    http: &reqwest::Client,
    control: &str,
    clock: Option<e03_model::clock::ClockOffset>,
    start_unix_ms: u64,
) -> Result<Registration, SwarmError> {
    let proposed = clock.map_or(start_unix_ms, |c| c.on_server_ms(start_unix_ms));
    let start = StartRun {
        run: run_id(&plan.scenario, &strategy.id, plan.seed, start_unix_ms),
        scenario: plan.scenario.clone(),
        strategy: strategy.id.clone(),
        seed: plan.seed,
        params: plan.params.clone(),
        start_unix_ms: proposed,
        run_dir: plan.run_dir.clone(),
        shard: plan.shard,
        replica: None,
    };
    let answer = start_run(http, control, &start).await?;
    let (run, server_ms, work) = match answer {
        Some(a) => (a.run, a.start_unix_ms, a.work),
        None => (start.run, proposed, None),
    };
    let own_ms = clock.map_or(server_ms, |c| c.on_caller_ms(server_ms));
    let t0 = instant_of_unix_ms(own_ms);
    Ok(Registration {
        run,
        start_unix_ms: own_ms,
        t0,
        work,
    })
}

/// The tokio `Instant` of the wall-clock time `unix_ms` (ms since the epoch), read once.
fn instant_of_unix_ms(unix_ms: u64) -> Instant {
    let wall = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let now = Instant::now();
    let target = Duration::from_millis(unix_ms);
    if target >= wall {
        now + (target - wall)
    } else {
        now.checked_sub(wall - target).unwrap_or(now)
    }
}

async fn run_plan(plan: SeedRun, stop: StopSignal) -> Result<SwarmReport, SwarmError> {
    let resolved = resolve(&plan)?;
    let timer = PreciseTimer::start();
    // Time zero goes to each dependency on its own clock (hosts' clocks may differ), so the
    // offsets are measured first, before time zero is chosen.
    let mut clocks = Vec::with_capacity(resolved.len());
    for (_, target, work, _) in &resolved {
        clocks.push(crate::http::measure_clock(&work.http, &target.control_url).await);
    }
    let (start_unix_ms, t0) = time_zero(plan.start_delay);
    let shard = plan.shard.filter(|s| !s.is_whole());
    let mut prepared: Vec<Prepared> = Vec::new();
    for ((strategy, target, mut work, others), clock) in resolved.into_iter().zip(clocks) {
        let mut replicas = Vec::with_capacity(others.len());
        for (t, w) in others {
            let clock = crate::http::measure_clock(&w.http, &t.control_url).await;
            replicas.push(Replica {
                control_url: t.control_url,
                work: w,
                clock,
            });
        }
        // A shard registers before it logs: its run's id and time zero are the dependency's.
        let (run, strategy_start_ms, strategy_t0) = match shard {
            None => (
                run_id(&plan.scenario, &strategy.id, plan.seed, start_unix_ms),
                start_unix_ms,
                t0,
            ),
            Some(s) => {
                let control = &target.control_url;
                match register(&plan, &strategy, &work.http, control, clock, start_unix_ms).await {
                    Ok(r) => {
                        if let Some(w) = r.work {
                            work.url = endpoint(&w, "/work").ok_or_else(|| SwarmError::BadUrl {
                                strategy: strategy.id.clone(),
                                what: "work (the start call's answer)",
                                url: w,
                            })?;
                        }
                        (r.run, r.start_unix_ms, r.t0)
                    }
                    Err(e) => {
                        // The runs this shard joined go on without it, marked incomplete.
                        for started in &prepared {
                            let (http, control) = (&started.work.http, &started.control_url);
                            let _ = stop_run(http, control, false, Some(s)).await;
                        }
                        return Err(e);
                    }
                }
            }
        };
        let path = plan.out_dir.join(shard_log_path(
            &plan.scenario,
            &strategy.id,
            plan.seed,
            shard.unwrap_or(Shard::WHOLE),
        ));
        let log = ClientLog::create(&path).await?;
        let tag = RunTag {
            run,
            seed: plan.seed,
            strategy: strategy.id.clone(),
        };
        let (params, typed_params) = plan.params.run_start_forms();
        log.send(Event::RunStart(RunStart {
            tag: tag.clone(),
            source: Source::Client,
            scenario: plan.scenario.name().to_string(),
            start_unix_ms: strategy_start_ms,
            params,
            typed_params: Some(typed_params),
            clock,
            shard,
        }))
        .await?;
        prepared.push(Prepared {
            clock,
            strategy,
            control_url: target.control_url,
            work,
            log,
            tag,
            t0: strategy_t0,
            registered: shard.is_some(),
            replicas,
        });
    }
    for i in 0..prepared.len() {
        let p = &prepared[i];
        if p.registered {
            continue;
        }
        let start = StartRun {
            run: p.tag.run.clone(),
            scenario: plan.scenario.clone(),
            strategy: p.strategy.id.clone(),
            seed: plan.seed,
            params: plan.params.clone(),
            start_unix_ms: p
                .clock
                .map_or(start_unix_ms, |c| c.on_server_ms(start_unix_ms)),
            run_dir: plan.run_dir.clone(),
            shard: None,
            replica: (!p.replicas.is_empty()).then_some(0),
        };
        // A fault proxy of its own in front of the dependency may carry this run.
        let answer = start_run(&p.work.http, &p.control_url, &start)
            .await
            .and_then(|answer| match answer.and_then(|a| a.work) {
                None => Ok(None),
                Some(w) => endpoint(&w, "/work")
                    .map(Some)
                    .ok_or_else(|| SwarmError::BadUrl {
                        strategy: p.strategy.id.clone(),
                        what: "work (the start call's answer)",
                        url: w,
                    }),
            });
        // Then its other replicas, each with its own index (and so its own timeline).
        let answer = match answer {
            Ok(url) => start_replicas(&mut prepared[i], &start, start_unix_ms)
                .await
                .map(|()| url),
            Err(e) => Err(e),
        };
        match answer {
            Ok(Some(url)) => prepared[i].work.url = url,
            Ok(None) => {}
            Err(e) => {
                // Leave no dependency running a half-started swarm run.
                for started in &prepared[..=i] {
                    let _ = stop_run(&started.work.http, &started.control_url, false, None).await;
                    for r in &started.replicas {
                        let _ = stop_run(&r.work.http, &r.control_url, false, None).await;
                    }
                }
                return Err(e);
            }
        }
    }
    let ticker = crate::progress::Ticker::start(
        crate::progress::RunInfo {
            label: match shard {
                None => format!("{} seed {}", plan.scenario.name(), plan.seed),
                Some(s) => format!("{} seed {} shard {s}", plan.scenario.name(), plan.seed),
            },
            duration: plan.params.duration(),
            timeline: plan.params.timeline(&plan.scenario),
        },
        t0,
    );
    let mut runs = JoinSet::new();
    for (i, p) in prepared.into_iter().enumerate() {
        let (plan, stop) = (plan.clone(), stop.clone());
        let timer = timer.clone();
        let t0 = p.t0;
        runs.spawn(async move { (i, run_strategy(p, plan, t0, timer, stop).await) });
    }
    let mut reports: Vec<Option<StrategyReport>> = vec![None; runs.len()];
    let mut first_error = None;
    while let Some(joined) = runs.join_next().await {
        match joined.expect("strategy runs do not panic") {
            (i, Ok(report)) => reports[i] = Some(report),
            (_, Err(e)) => {
                first_error.get_or_insert(e);
            }
        }
    }
    if let Some(ticker) = ticker {
        ticker.finish();
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    let runs: Vec<StrategyReport> = reports.into_iter().flatten().collect();
    let complete = runs.iter().all(|r| r.complete);
    Ok(SwarmReport { runs, complete })
}

/// One strategy, resolved: its strategy, the target of its dependency's replica 0 and its
/// work endpoint, and the targets of its other replicas (`E03_REPLICAS`) with theirs.
type Resolved = (Strategy, Target, WorkEndpoint, Vec<(Target, WorkEndpoint)>);

/// Every strategy of the plan with its targets and work endpoints, in the plan's order: one
/// per replica the run's parameters give (`E03_REPLICAS`); targets of further replicas are
/// left unused (another scenario of the plan may have more).
fn resolve(plan: &SeedRun) -> Result<Vec<Resolved>, SwarmError> {
    let mut out = Vec::new();
    let replicas = plan.params.replicas();
    for strategy in plan.params.strategies() {
        let mut all = Vec::new();
        for r in 0..replicas {
            let mut matching = plan
                .targets
                .iter()
                .filter(|t| t.strategy == strategy.id && t.replica == r);
            let target = matching.next().ok_or_else(|| match r {
                0 => SwarmError::MissingTarget {
                    strategy: strategy.id.clone(),
                },
                _ => SwarmError::MissingReplica {
                    strategy: strategy.id.clone(),
                    replica: r,
                    replicas,
                },
            })?;
            if matching.next().is_some() {
                return Err(SwarmError::DuplicateTarget {
                    strategy: strategy.id.clone(),
                });
            }
            all.push(target.clone());
        }
        let mut endpoints = Vec::new();
        for target in all {
            endpoints.push((endpoint_of(plan, strategy, &target)?, target));
        }
        let mut endpoints = endpoints.into_iter();
        let (work, target) = endpoints.next().expect("replica 0 at least");
        let others = endpoints.map(|(w, t)| (t, w)).collect();
        out.push((strategy.clone(), target, work, others));
    }
    Ok(out)
}

/// The work endpoint of `target`, its URLs checked.
fn endpoint_of(
    plan: &SeedRun,
    strategy: &Strategy,
    target: &Target,
) -> Result<WorkEndpoint, SwarmError> {
    {
        let bad = |what, url: &str| SwarmError::BadUrl {
            strategy: strategy.id.clone(),
            what,
            url: url.to_string(),
        };
        let url =
            endpoint(&target.work_url, "/work").ok_or_else(|| bad("work", &target.work_url))?;
        endpoint(&target.control_url, "/health")
            .ok_or_else(|| bad("control", &target.control_url))?;
        Ok(WorkEndpoint {
            http: build_client(
                plan.params.swarm().clients,
                plan.params.connect_timeout(),
                strategy.connections,
            )?,
            url,
        })
    }
}

/// Starts the run `start` (replica 0's call) on every other replica of `p`, each with its
/// index and time zero `start_unix_ms` on its own clock; a replica's own fault proxy may carry
/// its work.
async fn start_replicas(
    p: &mut Prepared,
    start: &StartRun,
    start_unix_ms: u64,
) -> Result<(), SwarmError> {
    for (r, replica) in p.replicas.iter_mut().enumerate() {
        let mut call = start.clone();
        call.replica = Some(r as u32 + 1);
        call.start_unix_ms = replica
            .clock
            .map_or(start_unix_ms, |c| c.on_server_ms(start_unix_ms));
        let answer = start_run(&replica.work.http, &replica.control_url, &call).await?;
        if let Some(w) = answer.and_then(|a| a.work) {
            replica.work.url = endpoint(&w, "/work").ok_or_else(|| SwarmError::BadUrl {
                strategy: p.strategy.id.clone(),
                what: "work (the start call's answer)",
                url: w,
            })?;
        }
    }
    Ok(())
}

/// Time zero `delay` from now, as wall-clock ms since the epoch (sent to the dependencies) and
/// as the tokio `Instant` of the same moment (read together once, so both agree).
fn time_zero(delay: Duration) -> (u64, Instant) {
    let wall = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let now = Instant::now();
    let start_unix_ms = (wall + delay).as_millis() as u64;
    let ahead = Duration::from_millis(start_unix_ms).saturating_sub(wall);
    (start_unix_ms, now + ahead)
}

/// Steps 4 and 5 for one strategy.
async fn run_strategy(
    p: Prepared,
    plan: SeedRun,
    t0: Instant,
    timer: PreciseTimer,
    stop: StopSignal,
) -> Result<StrategyReport, SwarmError> {
    // The deadline header goes out exactly when the dependency this strategy faces reads it.
    let deadline_header = plan.params.admits_by_deadline_for(&p.strategy.id);
    let run = Arc::new(StrategyRun {
        tag: p.tag.clone(),
        budget: Arc::new(Mutex::new(plan.params.policies(&p.strategy, plan.seed))),
        strategy: p.strategy,
        work: p.work,
        replicas: p.replicas.iter().map(|r| r.work.clone()).collect(),
        t0,
        seed: plan.seed,
        session: plan.params.session_config(),
        timer,
        post: false,
        deadline_header,
    });
    if let Some(m) = crate::metrics::metrics() {
        m.strategy_started(&run.tag.strategy);
        let breaker = run
            .budget
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .breaker_state();
        if let Some(state) = breaker {
            m.breaker(&run.tag.strategy, state);
        }
        let tokens = run
            .budget
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .budget_tokens();
        if let Some(tokens) = tokens {
            m.budget_tokens(&run.tag.strategy, tokens);
        }
    }
    let mut clients = JoinSet::new();
    let workload =
        plan.params
            .shard_workload(&run.strategy, plan.seed, plan.shard.unwrap_or(Shard::WHOLE));
    clients.spawn(crate::drive::drive(
        run.clone(),
        workload,
        p.log.sender(),
        stop.clone(),
    ));
    let mut totals = ClientTotals::default();
    let mut complete = true;
    while let Some(joined) = clients.join_next().await {
        match joined {
            Ok(t) => {
                totals.operations += t.operations;
                totals.attempts += t.attempts;
                complete &= !t.cut_short;
            }
            Err(e) => {
                tracing::error!(strategy = %run.tag.strategy, "a client task failed: {e}");
                complete = false;
            }
        }
    }
    let shard = plan.shard.filter(|s| !s.is_whole());
    let mut stopped = stop_run(&run.work.http, &p.control_url, complete, shard).await;
    // Every other replica's run stops too; the server's counts are the replicas' sums.
    for r in &p.replicas {
        let other = stop_run(&r.work.http, &r.control_url, complete, shard).await;
        stopped = match (stopped, other) {
            (Ok(mut sum), Ok(c)) => {
                sum.arrivals += c.arrivals;
                sum.responses += c.responses;
                Ok(sum)
            }
            (Err(e), _) | (_, Err(e)) => Err(e),
        };
    }
    let end = Event::RunEnd(RunEnd {
        tag: run.tag.clone(),
        source: Source::Client,
        t_us: us(Instant::now().saturating_duration_since(t0)),
        complete,
        records: 0, // the writer fills in the real count
    });
    p.log.send(end).await?;
    let written = p.log.path().to_path_buf();
    p.log.close().await?;
    // Without a shared folder, the log goes to the analyzer now that it is whole (it stays
    // here too).
    if let Some(url) = &plan.send_logs {
        e03_io::ship::send_files(&reqwest::Client::new(), url, &[written]).await?;
    }
    let server = match stopped {
        Ok(counts) => counts,
        // A stopped lab may take its dependencies down at the same moment: the client log is
        // still complete and says the run was cut short, so this is not an error then.
        Err(e) if !complete => {
            tracing::warn!(strategy = %run.tag.strategy, "{e}");
            RunCounts {
                arrivals: 0,
                responses: 0,
                log_file: String::new(),
            }
        }
        Err(e) => return Err(e),
    };
    Ok(StrategyReport {
        strategy: run.tag.strategy.clone(),
        operations: totals.operations,
        attempts: totals.attempts,
        server,
        complete,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_zero_is_the_delay_ahead_on_both_clocks() {
        let before = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
        let now = Instant::now();
        let (ms, t0) = time_zero(Duration::from_secs(1));
        let ahead = t0 - now;
        // The wall-clock stamp rounds down to a whole ms, so the Instant is up to 1 ms sooner.
        assert!(ahead <= Duration::from_millis(1001), "{ahead:?}");
        assert!(ahead >= Duration::from_millis(990), "{ahead:?}");
        assert!(ms >= (before + Duration::from_millis(999)).as_millis() as u64);
    }
}
