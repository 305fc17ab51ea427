//! The four records that fill a log (arrival, response, attempt, operation), read straight
//! from the bytes the lab writes.
//!
//! `e03_model::events` describes every record with its run tag `#[serde(flatten)]`ed in. That
//! makes serde buffer each record into an owned tree of keys and values before it builds the
//! struct, and each record owns its run id and strategy as `String`s: several allocations a
//! line, and most of the time the analyzer spent on a large log. Yet every log line of those
//! four kinds is written by one serialiser ([`Event::to_line`]) in one shape: the keys in the
//! struct's order, no spaces, optional fields left out when absent, numbers as plain digits.
//! [`parse`] reads exactly that shape with a cursor, and builds the very [`Event`] serde would
//! have built, its tag's strings reused from one line to the next.
//!
//! It is a fast path only. A line in any other shape (another record type, keys in another
//! order, an unknown field, a `null`, an escape in a string, spaces, a number with a sign or a
//! fraction, a line cut short) is not taken: the reader parses it with serde as before, and
//! serde decides whether it is a record and what its error says. So whatever a line holds, the
//! reader hands on the same record, or reports the same error, as before.

use serde::de::value::{BorrowedStrDeserializer, Error as ValueError};
use serde::de::DeserializeOwned;

use e03_model::events::{Arrival, Attempt, Event, OperationRecord, Response, RunTag};

/// A position in a line; every read either advances past what it expected or gives `None`.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    /// Expects `lit` next.
    fn lit(&mut self, lit: &[u8]) -> Option<()> {
        let end = self.at + lit.len();
        (self.bytes.get(self.at..end)? == lit).then(|| self.at = end)
    }

    /// Reads `,"name":` if it comes next (an optional field that is there).
    fn field(&mut self, name: &str) -> bool {
        let rest = &self.bytes[self.at..];
        let n = name.len();
        let there = rest.len() >= n + 4
            && rest[0] == b','
            && rest[1] == b'"'
            && &rest[2..2 + n] == name.as_bytes()
            && rest[2 + n] == b'"'
            && rest[3 + n] == b':';
        if there {
            self.at += n + 4;
        }
        there
    }

    /// Expects `,"name":` (a field that is always written).
    fn key(&mut self, name: &str) -> Option<()> {
        self.field(name).then_some(())
    }

    /// A whole number written as serde_json writes one: digits, no leading zero, in range.
    fn uint(&mut self) -> Option<u64> {
        let text = &self.bytes[self.at..];
        let mut n: u64 = 0;
        let mut digits = 0;
        for &d in text.iter().take_while(|d| d.is_ascii_digit()) {
            n = n.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
            digits += 1;
        }
        if digits == 0 || (digits > 1 && text[0] == b'0') {
            return None;
        }
        self.at += digits;
        Some(n)
    }

    fn u32(&mut self) -> Option<u32> {
        self.uint()?.try_into().ok()
    }

    fn u16(&mut self) -> Option<u16> {
        self.uint()?.try_into().ok()
    }

    fn bool(&mut self) -> Option<bool> {
        if self.lit(b"true").is_some() {
            Some(true)
        } else {
            self.lit(b"false").map(|_| false)
        }
    }

    /// A string of printable ASCII without escapes (anything else is left to serde), as bytes:
    /// the run tag is compared as such, and made text only when it changes.
    fn ascii(&mut self) -> Option<&'a [u8]> {
        self.lit(b"\"")?;
        let len = self.bytes[self.at..]
            .iter()
            .take_while(|&&b| b != b'"' && b != b'\\' && (0x20..0x7f).contains(&b))
            .count();
        let s = &self.bytes[self.at..self.at + len];
        self.at += len;
        self.lit(b"\"")?;
        Some(s)
    }

    /// An optional field: its value when it is there, `None` when it is left out; the outer
    /// `None` when it is there but not in the lab's shape.
    fn optional<T>(&mut self, name: &str, read: fn(&mut Self) -> Option<T>) -> Option<Option<T>> {
        if self.field(name) {
            read(self).map(Some)
        } else {
            Some(None)
        }
    }

    /// A unit enum variant, by the names serde gives it.
    fn variant<T: DeserializeOwned>(&mut self) -> Option<T> {
        let name = std::str::from_utf8(self.ascii()?).ok()?;
        T::deserialize(BorrowedStrDeserializer::<ValueError>::new(name)).ok()
    }
}

/// A tag that owns nothing yet (empty strings do not allocate).
pub(crate) fn empty_tag() -> RunTag {
    RunTag {
        run: String::new(),
        seed: 0,
        strategy: String::new(),
    }
}

