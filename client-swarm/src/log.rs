//! The client log of one run: JSON Lines through the lab's one writer
//! ([`e03_io::sink::LogSink`]), a thread of its own that owns the file.
//!
//! Clients never touch the disk: they hand an [`Event`] to a [`LogTx`], which waits when the
//! writer falls behind instead of dropping a record (every attempt that was sent must be in the
//! log, or the client and server counts stop matching). `run_end.records` is the number of records
//! the writer wrote before it, because only the writer knows that number for sure.

use std::path::{Path, PathBuf};

use e03_io::sink::{LogError, LogSink};
use e03_model::events::Event;

use crate::error::SwarmError;

/// The client log of one run: its writer and its file.
pub(crate) struct ClientLog {
    sink: LogSink,
    path: PathBuf,
}

/// A client's handle on the log; cheap to clone.
#[derive(Clone)]
pub(crate) enum LogTx {
    /// A run's client log file.
    File(LogSink),
    /// No file: `lab client` prints its attempts from the records as they come.
    Memory(tokio::sync::mpsc::UnboundedSender<Event>),
}

impl LogTx {
    /// Writes `event` (waits for room; never drops it). A `run_end` is given the number of
    /// records written before it.
    pub(crate) async fn send(&self, event: Event) -> Result<(), SwarmError> {
        let sink = match self {
            LogTx::File(sink) => sink,
            LogTx::Memory(tx) => return tx.send(event).map_err(|_| SwarmError::LogClosed),
        };
        match event {
            Event::RunEnd(mut end) => {
                sink.line_counted(move |records| {
                    end.records = records;
                    Event::RunEnd(end).to_line()
                })
                .await
            }
            event => sink.line(event.to_line()).await,
        }
        Ok(())
    }
}

impl ClientLog {
    /// Creates `path` (and its directories) and starts the writer.
    pub(crate) async fn create(path: &Path) -> Result<ClientLog, SwarmError> {
        let sink = LogSink::start().map_err(|source| SwarmError::Log {
            path: path.to_path_buf(),
            source,
        })?;
        sink.open(path.to_path_buf())
            .await
            .map_err(|e| error(path, e))?;
        Ok(ClientLog {
            sink,
            path: path.to_path_buf(),
        })
    }

    /// A sender for one producer (a client task).
    pub(crate) fn sender(&self) -> LogTx {
        LogTx::File(self.sink.clone())
    }

    /// Writes `event` (waits for room; never drops it).
    pub(crate) async fn send(&self, event: Event) -> Result<(), SwarmError> {
        self.sender().send(event).await
    }

    /// The log's file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Writes everything sent before, flushes and syncs the file, and returns the number of
    /// records written.
    pub(crate) async fn close(self) -> Result<u64, SwarmError> {
        self.sink.close().await.map_err(|e| error(&self.path, e))
    }
}

fn error(path: &Path, e: LogError) -> SwarmError {
    match e {
        LogError::Open { source, .. } | LogError::Write { source, .. } => SwarmError::Log {
            path: path.to_path_buf(),
            source,
        },
        LogError::Stopped => SwarmError::LogClosed,
    }
}

/// A client log in a fresh temporary folder, for tests: the log and its file.
#[cfg(test)]
pub(crate) async fn test_log() -> (ClientLog, PathBuf) {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::SeqCst);
    let dir =
        std::env::temp_dir().join(format!("client-swarm-test-log-{}-{n}", std::process::id()));
    let path = dir.join("client.jsonl");
    (ClientLog::create(&path).await.unwrap(), path)
}

/// Closes a test log and reads its records back (its folder is removed).
#[cfg(test)]
pub(crate) async fn test_log_events(log: ClientLog, path: &Path) -> Vec<Event> {
    log.close().await.unwrap();
    let text = std::fs::read_to_string(path).unwrap();
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use e03_model::events::{RunEnd, RunTag, Source};

    fn end(records: u64) -> Event {
        Event::RunEnd(RunEnd {
            tag: RunTag {
                run: "r".into(),
                seed: 1,
                strategy: "A".into(),
            },
            source: Source::Client,
            t_us: 5,
            complete: true,
            records,
        })
    }

    #[tokio::test]
    async fn writes_every_record_as_one_line_and_counts_them_in_run_end() {
        let dir = std::env::temp_dir().join(format!("client-swarm-log-{}", std::process::id()));
        let path = dir.join("sub/client.jsonl");
        let log = ClientLog::create(&path).await.unwrap();
        // More records than the channel holds, from several producers: none may be lost.
        let mut producers = Vec::new();
        for _ in 0..4 {
            let tx = log.sender();
            producers.push(tokio::spawn(async move {
                for _ in 0..20_000 {
                    tx.send(end(0)).await.unwrap();
                }
            }));
        }
        for p in producers {
            p.await.unwrap();
        }
        log.send(end(999)).await.unwrap();
        assert_eq!(log.close().await.unwrap(), 80_001);
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 80_001);
        let Event::RunEnd(last) = serde_json::from_str::<Event>(lines[80_000]).unwrap() else {
            panic!("last record is not run_end")
        };
        assert_eq!(
            last.records, 80_000,
            "the writer counts the records before run_end"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
