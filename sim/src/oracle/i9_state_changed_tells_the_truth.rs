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
    /// Adds the changes `run` made, in order: each snapshot that differs from the one before
    /// it in the run is one change, made by the call whose event it was taken at. The run's
    /// snapshots, not each call's own pair, so that a change is counted once when the calls
    /// of a parallel batch overlap (a call whose `tool.finished` comes after another call's
    /// change would otherwise count that change as its own too).
    pub(super) fn record(&mut self, run: &RunCheck<'a>) {
        let mut snapshots = run.view.snapshots.in_order();
        let Some((_, mut before)) = snapshots.next() else {
            return;
        };
        for (seq, state) in snapshots {
            if state != before {
                let (turn, call) = maker(run, seq).unwrap_or((0, ("?", "?")));
                self.changes.push(Change {
                    before,
                    run: run.view.trace.run,
                    turn,
                    call_id: call.1.to_owned(),
                    tool: call.0.to_owned(),
                });
            }
            before = state;
        }
    }
}

/// The turn and the call (tool, id) whose `tool.started` or `tool.finished` is event `seq`.
fn maker<'r>(run: &'r RunCheck<'_>, seq: u64) -> Option<(u32, (&'r str, &'r str))> {
    run.calls().find_map(|(batch, index, _)| {
        let at = batch.started_of(index) == Some(seq)
            || batch.finished_of(index).any(|finished| finished.seq == seq);
        let call = &batch.calls[index];
        at.then_some((batch.turn, (call.name.as_str(), call.id.as_str())))
    })
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;
    use ward_core::chart::{ChartState, SharedChart};
    use ward_core::envelope::{ToolError, ToolResult};
    use ward_core::events::{Event, EventKind};

    use crate::oracle::Breach;
    use crate::world::Record;

    /// A parallel batch of three writes: the first changes the chart, the second fails with
    /// its `tool.finished` after the third's change, the third changes it again; then undo
    /// restored `undone`. The states are `base` with `next_id` moved on by 0, 1 and 2.
    fn judged(undone: [u64; 2]) -> Vec<Breach> {
        let base = SharedChart::new(7).snapshot();
        let state = |step: u64| {
            Arc::new(ChartState {
                next_id: base.next_id + step,
                ..base.clone()
            })
        };
        let names = ["comparison_create", "comparison_remove", "settings_update"];
        let (calls, reply) = crate::oracle::reply_calling(&names);
        let mut records = vec![reply];
        let changed = ToolResult::success(json!({}), true);
        let failed = ToolResult::failure(ToolError::internal());
        // (call, finished with, the state after the event; `None`: as before)
        let steps = [
            (0, None, Some(0)),
            (0, Some(changed.clone()), Some(1)),
            (1, None, None),
            (2, None, None),
            (2, Some(changed), Some(2)),
            (1, Some(failed), None),
        ];
        for (seq, (index, result, after)) in (0u64..).zip(steps) {
            let (call_id, name) = (calls[index].id.as_str().into(), names[index].into());
            let kind = match result {
                None => EventKind::ToolStarted {
                    index,
                    call_id,
                    name,
                },
                Some(result) => EventKind::ToolFinished {
                    index,
                    call_id,
                    name,
                    result,
                },
            };
            records.push(Record::Event(Event {
                seq,
                time_ms: 0,
                kind,
            }));
            records.push(Record::Snapshot {
                seq,
                state: after.map(state),
            });
        }
        records.extend(undone.map(|step| Record::Undo { state: state(step) }));
        crate::oracle::breaches_of_run(records)
    }

    #[test]
    fn a_change_inside_another_calls_window_is_counted_once() {
        let breaches = judged([1, 0]);
        assert!(
            !breaches.contains(&Breach::UndoDiffers),
            "undo restored the state before each change: {breaches:?}"
        );
    }

    #[test]
    fn undo_that_restores_another_state_breaks_i9() {
        assert!(judged([1, 1]).contains(&Breach::UndoDiffers));
        assert!(judged([0, 0]).contains(&Breach::UndoDiffers));
    }
}
