//! Time the machine was awake: wall-clock time without the pauses of the whole machine, for
//! the two watchdogs that read real time (P6's in [`crate::host::process`], the stall
//! watchdog of [`crate::stall`]).
//!
//! A watchdog that reads `Instant` counts a pause of the machine (a virtual machine paused or
//! snapshotted, every process stopped) as time the runtime under test had: when the machine
//! goes on, ward's `poll(2)` sees its deadline passed before the adapter, paused as well, had a
//! moment to answer, and an exchange the runtime would have answered in a millisecond ends as
//! P6's "no idle within 10000 ms" (measured: ward and the PydanticAI-on-DBOS adapter stopped
//! together for 11 s in the middle of `ward replay --crashes 621` end that seed with I19 "the
//! session without crashes did not finish: no idle within 10000 ms", where it holds every
//! invariant otherwise). Two campaigns on one machine then differ on the seeds each was in at
//! the pause, which is what a verdict must never depend on (I11).
//!
//! [`AwakeClock`] leaves such a pause out. Its reader says, at each reading, the longest it
//! could have been away since its last one (a `poll(2)` timeout, a watcher's period); a gap
//! longer than that by more than [`PAUSE`] is a pause, and only the expected part of it counts:
//! a pause costs the reader one bound of its limit, so a runtime that is really hung is still
//! found, after at most its limit's worth of bounds, as long as the reader reads the clock at
//! least once per bound while it waits. A machine so loaded that a reader wakes more than a
//! second late gets the same leniency, which is the direction a watchdog should err in.

use std::time::{Duration, Instant};

/// How much later than it expected a reader may find the clock before the gap counts as a
/// pause of the machine. A thread that asked to wake within a second and woke more than a
/// second later did not run: the scheduler of a loaded machine delays a wake-up by
/// milliseconds.
pub const PAUSE: Duration = Duration::from_secs(1);

/// Wall-clock time since its start, without the pauses its readings show.
#[derive(Debug, Clone, Copy)]
pub struct AwakeClock {
    origin: Instant,
    last: Instant,
    paused: Duration,
}

impl AwakeClock {
    /// A clock at zero now.
    pub fn start() -> AwakeClock {
        AwakeClock::start_at(Instant::now())
    }

    fn start_at(now: Instant) -> AwakeClock {
        AwakeClock {
            origin: now,
            last: now,
            paused: Duration::ZERO,
        }
    }

    /// The time awake since the start; `expected`: the longest the reader could have been
    /// away since its last reading (or the start) while the machine ran.
    pub fn read(&mut self, expected: Duration) -> Duration {
        self.read_at(Instant::now(), expected)
    }

    /// [`AwakeClock::read`] at the instant `now`.
    fn read_at(&mut self, now: Instant, expected: Duration) -> Duration {
        let gap = now.saturating_duration_since(self.last);
        if gap > expected.saturating_add(PAUSE) {
            self.paused += gap - expected;
        }
        self.last = self.last.max(now);
        (now.saturating_duration_since(self.origin)).saturating_sub(self.paused)
    }

    /// The time left of `limit` awake; zero once it is spent.
    pub fn left(&mut self, limit: Duration, expected: Duration) -> Duration {
        limit.saturating_sub(self.read(expected))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SLICE: Duration = Duration::from_millis(100);

    fn ms(millis: u64) -> Duration {
        Duration::from_millis(millis)
    }

    #[test]
    fn readings_on_time_count_every_millisecond() {
        let start = Instant::now();
        let mut clock = AwakeClock::start_at(start);
        let mut awake = Duration::ZERO;
        for step in 1..=100 {
            awake = clock.read_at(start + ms(100 * step), SLICE);
        }
        assert_eq!(awake, ms(10_000));
    }

    #[test]
    fn a_pause_counts_only_the_expected_part_of_its_gap() {
        let start = Instant::now();
        let mut clock = AwakeClock::start_at(start);
        assert_eq!(clock.read_at(start + ms(2_000), SLICE), ms(100));
        assert_eq!(clock.read_at(start + ms(2_100), SLICE), ms(200));
        // Late by exactly the tolerance: still counted, a loaded machine's late wake-up.
        assert_eq!(clock.read_at(start + ms(3_200), SLICE), ms(1_300));
        // Late by more: a pause again.
        assert_eq!(clock.read_at(start + ms(60_000), SLICE), ms(1_400));
    }

    #[test]
    fn a_reader_is_excused_only_a_gap_past_its_bound_and_a_second() {
        let start = Instant::now();
        let mut clock = AwakeClock::start_at(start);
        assert_eq!(clock.read_at(start + ms(10_000), ms(10_000)), ms(10_000));
        assert_eq!(clock.read_at(start + ms(21_001), ms(10_000)), ms(20_000));
    }

    #[test]
    fn what_is_left_of_a_limit_stops_at_zero() {
        let mut clock = AwakeClock::start();
        assert!(clock.left(ms(60_000), SLICE) > ms(59_000));
        assert_eq!(clock.left(Duration::ZERO, SLICE), Duration::ZERO);
    }
}
