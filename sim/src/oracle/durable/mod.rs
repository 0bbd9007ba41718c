//! The invariants of durable sessions (SPEC §16, §17, I15–I19), one file each (`i15_…` to
//! `i19_…`, each opening with its SPEC text), checked on what crossed the runtime's boundary
//! in the crash explorer's executions ([`crate::crash`]), read as a [`Story`]: every message
//! the store acknowledged (`append`), every provider request with its transcript, every body
//! start, every crash and recovery, each run's report, ward's chart; and every byte written
//! to the simulated disks (I18's, the disk being the world's). Never the runtime's journal or
//! its store: the same checks judge any durable runtime behind the protocol.
//!
//! Each check compares the execution with crashes against the same plan's execution without
//! them (the reference): what R31–R34 decide is exact there. A crash changes nothing of a run
//! but the results R32 fixes, and loses nothing acknowledged. Which calls a crash **cut** is
//! read at the boundary: a call whose reply was acknowledged and whose result was not, when a
//! crash came. Of those, a call of `code_interpreter` (the catalogue's one tool whose effect
//! lives outside the store, SPEC §8) whose body had started in the process the crash killed
//! must get `OUTCOME_UNKNOWN` (R32: its intent preceded its start); one whose body had not
//! started may get it (its intent may have committed just before the crash) or run as
//! without crashes. A cut call whose name or arguments the guard changed (8 characters of a
//! configured value) and that ran as sent without crashes may get `ABORTED`: its store holds
//! only the guarded form, and running other input than the model's is worse than not running
//! it (ward's decision where the SPEC is silent, in `Record::Settled`'s docs); or run as
//! without crashes. No check knows about any seeded bug.

use std::collections::BTreeMap;
use std::sync::Arc;

use ward_core::envelope::ToolResult;
use ward_core::session::Message;
use ward_core::tool::ToolCall;

pub mod encoded;
pub mod i15_at_most_once_exactly_once;
pub mod i16_nothing_acknowledged_is_lost;
pub mod i17_one_result_per_call_after_resumes;
pub mod i18_nothing_secret_at_rest;
pub mod i19_a_resumed_run_keeps_every_promise;
pub mod profile;
pub mod story;

use self::story::{Crashed, Replied, Story};
use super::{Breach, Invariant};
use crate::crash::{Execution, Plan};

/// The catalogue's tool whose effect lives outside the store (SPEC §8, R32).
pub const OUTSIDE_EFFECT_TOOLS: &[&str] = &["code_interpreter"];

/// How a failure names a runtime that did not start again on its store after a crash.
pub use crate::world::lockstep::NOT_STARTED_AGAIN;

/// One violation of I15–I19.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DurableBreach {
    /// Which check of which invariant found it (shrinking keeps a plan failing the same
    /// check, so that the shrunk plan shows the failure first reported).
    pub breach: Breach,
    /// What went wrong, naming the run, the call or the message.
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

/// A call a crash cut: its reply acknowledged, its result not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cut {
    /// The tool.
    pub tool: Arc<str>,
    /// Its body had started in the process the crash killed.
    pub ran: bool,
    /// The guard changed its name or arguments, and without crashes its body ran.
    pub guarded: bool,
}

/// What every check reads: the plan, both executions as their boundaries show them, and the
/// calls a crash cut.
pub struct DurableCheck<'a> {
    /// The plan.
    pub plan: &'a Plan,
    /// The execution without crashes.
    pub reference: &'a Execution,
    /// The execution with them.
    pub crashed: &'a Execution,
    /// The reference, read.
    pub before: Story,
    /// The execution with crashes, read.
    pub after: Story,
    /// Every call a crash cut, by its id as the run kept it (ids are unique in a plan, and a
    /// later run's transcript holds the calls of the runs before it).
    pub cut: BTreeMap<Arc<str>, Cut>,
}

