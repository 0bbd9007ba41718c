//! The invariants of SPEC §9, one named check each (`grep I7` finds the one for I7).
//!
//! Every check sees only what [`world`](crate::world) recorded at the runtime's boundaries —
//! provider requests and replies, tool bodies' starts, ends, inputs and outputs, session
//! store appends, events, chart snapshots and undo — plus the scenario it ran. They carry
//! their own copy of the catalogue and compile the published schemas themselves
//! ([`catalogue`](crate::catalogue)); they never call ward's redactor or validator. No check
//! knows about any seeded bug.
//!
//! Each check also reports whether its situation arose in the run ("armed"), so that an
//! oracle that never had a chance to fire shows up in the campaign summary.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use ward_core::chart::ChartState;
use ward_core::envelope::{FieldError, Outcome, ToolError, ToolResult};
use ward_core::events::EventKind;
use ward_core::session::Message;
use ward_core::tool::ToolCall;
use ward_fragments::Fragments;

use crate::addresses::AddressSet;
use crate::catalogue::{self, Schemas, strict_parse};
use crate::scenario::{Scenario, SecretShape};
use crate::view::{BatchView, RunView};
use crate::world::Trace;

/// An invariant of SPEC §9.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Invariant {
    /// Read-only runs are offered read-only tools only.
    I1,
    /// Read-only runs run no destructive body.
    I2,
    /// Switched-off tools are never offered or run.
    I3,
    /// Input errors are 1–5 `path: message` pairs that echo no value.
    I4,
    /// Invalid input never reaches a body.
    I5,
    /// One result per call, in order, with matching ids.
    I6,
    /// Sequential batches never overlap; writes never overlap.
    I7,
    /// No secret leaks.
    I8,
    /// `stateChanged` tells the truth; failures change nothing; undo restores.
    I9,
    /// Every run ends within its limits; nothing starts after it stopped.
    I10,
    /// Same scenario, same trace.
    I11,
    /// Parallel batches start together.
    I12,
    /// What is allowed is allowed.
    I13,
}

impl Invariant {
    /// Every invariant, in order.
    pub const ALL: [Invariant; 13] = [
        Invariant::I1,
        Invariant::I2,
        Invariant::I3,
        Invariant::I4,
        Invariant::I5,
        Invariant::I6,
        Invariant::I7,
        Invariant::I8,
        Invariant::I9,
        Invariant::I10,
        Invariant::I11,
        Invariant::I12,
        Invariant::I13,
    ];

    /// Position in [`Invariant::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// `I1` … `I13`.
    pub fn id(self) -> &'static str {
        [
            "I1", "I2", "I3", "I4", "I5", "I6", "I7", "I8", "I9", "I10", "I11", "I12", "I13",
        ][self as usize]
    }

    /// Parses `I1` … `I13`.
    pub fn from_id(id: &str) -> Option<Invariant> {
        Invariant::ALL
            .into_iter()
            .find(|invariant| invariant.id() == id)
    }
}

impl fmt::Display for Invariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// One broken invariant, located.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Violation {
    /// Which invariant.
    pub invariant: Invariant,
    /// The session, from 0.
    pub session: usize,
    /// The run within the session, from 0.
    pub run: usize,
    /// The provider turn, when it applies.
    pub turn: Option<u32>,
    /// The call id, when it applies.
    pub call_id: Option<String>,
    /// One line.
    pub explanation: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} session {} run {}",
            self.invariant, self.session, self.run
        )?;
        if let Some(turn) = self.turn {
            write!(f, " turn {turn}")?;
        }
        if let Some(call_id) = &self.call_id {
            write!(f, " call {call_id:?}")?;
        }
        write!(f, ": {}", self.explanation)
    }
}

/// What the checks found in one scenario.
#[derive(Clone, Debug, Default)]
pub struct Verdict {
    /// Every violation.
    pub violations: Vec<Violation>,
    /// Per invariant, the runs in which its situation arose.
    pub armed: [u32; 13],
}

impl Verdict {
    /// The first violation of `invariant`.
    pub fn first(&self, invariant: Invariant) -> Option<&Violation> {
        self.violations
            .iter()
            .find(|violation| violation.invariant == invariant)
    }
}

/// What the checks need besides the trace.
#[derive(Debug)]
pub struct Oracle {
    schemas: Schemas,
}

impl Oracle {
    /// An oracle with its own compiled schemas.
    pub fn new(schemas: Schemas) -> Oracle {
        Oracle { schemas }
    }

    /// Runs every check on every run of `trace`.
    pub fn check(&self, scenario: &Scenario, trace: &Trace) -> Verdict {
        let mut verdict = Verdict::default();
        let scripts = scenario.sessions.iter().flat_map(|session| &session.runs);
        let mut session_changes: Vec<ChartState> = Vec::new();
        let mut session = usize::MAX;
        for (run_trace, script) in trace.runs.iter().zip(scripts) {
            if run_trace.session != session {
                session = run_trace.session;
                session_changes.clear();
            }
            let view = RunView::new(run_trace, script);
            if run_trace.start_error.is_none() {
                let mut checks = Checks {
                    oracle: self,
                    facts: Vec::new(),
                    parsed: Vec::new(),
                    expected_offer: Vec::new(),
                    expected_rows: 0,
                    scenario,
                    view: &view,
                    violations: &mut verdict.violations,
                    armed: [false; 13],
                };
                checks.expected_offer = checks.offer_by_table();
                checks.expected_rows = checks
                    .expected_offer
                    .iter()
                    .filter_map(|name| catalogue::position(name))
                    .fold(0, |rows, row| rows | 1 << row);
                let configured = checks.configured_values();
                (checks.facts, checks.parsed) = view
                    .batches
                    .iter()
                    .map(|batch| checks.compute_facts(batch, &configured))
                    .unzip();
                checks.run_all();
                session_changes.extend(checks.changes().into_iter().cloned());
                for (count, armed) in verdict.armed.iter_mut().zip(checks.armed) {
                    *count += u32::from(armed);
                }
            }
            if let Some(violation) = i9_undo_restores_each_change(&view, &session_changes) {
                verdict.violations.push(violation);
            }
        }
        verdict
    }
}

