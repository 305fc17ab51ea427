//! Logs sent over HTTP, for a run whose processes share no folder (issue "The lab on an
//! orchestrator", item 3): each swarm shard and each dependency sends the logs it wrote to the
//! analyzer when its run ends, and the analyzer (`lab report --listen ADDR`) writes them into its
//! run folder before it reads them. A shared volume is then optional.
//!
//! The protocol, one request a file:
//!
//! ```text
//! PUT /logs/<scenario>/<file>      body: the file's bytes
//! x-e03-crc32: <8 hex digits>      CRC-32 of the body
//! ```
//!
//! Answers: `201` stored; `200` the same bytes were already there (a retry of a file that was
//! stored, so a sender may always retry); `400` a name that is not one path component of
//! `[A-Za-z0-9._-]` (not starting with a dot), a file that is not `.jsonl` or `.toml`, or no
//! checksum; `409` a different file of that name is there (never overwritten); `422` the body's
//! CRC-32 is not the header's (damaged on the way: the sender retries). A stored file appears
//! whole or not at all (written beside, then linked into place).
//!
//! The checksum is CRC-32 (ISO-HDLC, the one of gzip, zip and PNG; `crc32fast`): it catches a
//! body damaged or cut on the way, not a forger. The sender retries with capped exponential
//! backoff and full jitter ([`Backoff`]).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, put};
use axum::Router;
use http_body_util::BodyExt;
use rand::{Rng, SeedableRng};

/// The help of `--send-logs` (`E03_SEND_LOGS`), the flag of every process that sends its logs.
pub const SEND_LOGS_HELP: &str = "send each log, when its run ends, to the analyzer at URL \
     (http://HOST:PORT, where `lab report --listen` runs), with a CRC-32 and retries: no shared \
     folder needed (docs/shards.md)";

/// The flag and variable of the collector's address, in every process that sends its logs.
pub const SEND_LOGS_ENV: &str = "E03_SEND_LOGS";

/// The header carrying the body's CRC-32, as 8 lowercase hex digits.
pub const CRC_HEADER: &str = "x-e03-crc32";

/// The CRC-32 of `bytes` as the header carries it.
pub fn crc32_hex(bytes: &[u8]) -> String {
    format!("{:08x}", crc32fast::hash(bytes))
}

/// Whether `part` may be one component of a stored path: 1 to 128 characters of
/// `[A-Za-z0-9._-]`, not starting with a dot (no `..`, no hidden file, no separator).
pub fn valid_component(part: &str) -> bool {
    (1..=128).contains(&part.len())
        && !part.starts_with('.')
        && part
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Whether `file` is a file the collector keeps: a log (`.jsonl`) or a kept definition (`.toml`).
fn valid_file(file: &str) -> bool {
    valid_component(file) && (file.ends_with(".jsonl") || file.ends_with(".toml"))
}

/// The collector's base URL a sender was given (`--send-logs`, `E03_SEND_LOGS`): `None` when
/// empty; `Err` says what is accepted (the caller names its flag).
pub fn collector_url(value: &str) -> Result<Option<String>, crate::error::InputError> {
    let v = value.trim();
    if v.is_empty() {
        return Ok(None);
    }
    let rest = v.strip_prefix("http://").unwrap_or("");
    let host = rest.trim_end_matches('/');
    if host.is_empty() || host.contains(['/', '?', '#', ' ']) {
        return Err(crate::error::InputError::CollectorUrl {
            value: v.to_string(),
        });
    }
    Ok(Some(format!("http://{host}")))
}

/// What [`store`] did with a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    /// Written: it was not there.
    New,
    /// The same bytes were there already.
    Same,
}

/// Why [`store`] refused a file.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// Not a name the collector keeps (`400`).
    Name(String),
    /// The body's CRC-32 is not the header's (`422`).
    Checksum { sent: String, got: String },
    /// Another file of that name is there (`409`).
    Differs(String),
    /// The disk failed (`500`).
    Io(String),
}