/// Which of the four records a line holds.
enum Kind {
    Arrival,
    Response,
    Attempt,
    Operation,
}

/// Parses the record at the head of `bytes`, up to and with its newline, if it is one of the
/// four frequent kinds in the shape the lab writes; returns it and the bytes it took. `lent`
/// lends its strings to the record's tag (a log repeats one tag on every line, so they are
/// written once); [`take_tag`] gives them back. `None` for anything else.
pub(crate) fn parse(bytes: &[u8], lent: &mut RunTag) -> Option<(Event, usize)> {
    let mut c = Cursor { bytes, at: 0 };
    c.lit(b"{\"type\":\"")?;
    let kind = [
        (&b"arrival"[..], Kind::Arrival),
        (b"response", Kind::Response),
        (b"attempt", Kind::Attempt),
        (b"operation", Kind::Operation),
    ]
    .into_iter()
    .find_map(|(name, kind)| c.lit(name).map(|_| kind))?;
    c.lit(b"\",\"data\":{\"run\":")?;
    let run = c.ascii()?;
    c.key("seed")?;
    let seed = c.uint()?;
    c.key("strategy")?;
    let strategy = c.ascii()?;
    let mut event = match kind {
        Kind::Arrival => Event::Arrival(arrival(&mut c)?),
        Kind::Response => Event::Response(response(&mut c)?),
        Kind::Attempt => Event::Attempt(attempt(&mut c)?),
        Kind::Operation => Event::Operation(operation(&mut c)?),
    };
    c.lit(b"}}\n")?;
    for (mine, line) in [(&mut lent.run, run), (&mut lent.strategy, strategy)] {
        if mine.as_bytes() != line {
            mine.clear();
            mine.push_str(std::str::from_utf8(line).ok()?);
        }
    }
    lent.seed = seed;
    let tag = std::mem::replace(lent, empty_tag());
    match &mut event {
        Event::Arrival(a) => a.tag = tag,
        Event::Response(r) => r.tag = tag,
        Event::Attempt(a) => a.tag = tag,
        Event::Operation(o) => o.tag = tag,
        _ => unreachable!("only the four frequent records are parsed here"),
    }
    Some((event, c.at))
}

/// [`Arrival`]'s fields after the tag, in its order.
fn arrival(c: &mut Cursor<'_>) -> Option<Arrival> {
    c.key("seq")?;
    let seq = c.uint()?;
    c.key("t_us")?;
    let t_us = c.uint()?;
    Some(Arrival {
        tag: empty_tag(),
        seq,
        t_us,
        client: c.optional("client", Cursor::u32)?,
        op: c.optional("op", Cursor::u32)?,
        attempt: c.optional("attempt", Cursor::u32)?,
        class: c.optional("class", Cursor::variant)?.unwrap_or_default(),
    })
}

/// [`Response`]'s fields after the tag, in its order.
fn response(c: &mut Cursor<'_>) -> Option<Response> {
    c.key("seq")?;
    let seq = c.uint()?;
    c.key("t_us")?;
    let t_us = c.uint()?;
    c.key("status")?;
    let status = c.u16()?;
    c.key("cause")?;
    let cause = c.variant()?;
    let admit_us = c.optional("admit_us", Cursor::uint)?;
    c.key("immediate")?;
    let immediate = c.bool()?;
    Some(Response {
        tag: empty_tag(),
        seq,
        t_us,
        status,
        cause,
        admit_us,
        immediate,
        cost: c.optional("cost", Cursor::u32)?,
    })
}

/// [`Attempt`]'s fields after the tag, in its order.
fn attempt(c: &mut Cursor<'_>) -> Option<Attempt> {
    c.key("client")?;
    let client = c.u32()?;
    c.key("op")?;
    let op = c.u32()?;
    c.key("attempt")?;
    let attempt = c.u32()?;
    c.key("due_us")?;
    let due_us = c.uint()?;
    c.key("sent_us")?;
    let sent_us = c.uint()?;
    c.key("end_us")?;
    let end_us = c.uint()?;
    c.key("end")?;
    let end = c.variant()?;
    Some(Attempt {
        tag: empty_tag(),
        client,
        op,
        attempt,
        due_us,
        sent_us,
        end_us,
        end,
        status: c.optional("status", Cursor::u16)?,
        rejection: c.optional("rejection", Cursor::variant)?,
        flow: c.optional("flow", Cursor::variant)?,
        step: c.optional("step", Cursor::u32)?,
        retry_after_us: c.optional("retry_after_us", Cursor::uint)?,
    })
}

