//! The invariants of durable sessions (SPEC §16, I15–I19), one file each
//! (`i15_…` to `i19_…`, each opening with its SPEC text), checked on what the crash explorer
//! ([`crate::crash`]) saw at the boundaries: the provider's requests, the bodies' starts, the
//! commits the store acknowledged, the journals each reopened store recovered, the chart each
//! process ended with, and every byte written to the simulated disks.
//!
//! Each check compares the execution with crashes against the same plan's execution without
//! them (the reference): what R31–R34 decide is exact there. A crash changes nothing of a run
//! but the results R32 fixes — a call of `code_interpreter` (the catalogue's one tool whose
//! effect lives outside the store, SPEC §8) whose intent a reopened store holds with no result
//! gets `OUTCOME_UNKNOWN` — and a crash loses nothing acknowledged. An intent committed after
//! its body started leaves a body that a crash can cut with no intent: its call runs again,
//! and I15 counts its body's starts.
//! No check knows about any seeded bug.

use std::collections::BTreeSet;

use ward_core::session::{Message, Record};

pub mod i15_at_most_once_exactly_once;
pub mod i16_nothing_acknowledged_is_lost;
pub mod i17_one_result_per_call_after_resumes;
pub mod i18_nothing_secret_at_rest;
pub mod i19_a_resumed_run_keeps_every_promise;

use super::{Breach, Invariant};
use crate::crash::{Execution, Plan};

/// The catalogue's tool whose effect lives outside the store (SPEC §8, R32).
pub const OUTSIDE_EFFECT_TOOLS: &[&str] = &["code_interpreter"];

/// One violation of I15–I19.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DurableBreach {
    /// Which check of which invariant found it (shrinking keeps a plan failing the same
    /// check, so that the shrunk plan shows the failure first reported).
    pub breach: Breach,
    /// What went wrong, naming the run, the call or the record.
    pub message: String,
}

impl DurableBreach {
    /// The invariant it breaks.
    pub fn invariant(&self) -> Invariant {
        self.breach.invariant()
    }
}

impl std::fmt::Display for DurableBreach {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.invariant(), self.message)
    }
}

/// What every check reads: the plan, both executions, and the calls of R32 a crash cut.
pub struct DurableCheck<'a> {
    /// The plan.
    pub plan: &'a Plan,
    /// The execution without crashes.
    pub reference: &'a Execution,
    /// The execution with them.
    pub crashed: &'a Execution,
    /// (run, call id) of each call of R32 a crash cut: a recovered journal holds its intent
    /// and no result.
    pub cut_outside: BTreeSet<(u32, String)>,
    /// (run, call id as journaled) of each call whose batch a crash cut, whose arguments or
    /// name the guard changed (8 characters of a configured value) and whose body ran as sent
    /// (the session without crashes did not refuse it): the journal holds only its guarded
    /// form, so its batch, run again, gives it `ABORTED` rather than run other input than the
    /// model's (ward's decision where the SPEC is silent, in `Record::Settled`'s docs).
    pub cut_changed: BTreeSet<(u32, String)>,
}

impl DurableCheck<'_> {
    /// Whether a crash fixes the result of call `call_id` of `run` (R32's `OUTCOME_UNKNOWN`,
    /// or `ABORTED` for a call the guard changed): the one exception to "as without
    /// crashes".
    pub fn fixed_by_a_crash(&self, run: u32, call_id: &str) -> bool {
        let key = (run, call_id.to_owned());
        self.cut_outside.contains(&key) || self.cut_changed.contains(&key)
    }
}

impl DurableCheck<'_> {
    /// Whether any crash happened.
    pub fn crashes(&self) -> usize {
        self.crashed
            .processes
            .iter()
            .filter(|process| process.crashed)
            .count()
    }
}

/// The invariants of durable sessions, in order.
pub const INVARIANTS: [Invariant; 5] = [
    Invariant::I15,
    Invariant::I16,
    Invariant::I17,
    Invariant::I18,
    Invariant::I19,
];

