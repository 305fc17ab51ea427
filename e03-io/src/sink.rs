//! The lab's one JSON Lines writer, for every live process: the service's server logs, the
//! swarm's client logs, a hop's calls and a proxy's connections.
//!
//! A [`LogSink`] hands lines to one writer thread of its own that owns the open file, so no
//! request path ever touches the disk or waits on a lock. The thread writes through a
//! 256 KiB buffer and flushes whenever it has nothing more to write, so a quiet process has
//! everything on disk within moments and a busy one writes in large blocks.
//!
//! - **Never a lost line.** [`LogSink::line`] (async) waits while [`CAPACITY`] lines wait for
//!   the writer (back-pressure) instead of dropping one. [`LogSink::record_now`] never waits, for
//!   callers that cannot (a `Drop`); what it hands over is bounded by its callers.
//! - **Files switch in order.** Opening, adopting and closing a file are messages on the same
//!   channel as the lines, so a line sent before a switch lands in the file open when it was sent.
//!   A line sent while no file is open is not written (a proxy without a log).
//! - **Counts.** [`LogSink::pending`] counts lines handed over and not yet written (a hop's
//!   `GET /inflight` waits for 0); [`LogSink::line_counted`] builds its line from the number of
//!   lines written before it in its file (the client log's `run_end.records`); [`LogSink::close`]
//!   flushes, syncs the file to disk and returns how many lines it holds, or the first write error.
//!
//! The thread exits, after writing everything sent, once every clone of the sink is dropped.

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};

use tokio::sync::{oneshot, Semaphore};

/// Lines that may wait for the writer before [`LogSink::line`] waits for room.
pub const CAPACITY: usize = 65_536;

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

/// A line's text, or how to make it from the number of lines written before it in its file.
enum Text {
    Ready(String),
    Counted(Box<dyn FnOnce(u64) -> String + Send>),
}

enum Msg {
    /// Closes the current file (if any) and creates `path` (truncating it) and its folders.
    Open(PathBuf, oneshot::Sender<Result<(), LogError>>),
    /// Closes the current file (if any) and writes to `file` (opened by the caller) from now on.
    Adopt(File, PathBuf),
    /// One line, without its newline; `permit`: it holds one of the [`CAPACITY`] places.
    Line { text: Text, permit: bool },
    /// Flushes, syncs and closes the current file; the lines it holds, or its first error.
    Close(Option<oneshot::Sender<Result<u64, LogError>>>),
}

/// The sending side of one writer thread; clones share it. Dropping the last clone writes
/// every line left and waits for the thread to exit.
#[derive(Clone)]
pub struct LogSink {
    inner: Arc<Inner>,
}

struct Inner {
    tx: Option<mpsc::Sender<Msg>>,
    thread: Option<std::thread::JoinHandle<()>>,
    room: Arc<Semaphore>,
    sent: AtomicU64,
    /// Lines flushed to their file (or dropped, with no file open).
    written: Arc<AtomicU64>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl std::fmt::Debug for LogSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogSink")
            .field("pending", &self.pending())
            .finish()
    }
}

impl LogSink {
    /// Starts a writer thread with no file open. It is a plain thread, not a runtime task, so it
    /// never holds up a runtime's shutdown.
    pub fn start() -> std::io::Result<LogSink> {
        let (tx, rx) = mpsc::channel();
        let room = Arc::new(Semaphore::new(CAPACITY));
        let written = Arc::new(AtomicU64::new(0));
        let (r, w) = (Arc::clone(&room), Arc::clone(&written));
        let thread = std::thread::Builder::new()
            .name("jsonl-sink".into())
            .spawn(move || write_loop(rx, &r, &w))?;
        Ok(LogSink {
            inner: Arc::new(Inner {
                tx: Some(tx),
                thread: Some(thread),
                room,
                sent: AtomicU64::new(0),
                written,
            }),
        })
    }

    fn post(&self, msg: Msg) -> Result<(), LogError> {
        let tx = self
            .inner
            .tx
            .as_ref()
            .expect("only a dropped sink has no sender");
        tx.send(msg).map_err(|_| LogError::Stopped)
    }

    /// A writer thread that writes to `file` (opened by the caller, at `path`).
    pub fn to_file(file: File, path: PathBuf) -> std::io::Result<LogSink> {
        let sink = Self::start()?;
        sink.adopt(file, path);
        Ok(sink)
    }

    /// Switches to a new file, created with its folders (an existing one is truncated); the
    /// previous one is closed first.
    pub async fn open(&self, path: PathBuf) -> Result<(), LogError> {
        let (ack, done) = oneshot::channel();
        self.post(Msg::Open(path, ack))?;
        done.await.map_err(|_| LogError::Stopped)?
    }

    /// Switches to `file`, opened by the caller at `path`; the previous file is closed first.
    /// Never waits (its errors show at [`close`](Self::close)).
    pub fn adopt(&self, file: File, path: PathBuf) {
        let _ = self.post(Msg::Adopt(file, path));
    }

