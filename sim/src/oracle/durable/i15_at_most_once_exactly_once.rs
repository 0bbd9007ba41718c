//! I15. At most once, exactly once: no chart change is applied twice, whatever the crashes; a
//! body of R32 starts at most once per call.
//!
//! Exactly once (R31, P10): ward's chart is the world outside the runtime, and a body's change
//! is applied when ward delivers its result, so a write run again after a crash is applied
//! again (unless the runtime handed the body an idempotency key, which ward's bodies honour).
//! The plan's writes are not idempotent (each `drawing_create` is a new drawing), so the chart
//! a session ends with after every crash and resume — its last state, and every state undo
//! walks back through at the session's end — is the chart it ends with without them. At most
//! once (R32): each call of `code_interpreter`, named by its run and its id (unique in a
//! plan), has at most one body start over every process.

use std::collections::BTreeMap;

use super::{DurableBreach, DurableCheck, OUTSIDE_EFFECT_TOOLS, short};
use crate::oracle::Breach;

/// Checks I15.
pub fn check(check: &DurableCheck<'_>, breaches: &mut Vec<DurableBreach>) {
    let (before, after) = (&check.before, &check.after);
    let finished = check.crashed.failure.is_none();
    if finished && (after.chart != before.chart || after.history != before.history) {
        let drawings = |chart: &Option<std::sync::Arc<ward_core::chart::ChartState>>| {
            chart.as_ref().map_or(0, |chart| chart.drawings.len())
        };
        breaches.push(DurableBreach {
            breach: Breach::ChartChangedTwice,
            message: format!(
                "after {} crash(es) the chart holds {} drawing(s) and went through {} change(s), without crashes {} and {}: {} instead of {}",
                check.crashes(),
                drawings(&after.chart),
                after.history.len(),
                drawings(&before.chart),
                before.history.len(),
                short(&after.chart),
                short(&before.chart),
            ),
        });
    }
    let mut starts: BTreeMap<(usize, &str), usize> = BTreeMap::new();
    for start in &after.started {
        if OUTSIDE_EFFECT_TOOLS.contains(&&*start.tool) {
            *starts.entry((start.run, &start.call_id)).or_default() += 1;
        }
    }
    if let Some(((run, call_id), count)) = starts.into_iter().find(|(_, count)| *count > 1) {
        breaches.push(DurableBreach {
            breach: Breach::OutsideEffectTwice,
            message: format!(
                "the body of code_interpreter call {call_id} of run {run} started {count} times"
            ),
        });
    }
}