/// [`OperationRecord`]'s fields after the tag, in its order.
fn operation(c: &mut Cursor<'_>) -> Option<OperationRecord> {
    c.key("client")?;
    let client = c.u32()?;
    c.key("op")?;
    let op = c.u32()?;
    c.key("start_us")?;
    let start_us = c.uint()?;
    c.key("end_us")?;
    let end_us = c.uint()?;
    c.key("attempts")?;
    let attempts = c.u32()?;
    c.key("outcome")?;
    let outcome = c.variant()?;
    Some(OperationRecord {
        tag: empty_tag(),
        client,
        op,
        start_us,
        end_us,
        attempts,
        outcome,
        reason: c.optional("reason", Cursor::variant)?,
        flow: c.optional("flow", Cursor::variant)?,
        class: c.optional("class", Cursor::variant)?.unwrap_or_default(),
    })
}

/// Gives a frequent record's tag strings back to `tag` for the next line (other records keep
/// their own tag).
pub(crate) fn take_tag(event: Event, tag: &mut RunTag) {
    match event {
        Event::Arrival(Arrival { tag: t, .. })
        | Event::Response(Response { tag: t, .. })
        | Event::Attempt(Attempt { tag: t, .. })
        | Event::Operation(OperationRecord { tag: t, .. }) => *tag = t,
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use e03_model::budget::Rejection;
    use e03_model::events::{AttemptEnd, Cause, Outcome};
    use e03_model::priority::Priority;
    use e03_model::steps::Flow;
    use e03_model::GiveUp;
    use proptest::prelude::*;
    use proptest::sample::select;

    /// What serde makes of a line: the reference the fast path must equal.
    fn serde(line: &str) -> Event {
        serde_json::from_str(line).unwrap()
    }

    /// The fast path's record for a whole line, checking it took the whole line.
    fn fast(line: &str, lent: &mut RunTag) -> Option<Event> {
        let (event, used) = parse(line.as_bytes(), lent)?;
        assert_eq!(used, line.len(), "{line}");
        Some(event)
    }

    fn tag_of(run: String, seed: u64, strategy: String) -> RunTag {
        RunTag {
            run,
            seed,
            strategy,
        }
    }

    fn events() -> impl Strategy<Value = Event> {
        // Tags with plain ASCII (the fast path's) and with escapes or other characters (the
        // slow path's).
        let tag = (
            "[a-zA-Z0-9_-]{0,12}|.{0,6}",
            any::<u64>(),
            "[A-Z0-9]{1,8}|.{0,4}",
        )
            .prop_map(|(r, s, st)| tag_of(r, s, st));
        let causes = vec![
            Cause::Ok,
            Cause::Fault,
            Cause::Slow,
            Cause::Full,
            Cause::Freeze,
        ];
        let ends = vec![
            AttemptEnd::Status,
            AttemptEnd::Timeout,
            AttemptEnd::ConnectRefused,
            AttemptEnd::Cancelled,
            AttemptEnd::FailedFast,
        ];
        let classes = vec![Priority::Critical, Priority::BestEffort];
        let flows = vec![Flow::Batch, Flow::Interactive];
        let arrival = (
            tag.clone(),
            any::<u64>(),
            any::<u64>(),
            any::<Option<u32>>(),
            any::<Option<u32>>(),
            any::<Option<u32>>(),
            select(classes.clone()),
        )
            .prop_map(|(tag, seq, t_us, client, op, attempt, class)| {
                Event::Arrival(Arrival {
                    tag,
                    seq,
                    t_us,
                    client,
                    op,
                    attempt,
                    class,
                })
            });
        let response = (
            tag.clone(),
            (any::<u64>(), any::<u64>(), any::<u16>()),
            select(causes),
            any::<Option<u64>>(),
            any::<bool>(),
            any::<Option<u32>>(),
        )
            .prop_map(
                |(tag, (seq, t_us, status), cause, admit_us, immediate, cost)| {
                    Event::Response(Response {
                        tag,
                        seq,
                        t_us,
                        status,
                        cause,
                        admit_us,
                        immediate,
                        cost,
                    })
                },
            );
        let attempt = (
            tag.clone(),
            (any::<u32>(), any::<u32>(), any::<u32>()),
            (any::<u64>(), any::<u64>(), any::<u64>()),
            select(ends),
            any::<Option<u16>>(),
            proptest::option::of(select(vec![
                Rejection::BreakerOpen,
                Rejection::Throttled,
                Rejection::ConcurrencyLimited,
                Rejection::BulkheadFull,
            ])),
            proptest::option::of(select(flows.clone())),
            (any::<Option<u32>>(), any::<Option<u64>>()),
        )
            .prop_map(
                |(
                    tag,
                    (client, op, attempt),
                    (due_us, sent_us, end_us),
                    end,
                    status,
                    rejection,
                    flow,
                    (step, retry_after_us),
                )| {
                    Event::Attempt(Attempt {
                        tag,
                        client,
                        op,
                        attempt,
                        due_us,
                        sent_us,
                        end_us,
                        end,
                        status,
                        rejection,
                        flow,
                        step,
                        retry_after_us,
                    })
                },
            );
        let operation = (
            tag,
            (any::<u32>(), any::<u32>(), any::<u32>()),
            (any::<u64>(), any::<u64>()),
            select(vec![Outcome::Success, Outcome::Failed]),
            proptest::option::of(select(vec![
                GiveUp::NotRetryable,
                GiveUp::AttemptsExhausted,
                GiveUp::BudgetDenied,
            ])),
            proptest::option::of(select(flows)),
            select(classes),
        )
            .prop_map(
                |(
                    tag,
                    (client, op, attempts),
                    (start_us, end_us),
                    outcome,
                    reason,
                    flow,
                    class,
                )| {
                    Event::Operation(OperationRecord {
                        tag,
                        client,
                        op,
                        start_us,
                        end_us,
                        attempts,
                        outcome,
                        reason,
                        flow,
                        class,
                    })
                },
            );
        prop_oneof![arrival, response, attempt, operation]
    }

    proptest! {
        #[test]
        fn every_line_the_lab_writes_reads_as_serde_reads_it(
            events in proptest::collection::vec(events(), 1..6)
        ) {
            // One lent tag over several lines, as in the reader.
            let mut lent = empty_tag();
            for e in events {
                let line = e.to_line() + "\n";
                let plain = |s: &str| s.bytes().all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\');
                let tag = match &e {
                    Event::Arrival(a) => &a.tag,
                    Event::Response(r) => &r.tag,
                    Event::Attempt(a) => &a.tag,
                    Event::Operation(o) => &o.tag,
                    _ => unreachable!(),
                };
                let taken = plain(&tag.run) && plain(&tag.strategy);
                match fast(&line, &mut lent) {
                    Some(got) => {
                        prop_assert!(taken, "{line}");
                        prop_assert_eq!(&got, &serde(&line));
                        prop_assert_eq!(&got, &e);
                        take_tag(got, &mut lent);
                    }
                    None => prop_assert!(!taken, "the fast path left {line}"),
                }
            }
        }
    }

    const ARRIVAL: &str = r#"{"type":"arrival","data":{"run":"r","seed":42,"strategy":"C","seq":7,"t_us":5,"client":1,"op":2,"attempt":3}}"#;

    #[test]
    fn a_line_in_any_other_shape_is_left_to_serde() {
        let mut lent = empty_tag();
        let whole = format!("{ARRIVAL}\n");
        assert_eq!(fast(&whole, &mut lent), Some(serde(ARRIVAL)));
        for other in [
            // No newline (a last line), or a Windows one.
            ARRIVAL.to_string(),
            format!("{ARRIVAL}\r\n"),
            // An unknown field, a null, keys in another order, a space.
            ARRIVAL.replace(",\"attempt\":3", ",\"attempt\":3,\"holder\":1"),
            ARRIVAL.replace("\"op\":2", "\"op\":null"),
            ARRIVAL.replace("\"seq\":7,\"t_us\":5", "\"t_us\":5,\"seq\":7"),
            ARRIVAL.replace("\"seq\":7", "\"seq\": 7"),
            // Numbers serde_json would read otherwise or refuse.
            ARRIVAL.replace("\"seq\":7", "\"seq\":07"),
            ARRIVAL.replace("\"seq\":7", "\"seq\":7.0"),
            ARRIVAL.replace("\"seq\":7", "\"seq\":-7"),
            ARRIVAL.replace("\"seq\":7", "\"seq\":18446744073709551616"),
            ARRIVAL.replace("\"op\":2", "\"op\":4294967296"),
            // An escape in a string; another record type; the data before the type.
            ARRIVAL.replace("\"run\":\"r\"", "\"run\":\"\\u0072\""),
            ARRIVAL.replace("arrival", "dropped"),
            r#"{"data":{"run":"r","seed":42,"strategy":"C","seq":7,"t_us":5},"type":"arrival"}"#
                .to_string(),
        ] {
            let line = if other.ends_with('\n') || other == ARRIVAL {
                other
            } else {
                format!("{other}\n")
            };
            assert!(parse(line.as_bytes(), &mut lent).is_none(), "{line}");
        }
    }
}
