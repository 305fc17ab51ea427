//! Faults on the wire: Toxiproxy's toxics as data, and what each does to one connection, with
//! no clock and no IO (the live proxy, `dependency_service::proxy`, sleeps and moves the bytes).
//!
//! Source: Toxiproxy (github.com/Shopify/toxiproxy, README "Toxics" and "HTTP API"). A toxic is
//! `{name, type, stream, toxicity, attributes}`; `stream` is `upstream` (client to server) or
//! `downstream` (server to client, the default); `toxicity` (default 1.0) is the probability
//! that the toxic applies to a connection, drawn once per connection and toxic. The types and
//! their attributes, with Toxiproxy's meanings:
//!
//! | type | attributes | effect |
//! |---|---|---|
//! | `latency` | `latency`, `jitter` (ms) | every chunk delayed by latency +/- jitter (uniform) |
//! | `bandwidth` | `rate` (KB/s) | at most `rate` * 1000 bytes per second |
//! | `slow_close` | `delay` (ms) | the close is passed on `delay` late |
//! | `timeout` | `timeout` (ms) | no data passes; the connection is closed after `timeout` (0: never) |
//! | `reset_peer` | `timeout` (ms) | the connection is reset (TCP RST) after `timeout` (0: at once) |
//! | `slicer` | `average_size`, `size_variation` (bytes), `delay` (µs) | chunks cut into pieces of average_size +/- size_variation, `delay` between them |
//! | `limit_data` | `bytes` | the connection is closed once `bytes` have passed |
//!
//! "down" is not a toxic in Toxiproxy either: a proxy with `enabled: false` does not listen, so a
//! connection is refused.

use std::collections::BTreeMap;
use std::time::Duration;

use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::rng::LabRng;
use crate::spec_error::SpecError;

/// One record of a fault proxy's log (`lab proxy --log`, and a run's `wire-*.jsonl`): written by
/// the live proxy (`dependency_service::proxy`), read by the analyzer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum ProxyRecord {
    /// A connection was accepted (its end comes as [`ProxyRecord::Connection`]). µs since the
    /// Unix epoch.
    Accepted {
        proxy: String,
        conn: u64,
        at_us: u64,
    },
    /// A connection ended. Times in µs since the Unix epoch.
    Connection {
        proxy: String,
        conn: u64,
        accepted_us: u64,
        ended_us: u64,
        /// The toxics that applied to it at some time (by name).
        toxics: Vec<String>,
        bytes_up: u64,
        bytes_down: u64,
        /// `closed` (either side), `reset` (reset_peer), `limit` (limit_data), `timeout` (the
        /// timeout toxic closed it), `stopped` (the proxy was disabled or deleted),
        /// `upstream_refused` (the upstream did not accept).
        end: String,
    },
    /// A proxy or a toxic changed (`what`: `proxy_created`, `proxy_updated`, `proxy_deleted`,
    /// `toxic_added`, `toxic_updated`, `toxic_removed`, `reset`).
    Change {
        at_us: u64,
        what: String,
        proxy: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        toxic: Option<Toxic>,
    },
}

/// Which direction of a connection a toxic affects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Client to server.
    Upstream,
    /// Server to client (Toxiproxy's default).
    #[default]
    Downstream,
}

/// A toxic's type and attributes (in JSON and TOML: `type` and `attributes`, as Toxiproxy
/// writes them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "KindJson", into = "KindJson")]
pub enum ToxicKind {
    Latency {
        latency_ms: u64,
        jitter_ms: u64,
    },
    Bandwidth {
        rate_kb_s: u64,
    },
    SlowClose {
        delay_ms: u64,
    },
    Timeout {
        timeout_ms: u64,
    },
    ResetPeer {
        timeout_ms: u64,
    },
    Slicer {
        average_size: u64,
        size_variation: u64,
        delay_us: u64,
    },
    LimitData {
        bytes: u64,
    },
}

/// Bytes of the dependency's answer on the wire, as the simulator passes it through a toxic
/// (one chunk, [`Link::pass`]): the live service's `200 OK` to `GET /work` on a kept-alive
/// connection (`HTTP/1.1 200 OK`, `content-type: text/plain; charset=utf-8`,
/// `content-length: 2`, a `date` and the body `ok`), measured on loopback and pinned by the
/// service's test `the_answer_on_the_wire_is_answer_bytes_long`. Other answers (a 503 with its
/// text) differ by a few tens of bytes; the simulator gives them this size too.
pub const ANSWER_BYTES: usize = 118;

