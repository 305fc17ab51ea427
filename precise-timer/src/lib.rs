//! A precise timer for the lab's live drivers: it wakes a task at its deadline, not at the next
//! millisecond tick. The client swarm sleeps on it until each scheduled send; the dependency
//! service sleeps on it until its schedule's next due instant (an end of work, a late answer, a
//! freeze edge), so answers leave within tens of µs of the model's instant.
//!
//! Why: tokio's timer wheel has a 1 ms resolution and rounds every deadline UP to the next tick
//! (and its driver parks with a whole-millisecond `epoll_wait` timeout), so a task woken by
//! `tokio::time::sleep_until` runs ~1 ms late on average and up to ~2 ms late, and every
//! deadline within the same millisecond wakes at the same instant, in a burst. The lab measures
//! the *model*, so the drivers' own lateness must stay far below the effects it shows.
//!
//! How: one std thread (`precise-timer`) holds an ordered map of `(deadline, oneshot sender)`. Tasks
//! hand it an entry through an inbox (a `Vec` under a mutex, and a condition variable) and await
//! the oneshot. The thread sleeps in `Condvar::wait_timeout` until the earliest deadline (a
//! futex wait with a high-resolution kernel timer: it wakes within tens of µs, with no
//! busy-spinning) or until a new entry arrives, then fires every entry whose deadline has passed.
//!
//! Why not a channel: the thread runs at real-time priority when it can (`SCHED_FIFO`). A
//! `std::sync::mpsc` receiver that finds a sender half-way through linking a new block spins with
//! `sched_yield`, which under `SCHED_FIFO` gives the CPU only to real-time threads: the sender,
//! preempted on that CPU, never finishes, and with one such thread per core (two swarms on two
//! cores) the process stalls. It was seen once here (2026-12-04), with a driver that asked for
//! many sleeps from many threads. A mutex waits in the kernel once its short spin is over. A task whose deadline has already
//! passed does not involve the thread at all: it returns at once, without yielding.
//!
//! Guarantees: a sleep never ends before its deadline (the thread fires an entry only when
//! `Instant::now() >= deadline`, and `Instant` is monotonic across threads). A dropped sleep
//! (a `select!` that took another branch) just leaves an entry whose send goes nowhere. If the
//! thread is gone (it cannot panic in practice), sleeps fall back to tokio's timer, which is
//! late but never early. The thread ends when the last [`PreciseTimer`] handle is dropped and
//! every pending entry that someone still waits for has fired.

pub mod realtime;

use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

/// The pending wake-ups, earliest deadline first; ties at the same deadline (the `u64`, an
/// insertion counter) fire in the order they were asked for.
type Pending = BTreeMap<(Instant, u64), oneshot::Sender<()>>;

/// A request to the timer thread: the deadline and where to say it has come.
type Request = (Instant, oneshot::Sender<()>);

/// What the sleepers hand the thread.
#[derive(Debug, Default)]
struct Inbox {
    requests: Vec<Request>,
    /// Every handle is gone.
    closed: bool,
    /// The thread is running (false if it could not be started, or it ended).
    running: bool,
}

/// The inbox and the condition variable the thread waits on.
#[derive(Debug, Default)]
struct Shared {
    inbox: Mutex<Inbox>,
    arrived: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inbox> {
        self.inbox.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hands `request` to the thread; false if it is not running.
    fn send(&self, request: Request) -> bool {
        let mut inbox = self.lock();
        if !inbox.running {
            return false;
        }
        inbox.requests.push(request);
        drop(inbox);
        self.arrived.notify_one();
        true
    }
}

/// The last handle's drop tells the thread (its pending sleepers still get their wake-ups).
#[derive(Debug)]
struct Handle(Arc<Shared>);

impl Drop for Handle {
    fn drop(&mut self) {
        self.0.lock().closed = true;
        self.0.arrived.notify_one();
    }
}

/// A handle to the timer thread; cheap to clone, shared by every task that sleeps on it.
#[derive(Clone, Debug)]
pub struct PreciseTimer {
    handle: Arc<Handle>,
}

impl PreciseTimer {
    /// Starts the timer thread. If the thread cannot be started, every sleep falls back to
    /// tokio's timer (a warning says so): the run goes on, with coarser timing.
    pub fn start() -> PreciseTimer {
        PreciseTimer::start_spinning(Duration::ZERO)
    }

