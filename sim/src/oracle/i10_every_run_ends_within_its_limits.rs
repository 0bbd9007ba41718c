//! I10. Every run ends (exactly one terminal event) within its turn limit and deadline; no
//! tool body starts after cancellation, failure or the end of the run.
//!
//! R19 and R20: at most `turns_max` batches run; the inactivity deadline (reset by every
//! provider reply and every finished call, paused while `ask_user` waits) ends the run; a
//! cancelled, failed or timed-out run starts no body afterwards, lets a write already running
//! complete, and ends only after every call has its result. The limits are the script's,
//! missing ones from the oracle's own table of the SPEC's defaults. The check is exact (SPEC
//! §9): a run that fails `DEADLINE_EXCEEDED` before its deadline is due is refused too.

use ward_core::events::EventKind;

use super::{At, Breach, Findings, Invariant, RunCheck};
use crate::catalogue;

pub(super) fn check(run: &RunCheck<'_>, findings: &mut Findings<'_>) {
    if is_armed(run) {
        findings.arm(Invariant::I10);
    }
    let found = ends_once_within_turns(run).or_else(|| stops_in_time(run));
    if let Some((breach, at, explanation)) = found {
        findings.report(breach, at, explanation);
    }
}

/// A violation found: which check, where, and the explanation.
type Found<'a> = Option<(Breach, At<'a>, String)>;

/// Whether the run is one I10 is about: cancelled, failed or stopped, or scripted past its
/// turn limit.
fn is_armed(run: &RunCheck<'_>) -> bool {
    let view = run.view;
    let call_turns = run
        .script
        .turns
        .iter()
        .filter(|turn| !turn.calls.is_empty())
        .count();
    let stopped_or_failed = matches!(
        view.terminal().map(|event| &event.kind),
        Some(EventKind::RunFailed { .. } | EventKind::RunCancelled)
    );
    view.cancel_at.is_some() || stopped_or_failed || call_turns > run.limits.turns_max as usize
}

/// Exactly one terminal event, the last, at most `turns_max` batches run, and
/// `TOOL_LOOP_LIMIT` only once a reply past them carries calls (R19).
fn ends_once_within_turns<'a>(run: &RunCheck<'a>) -> Found<'a> {
    let view = run.view;
    let terminals = view
        .events
        .iter()
        .filter(|event| event.kind.is_terminal())
        .count();
    if terminals != 1 || view.terminal().is_none() {
        let explanation =
            format!("the run has {terminals} terminal events, and the last event is not one");
        return Some((Breach::TerminalEvents, At::Run, explanation));
    }
    let batches_run = view
        .batches
        .iter()
        .filter(|batch| !batch.started.is_empty())
        .count();
    let turns_max = run.limits.turns_max;
    if batches_run > turns_max as usize {
        let explanation = format!("{batches_run} batches ran with turns_max {turns_max}");
        return Some((Breach::TooManyBatches, At::Run, explanation));
    }
    // R19 names the moment: a reply with calls after `turns_max` batches, not the last batch.
    let replies_with_calls = view.batches.len();
    (view.hit_turn_limit() && replies_with_calls <= turns_max as usize).then(|| {
        let explanation = format!(
            "the run failed TOOL_LOOP_LIMIT after {replies_with_calls} replies with calls, with turns_max {turns_max}: no further reply with calls came"
        );
        (Breach::LoopLimitEarly, At::Run, explanation)
    })
}

/// R19 and R20: a run fails by its deadline only once it is due; after a stop no body starts
/// and the provider is not asked again; a run past its deadline does not complete; and it
/// ends once the writes running at the stop have.
fn stops_in_time<'a>(run: &RunCheck<'a>) -> Found<'a> {
    let view = run.view;
    let end = view.end_ms();
    if let Some(found) = deadline_early(run, end) {
        return Some(found);
    }
    // Due at the instant a wait for the user starts, the deadline may fire or the wait pause
    // it first: the stop checks take the later reading, the early-deadline check either.
    let deadline = deadline_instant(run, Tie::PauseFirst);
    // The run stops at a cancel, at its inactivity deadline, or at its end (R20).
    let stop = [view.cancel_at, deadline]
        .into_iter()
        .flatten()
        .fold(end, u64::min);
    if let Some(found) = started_after(run, stop) {
        return Some(found);
    }
    if stop == end {
        return None;
    }
    let by_deadline = deadline == Some(stop) && view.cancel_at.is_none_or(|cancel| cancel > stop);
    ended_late(run, stop, by_deadline)
}

/// A run that failed `DEADLINE_EXCEEDED` at `end` before its deadline (at its earliest
/// reading) was due.
fn deadline_early<'a>(run: &RunCheck<'a>, end: u64) -> Found<'a> {
    let failed_by_deadline = matches!(
        run.view.terminal().map(|event| &event.kind),
        Some(EventKind::RunFailed { error }) if error.code == "DEADLINE_EXCEEDED"
    );
    if !failed_by_deadline {
        return None;
    }
    let deadline_earliest = deadline_instant(run, Tie::DeadlineFirst);
    deadline_earliest
        .is_none_or(|deadline| deadline > end)
        .then(|| {
            let due =
                deadline_earliest.map_or("never due".to_owned(), |at| format!("due at {at} ms"));
            let explanation = format!(
                "the run failed DEADLINE_EXCEEDED at {end} ms, but its {} ms inactivity deadline was {due}",
                run.limits.inactivity_timeout_ms
            );
            (Breach::DeadlineEarly, At::Run, explanation)
        })
}