/// What the oracle knows about one call before looking at what the runtime did with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct CallFacts {
    /// Id non-empty, at most 160 characters, first of its value in the batch.
    id_ok: bool,
    /// Within the batch cap.
    within_cap: bool,
    /// The tool is offered in this run (by the oracle's own table).
    offered: bool,
    /// A registered tool.
    registered: bool,
    /// Registered, and destructive by the table.
    destructive: bool,
    /// The input parses (R6) and satisfies the schema.
    valid_input: bool,
    /// The raw text is at most 256 KiB and carries no configured value.
    clean_payload: bool,
}

struct Checks<'a, 'v> {
    oracle: &'a Oracle,
    /// What the oracle knows of each call of each batch, worked out once per run.
    facts: Vec<Vec<CallFacts>>,
    /// Each call's input as R6 reads it (`None`: not JSON, or a key repeats), by batch.
    parsed: Vec<Vec<Option<Value>>>,
    /// The tools the oracle expects the run to be offered, by its own table, in name order.
    expected_offer: Vec<&'static str>,
    /// The same tools as a set of rows of the table (bit `i`: row `i`).
    expected_rows: u64,
    scenario: &'a Scenario,
    view: &'v RunView<'a>,
    violations: &'v mut Vec<Violation>,
    armed: [bool; 13],
}

const PLACEHOLDERS: [&str; 2] = ["[REDACTED]", "[LOCAL_PATH]"];
/// Texts at least this long are scanned once per run however often they appear. Shared
/// records are already scanned once (by address), so a shorter text seldom comes again, and
/// scanning it again costs less than hashing every one of them to find out.
const RESCAN_BYTES_MIN: usize = 4096;
const ARGUMENT_BYTES_MAX: usize = 256 * 1024;
const CALL_ID_CHARS_MAX: usize = 160;

