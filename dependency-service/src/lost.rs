//! A lost answer: a body that fails before its first byte, so hyper aborts the connection and
//! the caller sees a reset after the work was done (the service's lost answers, the retry-logic article; the
//! HTTP fault proxy's resets). A leaf of the crate.

use axum::body::Bytes;
use axum::response::Response;

/// A body that fails before its first byte: hyper aborts the connection, so the client sees a
/// reset (an error reading the answer) although the work was committed.
pub(crate) struct LostBody;

impl hyper::body::Body for LostBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, std::io::Error>>> {
        std::task::Poll::Ready(Some(Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "answer lost after the commit (fault)",
        ))))
    }
}

pub(crate) fn lost_answer() -> Response {
    Response::new(axum::body::Body::new(LostBody))
}