impl Refused {
    fn status(&self) -> StatusCode {
        match self {
            Refused::Name(_) => StatusCode::BAD_REQUEST,
            Refused::Checksum { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            Refused::Differs(_) => StatusCode::CONFLICT,
            Refused::Io(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn message(&self) -> String {
        match self {
            Refused::Name(m) | Refused::Differs(m) | Refused::Io(m) => m.clone(),
            Refused::Checksum { sent, got } => format!(
                "the body's CRC-32 is {got}, the {CRC_HEADER} header says {sent}: damaged on \
                 the way; send it again"
            ),
        }
    }
}

/// Stores the file `temp` (already written, its CRC-32 `got`) as `dir/scenario/file`, when
/// the names are valid and `got` is `sent`: linked into place, so that it appears whole, and
/// never over another file. `temp` is removed in every case.
pub fn store(
    dir: &Path,
    scenario: &str,
    file: &str,
    temp: &Path,
    sent: &str,
    got: &str,
) -> Result<Stored, Refused> {
    let result = place(dir, scenario, file, temp, sent, got);
    let _ = std::fs::remove_file(temp);
    result
}

fn place(
    dir: &Path,
    scenario: &str,
    file: &str,
    temp: &Path,
    sent: &str,
    got: &str,
) -> Result<Stored, Refused> {
    check_names(scenario, file)?;
    if !sent.eq_ignore_ascii_case(got) {
        return Err(Refused::Checksum {
            sent: sent.to_string(),
            got: got.to_string(),
        });
    }
    let folder = dir.join(scenario);
    std::fs::create_dir_all(&folder)
        .map_err(|e| Refused::Io(format!("cannot create {}: {e}", folder.display())))?;
    let target = folder.join(file);
    match std::fs::hard_link(temp, &target) {
        Ok(()) => Ok(Stored::New),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let same = std::fs::read(&target)
                .and_then(|a| std::fs::read(temp).map(|b| a == b))
                .map_err(|e| Refused::Io(format!("cannot compare {}: {e}", target.display())))?;
            if same {
                Ok(Stored::Same)
            } else {
                Err(Refused::Differs(format!(
                    "{} is there with other bytes; it is not overwritten",
                    target.display()
                )))
            }
        }
        Err(e) => Err(Refused::Io(format!(
            "cannot write {}: {e}",
            target.display()
        ))),
    }
}

fn check_names(scenario: &str, file: &str) -> Result<(), Refused> {
    if !valid_component(scenario) {
        return Err(Refused::Name(format!(
            "invalid scenario folder {scenario:?}: expected 1 to 128 characters of \
             [A-Za-z0-9._-], not starting with a dot"
        )));
    }
    if !valid_file(file) {
        return Err(Refused::Name(format!(
            "invalid file {file:?}: expected a name of [A-Za-z0-9._-] ending in .jsonl or .toml, \
             not starting with a dot"
        )));
    }
    Ok(())
}

/// The collector: `PUT /logs/{scenario}/{file}` stores into `dir` (see the module's protocol),
/// `GET /health` answers 200. Bodies are streamed to disk, never held whole.
pub fn collector(dir: PathBuf) -> Router {
    Router::new()
        .route("/logs/{scenario}/{file}", put(receive))
        .route("/health", get(|| async { "ok\n" }))
        .layer(axum::extract::DefaultBodyLimit::disable())
        .with_state(std::sync::Arc::new(dir))
}

/// Serves [`collector`] on `listener` until the process ends (or the task is dropped).
pub async fn serve(listener: tokio::net::TcpListener, dir: PathBuf) -> std::io::Result<()> {
    axum::serve(listener, collector(dir)).await
}

async fn receive(
    State(dir): State<std::sync::Arc<PathBuf>>,
    UrlPath((scenario, file)): UrlPath<(String, String)>,
    headers: HeaderMap,
    body: Body,
) -> (StatusCode, String) {
    if let Err(r) = check_names(&scenario, &file) {
        return (r.status(), r.message() + "\n");
    }
    let Some(sent) = headers
        .get(CRC_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
    else {
        return (
            StatusCode::BAD_REQUEST,
            format!("no {CRC_HEADER} header: send the body's CRC-32 as 8 hex digits\n"),
        );
    };
    let temp = temp_path(&dir, &scenario, &file);
    let got = match write_temp(&temp, body).await {
        Ok(crc) => crc,
        Err(e) => {
            let _ = std::fs::remove_file(&temp);
            return (
                StatusCode::BAD_REQUEST,
                format!("the body could not be read or written: {e}\n"),
            );
        }
    };
    let dir = dir.clone();
    let (s, f) = (scenario.clone(), file.clone());
    let done = tokio::task::spawn_blocking(move || store(&dir, &s, &f, &temp, &sent, &got)).await;
    match done {
        Ok(Ok(Stored::New)) => (StatusCode::CREATED, format!("stored {scenario}/{file}\n")),
        Ok(Ok(Stored::Same)) => (
            StatusCode::OK,
            format!("already there: {scenario}/{file}\n"),
        ),
        Ok(Err(r)) => (r.status(), r.message() + "\n"),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")),
    }
}

/// A fresh name beside the collector's folder for one upload (dot-named: no reader takes it
/// for a log).
fn temp_path(dir: &Path, scenario: &str, file: &str) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    dir.join(format!(
        ".upload-{}-{n}-{scenario}-{file}.part",
        std::process::id()
    ))
}

/// Streams `body` into `temp`; the CRC-32 of what was written.
async fn write_temp(temp: &Path, mut body: Body) -> std::io::Result<String> {
    if let Some(parent) = temp.parent() {
        std::fs::create_dir_all(parent)?;
    }
    // A fresh name of the collector's own; never over a file that is there.
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(temp)?;
    let mut out = std::io::BufWriter::new(file);
    let mut crc = crc32fast::Hasher::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(std::io::Error::other)?;
        if let Ok(data) = frame.into_data() {
            crc.update(&data);
            out.write_all(&data)?;
        }
    }
    let file = out.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()?;
    Ok(format!("{:08x}", crc.finalize()))
}

/// The sender's retry: capped exponential backoff with full jitter, from AWS's "Exponential
/// Backoff And Jitter" (Marc Brooker, AWS Architecture Blog, 2015): before retry `k` (from
/// 0) it sleeps a uniform draw from `[0, min(cap, base * 2^k))`. Defaults here: base 250 ms,
/// cap 8 s, 8 tries in all (7 sleeps, at most 23.75 s of them), so that the shards of a
/// fleet ending together do not send their logs in lockstep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    pub base: Duration,
    pub cap: Duration,
    pub tries: u32,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            base: Duration::from_millis(250),
            cap: Duration::from_secs(8),
            tries: 8,
        }
    }
}

