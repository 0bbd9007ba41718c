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

/// Checks I16: every process recovers what was acknowledged before it, the journal at the
/// end and after one more power loss holds it too, and no reply the store acknowledged is
/// asked for again with another transcript.
pub fn check(check: &DurableCheck<'_>, breaches: &mut Vec<DurableBreach>) {
    let execution = check.crashed;
    if let Some(failure) = &execution.failure
        && failure.starts_with("the store did not reopen")
    {
        breaches.push(DurableBreach {
            breach: Breach::StoreNotReopened,
            message: failure.clone(),
        });
    }
    let found = match acknowledged(check) {
        Ok(acknowledged) => kept(check, &acknowledged).or_else(|| asked_once(check)),
        Err(lost) => Some(lost),
    };
    breaches.extend(found);
}

/// What was acknowledged over every process, each process's recovered journal checked
/// against what came before it.
fn acknowledged(check: &DurableCheck<'_>) -> Result<Vec<String>, DurableBreach> {
    let mut acknowledged: Vec<String> = Vec::new();
    for (number, process) in check.crashed.processes.iter().enumerate() {
        let Some(recovered) = &process.recovered else {
            // It died before it read the journal: what it acknowledged is nothing.
            continue;
        };
        let recovered: Vec<String> = recovered.iter().map(json).collect();
        if let Some(lost) = first_lost(&acknowledged, &recovered) {
            return Err(DurableBreach {
                breach: Breach::AcknowledgedLost,
                message: format!(
                    "process {number} recovered {} record(s) after {} were acknowledged; record {lost} is {} instead of {}",
                    recovered.len(),
                    acknowledged.len(),
                    recovered
                        .get(lost)
                        .map_or("missing".to_owned(), |record| short(record)),
                    short(&acknowledged[lost]),
                ),
            });
        }
        acknowledged = recovered;
        acknowledged.extend(process.acknowledged.iter().map(json));
    }
    Ok(acknowledged)
}

/// The journal at the end, and the store after one more power loss, keep `acknowledged`.
fn kept(check: &DurableCheck<'_>, acknowledged: &[String]) -> Option<DurableBreach> {
    let execution = check.crashed;
    if execution.failure.is_some() {
        return None;
    }
    let last: Vec<String> = execution.journal.iter().map(json).collect();
    if let Some(lost) = first_lost(acknowledged, &last) {
        return Some(DurableBreach {
            breach: Breach::FinalJournalDiffers,
            message: format!(
                "the session's journal lost acknowledged record {lost}: {}",
                short(&acknowledged[lost])
            ),
        });
    }
    let (reopened, _) = execution.reopened.as_ref()?;
    let reopened: Vec<String> = reopened.iter().map(json).collect();
    let lost = first_lost(acknowledged, &reopened)?;
    Some(DurableBreach {
        breach: Breach::LostAfterPowerLoss,
        message: format!(
            "after the session's end and a power loss, the store lost acknowledged record {lost}: {}",
            short(&acknowledged[lost])
        ),
    })
}

/// Each turn of each run is asked with one transcript: a reply asked for again (R33) is asked
/// with the same one.
fn asked_once(check: &DurableCheck<'_>) -> Option<DurableBreach> {
    let mut asked: BTreeMap<(u32, u32), &Vec<Message>> = BTreeMap::new();
    for request in &check.crashed.requests {
        let first = asked
            .entry((request.run, request.turn))
            .or_insert(&request.transcript);
        if **first != request.transcript {
            let text = |messages: &Vec<Message>| {
                short(&serde_json::to_string(messages).unwrap_or_default())
            };
            return Some(DurableBreach {
                breach: Breach::ReplyAskedAgain,
                message: format!(
                    "turn {} of run {} was asked again in process {} with another transcript: {} instead of {}",
                    request.turn,
                    request.run,
                    request.process,
                    text(&request.transcript),
                    text(first),
                ),
            });
        }
    }
    None
}

/// The first position where `recovered` does not hold what was `acknowledged`.
fn first_lost(acknowledged: &[String], recovered: &[String]) -> Option<usize> {
    (0..acknowledged.len()).find(|&at| recovered.get(at) != Some(&acknowledged[at]))
}
