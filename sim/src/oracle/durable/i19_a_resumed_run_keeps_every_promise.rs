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

/// Checks I19.
pub fn check(check: &DurableCheck<'_>, breaches: &mut Vec<DurableBreach>) {
    let mut breach = |breach: Breach, message: String| {
        breaches.push(DurableBreach { breach, message });
    };
    let crashed = check.crashed;
    if let Some(failure) = &crashed.failure
        && !failure.starts_with("the store did not reopen")
    {
        breach(
            Breach::SessionStopped,
            format!("the session did not go on after a crash: {failure}"),
        );
        return;
    }
    for start in &crashed.starts {
        let Some(run) = check.plan.runs.get(start.run as usize) else {
            continue;
        };
        let writes = catalogue::TABLE
            .iter()
            .any(|entry| entry.name == start.tool && !entry.read_only);
        if run.read_only && writes {
            breach(
                Breach::ReadOnlyLost,
                format!(
                    "the body of destructive tool {} ran in read-only run {} (call {}, process {})",
                    start.tool, start.run, start.call_id, start.process
                ),
            );
            return;
        }
    }
    for (run, records) in runs(&crashed.journal).into_iter().enumerate() {
        let Some(plan) = check.plan.runs.get(run) else {
            continue;
        };
        let ran = records
            .iter()
            .filter(|record| {
                matches!(record, Record::Message { message }
                if matches!(&**message, Message::Assistant { calls, .. } if !calls.is_empty()))
            })
            .count();
        // One more reply with calls may be the one past the limit, whose calls are `ABORTED`.
        if ran > plan.turns_max as usize + 1 {
            breach(
                Breach::TurnLimitLost,
                format!(
                    "run {run} holds {ran} replies with calls, past its turn limit of {}",
                    plan.turns_max
                ),
            );
            return;
        }
    }
    if crashed.failure.is_some() {
        return;
    }
    // Every request is the one the session without crashes made at that turn of that run:
    // the same system prompt (the read-only note), the same offered tools in order (I1, I3,
    // I13), the same transcript but for the results R32 fixes.
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
    for request in &crashed.requests {
        let Some(want) = asked.get(&(request.run, request.turn)) else {
            breach(
                Breach::TurnCountLost,
                format!(
                    "run {} asked for turn {} after a crash; without crashes it never did",
                    request.run, request.turn
                ),
            );
            return;
        };
        let same_transcript = want.transcript.len() == request.transcript.len()
            && (want.transcript.iter().zip(&request.transcript))
                .all(|(want, have)| want == have || (cut(want) && cut(have)));
        if want.system_prompt != request.system_prompt
            || want.tools != request.tools
            || !same_transcript
        {
            breach(
                Breach::RequestDiffers,
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
                ),
            );
            return;
        }
    }
    let expected: Vec<&Record> = comparable(&check.reference.journal);
    let got: Vec<&Record> = comparable(&crashed.journal);
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
            breach(
                Breach::JournalLengthDiffers,
                format!(
                    "the journal holds {} records after the crashes, {} without them",
                    got.len(),
                    expected.len()
                ),
            );
            return;
        };
        if let Record::RunStarted { run: number, .. } = want {
            run = *number;
        }
        if json(want) != json(have) && !(cut_result(want, run) && cut_result(have, run)) {
            breach(
                Breach::JournalRecordDiffers,
                format!(
                    "record {at} of the journal is {} after {} crash(es), {} without them",
                    short(&json(have)),
                    check.crashes(),
                    short(&json(want)),
                ),
            );
            return;
        }
    }
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