impl DurableCheck<'_> {
    /// How many crashes happened.
    pub fn crashes(&self) -> usize {
        self.after.crashes.len()
    }

    /// Whether `result` of call `call_id` is one a crash fixes: `OUTCOME_UNKNOWN` for a cut
    /// call of R32, any result for a cut call of R32 whose body had started (I17 judges that
    /// one, and only `OUTCOME_UNKNOWN` passes it: the wrong result is R32's, not a resumed
    /// run's), `ABORTED` for a cut call the guard changed.
    pub fn fixed_by_a_crash(&self, call_id: &str, result: &ToolResult) -> bool {
        let Some(cut) = self.cut.get(call_id) else {
            return false;
        };
        (OUTSIDE_EFFECT_TOOLS.contains(&&*cut.tool) && (cut.ran || is_outcome_unknown(result)))
            || (cut.guarded && is_aborted(result))
    }

    /// Whether `got`, after crashes, stands for `want`, without them: the same message, or the
    /// same call's result fixed by a crash.
    pub fn accepts(&self, want: &Message, got: &Message) -> bool {
        if want == got {
            return true;
        }
        match (want, got) {
            (
                Message::Tool {
                    call_id, name: n, ..
                },
                Message::Tool {
                    call_id: id,
                    name,
                    result,
                },
            ) => call_id == id && n == name && self.fixed_by_a_crash(id, result),
            _ => false,
        }
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
    /// Per invariant of [`INVARIANTS`], whether its situation arose: I15 when a crash came
    /// and a chart write's or an outside effect's body had started; I16 when a request was
    /// made after a crash; I17 when a crash came in a session with results; I18 whenever
    /// anything was written; I19 when a cut run was recovered.
    pub armed: [bool; 5],
    /// Every breach of an invariant the runtime claims, in the order the checks ran.
    pub breaches: Vec<DurableBreach>,
    /// Every breach of an invariant resting on a rule the runtime does not claim (P2):
    /// reported `not claimed`, never violated ([`DurableVerdict::apply_claims`]).
    pub not_claimed: Vec<DurableBreach>,
    /// The execution's durability profile (P11), read from the story the checks read.
    pub profile: profile::Profile,
}

impl DurableVerdict {
    /// Sets apart the breaches of invariants a runtime claiming `claims` does not claim (P2),
    /// as a scenario's verdict does: I11 (the same digest again) rests on no rule and stays.
    pub fn apply_claims(&mut self, claims: &[String]) {
        let (claimed, not_claimed) = std::mem::take(&mut self.breaches)
            .into_iter()
            .partition(|breach| breach.invariant().is_claimed_by(claims));
        self.breaches = claimed;
        self.not_claimed = not_claimed;
    }

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
    let (before, after) = (Story::of(&reference.trace), Story::of(&crashed.trace));
    let cut = cut(plan, &before, &after);
    let check = DurableCheck {
        plan,
        reference,
        crashed,
        before,
        after,
        cut,
    };
    DurableVerdict {
        armed: armed(&check),
        breaches: breaches(&check),
        not_claimed: Vec::new(),
        profile: profile::of(&check.after),
    }
}

fn armed(check: &DurableCheck<'_>) -> [bool; 5] {
    let crashed = check.crashes() > 0;
    let after = &check.after;
    let changing = after.started.iter().any(|start| changes(&start.tool));
    let results =
        (after.appended.iter()).any(|appended| matches!(*appended.message, Message::Tool { .. }));
    [
        crashed && changing,
        after.asked.iter().any(|asked| asked.process > 0),
        crashed && results,
        check.crashed.written.iter().any(|bytes| !bytes.is_empty()),
        // I19 judges a reference that did not finish too (`ReferenceUnfinished`).
        after.recoveries > 0 || check.reference.failure.is_some(),
    ]
}