/// What the checks found in one plan.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DurableVerdict {
    /// Per invariant of [`INVARIANTS`], whether its situation arose: I15 when a crash fired
    /// and a chart write's or an outside effect's body had started; I16 when a process
    /// recovered a journal after a crash; I17 when a crash fired in a session with calls;
    /// I18 whenever anything was written; I19 when a cut run was resumed.
    pub armed: [bool; 5],
    /// Every breach, in the order the checks ran.
    pub breaches: Vec<DurableBreach>,
}

impl DurableVerdict {
    /// The breach a campaign reports and shrinks: the first of `invariant` (the one that
    /// catches the seeded bug on, when one is), else the first of all.
    pub fn reported(&self, invariant: Option<Invariant>) -> Option<&DurableBreach> {
        (self.breaches.iter())
            .find(|breach| Some(breach.invariant()) == invariant)
            .or_else(|| self.breaches.first())
    }
}

/// Every breach of I15–I19 in `crashed`, against `reference`, and which checks were armed.
pub fn check(plan: &Plan, reference: &Execution, crashed: &Execution) -> DurableVerdict {
    let cut_outside = cut_outside(crashed);
    let cut_changed = cut_changed(plan, reference, crashed, &cut_outside);
    let check = DurableCheck {
        plan,
        reference,
        crashed,
        cut_outside,
        cut_changed,
    };
    DurableVerdict {
        armed: armed(&check),
        breaches: breaches(&check),
    }
}

fn armed(check: &DurableCheck<'_>) -> [bool; 5] {
    let crashed = check.crashes() > 0;
    let writes = check.crashed.starts.iter().any(|start| {
        OUTSIDE_EFFECT_TOOLS.contains(&start.tool.as_str())
            || crate::catalogue::TABLE
                .iter()
                .any(|entry| entry.name == start.tool && !entry.read_only)
    });
    let processes = &check.crashed.processes;
    let recovered_after_crash = processes
        .iter()
        .skip(1)
        .any(|process| process.recovered.is_some());
    let resumed = processes.iter().skip(1).any(|process| {
        process.recovered.as_deref().is_some_and(|journal| {
            runs(journal).last().is_some_and(|run| {
                !run.iter()
                    .any(|record| matches!(record, Record::RunEnded { .. }))
            })
        })
    });
    let calls = check.crashed.journal.iter().any(|record| {
        matches!(record, Record::Message { message }
            if matches!(&**message, Message::Tool { .. }))
    });
    [
        crashed && writes,
        recovered_after_crash,
        crashed && calls,
        !check.crashed.written.is_empty(),
        resumed,
    ]
}

fn breaches(check: &DurableCheck<'_>) -> Vec<DurableBreach> {
    let reference = check.reference;
    let mut breaches = Vec::new();
    if let Some(failure) = &reference.failure {
        breaches.push(DurableBreach {
            breach: Breach::ReferenceUnfinished,
            message: format!("the session without crashes did not finish: {failure}"),
        });
        return breaches;
    }
    i15_at_most_once_exactly_once::check(check, &mut breaches);
    i16_nothing_acknowledged_is_lost::check(check, &mut breaches);
    i17_one_result_per_call_after_resumes::check(check, &mut breaches);
    i18_nothing_secret_at_rest::check(check, &mut breaches);
    i19_a_resumed_run_keeps_every_promise::check(check, &mut breaches);
    breaches
}

/// The calls of R32 a crash cut (R32: "an intent and no result"): in a journal some process
/// recovered, the call's intent and no result for it.
fn cut_outside(execution: &Execution) -> BTreeSet<(u32, String)> {
    let mut cut = BTreeSet::new();
    let recovered = (execution.processes.iter()).filter_map(|process| process.recovered.as_deref());
    for journal in recovered {
        for (run, records) in runs(journal).into_iter().enumerate() {
            let run = u32::try_from(run).unwrap_or(u32::MAX);
            for record in records {
                let Record::Intent { call_id, tool, .. } = record else {
                    continue;
                };
                let answered = records.iter().any(|record| {
                    matches!(record, Record::Message { message }
                        if matches!(&**message, Message::Tool { call_id: id, .. } if **id == **call_id))
                });
                if OUTSIDE_EFFECT_TOOLS.contains(&tool.as_str()) && !answered {
                    cut.insert((run, call_id.clone()));
                }
            }
        }
    }
    cut
}

