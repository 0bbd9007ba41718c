//! I19. A resumed run keeps every promise: I1–I14 hold across crashes and resumes.
//!
//! With the provider's script fixed per turn and bodies that take no time, a run that keeps
//! every promise behaves after a resume as it would have without the crash (R33, R34): it
//! keeps the same messages in the same order (its prompt as redacted, its replies,
//! its results — but for the results a crash fixes, which I17 checks) and ends the same way;
//! and every provider request is the reference's for its run and turn: the same system
//! prompt, offered tools and transcript (I1, I3, I13). The reference is the same plan without
//! crashes. Besides, across every process, no destructive body starts in a read-only run
//! (I2) and no run keeps more replies with calls than its turn limit allows (I10).

use std::collections::BTreeMap;

use super::story::{Asked, Story};
use super::{DurableBreach, DurableCheck, NOT_STARTED_AGAIN, changes, short};
use crate::oracle::Breach;

/// Checks I19: the session went on after each crash, a resumed read-only run ran no write,
/// no run went past its turn limit, and every request, every acknowledged message and every
/// run's end is the one the session without crashes had. Of those, the first difference
/// named is the earliest run's: its requests, then its end, then the messages it kept (a run
/// that ends otherwise changes every later run's transcript, and keeps other messages).
pub fn check(check: &DurableCheck<'_>, breaches: &mut Vec<DurableBreach>) {
    let found = went_on(check)
        .or_else(|| read_only(check))
        .or_else(|| turn_limit(check))
        .or_else(|| (0..runs(check)).find_map(|run| run_differs(check, run)));
    breaches.extend(found);
}

/// The first difference of `run` from the session without crashes: a request, its end, a
/// message it kept. None when the session stopped short after a crash (`went_on` says so).
fn run_differs(check: &DurableCheck<'_>, run: usize) -> Option<DurableBreach> {
    if check.crashed.failure.is_some() {
        return None;
    }
    requests(check, run)
        .or_else(|| ends(check, run))
        .or_else(|| appended(check, run))
}

/// The runs of both executions (the plan's and the closing one), any run asked for among them.
fn runs(check: &DurableCheck<'_>) -> usize {
    let asked = (check.after.asked.iter()).map(|request| request.run + 1);
    (check.before.kept.len().max(check.after.kept.len())).max(asked.max().unwrap_or(0))
}

fn breach(breach: Breach, message: String) -> Option<DurableBreach> {
    Some(DurableBreach { breach, message })
}

/// The session went on after every crash (a runtime that did not start again on its store
/// is I16's).
fn went_on(check: &DurableCheck<'_>) -> Option<DurableBreach> {
    let failure = check.crashed.failure.as_ref()?;
    if failure.starts_with(NOT_STARTED_AGAIN) {
        return None;
    }
    let message = format!("the session did not go on after a crash: {failure}");
    breach(Breach::SessionStopped, message)
}

/// A read-only run, resumed or not, ran no destructive body.
fn read_only(check: &DurableCheck<'_>) -> Option<DurableBreach> {
    check.after.started.iter().find_map(|start| {
        // The run after the plan's is the closing one, read-only.
        let read_only = check
            .plan
            .runs
            .get(start.run)
            .is_none_or(|run| run.read_only);
        (read_only && changes(&start.tool)).then(|| DurableBreach {
            breach: Breach::ReadOnlyLost,
            message: format!(
                "the body of destructive tool {} ran in read-only run {} (call {}, process {})",
                start.tool, start.run, start.call_id, start.process
            ),
        })
    })
}

/// No run keeps more replies with calls than its turn limit allows (one more may be
/// the reply past the limit, whose calls are refused).
fn turn_limit(check: &DurableCheck<'_>) -> Option<DurableBreach> {
    (check.plan.runs.iter().enumerate()).find_map(|(run, plan)| {
        let ran = (check.after.kept.get(run).into_iter().flatten())
            .filter(|message| {
                matches!(&***message, ward_core::session::Message::Assistant { calls, .. }
                    if !calls.is_empty())
            })
            .count();
        (ran > plan.turns_max as usize + 1).then(|| DurableBreach {
            breach: Breach::TurnLimitLost,
            message: format!(
                "run {run} kept {ran} replies with calls, past its turn limit of {}",
                plan.turns_max
            ),
        })
    })
}

