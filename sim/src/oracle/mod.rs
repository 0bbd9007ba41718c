//! The oracle: the invariants of SPEC §9, one file each (`i1_…` to `i13_…`, each opening with
//! its SPEC text) and one folder for I14's reference model (`i14/`, its `mod.rs` opening with
//! the SPEC text), so that `grep I7` finds the check of I7 and the next invariant is one more
//! file beside them.
//!
//! Every check sees only what [`crate::world`] recorded at the runtime's boundaries —
//! provider requests and replies, tool bodies' starts, ends, inputs and outputs, session store
//! appends, events, chart snapshots and undo — plus the scenario it ran. The oracle carries
//! its own copy of the catalogue, of the SPEC's default limits, of its other numbers and of
//! R21's provider error codes, and compiles the published schemas itself
//! ([`crate::catalogue`]); it never calls ward's redactor or validator, and no
//! check knows about any seeded bug.
//!
//! Verdicts come from values: two traces that hold equal records get the same verdict,
//! whether the runtime shared a record between the places it reached or sent copies.
//!
//! # How a check is written
//!
//! Each file has a function `check(run, findings)`. `RunCheck` holds what every check
//! reads about one run: the arranged trace ([`RunView`]), the script, the limits by the
//! oracle's own table, and the `CallFacts` of every call (what the oracle knows of a call
//! before looking at what the runtime did with it). A check calls `Findings::arm` when its
//! situation arises in the run ("armed": an oracle that never had a chance to fire shows up
//! in the campaign summary), and `Findings::report` with a [`Breach`] to report a violation
//! at a call or at the run; it stops at its first violation in a run.
//!
//! I15–I19 (durable sessions, SPEC §16) are checked on the crash explorer's executions
//! ([`crate::crash`]) by [`durable::check`], one file each beside the others.
//!
//! I11 (determinism) compares two executions rather than one trace: every caller that
//! executes a scenario twice asks [`i11_same_scenario_same_trace::compare`].

pub mod durable;
mod i10_every_run_ends_within_its_limits;
pub mod i11_same_scenario_same_trace;
mod i12_parallel_batches_start_together;
mod i13_what_is_allowed_is_allowed;
// I14, the runtime agrees with the model: a folder, the reference model is several files.
mod i14;
mod i1_read_only_runs_are_offered_reads_only;
mod i2_read_only_runs_run_no_write;
mod i3_switched_off_tools_are_never_offered_or_run;
mod i4_input_errors_are_bounded_and_echo_nothing;
mod i5_invalid_input_never_reaches_a_body;
mod i6_one_result_per_call_in_order;
mod i7_sequential_batches_and_writes_never_overlap;
mod i8_no_secret_leaks;
mod i9_state_changed_tells_the_truth;
// The oracle's own readings of R22's guard and of R6–R7's error list, shared by I4 and I8,
// and what the world itself said (I8).
mod guarded;
pub(crate) mod input_errors;
mod said;
mod wording;

use std::fmt;

use serde::Serialize;
use serde_json::Value;
use ward_core::driver::Limits;
use ward_core::envelope::ToolResult;

use crate::catalogue::{self, ARGUMENT_BYTES_MAX, CALL_ID_CHARS_MAX, Entry, Schemas, strict_parse};
use crate::scenario::{RunScript, Scenario};
use crate::view::{BatchView, RunView};
use crate::world::Trace;

/// What a verdict is about: the protocol (P6), then the invariants of SPEC §9 (I1–I14) and
/// of durable sessions (§16, I15–I19). In this order a scenario reports its first breach, so
/// a runtime that broke the protocol is told that first: nothing else it did can be judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Invariant {
    /// P6: the runtime spoke the protocol (SPEC §15). Not an invariant of §9, but a verdict
    /// like one: a row and a count of its own, a violation whatever the runtime claims.
    P6,
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
    /// The runtime agrees with the reference model.
    I14,
    /// At most once, exactly once, whatever the crashes.
    I15,
    /// Nothing acknowledged is lost.
    I16,
    /// Every call still has exactly one result after any number of resumes.
    I17,
    /// Nothing secret at rest.
    I18,
    /// A resumed run keeps every promise.
    I19,
}

impl Invariant {
    /// How many there are.
    pub const COUNT: usize = 20;

    /// Every one, in order.
    pub const ALL: [Invariant; Invariant::COUNT] = [
        Invariant::P6,
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
        Invariant::I14,
        Invariant::I15,
        Invariant::I16,
        Invariant::I17,
        Invariant::I18,
        Invariant::I19,
    ];