/// The calls of [`DurableCheck::cut_changed`]: in a journal some process recovered, a run's
/// last reply with calls and no result after it; of its calls, those whose raw arguments or
/// name (the plan's) hold 8 characters of a configured value and that the session without
/// crashes did not refuse.
fn cut_changed(
    plan: &Plan,
    reference: &Execution,
    crashed: &Execution,
    cut_outside: &BTreeSet<(u32, String)>,
) -> BTreeSet<(u32, String)> {
    let windows: Vec<&str> = (plan.secrets.iter())
        .flat_map(|secret| {
            (0..=secret.len().saturating_sub(8)).filter_map(move |at| secret.get(at..at + 8))
        })
        .collect();
    let changed = |text: &str| windows.iter().any(|window| text.contains(window));
    let refused_without_crashes = |id: &str| {
        reference.journal.iter().any(|record| {
            matches!(record, Record::Message { message }
                if matches!(&**message, Message::Tool { call_id, result, .. }
                    if **call_id == *id && result.error_code().is_some_and(is_refusal)))
        })
    };
    let mut cut = BTreeSet::new();
    let recovered = (crashed.processes.iter()).filter_map(|process| process.recovered.as_deref());
    for journal in recovered {
        for (run, records) in runs(journal).into_iter().enumerate() {
            let Some(script) = plan.runs.get(run) else {
                continue;
            };
            let is_reply = |record: &Record| {
                matches!(record, Record::Message { message }
                    if matches!(&**message, Message::Assistant { .. }))
            };
            let Some(last) = records.iter().rposition(is_reply) else {
                continue;
            };
            let Record::Message { message } = &records[last] else {
                continue;
            };
            let Message::Assistant { calls, .. } = &**message else {
                continue;
            };
            let answered = records[last + 1..].iter().any(|record| {
                matches!(record, Record::Message { message }
                    if matches!(&**message, Message::Tool { .. }))
            });
            if calls.is_empty() || answered {
                continue;
            }
            let turn = records[..last]
                .iter()
                .filter(|record| is_reply(record))
                .count();
            let raw = script.replies.get(turn).map_or(&[][..], Vec::as_slice);
            let run = u32::try_from(run).unwrap_or(u32::MAX);
            for (sent, journaled) in raw.iter().zip(calls.iter()) {
                let key = (run, journaled.id.clone());
                // A call whose id alone was guarded runs again as it ran (its body's input is
                // the same); one whose arguments or name were guarded cannot.
                let guarded = changed(&sent.name) || changed(&sent.arguments);
                if guarded && !refused_without_crashes(&journaled.id) && !cut_outside.contains(&key)
                {
                    cut.insert(key);
                }
            }
        }
    }
    cut
}

/// Whether `code` is one of R3's refusals, given before a body runs.
fn is_refusal(code: &str) -> bool {
    matches!(
        code,
        "INVALID_CALL_ID"
            | "DUPLICATE_CALL_ID"
            | "TOOL_NOT_FOUND"
            | "TOOL_NOT_ALLOWED"
            | "PAYLOAD_TOO_LARGE"
            | "SECRET_IN_INPUT"
            | "TOOL_INPUT_INVALID"
            | "TOO_MANY_CALLS"
    )
}

/// The JSON of `record`, to compare records byte for byte.
pub fn json(record: &Record) -> String {
    serde_json::to_string(record).unwrap_or_default()
}

/// `text`, cut to about 200 characters for a message.
pub fn short(text: &str) -> String {
    match text.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// The journal's runs: for each, its records from its start, up to the next start.
pub fn runs(journal: &[Record]) -> Vec<&[Record]> {
    let starts: Vec<usize> = (journal.iter().enumerate())
        .filter(|(_, record)| matches!(record, Record::RunStarted { .. }))
        .map(|(at, _)| at)
        .collect();
    (starts.iter().enumerate())
        .map(|(n, &start)| {
            let end = starts.get(n + 1).copied().unwrap_or(journal.len());
            &journal[start..end]
        })
        .collect()
}
