//! I7. In a batch holding a sequential tool, body intervals never overlap and start in the
//! order sent; two writes never overlap anywhere.
//!
//! R17: a batch that names a registered sequential tool (by the oracle's own table, looking
//! at the batch as the model sent it) runs one call at a time, in order, each finishing
//! before the next starts. R2 makes every write sequential, so two writes never overlap.

use super::{At, Breach, Findings, Invariant, RunCheck};
use crate::catalogue;

pub(super) fn check(run: &RunCheck<'_>, findings: &mut Findings<'_>) {
    let view = run.view;
    for (number, batch) in view.batches.iter().enumerate() {
        if !run.is_sequential(number) || batch.bodies.len() < 2 {
            continue;
        }
        findings.arm(Invariant::I7);
        for pair in batch.bodies.windows(2) {
            let (first, second) = (&view.bodies[pair[0]], &view.bodies[pair[1]]);
            let at = At::Call(batch.turn, second.call_id);
            if second.index <= first.index {
                let explanation = format!(
                    "in a sequential batch call {} started before call {}",
                    second.index, first.index
                );
                return findings.report(Breach::SequentialOutOfOrder, at, explanation);
            }
            let first_end = first.end_ms.unwrap_or(u64::MAX);
            if second.start_ms < first_end {
                let until = first.end_ms.map_or_else(
                    || "never ended".to_owned(),
                    |end| format!("ran until {end} ms"),
                );
                let explanation = format!(
                    "in a sequential batch call {} started at {} ms while call {} {until}",
                    second.index, second.start_ms, first.index
                );
                return findings.report(Breach::SequentialOverlap, at, explanation);
            }
        }
    }
    let writes: Vec<_> = view
        .bodies
        .iter()
        .filter(|body| catalogue::entry(body.tool).is_some_and(|entry| !entry.read_only))
        .collect();
    for (position, first) in writes.iter().enumerate() {
        for second in &writes[position + 1..] {
            let first_end = first.end_ms.unwrap_or(u64::MAX);
            let second_end = second.end_ms.unwrap_or(u64::MAX);
            if first.start_ms < second_end && second.start_ms < first_end {
                let turn = view.batches[second.batch].turn;
                let explanation = format!(
                    "writes {} and {} overlapped in time",
                    first.tool, second.tool
                );
                let at = At::Call(turn, second.call_id);
                return findings.report(Breach::WritesOverlap, at, explanation);
            }
        }
    }
}