impl<'a> Checks<'a, '_> {
    fn run_all(&mut self) {
        self.i1_read_only_runs_are_offered_reads_only();
        self.i2_read_only_runs_run_no_write();
        self.i3_switched_off_tools_are_never_offered_or_run();
        self.i4_input_errors_are_bounded_and_echo_nothing();
        self.i5_invalid_input_never_reaches_a_body();
        self.i6_one_result_per_call_in_order();
        self.i7_sequential_batches_and_writes_never_overlap();
        self.i8_no_secret_leaks();
        self.i9_state_changed_tells_the_truth();
        self.i10_every_run_ends_within_its_limits();
        self.i12_parallel_batches_start_together();
        self.i13_what_is_allowed_is_allowed();
    }

    fn arm(&mut self, invariant: Invariant) {
        self.armed[invariant.index()] = true;
    }

    fn violate(
        &mut self,
        invariant: Invariant,
        turn: Option<u32>,
        call_id: Option<&str>,
        explanation: String,
    ) {
        self.violations.push(Violation {
            invariant,
            session: self.view.trace.session,
            run: self.view.trace.run,
            turn,
            call_id: call_id.map(str::to_owned),
            explanation,
        });
    }

    fn code_interpreter(&self) -> bool {
        self.scenario.code_interpreter
    }

    /// The tools the oracle expects this run to be offered, by its own table.
    fn offer_by_table(&self) -> Vec<&'static str> {
        let script = self.view.script;
        catalogue::by_name()
            .iter()
            .filter(|entry| !entry.opt_in || self.code_interpreter())
            .filter(|entry| !script.read_only || entry.read_only)
            .filter(|entry| !script.disabled_tools.iter().any(|name| name == entry.name))
            .map(|entry| entry.name)
            .collect()
    }

    fn configured_values(&self) -> Vec<&'a str> {
        let scenario: &'a Scenario = self.scenario;
        let script: &'a crate::scenario::RunScript = self.view.script;
        script
            .secrets
            .iter()
            .filter_map(|label| scenario.secret(label))
            .map(|secret| secret.value.as_str())
            .collect()
    }

    /// The facts of each call of `batch`, and each call's input as R6 reads it.
    fn compute_facts(
        &self,
        batch: &BatchView<'_>,
        configured: &[&str],
    ) -> (Vec<CallFacts>, Vec<Option<Value>>) {
        // A batch holds a handful of calls: a list answers "seen before?" fastest.
        let mut seen: Vec<&str> = Vec::with_capacity(batch.calls.len());
        batch
            .calls
            .iter()
            .enumerate()
            .map(|(index, call)| {
                let id_shape = !call.id.is_empty() && call.id.chars().count() <= CALL_ID_CHARS_MAX;
                let id_ok = id_shape && !seen.contains(&call.id.as_str());
                if id_ok {
                    seen.push(&call.id);
                }
                let row = catalogue::position(&call.name)
                    .filter(|&row| !catalogue::TABLE[row].opt_in || self.code_interpreter());
                let registered = row.is_some();
                let destructive = row.is_some_and(|row| !catalogue::TABLE[row].read_only);
                let carries_secret =
                    |text: &str| configured.iter().any(|value| text.contains(value));
                let parsed = strict_parse(&call.arguments);
                let decoded_secret = parsed
                    .as_ref()
                    .is_some_and(|value| any_string(value, &|text| carries_secret(text)));
                let facts = CallFacts {
                    id_ok,
                    within_cap: index < self.view.limits.calls_per_batch_max as usize,
                    offered: row.is_some_and(|row| self.expected_rows & (1 << row) != 0),
                    registered,
                    destructive,
                    valid_input: row
                        .is_some_and(|row| self.oracle.schemas.row_accepts(row, parsed.as_ref())),
                    clean_payload: call.arguments.len() <= ARGUMENT_BYTES_MAX
                        && !carries_secret(&call.arguments)
                        && !decoded_secret,
                };
                (facts, parsed)
            })
            .unzip()
    }

    /// The one result of call `index`, when there is exactly one.
    fn result_of<'b>(batch: &'b BatchView<'_>, index: usize) -> Option<&'b ToolResult> {
        let mut finished = batch.finished_of(index);
        let first = finished.next()?;
        finished.next().is_none().then_some(first.result)
    }

    /// I1. In a read-only run every tool list sent to the provider holds only read-only tools.
    fn i1_read_only_runs_are_offered_reads_only(&mut self) {
        if !self.view.script.read_only || self.view.requests.is_empty() {
            return;
        }
        self.arm(Invariant::I1);
        for request in self.view.new_offers() {
            let writes: Vec<&Arc<str>> = request
                .tools
                .iter()
                .filter(|name| catalogue::entry(name).is_none_or(|entry| !entry.read_only))
                .collect();
            if let Some(first) = writes.first() {
                let explanation = format!(
                    "a read-only run was offered {} non-read-only tools, e.g. {first}",
                    writes.len()
                );
                self.violate(Invariant::I1, Some(request.turn), None, explanation);
                return;
            }
        }
    }

    /// I2. In a read-only run no destructive tool body runs; such calls get `TOOL_NOT_ALLOWED`,
    /// `stateChanged: false`, and the state is unchanged.
    fn i2_read_only_runs_run_no_write(&mut self) {
        if !self.view.script.read_only {
            return;
        }
        let view = self.view;
        for (batch_index, batch) in view.batches.iter().enumerate() {
            for (index, call) in batch.calls.iter().enumerate() {
                let fact = self.facts[batch_index][index];
                if !fact.destructive {
                    continue;
                }
                self.arm(Invariant::I2);
                if view.body_ran(batch, index) {
                    let explanation = format!(
                        "the body of destructive tool {} ran in a read-only run",
                        call.name
                    );
                    return self.violate(
                        Invariant::I2,
                        Some(batch.turn),
                        Some(&call.id),
                        explanation,
                    );
                }
                let Some(result) = Self::result_of(batch, index) else {
                    continue;
                };
                let refused_earlier = !fact.id_ok || !fact.within_cap;
                let code = result.error_code();
                if !refused_earlier && code != Some("ABORTED") && code != Some("TOOL_NOT_ALLOWED") {
                    let explanation = format!(
                        "{} in a read-only run got {} instead of TOOL_NOT_ALLOWED",
                        call.name,
                        code.unwrap_or("success")
                    );
                    return self.violate(
                        Invariant::I2,
                        Some(batch.turn),
                        Some(&call.id),
                        explanation,
                    );
                }
                if result.state_changed || self.state_moved(batch, index) {
                    let explanation =
                        format!("refused {} in a read-only run changed the chart", call.name);
                    return self.violate(
                        Invariant::I2,
                        Some(batch.turn),
                        Some(&call.id),
                        explanation,
                    );
                }
            }
        }
    }

    /// Whether the chart differs between the call's `tool.started` and `tool.finished`.
    fn state_moved(&self, batch: &BatchView<'_>, index: usize) -> bool {
        let Some(started) = batch.started_of(index) else {
            return false;
        };
        let Some(finished) = batch.finished_of(index).next() else {
            return false;
        };
        match (
            self.view.snapshots.get(&started),
            self.view.snapshots.get(&finished.seq),
        ) {
            (Some(before), Some(after)) => !same_state(before, after),
            _ => false,
        }
    }

    /// I3. A switched-off tool is never offered and its body never runs.
    fn i3_switched_off_tools_are_never_offered_or_run(&mut self) {
        let view = self.view;
        let disabled: BTreeSet<&str> = view
            .script
            .disabled_tools
            .iter()
            .map(String::as_str)
            .collect();
        if disabled.is_empty() || view.requests.is_empty() {
            return;
        }
        self.arm(Invariant::I3);
        for request in view.new_offers() {
            if let Some(name) = request
                .tools
                .iter()
                .find(|name| disabled.contains(&***name))
            {
                let explanation = format!("switched-off tool {name} was offered");
                return self.violate(Invariant::I3, Some(request.turn), None, explanation);
            }
        }
        if let Some(body) = view.bodies.iter().find(|body| disabled.contains(body.tool)) {
            let turn = view.batches[body.batch].turn;
            let explanation = format!("the body of switched-off tool {} ran", body.tool);
            self.violate(Invariant::I3, Some(turn), Some(body.call_id), explanation);
        }
    }

    /// I4. Every `TOOL_INPUT_INVALID` lists 1–5 errors `path: message` (root `/`), and no
    /// message echoes an input value.
    fn i4_input_errors_are_bounded_and_echo_nothing(&mut self) {
        let view = self.view;
        for (batch_index, batch) in view.batches.iter().enumerate() {
            for (index, call) in batch.calls.iter().enumerate() {
                let fact = self.facts[batch_index][index];
                if fact.registered && !fact.valid_input {
                    self.arm(Invariant::I4);
                }
                let Some(result) = Self::result_of(batch, index) else {
                    continue;
                };
                let Some(error) = result
                    .error()
                    .filter(|error| error.code == "TOOL_INPUT_INVALID")
                else {
                    continue;
                };
                self.arm(Invariant::I4);
                let fields = error.fields.as_deref().unwrap_or_default();
                if fields.is_empty() || fields.len() > 5 {
                    let explanation = format!(
                        "TOOL_INPUT_INVALID listed {} field errors, not 1 to 5",
                        fields.len()
                    );
                    return self.violate(
                        Invariant::I4,
                        Some(batch.turn),
                        Some(&call.id),
                        explanation,
                    );
                }
                if !lists_fields(&error.message, fields)
                    || fields.iter().any(|field| !field.path.starts_with('/'))
                {
                    let explanation = "the message is not `The tool input is invalid: ` and the `path: message` list".to_owned();
                    return self.violate(
                        Invariant::I4,
                        Some(batch.turn),
                        Some(&call.id),
                        explanation,
                    );
                }
                if let Some(echoed) = echoed_value(
                    self.parsed[batch_index][index].as_ref(),
                    &call.arguments,
                    fields.iter().map(|field| field.message.as_str()),
                    self.schema_text(&call.name),
                ) {
                    let explanation = format!("a field message echoes the input value {echoed:?}");
                    return self.violate(
                        Invariant::I4,
                        Some(batch.turn),
                        Some(&call.id),
                        explanation,
                    );
                }
            }
        }
    }

    fn schema_text(&self, tool: &str) -> &str {
        self.oracle.schemas.published(tool)
    }

    /// I5. A call whose input is invalid never reaches its tool body; the state is unchanged.
    fn i5_invalid_input_never_reaches_a_body(&mut self) {
        let view = self.view;
        for (batch_index, batch) in view.batches.iter().enumerate() {
            for (index, call) in batch.calls.iter().enumerate() {
                let fact = self.facts[batch_index][index];
                if !fact.registered || fact.valid_input {
                    continue;
                }
                self.arm(Invariant::I5);
                if view.body_ran(batch, index) {
                    let explanation = format!(
                        "the body of {} ran with input its schema refuses",
                        call.name
                    );
                    return self.violate(
                        Invariant::I5,
                        Some(batch.turn),
                        Some(&call.id),
                        explanation,
                    );
                }
                if self.state_moved(batch, index) {
                    let explanation = format!(
                        "a call to {} with invalid input changed the chart",
                        call.name
                    );
                    return self.violate(
                        Invariant::I5,
                        Some(batch.turn),
                        Some(&call.id),
                        explanation,
                    );
                }
            }
        }
    }

    /// I6. Each batch gets exactly one result per call, in the order sent, with matching ids.
    fn i6_one_result_per_call_in_order(&mut self) {
        let view = self.view;
        for batch in &view.batches {
            if batch.calls.len() >= 2 || view.was_stopped() || view.hit_turn_limit() {
                self.arm(Invariant::I6);
            }
            for index in 0..batch.calls.len() {
                let count = batch.finished_of(index).count();
                if count != 1 {
                    let explanation = format!(
                        "call {index} of the batch has {count} tool.finished events, not 1"
                    );
                    return self.violate(
                        Invariant::I6,
                        Some(batch.turn),
                        Some(&batch.calls[index].id),
                        explanation,
                    );
                }
            }
        }
        // The session store: each assistant message with n calls is followed by n results,
        // in order, with the same ids.
        let appends = &view.appends;
        for (position, message) in appends.iter().enumerate() {
            let Message::Assistant { calls, .. } = message else {
                continue;
            };
            if calls.is_empty() {
                continue;
            }
            let results: Vec<&str> = appends[position + 1..]
                .iter()
                .map_while(|message| match message {
                    Message::Tool { call_id, .. } => Some(&**call_id),
                    _ => None,
                })
                .collect();
            let ids: Vec<&str> = calls.iter().map(|call| call.id.as_str()).collect();
            if results != ids {
                let explanation = format!(
                    "the batch of {} calls got {} results, ids {:?} for calls {:?}",
                    ids.len(),
                    results.len(),
                    abbreviate(&results),
                    abbreviate(&ids)
                );
                return self.violate(Invariant::I6, None, None, explanation);
            }
        }
    }

    /// I7. In a batch holding a sequential tool, body intervals never overlap and start in the
    /// order sent; two writes never overlap anywhere.
    fn i7_sequential_batches_and_writes_never_overlap(&mut self) {
        let view = self.view;
        let code_interpreter = self.code_interpreter();
        for batch in &view.batches {
            let sequential = batch.calls.iter().any(|call| {
                catalogue::is_registered(&call.name, code_interpreter)
                    && catalogue::entry(&call.name).is_some_and(|entry| entry.sequential)
            });
            if !sequential || batch.bodies.len() < 2 {
                continue;
            }
            self.arm(Invariant::I7);
            for pair in batch.bodies.windows(2) {
                let (first, second) = (&view.bodies[pair[0]], &view.bodies[pair[1]]);
                if second.index <= first.index {
                    let explanation = format!(
                        "in a sequential batch call {} started before call {}",
                        second.index, first.index
                    );
                    return self.violate(
                        Invariant::I7,
                        Some(batch.turn),
                        Some(second.call_id),
                        explanation,
                    );
                }
                let first_end = first.end_ms.unwrap_or(u64::MAX);
                if second.start_ms < first_end {
                    let explanation = format!(
                        "in a sequential batch call {} started at {} ms while call {} ran until {} ms",
                        second.index, second.start_ms, first.index, first_end
                    );
                    return self.violate(
                        Invariant::I7,
                        Some(batch.turn),
                        Some(second.call_id),
                        explanation,
                    );
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
                    return self.violate(
                        Invariant::I7,
                        Some(turn),
                        Some(second.call_id),
                        explanation,
                    );
                }
            }
        }
    }

    /// I8. No planted secret part, and no substring of 8 or more characters of a configured
    /// secret, occurs in any decoded string of a provider request, session record or event
    /// (placeholders excluded); no configured secret reaches a tool body's input.
    fn i8_no_secret_leaks(&mut self) {
        let configured = self.configured_values();
        let scenario: &'a Scenario = self.scenario;
        let prompt: &'a str = &self.view.script.prompt;
        let planted: Vec<&str> = scenario
            .secrets
            .iter()
            .filter(|secret| {
                secret.shape != SecretShape::Configured && prompt.contains(secret.value.as_str())
            })
            .map(|secret| secret.value.as_str())
            .collect();
        if configured.is_empty() && planted.is_empty() {
            return;
        }
        self.arm(Invariant::I8);
        let Some(scanner) = Scanner::new(&planted, &configured) else {
            return;
        };
        let view = self.view;
        for request in &view.requests {
            // Each message is scanned once: the first request that carries it.
            let prompt = if request.new_system_prompt {
                scanner.find(request.system_prompt)
            } else {
                None
            };
            let found = prompt.or_else(|| {
                request
                    .appended
                    .iter()
                    .find_map(|message| scanner.find_in_message(message))
            });
            if let Some(found) = found {
                let explanation = format!(
                    "a provider request carries secret text {}",
                    scanner.describe(found)
                );
                return self.violate(Invariant::I8, Some(request.turn), None, explanation);
            }
        }
        for message in &view.appends {
            if let Some(found) = scanner.find_in_message(message) {
                let explanation = format!(
                    "a session record carries secret text {}",
                    scanner.describe(found)
                );
                return self.violate(Invariant::I8, None, None, explanation);
            }
        }
        for event in &view.events {
            if let Some(found) = scanner.find_in_event(&event.kind) {
                let explanation = format!(
                    "event {} carries secret text {}",
                    event.seq,
                    scanner.describe(found)
                );
                return self.violate(Invariant::I8, None, None, explanation);
            }
        }
        for body in &view.bodies {
            if any_string(body.input, &|text| {
                configured.iter().any(|value| text.contains(value))
            }) {
                let turn = view.batches[body.batch].turn;
                let explanation = format!("a configured secret reached the input of {}", body.tool);
                return self.violate(Invariant::I8, Some(turn), Some(body.call_id), explanation);
            }
        }
    }

    /// I9. `stateChanged` tells the truth; failures leave the state unchanged; undo after a
    /// change restores the state before it.
    fn i9_state_changed_tells_the_truth(&mut self) {
        let view = self.view;
        for batch in &view.batches {
            for (index, call) in batch.calls.iter().enumerate() {
                let (Some(started), Some(result)) =
                    (batch.started_of(index), Self::result_of(batch, index))
                else {
                    continue;
                };
                let Some(finished) = batch.finished_of(index).next() else {
                    continue;
                };
                let (Some(before), Some(after)) = (
                    view.snapshots.get(&started),
                    view.snapshots.get(&finished.seq),
                ) else {
                    continue;
                };
                if self.overlapped(batch, index) {
                    continue;
                }
                if catalogue::entry(&call.name).is_some_and(|entry| !entry.read_only) {
                    self.arm(Invariant::I9);
                }
                let changed = !same_state(before, after);
                if result.is_success() && result.state_changed != changed {
                    let explanation = format!(
                        "{} reported stateChanged {} but the chart {}",
                        call.name,
                        result.state_changed,
                        if changed { "changed" } else { "did not change" }
                    );
                    return self.violate(
                        Invariant::I9,
                        Some(batch.turn),
                        Some(&call.id),
                        explanation,
                    );
                }
                if !result.is_success() && (changed || result.state_changed) {
                    let explanation = format!(
                        "{} failed with {} but the chart changed",
                        call.name,
                        result.error_code().unwrap_or("?")
                    );
                    return self.violate(
                        Invariant::I9,
                        Some(batch.turn),
                        Some(&call.id),
                        explanation,
                    );
                }
            }
        }
    }

    /// The chart states before each change of this run, in order, for the undo check.
    fn changes(&self) -> Vec<&'a ChartState> {
        let view = self.view;
        let mut befores = Vec::new();
        for batch in &view.batches {
            for index in 0..batch.calls.len() {
                let (Some(started), Some(finished)) =
                    (batch.started_of(index), batch.finished_of(index).next())
                else {
                    continue;
                };
                let (Some(before), Some(after)) = (
                    view.snapshots.get(&started),
                    view.snapshots.get(&finished.seq),
                ) else {
                    continue;
                };
                if !same_state(before, after) {
                    befores.push(*before);
                }
            }
        }
        befores
    }

    /// Whether another body of the batch ran while call `index` was between its
    /// `tool.started` and `tool.finished` (then the snapshots cannot be attributed to it).
    fn overlapped(&self, batch: &BatchView<'_>, index: usize) -> bool {
        let view = self.view;
        let mine: Vec<_> = batch
            .bodies
            .iter()
            .map(|&body| &view.bodies[body])
            .filter(|body| body.index == index)
            .collect();
        let others = batch
            .bodies
            .iter()
            .map(|&body| &view.bodies[body])
            .filter(|body| body.index != index);
        // A call without a body finished before any body of its batch ran.
        let Some(me) = mine.first() else { return false };
        let my_end = me.end_ms.unwrap_or(u64::MAX);
        others.into_iter().any(|other| {
            other.start_ms <= my_end && me.start_ms <= other.end_ms.unwrap_or(u64::MAX)
        })
    }

    /// I10. Every run ends (exactly one terminal event) within its turn limit and deadline; no
    /// tool body starts after cancellation, failure or the end of the run.
    fn i10_every_run_ends_within_its_limits(&mut self) {
        let view = self.view;
        let call_turns = view
            .script
            .turns
            .iter()
            .filter(|turn| !turn.calls.is_empty())
            .count();
        let stopped_or_failed = matches!(
            view.terminal().map(|event| &event.kind),
            Some(EventKind::RunFailed { .. } | EventKind::RunCancelled)
        );
        if view.cancel_at.is_some()
            || stopped_or_failed
            || call_turns > view.limits.turns_max as usize
        {
            self.arm(Invariant::I10);
        }
        let terminals = view
            .events
            .iter()
            .filter(|event| event.kind.is_terminal())
            .count();
        if terminals != 1 || view.terminal().is_none() {
            let explanation =
                format!("the run has {terminals} terminal events, and the last event is not one");
            return self.violate(Invariant::I10, None, None, explanation);
        }
        let batches_run = view
            .batches
            .iter()
            .filter(|batch| !batch.started.is_empty())
            .count();
        if batches_run > view.limits.turns_max as usize {
            let explanation = format!(
                "{batches_run} batches ran with turns_max {}",
                view.limits.turns_max
            );
            return self.violate(Invariant::I10, None, None, explanation);
        }
        let end = view.end_ms();
        let deadline = self.deadline_instant();
        // The run stops at a cancel, at its inactivity deadline, or at its end (R20).
        let stop = [view.cancel_at, deadline]
            .into_iter()
            .flatten()
            .fold(end, u64::min);
        if let Some(body) = view.bodies.iter().find(|body| body.start_ms > stop) {
            let turn = view.batches[body.batch].turn;
            let explanation = format!(
                "the body of {} started at {} ms, after the run stopped at {stop} ms",
                body.tool, body.start_ms
            );
            return self.violate(Invariant::I10, Some(turn), Some(body.call_id), explanation);
        }
        if let Some(request) = view.requests.iter().find(|request| request.at_ms > stop) {
            let explanation = format!(
                "the provider was asked again at {} ms, after the run stopped at {stop} ms",
                request.at_ms
            );
            return self.violate(Invariant::I10, Some(request.turn), None, explanation);
        }
        if stop == end {
            return;
        }
        let by_deadline =
            deadline == Some(stop) && view.cancel_at.is_none_or(|cancel| cancel > stop);
        if by_deadline
            && matches!(
                view.terminal().map(|event| &event.kind),
                Some(EventKind::RunCompleted { .. })
            )
        {
            let explanation = format!(
                "its {} ms inactivity deadline passed at {stop} ms, yet the run completed",
                view.limits.inactivity_timeout_ms
            );
            return self.violate(Invariant::I10, None, None, explanation);
        }
        // Once the run stops, a write already running completes; nothing else may keep it
        // going.
        let writes_end = view
            .bodies
            .iter()
            .filter(|body| body.start_ms <= stop)
            .filter(|body| catalogue::entry(body.tool).is_some_and(|entry| !entry.read_only))
            .filter_map(|body| body.end_ms)
            .max()
            .unwrap_or(0);
        let allowed_end = stop.max(writes_end);
        if end > allowed_end {
            let why = if by_deadline {
                format!(
                    "its {} ms inactivity deadline passed at {stop} ms",
                    view.limits.inactivity_timeout_ms
                )
            } else {
                format!("it was cancelled at {stop} ms")
            };
            let explanation = format!(
                "the run ended at {end} ms, but {why} and the writes running then ended by {allowed_end} ms"
            );
            self.violate(Invariant::I10, None, None, explanation);
        }
    }

    /// The instant the inactivity deadline passed, if it did: the first moment at which
    /// `inactivity_timeout_ms` went by without a provider reply or a finished call, not
    /// counting time spent waiting for the user (R19).
    fn deadline_instant(&self) -> Option<u64> {
        let view = self.view;
        let timeout = view.limits.inactivity_timeout_ms;
        let mut activity: Vec<u64> = vec![0];
        activity.extend(
            view.replies
                .iter()
                .filter(|reply| reply.error.is_none())
                .map(|reply| reply.at_ms),
        );
        activity.extend(
            view.batches
                .iter()
                .flat_map(|batch| batch.finished.iter().map(|finished| finished.at_ms)),
        );
        activity.push(view.end_ms());
        activity.sort_unstable();
        let mut waiting: Vec<(u64, u64)> = view
            .bodies
            .iter()
            .filter(|body| body.tool == "ask_user")
            .map(|body| (body.start_ms, body.end_ms.unwrap_or(view.end_ms())))
            .collect();
        waiting.sort_unstable();
        activity.windows(2).find_map(|pair| {
            // Walk the window from its start, skipping the waits, until the timeout is used.
            let (from, to) = (pair[0], pair[1]);
            let mut cursor = from;
            let mut remaining = timeout;
            for &(start, end) in &waiting {
                let (start, end) = (start.max(cursor), end.min(to));
                if start >= end {
                    continue;
                }
                if start - cursor >= remaining {
                    break;
                }
                remaining -= start - cursor;
                cursor = end;
            }
            let deadline = cursor + remaining;
            (deadline < to).then_some(deadline)
        })
    }

    /// I12. In a batch without a sequential tool, every body starts at the batch's start
    /// instant (checked when at least two bodies have latency ≥ 1 ms).
    fn i12_parallel_batches_start_together(&mut self) {
        let view = self.view;
        let code_interpreter = self.code_interpreter();
        for batch in &view.batches {
            let sequential = batch.calls.iter().any(|call| {
                catalogue::is_registered(&call.name, code_interpreter)
                    && catalogue::entry(&call.name).is_some_and(|entry| entry.sequential)
            });
            let slow = batch
                .bodies
                .iter()
                .filter(|&&body| {
                    view.script
                        .tools
                        .get(view.bodies[body].tool)
                        .is_some_and(|behaviour| behaviour.latency_ms >= 1)
                })
                .count();
            if sequential || slow < 2 {
                continue;
            }
            self.arm(Invariant::I12);
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
                return self.violate(
                    Invariant::I12,
                    Some(batch.turn),
                    Some(late.call_id),
                    explanation,
                );
            }
        }
    }

    /// Whether the names of `tools` are, as a set, the expected offer (each expected tool at
    /// least once, nothing else).
    fn offers_exactly_the_expected(&self, tools: &[Arc<str>]) -> bool {
        // The expected offer is part of the table, so each of its names has a bit of `seen`.
        const _: () = assert!(catalogue::TABLE.len() <= 64);
        let mut seen = 0u64;
        for name in tools {
            match catalogue::position(name) {
                Some(row) if self.expected_rows & (1 << row) != 0 => seen |= 1 << row,
                _ => return false,
            }
        }
        seen == self.expected_rows
    }

    /// I13. What is allowed is allowed: the offer is exactly the registered tools the policy
    /// allows; a valid call to an offered tool reaches its body; a run whose provider stops
    /// calling tools ends `run.completed`.
    fn i13_what_is_allowed_is_allowed(&mut self) {
        let view = self.view;
        for request in view.new_offers() {
            self.arm(Invariant::I13);
            if !self.offers_exactly_the_expected(request.tools) {
                let mut offered: Vec<&str> = request.tools.iter().map(|name| &**name).collect();
                offered.sort_unstable();
                let missing: Vec<&&str> = self
                    .expected_offer
                    .iter()
                    .filter(|name| offered.binary_search(name).is_err())
                    .collect();
                let explanation =
                    format!("the offer differs from what the policy allows; missing {missing:?}");
                return self.violate(Invariant::I13, Some(request.turn), None, explanation);
            }
        }
        let excused = view.was_stopped() || view.hit_turn_limit();
        for (batch_index, batch) in view.batches.iter().enumerate() {
            for (index, call) in batch.calls.iter().enumerate() {
                let fact = self.facts[batch_index][index];
                if !(fact.id_ok
                    && fact.within_cap
                    && fact.offered
                    && fact.valid_input
                    && fact.clean_payload)
                {
                    continue;
                }
                self.arm(Invariant::I13);
                let ran = view.body_ran(batch, index);
                let aborted = Self::result_of(batch, index).and_then(ToolResult::error_code)
                    == Some("ABORTED");
                if !(ran || (aborted && excused)) {
                    let code = Self::result_of(batch, index)
                        .and_then(ToolResult::error_code)
                        .unwrap_or("no result");
                    let explanation = format!(
                        "a valid call to offered tool {} never reached its body ({code})",
                        call.name
                    );
                    return self.violate(
                        Invariant::I13,
                        Some(batch.turn),
                        Some(&call.id),
                        explanation,
                    );
                }
            }
        }
        if let Some(last) = view.replies.last() {
            if last.error.is_none() && last.calls.is_empty() {
                self.arm(Invariant::I13);
                if !matches!(
                    view.terminal().map(|event| &event.kind),
                    Some(EventKind::RunCompleted { .. })
                ) {
                    let explanation =
                        "the provider stopped calling tools but the run did not end run.completed"
                            .to_owned();
                    self.violate(Invariant::I13, Some(last.turn), None, explanation);
                }
            }
        }
    }
}

