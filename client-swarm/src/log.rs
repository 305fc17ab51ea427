//! The client log of one run: JSON Lines through one bounded channel to one writer task.
//!
//! Clients never touch the disk: they `send().await` an [`Event`] into a bounded channel, which
//! waits when the writer falls behind instead of dropping a record (every attempt that was sent
//! must be in the log, or the client and server counts stop matching). One writer task owns a
//! buffered file and writes one line per event. It also fills in `RunEnd::records`, the number
//! of records written before it, because only the writer knows that number for sure.

use std::path::{Path, PathBuf};

use e03_core::events::Event;
use tokio::io::{AsyncWriteExt, BufWriter};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::error::SwarmError;

/// Records that may wait in the channel before senders have to wait for the writer.
const CHANNEL_CAPACITY: usize = 65_536;

/// The sending side of a client log plus the writer task behind it.
pub(crate) struct ClientLog {
    tx: mpsc::Sender<Event>,
    writer: JoinHandle<Result<u64, SwarmError>>,
}

impl ClientLog {
    /// Creates `path` (and its directories) and starts the writer.
    pub(crate) async fn create(path: &Path) -> Result<ClientLog, SwarmError> {
        let io_err = |source| SwarmError::Log {
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent() {
            tokio::fs::create_dir_all(dir).await.map_err(io_err)?;
        }
        let file = tokio::fs::File::create(path).await.map_err(io_err)?;
        let (tx, rx) = mpsc::channel(CHANNEL_CAPACITY);
        let writer = tokio::spawn(write_all(rx, BufWriter::new(file), path.to_path_buf()));
        Ok(ClientLog { tx, writer })
    }

    /// A sender for one producer (a client task).
    pub(crate) fn sender(&self) -> mpsc::Sender<Event> {
        self.tx.clone()
    }

    /// Writes `event` (waits for room; never drops it).
    pub(crate) async fn send(&self, event: Event) -> Result<(), SwarmError> {
        self.tx.send(event).await.map_err(|_| SwarmError::LogClosed)
    }

    /// Closes the channel once every other sender is gone, waits for the writer to flush, and
    /// returns the number of records written.
    pub(crate) async fn close(self) -> Result<u64, SwarmError> {
        drop(self.tx);
        self.writer.await.map_err(|_| SwarmError::LogClosed)?
    }
}

async fn write_all(
    mut rx: mpsc::Receiver<Event>,
    mut out: BufWriter<tokio::fs::File>,
    path: PathBuf,
) -> Result<u64, SwarmError> {
    let io_err = |source| SwarmError::Log {
        path: path.clone(),
        source,
    };
    let mut records = 0u64;
    while let Some(mut event) = rx.recv().await {
        if let Event::RunEnd(end) = &mut event {
            end.records = records;
        }
        let mut line = event.to_line();
        line.push('\n');
        out.write_all(line.as_bytes()).await.map_err(io_err)?;
        records += 1;
    }
    out.flush().await.map_err(io_err)?;
    out.into_inner().sync_all().await.map_err(io_err)?;
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;
    use e03_core::events::{RunEnd, RunTag, Source};

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