    /// [`PreciseTimer::start`], with a thread that does not sleep through the last `spin`
    /// before each deadline but spins (taking new entries as it goes). A thread that sleeps
    /// until the deadline itself is woken by the kernel tens to hundreds of µs late, and on a
    /// shared VM about 0.5 ms late at the 99th percentile. Spinning costs CPU, up to `spin` per
    /// deadline, so it is worth it only where cores are to spare (docs/measurements.md).
    ///
    /// When the process's timers are real-time ([`realtime::scheduling`]), the thread runs
    /// `SCHED_FIFO` at [`realtime::TIMER_PRIORITY`] and never spins (`spin` is ignored: a
    /// spinning real-time thread can starve a small machine).
    pub fn start_spinning(spin: Duration) -> PreciseTimer {
        let shared = Arc::new(Shared::default());
        shared.lock().running = true;
        let thread_shared = Arc::clone(&shared);
        let rt = realtime::scheduling().is_realtime();
        let spin = if rt { Duration::ZERO } else { spin };
        if let Err(e) = thread::Builder::new()
            .name("precise-timer".into())
            .spawn(move || {
                if rt {
                    if let Err(e) = realtime::set_current(realtime::TIMER_PRIORITY) {
                        tracing::warn!("the precise timer stays on the normal scheduler: {e}");
                    }
                }
                timer_thread(&thread_shared, spin);
                thread_shared.lock().running = false;
            })
        {
            shared.lock().running = false;
            tracing::warn!("cannot start the precise timer thread ({e}); using tokio's timer");
        }
        PreciseTimer {
            handle: Arc::new(Handle(shared)),
        }
    }