/// The undo part of I9: undoing at the end of a session restores, from the last change
/// back, the state before each change (at most the undo depth of them).
fn i9_undo_restores_each_change(view: &RunView<'_>, changes: &[ChartState]) -> Option<Violation> {
    let (undone, before) = view
        .undone
        .iter()
        .zip(changes.iter().rev())
        .find(|(undone, before)| **undone != *before)?;
    let _ = (undone, before);
    Some(Violation {
        invariant: Invariant::I9,
        session: view.trace.session,
        run: view.trace.run,
        turn: None,
        call_id: None,
        explanation: "undo did not restore the state before the change it undid".to_owned(),
    })
}

/// Whether `start..end` of `text` lies inside an occurrence of a placeholder.
fn inside_placeholder(text: &[u8], start: usize, end: usize) -> bool {
    PLACEHOLDERS.iter().any(|placeholder| {
        let placeholder = placeholder.as_bytes();
        let from = end.saturating_sub(placeholder.len());
        (from..=start).any(|at| text[at..].starts_with(placeholder))
    })
}

fn abbreviate<'a>(ids: &[&'a str]) -> Vec<&'a str> {
    ids.iter()
        .take(6)
        .map(|id| id.get(..24).unwrap_or(id))
        .collect()
}

/// Whether any string or key of `value` satisfies `test`.
fn any_string(value: &Value, test: &dyn Fn(&str) -> bool) -> bool {
    match value {
        Value::String(text) => test(text),
        Value::Array(items) => items.iter().any(|item| any_string(item, test)),
        Value::Object(members) => members
            .iter()
            .any(|(key, member)| test(key) || any_string(member, test)),
        _ => false,
    }
}