    /// Position in [`Invariant::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// `P6`, `I1` … `I19`.
    pub fn id(self) -> &'static str {
        [
            "P6", "I1", "I2", "I3", "I4", "I5", "I6", "I7", "I8", "I9", "I10", "I11", "I12", "I13",
            "I14", "I15", "I16", "I17", "I18", "I19",
        ][self.index()]
    }

    /// Parses `P6`, `I1` … `I19`.
    pub fn from_id(id: &str) -> Option<Invariant> {
        Invariant::ALL
            .into_iter()
            .find(|invariant| invariant.id() == id)
    }

    /// Whether it is an invariant of durable sessions (I15–I19), which only the crash
    /// explorer arms (`ward run --crashes`).
    pub fn is_durable(self) -> bool {
        self >= Invariant::I15
    }

    /// The rules of the SPEC this invariant rests on (P2): a runtime that does not claim every
    /// one of them has the invariant reported `not claimed`, never violated. I11 rests on the
    /// protocol's determinism (P4), which every runtime behind it owes, and on no rule; P6 is
    /// the protocol itself, owed by every runtime behind it.
    pub fn rules(self) -> &'static [&'static str] {
        match self {
            Invariant::P6 => &[],
            Invariant::I1 => &["R4", "R11", "R12"],
            Invariant::I2 => &["R3", "R11", "R12"],
            Invariant::I3 => &["R3", "R4", "R13"],
            Invariant::I4 => &["R6", "R7", "R8"],
            Invariant::I5 => &["R3", "R5"],
            Invariant::I6 => &["R3", "R16", "R17", "R19", "R20"],
            Invariant::I7 => &["R17"],
            Invariant::I8 => &["R15", "R22", "R24", "R25", "R26", "R27", "R28", "R29"],
            Invariant::I9 => &["R3"],
            Invariant::I10 => &["R16", "R19", "R20"],
            Invariant::I11 => &[],
            Invariant::I12 => &["R17"],
            Invariant::I13 => &["R3", "R4", "R11", "R13", "R16"],
            Invariant::I14 => &[
                "R1", "R2", "R3", "R4", "R5", "R6", "R7", "R8", "R8a", "R11", "R12", "R13", "R14",
                "R15", "R16", "R17", "R18", "R19", "R20", "R21", "R22", "R23",
            ],
            Invariant::I15 => &["R31", "R32"],
            Invariant::I16 => &["R30", "R35"],
            Invariant::I17 => &["R31", "R32", "R33"],
            Invariant::I18 => &["R30"],
            Invariant::I19 => &["R34"],
        }
    }

    /// The rules this invariant rests on in a run that ends `run.completed`, which no stop
    /// touched: [`rules`](Invariant::rules) without R20 where the invariant needs R20 only
    /// for a stop. I6 (one result per call, in order) rests on R20 when a cancel, a deadline
    /// or a failure cut a batch, and on R3, R16, R17 and R19 alone otherwise; so a runtime
    /// that keeps every rule but R20 is still judged on the runs it completes.
    pub fn rules_unstopped(self) -> &'static [&'static str] {
        match self {
            Invariant::I6 => &["R3", "R16", "R17", "R19"],
            other => other.rules(),
        }
    }

    /// Whether a runtime claiming `claims` promises every rule this invariant rests on.
    pub fn is_claimed_by(self, claims: &[String]) -> bool {
        self.rules()
            .iter()
            .all(|rule| claims.iter().any(|claim| claim == rule))
    }

    /// The invariant that catches the seeded bug `bug` (SPEC §11): the one a campaign with
    /// that bug reports its first failure about, when any seed breaks it.
    pub fn catching(bug: ward_core::fault::Fault) -> Invariant {
        Invariant::from_id(bug.invariant()).expect("every bug of the catalogue names I1 to I19")
    }
}

