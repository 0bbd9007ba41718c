//! I19. A resumed run keeps every promise: I1–I14 hold across crashes and resumes.
//!
//! With the provider's script fixed per turn and bodies that take no time, a run that keeps
//! every promise behaves after a resume as it would have without the crash (R33, R34): its
//! journal holds the same starts (policy, limits, redacted prompt), the same replies and the
//! same results in the same order — but for the results R32 fixes (I17 checks those) — and
//! the same ends; and every provider request is the reference's for its run and turn: the
//! same system prompt, offered tools and transcript (I1, I3, I13). The reference is the same
//! plan without crashes. Besides, across every process, no destructive body starts in a
//! read-only run (I2) and no run runs more batches than its turn limit (I10).

use std::collections::BTreeMap;

use ward_core::session::{Message, Record};

use super::{DurableBreach, DurableCheck, json, runs, short};
use crate::catalogue;
use crate::crash::Request;
use crate::oracle::Breach;

/// Checks I19: the session went on after each crash, a resumed read-only run ran no write,
/// no run went past its turn limit, and every request and every journal record is the one
/// the session without crashes made.
pub fn check(check: &DurableCheck<'_>, breaches: &mut Vec<DurableBreach>) {
    let found = went_on(check)
        .or_else(|| read_only(check))
        .or_else(|| turn_limit(check))
        .or_else(|| requests(check))
        .or_else(|| journal(check));
    breaches.extend(found);
}

fn breach(breach: Breach, message: String) -> Option<DurableBreach> {
    Some(DurableBreach { breach, message })
}

/// The session went on after every crash (a store that did not reopen is I16's).
fn went_on(check: &DurableCheck<'_>) -> Option<DurableBreach> {
    let failure = check.crashed.failure.as_ref()?;
    if failure.starts_with("the store did not reopen") {
        return None;
    }
    let message = format!("the session did not go on after a crash: {failure}");
    breach(Breach::SessionStopped, message)
}

/// A read-only run, resumed or not, ran no destructive body.
fn read_only(check: &DurableCheck<'_>) -> Option<DurableBreach> {
    check.crashed.starts.iter().find_map(|start| {
        let run = check.plan.runs.get(start.run as usize)?;
        let writes = catalogue::TABLE
            .iter()
            .any(|entry| entry.name == start.tool && !entry.read_only);
        (run.read_only && writes).then(|| DurableBreach {
            breach: Breach::ReadOnlyLost,
            message: format!(
                "the body of destructive tool {} ran in read-only run {} (call {}, process {})",
                start.tool, start.run, start.call_id, start.process
            ),
        })
    })
}

/// No run holds more replies with calls than its turn limit allows (one more may be the reply
/// past the limit, whose calls are `ABORTED`).
fn turn_limit(check: &DurableCheck<'_>) -> Option<DurableBreach> {
    runs(&check.crashed.journal)
        .into_iter()
        .enumerate()
        .find_map(|(run, records)| {
            let plan = check.plan.runs.get(run)?;
            let ran = records
                .iter()
                .filter(|record| {
                    matches!(record, Record::Message { message }
                    if matches!(&**message, Message::Assistant { calls, .. } if !calls.is_empty()))
                })
                .count();
            (ran > plan.turns_max as usize + 1).then(|| DurableBreach {
                breach: Breach::TurnLimitLost,
                message: format!(
                    "run {run} holds {ran} replies with calls, past its turn limit of {}",
                    plan.turns_max
                ),
            })
        })
}

/// Every request is the one the session without crashes made at that turn of that run: the
/// same system prompt (the read-only note), the same offered tools in order (I1, I3, I13), the
/// same transcript but for the results R32 fixes.
fn requests(check: &DurableCheck<'_>) -> Option<DurableBreach> {
    if check.crashed.failure.is_some() {
        return None;
    }
    let mut asked: BTreeMap<(u32, u32), &Request> = BTreeMap::new();
    for request in &check.reference.requests {
        asked.entry((request.run, request.turn)).or_insert(request);
    }
    let cut = |message: &Message| match message {
        Message::Tool { call_id, .. } => (check.cut_outside.iter())
            .chain(&check.cut_changed)
            .any(|(_, id)| **id == **call_id),
        _ => false,
    };
    check.crashed.requests.iter().find_map(|request| {
        let Some(want) = asked.get(&(request.run, request.turn)) else {
            let message = format!(
                "run {} asked for turn {} after a crash; without crashes it never did",
                request.run, request.turn
            );
            return breach(Breach::TurnCountLost, message);
        };
        let same_transcript = want.transcript.len() == request.transcript.len()
            && (want.transcript.iter().zip(&request.transcript))
                .all(|(want, have)| want == have || (cut(want) && cut(have)));
        let same = want.system_prompt == request.system_prompt
            && want.tools == request.tools
            && same_transcript;
        (!same).then(|| DurableBreach {
            breach: Breach::RequestDiffers,
            message: request_differs(request, want),
        })
    })
}

fn request_differs(request: &Request, want: &Request) -> String {
    format!(
        "turn {} of run {} (process {}) was asked with tools {:?} and {} messages; without crashes with tools {:?} and {} messages{}",
        request.turn,
        request.run,
        request.process,
        request.tools,
        request.transcript.len(),
        want.tools,
        want.transcript.len(),
        if want.system_prompt == request.system_prompt {
            ""
        } else {
            ", and another system prompt"
        },
    )
}

/// The journal holds the records the session without crashes committed, but for the results
/// a crash fixes.
fn journal(check: &DurableCheck<'_>) -> Option<DurableBreach> {
    if check.crashed.failure.is_some() {
        return None;
    }
    let expected: Vec<&Record> = comparable(&check.reference.journal);
    let got: Vec<&Record> = comparable(&check.crashed.journal);
    let cut_result = |record: &Record, run: u32| match record {
        Record::Message { message } => match &**message {
            Message::Tool { call_id, .. } => check.fixed_by_a_crash(run, call_id),
            _ => false,
        },
        _ => false,
    };
    let mut run = 0_u32;
    for at in 0..expected.len().max(got.len()) {
        let (Some(want), Some(have)) = (expected.get(at), got.get(at)) else {
            let message = format!(
                "the journal holds {} records after the crashes, {} without them",
                got.len(),
                expected.len()
            );
            return breach(Breach::JournalLengthDiffers, message);
        };
        if let Record::RunStarted { run: number, .. } = want {
            run = *number;
        }
        if json(want) != json(have) && !(cut_result(want, run) && cut_result(have, run)) {
            let message = format!(
                "record {at} of the journal is {} after {} crash(es), {} without them",
                short(&json(have)),
                check.crashes(),
                short(&json(want)),
            );
            return breach(Breach::JournalRecordDiffers, message);
        }
    }
    None
}

/// The records a run's behaviour decides: all but the intents and the refusals journaled
/// beside a reply, which say how it was committed.
fn comparable(journal: &[Record]) -> Vec<&Record> {
    journal
        .iter()
        .filter(|record| {
            matches!(
                record,
                Record::RunStarted { .. } | Record::Message { .. } | Record::RunEnded { .. }
            )
        })
        .collect()
}
