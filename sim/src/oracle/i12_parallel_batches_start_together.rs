//! I12. In a batch without a sequential tool, every body starts at the batch's start instant
//! (checked when at least two bodies have latency ≥ 1 ms).
//!
//! R17: calls of a parallel batch all start at the batch's start instant. With bodies that
//! take no virtual time, a runtime that ran them one at a time would look the same, so the
//! check waits for two slow bodies.

use super::{At, Breach, Findings, Invariant, RunCheck};
use crate::catalogue::{PARALLEL_SLOW_BODIES_MIN, PARALLEL_SLOW_LATENCY_MS_MIN};

pub(super) fn check(run: &RunCheck<'_>, findings: &mut Findings<'_>) {
    let view = run.view;
    for (number, batch) in view.batches.iter().enumerate() {
        let slow = batch
            .bodies
            .iter()
            .filter(|&&body| {
                run.script
                    .tools
                    .get(view.bodies[body].tool)
                    .is_some_and(|behaviour| behaviour.latency_ms >= PARALLEL_SLOW_LATENCY_MS_MIN)
            })
            .count();
        if run.is_sequential(number) || slow < PARALLEL_SLOW_BODIES_MIN {
            continue;
        }
        findings.arm(Invariant::I12);
        if let Some(late) = batch
            .bodies
            .iter()
            .map(|&body| &view.bodies[body])
            .find(|body| body.start_ms != batch.at_ms)
        {
            let explanation = format!(
                "in a parallel batch starting at {} ms, call {} started at {} ms",
                batch.at_ms, late.index, late.start_ms
            );
            let at = At::Call(batch.turn, late.call_id);
            return findings.report(Breach::ParallelStartedLate, at, explanation);
        }
    }
}
