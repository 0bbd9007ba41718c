//! I8. No planted secret part, and no substring of 8 or more characters of a configured
//! secret, occurs in any decoded string of a provider request, session record or event
//! (placeholders excluded); no configured secret reaches a tool body's input.
//!
//! Ground truth is what the scenario planted and labelled: high-entropy parts, so ordinary
//! text never holds one by chance. The check is exact (SPEC §9): a planted part that the
//! run's prompt carries counts for any run of 8 or more of its characters a text shares with
//! it (a leaked tail of a user name counts; the redactor's patterns must remove the whole
//! part), or whole when it is shorter; a configured value counts for any run of 8 or more
//! characters (R22's guard must remove those wherever they come from). A run inside a
//! placeholder (`[REDACTED]`, `[LOCAL_PATH]`) does not count, nor does a run of a planted
//! part whose every 8 characters the world itself said ([`super::said`]: a configured value
//! may share characters with a planted part, and the model may echo a stretch of it too short
//! for R22's guard next to text that goes on as the planted part does; no rule asks a runtime
//! to remove that).
//!
//! Every occurrence is scanned, also of a record that reached several boundaries (a message
//! stored and then sent, a result in the events and the store). Skipping records equal to one
//! already scanned saved 4.2 % of the campaign's instructions (callgrind, seeds 0..2000,
//! `campaign` profile: 1.386 against 1.448 billion) and about 1 % of its time, under the 5 %
//! a speed trick must earn, so there is no such memo.

use std::borrow::Cow;

use serde_json::Value;
use ward_core::envelope::{Outcome, ToolError, ToolResult};
use ward_core::events::EventKind;
use ward_core::session::Message;
use ward_core::tool::ToolCall;
use ward_fragments::Fragments;

use std::cell::OnceCell;

use super::said::Said;
use super::{At, Breach, Findings, Invariant, PLACEHOLDERS, RunCheck, any_string};
use crate::catalogue::SECRET_RUN_CHARS_MIN;
use crate::scenario::SecretShape;

pub(super) fn check(run: &RunCheck<'_>, findings: &mut Findings<'_>) {
    let prompt = run.script.prompt.as_str();
    let planted: Vec<&str> = run
        .scenario
        .secrets
        .iter()
        .filter(|secret| {
            secret.shape != SecretShape::Configured && prompt.contains(secret.value.as_str())
        })
        .map(|secret| secret.value.as_str())
        .collect();
    if run.configured.is_empty() && planted.is_empty() {
        return;
    }
    findings.arm(Invariant::I8);
    let Some(scanner) = Scanner::new(&planted, &run.configured, run) else {
        return;
    };
    if let Some((breach, at, explanation)) = leak(run, &scanner) {
        return findings.report(breach, at, explanation);
    }
    if !run.configured.is_empty() {
        guarded_records(run, findings);
    }
}

/// The first record that carries secret text, in a request, the store or an event, or a body
/// input that carries a configured value: the breach, where, and why.
fn leak<'a>(run: &RunCheck<'a>, scanner: &Scanner<'_>) -> Option<(Breach, At<'a>, String)> {
    let view = run.view;
    for request in &view.requests {
        let prompt = (request.new_system_prompt)
            .then(|| scanner.find(request.system_prompt))
            .flatten();
        let found = prompt
            .or_else(|| (request.appended.iter()).find_map(|message| scanner.message(message)));
        if let Some(found) = found {
            let explanation = format!(
                "a provider request carries secret text {}",
                scanner.describe(found)
            );
            return Some((Breach::SecretInRequest, At::Turn(request.turn), explanation));
        }
    }
    if let Some(found) = view
        .appends
        .iter()
        .find_map(|message| scanner.message(message))
    {
        let explanation = format!(
            "a session record carries secret text {}",
            scanner.describe(found)
        );
        return Some((Breach::SecretInStore, At::Run, explanation));
    }
    for event in &view.events {
        if let Some(found) = scanner.event(&event.kind) {
            let explanation = format!(
                "event {} carries secret text {}",
                event.seq,
                scanner.describe(found)
            );
            return Some((Breach::SecretInEvent, At::Run, explanation));
        }
    }
    let carries = |text: &str| run.configured.iter().any(|value| text.contains(value));
    let body = view
        .bodies
        .iter()
        .find(|body| any_string(body.input, &carries))?;
    let turn = view.batches[body.batch].turn;
    let explanation = format!("a configured secret reached the input of {}", body.tool);
    Some((
        Breach::SecretInToolInput,
        At::Call(turn, body.call_id),
        explanation,
    ))
}