/// Bytes of that answer's head (status line, headers and the blank line): a connection closed
/// before them leaves its client with no answer (`reset_before_answer`), one closed after them
/// with a broken body (`reset_mid_body`). Pinned by the same test as [`ANSWER_BYTES`].
pub const ANSWER_HEAD_BYTES: usize = 116;

/// Bytes of a client's request on the wire, as the simulator passes it through a toxic on the
/// requests (one chunk, [`Link::pass`]): the swarm's `GET /work` (reqwest: `host`, `accept`,
/// `x-e03-client`, `x-e03-op`, `x-e03-attempt`) for client 1, operation 1, attempt 1 to
/// `127.0.0.1` on a five-digit port, measured on loopback and pinned by the swarm's test
/// `a_request_on_the_wire_is_request_bytes_long`. Each more digit in an id or the port adds a
/// byte, compose's `dep-a:8080` takes 5 fewer, and a charge (`POST /charge` with its key and
/// body) is longer; the simulator gives every request this size.
pub const REQUEST_BYTES: usize = 106;

/// The types Toxiproxy names, in its README's order.
pub const TOXIC_TYPES: &[&str] = &[
    "latency",
    "bandwidth",
    "slow_close",
    "timeout",
    "reset_peer",
    "slicer",
    "limit_data",
];

/// How a toxic ends a connection it applies to ([`ToxicKind::ends_connection`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// `reset_peer`: a TCP reset.
    Reset,
    /// `timeout` with a timeout: the proxy closes the connection.
    Close,
}

impl ToxicKind {
    /// Whether it only delays what passes, and lets it all through: latency, bandwidth, slicer.
    pub fn delays(&self) -> bool {
        matches!(
            self,
            ToxicKind::Latency { .. } | ToxicKind::Bandwidth { .. } | ToxicKind::Slicer { .. }
        )
    }

    /// Whether nothing passes while it applies: Toxiproxy's `timeout` (until its timeout
    /// closes the connection, [`Self::ends_connection`], or, with 0, until the toxic goes).
    pub fn holds(&self) -> bool {
        matches!(self, ToxicKind::Timeout { .. })
    }

    /// When a connection it applies to ends, counted from when it applied (for a connection
    /// open when the toxic came, then; for one opened while it is there, its opening), and how:
    /// `reset_peer` resets it after its `timeout` (at once with 0), `timeout` with a timeout
    /// closes it then (Toxiproxy's toxics). A `timeout` of 0 holds the connection until the
    /// toxic goes, and no other toxic ends one. The live proxy ([`Link::reset_after`],
    /// [`Link::blackhole`]) and the simulator's connections both read this.
    pub fn ends_connection(&self) -> Option<(Duration, Ending)> {
        match *self {
            ToxicKind::ResetPeer { timeout_ms } => {
                Some((Duration::from_millis(timeout_ms), Ending::Reset))
            }
            ToxicKind::Timeout { timeout_ms } if timeout_ms > 0 => {
                Some((Duration::from_millis(timeout_ms), Ending::Close))
            }
            _ => None,
        }
    }

