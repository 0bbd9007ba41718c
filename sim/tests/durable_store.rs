//! The durable store (`ward_core::durable`, SPEC §16) against a plain model, under crashes,
//! power losses and storage failures on the simulated disk (`ward_sim::world::disk`).
//!
//! The model is a list of acknowledged records per session, and the chart committed with the
//! last of them that carried one. After every crash the disk is taken as the crash or the
//! power loss left it (before the dying store could write anything more), the store is
//! reopened from it, and each session's journal must be exactly the acknowledged records, or
//! those and the one whose commit failed (it may have reached the disk before the failure):
//! nothing acknowledged is lost, and the recovered journal extends the last committed one
//! (I16). The chart must be the one committed with the last record that carried one, so a
//! record and its chart survive together or not at all (R31). Opening after a crash never
//! refuses (a crash is not damage, R35); a flipped bit in a committed page is refused. The
//! property runs from a fixed seed: the same cases on every run.

use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use ward_core::chart::SharedChart;
use ward_core::durable::{DurableStore, Record, StoreError};
use ward_core::session::Message;
use ward_sim::rng::SimRng;
use ward_sim::world::disk::{Failure, SimulatedDisk};

/// One step of a sequence.
#[derive(Clone, Debug)]
enum Op {
    /// Appends a record of `bytes` bytes to session `session`, with the chart when `chart`.
    Append {
        session: u8,
        bytes: u16,
        chart: bool,
    },
    /// The process dies; the disk keeps every write.
    Crash,
    /// Power is lost; the disk keeps what was synced, and some of the rest.
    PowerLoss { seed: u64 },
    /// The storage call `after` calls from now fails: a write, a sync, or a cut.
    Fail { kind: u8, after: u8 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0_u8..3, 0_u16..6000, any::<bool>())
            .prop_map(|(session, bytes, chart)| Op::Append { session, bytes, chart }),
        1 => Just(Op::Crash),
        1 => any::<u64>().prop_map(|seed| Op::PowerLoss { seed }),
        2 => (0_u8..3, 0_u8..40).prop_map(|(kind, after)| Op::Fail { kind, after }),
    ]
}

fn record(session: u8, number: usize, bytes: u16) -> Record {
    Record::Message {
        message: Arc::new(Message::User {
            text: format!("{session}:{number}:{}", "é".repeat(usize::from(bytes) / 2)),
        }),
    }
}

/// What a sequence left: the disk's writes and each session's final journal.
struct Outcome {
    written: Vec<Vec<u8>>,
    journals: Vec<Vec<Record>>,
}

fn session_name(session: u8) -> String {
    format!("session-{session}")
}

/// Runs `ops`, checking the model after every reopen; `Err` names the first disagreement.
fn run(ops: &[Op]) -> Result<Outcome, String> {
    let mut disk = SimulatedDisk::new();
    let mut store = Some(DurableStore::open_on(disk.clone()).map_err(|e| e.to_string())?);
    let mut acknowledged: BTreeMap<u8, Vec<Record>> = BTreeMap::new();
    // The chart of each session as last committed: its `next_id`.
    let mut charts: BTreeMap<u8, u64> = BTreeMap::new();
    // The commit that failed: its session, record and chart.
    let mut in_flight: Option<(u8, Record, Option<u64>)> = None;
    let mut appended = 0;
    let mut chart = SharedChart::new(0).snapshot();
    for (step, op) in ops.iter().enumerate() {
        let reopen = match op {
            Op::Append {
                session,
                bytes,
                chart: with_chart,
            } => {
                let record = record(*session, appended, *bytes);
                appended += 1;
                chart.next_id = appended as u64;
                let store = store.as_mut().expect("an open store");
                let name = session_name(*session);
                let committed = if *with_chart {
                    store.commit_records(&name, std::slice::from_ref(&record), Some(&chart))
                } else {
                    store.append(&name, &record)
                };
                match committed {
                    Ok(()) => {
                        let journal = acknowledged.entry(*session).or_default();
                        journal.push(record);
                        if *with_chart {
                            charts.insert(*session, chart.next_id);
                        }
                        None
                    }
                    Err(error) => {
                        // A failed commit stops the store (R35): nothing after it is taken.
                        let again = store.append(&name, &record);
                        if !matches!(again, Err(StoreError::Stopped(_))) {
                            return Err(format!("step {step}: after {error}, {again:?}"));
                        }
                        in_flight = Some((*session, record, with_chart.then_some(chart.next_id)));
                        // The process dies of it; half the time the power goes too.
                        Some((step % 2 == 0).then_some(step as u64))
                    }
                }
            }
            Op::Crash => Some(None),
            Op::PowerLoss { seed } => Some(Some(*seed)),
            Op::Fail { kind, after } => {
                let at = disk.calls() + u64::from(*after);
                disk.plan(Some(match kind {
                    0 => Failure::Write(at),
                    1 => Failure::Sync(at),
                    _ => Failure::Cut(at),
                }));
                None
            }
        };
        let Some(power_loss) = reopen else { continue };
        // The disk as the crash left it, before the dying store writes anything more.
        let left = match power_loss {
            Some(seed) => disk.after_power_loss(&mut SimRng::new(seed)),
            None => disk.after_crash(),
        };
        drop(store.take());
        disk = left;
        let reopened = DurableStore::open_on(disk.clone())
            .map_err(|error| format!("step {step}: reopening refused: {error}"))?;
        for session in 0..3 {
            let name = session_name(session);
            let recovered = reopened
                .records(&name)
                .map_err(|error| format!("step {step}: {error}"))?;
            let recovered_chart = reopened
                .chart(&name)
                .map_err(|error| format!("step {step}: {error}"))?
                .map(|chart| chart.next_id);
            let journal = acknowledged.entry(session).or_default();
            let flying = in_flight
                .as_ref()
                .filter(|(flying, _, _)| *flying == session);
            let extended = flying.is_some_and(|(_, record, _)| {
                recovered.len() == journal.len() + 1 && recovered.last() == Some(record)
            });
            if !extended && recovered != *journal {
                return Err(format!(
                    "step {step}: session {session} recovered {} records, {} acknowledged",
                    recovered.len(),
                    journal.len()
                ));
            }
            let expected_chart = match flying {
                Some((_, _, Some(next_id))) if extended => Some(*next_id),
                _ => charts.get(&session).copied(),
            };
            if recovered_chart != expected_chart {
                return Err(format!(
                    "step {step}: session {session}'s chart is {recovered_chart:?}, \
                     {expected_chart:?} committed with its records"
                ));
            }
            match recovered_chart {
                Some(next_id) => charts.insert(session, next_id),
                None => charts.remove(&session),
            };
            recovered.clone_into(journal);
        }
        in_flight = None;
        store = Some(reopened);
    }
    let store = store.expect("an open store");
    let mut journals = Vec::new();
    for session in 0..3 {
        journals.push(
            store
                .records(&session_name(session))
                .map_err(|error| error.to_string())?,
        );
    }
    Ok(Outcome {
        written: disk.written(),
        journals,
    })
}