impl fmt::Display for Invariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// What exactly went wrong: each check of each invariant, named. The invariant follows from
/// it ([`Breach::invariant`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Breach {
    /// I1: a read-only run was offered a tool that is not read-only.
    WriteOffered,
    /// I2: a destructive body ran in a read-only run.
    WriteRanInReadOnlyRun,
    /// I2: a destructive call in a read-only run got another result than `TOOL_NOT_ALLOWED`.
    WriteNotRefused,
    /// I2: a refused destructive call changed the chart.
    RefusedWriteChangedState,
    /// I3: a switched-off tool was offered.
    SwitchedOffOffered,
    /// I3: a switched-off tool's body ran.
    SwitchedOffRan,
    /// I4: `TOOL_INPUT_INVALID` listed no field error, or more than 5.
    FieldErrorCount,
    /// I4: the message is not the prefix and the `path: message` list, or a path is not a
    /// JSON Pointer.
    FieldErrorFormat,
    /// I4: a field message quotes a value of the input.
    FieldErrorEchoesValue,
    /// I4: the error list differs from the one the oracle predicts (R6, R7): another error,
    /// path, order or wording.
    FieldErrorsDiffer,
    /// I5: a body ran with input its schema refuses.
    InvalidInputRan,
    /// I5: a call with invalid input changed the chart.
    InvalidInputChangedState,
    /// I6: a call got no `tool.finished` event, or more than one.
    ResultCount,
    /// I6: a call's `tool.started` came twice, or after its `tool.finished`.
    StartOutOfTurn,
    /// I6: the store's results of a batch are not one per call, in order, with the calls' ids.
    StoredResultsMismatch,
    /// I6: a provider request gives a batch's results other than one per call, in order, with
    /// the calls' ids.
    SentResultsMismatch,
    /// I7: in a sequential batch a call started before an earlier one.
    SequentialOutOfOrder,
    /// I7: in a sequential batch a call started while another ran.
    SequentialOverlap,
    /// I7: two writes overlapped in time.
    WritesOverlap,
    /// I8: a provider request carries secret text.
    SecretInRequest,
    /// I8: a session record carries secret text.
    SecretInStore,
    /// I8: an event carries secret text.
    SecretInEvent,
    /// I8: a configured secret reached a tool body's input.
    SecretInToolInput,
    /// I8: a guarded record is not the record as produced with exactly its configured values
    /// and their fragments replaced (R22).
    GuardedRecordDiffers,
    /// I9: a success reported `stateChanged` other than what happened to the chart.
    StateChangedUntrue,
    /// I9: a failed call changed the chart (or reported a change).
    FailureChangedState,
    /// I9: undo did not restore the state before the change it undid.
    UndoDiffers,
    /// I10: the run failed `TOOL_LOOP_LIMIT` before a reply with calls came past `turns_max`.
    LoopLimitEarly,
    /// I10: the run has no terminal event as its last event, or more than one.
    TerminalEvents,
    /// I10: more batches ran than the turn limit allows.
    TooManyBatches,
    /// I10: a body started after the run stopped.
    BodyAfterStop,
    /// I10: the provider was asked again after the run stopped.
    RequestAfterStop,
    /// I10: the run completed although its inactivity deadline had passed.
    CompletedPastDeadline,
    /// I10: the run ended later than its stop and the writes running then allow.
    EndedLate,
    /// I10: the run failed `DEADLINE_EXCEEDED` before its inactivity deadline was due.
    DeadlineEarly,
    /// I11: the same scenario gave two different traces.
    TraceDiffers,
    /// I12: in a parallel batch a body started after the batch's start instant.
    ParallelStartedLate,
    /// I13: the offer differs from what the policy allows.
    OfferDiffers,
    /// I13: a valid call to an offered tool never reached its body.
    AllowedCallRefused,
    /// I13: the provider stopped calling tools but the run did not end `run.completed`.
    NotCompleted,
    /// I14: a call's result, or whether its body ran, differs from the model's.
    ModelCall,
    /// I14: the provider was asked, or a body started, at another instant than the model's.
    ModelTiming,
    /// I14: the run ended otherwise, or at another instant, than the model's.
    ModelRunEnd,
    /// I14: the run's events do not open and number as R23 says, or the prompt they announce
    /// is not what the store keeps and the provider receives first.
    ModelEvents,
    /// P6: the runtime broke the protocol: it crashed, exited, wrote a line that is not a
    /// message or a message out of turn, or went silent.
    ProtocolBroken,
    /// I15: ward's chart after the crashes (its last state or its history) differs from the
    /// chart without them: a write applied twice, or lost.
    ChartChangedTwice,
    /// I15: the body of an outside effect (R32) started more than once for one call.
    OutsideEffectTwice,
    /// I16: after a crash the runtime did not start again on its store.
    StoreNotReopened,
    /// I16: a transcript shown after a crash lost a message whose append was acknowledged.
    AcknowledgedLost,
    /// I16: a turn was asked again with another transcript (R33).
    ReplyAskedAgain,
    /// I17: a call has no result after the resumes.
    NoResultAfterResume,
    /// I17: a batch's results are out of the calls' order after the resumes.
    ResultOrderAfterResume,
    /// I17: a result was acknowledged where no call awaited one (a call answered twice).
    ResultWithoutCall,
    /// I17: a call of R32 cut by a crash did not get `OUTCOME_UNKNOWN`.
    OutcomeUnknownMissing,
    /// I17: a call got `OUTCOME_UNKNOWN` without a crash cutting it.
    OutcomeUnknownWithoutCut,
    /// I18: a byte written to the store holds a planted part or 8 characters of a configured
    /// value.
    SecretAtRest,
    /// I19: the session without crashes did not finish, so nothing can be compared with it.
    ReferenceUnfinished,
    /// I19: the session did not go on after a crash.
    SessionStopped,
    /// I19: a resumed read-only run was offered or ran a write.
    ReadOnlyLost,
    /// I19: a resumed run went past its turn limit.
    TurnLimitLost,
    /// I19: a resumed run counted its turns otherwise than without crashes.
    TurnCountLost,
    /// I19: a request after a resume differs from the one without crashes.
    RequestDiffers,
    /// I19: a run acknowledged another number of messages than without crashes.
    AppendedCountDiffers,
    /// I19: an acknowledged message differs from the one without crashes.
    AppendedDiffers,
    /// I19: a run ended otherwise than without crashes.
    RunEndDiffers,
}