/// R22 exactly (SPEC §9): every record that enters the store or the event stream is the
/// record as it was produced — the reply the oracle scripted, the result the body returned —
/// with exactly its configured values and their fragments replaced ([`super::guarded`]).
/// Records the runtime writes itself (its refusals, its run errors) are checked for leaks
/// only: the oracle does not know them first-hand.
fn guarded_records(run: &RunCheck<'_>, findings: &mut Findings<'_>) {
    if guarded_replies(run, findings) || guarded_names(run, findings) {
        return;
    }
    guarded_results(run, findings);
}

/// The replies as stored and announced: each one of the run's replies, guarded. Whether it
/// reported a breach.
fn guarded_replies(run: &RunCheck<'_>, findings: &mut Findings<'_>) -> bool {
    let guard = &run.guard;
    let view = run.view;
    // The replies as the guard must let them through; `None` when one is not predicted.
    let mut replies = Some(Vec::new());
    let mut changed_replies = 0;
    for reply in view.replies.iter().filter(|reply| reply.error.is_none()) {
        let expected = guard.assistant(reply.text, reply.calls);
        let changed = expected
            .as_ref()
            .is_none_or(|expected| expected.changes(reply.text, reply.calls));
        if changed {
            changed_replies += 1;
            findings.exact.guarded_records += 1;
            findings.exact.guarded_records_predicted += u32::from(expected.is_some());
        }
        match (&mut replies, expected) {
            (Some(replies), Some(expected)) => replies.push(expected),
            _ => replies = None,
        }
    }
    if let Some(replies) = &replies {
        let differs =
            |text: &str, calls: &[ToolCall]| !replies.iter().any(|reply| reply.is(text, calls));
        let stored = view.appends.iter().any(|message| match &***message {
            Message::Assistant { text, calls } => differs(text, calls),
            _ => false,
        });
        let announced = view.events.iter().any(|event| match &event.kind {
            EventKind::AssistantMessageCompleted { text, calls, .. } => differs(text, calls),
            _ => false,
        });
        if stored || announced {
            let place = if stored {
                "session record"
            } else {
                "assistant.message.completed event"
            };
            let explanation = format!(
                "a {place} of a reply is not any reply of the run with exactly its configured values and their fragments replaced (R22)"
            );
            findings.report(Breach::GuardedRecordDiffers, At::Run, explanation);
            return true;
        }
        // Every reply was predicted, and each record of one is one of them.
        findings.exact.guarded_records_matched += changed_replies;
    }
    false
}
/// The call id and tool name each `tool.started` and `tool.finished` names: the call's as the
/// reply gave them, guarded. Whether it reported a breach.
fn guarded_names(run: &RunCheck<'_>, findings: &mut Findings<'_>) -> bool {
    let (guard, view) = (&run.guard, run.view);
    for batch in &view.batches {
        for event in &view.events {
            let (EventKind::ToolStarted {
                index,
                call_id,
                name,
            }
            | EventKind::ToolFinished {
                index,
                call_id,
                name,
                ..
            }) = &event.kind
            else {
                continue;
            };
            if !batch_holds(batch, event.seq) {
                continue;
            }
            let Some(call) = batch.calls.get(*index) else {
                continue;
            };
            let (Some(id), Some(tool)) = (guard.text(&call.id), guard.text(&call.name)) else {
                continue;
            };
            if **call_id != *id || **name != *tool {
                let explanation = format!(
                    "event {} names call {index} of its batch otherwise than the call's id and tool with exactly their configured values and fragments replaced (R22)",
                    event.seq
                );
                findings.report(
                    Breach::GuardedRecordDiffers,
                    At::Turn(batch.turn),
                    explanation,
                );
                return true;
            }
        }
    }
    false
}

