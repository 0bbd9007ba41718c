//! The durability profile (SPEC §17 P11): for each kind of crash point, what recovery did,
//! read from the trace of an execution with crashes as every durable check reads it
//! ([`Story`]). It describes a runtime; it judges nothing (I15–I19 do).
//!
//! A crash's point is what was under way in the process it killed, the latest first:
//!
//! - a body that had started and not been answered: **in a read body**, **in a write body**
//!   or **in an outside-effect body** (`code_interpreter`, R32), by the tool's row of the
//!   SPEC §8 table;
//! - else a request not yet answered: **in a model request**;
//! - else, the run not yet asking (no request of the run before the crash): **at the run's
//!   start**; the run already reported: **after the run's end**; otherwise **between a result
//!   and the next request**.
//!
//! What recovery did, for a body: its call's body **ran again** (a later process started it),
//! or got **`OUTCOME_UNKNOWN`**, or got a result **without running again**, or **no result**;
//! for a request: the turn was **asked again** or **not asked again**; otherwise the run
//! **went on** (a later request or its report), **ended**, or was **not taken up**.

use std::collections::BTreeMap;

use super::story::{Crashed, Story};
use crate::catalogue;

/// Counts by crash point, then by what recovery did.
pub type Profile = BTreeMap<String, BTreeMap<String, u64>>;

/// The profile of one execution, read as its `story`.
pub fn of(story: &Story) -> Profile {
    let mut profile = Profile::new();
    for (process, crash) in story.crashes.iter().enumerate() {
        let (point, recovery) = classify(story, process, crash);
        *profile
            .entry(point.to_owned())
            .or_default()
            .entry(recovery.to_owned())
            .or_default() += 1;
    }
    profile
}

/// The point of the crash that killed `process`, and what recovery did.
fn classify(story: &Story, process: usize, crash: &Crashed) -> (&'static str, &'static str) {
    let open_body = (story.started.iter().rev())
        .filter(|start| start.process == process && start.run == crash.run)
        .find(|start| {
            start
                .delivered
                .is_none_or(|delivered| delivered > crash.tick)
        });
    if let Some(body) = open_body {
        return (
            body_point(&body.tool),
            body_recovery(story, crash, &body.call_id),
        );
    }
    let last_request =
        (story.asked.iter().rev()).find(|asked| asked.process == process && asked.run == crash.run);
    let answered = last_request.is_some_and(|asked| {
        (story.replies.iter()).any(|reply| {
            reply.run == crash.run && reply.tick > asked.tick && reply.tick < crash.tick
        }) || story.appended.iter().any(|appended| {
            appended.run == crash.run && appended.tick > asked.tick && appended.tick < crash.tick
        })
    });
    if let (Some(asked), false) = (last_request, answered) {
        let again = (story.asked.iter()).any(|later| {
            later.run == crash.run && later.tick > crash.tick && later.turn == asked.turn
        });
        let recovery = if again {
            "asked again"
        } else {
            "not asked again"
        };
        return ("in a model request", recovery);
    }
    let began = (story.asked.iter()).any(|asked| asked.run == crash.run && asked.tick < crash.tick);
    let ended_before = story
        .reported
        .get(&crash.run)
        .is_some_and(|&tick| tick < crash.tick);
    let point = match (began, ended_before) {
        (_, true) => "after the run's end",
        (false, false) => "at the run's start",
        (true, false) => "between a result and the next request",
    };
    (point, run_recovery(story, crash))
}

fn body_point(tool: &str) -> &'static str {
    match catalogue::entry(tool) {
        Some(entry) if entry.read_only => "in a read body",
        Some(entry) if entry.opt_in => "in an outside-effect body",
        _ => "in a write body",
    }
}

/// What became of the call `call_id` whose body the crash cut.
fn body_recovery(story: &Story, crash: &Crashed, call_id: &str) -> &'static str {
    let ran_again = (story.started.iter()).any(|start| {
        start.tick > crash.tick && start.run == crash.run && *start.call_id == *call_id
    });
    if ran_again {
        return "ran again";
    }
    let result = story
        .appended
        .iter()
        .find_map(|appended| match &*appended.message {
            ward_core::session::Message::Tool {
                call_id: id,
                result,
                ..
            } if appended.tick > crash.tick && appended.run == crash.run && **id == *call_id => {
                Some(result)
            }
            _ => None,
        });
    match result.map(|result| result.error_code() == Some("OUTCOME_UNKNOWN")) {
        Some(true) => "OUTCOME_UNKNOWN",
        Some(false) => "result without running again",
        None => "no result",
    }
}

/// What became of the run the crash cut between its steps.
fn run_recovery(story: &Story, crash: &Crashed) -> &'static str {
    let went_on =
        (story.asked.iter()).any(|asked| asked.run == crash.run && asked.tick > crash.tick);
    let ended = story
        .reported
        .get(&crash.run)
        .is_some_and(|&tick| tick > crash.tick);
    match (went_on, ended) {
        (true, _) => "went on",
        (false, true) => "ended",
        (false, false) => "not taken up",
    }
}