impl Backoff {
    /// The ceiling of the sleep before retry `k` (from 0): `min(cap, base * 2^k)`.
    pub fn ceiling(&self, k: u32) -> Duration {
        self.base
            .checked_mul(1u32.checked_shl(k).unwrap_or(u32::MAX))
            .map_or(self.cap, |d| d.min(self.cap))
    }

    /// The sleep before retry `k`: `ceiling(k)` scaled by `u` in `[0, 1)`.
    pub fn sleep(&self, k: u32, u: f64) -> Duration {
        self.ceiling(k).mul_f64(u.clamp(0.0, 1.0))
    }
}

/// Why a file could not be sent.
#[derive(Debug, thiserror::Error)]
pub enum ShipError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("invalid log path {0}: expected .../<scenario>/<file>.jsonl or .toml")]
    Name(String),
    #[error("{url} refused {path}: {status} {message}")]
    Refused {
        url: String,
        path: String,
        status: u16,
        message: String,
    },
    #[error("{path} not sent to {url} after {tries} tries: {last}")]
    GaveUp {
        url: String,
        path: String,
        tries: u32,
        last: String,
    },
}

/// Sends each file of `paths` (`.../<scenario>/<file>`: its folder's name is its scenario
/// folder at the collector) to the collector at `base` (e.g. `http://analyzer:9100`), one after
/// another, each with [`Backoff::default`]: a connection error, a timeout, a `5xx`, `422` or
/// `429` is tried again; any other refusal is final. Returns the first error, after trying
/// every file.
pub async fn send_files(
    http: &reqwest::Client,
    base: &str,
    paths: &[PathBuf],
) -> Result<(), ShipError> {
    let mut first = None;
    for path in paths {
        if let Err(e) = send_file(http, base, path, Backoff::default()).await {
            tracing::error!("{e}");
            first.get_or_insert(e);
        }
    }
    first.map_or(Ok(()), Err)
}

