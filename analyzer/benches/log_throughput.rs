//! The analyzer's own throughput: events per second and peak memory on a large log.
//!
//! ```sh
//! cargo bench -p analyzer --bench log_throughput                  # 10 million events
//! cargo bench -p analyzer --bench log_throughput -- --events 1000000
//! ```
//!
//! It writes one E03-B run of strategy A (seed 42) as the live lab would log it, into a
//! temporary directory under `target/`: a client log (`attempt` and `operation` records) and a
//! server log (`arrival` and `response` records) whose identities match one to one. 200 clients
//! start an operation every 2 s or so, one in five answered 503 once and retried after 200 ms,
//! so 10 million records are a run of about 6 hours and a half. Then it times
//! `analyzer::analyze_dir` over that directory (reading, matching, binning, every figure of the
//! summary) and prints the records read per second and the process's peak resident memory
//! during the analysis (Linux: `VmHWM` of `/proc/self/status`, reset with `clear_refs` after the
//! logs are written). The logs and their directory are removed at the end.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

use e03_model::events::{
    Arrival, Attempt, AttemptEnd, Cause, Event, OperationRecord, Outcome, Response, RunEnd,
    RunStart, RunTag, Source,
};
use e03_plan::log_names::{client_log_path, server_log_path};
use e03_plan::{Params, Scenario};

const CLIENTS: u32 = 200;
/// Mean time between two operations of one client, µs.
const OP_EVERY_US: u64 = 2_000_000;
const SERVICE_US: u64 = 40_000;
const RETRY_AFTER_US: u64 = 200_000;

fn main() {
    let mut events: u64 = 10_000_000;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--events" => {
                events = args
                    .next()
                    .and_then(|v| v.replace('_', "").parse().ok())
                    .filter(|&n| n >= 1000)
                    .unwrap_or_else(|| {
                        eprintln!(
                            "log_throughput: --events expects a whole number of at least 1000"
                        );
                        std::process::exit(2);
                    })
            }
            // `cargo bench` passes --bench to every bench target.
            "--bench" => {}
            other => {
                eprintln!("log_throughput: unknown argument {other:?} (accepted: --events N)");
                std::process::exit(2);
            }
        }
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").unwrap_or_else(|| "target".into());
    let dir = Path::new(&target).join(format!("e03-analyzer-bench-{}", std::process::id()));
    let scenario_dir = dir.join(Scenario::e03b().name());
    std::fs::create_dir_all(&scenario_dir).expect("creating the bench directory");

    let began = Instant::now();
    let (records, ops, duration_s) = write_logs(&dir, events);
    let bytes: u64 = std::fs::read_dir(&scenario_dir)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    eprintln!(
        "log_throughput: wrote {records} records ({ops} operations, a run of {:.1} h, {:.0} MiB) in {:.1} s",
        duration_s / 3600.0,
        bytes as f64 / 1048576.0,
        began.elapsed().as_secs_f64()
    );

    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let began = Instant::now();
    let summary = analyzer::analyze_dir(&scenario_dir, Scenario::e03b(), e03_metrics::no_model)
        .expect("the logs analyse");
    let secs = began.elapsed().as_secs_f64();
    let peak = peak_rss_mib();
    let run = &summary.runs[0];
    assert_eq!(run.total_requests, records_attempts(records, ops));
    println!(
        "log_throughput: analysed {records} records ({:.0} MiB) in {secs:.2} s: {:.2} million records/s; \
         peak resident memory {}",
        bytes as f64 / 1048576.0,
        records as f64 / secs / 1e6,
        peak.map_or("unknown (no /proc/self/status)".to_string(), |m| format!("{m:.0} MiB")),
    );
    // Removes exactly what it wrote: the two logs and the two directories.
    for rel in [
        server_log_path(&Scenario::e03b(), "A", 42),
        client_log_path(&Scenario::e03b(), "A", 42),
    ] {
        std::fs::remove_file(dir.join(rel)).expect("removing a bench log");
    }
    std::fs::remove_dir(&scenario_dir).expect("removing the bench directory");
    std::fs::remove_dir(&dir).expect("removing the bench directory");
}

/// Attempts in a log of `records` records with `ops` operations: each operation has one
/// operation record and, per attempt, an attempt, an arrival and a response.
fn records_attempts(records: u64, ops: u64) -> u64 {
    (records - 4 - ops) / 3
}

