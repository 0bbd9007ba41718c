//! I9. `stateChanged` tells the truth; failures leave the state unchanged; undo after a change
//! restores the state before it.
//!
//! SPEC §4: on success `stateChanged` is true exactly when the chart differs after the call; a
//! failed call never changes state (a write that fails half-way is rolled back). SPEC §8:
//! every change is one undo step, and undo restores the state exactly. The simulator takes
//! the chart's public snapshot at every `tool.started` and `tool.finished` and undoes every
//! change at the end of each session.
//!
//! A call's snapshots are attributed to it only when no other body of its batch ran while it
//! did (parallel reads never change the chart, but a write beside them would). The check is
//! armed by a call to a registered destructive tool: only those may change the chart.

use ward_core::chart::ChartState;

use super::{At, Breach, Findings, Invariant, RunCheck};
use crate::view::{BatchView, RunView};

pub(super) fn check(run: &RunCheck<'_>, findings: &mut Findings<'_>) {
    for (batch, index, fact) in run.calls() {
        let Some(result) = RunCheck::result_of(batch, index) else {
            continue;
        };
        let Some((before, after)) = run.states_around(batch, index) else {
            continue;
        };
        if overlapped(run.view, batch, index) {
            continue;
        }
        let call = &batch.calls[index];
        if fact.destructive() {
            findings.arm(Invariant::I9);
        }
        let at = At::Call(batch.turn, &call.id);
        let changed = before != after;
        if result.is_success() && result.state_changed != changed {
            let explanation = format!(
                "{} reported stateChanged {} but the chart {}",
                call.name,
                result.state_changed,
                if changed { "changed" } else { "did not change" }
            );
            return findings.report(Breach::StateChangedUntrue, at, explanation);
        }
        if !result.is_success() && (changed || result.state_changed) {
            let explanation = format!(
                "{} failed with {} but the chart changed",
                call.name,
                result.error_code().unwrap_or("?")
            );
            return findings.report(Breach::FailureChangedState, at, explanation);
        }
    }
}

/// Whether another body of the batch ran while call `index` was between its `tool.started`
/// and `tool.finished` (then the snapshots cannot be attributed to it).
fn overlapped(view: &RunView<'_>, batch: &BatchView<'_>, index: usize) -> bool {
    let bodies = || batch.bodies.iter().map(|&body| &view.bodies[body]);
    // A call without a body finished before any body of its batch ran.
    let Some(me) = bodies().find(|body| body.index == index) else {
        return false;
    };
    let my_end = me.end_ms.unwrap_or(u64::MAX);
    bodies()
        .filter(|body| body.index != index)
        .any(|other| other.start_ms <= my_end && me.start_ms <= other.end_ms.unwrap_or(u64::MAX))
}

/// One change of the chart in a session: the state before it, and the call that made it.
#[derive(Debug)]
struct Change<'a> {
    before: &'a ChartState,
    run: usize,
    turn: u32,
    call_id: String,
    tool: String,
}

/// The changes of a session so far, in order, for the undo check at its end.
#[derive(Debug, Default)]
pub(super) struct SessionChanges<'a> {
    changes: Vec<Change<'a>>,
}

impl<'a> SessionChanges<'a> {
    /// Adds the changes `run` made, in order.
    pub(super) fn record(&mut self, run: &RunCheck<'a>) {
        for (batch, index, _) in run.calls() {
            let Some((before, after)) = run.states_around(batch, index) else {
                continue;
            };
            if before != after {
                let call = &batch.calls[index];
                self.changes.push(Change {
                    before,
                    run: run.view.trace.run,
                    turn: batch.turn,
                    call_id: call.id.clone(),
                    tool: call.name.clone(),
                });
            }
        }
    }
}

/// The undo half of I9: undoing at the end of a session restores, from the last change back,
/// the state before each change (at most the undo depth of them). The states undo restored
/// are recorded on the session's last run.
pub(super) fn check_undo(
    view: &RunView<'_>,
    changes: &SessionChanges<'_>,
    findings: &mut Findings<'_>,
) {
    let steps = view.undone.iter().zip(changes.changes.iter().rev());
    for (step, (undone, change)) in steps.enumerate() {
        if **undone != *change.before {
            let explanation = format!(
                "undo step {} of {} did not restore the state before the change {} made (run {} turn {} call {:?})",
                step + 1,
                view.undone.len(),
                change.tool,
                change.run,
                change.turn,
                change.call_id
            );
            return findings.report(Breach::UndoDiffers, At::Run, explanation);
        }
    }
}