/// Every request of `run` is the one the session without crashes made at that turn: the same
/// system prompt (the read-only note), the same offered tools in order (I1, I3, I13), the same
/// transcript but for the results a crash fixes.
fn requests(check: &DurableCheck<'_>, run: usize) -> Option<DurableBreach> {
    let of_run = |request: &&Asked| request.run == run;
    let mut asked: BTreeMap<usize, &Asked> = BTreeMap::new();
    for request in check.before.asked.iter().filter(of_run) {
        asked.entry(request.turn).or_insert(request);
    }
    check.after.asked.iter().filter(of_run).find_map(|request| {
        let Some(want) = asked.get(&request.turn) else {
            let message = format!(
                "run {} asked for turn {} after a crash; without crashes it never did",
                request.run, request.turn
            );
            return breach(Breach::TurnCountLost, message);
        };
        let same_transcript = want.transcript.len() == request.transcript.len()
            && (want.transcript.iter().zip(&request.transcript))
                .all(|(want, got)| check.accepts(want, got));
        let same = want.system_prompt == request.system_prompt
            && want.tools == request.tools
            && same_transcript;
        (!same).then(|| DurableBreach {
            breach: Breach::RequestDiffers,
            message: request_differs(check, request, want),
        })
    })
}

/// What differs between `request` and `want`, the first difference named.
fn request_differs(check: &DurableCheck<'_>, request: &Asked, want: &Asked) -> String {
    let at = format!(
        "turn {} of run {} (process {})",
        request.turn, request.run, request.process
    );
    if want.tools != request.tools {
        let missing: Vec<&str> = (want.tools.iter())
            .filter(|tool| !request.tools.contains(tool))
            .map(|tool| &**tool)
            .collect();
        let added: Vec<&str> = (request.tools.iter())
            .filter(|tool| !want.tools.contains(tool))
            .map(|tool| &**tool)
            .collect();
        return format!(
            "{at} was offered {} tool(s), without crashes {}: added {added:?}, missing {missing:?}",
            request.tools.len(),
            want.tools.len()
        );
    }
    if want.system_prompt != request.system_prompt {
        return format!(
            "{at} was asked with the system prompt {}; without crashes {}",
            short(&*request.system_prompt),
            short(&*want.system_prompt)
        );
    }
    let differs = (want.transcript.iter().zip(&request.transcript).enumerate())
        .find(|(_, (want, got))| !check.accepts(want, got));
    match differs {
        Some((index, (want, got))) => format!(
            "{at}: message {index} of the transcript is {}; without crashes {}",
            short(got),
            short(want)
        ),
        None => format!(
            "{at} was asked with {} message(s); without crashes {}",
            request.transcript.len(),
            want.transcript.len()
        ),
    }
}

/// `run` kept the messages it kept without crashes, but for the results a crash fixes (a
/// run's end no transcript shows may be seen only in part, `Story::end_unseen`).
fn appended<'a>(check: &'a DurableCheck<'_>, run: usize) -> Option<DurableBreach> {
    let kept = |story: &'a Story| story.kept.get(run).map_or(&[][..], Vec::as_slice);
    let (want, got) = (kept(&check.before), kept(&check.after));
    let differs =
        (want.iter().zip(got).enumerate()).find(|(_, (want, got))| !check.accepts(want, got));
    if let Some((at, (want, got))) = differs {
        let message = format!(
            "run {run}: message {at} it kept is {} after {} crash(es), {} without them",
            short(got),
            check.crashes(),
            short(want),
        );
        return breach(Breach::AppendedDiffers, message);
    }
    let unseen = check.after.end_unseen(run) && got.len() < want.len();
    (want.len() != got.len() && !unseen).then(|| DurableBreach {
        breach: Breach::AppendedCountDiffers,
        message: format!(
            "run {run} kept {} message(s) after the crashes, {} without them",
            got.len(),
            want.len()
        ),
    })
}

/// `run` ended as it did without crashes, as its entry point reported it; a run a fresh
/// runtime did not take up after a crash may end unreported (P11's "the run ended").
fn ends(check: &DurableCheck<'_>, run: usize) -> Option<DurableBreach> {
    let (want, got) = (
        check.before.reports.get(&run),
        check.after.reports.get(&run),
    );
    let unreported = got.is_none() && check.after.recovered_nothing.contains(&run);
    (want != got && !unreported).then(|| DurableBreach {
        breach: Breach::RunEndDiffers,
        message: format!(
            "run {run} ended with {} after the crashes, {} without them",
            got.map_or("no report", String::as_str),
            want.map_or("no report", String::as_str),
        ),
    })
}
