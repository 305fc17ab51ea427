//! The names of the logs a run leaves, and the one way the lab writes a finished file.
//!
//! A chain scenario's variant directory holds `top.jsonl` (the top caller's operations) and
//! `layer-<L>-<name>.jsonl` (the calls that arrived at layer L), written by the hops when live
//! and by the simulator in the same format; a stopped variant leaves [`STOPPED_MARKER`].
//! (The E03 logs' names, `<scenario>/server-<strategy>-seed<N>.jsonl` and the client's, are
//! the control protocol's: `e03_core::control::server_log_path`.)

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};

use e03_core::chain::ChainVariant;

/// The top caller's log in a chain variant's directory.
pub const TOP_LOG: &str = "top.jsonl";

/// The file a stopped chain run leaves in the variant it was running: why it is incomplete.
pub const STOPPED_MARKER: &str = "STOPPED.txt";

/// The name of the log of layer `layer` of `variant`.
pub fn layer_log_name(variant: &ChainVariant, layer: u32) -> String {
    format!("layer-{layer}-{}.jsonl", variant.layer_name(layer))
}

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename: a
/// reader sees the old file or the whole new one, never half of it.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("json.tmp");
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    write().inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// Writes records as JSON Lines, at once ([`write_atomic`]): the simulator's chain runs, in the
/// hops' format.
pub fn write_jsonl<T: serde::Serialize>(path: &Path, records: &[T]) -> std::io::Result<()> {
    let mut text = String::new();
    for r in records {
        text.push_str(&serde_json::to_string(r).map_err(std::io::Error::other)?);
        text.push('\n');
    }
    write_atomic(path, text.as_bytes())
}

/// A JSON Lines file written off the caller's path: [`JsonlSink::send`] hands a line to a
/// thread of its own that appends it (buffered, flushed whenever it has nothing more to write)
/// and never blocks. [`JsonlSink::pending`] counts the lines handed over and not yet flushed, so
/// a reader can wait for 0 before it reads; dropping the sink writes every line left and joins
/// the thread.
#[derive(Debug)]
pub struct JsonlSink {
    tx: Option<mpsc::Sender<String>>,
    sent: AtomicU64,
    flushed: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl JsonlSink {
    /// Appends to `file` (opened by the caller).
    pub fn new(file: std::fs::File) -> Self {
        let (tx, rx) = mpsc::channel::<String>();
        let flushed = Arc::new(AtomicU64::new(0));
        let done = Arc::clone(&flushed);
        let thread = std::thread::Builder::new()
            .name("jsonl-sink".into())
            .spawn(move || {
                let mut out = std::io::BufWriter::new(file);
                let mut unflushed = 0u64;
                let write = |line: String, out: &mut std::io::BufWriter<std::fs::File>| {
                    if let Err(e) = out.write_all(line.as_bytes()) {
                        eprintln!("cannot write a JSON Lines log: {e}");
                    }
                };
                while let Ok(line) = rx.recv() {
                    write(line, &mut out);
                    unflushed += 1;
                    // Everything waiting now goes into the same flush.
                    while let Ok(line) = rx.try_recv() {
                        write(line, &mut out);
                        unflushed += 1;
                    }
                    if let Err(e) = out.flush() {
                        eprintln!("cannot write a JSON Lines log: {e}");
                    }
                    done.fetch_add(std::mem::take(&mut unflushed), Ordering::SeqCst);
                }
            })
            .expect("a thread can be started");
        Self {
            tx: Some(tx),
            sent: AtomicU64::new(0),
            flushed,
            thread: Some(thread),
        }
    }

    /// Hands one record to the writer (its line ends with a newline).
    pub fn send<T: serde::Serialize>(&self, record: &T) {
        let mut line = serde_json::to_string(record).expect("a record serializes");
        line.push('\n');
        self.sent.fetch_add(1, Ordering::SeqCst);
        if let Some(tx) = &self.tx {
            let _ = tx.send(line);
        }
    }

    /// Lines handed over and not yet flushed to the file.
    pub fn pending(&self) -> u64 {
        self.sent
            .load(Ordering::SeqCst)
            .saturating_sub(self.flushed.load(Ordering::SeqCst))
    }
}

impl Drop for JsonlSink {
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sink_writes_every_line_in_order_and_counts_what_is_pending() {
        let dir = std::env::temp_dir().join(format!("e03-io-sink-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("x.jsonl");
        let sink = JsonlSink::new(std::fs::File::create(&path).unwrap());
        for i in 0..1000 {
            sink.send(&i);
        }
        // The writer catches up: nothing is pending once everything is flushed.
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while sink.pending() > 0 && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(sink.pending(), 0);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 1000);
        assert!(text.lines().enumerate().all(|(i, l)| l == i.to_string()));
        // Dropping writes what is left.
        sink.send(&"last");
        drop(sink);
        assert!(std::fs::read_to_string(&path)
            .unwrap()
            .ends_with("\"last\"\n"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn records_are_written_one_line_each_and_no_temporary_file_is_left() {
        let dir = std::env::temp_dir().join(format!("e03-io-logs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(TOP_LOG);
        write_jsonl(&path, &[1, 2, 3]).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "1\n2\n3\n");
        assert!(!path.with_extension("json.tmp").exists());
        // A folder that does not exist: an error, and nothing left behind.
        assert!(write_jsonl(&dir.join("nope/x.jsonl"), &[1]).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
