//! I13. What is allowed is allowed: a non-read-only run offers every registered tool that is
//! not switched off, a read-only run every such read-only tool; a call with a valid id and
//! valid input to an offered tool reaches its body; a run within its limits whose provider
//! stops calling tools ends `run.completed`.
//!
//! The other invariants catch a runtime that does too much; this one catches a runtime that
//! refuses what R4, R11–R13, R3 and R16 allow. The offer is what the provider receives and
//! what `run.started` announces (with the run's read-only flag, R11) to the event stream's
//! readers: both must be what the policy allows. A valid call may still be aborted when the run
//! was stopped or hit its turn limit (R19, R20).

use ward_core::envelope::ToolResult;
use ward_core::events::EventKind;

use super::{At, Breach, Findings, Invariant, RunCheck};

pub(super) fn check(run: &RunCheck<'_>, findings: &mut Findings<'_>) {
    let view = run.view;
    if offer_differs(run, findings) {
        return;
    }
    let excused = view.was_stopped() || view.hit_turn_limit();
    for (batch, index, fact) in run.calls() {
        if !(fact.id_ok
            && fact.within_cap
            && fact.offered
            && fact.valid_input
            && fact.clean_payload)
        {
            continue;
        }
        findings.arm(Invariant::I13);
        let code = RunCheck::result_of(batch, index).and_then(ToolResult::error_code);
        if !(view.body_ran(batch, index) || (code == Some("ABORTED") && excused)) {
            let call = &batch.calls[index];
            let finished = batch.finished_of(index).count();
            let explanation = match code {
                _ if finished == 0 => format!(
                    "a valid call to offered tool {} never reached its body, and got no tool.finished event: R23 gives every call one, ABORTED when a stop keeps its body from running (R20)",
                    call.name
                ),
                None => format!(
                    "a valid call to offered tool {} never reached its body, and got {finished} tool.finished events where R23 gives one",
                    call.name
                ),
                Some("ABORTED") => format!(
                    "a valid call to offered tool {} never reached its body: it got ABORTED, but the run was neither stopped nor at its turn limit",
                    call.name
                ),
                Some(code) => format!(
                    "a valid call to offered tool {} never reached its body: it got {code}",
                    call.name
                ),
            };
            let at = At::Call(batch.turn, &call.id);
            return findings.report(Breach::AllowedCallRefused, at, explanation);
        }
    }
    if let Some(last) = view.replies.last()
        && last.error.is_none()
        && last.calls.is_empty()
    {
        findings.arm(Invariant::I13);
        let completed = matches!(
            view.terminal().map(|event| &event.kind),
            Some(EventKind::RunCompleted { .. })
        );
        if !completed {
            let explanation =
                "the provider stopped calling tools but the run did not end run.completed"
                    .to_owned();
            findings.report(Breach::NotCompleted, At::Turn(last.turn), explanation);
        }
    }
}

/// R4 and R11–R13 for the offer: what `run.started` announces and each tool list the provider
/// receives are what the policy allows, in the registry's order (R4). Reports the first
/// difference; `true` when it did.
fn offer_differs(run: &RunCheck<'_>, findings: &mut Findings<'_>) -> bool {
    let view = run.view;
    let announced = view.events.iter().find_map(|event| match &event.kind {
        EventKind::RunStarted { read_only, tools } => Some((*read_only, tools)),
        _ => None,
    });
    if let Some((read_only, tools)) = announced {
        findings.arm(Invariant::I13);
        let offered: Vec<&str> = tools.iter().map(|name| &**name).collect();
        if read_only != run.script.read_only {
            let explanation = format!(
                "run.started announces read-only {read_only}; the run is read-only {}",
                run.script.read_only
            );
            findings.report(Breach::OfferDiffers, At::Run, explanation);
            return true;
        }
        if let Some(difference) = difference(&offered, &run.expected_offer) {
            let explanation = format!("run.started announces {difference}");
            findings.report(Breach::OfferDiffers, At::Run, explanation);
            return true;
        }
    }
    for request in view.new_offers() {
        findings.arm(Invariant::I13);
        let offered: Vec<&str> = request.tools.iter().map(|name| &**name).collect();
        if let Some(difference) = difference(&offered, &run.expected_offer) {
            let explanation = format!("the provider is offered {difference}");
            findings.report(Breach::OfferDiffers, At::Turn(request.turn), explanation);
            return true;
        }
    }
    false
}

/// How `offered` differs from `expected`, the allowed tools in registration order: a tool
/// missing, one too many, or the first place where the order differs.
fn difference(offered: &[&str], expected: &[&str]) -> Option<String> {
    if offered == expected {
        return None;
    }
    let missing: Vec<&&str> = expected
        .iter()
        .filter(|name| !offered.contains(name))
        .collect();
    let extra: Vec<&&str> = offered
        .iter()
        .filter(|name| !expected.contains(name))
        .collect();
    Some(
        if !missing.is_empty() || !extra.is_empty() || offered.len() != expected.len() {
            format!(
                "{} tools where the policy allows {}: missing {missing:?}, not allowed or repeated {extra:?}",
                offered.len(),
                expected.len()
            )
        } else {
            let at = offered
                .iter()
                .zip(expected)
                .position(|(offered, expected)| offered != expected)
                .unwrap_or(0);
            format!(
                "the allowed tools out of registration order (R4): {} at position {at}, where the registry has {}",
                offered[at], expected[at]
            )
        },
    )
}