impl Breach {
    /// The invariant this breaks.
    pub fn invariant(self) -> Invariant {
        use Breach::*;
        match self {
            WriteOffered => Invariant::I1,
            WriteRanInReadOnlyRun | WriteNotRefused | RefusedWriteChangedState => Invariant::I2,
            SwitchedOffOffered | SwitchedOffRan => Invariant::I3,
            FieldErrorCount | FieldErrorFormat | FieldErrorEchoesValue | FieldErrorsDiffer => {
                Invariant::I4
            }
            InvalidInputRan | InvalidInputChangedState => Invariant::I5,
            ResultCount | StartOutOfTurn | StoredResultsMismatch | SentResultsMismatch => {
                Invariant::I6
            }
            SequentialOutOfOrder | SequentialOverlap | WritesOverlap => Invariant::I7,
            SecretInRequest | SecretInStore | SecretInEvent | SecretInToolInput
            | GuardedRecordDiffers => Invariant::I8,
            StateChangedUntrue | FailureChangedState | UndoDiffers => Invariant::I9,
            TerminalEvents
            | TooManyBatches
            | LoopLimitEarly
            | BodyAfterStop
            | RequestAfterStop
            | CompletedPastDeadline
            | EndedLate
            | DeadlineEarly => Invariant::I10,
            TraceDiffers => Invariant::I11,
            ParallelStartedLate => Invariant::I12,
            OfferDiffers | AllowedCallRefused | NotCompleted => Invariant::I13,
            ModelCall | ModelTiming | ModelRunEnd | ModelEvents => Invariant::I14,
            ProtocolBroken => Invariant::P6,
            ChartChangedTwice | OutsideEffectTwice => Invariant::I15,
            StoreNotReopened | AcknowledgedLost | ReplyAskedAgain => Invariant::I16,
            NoResultAfterResume
            | ResultOrderAfterResume
            | ResultWithoutCall
            | OutcomeUnknownMissing
            | OutcomeUnknownWithoutCut => Invariant::I17,
            SecretAtRest => Invariant::I18,
            ReferenceUnfinished | SessionStopped | ReadOnlyLost | TurnLimitLost | TurnCountLost
            | RequestDiffers | AppendedCountDiffers | AppendedDiffers | RunEndDiffers => {
                Invariant::I19
            }
        }
    }
}

/// One broken invariant, located.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Violation {
    /// Which invariant.
    pub invariant: Invariant,
    /// Which of its checks.
    pub breach: Breach,
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
    /// The rules this breach rests on (P2): its invariant's, or fewer where the run's course
    /// needed fewer ([`Invariant::rules_unstopped`]). Not part of the report.
    #[serde(skip)]
    pub rests_on: &'static [&'static str],
}

impl Violation {
    /// Whether a runtime claiming `claims` promises every rule this breach rests on.
    pub fn is_claimed_by(&self, claims: &[String]) -> bool {
        (self.rests_on.iter()).all(|rule| claims.iter().any(|claim| claim == rule))
    }
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
    /// Every violation of an invariant the runtime claims (P2), and of the protocol.
    pub violations: Vec<Violation>,
    /// Every break of an invariant the runtime does not claim: never a violation (P2).
    pub not_claimed: Vec<Violation>,
    /// Per invariant, the runs in which its situation arose.
    pub armed: [u32; Invariant::COUNT],
    /// How many of the checks that predict a whole record could predict it.
    pub exact: Exactness,
}