/// Each body's result as the event and the store hand it on: what the body returned, guarded.
fn guarded_results(run: &RunCheck<'_>, findings: &mut Findings<'_>) {
    let (guard, view) = (&run.guard, run.view);
    for body in &view.bodies {
        let Some(output) = body.output else { continue };
        let batch = &view.batches[body.batch];
        let expected = match output {
            Ok(data) => guard.value(data).map(Guarded::Data),
            Err(error) => guard.error(error).map(Guarded::Error),
        };
        // A borrowed outcome is the body's own; only a copy is compared.
        let produced_changed = match (&expected, output) {
            (Some(Guarded::Data(Cow::Borrowed(_)) | Guarded::Error(Cow::Borrowed(_))), _) => false,
            (Some(Guarded::Data(guarded)), Ok(data)) => **guarded != *data,
            (Some(Guarded::Error(guarded)), Err(error)) => **guarded != *error,
            _ => true,
        };
        if produced_changed {
            findings.exact.guarded_records += 1;
            findings.exact.guarded_records_predicted += u32::from(expected.is_some());
        }
        let Some(expected) = expected else { continue };
        let (Some(call_id), Some(name)) = (guard.text(body.call_id), guard.text(body.tool)) else {
            continue;
        };
        let finished = batch
            .finished_of(body.index)
            .map(|finished| finished.result);
        let stored = view.appends.iter().filter_map(|message| match &***message {
            Message::Tool {
                call_id: stored_id,
                name: stored_name,
                result,
            } if **stored_id == *call_id && **stored_name == *name => Some(result),
            _ => None,
        });
        // Only the results that hand the body's own outcome on: a success for data, the
        // body's code for an error (another result is I6's and I14's to judge).
        let from_body = |result: &&ToolResult| match (&result.outcome, output) {
            (Outcome::Success(_), Ok(_)) => true,
            (Outcome::Failure(error), Err(body_error)) => error.code == body_error.code,
            _ => false,
        };
        let events: Vec<&ToolResult> = finished.filter(from_body).collect();
        let records: Vec<&ToolResult> = stored.filter(from_body).collect();
        let event_differs = events.iter().any(|result| !expected.is(&result.outcome));
        // A repeated call id may give several stored results; one of them is this body's.
        let store_differs = !records.is_empty() && !records.iter().any(|r| expected.is(&r.outcome));
        if event_differs || store_differs {
            let place = if event_differs {
                "tool.finished event"
            } else {
                "session record"
            };
            let explanation = format!(
                "the {place} of {}'s result is not what the body returned with exactly its configured values and their fragments replaced (R22)",
                body.tool
            );
            return findings.report(
                Breach::GuardedRecordDiffers,
                At::Call(batch.turn, body.call_id),
                explanation,
            );
        }
        findings.exact.guarded_records_matched += u32::from(produced_changed);
    }
}

/// A body's outcome as the guard must let it through.
enum Guarded<'o> {
    Data(Cow<'o, Value>),
    Error(Cow<'o, ToolError>),
}

impl Guarded<'_> {
    /// Whether a result's outcome is exactly this one.
    fn is(&self, outcome: &Outcome) -> bool {
        match (self, outcome) {
            (Guarded::Data(expected), Outcome::Success(data)) => **expected == **data,
            (Guarded::Error(expected), Outcome::Failure(error)) => **expected == **error,
            _ => false,
        }
    }
}

/// Finds runs of 8 or more characters shared with a planted part or a configured value (a
/// shorter part whole), outside placeholders. The finding is [`Fragments`]' (the scanner the runtime's
/// guard uses too, a library checked against its plain reference version); what counts as a
/// leak is decided here.
struct Scanner<'a> {
    fragments: Fragments,
    /// The secrets, in the order given to `fragments`: the planted parts first.
    secrets: Vec<&'a [u8]>,
    /// How many of `secrets` are planted parts.
    planted: usize,
    /// The fewest bytes anything looked for has: shorter texts (keys, short values) hold none.
    length_min: usize,
    /// The run, whose world's words are gathered the first time a planted part is found.
    run: &'a RunCheck<'a>,
    said: OnceCell<Said<'a>>,
}