/// Sends one file (see [`send_files`]).
pub async fn send_file(
    http: &reqwest::Client,
    base: &str,
    path: &Path,
    backoff: Backoff,
) -> Result<(), ShipError> {
    let shown = path.display().to_string();
    let name = |p: Option<&Path>| {
        p.and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let (scenario, file) = (name(path.parent()), name(Some(path)));
    if check_names(&scenario, &file).is_err() {
        return Err(ShipError::Name(shown));
    }
    let bytes = std::fs::read(path).map_err(|source| ShipError::Read {
        path: shown.clone(),
        source,
    })?;
    let crc = crc32_hex(&bytes);
    let url = format!("{}/logs/{scenario}/{file}", base.trim_end_matches('/'));
    // The jitter's stream, keyed by the file and the process: shards draw apart.
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(
        u64::from(crc32fast::hash(url.as_bytes())) << 32 | u64::from(std::process::id()),
    );
    let bytes = bytes::Bytes::from(bytes);
    let mut last = String::new();
    for k in 0..backoff.tries {
        if k > 0 {
            tokio::time::sleep(backoff.sleep(k - 1, rng.random::<f64>())).await;
        }
        let sent = http
            .put(&url)
            .header(CRC_HEADER, &crc)
            .timeout(Duration::from_secs(120))
            .body(bytes.clone())
            .send()
            .await;
        match sent {
            Ok(r) if r.status().is_success() => {
                tracing::info!(file = %shown, %url, "log sent");
                return Ok(());
            }
            Ok(r) => {
                let status = r.status().as_u16();
                let message = r.text().await.unwrap_or_default().trim().to_string();
                if !(status >= 500 || status == 422 || status == 429) {
                    return Err(ShipError::Refused {
                        url,
                        path: shown,
                        status,
                        message,
                    });
                }
                last = format!("{status} {message}");
            }
            Err(e) => last = e.to_string(),
        }
        tracing::warn!(file = %shown, %url, try_ = k + 1, "log not sent: {last}");
    }
    Err(ShipError::GaveUp {
        url,
        path: shown,
        tries: backoff.tries,
        last,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_is_the_iso_hdlc_one() {
        // The standard check value of CRC-32/ISO-HDLC.
        assert_eq!(crc32_hex(b"123456789"), "cbf43926");
        assert_eq!(crc32_hex(b""), "00000000");
    }

    #[test]
    fn the_backoff_doubles_from_250_ms_to_its_8_s_cap() {
        let b = Backoff::default();
        let ms: Vec<u128> = (0..9).map(|k| b.ceiling(k).as_millis()).collect();
        assert_eq!(ms, [250, 500, 1000, 2000, 4000, 8000, 8000, 8000, 8000]);
        assert_eq!(b.ceiling(40), b.cap, "no overflow far out");
        assert_eq!(b.sleep(2, 0.5), Duration::from_millis(500));
        assert_eq!(b.sleep(0, 0.0), Duration::ZERO);
        assert_eq!(b.tries, 8);
    }

    #[test]
    fn a_collector_url_is_a_plain_http_base() {
        assert_eq!(collector_url(" ").unwrap(), None);
        assert_eq!(
            collector_url("http://analyzer:9100/").unwrap().as_deref(),
            Some("http://analyzer:9100")
        );
        for bad in ["analyzer:9100", "https://a:1", "http://", "http://a:1/logs"] {
            let e = collector_url(bad).unwrap_err().to_string();
            assert!(e.contains("http://HOST:PORT"), "{bad}: {e}");
        }
    }

    #[test]
    fn names_are_single_safe_components() {
        for ok in [
            "e03b",
            "client-C-seed7-shard1of2.jsonl",
            "scenario.toml",
            "a_b.c",
        ] {
            assert!(valid_component(ok), "{ok}");
        }
        for bad in ["", "..", ".hidden", "a/b", "a\\b", "é", &"x".repeat(129)] {
            assert!(!valid_component(bad), "{bad:?}");
        }
        assert!(check_names("e03b", "server-A-seed1.jsonl").is_ok());
        assert!(matches!(
            check_names("e03b", "run.sh"),
            Err(Refused::Name(_))
        ));
        assert!(matches!(
            check_names("..", "x.jsonl"),
            Err(Refused::Name(_))
        ));
    }

    fn temp_with(dir: &Path, name: &str, text: &str) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn store_keeps_a_file_once_accepts_its_retry_and_never_overwrites() {
        let dir = std::env::temp_dir().join(format!("e03-ship-store-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let crc = crc32_hex(b"one\n");
        let t = temp_with(&dir, ".t1", "one\n");
        assert_eq!(
            store(&dir, "e03b", "x.jsonl", &t, &crc, &crc),
            Ok(Stored::New)
        );
        assert!(!t.exists(), "the temp file is removed");
        assert_eq!(
            std::fs::read_to_string(dir.join("e03b/x.jsonl")).unwrap(),
            "one\n"
        );
        // The same bytes again (a retry after a lost answer): accepted, nothing changed.
        let t = temp_with(&dir, ".t2", "one\n");
        assert_eq!(
            store(&dir, "e03b", "x.jsonl", &t, &crc, &crc),
            Ok(Stored::Same)
        );
        // Other bytes under the same name: refused, the first kept.
        let other = crc32_hex(b"two\n");
        let t = temp_with(&dir, ".t3", "two\n");
        assert!(matches!(
            store(&dir, "e03b", "x.jsonl", &t, &other, &other),
            Err(Refused::Differs(_))
        ));
        assert_eq!(
            std::fs::read_to_string(dir.join("e03b/x.jsonl")).unwrap(),
            "one\n"
        );
        // A body whose checksum is not the header's: refused, nothing stored.
        let t = temp_with(&dir, ".t4", "thr33\n");
        let r = store(&dir, "e03b", "y.jsonl", &t, &crc, &crc32_hex(b"thr33\n"));
        assert!(matches!(r, Err(Refused::Checksum { .. })), "{r:?}");
        assert_eq!(r.unwrap_err().status(), StatusCode::UNPROCESSABLE_ENTITY);
        assert!(!dir.join("e03b/y.jsonl").exists());
        assert!(!t.exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A real collector on loopback and a real sender: stored, a resend is fine, a damaged body
    /// is refused with 422, a name outside the folder with 400.
    #[tokio::test]
    async fn a_file_sent_over_http_arrives_whole() {
        let root = std::env::temp_dir().join(format!("e03-ship-http-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let (src, dst) = (root.join("src"), root.join("dst"));
        temp_with(&src.join("e03b"), "client-A-seed1.jsonl", "{\"a\":1}\n");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(serve(listener, dst.clone()));
        let base = format!("http://{addr}");
        let http = reqwest::Client::new();
        let sent = [src.join("e03b/client-A-seed1.jsonl")];
        send_files(&http, &base, &sent).await.unwrap();
        send_files(&http, &base, &sent).await.unwrap();
        assert_eq!(
            std::fs::read(dst.join("e03b/client-A-seed1.jsonl")).unwrap(),
            std::fs::read(src.join("e03b/client-A-seed1.jsonl")).unwrap()
        );
        let damaged = http
            .put(format!("{base}/logs/e03b/z.jsonl"))
            .header(CRC_HEADER, crc32_hex(b"what was meant"))
            .body("what arrived")
            .send()
            .await
            .unwrap();
        assert_eq!(damaged.status().as_u16(), 422);
        assert!(!dst.join("e03b/z.jsonl").exists());
        let outside = http
            .put(format!("{base}/logs/e03b/..%2Fescape.jsonl"))
            .header(CRC_HEADER, crc32_hex(b"x"))
            .body("x")
            .send()
            .await
            .unwrap();
        assert_eq!(outside.status().as_u16(), 400);
        // Nothing but the one log (no temp file left behind).
        let left: Vec<_> = std::fs::read_dir(&dst)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["e03b"], "{left:?}");
        // Other bytes under a stored name: refused at once, not retried, the first kept.
        std::fs::write(src.join("e03b/client-A-seed1.jsonl"), "{\"a\":2}\n").unwrap();
        let quick = Backoff {
            base: Duration::from_millis(1),
            cap: Duration::from_millis(2),
            tries: 3,
        };
        let e = send_file(&http, &base, &sent[0], quick).await.unwrap_err();
        assert!(matches!(e, ShipError::Refused { status: 409, .. }), "{e}");
        assert_eq!(
            std::fs::read_to_string(dst.join("e03b/client-A-seed1.jsonl")).unwrap(),
            "{\"a\":1}\n"
        );
        server.abort();
        let _ = server.await;
        // Nobody listening: every try is made, then the sender gives up, naming the file.
        let e = send_file(&http, &base, &sent[0], quick).await.unwrap_err();
        assert!(matches!(e, ShipError::GaveUp { tries: 3, .. }), "{e}");
        assert!(e.to_string().contains("client-A-seed1.jsonl"), "{e}");
        let _ = std::fs::remove_dir_all(&root);
    }
}
