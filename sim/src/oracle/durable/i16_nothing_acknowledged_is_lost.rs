//! I16. Nothing acknowledged is lost: every result and reply whose commit returned survives
//! every later crash byte for byte; the recovered transcript extends the last committed one.
//!
//! At the boundary, a commit that returned is an `append` the runtime reported. Every
//! provider request made after a crash shows a transcript that holds every message appended
//! before that crash, in order and equal value for value (the session's transcript holds its
//! earlier runs; a commit the crash cut after it was durable and before it was acknowledged
//! may stand between them). A runtime that does not
//! start again on its store after a crash has lost what it acknowledged. A turn asked again
//! (R33) is asked with the same transcript as the first time.

use std::collections::BTreeMap;
use std::sync::Arc;

use ward_core::session::Message;

use super::{DurableBreach, DurableCheck, NOT_STARTED_AGAIN, short};
use crate::oracle::Breach;

/// Checks I16: the runtime started again after each crash, each transcript shown after a
/// crash holds what was acknowledged before it, and no turn is asked twice with two
/// transcripts.
pub fn check(check: &DurableCheck<'_>, breaches: &mut Vec<DurableBreach>) {
    if let Some(failure) = &check.crashed.failure
        && failure.starts_with(NOT_STARTED_AGAIN)
    {
        breaches.push(DurableBreach {
            breach: Breach::StoreNotReopened,
            message: failure.clone(),
        });
    }
    breaches.extend(kept(check).or_else(|| asked_once(check)));
}

/// Each request after a crash shows, in order, every message acknowledged before the crash.
fn kept(check: &DurableCheck<'_>) -> Option<DurableBreach> {
    let after = &check.after;
    after.asked.iter().find_map(|asked| {
        let crash = after.crashes.get(asked.process.checked_sub(1)?)?;
        let acknowledged = &after.appended[..crash.after];
        let mut shown = asked.transcript.iter();
        let (at, lost) = (acknowledged.iter().enumerate())
            .find(|(_, appended)| !shown.any(|message| **message == *appended.message))?;
        Some(DurableBreach {
            breach: Breach::AcknowledgedLost,
            message: format!(
                "turn {} of run {} was asked after {} crash(es) with {} message(s), without message {at} of the {} acknowledged before: {}",
                asked.turn,
                asked.run,
                asked.process,
                asked.transcript.len(),
                acknowledged.len(),
                short(&lost.message),
            ),
        })
    })
}

/// Each turn of each run is asked with one transcript: a reply asked for again (R33) is
/// asked with the same one.
fn asked_once(check: &DurableCheck<'_>) -> Option<DurableBreach> {
    let mut asked: BTreeMap<(usize, usize), &Vec<Arc<Message>>> = BTreeMap::new();
    check.after.asked.iter().find_map(|request| {
        let first = asked
            .entry((request.run, request.turn))
            .or_insert(&request.transcript);
        (**first != request.transcript).then(|| DurableBreach {
            breach: Breach::ReplyAskedAgain,
            message: format!(
                "turn {} of run {} was asked again in process {} with another transcript: {} instead of {}",
                request.turn,
                request.run,
                request.process,
                short(&request.transcript),
                short(*first),
            ),
        })
    })
}
