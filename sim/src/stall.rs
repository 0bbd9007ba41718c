//! The stall watchdog: a seed that runs for too long in wall-clock time is reported, and the
//! process ends with status 1.
//!
//! No invariant can report a run that never ends. A runtime that loops without yielding (a
//! scanner whose position stops moving, a deadline check that sleeps for zero time at its
//! instant) stands virtual time still, so no deadline of R19 ever fires, no terminal event
//! comes, and a campaign would wait for ever. The watchdog turns that into a failure with the
//! seed that shows it, the way Jepsen and libFuzzer (`-timeout`) end a test that stops making
//! progress.
//!
//! Each worker holds a [`Slot`]: it marks the seed it starts and clears the mark when the
//! seed is done. A watching thread looks at the slots a few times per limit; a seed marked
//! for longer than the limit is a [`Stall`]. A thread stuck in a loop cannot be stopped, so
//! after the report the process exits with status 1, a violation's status (SPEC §12).
//!
//! Wall-clock time is read only here, only to notice a stall, and only while the machine is
//! awake ([`crate::awake`]: a pause of the whole machine is not a seed's), like the protocol's
//! watchdog of P6 (SPEC §15): it never reaches a scenario, a trace, a digest or a verdict, so
//! every seed that ends runs exactly as without the watchdog (determinism, I11). Unlike P6's,
//! it cannot let the campaign go on: a runtime in process that never yields holds its thread,
//! which nothing can stop, so the process ends (an adapter behind the protocol is stopped by
//! P6's watchdog first, and its pipes close with the process). The limit is generous against a
//! seed's cost (a seed takes milliseconds, its crash plan a few more), so that a loaded machine
//! does not trip it; `ward run --stall-after SECS` sets it and `0` turns it off. A mark says
//! which work of the seed runs, its scenario or its crash plan, so that a stall names the one
//! replay that shows it.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::Duration;

use crate::awake::AwakeClock;

/// The default limit of `ward run`: a seed still running after a minute is stalled.
pub const DEFAULT_LIMIT: Duration = Duration::from_secs(60);

/// No seed in this slot.
const IDLE: u64 = 0;

/// A worker's mark: the seed it is running and since when.
#[derive(Debug, Default)]
pub struct Slot {
    /// Milliseconds on the watchdog's awake clock, plus 1, when the seed started; [`IDLE`] when
    /// no seed runs.
    since: AtomicU64,
    seed: AtomicU64,
    crash_plan: AtomicBool,
}

/// Which work of a seed runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work {
    /// Its scenario, against the runtime.
    Scenario,
    /// Its crash plan, in the crash explorer.
    CrashPlan,
}

/// A seed that ran longer than the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stall {
    /// The seed.
    pub seed: u64,
    /// The work of the seed that ran.
    pub work: Work,
    /// How long it had run when the watchdog saw it.
    pub after: Duration,
}

impl fmt::Display for Stall {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "seed {} ran for {} s of wall-clock time awake without ending: the runtime under test \
             makes no progress (virtual time stands still, so no deadline can end the run)",
            self.seed,
            self.after.as_secs(),
        )
    }
}

/// The watchdog of a set of workers.
#[derive(Debug)]
pub struct Watchdog {
    /// Time awake since the watchdog was made, read by the watcher every [`Watchdog::period`]
    /// and by the workers as they mark a seed in between.
    clock: Mutex<AwakeClock>,
    limit: Duration,
    slots: Vec<Slot>,
    stopped: Mutex<bool>,
    wake: Condvar,
}

impl Watchdog {
    /// A watchdog over `workers` slots that reports a seed running longer than `limit`.
    pub fn new(limit: Duration, workers: usize) -> Watchdog {
        Watchdog {
            clock: Mutex::new(AwakeClock::start()),
            limit,
            slots: (0..workers).map(|_| Slot::default()).collect(),
            stopped: Mutex::new(false),
            wake: Condvar::new(),
        }
    }

