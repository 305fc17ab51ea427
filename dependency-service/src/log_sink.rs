//! The service's one log writer: every record of every run goes through one bounded channel to
//! one writer thread that owns the open file.
//!
//! The request path never touches the disk: it formats a line and `send().await`s it. When the
//! channel is full the sender waits (back-pressure) rather than dropping a record, because the
//! server log is the lab's source of truth for load. The writer runs on a blocking thread with a
//! `BufWriter` and flushes whenever the channel runs dry, so a quiet service has everything on
//! disk within moments and a busy one writes in large blocks.
//!
//! Files are switched by control messages on the same channel ([`LogSink::open`],
//! [`LogSink::close`]), so a record can never end up in the wrong run's file: whatever was sent
//! before `close` is written before the file is closed.

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use tokio::sync::{mpsc, oneshot};

/// Records in flight between the request path and the writer.
pub const CHANNEL_CAPACITY: usize = 65_536;

/// A log file could not be opened or written.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("cannot open log file {path}: {source}")]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write log file {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the log writer has stopped")]
    Stopped,
}

enum LogMsg {
    /// Close the current file (if any) and open `path` (truncating it), creating its directories.
    Open(PathBuf, oneshot::Sender<Result<(), LogError>>),
    /// One JSON line, without its newline.
    Line(String),
    /// Flush and close the current file.
    Close(oneshot::Sender<Result<(), LogError>>),
}

/// The sending side; cheap to clone.
#[derive(Clone)]
pub struct LogSink {
    tx: mpsc::Sender<LogMsg>,
}

/// Handle on the writer thread, to wait for it after the last sink is dropped.
pub struct LogWriter {
    handle: std::thread::JoinHandle<()>,
}

impl LogWriter {
    /// Waits until every record sent has been written and the writer has exited. All
    /// [`LogSink`]s must have been dropped, otherwise this waits for them.
    pub async fn finish(self) {
        let joined = tokio::task::spawn_blocking(move || self.handle.join()).await;
        if !matches!(joined, Ok(Ok(()))) {
            tracing::error!("log writer failed");
        }
    }
}

/// Starts the writer thread. It is a plain thread, not a runtime task, so it never holds up a
/// runtime's shutdown; it exits when the last sink is dropped.
pub fn start() -> std::io::Result<(LogSink, LogWriter)> {
    let (tx, rx) = mpsc::channel(CHANNEL_CAPACITY);
    let handle = std::thread::Builder::new()
        .name("e03-log-writer".into())
        .spawn(move || write_loop(rx))?;
    Ok((LogSink { tx }, LogWriter { handle }))
}

impl LogSink {
    /// Switches to a new file; the previous one is flushed and closed first.
    pub async fn open(&self, path: PathBuf) -> Result<(), LogError> {
        let (ack, done) = oneshot::channel();
        self.tx
            .send(LogMsg::Open(path, ack))
            .await
            .map_err(|_| LogError::Stopped)?;
        done.await.map_err(|_| LogError::Stopped)?
    }

    /// Queues one line. Waits while the channel is full; never drops it.
    pub async fn line(&self, line: String) {
        if self.tx.send(LogMsg::Line(line)).await.is_err() {
            tracing::error!("log writer has stopped; a record was lost");
        }
    }

    /// Flushes and closes the current file once everything sent before has been written.
    pub async fn close(&self) -> Result<(), LogError> {
        let (ack, done) = oneshot::channel();
        self.tx
            .send(LogMsg::Close(ack))
            .await
            .map_err(|_| LogError::Stopped)?;
        done.await.map_err(|_| LogError::Stopped)?
    }
}

/// The open file and the first write error seen on it (reported at close).
struct OpenFile {
    path: PathBuf,
    out: BufWriter<File>,
    error: Option<std::io::Error>,
}

impl OpenFile {
    fn create(path: &Path) -> Result<OpenFile, LogError> {
        let open = || -> std::io::Result<File> {
            if let Some(dir) = path.parent() {
                fs::create_dir_all(dir)?;
            }
            File::create(path)
        };
        let file = open().map_err(|source| LogError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(OpenFile {
            path: path.to_path_buf(),
            out: BufWriter::with_capacity(256 * 1024, file),
            error: None,
        })
    }

    fn write_line(&mut self, line: &str) {
        if self.error.is_some() {
            return;
        }
        let r = self
            .out
            .write_all(line.as_bytes())
            .and_then(|()| self.out.write_all(b"\n"));
        if let Err(e) = r {
            tracing::error!("cannot write log {}: {e}", self.path.display());
            self.error = Some(e);
        }
    }

    fn flush(&mut self) {
        if self.error.is_none() {
            if let Err(e) = self.out.flush() {
                tracing::error!("cannot flush log {}: {e}", self.path.display());
                self.error = Some(e);
            }
        }
    }

    fn close(mut self) -> Result<(), LogError> {
        self.flush();
        match self.error.take() {
            None => Ok(()),
            Some(source) => Err(LogError::Write {
                path: self.path,
                source,
            }),
        }
    }
}

fn write_loop(mut rx: mpsc::Receiver<LogMsg>) {
    let mut file: Option<OpenFile> = None;
    loop {
        // Flush whenever there is nothing more to write right now.
        let msg = match rx.try_recv() {
            Ok(msg) => msg,
            Err(mpsc::error::TryRecvError::Empty) => {
                if let Some(f) = file.as_mut() {
                    f.flush();
                }
                match rx.blocking_recv() {
                    Some(msg) => msg,
                    None => break,
                }
            }
            Err(mpsc::error::TryRecvError::Disconnected) => break,
        };
        match msg {
            LogMsg::Line(line) => match file.as_mut() {
                Some(f) => f.write_line(&line),
                None => tracing::warn!("log record with no open log file dropped"),
            },
            LogMsg::Open(path, ack) => {
                let closed = file.take().map_or(Ok(()), OpenFile::close);
                if let Err(e) = closed {
                    tracing::error!("{e}");
                }
                let opened = OpenFile::create(&path).map(|f| file = Some(f));
                let _ = ack.send(opened);
            }
            LogMsg::Close(ack) => {
                let _ = ack.send(file.take().map_or(Ok(()), OpenFile::close));
            }
        }
    }
    if let Some(f) = file.take() {
        if let Err(e) = f.close() {
            tracing::error!("{e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("e03-logsink-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    #[tokio::test]
    async fn lines_land_in_the_file_open_when_they_were_sent() {
        let dir = temp_dir("switch");
        let (sink, writer) = start().unwrap();
        let (a, b) = (dir.join("x/a.jsonl"), dir.join("y/b.jsonl"));
        sink.open(a.clone()).await.unwrap();
        for i in 0..1000 {
            sink.line(format!("a{i}")).await;
        }
        sink.open(b.clone()).await.unwrap();
        sink.line("b0".into()).await;
        sink.close().await.unwrap();
        drop(sink);
        writer.finish().await;
        let a = fs::read_to_string(a).unwrap();
        assert_eq!(a.lines().count(), 1000);
        assert_eq!(a.lines().last(), Some("a999"));
        assert_eq!(fs::read_to_string(b).unwrap(), "b0\n");
        let _ = fs::remove_dir_all(dir);
    }

    #[tokio::test]
    async fn an_unopenable_path_is_reported() {
        let dir = temp_dir("bad");
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("file"), "").unwrap();
        let (sink, _writer) = start().unwrap();
        let err = sink.open(dir.join("file/sub/x.jsonl")).await.unwrap_err();
        assert!(err.to_string().starts_with("cannot open log file"), "{err}");
        let _ = fs::remove_dir_all(dir);
    }
}