/// A body started, or the provider was asked, after the run stopped at `stop`.
fn started_after<'a>(run: &RunCheck<'a>, stop: u64) -> Found<'a> {
    let view = run.view;
    if let Some(body) = view.bodies.iter().find(|body| body.start_ms > stop) {
        let turn = view.batches[body.batch].turn;
        let explanation = format!(
            "the body of {} started at {} ms, after the run stopped at {stop} ms",
            body.tool, body.start_ms
        );
        return Some((
            Breach::BodyAfterStop,
            At::Call(turn, body.call_id),
            explanation,
        ));
    }
    let request = view.requests.iter().find(|request| request.at_ms > stop)?;
    let explanation = format!(
        "the provider was asked again at {} ms, after the run stopped at {stop} ms",
        request.at_ms
    );
    Some((
        Breach::RequestAfterStop,
        At::Turn(request.turn),
        explanation,
    ))
}

/// A run stopped at `stop` (before its end; `by_deadline` when its deadline stopped it) that
/// completed past its deadline, or ended after the writes running at the stop.
fn ended_late<'a>(run: &RunCheck<'a>, stop: u64, by_deadline: bool) -> Found<'a> {
    let view = run.view;
    let end = view.end_ms();
    let timeout_ms = run.limits.inactivity_timeout_ms;
    let completed = matches!(
        view.terminal().map(|event| &event.kind),
        Some(EventKind::RunCompleted { .. })
    );
    if by_deadline && completed {
        let explanation = format!(
            "its {timeout_ms} ms inactivity deadline passed at {stop} ms, yet the run completed"
        );
        return Some((Breach::CompletedPastDeadline, At::Run, explanation));
    }
    // Once the run stops, a write already running completes; nothing else may keep it going.
    let writes_end = view
        .bodies
        .iter()
        .filter(|body| body.start_ms <= stop)
        .filter(|body| catalogue::entry(body.tool).is_some_and(|entry| !entry.read_only))
        .filter_map(|body| body.end_ms)
        .max()
        .unwrap_or(0);
    let allowed_end = stop.max(writes_end);
    (end > allowed_end).then(|| {
        let why = if by_deadline {
            format!("its {timeout_ms} ms inactivity deadline passed at {stop} ms")
        } else {
            format!("it was cancelled at {stop} ms")
        };
        let explanation = format!(
            "the run ended at {end} ms, but {why} and the writes running then ended by {allowed_end} ms"
        );
        (Breach::EndedLate, At::Run, explanation)
    })
}

/// The instant the inactivity deadline passed, if it did: the first moment at which
/// `inactivity_timeout_ms` went by without a provider reply or a finished call, not counting
/// time spent waiting for the user (R19). Due at the same instant as a reply or a finished
/// call, either may come first, so it counts only before them; due at the run's end, it
/// counts.
fn deadline_instant(run: &RunCheck<'_>, tie: Tie) -> Option<u64> {
    let view = run.view;
    let timeout = run.limits.inactivity_timeout_ms;
    let mut activity: Vec<u64> = vec![0];
    activity.extend(
        view.replies
            .iter()
            .filter(|reply| reply.error.is_none())
            .map(|reply| reply.at_ms),
    );
    activity.extend(
        view.batches
            .iter()
            .flat_map(|batch| batch.finished.iter().map(|finished| finished.at_ms)),
    );
    activity.push(view.end_ms());
    activity.sort_unstable();
    let mut waiting: Vec<(u64, u64)> = view
        .bodies
        .iter()
        .filter(|body| body.tool == "ask_user")
        .map(|body| {
            // The body waits for the user once its own latency has passed.
            let latency_ms = run
                .script
                .tools
                .get(body.tool)
                .map_or(0, |behaviour| behaviour.latency_ms);
            let end_ms = body.end_ms.unwrap_or(view.end_ms());
            (body.start_ms.saturating_add(latency_ms).min(end_ms), end_ms)
        })
        .collect();
    waiting.sort_unstable();
    let end = view.end_ms();
    activity.windows(2).find_map(|pair| {
        // Walk the window from its start, skipping the waits, until the timeout is used.
        let (from, to) = (pair[0], pair[1]);
        let mut cursor = from;
        let mut remaining = timeout;
        for &(start, end) in &waiting {
            let (start, end) = (start.max(cursor), end.min(to));
            if start >= end {
                continue;
            }
            if start - cursor > remaining
                || (start - cursor == remaining && tie == Tie::DeadlineFirst)
            {
                break;
            }
            remaining -= start - cursor;
            cursor = end;
        }
        let deadline = cursor + remaining;
        (deadline < to || (deadline == to && to == end)).then_some(deadline)
    })
}

/// Which comes first when the deadline is due at the instant a wait for the user starts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tie {
    PauseFirst,
    DeadlineFirst,
}