    /// Marks `work` of `seed` as running in slot `worker` until the returned guard is
    /// dropped.
    ///
    /// # Panics
    ///
    /// When `worker` is not below the number of workers given to [`Watchdog::new`].
    pub fn running(&self, worker: usize, seed: u64, work: Work) -> Running<'_> {
        let slot = &self.slots[worker];
        slot.since.store(IDLE, Ordering::Release);
        slot.seed.store(seed, Ordering::Release);
        (slot.crash_plan).store(work == Work::CrashPlan, Ordering::Release);
        slot.since.store(self.now_ms() + 1, Ordering::Release);
        Running { slot }
    }

    /// The first stalled seed, by slot, at this instant.
    pub fn stalled(&self) -> Option<Stall> {
        let now = self.now_ms();
        self.slots.iter().find_map(|slot| {
            let since = slot.since.load(Ordering::Acquire);
            if since == IDLE {
                return None;
            }
            let after = Duration::from_millis(now.saturating_sub(since - 1));
            if after <= self.limit {
                return None;
            }
            // The seed and its work are stored before its mark: a mark that did not move
            // while they were read names them (a worker that moved on is looked at next
            // time).
            let seed = slot.seed.load(Ordering::Acquire);
            let work = match slot.crash_plan.load(Ordering::Acquire) {
                true => Work::CrashPlan,
                false => Work::Scenario,
            };
            let stall = Stall { seed, work, after };
            (slot.since.load(Ordering::Acquire) == since).then_some(stall)
        })
    }

    /// Watches until [`Watchdog::stop`]; on a stall, calls `report` with it and exits the
    /// process with status 1. Run it on a thread of its own.
    pub fn watch(&self, report: impl FnOnce(&Stall)) {
        if let Some(stall) = self.wait_for_stall() {
            report(&stall);
            std::process::exit(1);
        }
    }

    /// Waits until a seed stalls (`Some`) or the watchdog is stopped (`None`).
    fn wait_for_stall(&self) -> Option<Stall> {
        let period = self.period();
        let mut stopped = self.stopped.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if *stopped {
                return None;
            }
            if let Some(stall) = self.stalled() {
                return Some(stall);
            }
            stopped = self
                .wake
                .wait_timeout(stopped, period)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Ends [`Watchdog::watch`].
    pub fn stop(&self) {
        *self.stopped.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.wake.notify_all();
    }

    /// How often the watcher looks at the slots: a few times per limit.
    fn period(&self) -> Duration {
        (self.limit / 4).clamp(Duration::from_millis(10), Duration::from_secs(1))
    }

    /// Milliseconds awake since the watchdog was made. The watcher reads the clock every
    /// period, so no reading comes more than a period after the one before while the machine
    /// runs.
    fn now_ms(&self) -> u64 {
        let mut clock = self.clock.lock().unwrap_or_else(PoisonError::into_inner);
        let awake = clock.read(self.period());
        u64::try_from(awake.as_millis()).unwrap_or(u64::MAX - 1)
    }
}

/// A seed marked as running; dropping it clears the mark.
#[derive(Debug)]
pub struct Running<'w> {
    slot: &'w Slot,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.slot.since.store(IDLE, Ordering::Release);
    }
}

/// Runs `work` with a watchdog of `workers` slots beside it (none when `limit` is `None`):
/// `work` gets the watchdog to mark its seeds in, and on a stall `report` is called and the
/// process exits with status 1.
pub fn watched<T>(
    limit: Option<Duration>,
    workers: usize,
    report: impl FnOnce(&Stall) + Send,
    work: impl FnOnce(Option<&Watchdog>) -> T,
) -> T {
    let Some(limit) = limit else {
        return work(None);
    };
    let watchdog = Watchdog::new(limit, workers);
    std::thread::scope(|scope| {
        scope.spawn(|| watchdog.watch(report));
        // Stopped on the way out, also when `work` panics: the scope joins the watching
        // thread before it unwinds.
        let _stop = StopOnDrop(&watchdog);
        work(Some(&watchdog))
    })
}

