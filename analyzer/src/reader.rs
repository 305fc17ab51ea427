//! Reading a run's JSON Lines logs, one line at a time.
//!
//! A log is streamed through a `BufRead` and each record handed to a sink as soon as it is
//! parsed, so memory does not grow with the log. A log cut by a kill usually ends in half a
//! line: an unparsable *last* line with no newline is reported as a warning, while any other
//! malformed line is an error naming the file and line number. Blank lines are skipped.
//! Whether the run ended properly is read from its `run_end` record.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use e03_model::events::{Event, RunEnd, RunStart};
use e03_plan::params::spec;
use e03_plan::Params;
use serde::Deserialize;

use crate::{records, AnalyzeError};

/// What a log said about itself, besides its records.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogStatus {
    pub run_start: Option<RunStart>,
    pub run_end: Option<RunEnd>,
    /// Records parsed (run_start and run_end included).
    pub records: u64,
    pub warnings: Vec<String>,
}

impl LogStatus {
    /// True only with a `run_end` record that says `complete: true`.
    pub fn complete(&self) -> bool {
        self.run_end.as_ref().is_some_and(|e| e.complete)
    }
}

fn is_blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

/// Streams the records of `reader` into `sink`; `name` names the log in messages.
pub fn read_events<R: BufRead>(
    mut reader: R,
    name: &str,
    mut sink: impl FnMut(&Event),
) -> Result<LogStatus, AnalyzeError> {
    let mut status = LogStatus::default();
    let mut buf = Vec::new();
    let mut line_no = 0u64;
    // The run tag's strings, lent to each frequent record in turn (see `records`).
    let mut tag = records::empty_tag();
    let io = |source| AnalyzeError::Io {
        path: name.into(),
        source,
    };
    loop {
        // The lab's four frequent records are read in place from the reader's buffer (see
        // `records`); any other line, or one the buffer holds only part of, is copied out
        // whole and parsed with serde.
        if let Some((event, used)) = records::parse(reader.fill_buf().map_err(io)?, &mut tag) {
            line_no += 1;
            status.records += 1;
            sink(&event);
            records::take_tag(event, &mut tag);
            reader.consume(used);
            continue;
        }
        buf.clear();
        let n = reader.read_until(b'\n', &mut buf).map_err(io)?;
        if n == 0 {
            break;
        }
        line_no += 1;
        let terminated = buf.last() == Some(&b'\n');
        if is_blank(&buf) {
            continue;
        }
        match serde_json::from_slice::<Event>(&buf) {
            Ok(event) => {
                status.records += 1;
                match &event {
                    Event::RunStart(s) if status.run_start.is_none() => {
                        status.run_start = Some(s.clone())
                    }
                    Event::RunEnd(e) => status.run_end = Some(e.clone()),
                    _ => {}
                }
                sink(&event);
            }
            Err(_) if !terminated => {
                status.warnings.push(format!(
                    "{name}:{line_no}: last line is cut short (the run was probably killed); ignored"
                ));
            }
            Err(e) => {
                return Err(AnalyzeError::Malformed {
                    path: name.into(),
                    line: line_no,
                    message: e.to_string(),
                })
            }
        }
    }
    if status.run_end.is_none() {
        status
            .warnings
            .push(format!("{name}: no run_end record: the run is incomplete"));
    } else if !status.complete() {
        status
            .warnings
            .push(format!("{name}: run_end says the run was stopped early"));
    }
    Ok(status)
}

/// The buffer a log file is read through, bytes.
const READ_BUFFER: usize = 1 << 20;

/// Streams the log file at `path` into `sink`.
pub fn read_log_file(path: &Path, sink: impl FnMut(&Event)) -> Result<LogStatus, AnalyzeError> {
    let file = File::open(path).map_err(|source| AnalyzeError::Io {
        path: path.into(),
        source,
    })?;
    // A large buffer: fewer reads, and fewer lines cut at its end (those take the slow path).
    read_events(
        BufReader::with_capacity(READ_BUFFER, file),
        &path.display().to_string(),
        sink,
    )
}

/// The `run_start` record at the head of a log (the first record), if any.
pub fn read_run_start(path: &Path) -> Result<Option<RunStart>, AnalyzeError> {
    let file = File::open(path).map_err(|source| AnalyzeError::Io {
        path: path.into(),
        source,
    })?;
    let mut buf = Vec::new();
    let mut reader = BufReader::new(file);
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|source| AnalyzeError::Io {
                path: path.into(),
                source,
            })?;
        if n == 0 {
            return Ok(None);
        }
        if !is_blank(&buf) {
            return Ok(match serde_json::from_slice::<Event>(&buf) {
                Ok(Event::RunStart(s)) => Some(s),
                _ => None,
            });
        }
    }
}

