//! One proxy's listener and its connections' links: [`start`] binds the proxy's address and
//! accepts, each connection dials the upstream and runs two pumps (one per direction) through
//! the core's [`Link`] (the toxics as a state machine: what passes, when, and how the connection
//! ends), with the draws of its own seeded stream and the precise timer's waits; [`stop`] stops
//! listening and closes every connection. Each connection is one record of the log when it ends
//! (its toxics, its bytes each way, how it ended).
//!
//! A toxic added or removed reaches the open connections through the proxy's `watch` channel:
//! each draws its link again, as in Toxiproxy.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use e03_model::rng::{stream, Stream};
use e03_model::wire::{Direction, Link, Pass, ProxyRecord, Toxic};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use crate::proxies::{wall_us, Proxy, Shared};
use crate::request_error::RequestError;

/// Binds the proxy's listen address and starts accepting; the bound address replaces a port 0.
pub(crate) async fn start(p: &Shared, proxy: &mut Proxy) -> Result<(), RequestError> {
    let listener = TcpListener::bind(&proxy.listen)
        .await
        .map_err(|e| RequestError::Listen {
            listen: proxy.listen.clone(),
            error: e.to_string(),
        })?;
    let addr = listener.local_addr().map_err(|e| RequestError::LocalAddr {
        error: e.to_string(),
    })?;
    proxy.listen = addr.to_string();
    proxy.enabled = true;
    let mut set = JoinSet::new();
    let shared = Arc::clone(p);
    let (name, upstream) = (proxy.name.clone(), proxy.upstream.clone());
    let toxics = proxy.toxics.subscribe();
    set.spawn(accept(shared, listener, name, upstream, toxics));
    proxy.running = Some(set);
    Ok(())
}

/// Stops listening and closes every open connection of the proxy (each logged `stopped`).
/// It returns once nothing listens: the accept task owns the listener, so an abort alone would
/// close it only when that task is next polled, and a client could still connect to a proxy the
/// API had already answered as down. The accept task needs no lock; its connections end on their
/// own (dropping its set aborts them), and are not awaited here.
pub(crate) async fn stop(proxy: &mut Proxy) {
    proxy.enabled = false;
    if let Some(mut set) = proxy.running.take() {
        set.abort_all();
        while set.join_next().await.is_some() {}
    }
}

async fn accept(
    p: Shared,
    listener: TcpListener,
    name: String,
    upstream: String,
    toxics: watch::Receiver<Arc<Vec<Toxic>>>,
) {
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            r = listener.accept() => match r {
                Ok((client, _)) => {
                    let conn = p.conns.fetch_add(1, Ordering::Relaxed);
                    p.record(&ProxyRecord::Accepted {
                        proxy: name.clone(),
                        conn,
                        at_us: wall_us(),
                    });
                    conns.spawn(connection(
                        Arc::clone(&p),
                        name.clone(),
                        conn,
                        client,
                        upstream.clone(),
                        toxics.clone(),
                    ));
                }
                Err(e) => {
                    tracing::warn!("proxy {name}: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
}

/// How a direction of a connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// Its side closed (EOF or an error).
    Closed,
    Reset,
    Limit,
    Timeout,
}

/// Writes the record of a connection when dropped: ended, or stopped with its proxy.
struct ConnLog {
    p: Shared,
    proxy: String,
    conn: u64,
    accepted_us: u64,
    toxics: Arc<Mutex<Vec<String>>>,
    bytes: [Arc<AtomicU64>; 2],
    end: &'static str,
}

impl Drop for ConnLog {
    fn drop(&mut self) {
        let toxics = self.toxics.lock().map(|t| t.clone()).unwrap_or_default();
        self.p.record(&ProxyRecord::Connection {
            proxy: std::mem::take(&mut self.proxy),
            conn: self.conn,
            accepted_us: self.accepted_us,
            ended_us: wall_us(),
            toxics,
            bytes_up: self.bytes[0].load(Ordering::Relaxed),
            bytes_down: self.bytes[1].load(Ordering::Relaxed),
            end: self.end.into(),
        });
    }
}

async fn connection(
    p: Shared,
    proxy: String,
    conn: u64,
    client: TcpStream,
    upstream: String,
    toxics: watch::Receiver<Arc<Vec<Toxic>>>,
) {
    let mut log = ConnLog {
        p: Arc::clone(&p),
        proxy,
        conn,
        accepted_us: wall_us(),
        toxics: Arc::new(Mutex::new(Vec::new())),
        bytes: [Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0))],
        end: "stopped",
    };
    let _ = client.set_nodelay(true);
    let server = match TcpStream::connect(&upstream).await {
        Ok(s) => s,
        Err(_) => {
            log.end = "upstream_refused";
            return;
        }
    };
    let _ = server.set_nodelay(true);
    let (c_read, c_write) = client.into_split();
    let (s_read, s_write) = server.into_split();
    let (end_tx, mut end_rx) = mpsc::channel::<End>(2);
    // What the connection ended with, for the pumps still running: a reset must close the
    // client's socket with SO_LINGER 0 and no FIN first.
    let (kill_tx, kill_rx) = watch::channel(None::<End>);
    let (seed, index) = p.draw_key(conn);
    let rng = |dir: u32| stream(seed, Stream::Wire, (index as u32).wrapping_mul(2) + dir);
    let mut pumps = JoinSet::new();
    pumps.spawn(pump(
        c_read,
        s_write,
        Direction::Upstream,
        toxics.clone(),
        rng(0),
        end_tx.clone(),
        kill_rx.clone(),
        Arc::clone(&log.bytes[0]),
        Arc::clone(&log.toxics),
        p.timer.clone(),
    ));
    pumps.spawn(pump(
        s_read,
        c_write,
        Direction::Downstream,
        toxics,
        rng(1),
        end_tx,
        kill_rx,
        Arc::clone(&log.bytes[1]),
        Arc::clone(&log.toxics),
        p.timer.clone(),
    ));
    // Both directions closed, or one of them ends the connection.
    let mut closed = 0;
    while let Some(end) = end_rx.recv().await {
        match end {
            End::Closed => {
                closed += 1;
                if closed == 2 {
                    log.end = "closed";
                    break;
                }
            }
            End::Reset => {
                log.end = "reset";
                break;
            }
            End::Limit => {
                log.end = "limit";
                break;
            }
            End::Timeout => {
                log.end = "timeout";
                break;
            }
        }
    }
    // The pumps end on the kill (a reset closes the client's socket as a reset); one stuck in
    // a write is aborted after a second.
    let reset = log.end == "reset";
    kill_tx.send_replace(Some(if reset { End::Reset } else { End::Closed }));
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        while pumps.join_next().await.is_some() {}
    })
    .await;
    pumps.abort_all();
    while pumps.join_next().await.is_some() {}
}

