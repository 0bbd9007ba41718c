//! One processor for a campaign worker and the adapter processes it starts (`ward run --pin`).
//!
//! The lockstep (SPEC §15 P1) never runs ward and its adapter at once: one writes a message
//! and waits, the other wakes, answers and waits. On two processors every exchange is two
//! cross-processor wake-ups, and each message's bytes move from one processor's caches to
//! the other's; on one processor a wake-up is a local switch and the bytes stay warm. With
//! `--pin`, worker `w` pins its own thread to the `w`-th processor it may run on (modulo how
//! many it may run on), and every adapter process it starts inherits that processor, as a
//! forked process inherits its thread's affinity: the pair shares it, and each pair has its
//! own while there are as many processors as jobs.
//!
//! Measured (12-07, 2 processors, the `campaign` profile, medians of alternating runs): `ward
//! run --runtime 'ward serve' --seeds 0..1000 --jobs 1` took 1.17 s pinned against 2.10 s
//! free (0.56× the time, 7 pairs); the protocol bench (`benches/benches/protocol.rs`, one
//! job, `ward serve` of the `campaign` profile), two sittings: 228 ms against 428 ms and 227
//! against 443, with the core in process at 89 and 74 ms. With as many jobs as
//! processors there is no processor to spare and nothing to gain (`--jobs 2`, seeds
//! 0..2000: 1.03× the time). It is a switch, off by default, because it is not a gain for
//! every runtime: an adapter that works on several threads (Node's garbage collector and its
//! worker pool) has them all pinned to the one processor too — the Node template took 1.05×
//! the time pinned, the Python template 0.92× (seeds 0..200, one job, 5 pairs). Scheduling
//! decides no verdict and no byte of a trace: digests are the same with and without it (a
//! verdict that rests on real time, the watchdog's, is the one exception, and a runtime
//! slow enough to meet it is a finding either way). Pinning is per campaign: two pinned
//! campaigns side by side put their first workers on the same processor.
//!
//! Those figures are of readers that slept at once. Since ward's reader and `ward serve`'s
//! wait awake for a moment ([`crate::host::spin`], which a pinned pair does not: the other
//! side could not run), the wake-up pinning saved is saved free too, and the free pair runs
//! on two processors: the protocol bench gave `ward serve` 156.3 ms free against 187.6 ms
//! pinned (12-07, 98e8823, same run, the core in process at 54.2). `--pin` stays a switch for
//! adapters whose runtime gains from one processor's warm caches.

use rustix::thread::{CpuSet, sched_getaffinity, sched_setaffinity};

/// Pins the calling thread, worker `worker` of a campaign, to one of the processors it may
/// run on, the `worker`-th modulo their number; every process it starts from now on inherits
/// that processor. Returns the processor, or why it could not pin (the worker then runs
/// unpinned: pinning changes only the speed).
pub fn pin_worker(worker: usize) -> Result<usize, String> {
    let allowed = sched_getaffinity(None).map_err(|error| format!("sched_getaffinity: {error}"))?;
    let processors: Vec<usize> = (0..CpuSet::MAX_CPU)
        .filter(|&cpu| allowed.is_set(cpu))
        .collect();
    let Some(&processor) = processors.get(worker % processors.len().max(1)) else {
        return Err("no processor is allowed to this process".to_owned());
    };
    let mut one = CpuSet::new();
    one.set(processor);
    sched_setaffinity(None, &one).map_err(|error| format!("sched_setaffinity: {error}"))?;
    Ok(processor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pinned_worker_and_its_children_run_on_one_allowed_processor() {
        let allowed = sched_getaffinity(None).expect("affinity");
        let count = (0..CpuSet::MAX_CPU)
            .filter(|&cpu| allowed.is_set(cpu))
            .count();
        let picked = std::thread::spawn(move || {
            let processor = pin_worker(count + 1).expect("pins");
            let mine = sched_getaffinity(None).expect("affinity");
            let set = (0..CpuSet::MAX_CPU).filter(|&cpu| mine.is_set(cpu)).count();
            // A child inherits it: `taskset -p` would say so; `/proc/self/status` of a
            // child names its allowed list.
            let child = std::process::Command::new("sh")
                .arg("-c")
                .arg("grep Cpus_allowed_list /proc/self/status")
                .output()
                .expect("runs sh");
            (
                processor,
                set,
                String::from_utf8_lossy(&child.stdout).into_owned(),
            )
        })
        .join()
        .expect("the worker");
        let (processor, set, child) = picked;
        assert!(allowed.is_set(processor), "{processor} is allowed");
        assert_eq!(set, 1, "the worker runs on one processor");
        assert_eq!(
            child.split_whitespace().last(),
            Some(processor.to_string().as_str()),
            "the child inherits it: {child}"
        );
        // The worker index wraps around the allowed processors.
        let wrapped = (0..CpuSet::MAX_CPU)
            .filter(|&cpu| allowed.is_set(cpu))
            .nth(1 % count)
            .expect("one processor at least");
        assert_eq!(processor, wrapped);
    }
}
