//! I14. The runtime agrees with the model. A reference model, written from the SPEC alone
//! (plain, table-driven, no shared code with `core`), predicts for every call its outcome
//! code (the R3 refusals in their order, `TOO_MANY_CALLS`, `ABORTED`, or the body's own
//! result), whether its body runs, and `stateChanged`; and for every run its terminal event,
//! its cause (completed, turn limit, deadline, cancellation, provider error) and the virtual
//! instant it happens. Any disagreement is a violation that names the call or run, the
//! model's prediction and what happened.
//!
//! # The model
//!
//! The model replays the run on virtual time from its script: the provider's steps (one per
//! request, R16, R18), the tools' latencies, the user's answers, the cancel time and the
//! limits by the oracle's own table. The provider's error codes, and which of them R18
//! retries, are the oracle's own table of R21 too ([`catalogue::provider_error`]), as is every
//! SPEC number the model judges by: the model shares no code with `core`. It is written for
//! reading against the SPEC, not for speed, one concern a file:
//!
//! - `turn.rs`: one provider turn and its retries ([`Model::turn`]: R16, R18, R19, R21);
//! - `batch.rs`: a batch ([`Model::sequential`] and [`Model::parallel`]: R17, R19's cap, R20);
//! - `refusal.rs`: R3's order as a table ([`refusal`]);
//! - `clock.rs`: R19's inactivity deadline and the cancel ([`Clock`]);
//! - `envelope.rs`: each call's result and SPEC §4's table ([`Model::expect`]);
//! - `end.rs`: the run's end and the envelope of the failure that ends it
//!   ([`Model::compare_end`]);
//! - `transcript.rs`: the event stream's opening, the prompt and the transcript (R15, R16, R22,
//!   R23: [`start_events`], [`transcript`]).
//!
//! Around the walk the model predicts what else the SPEC fixes exactly: whether the run starts
//! at all (R14's limit ranges, R24's configured values: [`check_start`]); R23's opening of the
//! event stream and R15's prompt; the transcript the store keeps and each request resends
//! (R16, R22); SPEC §4's table — each runtime code's `retryable`, recommended action and fixed
//! message — and the envelopes of the failures that end a run. R2, R8a and R8 act before any
//! run, so no scenario shows them: ward's core is probed for them apart
//! ([`crate::conformance`]), never another runtime.
//!
//! Some things the SPEC leaves to the world or leaves open; the model takes them from the
//! trace and predicts on from there:
//!
//! - the calls of each reply (the provider reacts to the results it received);
//! - how a body that ran to its end ended (the domain's result, or the scenario's planted
//!   failure or panic) and, for a success, whether the chart differs after it;
//! - the wait before a retry when the provider gave no `retry-after` (R18 fixes only its
//!   60 s cap, which the model checks);
//! - which of two things due at the same instant came first — a stop and a reply, a stop
//!   and a call's start or end, a cancel and the deadline. The SPEC orders none of them; the
//!   model accepts either and follows the one the trace shows.
//!
//! Readings of the SPEC the model makes, where its words leave a choice:
//!
//! - A provider request times out when the provider takes longer than `provider_timeout_ms`
//!   ("times out after 60 s"); an answer at exactly that instant is in time.
//! - With a `retry-after`, the wait before the retry is exactly `retry-after`, capped at 60 s.
//! - A timeout counts as a provider error of kind timeout: retryable (R21).
//! - Calls past the batch cap get `TOO_MANY_CALLS` whatever else happens to the batch, also
//!   after a stop: they are never taken up (R19). A reply past the turn limit gives every one
//!   of its calls `ABORTED`, the cap's included.
//! - The inactivity deadline is due `inactivity_timeout_ms` after the last provider reply or
//!   finished call (the run's start before either), plus the time spent waiting for the
//!   user's answer since then; `ask_user`'s own latency is not a wait.
//! - Instants past [`HORIZON_MS`] (about 35 years, beyond the timers of the runtime's clock)
//!   are not simulated faithfully by the world; the model gives no verdict on a run that
//!   reaches one. Only hand-written or fuzzed scenarios do; generated ones stay within hours.
//! - A refused call finishes the moment it is taken up; that instant is always one at which
//!   the deadline was just reset (the reply, or the previous call's end), so a refusal never
//!   moves it.