    pub fn type_name(&self) -> &'static str {
        match self {
            ToxicKind::Latency { .. } => "latency",
            ToxicKind::Bandwidth { .. } => "bandwidth",
            ToxicKind::SlowClose { .. } => "slow_close",
            ToxicKind::Timeout { .. } => "timeout",
            ToxicKind::ResetPeer { .. } => "reset_peer",
            ToxicKind::Slicer { .. } => "slicer",
            ToxicKind::LimitData { .. } => "limit_data",
        }
    }

    /// Its attributes, as Toxiproxy shows them.
    pub fn attributes(&self) -> BTreeMap<&'static str, u64> {
        let pairs: Vec<(&'static str, u64)> = match *self {
            ToxicKind::Latency {
                latency_ms,
                jitter_ms,
            } => vec![("latency", latency_ms), ("jitter", jitter_ms)],
            ToxicKind::Bandwidth { rate_kb_s } => vec![("rate", rate_kb_s)],
            ToxicKind::SlowClose { delay_ms } => vec![("delay", delay_ms)],
            ToxicKind::Timeout { timeout_ms } | ToxicKind::ResetPeer { timeout_ms } => {
                vec![("timeout", timeout_ms)]
            }
            ToxicKind::Slicer {
                average_size,
                size_variation,
                delay_us,
            } => vec![
                ("average_size", average_size),
                ("size_variation", size_variation),
                ("delay", delay_us),
            ],
            ToxicKind::LimitData { bytes } => vec![("bytes", bytes)],
        };
        pairs.into_iter().collect()
    }

    /// The kind of `type_name` from its attributes (absent ones are 0, as in Toxiproxy);
    /// errors name the attribute and what it accepts.
    pub fn from_parts(type_name: &str, attrs: &BTreeMap<String, f64>) -> Result<Self, SpecError> {
        let known: &[&str] = match type_name {
            "latency" => &["latency", "jitter"],
            "bandwidth" => &["rate"],
            "slow_close" => &["delay"],
            "timeout" | "reset_peer" => &["timeout"],
            "slicer" => &["average_size", "size_variation", "delay"],
            "limit_data" => &["bytes"],
            other => {
                return Err(SpecError::not(
                    "type",
                    format!("{other:?}"),
                    format!("a toxic type: expected one of {}", TOXIC_TYPES.join(", ")),
                ))
            }
        };
        if let Some(k) = attrs.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(SpecError::rule(
                format!("attributes.{k}"),
                format!(
                    "attributes.{k}: not an attribute of {type_name}: expected {}",
                    known.join(", ")
                ),
            ));
        }
        let get = |k: &str| -> Result<u64, SpecError> {
            match attrs.get(k) {
                None => Ok(0),
                Some(v) if v.is_finite() && *v >= 0.0 && *v <= 1e12 && v.fract() == 0.0 => {
                    Ok(*v as u64)
                }
                Some(v) => Err(SpecError::not(
                    format!("attributes.{k}"),
                    v,
                    "a whole number from 0 to 10^12",
                )),
            }
        };
        Ok(match type_name {
            "latency" => ToxicKind::Latency {
                latency_ms: get("latency")?,
                jitter_ms: get("jitter")?,
            },
            "bandwidth" => ToxicKind::Bandwidth {
                rate_kb_s: get("rate")?,
            },
            "slow_close" => ToxicKind::SlowClose {
                delay_ms: get("delay")?,
            },
            "timeout" => ToxicKind::Timeout {
                timeout_ms: get("timeout")?,
            },
            "reset_peer" => ToxicKind::ResetPeer {
                timeout_ms: get("timeout")?,
            },
            "slicer" => ToxicKind::Slicer {
                average_size: get("average_size")?,
                size_variation: get("size_variation")?,
                delay_us: get("delay")?,
            },
            _ => ToxicKind::LimitData {
                bytes: get("bytes")?,
            },
        })
    }
}

/// A [`ToxicKind`] as written: `type` and `attributes`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KindJson {
    #[serde(rename = "type")]
    pub type_name: String,
    #[serde(default)]
    pub attributes: BTreeMap<String, f64>,
}

impl TryFrom<KindJson> for ToxicKind {
    type Error = SpecError;

    fn try_from(j: KindJson) -> Result<Self, SpecError> {
        ToxicKind::from_parts(&j.type_name, &j.attributes)
    }
}

impl From<ToxicKind> for KindJson {
    fn from(k: ToxicKind) -> Self {
        KindJson {
            type_name: k.type_name().to_string(),
            attributes: k
                .attributes()
                .into_iter()
                .map(|(k, v)| (k.to_string(), v as f64))
                .collect(),
        }
    }
}

/// One toxic, in Toxiproxy's JSON shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ToxicJson", into = "ToxicJson")]
pub struct Toxic {
    pub name: String,
    pub kind: ToxicKind,
    pub stream: Direction,
    /// The probability it applies to a connection, 0 to 1.
    pub toxicity: f64,
}

/// The JSON form of a [`Toxic`] (`type` and `attributes` apart).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToxicJson {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(rename = "type")]
    pub type_name: String,
    #[serde(default)]
    pub stream: Direction,
    #[serde(default)]
    pub toxicity: Option<f64>,
    #[serde(default)]
    pub attributes: BTreeMap<String, f64>,
}

