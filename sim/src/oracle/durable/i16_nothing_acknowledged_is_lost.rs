//! I16. Nothing acknowledged is lost: every result and reply whose commit returned survives
//! every later crash byte for byte; the recovered transcript extends the last committed one.
//!
//! Each process that opens the store after a crash recovers a journal that begins with every
//! record any earlier process had acknowledged, in order and byte for byte (as JSON); so does
//! the journal the session ends with, and the store reopened after the session's end and one
//! more power loss. A store that does not reopen after a crash has lost what it
//! acknowledged. A provider request asked again after a crash (R33) shows the same
//! transcript as the first time it was asked.

use std::collections::BTreeMap;

use ward_core::session::Message;

use super::{DurableBreach, DurableCheck, json, short};
use crate::oracle::Breach;

/// Checks I16.
pub fn check(check: &DurableCheck<'_>, breaches: &mut Vec<DurableBreach>) {
    let mut breach = |breach: Breach, message: String| {
        breaches.push(DurableBreach { breach, message });
    };
    let execution = check.crashed;
    if let Some(failure) = &execution.failure
        && failure.starts_with("the store did not reopen")
    {
        breach(Breach::StoreNotReopened, failure.clone());
    }
    let mut acknowledged: Vec<String> = Vec::new();
    for (number, process) in execution.processes.iter().enumerate() {
        let Some(recovered) = &process.recovered else {
            // It died before it read the journal: what it acknowledged is nothing.
            continue;
        };
        let recovered: Vec<String> = recovered.iter().map(json).collect();
        if let Some(lost) = first_lost(&acknowledged, &recovered) {
            breach(
                Breach::AcknowledgedLost,
                format!(
                    "process {number} recovered {} record(s) after {} were acknowledged; record {lost} is {} instead of {}",
                    recovered.len(),
                    acknowledged.len(),
                    recovered
                        .get(lost)
                        .map_or("missing".to_owned(), |record| short(record)),
                    short(&acknowledged[lost]),
                ),
            );
            return;
        }
        acknowledged = recovered;
        acknowledged.extend(process.acknowledged.iter().map(json));
    }
    if execution.failure.is_none() {
        let last: Vec<String> = execution.journal.iter().map(json).collect();
        if let Some(lost) = first_lost(&acknowledged, &last) {
            breach(
                Breach::FinalJournalDiffers,
                format!(
                    "the session's journal lost acknowledged record {lost}: {}",
                    short(&acknowledged[lost])
                ),
            );
            return;
        }
    }
    if let (None, Some((reopened, _))) = (&execution.failure, &execution.reopened) {
        let reopened: Vec<String> = reopened.iter().map(json).collect();
        if let Some(lost) = first_lost(&acknowledged, &reopened) {
            breach(
                Breach::LostAfterPowerLoss,
                format!(
                    "after the session's end and a power loss, the store lost acknowledged record {lost}: {}",
                    short(&acknowledged[lost])
                ),
            );
            return;
        }
    }
    let mut asked: BTreeMap<(u32, u32), &Vec<Message>> = BTreeMap::new();
    for request in &execution.requests {
        let first = asked
            .entry((request.run, request.turn))
            .or_insert(&request.transcript);
        if **first != request.transcript {
            let text = |messages: &Vec<Message>| {
                short(&serde_json::to_string(messages).unwrap_or_default())
            };
            breach(
                Breach::ReplyAskedAgain,
                format!(
                    "turn {} of run {} was asked again in process {} with another transcript: {} instead of {}",
                    request.turn,
                    request.run,
                    request.process,
                    text(&request.transcript),
                    text(first),
                ),
            );
            return;
        }
    }
}

/// The first position where `recovered` does not hold what was `acknowledged`.
fn first_lost(acknowledged: &[String], recovered: &[String]) -> Option<usize> {
    (0..acknowledged.len()).find(|&at| recovered.get(at) != Some(&acknowledged[at]))
}