mod batch;
mod clock;
mod end;
mod envelope;
mod refusal;
mod transcript;
mod turn;

use ward_core::envelope::ToolResult;
use ward_core::events::EventKind;

use super::{At, Breach, Findings, Invariant, PLACEHOLDERS, RunCheck};
use crate::catalogue::{self, OutOfRange, SECRET_CHARS_MIN};
use crate::scenario::{Scenario, Turn};
use crate::view::{BatchView, BodyView, RunView};
use clock::{Cause, Clock};
use transcript::{start_events, transcript};

/// The latest instant the model judges (2^40 ms, about 35 years).
const HORIZON_MS: u64 = 1 << 40;

/// R14 and R24: a run starts unless a limit is outside its range (the oracle's table) or a
/// configured value cannot be redacted for good: shorter than 8 characters, inside a
/// placeholder text, or — ward's reading of R29 (d), redacting twice equals once — holding a
/// placeholder, or ending with a placeholder's beginning or beginning with its end (a
/// placeholder and the text beside it could spell the value again).
pub(super) fn check_start(view: &RunView<'_>, scenario: &Scenario, findings: &mut Findings<'_>) {
    findings.arm(Invariant::I14);
    let limits = view.script.limits.resolve(catalogue::DEFAULT_LIMITS);
    let configured = view
        .script
        .secrets
        .iter()
        .filter_map(|label| scenario.secret(label))
        .map(|secret| secret.value.as_str());
    let refusal = catalogue::limit_out_of_range(&limits)
        .map(|OutOfRange { range, value }| {
            format!(
                "{} is {value}, outside {} to {}",
                range.name, range.low, range.high
            )
        })
        .or_else(|| {
            configured
                .filter(|value| {
                    value.chars().count() < SECRET_CHARS_MIN
                        || PLACEHOLDERS
                            .iter()
                            .any(|placeholder| meets_placeholder(value, placeholder))
                })
                .map(|value| {
                    format!(
                        "a configured value of {} characters that is short or meets a placeholder",
                        value.chars().count()
                    )
                })
                .next()
        });
    let explanation = match (refusal, &view.trace.start_error) {
        (Some(why), None) => {
            format!("the model expected the run to be refused at start ({why}); it started")
        }
        (None, Some(error)) => {
            format!("the model expected the run to start; it was refused ({error})")
        }
        _ => return,
    };
    findings.report(Breach::ModelRunEnd, At::Run, explanation);
}

pub(super) fn check(run: &RunCheck<'_>, findings: &mut Findings<'_>) {
    let mut model = Model::new(run);
    let disagreement = match start_events(run)
        .and_then(|prompt| transcript(run, prompt))
        .and_then(|()| model.walk())
    {
        Ok(end) => model.compare_end(&end),
        Err(disagreement) => Err(disagreement),
    };
    if let Err(Disagreement {
        breach: Some(breach),
        at,
        explanation,
    }) = disagreement
    {
        findings.report(breach, at.at(), explanation);
    }
}

/// What the model predicts a call gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome<'a> {
    /// A success.
    Ok,
    /// A failure with this code.
    Code(&'a str),
}

impl std::fmt::Display for Outcome<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::Ok => f.write_str("success"),
            Outcome::Code(code) => f.write_str(code),
        }
    }
}

/// The predicted end of a run.
#[derive(Clone, Copy, Debug)]
struct End {
    at_ms: u64,
    cause: Cause,
}

/// Where a disagreement is.
enum Where<'a> {
    Run,
    Turn(u32),
    Call(u32, &'a str),
}

impl<'a> Where<'a> {
    fn at(&self) -> At<'a> {
        match *self {
            Where::Run => At::Run,
            Where::Turn(turn) => At::Turn(turn),
            Where::Call(turn, id) => At::Call(turn, id),
        }
    }
}

/// A disagreement between the model and the trace; no breach when the run went past the
/// horizon and the model gives no verdict.
struct Disagreement<'a> {
    breach: Option<Breach>,
    at: Where<'a>,
    explanation: String,
}

type Walk<'a, T> = Result<T, Disagreement<'a>>;

