//! The kill drill (SPEC §17 P9, kill mode): `ward serve --store DIR`, a real process keeping
//! its sessions in a real redb file, plays crash plans through the protocol and is killed with
//! `SIGKILL` at lockstep boundaries drawn from the seed; after each kill the world starts a
//! fresh process, resets it with the same store directory and asks it to recover. I15–I19
//! are checked on what crossed the boundary, with the crash explorer's checks, against the
//! same plan played through a process never killed; I18 scans the store's files after every
//! kill and at the end. Each seeded bug of durable sessions that a kill at a boundary can show
//! is caught by its invariant.

use std::path::PathBuf;

use ward_core::fault::Fault;
use ward_sim::crash::generate;
use ward_sim::crash::kill::execute_killing;
use ward_sim::oracle::Invariant;
use ward_sim::oracle::durable::{self, DurableVerdict};
use ward_sim::rng::SimRng;
use ward_sim::world::Record;

/// Plans drilled, and the kills at most per plan.
const PLANS: u64 = 10;
const KILLS_PER_PLAN_MAX: u64 = 4;

fn command(directory: &std::path::Path, bug: Option<Fault>) -> String {
    let bug = bug.map_or(String::new(), |bug| format!(" --bug {}", bug.name()));
    format!(
        "{} serve --store {}{bug}",
        env!("CARGO_BIN_EXE_ward"),
        directory.display()
    )
}

fn fresh(directory: &PathBuf) {
    let _ = std::fs::remove_dir_all(directory);
    std::fs::create_dir_all(directory).unwrap();
}

/// Plays plan `seed` through `ward serve` (with `bug`) without kills and with kills drawn from
/// the seed: the durable verdict, the kills planned, and the trace's crashes and recoveries.
fn drill(
    root: &std::path::Path,
    seed: u64,
    bug: Option<Fault>,
) -> (DurableVerdict, Vec<u64>, [usize; 2]) {
    let plan = generate(seed);
    let directory = root.join(format!("{seed}-reference"));
    fresh(&directory);
    let (reference, boundaries) =
        execute_killing(&plan, &command(&directory, bug), &directory, &[]);
    let mut rng = SimRng::new(seed);
    let planned: Vec<u64> = (0..rng.range(1, KILLS_PER_PLAN_MAX))
        .map(|_| rng.range(1, boundaries.max(1)))
        .collect();
    let directory = root.join(format!("{seed}-killed"));
    fresh(&directory);
    let (killed, _) = execute_killing(&plan, &command(&directory, bug), &directory, &planned);
    let records = || (killed.trace.runs.iter()).flat_map(|run| &run.records);
    let kills = records()
        .filter(|record| matches!(record, Record::Crash { .. }))
        .count();
    let recoveries = records()
        .filter(|record| matches!(record, Record::Recover { .. }))
        .count();
    let verdict = durable::check(&plan, &reference, &killed);
    (verdict, planned, [kills, recoveries])
}

#[test]
fn ward_serve_killed_at_lockstep_boundaries_keeps_i15_to_i19() {
    let root = std::env::temp_dir().join(format!("ward-kill-drill-{}", std::process::id()));
    let (mut kills, mut recoveries) = (0, 0);
    for seed in 0..PLANS {
        let (verdict, planned, [killed, recovered]) = drill(&root, seed, None);
        assert!(
            verdict.breaches.is_empty(),
            "seed {seed}, kills at {planned:?}: {:?}",
            verdict.breaches
        );
        (kills, recoveries) = (kills + killed, recoveries + recovered);
    }
    std::fs::remove_dir_all(&root).unwrap();
    println!("{PLANS} plans: {kills} kills, {recoveries} recoveries");
    assert!(
        kills >= PLANS as usize,
        "every plan was killed at least once"
    );
    assert!(recoveries > 0, "some run was recovered");
}

/// The durable bugs a kill at a lockstep boundary can show: not `ack-before-sync` (a kill
/// keeps what the process handed the kernel) nor `result-apart-from-write` (its two
/// transactions commit within one answer, between two boundaries).
const SHOWN_BY_KILLS: [Fault; 5] = [
    Fault::WriteReplayedOnResume,
    Fault::IntentAfterStart,
    Fault::ReadonlyLostOnResume,
    Fault::TurnsResetOnResume,
    Fault::RawPromptJournaled,
];

/// Plans within which the drill must catch each of them.
const PLANS_PER_BUG_MAX: u64 = 60;

#[test]
fn the_drill_catches_each_durable_bug_a_kill_can_show_by_its_invariant() {
    let root = std::env::temp_dir().join(format!("ward-kill-drill-bugs-{}", std::process::id()));
    for bug in SHOWN_BY_KILLS {
        let invariant = Invariant::catching(bug);
        let caught = (0..PLANS_PER_BUG_MAX).find_map(|seed| {
            let (verdict, _, _) = drill(&root, seed, Some(bug));
            let found = verdict
                .breaches
                .iter()
                .find(|breach| breach.invariant() == invariant);
            found.map(|breach| (seed, breach.clone()))
        });
        let Some((seed, breach)) = caught else {
            panic!("{bug} was not caught by {invariant} within {PLANS_PER_BUG_MAX} plans");
        };
        println!(
            "{bug}: caught by {invariant} at plan {seed}: {}",
            breach.message
        );
    }
    std::fs::remove_dir_all(&root).unwrap();
}
