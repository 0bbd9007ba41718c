//! The crash explorer (SPEC §16): ward's core keeps I15–I19 under crashes at storage calls,
//! power losses and write and sync errors, and each seeded bug of durable sessions is caught
//! by the invariant the catalogue names for it, and shrinks to a plan file that fails the
//! same check.

use ward_core::fault::{Fault, FaultSet};
use ward_core::session::Record;
use ward_sim::crash::file::PlanFile;
use ward_sim::crash::{CrashKind, Step};
use ward_sim::explore::{explore, explore_seed};
use ward_sim::oracle::Invariant;
use ward_sim::shrink::plan::{self as shrink, first_of};

/// Plans the correct core is checked on.
const SEEDS: u64 = 400;

/// A plan still running after this long fails the test ([`ward_sim::stall`]): a mutant that
/// makes the core loop for ever is reported with its seed. A plan takes milliseconds.
const STALL_AFTER: std::time::Duration = std::time::Duration::from_secs(10);

/// The budget of plans within which each seeded bug must be caught (SPEC §11).
const SEEDS_PER_BUG_MAX: u64 = 5_000;

#[test]
fn the_core_keeps_every_durable_invariant_under_crashes() {
    let mut crashes = [0_usize; 4];
    let mut resumed_batches = 0;
    let mut outcome_unknown = 0;
    let mut planned = 0;
    let report = |stall: &ward_sim::stall::Stall| eprintln!("{stall}");
    ward_sim::stall::watched(Some(STALL_AFTER), 1, report, |watchdog| {
        for seed in 0..SEEDS {
            let _running = watchdog
                .map(|watchdog| watchdog.running(0, seed, ward_sim::stall::Work::CrashPlan));
            let exploration = explore_seed(seed, FaultSet::EMPTY);
            assert!(
                exploration.verdict.breaches.is_empty(),
                "seed {seed}: {:?}\nplan: {:?}",
                exploration.verdict.breaches,
                exploration.plan,
            );
            for process in &exploration.crashed.processes {
                if let (true, Some(crash)) = (process.crashed, process.crash) {
                    let kind = CrashKind::ALL
                        .iter()
                        .position(|kind| *kind == crash.kind)
                        .unwrap();
                    crashes[kind] += 1;
                }
            }
            planned += exploration.planned();
            let journal = serde_json::to_string(&exploration.crashed.journal).unwrap();
            outcome_unknown += journal.matches("OUTCOME_UNKNOWN").count();
            resumed_batches += exploration.crashed.journal.len();
        }
    });
    println!(
        "{SEEDS} plans, {planned} crashes planned, {} happened: kill {}, power loss {}, write error {}, sync error {}; {outcome_unknown} OUTCOME_UNKNOWN results; {resumed_batches} records",
        crashes.iter().sum::<usize>(),
        crashes[0],
        crashes[1],
        crashes[2],
        crashes[3]
    );
    assert!(
        crashes.iter().all(|&count| count > 0),
        "every kind of crash happened: {crashes:?}"
    );
    assert!(outcome_unknown > 0, "some call of R32 was cut by a crash");
}