/// How often the checks that predict a record exactly could predict it: I4's error lists
/// (every `TOOL_INPUT_INVALID` of a registered tool) and R22's guarded records (every record
/// of a run with configured values that carries a value or a fragment of one).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Exactness {
    /// `TOOL_INPUT_INVALID` results of registered tools checked by I4.
    pub input_errors: u32,
    /// Of those, the ones whose whole error list the oracle predicted and compared.
    pub input_errors_predicted: u32,
    /// Of those, the ones the runtime's list matched.
    pub input_errors_matched: u32,
    /// Guarded records with something to replace, checked by I8.
    pub guarded_records: u32,
    /// Of those, the ones the oracle predicted and compared.
    pub guarded_records_predicted: u32,
    /// Of those, the ones the runtime's record matched.
    pub guarded_records_matched: u32,
}

impl Exactness {
    /// Adds `other`'s counts.
    pub fn add(&mut self, other: Exactness) {
        self.input_errors += other.input_errors;
        self.input_errors_predicted += other.input_errors_predicted;
        self.input_errors_matched += other.input_errors_matched;
        self.guarded_records += other.guarded_records;
        self.guarded_records_predicted += other.guarded_records_predicted;
        self.guarded_records_matched += other.guarded_records_matched;
    }
}

impl Verdict {
    /// Sets apart the breaks of invariants a runtime claiming `claims` does not claim (P2):
    /// they go to [`Verdict::not_claimed`]. A breach of the protocol is a violation whatever
    /// the runtime claims (P6 rests on no rule).
    pub fn apply_claims(&mut self, claims: &[String]) {
        let (violations, not_claimed) = std::mem::take(&mut self.violations)
            .into_iter()
            .partition(|violation| violation.is_claimed_by(claims));
        self.violations = violations;
        self.not_claimed = not_claimed;
    }

    /// The first violation of `invariant`.
    pub fn first(&self, invariant: Invariant) -> Option<&Violation> {
        self.violations
            .iter()
            .find(|violation| violation.invariant == invariant)
    }
}

/// Where a violation is located within its run.
#[derive(Clone, Copy, Debug)]
pub(crate) enum At<'a> {
    /// The run as a whole.
    Run,
    /// A provider turn.
    Turn(u32),
    /// A call of the batch of a turn.
    Call(u32, &'a str),
}

/// Where the checks of one run put what they find.
pub(crate) struct Findings<'v> {
    session: usize,
    run: usize,
    violations: &'v mut Vec<Violation>,
    armed: [bool; Invariant::COUNT],
    /// The exact checks' counts.
    pub exact: Exactness,
}

impl<'v> Findings<'v> {
    fn new(session: usize, run: usize, violations: &'v mut Vec<Violation>) -> Findings<'v> {
        Findings {
            session,
            run,
            violations,
            armed: [false; Invariant::COUNT],
            exact: Exactness::default(),
        }
    }

    /// The situation of `invariant` arose in this run.
    pub(crate) fn arm(&mut self, invariant: Invariant) {
        self.armed[invariant.index()] = true;
    }

    /// Reports `breach` at `at`, resting on its invariant's rules.
    pub(crate) fn report(&mut self, breach: Breach, at: At<'_>, explanation: String) {
        self.report_resting_on(breach, at, explanation, breach.invariant().rules());
    }

    /// Reports `breach` at `at`, resting on `rules` (P2).
    pub(crate) fn report_resting_on(
        &mut self,
        breach: Breach,
        at: At<'_>,
        explanation: String,
        rests_on: &'static [&'static str],
    ) {
        let (turn, call_id) = match at {
            At::Run => (None, None),
            At::Turn(turn) => (Some(turn), None),
            At::Call(turn, call_id) => (Some(turn), Some(call_id.to_owned())),
        };
        self.violations.push(Violation {
            invariant: breach.invariant(),
            breach,
            session: self.session,
            run: self.run,
            turn,
            call_id,
            explanation,
            rests_on,
        });
    }
}