impl TryFrom<ToxicJson> for Toxic {
    type Error = SpecError;

    fn try_from(j: ToxicJson) -> Result<Self, SpecError> {
        let kind = ToxicKind::from_parts(&j.type_name, &j.attributes)?;
        let toxicity = j.toxicity.unwrap_or(1.0);
        if !(0.0..=1.0).contains(&toxicity) {
            return Err(SpecError::not(
                "toxicity",
                toxicity,
                "a probability from 0 to 1",
            ));
        }
        let stream = j.stream;
        let name = j.name.filter(|n| !n.is_empty()).unwrap_or_else(|| {
            let dir = match stream {
                Direction::Upstream => "upstream",
                Direction::Downstream => "downstream",
            };
            format!("{}_{dir}", kind.type_name())
        });
        if name.len() > 100 || !name.chars().all(|c| c.is_ascii_graphic()) {
            return Err(SpecError::not(
                "name",
                format!("{name:?}"),
                "a name of at most 100 visible ASCII characters",
            ));
        }
        Ok(Toxic {
            name,
            kind,
            stream,
            toxicity,
        })
    }
}

impl From<Toxic> for ToxicJson {
    fn from(t: Toxic) -> Self {
        ToxicJson {
            name: Some(t.name),
            type_name: t.kind.type_name().to_string(),
            stream: t.stream,
            toxicity: Some(t.toxicity),
            attributes: t
                .kind
                .attributes()
                .into_iter()
                .map(|(k, v)| (k.to_string(), v as f64))
                .collect(),
        }
    }
}

/// Whether a toxic of `toxicity` applies to a connection: one draw from `rng`, none at 1 or
/// above (Toxiproxy's rule: `rand.Float32() < toxicity` when the link is made).
pub fn applies(toxicity: f64, rng: &mut LabRng) -> bool {
    toxicity >= 1.0 || rng.random::<f64>() < toxicity
}

/// What one direction of one connection does: the toxics that applied to it, drawn once when
/// the connection opened.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    kinds: Vec<ToxicKind>,
    names: Vec<String>,
    passed: u64,
}

impl Pass {
    /// How long after its read the chunk's last byte is written (latency, then each piece's
    /// wait); `None` for a dropped chunk. The simulator's delay of an answer sent in one chunk.
    pub fn delay(&self) -> Option<Duration> {
        match self {
            Pass::Forward {
                after_read, pieces, ..
            } => Some(*after_read + pieces.iter().map(|p| p.0).sum::<Duration>()),
            Pass::Drop => None,
        }
    }
}

/// What the driver does with a chunk of bytes read from one side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pass {
    /// Write `pieces` in order: the first no sooner than `after_read` after the chunk was read
    /// (latency: chunks that waited in a queue are not delayed twice), each after waiting its
    /// delay from the previous write (bandwidth, slicer); then close the connection when
    /// `then_close` (limit_data).
    Forward {
        after_read: Duration,
        pieces: Vec<(Duration, usize)>,
        then_close: bool,
    },
    /// Drop the chunk (`timeout`: nothing passes).
    Drop,
}

impl Link {
    /// The toxics of `toxics` for `direction` that apply to a new connection, each kept with
    /// probability `toxicity` (one draw per toxic from `rng`, in the toxics' order).
    pub fn draw(toxics: &[Toxic], direction: Direction, rng: &mut LabRng) -> Self {
        let kept: Vec<&Toxic> = toxics
            .iter()
            .filter(|t| t.stream == direction)
            .filter(|t| applies(t.toxicity, rng))
            .collect();
        Self {
            kinds: kept.iter().map(|t| t.kind).collect(),
            names: kept.iter().map(|t| t.name.clone()).collect(),
            passed: 0,
        }
    }

    /// The link of a connection under one toxic of `kind`: kept with probability `toxicity`
    /// ([`applies`], one draw from `rng`), as [`Link::draw`] keeps each of a list. No names.
    pub fn of_one(kind: ToxicKind, toxicity: f64, rng: &mut LabRng) -> Self {
        Self {
            kinds: if applies(toxicity, rng) {
                vec![kind]
            } else {
                Vec::new()
            },
            names: Vec::new(),
            passed: 0,
        }
    }