/// The parameters recorded in a `run_start`: its typed parameters, checked as typed (the
/// strategies travel with them); in an older log, which has none, its raw env-name map, read
/// as the user's input is. Raw values may be JSON strings or numbers; names that are not
/// parameters are dropped with a warning. `scenario`: the scenario being read (a user's, kept
/// beside the logs), whose strategies the raw parameters may name when the record names it;
/// otherwise a built-in scenario of the record's name does. Typed parameters that do not read
/// (a log edited by hand) are said in a warning, and the raw map is read instead.
pub fn params_of(
    start: &RunStart,
    name: &str,
    warnings: &mut Vec<String>,
    scenario: Option<&e03_plan::Scenario>,
) -> Result<Params, AnalyzeError> {
    if let Some(typed) = &start.typed_params {
        match Params::deserialize(typed) {
            Ok(p) => return Ok(p),
            Err(e) => warnings.push(format!(
                "{name}: the typed parameters of run_start do not read ({e}); reading its \
                 raw parameters instead"
            )),
        }
    }
    let mut raw = BTreeMap::new();
    if let Some(map) = start.params.as_object() {
        for (k, v) in map {
            let value = match v {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Number(n) => n.to_string(),
                serde_json::Value::Bool(b) => b.to_string(),
                _ => continue,
            };
            if spec(k).is_some() {
                raw.insert(k.clone(), value);
            } else {
                warnings.push(format!(
                    "{name}: ignoring unknown parameter {k:?} in run_start"
                ));
            }
        }
    }
    // The scenario (kept beside the logs, or built in) may define the strategies the
    // parameters name.
    let known = scenario
        .filter(|s| s.name() == start.scenario)
        .cloned()
        .or_else(|| e03_plan::Scenario::named(&start.scenario));
    let params = match known {
        Some(scenario) => Params::for_scenario(&scenario, &raw),
        None => Params::from_raw(&raw),
    };
    params.map_err(|source| AnalyzeError::Params {
        path: name.into(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const START: &str = r#"{"type":"run_start","data":{"run":"r","seed":42,"strategy":"C","source":"server","scenario":"e03b","start_unix_ms":1,"params":{"E03_WORKERS":"12","E03_SEED":42}}}"#;
    const ARRIVAL: &str =
        r#"{"type":"arrival","data":{"run":"r","seed":42,"strategy":"C","seq":0,"t_us":5}}"#;
    const END: &str = r#"{"type":"run_end","data":{"run":"r","seed":42,"strategy":"C","source":"server","t_us":9,"complete":true,"records":2}}"#;

    fn read(text: &str) -> Result<(LogStatus, usize), AnalyzeError> {
        let mut n = 0;
        let s = read_events(text.as_bytes(), "server-C-seed42.jsonl", |_| n += 1)?;
        Ok((s, n))
    }

    #[test]
    fn a_complete_log_is_complete() {
        let (s, n) = read(&format!("{START}\n{ARRIVAL}\n\n{END}\n")).unwrap();
        assert_eq!((n, s.records), (3, 3));
        assert!(s.complete());
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
        let mut w = Vec::new();
        let p = params_of(s.run_start.as_ref().unwrap(), "x", &mut w, None).unwrap();
        assert_eq!((p.service().workers, p.seeds().to_vec()), (12, vec![42]));
    }

    /// A record with typed parameters is read as typed: no raw map is read, and the strategies
    /// come with it. Typed parameters that do not read are a warning, and the raw map is read.
    #[test]
    fn typed_parameters_are_read_as_typed_and_raw_ones_only_without_them() {
        let p = Params::from_raw(
            &[
                ("E03_WORKERS", "12"),
                ("E03_SEEDS", "42"),
                ("E03_STRATEGIES", "C"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        )
        .unwrap();
        let (raw, typed) = p.run_start_forms();
        let (s, _) = read(&format!("{START}\n{END}\n")).unwrap();
        let mut start = s.run_start.unwrap();
        start.params = raw;
        start.typed_params = Some(typed);
        let mut w = Vec::new();
        // The built-in scenarios are read once per process when first named; not counted.
        assert!(e03_plan::Scenario::builtins().len() > 20);
        let before = e03_plan::params::raw_reads();
        assert_eq!(params_of(&start, "x", &mut w, None).unwrap(), p);
        assert_eq!(e03_plan::params::raw_reads(), before);
        assert!(w.is_empty(), "{w:?}");
        start.typed_params = Some(serde_json::json!({"service": {"workers": 0}}));
        assert_eq!(params_of(&start, "x", &mut w, None).unwrap(), p);
        assert_eq!(e03_plan::params::raw_reads(), before + 1);
        assert!(
            w[0].contains("typed parameters of run_start do not read"),
            "{w:?}"
        );
    }

    #[test]
    fn truncated_last_line_is_a_warning_and_the_run_incomplete() {
        let (s, n) = read(&format!("{START}\n{ARRIVAL}\n{{\"type\":\"arr")).unwrap();
        assert_eq!(n, 2);
        assert!(!s.complete());
        assert!(
            s.warnings[0].contains("server-C-seed42.jsonl:3"),
            "{:?}",
            s.warnings
        );
        assert!(s.warnings[0].contains("cut short"));
    }

    #[test]
    fn records_read_in_place_or_copied_out_are_the_records_serde_reads() {
        // The fast path's shape, another shape (an unknown field) and other records, read
        // through buffers of every small size: lines cut at a buffer's end take the slow path.
        let other = ARRIVAL.replace("\"t_us\":5", "\"t_us\":6,\"holder\":1");
        let response = r#"{"type":"response","data":{"run":"r","seed":42,"strategy":"C","seq":0,"t_us":8,"status":503,"cause":"fault","admit_us":6,"immediate":true}}"#;
        let text = format!("{START}\n{ARRIVAL}\n{other}\n\n{response}\n{END}\n");
        let expected: Vec<Event> = text
            .lines()
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        for capacity in 1..=text.len() + 1 {
            let mut got = Vec::new();
            let reader = BufReader::with_capacity(capacity, text.as_bytes());
            let s = read_events(reader, "p", |e| got.push(e.clone())).unwrap();
            assert_eq!(got, expected, "buffer of {capacity} bytes");
            assert_eq!(s.records, 5);
            assert!(s.complete());
        }
    }

    #[test]
    fn malformed_middle_line_is_an_error_naming_file_and_line() {
        let err = read(&format!("{START}\nnot json\n{END}\n")).unwrap_err();
        assert!(err.to_string().contains("server-C-seed42.jsonl:2"), "{err}");
        // Also when the bad line is last but has its newline: it was written whole.
        assert!(read(&format!("{START}\n{{oops\n")).is_err());
    }

    #[test]
    fn missing_or_incomplete_run_end_makes_the_run_incomplete() {
        let (s, _) = read(&format!("{START}\n{ARRIVAL}\n")).unwrap();
        assert!(!s.complete());
        assert!(s.warnings[0].contains("no run_end"));
        let stopped = END.replace("\"complete\":true", "\"complete\":false");
        let (s, _) = read(&format!("{START}\n{stopped}\n")).unwrap();
        assert!(!s.complete());
    }

    proptest::proptest! {
        #[test]
        fn the_reader_never_panics(lines in proptest::collection::vec(".{0,80}", 0..8),
                                   bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64)) {
            let mut text = lines.join("\n").into_bytes();
            text.extend(bytes);
            let mut acc = crate::metrics::RunAccumulator::new(
                e03_plan::Scenario::e03b(), &Params::default(), "C", 1);
            let _ = read_events(&text[..], "p", |e| crate::feed(&mut acc, e));
            let _ = acc.finish();
        }

        #[test]
        fn valid_records_with_any_numbers_never_panic(t in proptest::prelude::any::<u64>(),
                                                       seq in proptest::prelude::any::<u64>(),
                                                       attempt in proptest::prelude::any::<u32>()) {
            let text = format!(
                "{START}\n{{\"type\":\"arrival\",\"data\":{{\"run\":\"r\",\"seed\":1,\"strategy\":\"C\",\"seq\":{seq},\"t_us\":{t},\"client\":1,\"op\":2,\"attempt\":{attempt}}}}}\n\
                 {{\"type\":\"response\",\"data\":{{\"run\":\"r\",\"seed\":1,\"strategy\":\"C\",\"seq\":{seq},\"t_us\":{t},\"status\":503,\"cause\":\"full\",\"admit_us\":{t}}}}}\n\
                 {{\"type\":\"operation\",\"data\":{{\"run\":\"r\",\"seed\":1,\"strategy\":\"C\",\"client\":1,\"op\":2,\"start_us\":{t},\"end_us\":{seq},\"attempts\":{attempt},\"outcome\":\"failed\",\"reason\":\"budget_denied\"}}}}\n");
            let mut acc = crate::metrics::RunAccumulator::new(
                e03_plan::Scenario::e03b(), &Params::default(), "C", 1);
            let s = read_events(text.as_bytes(), "p", |e| crate::feed(&mut acc, e)).unwrap();
            proptest::prop_assert_eq!(s.records, 4);
            let m = acc.finish();
            proptest::prop_assert_eq!((m.total_requests, m.retries_denied), (1, 1));
        }
    }
}
