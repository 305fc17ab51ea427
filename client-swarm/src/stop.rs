//! The stop signal of a run: set once when the caller's shutdown future resolves, observed by
//! every client task.
//!
//! A `watch` channel holds one boolean. Waiting on a channel whose sender is gone must NOT look
//! like a stop (that would abort a healthy run when the run's owner drops it early), so a closed
//! channel waits forever instead.

use tokio::sync::watch;

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
}