/// Peak resident memory of this process, MiB.
fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// Writes the two logs with about `events` records; returns (records, operations, duration s).
fn write_logs(dir: &Path, events: u64) -> (u64, u64, f64) {
    // One operation in five has two attempts: 4.6 records per operation on average.
    let ops_total = (events - 4) * 5 / 23;
    let per_client = ops_total.div_ceil(u64::from(CLIENTS));
    let duration_s = (per_client * OP_EVERY_US) as f64 / 1e6 + 1.0;
    let mut raw = std::collections::BTreeMap::new();
    raw.insert("E03_STRATEGIES".to_string(), "A".to_string());
    raw.insert("E03_SEED".to_string(), "42".to_string());
    raw.insert("E03_DURATION_S".to_string(), format!("{duration_s:.0}"));
    let params = Params::for_scenario(&Scenario::e03b(), &raw).expect("valid bench parameters");
    let tag = RunTag {
        run: "e03b-A-seed42-0".into(),
        seed: 42,
        strategy: "A".into(),
    };
    let open =
        |rel: String| BufWriter::with_capacity(1 << 20, File::create(dir.join(rel)).unwrap());
    let mut server = open(server_log_path(&Scenario::e03b(), "A", 42));
    let mut client = open(client_log_path(&Scenario::e03b(), "A", 42));
    let mut records = 0u64;
    let mut put = |w: &mut BufWriter<File>, e: Event| {
        w.write_all(e.to_line().as_bytes()).unwrap();
        w.write_all(b"\n").unwrap();
        records += 1;
    };
    for (w, source) in [(&mut server, Source::Server), (&mut client, Source::Client)] {
        put(
            w,
            Event::RunStart(RunStart {
                tag: tag.clone(),
                source,
                scenario: "e03b".into(),
                start_unix_ms: 0,
                params: params.run_start_forms().0,
                typed_params: Some(params.run_start_forms().1),
                clock: None,
                shard: None,
            }),
        );
    }
    // Operations in start order over every client (the server log is in arrival order).
    let mut seq = 0u64;
    let mut ops = 0u64;
    let mut end_us = 0u64;
    for k in 0..per_client {
        for c in 0..CLIENTS {
            if ops == ops_total {
                break;
            }
            let start = k * OP_EVERY_US + u64::from(c) * (OP_EVERY_US / u64::from(CLIENTS));
            let retried = (u64::from(c) + k) % 5 == 0;
            let attempts = if retried { 2 } else { 1 };
            let mut t = start;
            for a in 1..=attempts {
                let failed = retried && a == 1;
                let done = if failed { t + 100 } else { t + SERVICE_US };
                put(
                    &mut server,
                    Event::Arrival(Arrival {
                        tag: tag.clone(),
                        seq,
                        t_us: t,
                        client: Some(c),
                        op: Some(k as u32),
                        attempt: Some(a),
                        class: Default::default(),
                    }),
                );
                put(
                    &mut server,
                    Event::Response(Response {
                        tag: tag.clone(),
                        seq,
                        t_us: done,
                        status: if failed { 503 } else { 200 },
                        cause: if failed { Cause::Fault } else { Cause::Ok },
                        admit_us: Some(t),
                        immediate: false,
                        cost: None,
                    }),
                );
                put(
                    &mut client,
                    Event::Attempt(Attempt {
                        tag: tag.clone(),
                        client: c,
                        op: k as u32,
                        attempt: a,
                        due_us: t,
                        sent_us: t,
                        end_us: done,
                        end: AttemptEnd::Status,
                        status: Some(if failed { 503 } else { 200 }),
                        rejection: None,
                        flow: None,
                        step: None,
                        retry_after_us: None,
                    }),
                );
                seq += 1;
                t = done + if failed { RETRY_AFTER_US } else { 0 };
            }
            put(
                &mut client,
                Event::Operation(OperationRecord {
                    tag: tag.clone(),
                    client: c,
                    op: k as u32,
                    start_us: start,
                    end_us: t,
                    attempts,
                    outcome: Outcome::Success,
                    reason: None,
                    flow: None,
                    class: Default::default(),
                }),
            );
            end_us = end_us.max(t);
            ops += 1;
        }
    }
    for (w, source) in [(&mut server, Source::Server), (&mut client, Source::Client)] {
        put(
            w,
            Event::RunEnd(RunEnd {
                tag: tag.clone(),
                source,
                t_us: end_us,
                complete: true,
                records: 0,
            }),
        );
        w.flush().unwrap();
    }
    (records, ops, duration_s)
}