/// A distinctive value of the input that one of `messages` quotes: a string of at least 6
/// characters, or a number of at least 5, that the tool's published schema does not contain
/// (messages may name allowed values and bounds, which come from the schema).
fn echoed_value<'m>(
    parsed: Option<&Value>,
    arguments: &str,
    messages: impl Iterator<Item = &'m str> + Clone,
    schema: &str,
) -> Option<String> {
    // Input the strict reading refused (a repeated key) is still read, as a model would.
    let lenient;
    let value = match parsed {
        Some(value) => value,
        None => {
            lenient = serde_json::from_str::<Value>(arguments).ok()?;
            &lenient
        }
    };
    let mut candidates = Vec::new();
    collect_values(value, &mut candidates);
    // The messages are short and the schema is long: look in the messages first.
    candidates
        .into_iter()
        .find(|candidate| {
            messages
                .clone()
                .any(|message| message.contains(candidate.as_ref()))
                && !schema.contains(candidate.as_ref())
        })
        .map(Cow::into_owned)
}

fn collect_values<'v>(value: &'v Value, into: &mut Vec<Cow<'v, str>>) {
    match value {
        Value::String(text) if text.chars().count() >= 6 => into.push(Cow::Borrowed(text)),
        Value::Number(number) => {
            let text = number.to_string();
            if text.len() >= 5 {
                into.push(Cow::Owned(text));
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect_values(item, into)),
        Value::Object(members) => members
            .values()
            .for_each(|member| collect_values(member, into)),
        _ => {}
    }
}

