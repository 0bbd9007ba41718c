//! Shrinking a crash plan that breaks a durable invariant (SPEC §10, §16): fewer runs, crashes,
//! replies and calls, crashes earlier and simpler, a run's policy plainer — while the same
//! check of the same invariant still fails first, so the plan a user gets shows the failure
//! they were told about. Crashes are kept as long as the failure needs them: a plan is
//! shrunk with its crashes, never without them.
//!
//! Greedy: every smaller candidate is tried in turn, from the coarsest (a whole run) to the
//! finest (one step of a crash's position); the first that still fails is taken and the
//! candidates are drawn again from it, until none fails or the budget of explorations runs out.
//! Each candidate is explored like any plan, without and with its crashes.

use ward_core::fault::FaultSet;

use crate::crash::{CrashKind, Plan};
use crate::oracle::Invariant;
use crate::oracle::durable::DurableBreach;
use crate::stall::{Watchdog, Work};

/// The default budget of explorations (each executes the plan twice; a plan takes a few
/// milliseconds).
pub const EXPLORATIONS_MAX: usize = 400;

/// The result of shrinking.
#[derive(Debug, Clone)]
pub struct ShrunkPlan {
    /// The smallest failing plan found.
    pub plan: Plan,
    /// Explorations spent.
    pub explorations: usize,
}

/// The breach a verdict's `breaches` show for `invariant`: its first.
pub fn first_of(breaches: &[DurableBreach], invariant: Invariant) -> Option<&DurableBreach> {
    breaches
        .iter()
        .find(|breach| breach.invariant() == invariant)
}

/// Shrinks `plan` while, under `faults` (against the runtime behind the adapter command
/// `runtime`, when one is given), the first breach of `target`'s invariant is still of
/// `target`'s check. Each candidate is marked in slot 0 of `watchdog`, when one is given
/// ([`crate::stall`]), as the plan's seed: a candidate the core never finishes is reported.
pub fn shrink(
    plan: &Plan,
    faults: FaultSet,
    runtime: Option<&str>,
    target: &DurableBreach,
    explorations_max: usize,
    watchdog: Option<&Watchdog>,
) -> ShrunkPlan {
    let mut explorations = 0;
    let fails = |candidate: &Plan| {
        let exploration = crate::explore::explore_on(candidate, faults, runtime);
        first_of(&exploration.verdict.breaches, target.invariant())
            .is_some_and(|breach| breach.breach == target.breach)
    };
    let mut current = plan.clone();
    'shrinking: loop {
        for candidate in candidates(&current) {
            if explorations >= explorations_max {
                break 'shrinking;
            }
            explorations += 1;
            let _running = watchdog.map(|watchdog| watchdog.running(0, plan.seed, Work::CrashPlan));
            if fails(&candidate) {
                current = candidate;
                continue 'shrinking;
            }
        }
        break;
    }
    ShrunkPlan {
        plan: current,
        explorations,
    }
}

/// Every plan one step smaller than `plan`, coarsest first.
fn candidates(plan: &Plan) -> Vec<Plan> {
    let mut candidates = Vec::new();
    let mut with = |change: &dyn Fn(&mut Plan)| {
        let mut candidate = plan.clone();
        change(&mut candidate);
        if candidate != *plan {
            candidates.push(candidate);
        }
    };
    for run in 0..plan.runs.len() {
        if plan.runs.len() > 1 {
            with(&|candidate| {
                candidate.runs.remove(run);
                if run < candidate.planted.len() {
                    candidate.planted.remove(run);
                }
            });
        }
    }
    for crash in 0..plan.crashes.len() {
        with(&|candidate| {
            candidate.crashes.remove(crash);
        });
    }
    for (run, script) in plan.runs.iter().enumerate() {
        for reply in 0..script.replies.len() {
            with(&|candidate| {
                candidate.runs[run].replies.remove(reply);
            });
        }
    }
    for (run, script) in plan.runs.iter().enumerate() {
        for (reply, calls) in script.replies.iter().enumerate() {
            for call in 0..calls.len() {
                with(&|candidate| {
                    candidate.runs[run].replies[reply].remove(call);
                });
            }
        }
    }
    for (run, script) in plan.runs.iter().enumerate() {
        with(&|candidate| candidate.runs[run].read_only = false);
        with(&|candidate| candidate.runs[run].disabled.clear());
        if script.turns_max > 1 {
            with(&|candidate| candidate.runs[run].turns_max -= 1);
        }
    }
    for (index, crash) in plan.crashes.iter().enumerate() {
        // A drop stays a drop: it is the only crash a runtime behind an adapter is given.
        if crash.kind != CrashKind::Drop {
            with(&|candidate| candidate.crashes[index].kind = CrashKind::Kill);
        }
        // Earlier, each crash no earlier than the one before it (a process's crash comes
        // after the processes before it).
        let floor = index
            .checked_sub(1)
            .map_or(0, |before| plan.crashes[before].at);
        // Each instant once (for a crash at 1 after one at 0 the three are one).
        let instants =
            std::collections::BTreeSet::from([floor, crash.at / 2, crash.at.saturating_sub(1)]);
        for at in instants.range(floor..crash.at) {
            with(&|candidate| candidate.crashes[index].at = *at);
        }
    }
    candidates
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crash::{Crash, generate};

    #[test]
    fn every_candidate_is_smaller_by_one_step() {
        let mut plan = generate(4);
        plan.crashes = vec![
            Crash {
                at: 10,
                kind: CrashKind::SyncError,
            },
            Crash {
                at: 30,
                kind: CrashKind::Kill,
            },
        ];
        for candidate in candidates(&plan) {
            let smaller = candidate.runs.len() < plan.runs.len()
                || candidate.crashes.len() < plan.crashes.len()
                || candidate.calls() < plan.calls()
                || (candidate.runs.iter().zip(&plan.runs)).any(|(a, b)| {
                    a.replies.len() < b.replies.len()
                        || (!a.read_only && b.read_only)
                        || a.disabled.len() < b.disabled.len()
                        || a.turns_max < b.turns_max
                })
                || (candidate.crashes.iter().zip(&plan.crashes)).any(|(a, b)| {
                    a.at < b.at || (a.kind == CrashKind::Kill && b.kind != CrashKind::Kill)
                });
            assert!(smaller, "{candidate:?}");
            assert!(
                candidate
                    .crashes
                    .windows(2)
                    .all(|pair| pair[0].at <= pair[1].at),
                "crashes stay in order: {:?}",
                candidate.crashes
            );
        }
    }
}