fn breaches(check: &DurableCheck<'_>) -> Vec<DurableBreach> {
    let mut breaches = Vec::new();
    if let Some(failure) = &check.reference.failure {
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

/// The calls a crash cut, by call id as the run kept it: of each reply with calls a
/// run kept, each call such that a crash came in the run after the world sent the reply and
/// before the call's result was acknowledged.
fn cut(plan: &Plan, before: &Story, after: &Story) -> BTreeMap<Arc<str>, Cut> {
    let mut cut = BTreeMap::new();
    for (run, kept) in after.kept.iter().enumerate() {
        let replies = kept.iter().filter_map(|message| match &**message {
            Message::Assistant { calls, .. } => Some(calls),
            _ => None,
        });
        for (turn, calls) in replies.enumerate() {
            let Some(reply) =
                (after.replies.iter()).find(|reply| (reply.run, reply.turn) == (run, turn))
            else {
                continue;
            };
            for (index, call) in calls.iter().enumerate() {
                if let Some(found) = cut_call(plan, before, after, reply, index, call) {
                    cut.insert(Arc::from(call.id.as_str()), found);
                }
            }
        }
    }
    cut
}

/// Whether a crash cut call `index` of `reply` (`call` as the run kept it), and how.
fn cut_call(
    plan: &Plan,
    before: &Story,
    after: &Story,
    reply: &Replied,
    index: usize,
    call: &ToolCall,
) -> Option<Cut> {
    let answered = (after.appended.iter())
        .find(|appended| {
            appended.run == reply.run
                && matches!(&*appended.message, Message::Tool { call_id, .. } if **call_id == *call.id)
        })
        .map_or(usize::MAX, |appended| appended.tick);
    let crashes: Vec<(usize, &Crashed)> = (after.crashes.iter().enumerate())
        .filter(|(_, crash)| crash.run == reply.run && (reply.tick..answered).contains(&crash.tick))
        .collect();
    if crashes.is_empty() {
        return None;
    }
    // Its body started in the process a crash killed, and its result was never delivered.
    let ran = crashes.iter().any(|(process, crash)| {
        after.started.iter().any(|start| {
            (start.run, start.process, start.index) == (reply.run, *process, index)
                && *start.tool == *call.name
                && (reply.tick..crash.tick).contains(&start.tick)
                && start.delivered.is_none()
        })
    });
    let sent = reply.calls.get(index);
    let says = |text: &str| {
        plan.secrets.iter().any(|secret| {
            (0..=secret.len().saturating_sub(8))
                .filter_map(|at| secret.get(at..at + 8))
                .any(|window| text.contains(window))
        })
    };
    let refused = before.kept.get(reply.run).is_some_and(|kept| {
        kept.iter().any(|message| {
            matches!(&**message, Message::Tool { call_id, result, .. }
                if **call_id == *call.id && result.error_code().is_some_and(is_refusal))
        })
    });
    let guarded = sent.is_some_and(|sent| says(&sent.name) || says(&sent.arguments)) && !refused;
    Some(Cut {
        tool: Arc::from(call.name.as_str()),
        ran,
        guarded,
    })
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

/// `OUTCOME_UNKNOWN` exactly as SPEC §4 and R32 write it.
pub fn is_outcome_unknown(result: &ToolResult) -> bool {
    result.error().is_some_and(|error| {
        error.code == "OUTCOME_UNKNOWN"
            && error.message == "The tool may or may not have run before the runtime stopped."
            && !error.retryable
            && error.recommended_action == "Check the outside world before calling the tool again."
    })
}

/// `ABORTED` exactly as SPEC §4 writes it.
pub fn is_aborted(result: &ToolResult) -> bool {
    result.error().is_some_and(|error| {
        error.code == "ABORTED"
            && error.message == "The run ended before this tool call finished."
            && error.retryable
            && error.recommended_action == "Start a new run."
    })
}

/// Whether the body of `tool` changes something: a chart write or an outside effect.
pub fn changes(tool: &str) -> bool {
    crate::catalogue::entry(tool).is_some_and(|entry| !entry.read_only)
}

/// `value` as JSON, cut to about 200 characters for a message.
pub fn short<T: serde::Serialize + ?Sized>(value: &T) -> String {
    let text = serde_json::to_string(value).unwrap_or_default();
    match text.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn breach(breach: Breach) -> DurableBreach {
        DurableBreach {
            breach,
            message: "seen".to_owned(),
        }
    }

    #[test]
    fn a_breach_of_a_rule_not_claimed_is_set_apart_and_a_rerun_that_differs_is_not() {
        let mut verdict = DurableVerdict {
            breaches: vec![breach(Breach::SessionStopped), breach(Breach::TraceDiffers)],
            ..DurableVerdict::default()
        };
        verdict.apply_claims(&["R33".to_owned()]);
        assert_eq!(verdict.breaches, [breach(Breach::TraceDiffers)]);
        assert_eq!(verdict.not_claimed, [breach(Breach::SessionStopped)]);
        let mut claimed = DurableVerdict {
            breaches: vec![breach(Breach::SessionStopped)],
            ..DurableVerdict::default()
        };
        claimed.apply_claims(&["R34".to_owned()]);
        assert_eq!(claimed.breaches, [breach(Breach::SessionStopped)]);
        assert!(claimed.not_claimed.is_empty());
    }

    /// R32's cut calls: a cut outside effect whose body had started is I17's to judge, whatever
    /// its result (I19 accepts it); one whose body had not started is fixed only by
    /// `OUTCOME_UNKNOWN`; a cut write is fixed by no result of its own (I19 compares it).
    #[test]
    fn a_cut_outside_effect_that_started_is_left_to_i17_and_nothing_else_is() {
        use ward_core::envelope::{ToolError, ToolResult};
        let plan = crate::crash::generate(3);
        let (reference, crashed) = (Execution::default(), Execution::default());
        let cut = |tool: &str, ran: bool| Cut {
            tool: Arc::from(tool),
            ran,
            guarded: false,
        };
        let check = DurableCheck {
            plan: &plan,
            reference: &reference,
            crashed: &crashed,
            before: Story::of(&reference.trace),
            after: Story::of(&crashed.trace),
            cut: BTreeMap::from([
                (Arc::from("started"), cut("code_interpreter", true)),
                (Arc::from("waiting"), cut("code_interpreter", false)),
                (Arc::from("write"), cut("drawing_create", true)),
            ]),
        };
        let success = ToolResult::success(serde_json::json!({}), false);
        let unknown = ToolResult::failure(ToolError::outcome_unknown());
        let aborted = ToolResult::failure(ToolError::aborted());
        assert!(check.fixed_by_a_crash("started", &success));
        assert!(check.fixed_by_a_crash("started", &aborted));
        assert!(!check.fixed_by_a_crash("waiting", &success));
        assert!(check.fixed_by_a_crash("waiting", &unknown));
        assert!(!check.fixed_by_a_crash("write", &unknown));
        assert!(!check.fixed_by_a_crash("write", &success));
        assert!(!check.fixed_by_a_crash("no such call", &unknown));
    }

    /// A session without crashes that did not finish is I19's, and I19 counts it armed: no
    /// campaign shows more plans violating I19 than armed it.
    #[test]
    fn a_reference_that_did_not_finish_arms_the_i19_it_breaks() {
        let plan = crate::crash::generate(3);
        let reference = crate::crash::Execution {
            failure: Some("not a message of the protocol".to_owned()),
            ..Default::default()
        };
        let verdict = check(&plan, &reference, &crate::crash::Execution::default());
        let kinds: Vec<Breach> = verdict.breaches.iter().map(|found| found.breach).collect();
        assert_eq!(kinds, [Breach::ReferenceUnfinished]);
        assert!(verdict.armed[4], "I19 is armed where it is broken");
    }
}