/// Whether `message` is `The tool input is invalid: ` followed by the `path: message` of
/// each field, joined by `; ` (compared in place, nothing formatted).
fn lists_fields(message: &str, fields: &[FieldError]) -> bool {
    let Some(mut rest) = message.strip_prefix("The tool input is invalid: ") else {
        return false;
    };
    for (index, field) in fields.iter().enumerate() {
        let item = if index == 0 {
            Some(rest)
        } else {
            rest.strip_prefix("; ")
        };
        match item
            .and_then(|item| item.strip_prefix(field.path.as_str()))
            .and_then(|item| item.strip_prefix(": "))
            .and_then(|item| item.strip_prefix(field.message.as_str()))
        {
            Some(after) => rest = after,
            None => return false,
        }
    }
    rest.is_empty()
}

/// Finds planted parts (whole), and runs of 8 or more characters shared with a configured
/// value, outside placeholders.
///
/// Built per run, so it must be cheap to build as well as to search. The finding is done by
/// the `ward_fragments` scanner, a neutral library (it knows nothing of ward's runtime, and is
/// checked against its own plain reference version); what counts is the oracle's own policy:
/// a planted part only whole, a configured value in any run of 8 or more characters, and
/// nothing inside a placeholder.
struct Scanner<'a> {
    fragments: Fragments,
    /// (secret, whether any 8-character run of it counts, or only the whole), in the order
    /// given to `fragments`.
    secrets: Vec<(&'a [u8], bool)>,
    /// The shortest thing looked for: shorter texts (keys, short values) hold none.
    length_min: usize,
    /// Long texts already scanned in this run: (length, hash).
    scanned: RefCell<AddressSet<(usize, u64)>>,
    /// Result data already scanned in this run, by address (the trace keeps them alive).
    scanned_data: RefCell<AddressSet<usize>>,
    /// Messages already scanned in this run, by address (the trace keeps them alive).
    scanned_messages: RefCell<AddressSet<usize>>,
}

