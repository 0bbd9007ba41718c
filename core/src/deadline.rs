//! Stopping a run (R19, R20): cancellation, the inactivity deadline, and the stop flag a
//! batch obeys.
//!
//! All time is tokio time, so a paused test or simulator clock drives every deadline.
//!
//! - [`CancelToken`]: the caller's way to cancel a run at any moment.
//! - [`Activity`]: the inactivity deadline of R19 (default 120 s), reset by every provider
//!   reply and every finished call, paused while `ask_user` waits for the user.
//! - `StopFlag`: raised by the driver when the run must stop; from then on no tool body
//!   starts, running reads are abandoned, running writes complete (R20).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// A one-way flag that tasks can wait on. Built on [`Notify`], whose waiters wake in a fixed
/// order: tokio's `watch` channel spreads its waiters over several `Notify`s chosen at
/// random, which would make the order in which stopped calls finish differ between two
/// executions of the same scenario.
#[derive(Debug, Default)]
struct Flag {
    raised: AtomicBool,
    changed: Notify,
}

impl Flag {
    fn raise(&self) {
        self.raised.store(true, Ordering::SeqCst);
        self.changed.notify_waiters();
    }

    fn is_raised(&self) -> bool {
        self.raised.load(Ordering::SeqCst)
    }

    async fn wait(&self) {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.is_raised() {
                return;
            }
            changed.await;
        }
    }
}

/// Cancels a run. Cloning shares the token; cancelling is idempotent.
#[derive(Clone, Debug, Default)]
pub struct CancelToken {
    flag: Arc<Flag>,
}

impl CancelToken {
    /// A token not yet cancelled.
    pub fn new() -> CancelToken {
        CancelToken::default()
    }

    /// Cancels the run.
    pub fn cancel(&self) {
        self.flag.raise();
    }

    /// Whether the token was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.flag.is_raised()
    }

    /// Resolves once the token is cancelled.
    pub async fn cancelled(&self) {
        self.flag.wait().await;
    }
}

/// The run's stop flag (R20).
#[derive(Clone, Debug, Default)]
pub(crate) struct StopFlag {
    flag: Arc<Flag>,
}

impl StopFlag {
    pub(crate) fn new() -> StopFlag {
        StopFlag::default()
    }

    pub(crate) fn raise(&self) {
        self.flag.raise();
    }

    pub(crate) fn is_raised(&self) -> bool {
        self.flag.is_raised()
    }

    pub(crate) async fn raised(&self) {
        self.flag.wait().await;
    }
}

/// The inactivity deadline of R19. Cloning shares it.
#[derive(Clone, Debug)]
pub struct Activity {
    inner: Arc<ActivityInner>,
}

#[derive(Debug)]
struct ActivityInner {
    timeout: Duration,
    state: Mutex<ActivityState>,
    changed: Notify,
}

#[derive(Debug)]
struct ActivityState {
    /// The last reset.
    last_reset: Instant,
    /// Paused time since the last reset, not counting a pause still open.
    paused_total: Duration,
    /// Open pauses (questions waiting for the user) and when the first of them began.
    pauses_open: u32,
    paused_since: Option<Instant>,
}

impl ActivityState {
    /// Inactive time that counts against the deadline at `now`; `None` while paused.
    fn idle(&self, now: Instant) -> Option<Duration> {
        if self.pauses_open > 0 {
            return None;
        }
        Some(
            now.saturating_duration_since(self.last_reset)
                .saturating_sub(self.paused_total),
        )
    }
}

impl Activity {
    /// A deadline of `timeout` of inactivity, starting now.
    pub fn new(timeout: Duration) -> Activity {
        Activity {
            inner: Arc::new(ActivityInner {
                timeout,
                state: Mutex::new(ActivityState {
                    last_reset: Instant::now(),
                    paused_total: Duration::ZERO,
                    pauses_open: 0,
                    paused_since: None,
                }),
                changed: Notify::new(),
            }),
        }
    }

    fn state(&self) -> MutexGuard<'_, ActivityState> {
        // The state is plain data updated in one step; a panic elsewhere cannot corrupt it.
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Records activity: a provider reply or a finished call.
    pub fn reset(&self) {
        let now = Instant::now();
        let mut state = self.state();
        state.last_reset = now;
        state.paused_total = Duration::ZERO;
        if state.paused_since.is_some() {
            state.paused_since = Some(now);
        }
        drop(state);
        self.inner.changed.notify_waiters();
    }

    /// Pauses the deadline until the returned guard is dropped.
    pub fn pause(&self) -> PauseGuard {
        let mut state = self.state();
        state.pauses_open += 1;
        if state.pauses_open == 1 {
            state.paused_since = Some(Instant::now());
        }
        drop(state);
        self.inner.changed.notify_waiters();
        PauseGuard {
            activity: self.clone(),
        }
    }

    fn resume(&self) {
        let now = Instant::now();
        let mut state = self.state();
        state.pauses_open = state.pauses_open.saturating_sub(1);
        if state.pauses_open == 0
            && let Some(since) = state.paused_since.take()
        {
            state.paused_total += now.saturating_duration_since(since);
        }
        drop(state);
        self.inner.changed.notify_waiters();
    }

    /// Resolves when the run has been inactive for the whole timeout.
    ///
    /// Activity can only move the deadline later, so the watch sleeps until the deadline as
    /// it stands and then looks again, instead of waking at every reset (a batch resets it
    /// once per finished call). While paused it waits for the pause to end.
    pub async fn expired(&self) {
        loop {
            let changed = self.inner.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let idle = self.state().idle(Instant::now());
            match idle {
                None => changed.await,
                Some(idle) if idle >= self.inner.timeout => return,
                Some(idle) => crate::timers::sleep(self.inner.timeout - idle).await,
            }
        }
    }
}

/// Keeps the inactivity deadline paused while alive.
#[derive(Debug)]
pub struct PauseGuard {
    activity: Activity,
}

impl Drop for PauseGuard {
    fn drop(&mut self) {
        self.activity.resume();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn expires_after_the_timeout_without_activity() {
        let activity = Activity::new(Duration::from_secs(120));
        let start = Instant::now();
        activity.expired().await;
        assert_eq!(start.elapsed(), Duration::from_secs(120));
    }

    #[tokio::test(start_paused = true)]
    async fn a_reset_moves_the_deadline() {
        let activity = Activity::new(Duration::from_secs(120));
        let start = Instant::now();
        let resetter = activity.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(100)).await;
            resetter.reset();
        });
        activity.expired().await;
        assert_eq!(start.elapsed(), Duration::from_secs(220));
    }

    #[tokio::test(start_paused = true)]
    async fn a_pause_stops_the_clock_and_resuming_continues_it() {
        let activity = Activity::new(Duration::from_secs(120));
        let start = Instant::now();
        let pauser = activity.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(50)).await;
            let pause = pauser.pause();
            tokio::time::sleep(Duration::from_secs(1000)).await;
            drop(pause);
        });
        activity.expired().await;
        // 50 s before the pause, 1000 s paused, 70 s after.
        assert_eq!(start.elapsed(), Duration::from_secs(1120));
    }

    #[tokio::test(start_paused = true)]
    async fn cancel_tokens_wake_every_waiter() {
        let token = CancelToken::new();
        let waiter = token.clone();
        let task = tokio::spawn(async move { waiter.cancelled().await });
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert!(!token.is_cancelled());
        token.cancel();
        task.await.unwrap();
        assert!(token.is_cancelled());
    }
}