    /// Waits until `deadline`: never before it, and normally within tens of µs after it.
    /// Returns at once, without yielding, when the deadline has already passed.
    pub async fn sleep_until(&self, deadline: Instant) {
        if Instant::now() >= deadline {
            return;
        }
        let (wake, woken) = oneshot::channel();
        let fired = self.handle.0.send((deadline, wake)) && woken.await.is_ok();
        if !fired || Instant::now() < deadline {
            // The thread is gone (or, impossibly, fired early): tokio's timer is late but
            // never early.
            tokio::time::sleep_until(deadline.into()).await;
        }
    }
}

fn timer_thread(shared: &Shared, spin: Duration) {
    let mut pending = Pending::new();
    let mut seq = 0u64;
    let mut inbox = shared.lock();
    loop {
        for (deadline, wake) in inbox.requests.drain(..) {
            pending.insert((deadline, seq), wake);
            seq += 1;
        }
        let now = Instant::now();
        if pending.first_key_value().is_some_and(|(k, _)| k.0 <= now) {
            // Fired without the lock, so sleepers never wait for it.
            drop(inbox);
            while pending.first_key_value().is_some_and(|(k, _)| k.0 <= now) {
                let (_, wake) = pending.pop_first().expect("peeked");
                // The sleeper may have been dropped (another select! branch won): nothing to do.
                let _ = wake.send(());
            }
            inbox = shared.lock();
            continue;
        }
        if inbox.closed {
            // Nobody waits for a dropped sleep: do not linger until its deadline.
            pending.retain(|_, wake| !wake.is_closed());
        }
        inbox = match pending.first_key_value().map(|(k, _)| k.0) {
            None if inbox.closed => return,
            None => shared
                .arrived
                .wait(inbox)
                .unwrap_or_else(|e| e.into_inner()),
            Some(deadline) if !inbox.closed && deadline.saturating_duration_since(now) <= spin => {
                // The last `spin` before the deadline: stay awake, still taking new entries.
                drop(inbox);
                std::hint::spin_loop();
                shared.lock()
            }
            Some(deadline) => {
                let left = deadline.saturating_duration_since(now);
                let wait = if inbox.closed { left } else { left - spin };
                shared
                    .arrived
                    .wait_timeout(inbox, wait)
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};
    use std::time::Duration;

    /// How late a wake-up may be in these tests. Far above the tens of µs the timer achieves,
    /// because a loaded 2-core CI machine can deschedule any thread for hundreds of ms; the
    /// point here is "woken at all, and not absurdly late", not a precision benchmark (the lab's
    /// fidelity line measures that).
    const GENEROUS: Duration = Duration::from_secs(2);

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn never_wakes_before_the_deadline_and_wakes_within_a_generous_bound() {
        for spin in [Duration::ZERO, Duration::from_micros(300)] {
            sleepers_wake_in_time(PreciseTimer::start_spinning(spin)).await;
        }
    }

    /// The sleepers of the test above, on `timer` (sleeping or spinning).
    async fn sleepers_wake_in_time(timer: PreciseTimer) {
        let base = Instant::now();
        let mut tasks = Vec::new();
        // 300 sleepers over 60 ms, asked for out of order, two per deadline.
        for i in 0..300u64 {
            let timer = timer.clone();
            let deadline = base + Duration::from_micros(((i % 150) * 7919) % 60_000 + 100);
            tasks.push(tokio::spawn(async move {
                timer.sleep_until(deadline).await;
                let now = Instant::now();
                (now >= deadline, now.saturating_duration_since(deadline))
            }));
        }
        for t in tasks {
            let (not_early, late) = t.await.unwrap();
            assert!(not_early, "woke before its deadline");
            assert!(late < GENEROUS, "woke {late:?} late");
        }
        // One sleeper at a time, deadlines from now to 2 ms ahead.
        for i in 0..50u64 {
            let deadline = Instant::now() + Duration::from_micros(i * 37);
            timer.sleep_until(deadline).await;
            assert!(Instant::now() >= deadline, "woke early at step {i}");
        }
    }

    #[test]
    fn a_deadline_in_the_past_returns_on_the_first_poll() {
        // No runtime needed: the past-deadline path neither yields nor touches the thread.
        let timer = PreciseTimer::start();
        let mut cx = Context::from_waker(Waker::noop());
        let mut sleep = pin!(timer.sleep_until(Instant::now()));
        assert_eq!(sleep.as_mut().poll(&mut cx), Poll::Ready(()));
    }

    #[test]
    fn a_future_deadline_is_pending_at_first() {
        let timer = PreciseTimer::start();
        let mut cx = Context::from_waker(Waker::noop());
        let mut sleep = pin!(timer.sleep_until(Instant::now() + Duration::from_secs(60)));
        assert_eq!(sleep.as_mut().poll(&mut cx), Poll::Pending);
    }

    #[tokio::test]
    async fn a_dropped_sleep_does_not_disturb_the_others() {
        let timer = PreciseTimer::start();
        let far = timer.sleep_until(Instant::now() + Duration::from_millis(30));
        // Registered, then dropped before its deadline.
        tokio::select! {
            biased;
            _ = far => panic!("fired 30 ms early"),
            _ = std::future::ready(()) => {}
        }
        let deadline = Instant::now() + Duration::from_millis(50);
        tokio::time::timeout(GENEROUS, timer.sleep_until(deadline))
            .await
            .expect("the later sleep still fires");
        assert!(Instant::now() >= deadline);
    }

    #[tokio::test]
    async fn pending_sleeps_still_fire_after_every_handle_is_dropped() {
        let timer = PreciseTimer::start();
        let deadline = Instant::now() + Duration::from_millis(20);
        let (wake, woken) = oneshot::channel();
        assert!(timer.handle.0.send((deadline, wake)));
        drop(timer);
        tokio::time::timeout(GENEROUS, woken)
            .await
            .expect("fired")
            .expect("the thread kept the entry");
        assert!(Instant::now() >= deadline);
    }

    #[test]
    fn the_thread_ends_without_waiting_for_dropped_sleeps() {
        let shared = Arc::new(Shared::default());
        shared.lock().running = true;
        let thread_shared = Arc::clone(&shared);
        let thread =
            thread::spawn(move || timer_thread(&thread_shared, Duration::from_micros(300)));
        let handle = Handle(shared);
        // A sleep an hour away, dropped by its sleeper, then every handle gone.
        let (wake, woken) = oneshot::channel();
        assert!(handle
            .0
            .send((Instant::now() + Duration::from_secs(3600), wake)));
        drop(woken);
        drop(handle);
        // `join` returns only if the thread ended; had it kept the entry it would sleep an
        // hour, and the test would hang instead of pass.
        thread.join().unwrap();
    }

    #[test]
    fn entries_pop_earliest_first_and_ties_in_order() {
        let base = Instant::now();
        let mut pending = Pending::new();
        for (ms, seq) in [(5, 0), (1, 1), (5, 2), (3, 3)] {
            pending.insert(
                (base + Duration::from_millis(ms), seq),
                oneshot::channel().0,
            );
        }
        let order: Vec<u64> =
            std::iter::from_fn(|| pending.pop_first().map(|(k, _)| k.1)).collect();
        assert_eq!(order, [1, 3, 0, 2]);
    }
}
