//! The durable store (`ward_core::durable`, SPEC §16) against a plain model, under crashes,
//! power losses and storage failures on the simulated disk (`ward_sim::world::disk`).
//!
//! The model is a list of acknowledged records per session. After every crash the store is
//! reopened from what the disk kept, and each session's journal must be exactly the
//! acknowledged records, or those and the one whose append failed (its commit may have
//! reached the disk before the failure): nothing acknowledged is lost, and the recovered
//! journal extends the last committed one (I16). Opening after a crash never refuses (a crash
//! is not damage, R35); a flipped bit in a committed record is refused.

use std::collections::BTreeMap;

use proptest::prelude::*;
use ward_core::durable::{DurableStore, Record, StoreError};
use ward_core::session::Message;
use ward_sim::rng::SimRng;
use ward_sim::world::disk::{Failure, SimulatedDisk};

/// One step of a sequence.
#[derive(Clone, Debug)]
enum Op {
    /// Appends a record of `bytes` bytes to session `session`.
    Append { session: u8, bytes: u16 },
    /// The process dies; the disk keeps every write.
    Crash,
    /// Power is lost; the disk keeps what was synced, and some of the rest.
    PowerLoss { seed: u64 },
    /// The storage call `after` calls from now fails: a write, a sync, or a cut.
    Fail { kind: u8, after: u8 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0_u8..3, 0_u16..6000).prop_map(|(session, bytes)| Op::Append { session, bytes }),
        1 => Just(Op::Crash),
        1 => any::<u64>().prop_map(|seed| Op::PowerLoss { seed }),
        2 => (0_u8..3, 0_u8..40).prop_map(|(kind, after)| Op::Fail { kind, after }),
    ]
}

fn record(session: u8, number: usize, bytes: u16) -> Record {
    Record::Message {
        message: Message::User {
            text: format!("{session}:{number}:{}", "é".repeat(usize::from(bytes) / 2)),
        },
    }
}

/// What a sequence left: the disk's written bytes and each session's final journal.
struct Outcome {
    written: Vec<u8>,
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
    let mut in_flight: Option<(u8, Record)> = None;
    let mut appended = 0;
    for (step, op) in ops.iter().enumerate() {
        let reopen = match op {
            Op::Append { session, bytes } => {
                let record = record(*session, appended, *bytes);
                appended += 1;
                let store = store.as_mut().expect("an open store");
                match store.append(&session_name(*session), &record) {
                    Ok(sequence) => {
                        let journal = acknowledged.entry(*session).or_default();
                        if sequence != journal.len() as u64 {
                            return Err(format!(
                                "step {step}: sequence {sequence}, {} acknowledged",
                                journal.len()
                            ));
                        }
                        journal.push(record);
                        None
                    }
                    Err(error) => {
                        // A failed commit stops the store (R35): nothing after it is taken.
                        let again = store.append(&session_name(*session), &record);
                        if !matches!(again, Err(StoreError::Stopped(_))) {
                            return Err(format!("step {step}: after {error}, {again:?}"));
                        }
                        in_flight = Some((*session, record));
                        Some(None)
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
        drop(store.take());
        disk = match power_loss {
            Some(seed) => disk.after_power_loss(&mut SimRng::new(seed)),
            None => disk.after_crash(),
        };
        let reopened = DurableStore::open_on(disk.clone())
            .map_err(|error| format!("step {step}: reopening refused: {error}"))?;
        for session in 0..3 {
            let recovered = reopened
                .records(&session_name(session))
                .map_err(|error| format!("step {step}: {error}"))?;
            let journal = acknowledged.entry(session).or_default();
            let extended = in_flight.as_ref().is_some_and(|(flying, record)| {
                *flying == session
                    && recovered.len() == journal.len() + 1
                    && recovered.last() == Some(record)
            });
            if !extended && recovered != *journal {
                return Err(format!(
                    "step {step}: session {session} recovered {} records, {} acknowledged",
                    recovered.len(),
                    journal.len()
                ));
            }
            recovered.clone_into(journal);
        }
        in_flight = None;
        store = Some(reopened);
    }
    let store = store.expect("an open store");
    let journals = (0..3)
        .map(|session| store.records(&session_name(session)).unwrap_or_default())
        .collect();
    Ok(Outcome {
        written: disk.written(),
        journals,
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn nothing_acknowledged_is_lost_whatever_the_crashes(ops in prop::collection::vec(op(), 1..40)) {
        if let Err(disagreement) = run(&ops) {
            prop_assert!(false, "{}", disagreement);
        }
    }
}

#[test]
fn the_same_steps_write_the_same_bytes() {
    let ops = [
        Op::Append {
            session: 0,
            bytes: 100,
        },
        Op::Append {
            session: 1,
            bytes: 5000,
        },
        Op::Fail { kind: 2, after: 7 },
        Op::Append {
            session: 0,
            bytes: 10,
        },
        Op::PowerLoss { seed: 3 },
        Op::Append {
            session: 2,
            bytes: 300,
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
        message: Message::User {
            text: text.to_owned(),
        },
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
    let refused = match DurableStore::open_on(damaged.after_crash()) {
        Err(error) => error.to_string(),
        Ok(store) => match store.records("s") {
            Err(error) => error.to_string(),
            Ok(records) => panic!("a damaged store gave {records:?}"),
        },
    };
    assert!(
        refused.contains("damaged") || refused.contains("cannot be opened"),
        "{refused}"
    );
}