    /// Hands one line (without its newline) to the writer; waits while [`CAPACITY`] lines wait.
    pub async fn line(&self, line: String) {
        self.send(Text::Ready(line)).await
    }

    /// Hands one record, as one JSON line, to the writer ([`line`](Self::line)).
    pub async fn record<T: serde::Serialize>(&self, record: &T) {
        self.line(serde_json::to_string(record).expect("a record serializes"))
            .await
    }

    /// A line made from the number of lines written before it in its file.
    pub async fn line_counted(&self, make: impl FnOnce(u64) -> String + Send + 'static) {
        self.send(Text::Counted(Box::new(make))).await
    }

    /// Hands one record over at once, never waiting for room (for a caller that cannot wait).
    pub fn record_now<T: serde::Serialize>(&self, record: &T) {
        let line = serde_json::to_string(record).expect("a record serializes");
        self.inner.sent.fetch_add(1, Ordering::SeqCst);
        let text = Text::Ready(line);
        if self
            .post(Msg::Line {
                text,
                permit: false,
            })
            .is_err()
        {
            self.inner.written.fetch_add(1, Ordering::SeqCst);
        }
    }

    async fn send(&self, text: Text) {
        // Counted before it waits, so `pending` never misses a line on its way.
        self.inner.sent.fetch_add(1, Ordering::SeqCst);
        let permit = match self.inner.room.acquire().await {
            Ok(p) => {
                p.forget();
                true
            }
            Err(_) => false,
        };
        if self.post(Msg::Line { text, permit }).is_err() {
            // The writer is gone (it panicked): nothing will ever write this line.
            self.inner.written.fetch_add(1, Ordering::SeqCst);
            eprintln!("the log writer has stopped; a record was lost");
        }
    }

    /// Flushes, syncs and closes the current file once every line sent before is written; the
    /// lines the file holds. With no file open, `Ok(0)`.
    pub async fn close(&self) -> Result<u64, LogError> {
        let (ack, done) = oneshot::channel();
        self.post(Msg::Close(Some(ack)))?;
        done.await.map_err(|_| LogError::Stopped)?
    }

    /// Closes the current file without waiting (errors are printed).
    pub fn close_now(&self) {
        let _ = self.post(Msg::Close(None));
    }

    /// Lines handed over and not yet written.
    pub fn pending(&self) -> u64 {
        let inner = &self.inner;
        inner
            .sent
            .load(Ordering::SeqCst)
            .saturating_sub(inner.written.load(Ordering::SeqCst))
    }
}

/// The open file, the lines written to it, and its first write error (reported at close).
struct OpenFile {
    path: PathBuf,
    out: BufWriter<File>,
    lines: u64,
    error: Option<std::io::Error>,
}

impl OpenFile {
    fn new(file: File, path: PathBuf) -> OpenFile {
        OpenFile {
            path,
            out: BufWriter::with_capacity(256 * 1024, file),
            lines: 0,
            error: None,
        }
    }

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
        Ok(OpenFile::new(file, path.to_path_buf()))
    }

    fn write(&mut self, text: Text) {
        let line = match text {
            Text::Ready(line) => line,
            Text::Counted(make) => make(self.lines),
        };
        self.lines += 1;
        if self.error.is_some() {
            return;
        }
        let r = self
            .out
            .write_all(line.as_bytes())
            .and_then(|()| self.out.write_all(b"\n"));
        if let Err(e) = r {
            eprintln!("cannot write log {}: {e}", self.path.display());
            self.error = Some(e);
        }
    }

    fn flush(&mut self) {
        if self.error.is_none() {
            if let Err(e) = self.out.flush() {
                eprintln!("cannot write log {}: {e}", self.path.display());
                self.error = Some(e);
            }
        }
    }

    fn close(mut self) -> Result<u64, LogError> {
        self.flush();
        if self.error.is_none() {
            if let Err(e) = self.out.get_ref().sync_all() {
                self.error = Some(e);
            }
        }
        match self.error.take() {
            None => Ok(self.lines),
            Some(source) => Err(LogError::Write {
                path: self.path,
                source,
            }),
        }
    }
}