#[test]
fn every_seeded_bug_of_durable_sessions_is_caught_by_its_invariant_and_shrinks_to_the_same_check() {
    for &fault in Fault::ALL {
        // The campaign catches the bugs of its invariants (`tests/simulator.rs`); this one
        // every other, so that between them every bug of the catalogue is caught.
        let invariant = Invariant::catching(fault);
        if !invariant.is_durable() {
            continue;
        }
        let faults = FaultSet::only(fault);
        let caught = (0..SEEDS_PER_BUG_MAX).find_map(|seed| {
            let exploration = explore_seed(seed, faults);
            let breach = first_of(&exploration.verdict.breaches, invariant)?.clone();
            Some((seed, exploration.plan, breach))
        });
        let Some((seed, plan, breach)) = caught else {
            panic!("{fault} was not caught by {invariant} within {SEEDS_PER_BUG_MAX} plans");
        };
        // Shrunk, written and read back, the plan fails the same check first.
        let shrunk = shrink::shrink(&plan, faults, &breach, shrink::EXPLORATIONS_MAX / 2, None);
        let file = PlanFile::new(shrunk.plan, Some(fault), String::new());
        let read = PlanFile::from_json(&file.to_json(), "shrunk.json").unwrap();
        let replayed = explore(&read.crash_plan, faults);
        let again = first_of(&replayed.verdict.breaches, invariant);
        assert_eq!(
            again.map(|breach| breach.breach),
            Some(breach.breach),
            "{fault} (plan {seed}): the shrunk plan fails another check: {:?}",
            replayed.verdict.breaches
        );
        let size =
            |plan: &ward_sim::crash::Plan| (plan.runs.len(), plan.calls(), plan.crashes.len());
        let (before, after) = (size(&plan), size(&read.crash_plan));
        assert!(
            after.0 <= before.0 && after.1 <= before.1 && after.2 <= before.2 && after != before,
            "{fault} (plan {seed}): shrinking left {after:?} of {before:?} (runs, calls, crashes)"
        );
        println!(
            "{fault}: caught by {invariant} ({:?}) at plan {seed}: {}; shrunk from {} runs, {} calls, {} crashes to {} runs, {} calls, {} crashes in {} explorations",
            breach.breach,
            breach.message,
            plan.runs.len(),
            plan.calls(),
            plan.crashes.len(),
            read.crash_plan.runs.len(),
            read.crash_plan.calls(),
            read.crash_plan.crashes.len(),
            shrunk.explorations
        );
    }
}

#[test]
fn a_crash_and_a_resume_are_steps_of_the_trace() {
    let (seed, exploration) = (0..100)
        .map(|seed| (seed, explore_seed(seed, FaultSet::EMPTY)))
        .find(|(_, exploration)| {
            exploration.crashed.processes.iter().skip(1).any(|process| {
                process
                    .recovered
                    .as_ref()
                    .is_some_and(|journal| !journal.is_empty())
            })
        })
        .expect("a plan whose crash left a journal to resume from");
    let log = &exploration.crashed.log;
    let committed = |steps: &[Step]| -> Vec<Record> {
        (steps.iter())
            .flat_map(|step| match step {
                Step::Committed { records, .. } => records.clone(),
                _ => Vec::new(),
            })
            .collect()
    };
    let mut resumes = 0;
    for (at, step) in log.iter().enumerate() {
        let Step::Crashed { process, .. } = step else {
            continue;
        };
        let (before, after) = (&log[..at], &log[at + 1..]);
        // The next process opens the store and recovers every record acknowledged before.
        let journal = committed(before);
        let Some(Step::Opened {
            process: next,
            recovered,
        }) = after.first()
        else {
            panic!(
                "seed {seed}: no process opened the store after the crash of process {process}: {log:?}"
            );
        };
        assert_eq!(
            (*next, *recovered),
            (process + 1, journal.len()),
            "seed {seed}: {log:?}"
        );
        // It takes up the run the crash cut, when that run's start was committed and its end
        // was not; otherwise it resumes nothing.
        let cut = journal.iter().rev().find_map(|record| match record {
            Record::RunStarted { run, .. } => Some(*run),
            _ => None,
        });
        let cut = cut.filter(|run| {
            !(journal.iter())
                .any(|record| matches!(record, Record::RunEnded { run: ended, .. } if ended == run))
        });
        // Its first step of a run: a resume of the cut run, or a run started.
        let resumed = after[1..].iter().find_map(|step| match step {
            Step::Resumed { process: by, run } if by == next => Some(Some(*run)),
            Step::RunStarted { process: by, .. } if by == next => Some(None),
            _ => None,
        });
        let resumed = resumed.flatten();
        assert_eq!(
            resumed, cut,
            "seed {seed}: after the crash of process {process}: {log:?}"
        );
        resumes += usize::from(resumed.is_some());
    }
    assert!(resumes > 0, "seed {seed}: no run resumed: {log:?}");
}

#[test]
fn the_same_plan_crashes_the_same_way_byte_for_byte() {
    for seed in [3, 10, 37, 132] {
        let first = explore_seed(seed, FaultSet::EMPTY);
        let again = explore_seed(seed, FaultSet::EMPTY);
        assert_eq!(first.digest(), again.digest(), "seed {seed}");
        assert_eq!(first.crashed.written, again.crashed.written, "seed {seed}");
        assert_eq!(first.crashes(), again.crashes(), "seed {seed}");
    }
}