    /// The names of the toxics that applied.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The toxics that applied.
    pub fn kinds(&self) -> &[ToxicKind] {
        &self.kinds
    }

    /// After how long the connection is closed without passing data (`timeout`), if a timeout
    /// applies: `Some(None)` for never (0), `Some(Some(d))` after `d`.
    pub fn blackhole(&self) -> Option<Option<Duration>> {
        let holds = self.kinds.iter().find(|k| k.holds())?;
        Some(holds.ends_connection().map(|(after, _)| after))
    }

    /// After how long the connection is reset, if `reset_peer` applies.
    pub fn reset_after(&self) -> Option<Duration> {
        self.kinds.iter().find_map(|k| match k.ends_connection() {
            Some((after, Ending::Reset)) => Some(after),
            _ => None,
        })
    }

    /// How long the close is held back (`slow_close`).
    pub fn close_delay(&self) -> Duration {
        self.kinds
            .iter()
            .map(|k| match k {
                ToxicKind::SlowClose { delay_ms } => Duration::from_millis(*delay_ms),
                _ => Duration::ZERO,
            })
            .sum()
    }

    /// A chunk of `n` bytes read from one side: how to write it to the other. Toxics apply in
    /// their order: latency delays the chunk from when it was read, bandwidth paces each piece,
    /// slicer cuts it, limit_data ends the connection.
    pub fn pass(&mut self, n: usize, rng: &mut LabRng) -> Pass {
        if self.blackhole().is_some() {
            return Pass::Drop;
        }
        let mut after_read = Duration::ZERO;
        let mut pieces = vec![(Duration::ZERO, n)];
        for k in &self.kinds {
            match *k {
                ToxicKind::Latency {
                    latency_ms,
                    jitter_ms,
                } => {
                    let base = latency_ms as i64 * 1000;
                    let j = jitter_ms as i64 * 1000;
                    let us = if j > 0 {
                        base + rng.random_range(-j..=j)
                    } else {
                        base
                    };
                    after_read += Duration::from_micros(us.max(0) as u64);
                }
                ToxicKind::Bandwidth { rate_kb_s } if rate_kb_s > 0 => {
                    for p in &mut pieces {
                        p.0 += Duration::from_secs_f64(p.1 as f64 / (rate_kb_s as f64 * 1000.0));
                    }
                }
                ToxicKind::Slicer {
                    average_size,
                    size_variation,
                    delay_us,
                } if average_size > 0 => {
                    let mut cut = Vec::new();
                    for (wait, size) in pieces {
                        let mut left = size;
                        let mut first = true;
                        while left > 0 {
                            let v = size_variation.min(average_size - 1) as i64;
                            let s = average_size as i64
                                + if v > 0 { rng.random_range(-v..=v) } else { 0 };
                            let s = (s.max(1) as usize).min(left);
                            let d = if first {
                                wait
                            } else {
                                Duration::from_micros(delay_us)
                            };
                            cut.push((d, s));
                            left -= s;
                            first = false;
                        }
                    }
                    pieces = cut;
                }
                _ => {}
            }
        }
        let limit = self.kinds.iter().find_map(|k| match k {
            ToxicKind::LimitData { bytes } => Some(*bytes),
            _ => None,
        });
        let mut then_close = false;
        if let Some(limit) = limit {
            let mut room = limit.saturating_sub(self.passed);
            let mut kept = Vec::new();
            for (d, s) in pieces {
                let s = (s as u64).min(room);
                if s > 0 {
                    kept.push((d, s as usize));
                }
                room -= s;
                if room == 0 {
                    then_close = true;
                    break;
                }
            }
            pieces = kept;
        }
        self.passed += pieces.iter().map(|p| p.1 as u64).sum::<u64>();
        Pass::Forward {
            after_read,
            pieces,
            then_close,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{stream, Stream};

    fn toxic(json: &str) -> serde_json::Result<Toxic> {
        serde_json::from_str::<Toxic>(json)
    }

    /// What each of Toxiproxy's toxics does to a connection it applies to, the one rule the
    /// live proxy's links and the simulator's connections read.
    #[test]
    fn each_toxic_delays_holds_or_ends_a_connection() {
        let ms = Duration::from_millis;
        let latency = ToxicKind::Latency {
            latency_ms: 50,
            jitter_ms: 20,
        };
        let slicer = ToxicKind::Slicer {
            average_size: 10,
            size_variation: 0,
            delay_us: 100,
        };
        let bandwidth = ToxicKind::Bandwidth { rate_kb_s: 1 };
        for k in [latency, slicer, bandwidth] {
            assert!(k.delays() && !k.holds(), "{k:?}");
            assert_eq!(k.ends_connection(), None, "{k:?}");
        }
        let blackhole = ToxicKind::Timeout { timeout_ms: 0 };
        assert!(blackhole.holds() && !blackhole.delays());
        assert_eq!(blackhole.ends_connection(), None);
        let closes = ToxicKind::Timeout { timeout_ms: 500 };
        assert!(closes.holds());
        assert_eq!(closes.ends_connection(), Some((ms(500), Ending::Close)));
        let at_once = ToxicKind::ResetPeer { timeout_ms: 0 };
        assert_eq!(at_once.ends_connection(), Some((ms(0), Ending::Reset)));
        let later = ToxicKind::ResetPeer { timeout_ms: 300 };
        assert_eq!(later.ends_connection(), Some((ms(300), Ending::Reset)));
        assert!(!later.holds() && !later.delays());
        for k in [
            ToxicKind::SlowClose { delay_ms: 500 },
            ToxicKind::LimitData { bytes: 100 },
        ] {
            assert!(!k.delays() && !k.holds(), "{k:?}");
            assert_eq!(k.ends_connection(), None, "{k:?}");
        }
        // A link's timers read the same rule.
        let mut rng = stream(1, Stream::Wire, 0);
        assert_eq!(
            Link::of_one(later, 1.0, &mut rng).reset_after(),
            Some(ms(300))
        );
        assert_eq!(
            Link::of_one(closes, 1.0, &mut rng).blackhole(),
            Some(Some(ms(500)))
        );
        assert_eq!(Link::of_one(closes, 1.0, &mut rng).reset_after(), None);
        assert_eq!(
            Link::of_one(blackhole, 1.0, &mut rng).blackhole(),
            Some(None)
        );
    }

    fn rng() -> LabRng {
        stream(42, Stream::Wire, 0)
    }

    #[test]
    fn toxics_read_and_write_toxiproxy_s_json() {
        let t = toxic(r#"{"type":"latency","attributes":{"latency":100,"jitter":10}}"#).unwrap();
        assert_eq!(t.name, "latency_downstream");
        assert_eq!(t.stream, Direction::Downstream);
        assert_eq!(t.toxicity, 1.0);
        assert_eq!(
            t.kind,
            ToxicKind::Latency {
                latency_ms: 100,
                jitter_ms: 10
            }
        );
        let back = serde_json::to_value(&t).unwrap();
        assert_eq!(
            back,
            serde_json::json!({"name": "latency_downstream", "type": "latency",
                "stream": "downstream", "toxicity": 1.0,
                "attributes": {"latency": 100.0, "jitter": 10.0}})
        );
        for (json, said) in [
            (r#"{"type":"lag"}"#, "type: \"lag\" is not a toxic type"),
            (
                r#"{"type":"latency","attributes":{"rate":1}}"#,
                "attributes.rate: not an attribute of latency",
            ),
            (
                r#"{"type":"latency","toxicity":1.5}"#,
                "toxicity: 1.5 is not a probability",
            ),
            (
                r#"{"type":"bandwidth","attributes":{"rate":-1}}"#,
                "attributes.rate: -1 is not a whole number",
            ),
        ] {
            let e = toxic(json).unwrap_err().to_string();
            assert!(e.contains(said), "{json}: {e}");
        }
    }

    #[test]
    fn a_link_keeps_a_toxic_with_its_toxicity() {
        let half = toxic(r#"{"type":"reset_peer","toxicity":0.3}"#).unwrap();
        let up = toxic(r#"{"type":"latency","stream":"upstream"}"#).unwrap();
        let mut r = rng();
        let kept = (0..10_000)
            .filter(|_| {
                !Link::draw(std::slice::from_ref(&half), Direction::Downstream, &mut r)
                    .kinds()
                    .is_empty()
            })
            .count();
        assert!((2_800..3_200).contains(&kept), "{kept} of 10,000 at 0.3");
        // A toxic of the other direction never applies.
        assert!(Link::draw(&[up], Direction::Downstream, &mut r)
            .kinds()
            .is_empty());
    }

    /// Hand-computed: latency 50 ms and no jitter delays the chunk by 50 ms from its read;
    /// bandwidth 10 KB/s paces a 1,000-byte chunk by 1,000 / 10,000 s = 100 ms; slicer 300 +/- 0
    /// cuts it into 300, 300, 300, 100 with 2 ms between; limit_data 700 lets 700 through, then
    /// closes.
    #[test]
    fn chunks_pass_as_the_toxics_say() {
        let mut r = rng();
        let link = |kinds: Vec<ToxicKind>| Link {
            kinds,
            names: Vec::new(),
            passed: 0,
        };
        let ms = Duration::from_millis;
        let mut l = link(vec![ToxicKind::Latency {
            latency_ms: 50,
            jitter_ms: 0,
        }]);
        let fwd = |after: u64, pieces: Vec<(Duration, usize)>, then_close: bool| Pass::Forward {
            after_read: ms(after),
            pieces,
            then_close,
        };
        assert_eq!(l.pass(1000, &mut r), fwd(50, vec![(ms(0), 1000)], false));
        let mut l = link(vec![ToxicKind::Bandwidth { rate_kb_s: 10 }]);
        assert_eq!(l.pass(1000, &mut r), fwd(0, vec![(ms(100), 1000)], false));
        let mut l = link(vec![ToxicKind::Slicer {
            average_size: 300,
            size_variation: 0,
            delay_us: 2000,
        }]);
        assert_eq!(
            l.pass(1000, &mut r),
            fwd(
                0,
                vec![(ms(0), 300), (ms(2), 300), (ms(2), 300), (ms(2), 100)],
                false
            )
        );
        let mut l = link(vec![ToxicKind::LimitData { bytes: 700 }]);
        assert_eq!(l.pass(500, &mut r), fwd(0, vec![(ms(0), 500)], false));
        assert_eq!(l.pass(500, &mut r), fwd(0, vec![(ms(0), 200)], true));
        let mut l = link(vec![ToxicKind::Timeout { timeout_ms: 0 }]);
        assert_eq!(l.pass(10, &mut r), Pass::Drop);
        assert_eq!(l.blackhole(), Some(None));
        // Jitter stays within latency +/- jitter.
        let mut l = link(vec![ToxicKind::Latency {
            latency_ms: 50,
            jitter_ms: 20,
        }]);
        for _ in 0..1000 {
            let Pass::Forward { after_read, .. } = l.pass(1, &mut r) else {
                panic!()
            };
            assert!(
                after_read >= ms(30) && after_read <= ms(70),
                "{after_read:?}"
            );
        }
    }

    #[test]
    fn one_toxic_s_link_and_the_delay_of_a_chunk() {
        let latency = ToxicKind::Latency {
            latency_ms: 100,
            jitter_ms: 0,
        };
        let mut rng = stream(1, Stream::Wire, 0);
        // Toxicity 1 always applies (and draws nothing), 0 never.
        let mut link = Link::of_one(latency, 1.0, &mut rng);
        assert_eq!(link.kinds(), &[latency]);
        assert!(Link::of_one(latency, 0.0, &mut rng).kinds().is_empty());
        assert_eq!(
            link.pass(10, &mut rng).delay(),
            Some(Duration::from_millis(100))
        );
        // Bandwidth of 1 KB/s: 500 bytes take 500 ms after the latency.
        let mut paced = Link::draw(
            &[
                toxic(r#"{"type":"latency","attributes":{"latency":100}}"#).unwrap(),
                toxic(r#"{"type":"bandwidth","attributes":{"rate":1}}"#).unwrap(),
            ],
            Direction::Downstream,
            &mut rng,
        );
        assert_eq!(
            paced.pass(500, &mut rng).delay(),
            Some(Duration::from_millis(600))
        );
        assert_eq!(Pass::Drop.delay(), None);
        // At one half, the draws keep about half of many connections.
        let kept = (0..1000)
            .filter(|_| !Link::of_one(latency, 0.5, &mut rng).kinds().is_empty())
            .count();
        assert!((400..600).contains(&kept), "{kept}");
    }
}