fn write_loop(rx: mpsc::Receiver<Msg>, room: &Semaphore, written: &AtomicU64) {
    let mut file: Option<OpenFile> = None;
    // Lines taken from the channel since the last flush: counted as written once flushed.
    let mut unflushed = 0u64;
    let close = |file: &mut Option<OpenFile>, unflushed: &mut u64| {
        let closed = file.take().map_or(Ok(0), OpenFile::close);
        written.fetch_add(std::mem::take(unflushed), Ordering::SeqCst);
        if let Err(e) = &closed {
            eprintln!("{e}");
        }
        closed
    };
    loop {
        // Flush whenever there is nothing more to write right now.
        let msg = match rx.try_recv() {
            Ok(msg) => msg,
            Err(mpsc::TryRecvError::Empty) => {
                if let Some(f) = file.as_mut() {
                    f.flush();
                }
                written.fetch_add(std::mem::take(&mut unflushed), Ordering::SeqCst);
                match rx.recv() {
                    Ok(msg) => msg,
                    Err(_) => break,
                }
            }
            Err(mpsc::TryRecvError::Disconnected) => break,
        };
        match msg {
            Msg::Line { text, permit } => {
                if let Some(f) = file.as_mut() {
                    f.write(text);
                }
                unflushed += 1;
                if permit {
                    room.add_permits(1);
                }
            }
            Msg::Open(path, ack) => {
                let _ = close(&mut file, &mut unflushed);
                let _ = ack.send(OpenFile::create(&path).map(|f| file = Some(f)));
            }
            Msg::Adopt(f, path) => {
                let _ = close(&mut file, &mut unflushed);
                file = Some(OpenFile::new(f, path));
            }
            Msg::Close(ack) => {
                let closed = close(&mut file, &mut unflushed);
                if let Some(ack) = ack {
                    let _ = ack.send(closed);
                }
            }
        }
    }
    let _ = close(&mut file, &mut unflushed);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("e03-io-sink-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    #[tokio::test]
    async fn lines_land_in_the_file_open_when_they_were_sent() {
        let dir = temp_dir("switch");
        let sink = LogSink::start().unwrap();
        let (a, b) = (dir.join("x/a.jsonl"), dir.join("y/b.jsonl"));
        sink.record(&"before any file").await;
        sink.open(a.clone()).await.unwrap();
        for i in 0..1000 {
            sink.line(format!("a{i}")).await;
        }
        sink.open(b.clone()).await.unwrap();
        sink.line("b0".into()).await;
        assert_eq!(sink.close().await.unwrap(), 1);
        assert_eq!(sink.pending(), 0);
        let a = fs::read_to_string(a).unwrap();
        assert_eq!(a.lines().count(), 1000);
        assert_eq!(a.lines().last(), Some("a999"));
        assert_eq!(fs::read_to_string(b).unwrap(), "b0\n");
        let _ = fs::remove_dir_all(dir);
    }

    #[tokio::test]
    async fn more_lines_than_its_capacity_from_many_senders_are_all_written_and_counted() {
        let dir = temp_dir("many");
        let path = dir.join("sub/client.jsonl");
        let sink = LogSink::start().unwrap();
        sink.open(path.clone()).await.unwrap();
        let mut producers = Vec::new();
        for p in 0..4 {
            let sink = sink.clone();
            producers.push(tokio::spawn(async move {
                for i in 0..20_000 {
                    sink.record(&(p, i)).await;
                }
            }));
        }
        for p in producers {
            p.await.unwrap();
        }
        // A caller that cannot wait, then a line made from the count before it.
        sink.record_now(&"now");
        sink.line_counted(|n| format!("{{\"records\":{n}}}")).await;
        assert_eq!(sink.close().await.unwrap(), 80_002);
        let text = fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 80_002);
        assert_eq!(lines[80_000], "\"now\"");
        assert_eq!(lines[80_001], "{\"records\":80001}");
        // Each sender's lines in its own order.
        for p in 0..4 {
            let mine: Vec<&str> = lines
                .iter()
                .copied()
                .filter(|l| l.starts_with(&format!("[{p},")))
                .collect();
            assert_eq!(mine.len(), 20_000);
            assert!(mine
                .iter()
                .enumerate()
                .all(|(i, l)| *l == format!("[{p},{i}]")));
        }
        let _ = fs::remove_dir_all(dir);
    }

    #[test]
    fn an_adopted_file_is_written_off_the_callers_path_and_pending_falls_to_0() {
        let dir = temp_dir("adopt");
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("x.jsonl");
        let sink = LogSink::to_file(File::create(&path).unwrap(), path.clone()).unwrap();
        for i in 0..1000 {
            sink.record_now(&i);
        }
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while sink.pending() > 0 && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(sink.pending(), 0);
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.lines().enumerate().all(|(i, l)| l == i.to_string()));
        assert_eq!(text.lines().count(), 1000);
        // Closing without waiting still writes what came before it; later lines go nowhere.
        sink.record_now(&"last");
        sink.close_now();
        sink.record_now(&"after");
        drop(sink);
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !fs::read_to_string(&path).unwrap().ends_with("\"last\"\n")
            && std::time::Instant::now() < until
        {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(fs::read_to_string(&path).unwrap().ends_with("\"last\"\n"));
        let _ = fs::remove_dir_all(dir);
    }

    #[tokio::test]
    async fn an_unopenable_path_is_reported() {
        let dir = temp_dir("bad");
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("file"), "").unwrap();
        let sink = LogSink::start().unwrap();
        let err = sink.open(dir.join("file/sub/x.jsonl")).await.unwrap_err();
        assert!(err.to_string().starts_with("cannot open log file"), "{err}");
        let _ = fs::remove_dir_all(dir);
    }
}