/// What the oracle knows about one call before looking at what the runtime did with it,
/// worked out once per run from the oracle's own table and schemas.
#[derive(Debug, Clone)]
pub(crate) struct CallFacts {
    /// Id non-empty, at most 160 characters, first of its value in the batch.
    pub id_ok: bool,
    /// Within the batch cap.
    pub within_cap: bool,
    /// The tool is offered in this run (by the oracle's own table).
    pub offered: bool,
    /// The table's row of the tool, when the scenario's registry registers it.
    pub entry: Option<&'static Entry>,
    /// The input parses (R6) and satisfies the schema.
    pub valid_input: bool,
    /// The raw text is at most 256 KiB and carries no configured value.
    pub clean_payload: bool,
    /// The input as R6 reads it (`None`: not JSON, or a key repeats).
    pub parsed: Option<Value>,
}

impl CallFacts {
    /// A registered tool.
    pub fn registered(&self) -> bool {
        self.entry.is_some()
    }

    /// A registered tool that is destructive by the table.
    pub fn destructive(&self) -> bool {
        self.entry.is_some_and(|entry| !entry.read_only)
    }
}

/// The placeholder of a redacted secret (R29).
pub(crate) const REDACTED: &str = "[REDACTED]";
/// The placeholder texts (R24, R27, R29): I8 does not count a run inside one, and the model
/// knows the runtime refuses a configured value that meets one.
pub(crate) const PLACEHOLDERS: [&str; 2] = [REDACTED, "[LOCAL_PATH]"];

/// Everything the checks of one run read.
pub(crate) struct RunCheck<'a> {
    /// The run's trace, arranged.
    pub view: &'a RunView<'a>,
    /// The scenario.
    pub scenario: &'a Scenario,
    /// The run's script.
    pub script: &'a RunScript,
    /// The run's limits, missing ones from the oracle's table of SPEC defaults.
    pub limits: Limits,
    /// The oracle's compiled schemas.
    pub schemas: &'a Schemas,
    /// The configured secret values of the run.
    pub configured: Vec<&'a str>,
    /// R22's guard for them, as the oracle reads it.
    pub guard: guarded::Expected,
    /// The tools the oracle expects the run to be offered, by its own table, in the
    /// registry's order (R4).
    pub expected_offer: Vec<&'static str>,
    /// The facts of each call, by batch.
    pub facts: Vec<Vec<CallFacts>>,
}

impl<'a> RunCheck<'a> {
    fn new(view: &'a RunView<'a>, scenario: &'a Scenario, schemas: &'a Schemas) -> RunCheck<'a> {
        let script = view.script;
        let configured: Vec<&'a str> = script
            .secrets
            .iter()
            .filter_map(|label| scenario.secret(label))
            .map(|secret| secret.value.as_str())
            .collect();
        let expected_offer: Vec<&'static str> = schemas
            .registration_order()
            .iter()
            .filter_map(|&name| catalogue::entry(name))
            .filter(|entry| allows(scenario, script, entry))
            .map(|entry| entry.name)
            .collect();
        let mut run = RunCheck {
            view,
            scenario,
            script,
            limits: script.limits.resolve(catalogue::DEFAULT_LIMITS),
            schemas,
            guard: guarded::Expected::new(&configured),
            configured,
            expected_offer,
            facts: Vec::new(),
        };
        run.facts = view
            .batches
            .iter()
            .map(|batch| run.facts_of(batch))
            .collect();
        run
    }

    /// The facts of each call of `batch`.
    fn facts_of(&self, batch: &BatchView<'_>) -> Vec<CallFacts> {
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
                // The row of a tool this scenario's registry registers (the opt-in one only
                // when asked for).
                let entry = catalogue::entry(&call.name)
                    .filter(|entry| !entry.opt_in || self.scenario.code_interpreter);
                let parsed = strict_parse(&call.arguments);
                let clean_payload =
                    clean_payload(&call.arguments, parsed.as_ref(), &self.configured);
                CallFacts {
                    entry,
                    id_ok,
                    within_cap: index < self.limits.calls_per_batch_max as usize,
                    offered: entry.is_some_and(|entry| allows(self.scenario, self.script, entry)),
                    valid_input: entry.is_some()
                        && self.schemas.accepts_parsed(&call.name, parsed.as_ref()),
                    clean_payload,
                    parsed,
                }
            })
            .collect()
    }

    /// Every call of the run with its batch and facts: (batch, position in the batch, facts).
    pub fn calls(&self) -> impl Iterator<Item = (&BatchView<'a>, usize, &CallFacts)> {
        self.view
            .batches
            .iter()
            .zip(&self.facts)
            .flat_map(|(batch, facts)| {
                facts
                    .iter()
                    .enumerate()
                    .map(move |(index, fact)| (batch, index, fact))
            })
    }

    /// The one result of call `index` of `batch`, when there is exactly one.
    pub fn result_of<'b>(batch: &'b BatchView<'_>, index: usize) -> Option<&'b ToolResult> {
        let mut finished = batch.finished_of(index);
        let first = finished.next()?;
        finished.next().is_none().then_some(first.result)
    }

    /// Whether the chart differs between the call's `tool.started` and `tool.finished`.
    pub fn state_moved(&self, batch: &BatchView<'_>, index: usize) -> bool {
        self.states_around(batch, index)
            .is_some_and(|(before, after)| before != after)
    }

    /// The chart's snapshots at call `index`'s `tool.started` and `tool.finished`.
    pub fn states_around(
        &self,
        batch: &BatchView<'_>,
        index: usize,
    ) -> Option<(
        &'a ward_core::chart::ChartState,
        &'a ward_core::chart::ChartState,
    )> {
        let started = batch.started_of(index)?;
        let finished = batch.finished_of(index).next()?;
        Some((
            self.view.snapshots.at(started)?,
            self.view.snapshots.at(finished.seq)?,
        ))
    }

    /// Whether batch number `batch`, as sent, names a registered sequential tool (R17).
    pub fn is_sequential(&self, batch: usize) -> bool {
        self.facts[batch]
            .iter()
            .any(|fact| fact.entry.is_some_and(|entry| entry.sequential))
    }
}

