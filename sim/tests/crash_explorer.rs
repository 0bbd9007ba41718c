//! The crash explorer (SPEC §16, §17): ward's core, driven through the protocol's seam,
//! keeps I15–I19 under crashes at storage calls, power losses and write and sync errors, and
//! each seeded bug of durable sessions is caught by the invariant the catalogue names for it,
//! and shrinks to a plan file that fails the same check.

mod common;

use ward_core::events::EventKind;
use ward_core::fault::{Fault, FaultSet};
use ward_sim::crash::CrashKind;
use ward_sim::crash::file::PlanFile;
use ward_sim::explore::{explore, explore_seed};
use ward_sim::oracle::Invariant;
use ward_sim::shrink::plan::{self as shrink, first_of};
use ward_sim::world::Record;

/// Plans the correct core is checked on.
const SEEDS: u64 = 400;

/// A plan still running after this long fails the test ([`ward_sim::stall`]): a mutant that
/// makes the core loop for ever is reported with its seed. A plan takes milliseconds.
const STALL_AFTER: std::time::Duration = std::time::Duration::from_secs(10);

/// The budget of plans within which each seeded bug must be caught (SPEC §11).
const SEEDS_PER_BUG_MAX: u64 = 5_000;

/// Bugs of durable sessions that nothing crossing the protocol shows, each caught where it
/// shows. `result-apart-from-write` commits the chart apart from its result, but through the
/// protocol ward's chart is the world's (SPEC §17 P10) and the core's stored chart only a
/// mirror: a body the resumed core runs again carries its idempotency key and changes
/// nothing, so the split leaves no trace on the wire. It is caught at the core's own API,
/// where the chart lives in the store (`core/tests/durable_driver.rs`,
/// `a_chart_write_is_applied_once_whichever_commit_fails`).
const NOT_ON_THE_WIRE: &[Fault] = &[Fault::ResultApartFromWrite];

#[test]
fn the_core_keeps_every_durable_invariant_under_crashes() {
    let mut crashes = [0_usize; 4];
    let mut recoveries = 0;
    let mut outcome_unknown = 0;
    let mut planned = 0;
    let report = |stall: &ward_sim::stall::Stall| eprintln!("{stall}");
    ward_sim::stall::watched(Some(STALL_AFTER), 1, report, |watchdog| {
        for seed in 0..SEEDS {
            let _running = watchdog
                .map(|watchdog| watchdog.running(0, seed, ward_sim::stall::Work::CrashPlan));
            let exploration = explore_seed(seed, FaultSet::EMPTY, None);
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
            outcome_unknown += exploration.outcome_unknown();
            recoveries += (exploration.crashed.trace.runs.iter())
                .flat_map(|run| &run.records)
                .filter(|record| matches!(record, Record::Recover { .. }))
                .count();
        }
    });
    println!(
        "{SEEDS} plans, {planned} crashes planned, {} happened: kill {}, power loss {}, write error {}, sync error {}; {outcome_unknown} OUTCOME_UNKNOWN results; {recoveries} recoveries",
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
    assert!(recoveries > 0, "some run was recovered");
}

#[test]
fn every_seeded_bug_of_durable_sessions_is_caught_by_its_invariant_and_shrinks_to_the_same_check() {
    for &fault in Fault::ALL {
        // The campaign catches the bugs of its invariants (`tests/simulator.rs`); this one
        // every other, so that between them every bug of the catalogue is caught.
        let invariant = Invariant::catching(fault);
        if !invariant.is_durable() || NOT_ON_THE_WIRE.contains(&fault) {
            continue;
        }
        let faults = FaultSet::only(fault);
        let caught = (0..SEEDS_PER_BUG_MAX).find_map(|seed| {
            let exploration = explore_seed(seed, faults, None);
            let breach = first_of(&exploration.verdict.breaches, invariant)?.clone();
            Some((seed, exploration.plan, breach))
        });
        let Some((seed, plan, breach)) = caught else {
            panic!("{fault} was not caught by {invariant} within {SEEDS_PER_BUG_MAX} plans");
        };
        // Shrunk, written and read back, the plan fails the same check first.
        let shrunk = shrink::shrink(
            &plan,
            faults,
            None,
            &breach,
            shrink::EXPLORATIONS_MAX / 2,
            None,
        );
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
fn a_crash_and_a_recovery_are_records_of_the_trace() {
    let mut recovered = 0;
    for seed in 0..100 {
        let exploration = explore_seed(seed, FaultSet::EMPTY, None);
        let records: Vec<&Record> = (exploration.crashed.trace.runs.iter())
            .flat_map(|run| &run.records)
            .collect();
        for (at, record) in records.iter().enumerate() {
            if !matches!(record, Record::Crash { .. }) {
                continue;
            }
            // The world resets a fresh runtime and asks it to recover, or (a crash before the
            // run's prompt was acknowledged) starts the run again: the next record but another
            // crash is the recovery, or the fresh runtime's start of the run.
            let next = records[at + 1..]
                .iter()
                .find(|record| !matches!(record, Record::Crash { .. }));
            let fresh = matches!(next, None | Some(Record::Recover { .. }))
                || matches!(next, Some(Record::Event(event))
                    if matches!(event.kind, EventKind::RunStarted { .. }));
            assert!(fresh, "seed {seed}: after a crash: {next:?}");
            // The fresh runtime goes on with the run: it asks the provider again.
            let asked =
                (records[at..].iter()).any(|record| matches!(record, Record::Request { .. }));
            recovered += usize::from(matches!(next, Some(Record::Recover { .. })) && asked);
        }
        assert!(exploration.verdict.breaches.is_empty(), "seed {seed}");
    }
    assert!(recovered > 0, "no recovered run asked the provider again");
}

/// The crash plans of `corpus/crashes/`: each a plan the campaign once judged wrongly, whose
/// file says why; ward's core keeps every durable invariant on each.
#[test]
fn every_crash_plan_of_the_corpus_holds_every_durable_invariant() {
    let folder = common::repository().join("corpus/crashes");
    let mut paths: Vec<_> = std::fs::read_dir(&folder)
        .expect("corpus/crashes exists")
        .map(|entry| entry.expect("a readable entry").path())
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "corpus/crashes holds no plan");
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap();
        let file = PlanFile::from_json(&text, &path.display().to_string())
            .unwrap_or_else(|error| panic!("{error}"));
        let exploration = explore(&file.crash_plan, FaultSet::EMPTY);
        assert!(
            exploration
                .crashed
                .processes
                .iter()
                .any(|process| process.crashed),
            "{}: no crash happened",
            path.display()
        );
        assert_eq!(
            exploration.verdict.breaches,
            [],
            "{}: {}",
            path.display(),
            file.description.as_deref().unwrap_or_default()
        );
    }
}

#[test]
fn the_same_plan_crashes_the_same_way_byte_for_byte() {
    for seed in [3, 10, 37, 132] {
        let first = explore_seed(seed, FaultSet::EMPTY, None);
        let again = explore_seed(seed, FaultSet::EMPTY, None);
        assert_eq!(first.digest(), again.digest(), "seed {seed}");
        assert_eq!(first.crashed.written, again.crashed.written, "seed {seed}");
        assert_eq!(first.crashes(), again.crashes(), "seed {seed}");
    }
}