#[test]
fn nothing_acknowledged_is_lost_whatever_the_crashes() {
    let config = Config {
        cases: 96,
        failure_persistence: None,
        ..Config::default()
    };
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[29; 32]);
    let mut runner = TestRunner::new_with_rng(config, rng);
    let outcome = runner.run(&prop::collection::vec(op(), 1..40), |ops| {
        run(&ops).map(|_| ()).map_err(TestCaseError::fail)
    });
    if let Err(failure) = outcome {
        panic!("{failure}");
    }
}

#[test]
fn the_same_steps_write_the_same_bytes() {
    let ops = [
        Op::Append {
            session: 0,
            bytes: 100,
            chart: true,
        },
        Op::Append {
            session: 1,
            bytes: 5000,
            chart: false,
        },
        Op::Fail { kind: 2, after: 7 },
        Op::Append {
            session: 0,
            bytes: 10,
            chart: true,
        },
        Op::PowerLoss { seed: 3 },
        Op::Append {
            session: 2,
            bytes: 300,
            chart: false,
        },
    ];
    let first = run(&ops).expect("the model holds");
    let second = run(&ops).expect("the model holds");
    assert_eq!(first.written, second.written);
    assert_eq!(first.journals, second.journals);
    assert!(!first.written.is_empty());
}

#[test]
fn a_flipped_bit_in_a_committed_record_is_refused() {
    let disk = SimulatedDisk::new();
    let mut store = DurableStore::open_on(disk.clone()).expect("a new store");
    let text = "a record whose bytes are flipped at rest";
    let record = Record::Message {
        message: Arc::new(Message::User {
            text: text.to_owned(),
        }),
    };
    store.append("s", &record).expect("committed");
    drop(store);
    // Flip one bit of the record's text where it lies on the disk.
    let crashed = disk.after_crash();
    let image = {
        use ward_core::durable::StorageBackend;
        let mut image = vec![0; usize::try_from(crashed.len().unwrap()).unwrap()];
        crashed.read(0, &mut image).unwrap();
        image
    };
    let at = image
        .windows(text.len())
        .rposition(|window| window == text.as_bytes())
        .expect("the record is on the disk");
    let damaged = SimulatedDisk::new();
    {
        use ward_core::durable::StorageBackend;
        let mut image = image.clone();
        image[at + 3] ^= 0x01;
        damaged.write(0, &image).unwrap();
        damaged.sync_data().unwrap();
    }
    match DurableStore::open_on(damaged.after_crash()) {
        Err(StoreError::Open(reason)) => assert!(reason.contains("corrupted"), "{reason}"),
        Err(error) => panic!("refused otherwise than as damaged: {error}"),
        Ok(store) => match store.records("s") {
            Err(StoreError::Damaged(_)) => {}
            other => panic!("a damaged store gave {other:?}"),
        },
    }
}