/// Ends a pump. On a reset, the pump that writes to the client sets SO_LINGER 0 on its socket
/// and gives up its write half without the FIN a dropped write half sends: the socket's close,
/// once the read half is dropped too, is a reset.
fn finish(to: OwnedWriteHalf, dir: Direction, why: End) {
    if why == End::Reset && dir == Direction::Downstream {
        let _ = to.as_ref().set_zero_linger();
        to.forget();
    }
}

/// Aborts a task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// One direction: reads from `from`, writes to `to` as the link's toxics say.
#[allow(clippy::too_many_arguments)]
async fn pump(
    from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    dir: Direction,
    mut toxics: watch::Receiver<Arc<Vec<Toxic>>>,
    mut rng: e03_model::rng::LabRng,
    end: mpsc::Sender<End>,
    mut kill: watch::Receiver<Option<End>>,
    bytes: Arc<AtomicU64>,
    applied: Arc<Mutex<Vec<String>>>,
    clock: precise_timer::PreciseTimer,
) {
    // The reader keeps reading while the writer waits: each chunk carries the instant it was
    // read, so a latency counts from there (a chunk that waited behind another is not delayed
    // twice), as Toxiproxy's chunks carry their timestamps.
    let (chunk_tx, mut chunks) = mpsc::channel::<(Instant, Vec<u8>)>(64);
    let _reader = AbortOnDrop(tokio::spawn(async move {
        let mut from = from;
        let mut buf = vec![0u8; 32 * 1024];
        loop {
            match from.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    if chunk_tx
                        .send((Instant::now(), buf[..n].to_vec()))
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
            }
        }
    }));
    let draw = |toxics: &[Toxic], rng: &mut e03_model::rng::LabRng| {
        let link = Link::draw(toxics, dir, rng);
        if let Ok(mut names) = applied.lock() {
            for n in link.names() {
                if !names.contains(n) {
                    names.push(n.clone());
                }
            }
        }
        link
    };
    let mut link = draw(&toxics.borrow_and_update(), &mut rng);
    let mut since = Instant::now();
    loop {
        // The earliest of the link's timers: a reset, or a timeout's close.
        let timer = [
            link.reset_after().map(|d| (since + d, End::Reset)),
            link.blackhole()
                .flatten()
                .map(|d| (since + d, End::Timeout)),
        ]
        .into_iter()
        .flatten()
        .min_by_key(|(at, _)| *at);
        let fire = async {
            match timer {
                Some((at, why)) => {
                    clock.sleep_until(at).await;
                    why
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            chunk = chunks.recv() => {
                let Some((read_at, data)) = chunk else {
                    // The side we read from closed: pass the close on (late, with slow_close).
                    clock.sleep_until(Instant::now() + link.close_delay()).await;
                    let _ = to.shutdown().await;
                    let _ = end.send(End::Closed).await;
                    return;
                };
                let Pass::Forward { after_read, pieces, then_close } =
                    link.pass(data.len(), &mut rng)
                else {
                    continue;
                };
                // Each piece's wait counts from the previous piece's due instant, so the
                // waits add up to the toxic's figure and a late wake-up is not carried on.
                let mut at = read_at + after_read;
                clock.sleep_until(at).await;
                let mut off = 0;
                for (wait, size) in pieces {
                    at += wait;
                    clock.sleep_until(at).await;
                    if to.write_all(&data[off..off + size]).await.is_err() {
                        let _ = end.send(End::Closed).await;
                        return;
                    }
                    bytes.fetch_add(size as u64, Ordering::Relaxed);
                    off += size;
                }
                if then_close {
                    let _ = end.send(End::Limit).await;
                    return;
                }
            }
            changed = toxics.changed() => {
                if changed.is_ok() {
                    link = draw(&toxics.borrow_and_update(), &mut rng);
                    since = Instant::now();
                } else {
                    // The proxy is gone: its connections end with it.
                    return;
                }
            }
            why = fire => {
                let _ = end.send(why).await;
                // On a reset, the pump holding the client's write half closes it as a reset;
                // the other ends on the kill.
                finish(to, dir, why);
                return;
            }
            _ = kill.changed() => {
                let why = kill.borrow().unwrap_or(End::Closed);
                finish(to, dir, why);
                return;
            }
        }
    }
}
