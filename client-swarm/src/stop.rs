//! The stop signal of a run: set once when the caller's shutdown future resolves, observed by
//! every client task.
//!
//! A `watch` channel holds one boolean. Waiting on a channel whose sender is gone must NOT look
//! like a stop (that would abort a healthy run when the run's owner drops it early), so a closed
//! channel waits forever instead.
//!
//! An attempt already in flight is aborted only [`IN_FLIGHT_GRACE`] after the stop
//! ([`StopSignal::stopped_in_flight`]). Dropping it at once can drop a request whose connection
//! is still being opened: the swarm logs an attempt the dependency never saw, and the client
//! and server logs of a stopped run disagree. Within the grace such a request reaches the
//! dependency (a loopback connect and write take well under a millisecond); whatever is still
//! unanswered then has arrived, and is aborted. The lab stops the dependencies only after the
//! swarm, so they are there to receive it.

use std::time::Duration;

use tokio::sync::watch;

/// How long an attempt in flight may still run after the stop signal.
pub(crate) const IN_FLIGHT_GRACE: Duration = Duration::from_millis(250);

/// Raises the stop signal.
pub(crate) struct StopTrigger(watch::Sender<bool>);

/// Observes the stop signal; cheap to clone, one per client.
#[derive(Clone)]
pub(crate) struct StopSignal(watch::Receiver<bool>);

pub(crate) fn stop_pair() -> (StopTrigger, StopSignal) {
    let (tx, rx) = watch::channel(false);
    (StopTrigger(tx), StopSignal(rx))
}

impl StopTrigger {
    pub(crate) fn stop(&self) {
        self.0.send_replace(true);
    }
}

impl StopSignal {
    /// Resolves when the stop signal is raised (at once if it already is).
    pub(crate) async fn stopped(&mut self) {
        if self.0.wait_for(|s| *s).await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// Resolves [`IN_FLIGHT_GRACE`] after the stop signal is raised: when an attempt in flight
    /// is aborted.
    pub(crate) async fn stopped_in_flight(&mut self) {
        self.stopped().await;
        tokio::time::sleep(IN_FLIGHT_GRACE).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn stop_is_seen_and_a_dropped_trigger_is_not_a_stop() {
        let (trigger, mut signal) = stop_pair();
        let early = tokio::time::timeout(Duration::from_millis(20), signal.stopped()).await;
        assert!(early.is_err(), "no stop before the trigger");
        trigger.stop();
        tokio::time::timeout(Duration::from_secs(5), signal.stopped())
            .await
            .expect("a raised stop resolves");
        tokio::time::timeout(Duration::from_secs(5), signal.clone().stopped())
            .await
            .expect("and stays raised for every observer");

        let (trigger, mut signal) = stop_pair();
        drop(trigger);
        let waited = tokio::time::timeout(Duration::from_millis(50), signal.stopped()).await;
        assert!(waited.is_err(), "a dropped trigger must not stop the run");
    }

    #[tokio::test]
    async fn attempts_in_flight_get_a_grace_after_the_stop() {
        let (trigger, mut signal) = stop_pair();
        let early = tokio::time::timeout(Duration::from_millis(20), signal.stopped_in_flight());
        assert!(early.await.is_err(), "no stop before the trigger");
        trigger.stop();
        let start = std::time::Instant::now();
        signal.stopped_in_flight().await;
        // At least the grace; the upper bound only catches a wait that never ends (a loaded
        // machine may add scheduling delay, never subtract).
        let waited = start.elapsed();
        assert!(
            waited >= IN_FLIGHT_GRACE && waited < Duration::from_secs(5),
            "{waited:?}"
        );
    }
}