/// A run of this many characters of a configured value is a leak (I8).
const RUN_CHARS_MIN: usize = 8;

impl<'a> Scanner<'a> {
    fn new(planted: &[&'a str], configured: &[&'a str]) -> Option<Scanner<'a>> {
        // A configured value of fewer than 8 characters has no run that counts.
        let secrets: Vec<(&'a [u8], bool)> = planted
            .iter()
            .map(|part| (part.as_bytes(), false))
            .chain(
                configured
                    .iter()
                    .filter(|value| value.chars().count() >= RUN_CHARS_MIN)
                    .map(|value| (value.as_bytes(), true)),
            )
            .collect();
        // A planted part counts only whole: asked for as many characters as it has bytes,
        // the scanner reports runs holding all its characters, and `find_long` keeps the
        // whole ones.
        let fragments = Fragments::new(
            secrets
                .iter()
                .map(|&(secret, runs)| (secret, if runs { RUN_CHARS_MIN } else { secret.len() })),
        );
        let length_min = fragments.run_len_min()?;
        Some(Scanner {
            fragments,
            secrets,
            length_min,
            scanned: RefCell::default(),
            scanned_data: RefCell::default(),
            scanned_messages: RefCell::default(),
        })
    }

    /// The index of a secret found in `text` outside placeholders.
    #[inline]
    fn find(&self, text: &str) -> Option<usize> {
        if text.len() < self.length_min {
            return None;
        }
        self.find_long(text)
    }

