//! An answer's body sent at most `rate` bytes a second (Envoy's
//! `x-envoy-fault-throughput-response`, in KiB/s): chunks of at most 1 KiB, each sent once the
//! time since the first byte allows it. A leaf of the crate.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Bytes;
use hyper::body::Frame;
use tokio::time::{Instant, Sleep};

const CHUNK: usize = 1024;

pub(crate) struct PacedBody {
    data: Bytes,
    sent: usize,
    bytes_per_s: f64,
    start: Option<Instant>,
    sleep: Option<Pin<Box<Sleep>>>,
}

impl PacedBody {
    pub(crate) fn new(data: Bytes, kib_per_s: u64) -> Self {
        PacedBody {
            data,
            sent: 0,
            bytes_per_s: kib_per_s as f64 * 1024.0,
            start: None,
            sleep: None,
        }
    }
}

impl hyper::body::Body for PacedBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        let this = &mut *self;
        if this.sent >= this.data.len() {
            return Poll::Ready(None);
        }
        if let Some(sleep) = this.sleep.as_mut() {
            if sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            this.sleep = None;
        }
        let start = *this.start.get_or_insert_with(Instant::now);
        let n = CHUNK.min(this.data.len() - this.sent);
        // The chunk may go once the rate allows every byte sent so far and this chunk's.
        let due = start + Duration::from_secs_f64((this.sent + n) as f64 / this.bytes_per_s);
        if due > Instant::now() {
            let mut sleep = Box::pin(tokio::time::sleep_until(due));
            if sleep.as_mut().poll(cx).is_pending() {
                this.sleep = Some(sleep);
                return Poll::Pending;
            }
        }
        let chunk = this.data.slice(this.sent..this.sent + n);
        this.sent += n;
        Poll::Ready(Some(Ok(Frame::data(chunk))))
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        hyper::body::SizeHint::with_exact((self.data.len() - self.sent) as u64)
    }
}
