//! What the three clients share: the audit's target, one attempt, and what counts as transient.

use std::time::Duration;

/// The probe the audit points a client at (docs/audit.md, "What your client is asked to do").
pub struct Target {
    pub url: String,
    pub method: reqwest::Method,
    pub operations: u32,
}

/// Each attempt's own limit, as every client of examples/audit/ has.
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(2);

/// A plain reqwest client with the attempt timeout (backon and tokio-retry wrap a closure
/// around it; reqwest-retry wraps it in middleware).
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(ATTEMPT_TIMEOUT)
        .build()
        .expect("a reqwest client without TLS builds")
}

/// Why one attempt failed, for the libraries that retry a closure's `Err`.
#[derive(Debug)]
pub enum AttemptError {
    /// An answer with a status of 400 or more.
    Status(reqwest::StatusCode),
    /// No answer: a timeout, a refused or lost connection.
    Transport(reqwest::Error),
}

impl AttemptError {
    /// Transient as reqwest-retry's `DefaultRetryableStrategy` has it: no answer, 408, 429 or
    /// 5xx. Anything else (a 4xx) is permanent.
    pub fn is_transient(&self) -> bool {
        match self {
            AttemptError::Transport(_) => true,
            AttemptError::Status(s) => {
                s.is_server_error() || s.as_u16() == 408 || s.as_u16() == 429
            }
        }
    }
}

impl std::fmt::Display for AttemptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AttemptError::Status(s) => write!(f, "{}", s.as_u16()),
            AttemptError::Transport(e) => write!(f, "error: {e}"),
        }
    }
}

/// One attempt with a closure-retrying library: the status as `Ok` below 400, else `Err`.
pub async fn attempt(
    client: &reqwest::Client,
    target: &Target,
    op: &str,
) -> Result<u16, AttemptError> {
    let answer = client
        .request(target.method.clone(), &target.url)
        .header("x-e03-op", op)
        .send()
        .await
        .map_err(AttemptError::Transport)?;
    let status = answer.status();
    let _ = answer.bytes().await;
    if status.as_u16() >= 400 {
        return Err(AttemptError::Status(status));
    }
    Ok(status.as_u16())
}

/// What an operation prints: its final status, or why it failed.
pub fn outcome(result: Result<u16, AttemptError>) -> String {
    match result {
        Ok(s) => s.to_string(),
        Err(e) => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transient_is_no_answer_408_429_and_5xx() {
        let status = |s: u16| AttemptError::Status(reqwest::StatusCode::from_u16(s).unwrap());
        for s in [408, 429, 500, 503, 504] {
            assert!(status(s).is_transient(), "{s}");
        }
        for s in [400, 404, 409, 422] {
            assert!(!status(s).is_transient(), "{s}");
        }
    }
}