/// Whether the run of `script` may be offered, and may run, the tool of `entry`, by the
/// oracle's own table (R4, R11–R13): registered (the opt-in tool only when the scenario asks
/// for it), read-only in a read-only run, and not switched off.
fn allows(scenario: &Scenario, script: &RunScript, entry: &Entry) -> bool {
    (!entry.opt_in || scenario.code_interpreter)
        && (!script.read_only || entry.read_only)
        && !script.disabled_tools.iter().any(|name| name == entry.name)
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

    /// Its compiled schemas.
    pub fn schemas(&self) -> &Schemas {
        &self.schemas
    }

    /// Runs every check on every run of `trace`.
    pub fn check(&self, scenario: &Scenario, trace: &Trace) -> Verdict {
        let mut verdict = Verdict::default();
        // Every run crossed the protocol; a breach of it ends the scenario (P6).
        verdict.armed[Invariant::P6.index()] = trace.runs.len() as u32;
        if let Some(message) = &trace.protocol_violation {
            verdict.violations.push(Violation {
                invariant: Invariant::P6,
                breach: Breach::ProtocolBroken,
                session: 0,
                run: 0,
                turn: None,
                call_id: None,
                explanation: message.clone(),
                rests_on: &[],
            });
        }
        let scripts = scenario.sessions.iter().flat_map(|session| &session.runs);
        let views: Vec<RunView<'_>> = trace
            .runs
            .iter()
            .zip(scripts)
            .map(|(run_trace, script)| RunView::new(run_trace, script))
            .collect();
        let mut changes = i9_state_changed_tells_the_truth::SessionChanges::default();
        let mut session = None;
        for view in &views {
            let trace = view.trace;
            if session != Some(trace.session) {
                session = Some(trace.session);
                changes = Default::default();
            }
            let mut findings = Findings::new(trace.session, trace.run, &mut verdict.violations);
            i14::check_start(view, scenario, &mut findings);
            if trace.start_error.is_none() {
                let run = RunCheck::new(view, scenario, &self.schemas);
                i1_read_only_runs_are_offered_reads_only::check(&run, &mut findings);
                i2_read_only_runs_run_no_write::check(&run, &mut findings);
                i3_switched_off_tools_are_never_offered_or_run::check(&run, &mut findings);
                i4_input_errors_are_bounded_and_echo_nothing::check(&run, &mut findings);
                i5_invalid_input_never_reaches_a_body::check(&run, &mut findings);
                i6_one_result_per_call_in_order::check(&run, &mut findings);
                i7_sequential_batches_and_writes_never_overlap::check(&run, &mut findings);
                i8_no_secret_leaks::check(&run, &mut findings);
                i9_state_changed_tells_the_truth::check(&run, &mut findings);
                i10_every_run_ends_within_its_limits::check(&run, &mut findings);
                i12_parallel_batches_start_together::check(&run, &mut findings);
                i13_what_is_allowed_is_allowed::check(&run, &mut findings);
                i14::check(&run, &mut findings);
                changes.record(&run);
            }
            i9_state_changed_tells_the_truth::check_undo(view, &changes, &mut findings);
            let (armed, exact) = (findings.armed, findings.exact);
            verdict.exact.add(exact);
            for (count, armed) in verdict.armed.iter_mut().zip(armed) {
                *count += u32::from(armed);
            }
        }
        verdict
    }
}

