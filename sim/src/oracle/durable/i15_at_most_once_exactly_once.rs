//! I15. At most once, exactly once: no chart change is applied twice, whatever the crashes; a
//! body of R32 starts at most once per call.
//!
//! Exactly once (R31): the plan's writes are not idempotent (each `drawing_create` is a new
//! drawing), and a write cut before its commit is as if its body never ran, so the chart the
//! session ends with after every crash and resume is the chart it ends with without them,
//! value for value, in memory and as the store holds it after one more power loss. At most once (R32): each call of `code_interpreter`, named by its run and
//! its id (unique in a plan), has at most one body start over every process.

use std::collections::BTreeMap;

use super::{DurableBreach, DurableCheck, OUTSIDE_EFFECT_TOOLS, short};
use crate::oracle::Breach;

/// Checks I15.
pub fn check(check: &DurableCheck<'_>, breaches: &mut Vec<DurableBreach>) {
    let mut breach = |breach: Breach, message: String| {
        breaches.push(DurableBreach { breach, message });
    };
    if check.crashed.failure.is_none() && check.crashed.chart != check.reference.chart {
        let drawings = |chart: &Option<ward_core::chart::ChartState>| {
            chart.as_ref().map_or(0, |chart| chart.drawings.len())
        };
        let value = |chart: &Option<ward_core::chart::ChartState>| {
            short(&serde_json::to_string(chart).unwrap_or_default())
        };
        breach(
            Breach::ChartChangedTwice,
            format!(
                "after {} crash(es) the chart holds {} drawing(s), {} without crashes: {} instead of {}",
                check.crashes(),
                drawings(&check.crashed.chart),
                drawings(&check.reference.chart),
                value(&check.crashed.chart),
                value(&check.reference.chart),
            ),
        );
    }
    // What the store holds at the end, after one more power loss: the chart committed last.
    let reopened = |execution: &crate::crash::Execution| {
        execution.reopened.as_ref().map(|(_, chart)| chart.clone())
    };
    if check.crashed.failure.is_none() && reopened(check.crashed) != reopened(check.reference) {
        breach(
            Breach::CommittedChartDiffers,
            format!(
                "after {} crash(es) the store's committed chart differs from the one without them: {} instead of {}",
                check.crashes(),
                short(&serde_json::to_string(&reopened(check.crashed)).unwrap_or_default()),
                short(&serde_json::to_string(&reopened(check.reference)).unwrap_or_default()),
            ),
        );
    }
    let mut starts: BTreeMap<(u32, &str), usize> = BTreeMap::new();
    for start in &check.crashed.starts {
        if OUTSIDE_EFFECT_TOOLS.contains(&start.tool.as_str()) {
            *starts
                .entry((start.run, start.call_id.as_str()))
                .or_default() += 1;
        }
    }
    if let Some(((run, call_id), count)) = starts.into_iter().find(|(_, count)| *count > 1) {
        breach(
            Breach::OutsideEffectTwice,
            format!(
                "the body of code_interpreter call {call_id} of run {run} started {count} times"
            ),
        );
    }
}