/// Stops a watchdog when dropped.
struct StopOnDrop<'w>(&'w Watchdog);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Looks at the slots every tenth of a second, as the watcher does, until one stalls or
    /// `within` has passed.
    fn watch_for(watchdog: &Watchdog, within: Duration) -> Option<Stall> {
        let tick = Duration::from_millis(100);
        for _ in 0..within.as_millis() / tick.as_millis() {
            std::thread::sleep(tick);
            if let Some(stall) = watchdog.stalled() {
                return Some(stall);
            }
        }
        None
    }

    #[test]
    fn a_seed_past_the_limit_is_stalled_and_one_that_ended_is_not() {
        // A second: the first `stalled()` must come before the limit even when this thread
        // waits its turn on a loaded machine, where a limit of milliseconds can pass first.
        let limit = Duration::from_secs(1);
        let watchdog = Watchdog::new(limit, 2);
        let ended = watchdog.running(0, 7, Work::Scenario);
        drop(ended);
        let running = watchdog.running(1, 12, Work::CrashPlan);
        assert_eq!(watchdog.stalled(), None);
        let stall = watch_for(&watchdog, limit * 5).expect("seed 12 has run past the limit");
        assert_eq!((stall.seed, stall.work), (12, Work::CrashPlan));
        assert!(stall.after > limit);
        assert!(stall.to_string().starts_with("seed 12 ran for "));
        drop(running);
        assert_eq!(watchdog.stalled(), None);
    }

    #[test]
    fn a_pause_of_the_machine_is_not_a_seeds_time() {
        // Nothing reads the clock for longer than the watcher's period and the tolerance of
        // a pause (250 ms and a second): the machine was paused, and the gap counts 250 ms.
        let limit = Duration::from_secs(1);
        let watchdog = Watchdog::new(limit, 1);
        let _running = watchdog.running(0, 5, Work::Scenario);
        std::thread::sleep(Duration::from_millis(2_500));
        let awake = watchdog.now_ms();
        assert!(
            (250..1_000).contains(&awake),
            "2.5 s paused, 0.25 s counted: {awake} ms"
        );
        assert_eq!(watchdog.stalled(), None);
        let stall = watch_for(&watchdog, limit * 5).expect("awake, seed 5 runs past the limit");
        assert_eq!(stall.seed, 5);
        assert!(stall.after > limit && stall.after < Duration::from_millis(2_500));
    }

    #[test]
    fn a_stopped_watchdog_returns_without_a_stall() {
        let watchdog = Watchdog::new(Duration::from_secs(60), 1);
        let _running = watchdog.running(0, 3, Work::Scenario);
        watchdog.stop();
        assert_eq!(watchdog.wait_for_stall(), None);
    }

    #[test]
    fn work_under_a_watchdog_returns_its_value() {
        let value = watched(
            Some(Duration::from_secs(60)),
            1,
            |_| {},
            |watchdog| {
                let _running = watchdog
                    .expect("a limit is given")
                    .running(0, 1, Work::Scenario);
                41 + 1
            },
        );
        assert_eq!(value, 42);
        assert!(watched(None, 1, |_| {}, |watchdog| watchdog.is_none()));
    }

    #[test]
    fn work_that_panics_stops_its_watchdog() {
        // On a thread of its own, so that a watchdog left watching fails the test instead of
        // hanging it: the scope would wait for the watching thread for ever.
        let (done, ended) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let unwound = std::panic::catch_unwind(|| {
                watched(
                    Some(Duration::from_secs(60)),
                    1,
                    |_| {},
                    |_| panic!("a failed check"),
                )
            });
            let _ = done.send(unwound.is_err());
        });
        assert_eq!(ended.recv_timeout(Duration::from_secs(10)), Ok(true));
    }
}
