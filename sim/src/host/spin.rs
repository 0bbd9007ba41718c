//! Waiting for the other side of the lockstep awake, for a moment, before sleeping.
//!
//! The lockstep (SPEC §15 P1) runs ward and its adapter by turns: one writes a line and
//! waits for the answer while the other works. A reader asleep in `poll(2)` or `read(2)` is
//! woken by the writer's line; on another processor that is an inter-processor interrupt,
//! and a processor that went idle meanwhile must come out of its idle state first (on a
//! virtual machine, the hypervisor must schedule its virtual processor again): tens of
//! microseconds an exchange, several times what either side's work on most lines costs. A
//! reader that polls its pipe without sleeping for [`SPIN`] sees the line as soon as it is
//! written and needs no wake-up. Each poll is followed by `sched_yield(2)`, so that a thread
//! or process waiting for the processor (the other side of the pair, or another job's) takes
//! it first: awake, the reader costs only a processor nobody else wants.
//!
//! When the process may run on one processor alone (`ward run --pin`, `taskset`, a machine
//! of one), the other side can only run when the reader sleeps: it sleeps at once.
//!
//! Real time decides only how long the reader stays awake, never what it reads: no verdict
//! and no byte of a trace depends on it.
//!
//! Measured (12-07, 2 processors, the `campaign` profile; awake against asleep in one build
//! whose wait an environment variable chose, which this code does not read; this code gave
//! `ward serve` 156.3 ms against 54.2 in process): the protocol bench
//! (`benches/benches/protocol.rs`, seeds 0..200, one job) gave `ward serve` 146.7 ms awake
//! against 268.7 ms asleep (0.55× the time), the core in process 50.0 and 52.4 ms in the same
//! runs: 0.34× of in process against 0.20×. `ward run
//! --runtime 'ward serve' --seeds 0..1000 --jobs 1`, 5 alternating rounds: asleep 1.13–1.32 s,
//! awake for 50 µs 0.59–0.65, for 200 µs 0.51–0.56, for 1 ms 0.50–0.54 (200 µs taken: nearly
//! all of the gain, a fifth of the longest wait). With as many jobs as processors, seeds
//! 0..2000, 4 rounds: 0.66–0.81 s asleep, 0.65–0.93 awake (no change). With the Node
//! template (only ward's side awake), seeds 0..300, 3 rounds: 1.34–1.48 s asleep, 1.18–1.28
//! awake; the Python template 1.62–1.91 and 1.61–1.92.

use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec, poll};

/// How long a reader polls its pipe awake before it sleeps.
pub const SPIN: Duration = Duration::from_micros(200);

/// How long this process's readers stay awake: [`SPIN`], or nothing when the process may run
/// on one processor alone.
pub fn budget() -> Duration {
    let processors = rustix::thread::sched_getaffinity(None)
        .map(|allowed| allowed.count())
        .unwrap_or(1);
    if processors > 1 { SPIN } else { Duration::ZERO }
}

/// Whether `fd` is readable (or hung up, or in error: a read says which) within `budget`,
/// polled without sleeping; `false` once the budget is spent.
pub fn ready_within(fd: impl AsFd, budget: Duration) -> bool {
    if budget.is_zero() {
        return false;
    }
    let now = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    let start = Instant::now();
    loop {
        let mut fds = [PollFd::new(&fd, PollFlags::IN)];
        if matches!(poll(&mut fds, Some(&now)), Ok(ready) if ready > 0) {
            return true;
        }
        if start.elapsed() >= budget {
            return false;
        }
        std::thread::yield_now();
    }
}

/// A reader of a pipe that waits for its next bytes awake for its budget, then asleep in a
/// plain read (`ward serve`'s standard input).
pub struct Awake<R> {
    inner: R,
    budget: Duration,
}

impl<R: std::io::Read + AsFd> Awake<R> {
    /// `inner`, read with this process's [`budget`].
    pub fn new(inner: R) -> Awake<R> {
        Awake {
            inner,
            budget: budget(),
        }
    }
}

impl<R: std::io::Read + AsFd> std::io::Read for Awake<R> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        ready_within(self.inner.as_fd(), self.budget);
        self.inner.read(buffer)
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};

    use super::*;

    #[test]
    fn a_line_written_is_seen_awake_and_an_empty_pipe_spends_the_budget() {
        let (reader, mut writer) = std::io::pipe().expect("a pipe");
        let start = Instant::now();
        assert!(!ready_within(&reader, Duration::from_millis(2)));
        assert!(start.elapsed() >= Duration::from_millis(2));
        writer.write_all(b"{}\n").expect("written");
        assert!(ready_within(&reader, Duration::from_millis(2)));
        assert!(
            !ready_within(&reader, Duration::ZERO),
            "no budget: asleep at once"
        );
    }

    #[test]
    fn an_awake_reader_reads_what_was_written_and_the_end() {
        let (reader, mut writer) = std::io::pipe().expect("a pipe");
        let mut awake = Awake::new(reader);
        writer.write_all(b"one line\n").expect("written");
        drop(writer);
        let mut read = String::new();
        awake.read_to_string(&mut read).expect("read to the end");
        assert_eq!(read, "one line\n");
    }

    #[test]
    fn a_thread_on_one_processor_sleeps_at_once() {
        let budget = std::thread::spawn(|| {
            crate::host::pin::pin_worker(0).expect("pinned");
            budget()
        })
        .join()
        .expect("the thread ends");
        assert_eq!(budget, Duration::ZERO);
        let allowed = rustix::thread::sched_getaffinity(None).expect("the affinity");
        if allowed.count() > 1 {
            assert_eq!(super::budget(), SPIN, "free to run on {}", allowed.count());
        }
    }
}
