//! The simulator alone: generated seeds run in-process against the correct core, failing at
//! the first violation of any invariant. This is the one test cargo-mutants runs
//! (`.cargo/mutants.toml`), so a mutant of the core counts as caught only when the
//! simulator's invariants notice it; `MUTANTS.md` has the score. It installs
//! `allocation-counter`'s allocator, so that the conformance probes of the core, which it runs
//! first, check R8's cost too ([`ward_sim::conformance`]: R2, R8a and R8, which act before any
//! run).

use std::time::Duration;

use ward_sim::simulate::{Engine, is_rerun};
use ward_sim::stall;

/// Seeds per run: enough for every invariant to be armed many times (I14 in every run, the
/// rarest, I11 and I12, in about 5 % of runs), few enough for a mutant to be judged in
/// seconds.
const SEEDS: u64 = 3_000;

/// A seed still running after this long fails the test ([`ward_sim::stall`]): a mutant that
/// makes the runtime loop for ever (a scanner that stops moving) is reported with its seed
/// instead of running until cargo-mutants' timeout. A seed takes milliseconds.
const STALL_AFTER: Duration = Duration::from_secs(10);

#[test]
fn the_core_holds_every_invariant_over_3000_generated_seeds() {
    ward_sim::conformance::cost::count_allocations_with(|run| {
        allocation_counter::measure(run).count_total
    });
    let engine = Engine::new();
    if let Some(disagreement) = ward_sim::conformance::disagreement(engine.oracle().schemas()) {
        panic!("the core disagrees with R2, R8a or R8: {disagreement}");
    }
    let report = |stall: &stall::Stall| eprintln!("{stall}");
    stall::watched(Some(STALL_AFTER), 1, report, |watchdog| {
        for seed in 0..SEEDS {
            let _running =
                watchdog.map(|watchdog| watchdog.running(0, seed, stall::Work::Scenario));
            let outcome = engine.run_seed(seed, None, is_rerun(seed, 20));
            if let Some(violation) = outcome.checked.verdict.violations.first() {
                panic!("seed {seed}: {violation}");
            }
        }
    });
}