fn disagree<'a, T>(breach: Breach, at: Where<'a>, explanation: String) -> Walk<'a, T> {
    Err(Disagreement {
        breach: Some(breach),
        at,
        explanation,
    })
}

/// No verdict on a run that reaches an instant past the horizon.
fn within_horizon<'a>(at_ms: u64) -> Walk<'a, u64> {
    if at_ms > HORIZON_MS {
        return Err(Disagreement {
            breach: None,
            at: Where::Run,
            explanation: format!("{at_ms} ms is past the model's horizon"),
        });
    }
    Ok(at_ms)
}

/// The reference model of one run.
struct Model<'r, 'a> {
    run: &'r RunCheck<'a>,
    clock: Clock,
    /// Requests of the trace matched so far; the provider takes one script step per request,
    /// so this is also the next step's index.
    requests: usize,
    /// Batches of the trace matched so far (replies with calls).
    batches: usize,
    /// Batches run (R19's turn limit counts these).
    batches_run: u32,
    /// The user's answers given so far.
    answers: usize,
}

/// The provider's step once the script runs out: a reply without calls.
static DONE: Turn = Turn {
    delay_ms: 0,
    error: None,
    text: String::new(),
    calls: Vec::new(),
    react: Vec::new(),
};

impl<'r, 'a> Model<'r, 'a> {
    fn new(run: &'r RunCheck<'a>) -> Model<'r, 'a> {
        let cancel_first = matches!(
            run.view.terminal().map(|event| &event.kind),
            Some(EventKind::RunCancelled)
        );
        Model {
            run,
            clock: Clock {
                cancel_at_ms: run.script.cancel_at_ms,
                timeout_ms: run.limits.inactivity_timeout_ms,
                last_activity_ms: 0,
                cancel_first,
            },
            requests: 0,
            batches: 0,
            batches_run: 0,
            answers: 0,
        }
    }

    /// Walks the run turn by turn until it ends.
    fn walk(&mut self) -> Walk<'a, End> {
        let mut now_ms = 0;
        for turn in 0.. {
            match self.turn(turn, now_ms)? {
                Ok(end) => return Ok(end),
                Err(next_ms) => now_ms = next_ms,
            }
        }
        unreachable!("a script is finite and every turn takes a step of it")
    }
}

/// Whether `value` lies inside `placeholder`, holds it, or overlaps it at an end.
fn meets_placeholder(value: &str, placeholder: &str) -> bool {
    let (bytes, text) = (value.as_bytes(), placeholder.as_bytes());
    let overlaps = (1..text.len().min(bytes.len())).any(|length| {
        bytes.ends_with(&text[..length]) || bytes.starts_with(&text[text.len() - length..])
    });
    placeholder.contains(value) || value.contains(placeholder) || overlaps
}

/// The result a body that ran to its end gives: its own (a panic is `INTERNAL_ERROR`).
fn body_outcome<'b>(body: &BodyView<'b>) -> Outcome<'b> {
    match body.outcome {
        Some("ok") => Outcome::Ok,
        Some("panic") => Outcome::Code("INTERNAL_ERROR"),
        Some(code) => Outcome::Code(code),
        // Abandoned: no result of its own.
        None => Outcome::Code("ABORTED"),
    }
}

/// The code of call `index`'s result, when it has exactly one.
fn observed_code<'b>(batch: &'b BatchView<'_>, index: usize) -> Option<&'b str> {
    RunCheck::result_of(batch, index).and_then(ToolResult::error_code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_meets_a_placeholder_inside_holding_or_overlapping_it() {
        for value in [
            "REDACTED",
            "x[REDACTED]y",
            "abcdefg[RE",
            "D]abcdefgh",
            "LOCAL_PA",
        ] {
            assert!(
                PLACEHOLDERS
                    .iter()
                    .any(|text| meets_placeholder(value, text)),
                "{value}"
            );
        }
        for value in ["abcdefgh", "REDACTEX", "[abcdefgh]", "sk-proj-abc"] {
            assert!(
                !PLACEHOLDERS
                    .iter()
                    .any(|text| meets_placeholder(value, text)),
                "{value}"
            );
        }
    }
}
