//! The core's timers (R19's inactivity deadline, R21's provider timeout and backoff), each one
//! a tokio timer, and the one place a host that moves the core's clock learns when the next
//! of them falls due (SPEC §15 P3).
//!
//! A host that serves the core behind the protocol (`ward serve`) runs it on a paused tokio
//! clock and must say, at every `idle`, whether a timer of the core is due before ward's
//! next delivery: when none is, the delivery carries its instant and no `advance` precedes
//! it. tokio keeps its timer wheel to itself, so every timer of the core is armed here:
//! [`sleep`] and [`timeout`] register their deadline in the [`Timers`] of the task they run
//! in, for as long as the timer is pending, and [`Timers::earliest`] reads the earliest.
//! A task outside any [`Timers::scope`] (a run in process) registers nothing and pays one
//! task-local lookup per timer.
//!
//! Every deadline of the core goes through this module; a tokio timer armed elsewhere would
//! be a timer the host cannot see, and the protocol's conformance test (the same digests
//! through `ward serve` as in process) is what catches one.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;
use tokio::time::error::Elapsed;

tokio::task_local! {
    static PENDING: Timers;
}

/// The deadlines of the timers pending in one task, with how many are armed at each.
#[derive(Clone, Debug, Default)]
pub struct Timers {
    deadlines: Arc<Mutex<BTreeMap<Instant, usize>>>,
}

impl Timers {
    /// No timer pending.
    pub fn new() -> Timers {
        Timers::default()
    }

    /// The earliest deadline of a pending timer, or `None` when no timer is pending.
    pub fn earliest(&self) -> Option<Instant> {
        self.lock().first_key_value().map(|(&at, _)| at)
    }

    /// `future`, with every timer it arms registered here.
    pub fn scope<F: Future>(&self, future: F) -> impl Future<Output = F::Output> + use<F> {
        PENDING.scope(self.clone(), future)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<Instant, usize>> {
        self.deadlines
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn arm(&self, at: Instant) {
        *self.lock().entry(at).or_default() += 1;
    }

    fn disarm(&self, at: Instant) {
        let mut deadlines = self.lock();
        if let Some(count) = deadlines.get_mut(&at) {
            *count -= 1;
            if *count == 0 {
                deadlines.remove(&at);
            }
        }
    }
}

/// A deadline registered in the current task's [`Timers`] while alive.
struct Armed(Option<(Timers, Instant)>);

impl Armed {
    fn at(deadline: Instant) -> Armed {
        let timers = PENDING.try_with(Timers::clone).ok();
        if let Some(timers) = &timers {
            timers.arm(deadline);
        }
        Armed(timers.map(|timers| (timers, deadline)))
    }
}

impl Drop for Armed {
    fn drop(&mut self) {
        if let Some((timers, deadline)) = self.0.take() {
            timers.disarm(deadline);
        }
    }
}

/// Waits for `duration` ([`tokio::time::sleep`]), the deadline registered while it waits.
pub async fn sleep(duration: Duration) {
    let deadline = Instant::now() + duration;
    let _armed = Armed::at(deadline);
    tokio::time::sleep_until(deadline).await;
}

/// `future` within `duration` ([`tokio::time::timeout`]), the deadline registered while it
/// runs.
pub async fn timeout<F: Future>(duration: Duration, future: F) -> Result<F::Output, Elapsed> {
    let deadline = Instant::now() + duration;
    let _armed = Armed::at(deadline);
    tokio::time::timeout_at(deadline, future).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;

    #[tokio::test(start_paused = true)]
    async fn a_pending_timer_is_seen_until_it_ends() {
        let timers = Timers::new();
        let start = Instant::now();
        let mut slept = Box::pin(timers.scope(sleep(Duration::from_secs(3))));
        assert!((&mut slept).now_or_never().is_none());
        assert_eq!(timers.earliest(), Some(start + Duration::from_secs(3)));
        let mut waited = Box::pin(timers.scope(timeout(Duration::from_secs(1), async {
            sleep(Duration::from_secs(2)).await;
        })));
        assert!((&mut waited).now_or_never().is_none());
        assert_eq!(timers.earliest(), Some(start + Duration::from_secs(1)));
        assert!(waited.await.is_err(), "the timeout fires first");
        assert_eq!(timers.earliest(), Some(start + Duration::from_secs(3)));
        slept.await;
        assert_eq!(timers.earliest(), None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_dropped_timer_and_one_outside_a_scope_leave_nothing() {
        let timers = Timers::new();
        let mut slept = Box::pin(timers.scope(sleep(Duration::from_secs(3))));
        assert!((&mut slept).now_or_never().is_none());
        drop(slept);
        assert_eq!(timers.earliest(), None);
        sleep(Duration::from_millis(1)).await;
        assert_eq!(timers.earliest(), None);
    }
}
