//! The hops' control calls, as their caller makes them (the protocol is
//! [`e03_plan::hop_control`]; the hop answers in `dependency_service::hop`): configure one, ask
//! how many calls are in flight, wait until none is, shut them down.

use std::time::{Duration, Instant};

use anyhow::Context;
use e03_plan::hop_control::{HopSetup, CONFIGURE_PATH, INFLIGHT_PATH};

/// Asks every hop to shut down (`POST /control/shutdown`); one that is gone already is said.
pub async fn shutdown_hops(hops: &[String]) {
    for hop in hops {
        if let Err(e) = crate::http::shutdown_target(hop).await {
            eprintln!("{}: hop {hop}: {e}", crate::program::name());
        }
    }
}

/// How many calls of the hop at the base URL `base` are still working (`GET /inflight`).
pub async fn inflight_at(client: &reqwest::Client, base: &str) -> anyhow::Result<u64> {
    let text = client
        .get(format!("{}{INFLIGHT_PATH}", base.trim_end_matches('/')))
        .timeout(Duration::from_secs(2))
        .send()
        .await?
        .text()
        .await?;
    Ok(text.trim().parse()?)
}

/// Waits until no hop at the base URLs `bases` is still working, at most `limit`; whether they
/// all are idle.
pub async fn wait_idle(bases: &[String], limit: Duration) -> anyhow::Result<bool> {
    let client = reqwest::Client::new();
    let end = Instant::now() + limit;
    loop {
        let mut busy = 0;
        for b in bases {
            busy += inflight_at(&client, b).await?;
        }
        if busy == 0 {
            return Ok(true);
        }
        if Instant::now() >= end {
            return Ok(false);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `POST /control/configure` to the hop at the base URL `base`; an error carries the hop's
/// answer (a `400` names the bad key).
pub async fn configure_hop(
    client: &reqwest::Client,
    base: &str,
    setup: &HopSetup,
) -> anyhow::Result<()> {
    let url = format!("{}{CONFIGURE_PATH}", base.trim_end_matches('/'));
    let resp = client
        .post(&url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(serde_json::to_string(setup)?)
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .with_context(|| format!("configuring the hop at {base}"))?;
    let status = resp.status();
    let body = resp.text().await.unwrap_or_default();
    if !status.is_success() {
        anyhow::bail!("the hop at {base} refused its configuration ({status}): {body}");
    }
    Ok(())
}