    /// [`Scanner::find`] of a text at least as long as the shortest secret.
    fn find_long(&self, text: &str) -> Option<usize> {
        // The same text can reach the oracle several times (a reply, the events, a request
        // or the store when they hold separate copies): scan a long text only the first time.
        // A text seen before held nothing, or the check would already have stopped.
        if text.len() >= RESCAN_BYTES_MIN {
            let key = (text.len(), xxhash_rust::xxh3::xxh3_64(text.as_bytes()));
            if !self.scanned.borrow_mut().insert(key) {
                return None;
            }
        }
        let bytes = text.as_bytes();
        self.fragments
            .runs(bytes)
            .find(|run| {
                let (secret, runs) = self.secrets[run.needle];
                let leaks = runs || run.end - run.start == secret.len();
                leaks && !inside_placeholder(bytes, run.start, run.end)
            })
            .map(|run| run.needle)
    }

    fn find_in_value(&self, value: &Value) -> Option<usize> {
        match value {
            Value::String(text) => self.find(text),
            Value::Array(items) => items.iter().find_map(|item| self.find_within(item)),
            Value::Object(members) => members
                .iter()
                .find_map(|(key, member)| self.find(key).or_else(|| self.find_within(member))),
            _ => None,
        }
    }

    /// [`Scanner::find_in_value`] of an item or a member, deciding leaves in place (result
    /// tables hold thousands of numbers).
    #[inline(always)]
    fn find_within(&self, value: &Value) -> Option<usize> {
        match value {
            Value::Null | Value::Bool(_) | Value::Number(_) => None,
            Value::String(text) => self.find(text),
            Value::Array(_) | Value::Object(_) => self.find_in_value(value),
        }
    }

    /// A secret in `message`. A message the trace holds once, shared by the request that
    /// carried it and the store that kept it, is scanned once: a message scanned before held
    /// nothing, or the check would already have stopped.
    fn find_in_message(&self, message: &Message) -> Option<usize> {
        let address = std::ptr::from_ref(message) as usize;
        if !self.scanned_messages.borrow_mut().insert(address) {
            return None;
        }
        match message {
            Message::User { text } => self.find(text),
            Message::Assistant { text, calls } => {
                self.find(text).or_else(|| self.find_in_calls(calls))
            }
            Message::Tool {
                call_id,
                name,
                result,
            } => self
                .find(call_id)
                .or_else(|| self.find(name))
                .or_else(|| self.find_in_result(result)),
        }
    }

    fn find_in_calls(&self, calls: &[ToolCall]) -> Option<usize> {
        calls.iter().find_map(|call| {
            self.find(&call.id)
                .or_else(|| self.find(&call.name))
                .or_else(|| self.find(&call.arguments))
        })
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

    fn find_in_result(&self, result: &ToolResult) -> Option<usize> {
        match &result.outcome {
            Outcome::Success(data) => {
                // One result reaches the provider, the store and the events as the same
                // shared value: scan it once.
                let address = std::sync::Arc::as_ptr(data) as usize;
                if !self.scanned_data.borrow_mut().insert(address) {
                    return None;
                }
                self.find_in_value(data)
            }
            Outcome::Failure(error) => self.find_in_error(error),
        }
    }

    fn find_in_event(&self, kind: &EventKind) -> Option<usize> {
        match kind {
            EventKind::RunStarted { tools, .. } => tools.iter().find_map(|tool| self.find(tool)),
            EventKind::UserMessageCreated { text } | EventKind::RunCompleted { text } => {
                self.find(text)
            }
            EventKind::AssistantMessageCompleted { text, calls, .. } => {
                self.find(text).or_else(|| self.find_in_calls(calls))
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
                .or_else(|| self.find_in_result(result)),
            EventKind::RunFailed { error } => self.find_in_error(error),
            EventKind::RunCancelled => None,
        }
    }

    /// Names what was found without printing a secret: its length and first two characters.
    fn describe(&self, secret: usize) -> String {
        let text = String::from_utf8_lossy(self.secrets[secret].0);
        let head: String = text.chars().take(2).collect();
        format!(
            "(of a {}-character secret starting {head:?})",
            text.chars().count()
        )
    }
}

/// Whether two chart snapshots are equal. The trace shares one state between snapshots until
/// a change, so the same state is answered without comparing it with itself.
fn same_state(before: &ChartState, after: &ChartState) -> bool {
    std::ptr::eq(before, after) || before == after
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(path: &str, message: &str) -> FieldError {
        FieldError {
            path: path.to_owned(),
            message: message.to_owned(),
        }
    }

    #[test]
    fn the_listed_fields_must_be_the_message_exactly() {
        let fields = [
            field("/a", "must be a string"),
            field("/b", "is not allowed"),
        ];
        let exact = "The tool input is invalid: /a: must be a string; /b: is not allowed";
        assert!(lists_fields(exact, &fields));
        for wrong in [
            "The tool input is invalid: /a: must be a string",
            "The tool input is invalid: /a: must be a string; /b: is not allowed; ",
            "The tool input is invalid: /a: must be a string, /b: is not allowed",
            "The tool input is invalid: /b: is not allowed; /a: must be a string",
            "tool input is invalid: /a: must be a string; /b: is not allowed",
        ] {
            assert!(!lists_fields(wrong, &fields), "{wrong}");
        }
    }

    #[test]
    fn an_echoed_value_is_found_in_strictly_and_leniently_read_input() {
        let messages = ["must be at most 798, not zqAB12cd"];
        let strict = strict_parse(r#"{"limit":"zqAB12cd"}"#);
        let found = echoed_value(strict.as_ref(), "", messages.iter().copied(), "{}");
        assert_eq!(found.as_deref(), Some("zqAB12cd"));
        // A repeated key: no strict reading, the lenient one still finds the value.
        let repeated = r#"{"limit":1,"limit":"zqAB12cd"}"#;
        assert!(strict_parse(repeated).is_none());
        let found = echoed_value(None, repeated, messages.iter().copied(), "{}");
        assert_eq!(found.as_deref(), Some("zqAB12cd"));
        // A value the schema itself spells is not an echo.
        let schema = r#"{"enum":["zqAB12cd"]}"#;
        let found = echoed_value(strict.as_ref(), "", messages.iter().copied(), schema);
        assert_eq!(found, None);
    }
}