impl<'a> Scanner<'a> {
    fn new(
        planted: &[&'a str],
        configured: &[&'a str],
        run: &'a RunCheck<'a>,
    ) -> Option<Scanner<'a>> {
        // A configured value of fewer than 8 characters has no run that counts (the runtime
        // refuses one at the start, R24); a planted part that short counts whole.
        let secrets: Vec<&'a str> = planted
            .iter()
            .chain(
                configured
                    .iter()
                    .filter(|value| value.chars().count() >= SECRET_RUN_CHARS_MIN),
            )
            .copied()
            .collect();
        // The fewest bytes a run holds, so that a shorter text is passed over unread: a run
        // is at least 8 characters of a secret, or the whole of a shorter one, and a secret
        // of fewer than 2 characters has none (`Fragments::new`).
        let length_min = secrets
            .iter()
            .map(|secret| secret.chars().count())
            .filter(|&characters| characters >= 2)
            .map(|characters| characters.min(SECRET_RUN_CHARS_MIN))
            .min()?;
        let fragments =
            Fragments::new(secrets.iter().map(|&secret| (secret, SECRET_RUN_CHARS_MIN)));
        let secrets = secrets.iter().map(|secret| secret.as_bytes()).collect();
        Some(Scanner {
            fragments,
            secrets,
            planted: planted.len(),
            length_min,
            run,
            said: OnceCell::new(),
        })
    }

    /// The index of a secret found in `text` outside placeholders (and, for a planted part,
    /// outside what the world said).
    fn find(&self, text: &str) -> Option<usize> {
        if text.len() < self.length_min {
            return None;
        }
        let bytes = text.as_bytes();
        self.fragments
            .runs(bytes)
            .find(|run| {
                if inside_placeholder(bytes, run.start, run.end) {
                    return false;
                }
                run.needle >= self.planted || !self.world_said(&bytes[run.start..run.end])
            })
            .map(|run| run.needle)
    }

    /// Whether the world said every 8 characters of `stretch` ([`Said`]).
    fn world_said(&self, stretch: &[u8]) -> bool {
        self.said
            .get_or_init(|| Said::of(self.run.scenario, self.run.view))
            .covers(stretch)
    }

    fn message(&self, message: &Message) -> Option<usize> {
        match message {
            Message::User { text } => self.find(text),
            Message::Assistant { text, calls } => self.find(text).or_else(|| self.calls(calls)),
            Message::Tool {
                call_id,
                name,
                result,
            } => self
                .find(call_id)
                .or_else(|| self.find(name))
                .or_else(|| self.result(result)),
        }
    }

    fn calls(&self, calls: &[ToolCall]) -> Option<usize> {
        calls.iter().find_map(|call| {
            self.find(&call.id)
                .or_else(|| self.find(&call.name))
                .or_else(|| self.find(&call.arguments))
        })
    }

    fn result(&self, result: &ToolResult) -> Option<usize> {
        match &result.outcome {
            Outcome::Success(data) => self.find_in_value(data),
            Outcome::Failure(error) => self.find_in_error(error),
        }
    }

    fn event(&self, kind: &EventKind) -> Option<usize> {
        match kind {
            EventKind::RunStarted { tools, .. } => tools.iter().find_map(|tool| self.find(tool)),
            EventKind::UserMessageCreated { text } | EventKind::RunCompleted { text } => {
                self.find(text)
            }
            EventKind::AssistantMessageCompleted { text, calls, .. } => {
                self.find(text).or_else(|| self.calls(calls))
            }
            EventKind::ToolStarted { call_id, name, .. } => {
                self.find(call_id).or_else(|| self.find(name))
            }
            EventKind::ToolFinished {
                call_id,
                name,
                result,
                ..
            } => self
                .find(call_id)
                .or_else(|| self.find(name))
                .or_else(|| self.result(result)),
            EventKind::RunFailed { error } => self.find_in_error(error),
            EventKind::RunCancelled => None,
        }
    }

    fn find_in_value(&self, value: &Value) -> Option<usize> {
        match value {
            Value::String(text) => self.find(text),
            Value::Array(items) => items.iter().find_map(|item| self.find_in_value(item)),
            Value::Object(members) => members
                .iter()
                .find_map(|(key, member)| self.find(key).or_else(|| self.find_in_value(member))),
            Value::Null | Value::Bool(_) | Value::Number(_) => None,
        }
    }

    fn find_in_error(&self, error: &ToolError) -> Option<usize> {
        let fields = error.fields.iter().flatten();
        self.find(&error.code)
            .or_else(|| self.find(&error.message))
            .or_else(|| self.find(&error.recommended_action))
            .or_else(|| {
                fields
                    .clone()
                    .find_map(|field| self.find(&field.path).or_else(|| self.find(&field.message)))
            })
    }

    /// Names what was found without printing a secret: its length and first two characters.
    fn describe(&self, secret: usize) -> String {
        let text = String::from_utf8_lossy(self.secrets[secret]);
        let head: String = text.chars().take(2).collect();
        format!(
            "(of a {}-character secret starting {head:?})",
            text.chars().count()
        )
    }
}

/// Whether `start..end` of `text` lies inside an occurrence of a placeholder.
fn inside_placeholder(text: &[u8], start: usize, end: usize) -> bool {
    PLACEHOLDERS.iter().any(|placeholder| {
        let placeholder = placeholder.as_bytes();
        let from = end.saturating_sub(placeholder.len());
        (from..=start).any(|at| text[at..].starts_with(placeholder))
    })
}

/// Whether the event numbered `seq` is one of `batch`'s `tool.started` or `tool.finished`.
fn batch_holds(batch: &crate::view::BatchView<'_>, seq: u64) -> bool {
    batch.started.iter().any(|(started, _)| *started == seq)
        || batch.finished.iter().any(|finished| finished.seq == seq)
}