/// Whether a call's argument text passes R3's payload checks: within the size limit, and no
/// configured value in the text nor in a string it decodes to (`parsed`, when it is JSON).
///
/// A decoded string differs from the text it was read from only where the text escapes a
/// character: without a backslash, a value a decoded string holds is in the text too, so the
/// decoded strings are read only for text that escapes one, and only for text within the
/// limit, which is checked first. Measured with callgrind over seeds 0..1000 (release, one
/// job, 2026-12-06), together with `guarded.rs` looking for invisible characters only in
/// text that is not ASCII: 3.15 → 2.95 billion instructions in `Engine::run_seed` (6 %).
fn clean_payload(arguments: &str, parsed: Option<&Value>, configured: &[&str]) -> bool {
    let carries_secret = |text: &str| configured.iter().any(|value| text.contains(value));
    arguments.len() <= ARGUMENT_BYTES_MAX
        && !carries_secret(arguments)
        && !(arguments.contains('\\')
            && parsed.is_some_and(|value| any_string(value, &carries_secret)))
}

/// Whether any string or key of `value` satisfies `test`.
pub(crate) fn any_string(value: &Value, test: &dyn Fn(&str) -> bool) -> bool {
    match value {
        Value::String(text) => test(text),
        Value::Array(items) => items.iter().any(|item| any_string(item, test)),
        Value::Object(members) => members
            .iter()
            .any(|(key, member)| test(key) || any_string(member, test)),
        _ => false,
    }
}

/// A reply at 0 ms of turn 0 calling `names`, ids `call_0`, `call_1`…, arguments `{}`.
#[cfg(test)]
pub(crate) fn reply_calling(
    names: &[&str],
) -> (
    std::sync::Arc<[ward_core::tool::ToolCall]>,
    crate::world::Record,
) {
    let calls: std::sync::Arc<[ward_core::tool::ToolCall]> = (names.iter().enumerate())
        .map(|(index, name)| ward_core::tool::ToolCall {
            id: format!("call_{index}"),
            name: (*name).to_owned(),
            arguments: "{}".to_owned(),
        })
        .collect();
    let reply = crate::world::Record::Reply {
        at_ms: 0,
        turn: 0,
        attempt: 0,
        text: String::new(),
        calls: calls.clone(),
        error: None,
    };
    (calls, reply)
}

/// The breaches the oracle finds in one run of a one-run scenario made of `records` (the
/// oracle's unit tests build such runs by hand).
#[cfg(test)]
pub(crate) fn breaches_of_run(records: Vec<crate::world::Record>) -> Vec<Breach> {
    let trace = Trace {
        runs: vec![crate::world::RunTrace {
            session: 0,
            run: 0,
            records,
            start_error: None,
        }],
        protocol_violation: None,
    };
    let scenario: Scenario = serde_json::from_value(serde_json::json!({
        "version": 1, "chartSeed": 7,
        "sessions": [{"runs": [{"prompt": "p", "turns": []}]}]
    }))
    .expect("a scenario of one run");
    let world = crate::world::World::new();
    let oracle = Oracle::new(Schemas::compile(world.registry(false)));
    let verdict = oracle.check(&scenario, &trace);
    (verdict.violations.iter().chain(&verdict.not_claimed))
        .map(|violation| violation.breach)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_is_clean_only_without_a_configured_value_in_its_text_or_decoded() {
        const SECRET: &str = "prov-KEY-0123456789";
        let clean = |arguments: &str| {
            let parsed = strict_parse(arguments);
            clean_payload(arguments, parsed.as_ref(), &[SECRET])
        };
        assert!(clean(r#"{"q":"a\nb"}"#));
        assert!(clean(r#"{"q":"plain"}"#));
        assert!(!clean(&format!(r#"{{"q":"{SECRET}"}}"#)));
        // Escaped: only the decoded string holds the value.
        assert!(!clean(r#"{"q":"\u0070rov-KEY-0123456789"}"#));
        assert!(!clean(r#"{"prov-KEY-0123456\u0037\u00389":1}"#));
        // Not JSON: the text alone is read.
        assert!(clean(r#"{"q":"\u0070rov-KEY-0123456789""#));
        // Over R3's limit.
        let over = format!(r#"{{"q":"{}"}}"#, "a".repeat(ARGUMENT_BYTES_MAX));
        assert!(!clean(&over));
    }
}
