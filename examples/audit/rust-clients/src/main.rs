//! Three Rust retry libraries as plain clients of `lab audit` (docs/audit.md, docs/clients.md):
//!
//! ```text
//! lab audit --attempts 4 -- target/debug/audit-clients reqwest-retry
//! lab audit --attempts 4 -- target/debug/audit-clients backon
//! lab audit --attempts 4 -- target/debug/audit-clients tokio-retry
//! ```
//!
//! Each runs `E03_OPERATIONS` operations (default 1) against `E03_TARGET_URL` with
//! `E03_TARGET_METHOD` (default GET), naming each with `x-e03-op`, 2 s per attempt, and prints
//! each operation's final status or error; its library does the retrying, configured as its
//! README shows (each module says how).

mod backon_client;
mod operation;
mod reqwest_retry_client;
mod tokio_retry_client;

use anyhow::{bail, Context};
use operation::Target;

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let library = std::env::args().nth(1).unwrap_or_default();
    let target = Target::from_env()?;
    for n in 0..target.operations {
        let op = format!("op-{n}");
        let outcome = match library.as_str() {
            "reqwest-retry" => reqwest_retry_client::operation(&target, &op).await,
            "backon" => backon_client::operation(&target, &op).await,
            "tokio-retry" => tokio_retry_client::operation(&target, &op).await,
            other => bail!(
                "audit-clients: unknown library '{other}': expected reqwest-retry, backon or tokio-retry"
            ),
        };
        println!("{outcome}");
    }
    Ok(())
}

impl Target {
    fn from_env() -> anyhow::Result<Target> {
        let url =
            std::env::var("E03_TARGET_URL").context("audit-clients: E03_TARGET_URL is not set")?;
        let method = std::env::var("E03_TARGET_METHOD").unwrap_or_else(|_| "GET".into());
        let method = reqwest::Method::from_bytes(method.as_bytes()).with_context(|| {
            format!("audit-clients: E03_TARGET_METHOD '{method}' is not an HTTP method")
        })?;
        let operations = match std::env::var("E03_OPERATIONS") {
            Ok(v) => v.parse().with_context(|| {
                format!("audit-clients: E03_OPERATIONS '{v}' is not a whole number")
            })?,
            Err(_) => 1,
        };
        Ok(Target {
            url,
            method,
            operations,
        })
    }
}
