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
//! limits by the oracle's own table. It is written for reading against the SPEC, not for
//! speed: [`Model::turn`] is R16, R18, R19 and R21; [`Model::sequential`] and
//! [`Model::parallel`] are R17, R19's cap and R20; [`refusal`] is R3's order as a table;
//! [`Clock`] is R19's inactivity deadline and the cancel.
//!
//! Around the walk the model predicts what else the SPEC fixes exactly: whether the run starts
//! at all (R14's limit ranges, R24's configured values: [`check_start`]); R23's opening of the
//! event stream and R15's prompt ([`start_events`]); the transcript the store keeps and each
//! request resends (R16, R22: [`transcript`]); SPEC §4's table — each runtime code's
//! `retryable`, recommended action and fixed message ([`Model::envelope`]) — and the
//! envelopes of the failures that end a run. R2's registration verdicts are tried once per
//! oracle (`registration.rs`).
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

use ward_core::envelope::ToolResult;
use ward_core::events::EventKind;
use ward_core::session::Message;
use ward_core::tool::ToolCall;

use super::{At, Breach, CallFacts, Findings, Invariant, PLACEHOLDERS, REDACTED, RunCheck};
use crate::catalogue;
use crate::scenario::{Effect, FailureKind, Scenario, Turn};
use crate::view::{BatchView, BodyView, RunView};

/// R18: the longest wait before a retry.
const RETRY_WAIT_MAX_MS: u64 = 60_000;
/// SPEC §4: the largest argument text.
const ARGUMENT_BYTES_MAX: usize = 256 * 1024;
/// SPEC §4: the longest call id.
const CALL_ID_CHARS_MAX: usize = 160;
/// The latest instant the model judges (2^40 ms, about 35 years).
const HORIZON_MS: u64 = 1 << 40;
/// R24: the shortest configured value.
const SECRET_CHARS_MIN: usize = 8;

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
        .map(|(name, value, low, high)| format!("{name} is {value}, outside {low} to {high}"))
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

/// R3's refusals in the order the entry point checks them: the first that applies is the
/// call's result, and its body does not run.
const REFUSALS: [(&str, Applies); 8] = [
    ("INVALID_CALL_ID", |call| !call.id_shape_ok),
    ("DUPLICATE_CALL_ID", |call| call.id_repeats),
    ("TOOL_NOT_FOUND", |call| !call.facts.registered()),
    ("TOOL_NOT_ALLOWED", |call| {
        call.read_only_run && call.facts.destructive()
    }),
    ("TOOL_NOT_ALLOWED", |call| call.switched_off),
    ("PAYLOAD_TOO_LARGE", |call| call.too_large),
    ("SECRET_IN_INPUT", |call| {
        !call.too_large && !call.facts.clean_payload
    }),
    ("TOOL_INPUT_INVALID", |call| !call.facts.valid_input),
];

/// Whether a refusal applies to a call.
type Applies = fn(&Call<'_>) -> bool;

/// What R3 looks at for one call.
struct Call<'f> {
    facts: &'f CallFacts,
    id_shape_ok: bool,
    id_repeats: bool,
    read_only_run: bool,
    switched_off: bool,
    too_large: bool,
}

/// R3: the code a call within the cap is refused with, or `None` when its body runs.
fn refusal(call: &Call<'_>) -> Option<&'static str> {
    REFUSALS
        .iter()
        .find(|(_, applies)| applies(call))
        .map(|(code, _)| *code)
}

/// Why a run ends (R16, R19, R20, R21).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cause {
    /// A reply without calls.
    Completed,
    /// A reply with calls after `turns_max` batches.
    TurnLimit,
    /// The inactivity deadline.
    Deadline,
    /// The scenario cancelled the run.
    Cancelled,
    /// A provider error that is not retried, or the last retry's.
    Provider(&'static str),
}

impl Cause {
    /// The terminal event it gives: its type, and the failure's code.
    fn terminal(self) -> (&'static str, Option<&'static str>) {
        match self {
            Cause::Completed => ("run.completed", None),
            Cause::TurnLimit => ("run.failed", Some("TOOL_LOOP_LIMIT")),
            Cause::Deadline => ("run.failed", Some("DEADLINE_EXCEEDED")),
            Cause::Cancelled => ("run.cancelled", None),
            Cause::Provider(code) => ("run.failed", Some(code)),
        }
    }
}

/// A stop of R20.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stop {
    at_ms: u64,
    cause: Cause,
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

/// R19's inactivity deadline and the scenario's cancel, on virtual time.
struct Clock {
    cancel_at_ms: Option<u64>,
    timeout_ms: u64,
    last_activity_ms: u64,
    /// Whether, at one instant, the trace shows the cancel before the deadline.
    cancel_first: bool,
}

impl Clock {
    /// When the deadline is due if nothing happens.
    fn deadline_ms(&self) -> u64 {
        self.last_activity_ms.saturating_add(self.timeout_ms)
    }

    /// A provider reply or a finished call at `at_ms`.
    fn activity(&mut self, at_ms: u64) {
        self.last_activity_ms = at_ms;
    }

    /// The first stop due at or before `until_ms`, if any.
    fn stop_by(&self, until_ms: u64) -> Option<Stop> {
        self.first_within(0, until_ms, until_ms)
    }

    /// The first stop due from `from_ms` on: the cancel until `until_ms`, the deadline until
    /// `deadline_until_ms`. At one instant, the one the trace shows first.
    fn first_within(&self, from_ms: u64, until_ms: u64, deadline_until_ms: u64) -> Option<Stop> {
        let cancel = self
            .cancel_at_ms
            .filter(|at_ms| (from_ms..=until_ms).contains(at_ms))
            .map(|at_ms| Stop {
                at_ms,
                cause: Cause::Cancelled,
            });
        let deadline = Some(self.deadline_ms())
            .filter(|at_ms| (from_ms..=deadline_until_ms).contains(at_ms))
            .map(|at_ms| Stop {
                at_ms,
                cause: Cause::Deadline,
            });
        match (cancel, deadline) {
            (Some(cancel), Some(deadline)) if cancel.at_ms == deadline.at_ms => {
                Some(if self.cancel_first { cancel } else { deadline })
            }
            (Some(cancel), Some(deadline)) => Some(if cancel.at_ms < deadline.at_ms {
                cancel
            } else {
                deadline
            }),
            (stop, None) | (None, stop) => stop,
        }
    }
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

    /// One provider turn from `now_ms` (R16, R18, R19, R21): `Ok(end)` when the run ends,
    /// `Err(instant)` when the next turn starts then.
    fn turn(&mut self, turn: u32, mut now_ms: u64) -> Walk<'a, Result<End, u64>> {
        let limits = self.run.limits;
        let view = self.run.view;
        let mut attempt = 0;
        let reply_ms = loop {
            if let Some(stop) = self.clock.stop_by(now_ms) {
                // Due at the instant the request is sent: either may come first, and the
                // trace says which.
                let asked = view
                    .requests
                    .get(self.requests)
                    .is_some_and(|request| request.turn == turn && request.attempt == attempt);
                if stop.at_ms < now_ms || !asked {
                    return Ok(Ok(End {
                        at_ms: stop.at_ms,
                        cause: stop.cause,
                    }));
                }
            }
            let step = self.run.script.turns.get(self.requests).unwrap_or(&DONE);
            match view.requests.get(self.requests) {
                Some(request) if request.turn == turn && request.attempt == attempt => {
                    if request.at_ms != now_ms {
                        let explanation = format!(
                            "the model expected the provider to be asked at {now_ms} ms, it was asked at {} ms",
                            request.at_ms
                        );
                        return disagree(Breach::ModelTiming, Where::Turn(turn), explanation);
                    }
                }
                _ => {
                    let explanation = format!(
                        "the model expected the provider to be asked (attempt {attempt}) at {now_ms} ms; it was not"
                    );
                    return disagree(Breach::ModelRunEnd, Where::Turn(turn), explanation);
                }
            }
            self.requests += 1;
            let timed_out = step.delay_ms > limits.provider_timeout_ms;
            let due_ms = within_horizon(now_ms.saturating_add(if timed_out {
                limits.provider_timeout_ms
            } else {
                step.delay_ms
            }))?;
            let recorded = view
                .replies
                .iter()
                .find(|reply| reply.turn == turn && reply.attempt == attempt);
            if let Some(stop) = self.clock.stop_by(due_ms) {
                // At one instant, the stop came first when the provider's answer went
                // unrecorded and nothing was asked after it.
                let stop_first = stop.at_ms < due_ms
                    || (recorded.is_none() && view.requests.len() == self.requests);
                if stop_first {
                    return Ok(Ok(End {
                        at_ms: stop.at_ms,
                        cause: stop.cause,
                    }));
                }
            }
            let failure = if timed_out {
                Some((FailureKind::Timeout, None))
            } else {
                step.error
                    .as_ref()
                    .map(|failure| (failure.kind, failure.retry_after_ms))
            };
            let Some((kind, retry_after_ms)) = failure else {
                break due_ms;
            };
            let code = kind.to_core().code();
            let retryable = matches!(
                kind,
                FailureKind::RateLimited
                    | FailureKind::Unavailable
                    | FailureKind::Timeout
                    | FailureKind::MalformedResponse
            );
            if !retryable || attempt >= limits.provider_retries_max {
                return Ok(Ok(End {
                    at_ms: due_ms,
                    cause: Cause::Provider(code),
                }));
            }
            // R18: retried after a wait, `retry-after` when given, at most 60 s. Without a
            // `retry-after` the trace tells the wait: the retry's instant, or, when there was
            // no retry, a stop within the longest wait.
            let retry = view.requests.get(self.requests);
            let wait_ms = match (retry_after_ms, retry) {
                (Some(retry_after_ms), _) => retry_after_ms.min(RETRY_WAIT_MAX_MS),
                (None, Some(retry)) => retry.at_ms.saturating_sub(due_ms),
                (None, None) => RETRY_WAIT_MAX_MS,
            };
            if wait_ms > RETRY_WAIT_MAX_MS {
                let explanation = format!(
                    "the provider's {code} was retried after {wait_ms} ms; R18 caps the wait at {RETRY_WAIT_MAX_MS} ms"
                );
                return disagree(Breach::ModelTiming, Where::Turn(turn), explanation);
            }
            let retry_ms = within_horizon(due_ms.saturating_add(wait_ms))?;
            if let Some(stop) = self.clock.stop_by(retry_ms) {
                let stop_first = stop.at_ms < retry_ms || retry.is_none();
                if stop_first {
                    return Ok(Ok(End {
                        at_ms: stop.at_ms,
                        cause: stop.cause,
                    }));
                }
            }
            now_ms = retry_ms;
            attempt += 1;
        };
        self.clock.activity(reply_ms);
        let Some(reply) = view
            .replies
            .iter()
            .find(|reply| reply.turn == turn && reply.attempt == attempt)
        else {
            let explanation =
                format!("the model expected the provider's reply at {reply_ms} ms to be taken");
            return disagree(Breach::ModelRunEnd, Where::Turn(turn), explanation);
        };
        if reply.calls.is_empty() {
            return Ok(Ok(End {
                at_ms: reply_ms,
                cause: Cause::Completed,
            }));
        }
        let batch = &view.batches[self.batches];
        let facts = &self.run.facts[self.batches];
        self.batches += 1;
        if self.batches_run >= limits.turns_max {
            for index in 0..batch.calls.len() {
                self.expect(batch, index, Outcome::Code("ABORTED"), None)?;
            }
            return Ok(Ok(End {
                at_ms: reply_ms,
                cause: Cause::TurnLimit,
            }));
        }
        self.batches_run += 1;
        let calls = self.calls(batch, facts);
        let sequential = facts
            .iter()
            .any(|fact| fact.entry.is_some_and(|entry| entry.sequential));
        let (end_ms, stop) = if sequential {
            self.sequential(batch, &calls, reply_ms)?
        } else {
            self.parallel(batch, &calls, reply_ms)?
        };
        Ok(match stop {
            Some(stop) => Ok(End {
                at_ms: end_ms,
                cause: stop.cause,
            }),
            None => Err(end_ms),
        })
    }

    /// What R3 looks at for each call of `batch`.
    fn calls<'f>(&self, batch: &BatchView<'_>, facts: &'f [CallFacts]) -> Vec<Call<'f>> {
        let mut ids: Vec<&str> = Vec::new();
        batch
            .calls
            .iter()
            .zip(facts)
            .map(|(call, facts)| {
                let id_shape_ok =
                    !call.id.is_empty() && call.id.chars().count() <= CALL_ID_CHARS_MAX;
                let id_repeats = id_shape_ok && ids.contains(&call.id.as_str());
                ids.push(&call.id);
                Call {
                    facts,
                    id_shape_ok,
                    id_repeats,
                    read_only_run: self.run.script.read_only,
                    switched_off: self.run.script.disabled_tools.contains(&call.name),
                    too_large: call.arguments.len() > ARGUMENT_BYTES_MAX,
                }
            })
            .collect()
    }

    /// A batch that names a sequential tool (R17): one call at a time, in the order sent.
    /// Returns the instant every call has its result, and the stop, if the run stopped.
    fn sequential(
        &mut self,
        batch: &BatchView<'a>,
        calls: &[Call<'_>],
        start_ms: u64,
    ) -> Walk<'a, (u64, Option<Stop>)> {
        let mut now_ms = start_ms;
        let mut stopped: Option<Stop> = None;
        for (index, call) in calls.iter().enumerate() {
            if !call.facts.within_cap {
                self.expect(batch, index, Outcome::Code("TOO_MANY_CALLS"), None)?;
                continue;
            }
            let aborted = observed_code(batch, index) == Some("ABORTED");
            if stopped.is_none() {
                // A stop due as the call is taken up: either may come first, and the trace
                // says which (a call the stop came before gets `ABORTED` without a body).
                stopped = self.clock.stop_by(now_ms).filter(|stop| {
                    stop.at_ms < now_ms || (aborted && !self.run.view.body_ran(batch, index))
                });
            }
            if stopped.is_some() {
                self.expect(batch, index, Outcome::Code("ABORTED"), None)?;
                continue;
            }
            if let Some(code) = refusal(call) {
                self.expect(batch, index, Outcome::Code(code), None)?;
                continue;
            }
            let body = self.body_at(batch, index, now_ms)?;
            let (latency_ms, wait_ms) = self.durations(batch, index);
            let asks_ms = now_ms.saturating_add(latency_ms);
            let end_ms = within_horizon(asks_ms.saturating_add(wait_ms))?;
            let stop = self.stop_during(now_ms, asks_ms, end_ms);
            if call.facts.destructive() {
                // A write completes and keeps its result (R20); a stop while it ran takes
                // effect after it.
                self.expect(batch, index, body_outcome(body), Some(body))?;
                let deadline_at_end = stop.is_some_and(|stop| {
                    stop.at_ms == end_ms
                        && stop.cause == Cause::Deadline
                        && self.ended_by(Cause::Deadline, end_ms)
                });
                match stop {
                    Some(stop) if stop.at_ms < end_ms || deadline_at_end => stopped = Some(stop),
                    _ => self.clock.activity(end_ms),
                }
                now_ms = end_ms;
                continue;
            }
            // A read is abandoned by a stop while it runs (R20). The deadline due just as the
            // body starts waiting for the user either fires (the run ends by it then) or is
            // paused, and then only the cancel can stop the body. At the instant the body
            // ends, either may come first (a body the stop came before gets `ABORTED`).
            let paused_first = stop.is_some_and(|stop| {
                stop.at_ms == asks_ms
                    && wait_ms > 0
                    && stop.cause == Cause::Deadline
                    && !self.ended_by(Cause::Deadline, stop.at_ms)
            });
            let stop = if paused_first {
                self.clock
                    .cancel_at_ms
                    .filter(|at_ms| (asks_ms..=end_ms).contains(at_ms))
                    .map(|at_ms| Stop {
                        at_ms,
                        cause: Cause::Cancelled,
                    })
            } else {
                stop
            };
            let abandoned = stop.filter(|stop| stop.at_ms < end_ms || aborted);
            if let Some(stop) = abandoned {
                self.expect(batch, index, Outcome::Code("ABORTED"), Some(body))?;
                now_ms = stop.at_ms;
                stopped = Some(stop);
                continue;
            }
            self.expect(batch, index, body_outcome(body), Some(body))?;
            if self.asks_user(batch, index) {
                self.answers += 1;
            }
            self.clock.activity(end_ms);
            now_ms = end_ms;
        }
        Ok((now_ms, stopped))
    }

    /// The first stop due while a body runs from `start_ms` to `end_ms`: the cancel at any
    /// time, the deadline only until `asks_ms`, when the body starts waiting for the user
    /// (R19: the wait pauses it, and the answer resets it).
    fn stop_during(&self, start_ms: u64, asks_ms: u64, end_ms: u64) -> Option<Stop> {
        self.clock.first_within(start_ms, end_ms, asks_ms)
    }

    /// Whether the trace's run ended by `cause` at `at_ms`.
    fn ended_by(&self, cause: Cause, at_ms: u64) -> bool {
        let (kind, code) = cause.terminal();
        self.run.view.terminal().is_some_and(|event| {
            event.time_ms == at_ms
                && match &event.kind {
                    EventKind::RunFailed { error } => {
                        kind == "run.failed" && Some(error.code.as_str()) == code
                    }
                    EventKind::RunCancelled => kind == "run.cancelled",
                    EventKind::RunCompleted { .. } => kind == "run.completed",
                    _ => false,
                }
        })
    }

    /// A batch without a sequential tool (R17): every call starts at the batch's start.
    fn parallel(
        &mut self,
        batch: &BatchView<'a>,
        calls: &[Call<'_>],
        start_ms: u64,
    ) -> Walk<'a, (u64, Option<Stop>)> {
        let mut running: Vec<(u64, usize, &BodyView<'a>)> = Vec::new();
        for (index, call) in calls.iter().enumerate() {
            if !call.facts.within_cap {
                self.expect(batch, index, Outcome::Code("TOO_MANY_CALLS"), None)?;
            } else if let Some(code) = refusal(call) {
                self.expect(batch, index, Outcome::Code(code), None)?;
            } else {
                let body = self.body_at(batch, index, start_ms)?;
                let (latency_ms, wait_ms) = self.durations(batch, index);
                let end_ms =
                    within_horizon(start_ms.saturating_add(latency_ms).saturating_add(wait_ms))?;
                running.push((end_ms, index, body));
            }
        }
        running.sort_by_key(|&(end_ms, index, _)| (end_ms, index));
        let mut now_ms = start_ms;
        let mut stopped: Option<Stop> = None;
        for (end_ms, index, body) in running {
            let writes = calls[index].facts.destructive();
            if stopped.is_none() {
                stopped = self.clock.stop_by(end_ms).filter(|stop| {
                    stop.at_ms < end_ms || observed_code(batch, index) == Some("ABORTED")
                });
            }
            match stopped {
                Some(stop) if !writes => {
                    self.expect(batch, index, Outcome::Code("ABORTED"), Some(body))?;
                    now_ms = now_ms.max(stop.at_ms);
                }
                _ => {
                    self.expect(batch, index, body_outcome(body), Some(body))?;
                    now_ms = end_ms;
                    if stopped.is_none() {
                        self.clock.activity(end_ms);
                    }
                }
            }
        }
        Ok((now_ms, stopped))
    }

    /// Whether call `index` of `batch` asks the user and reaches the question (a planted
    /// panic ends the body first).
    fn asks_user(&self, batch: &BatchView<'_>, index: usize) -> bool {
        let name = batch.calls[index].name.as_str();
        name == "ask_user"
            && !matches!(
                self.run
                    .script
                    .tools
                    .get(name)
                    .map(|behaviour| &behaviour.effect),
                Some(Effect::Panic)
            )
    }

    /// The body of call `index`: its latency, and the time it waits for the user.
    fn durations(&self, batch: &BatchView<'_>, index: usize) -> (u64, u64) {
        let name = batch.calls[index].name.as_str();
        let latency_ms = self
            .run
            .script
            .tools
            .get(name)
            .map_or(0, |behaviour| behaviour.latency_ms);
        let wait_ms = if self.asks_user(batch, index) {
            self.run
                .script
                .answers
                .get(self.answers)
                .map_or(0, |answer| answer.delay_ms)
        } else {
            0
        };
        (latency_ms, wait_ms)
    }

    /// The body of call `index`, which the model expects to start at `start_ms`.
    fn body_at(
        &self,
        batch: &BatchView<'a>,
        index: usize,
        start_ms: u64,
    ) -> Walk<'a, &'r BodyView<'a>> {
        let view = self.run.view;
        let call = &batch.calls[index];
        let body = batch
            .bodies
            .iter()
            .map(|&body| &view.bodies[body])
            .find(|body| body.index == index);
        match body {
            Some(body) if body.start_ms == start_ms => Ok(body),
            Some(body) => disagree(
                Breach::ModelTiming,
                Where::Call(batch.turn, &call.id),
                format!(
                    "the model expected the body of {} to start at {start_ms} ms; it started at {} ms",
                    call.name, body.start_ms
                ),
            ),
            None => {
                let result = observed_code(batch, index).unwrap_or("success");
                disagree(
                    Breach::ModelCall,
                    Where::Call(batch.turn, &call.id),
                    format!(
                        "the model expected the body of {} to run from {start_ms} ms; it did not run and the call got {result}",
                        call.name
                    ),
                )
            }
        }
    }

    /// Compares call `index`'s one result, and whether its body ran, with the prediction.
    fn expect(
        &self,
        batch: &BatchView<'a>,
        index: usize,
        predicted: Outcome<'_>,
        body: Option<&BodyView<'_>>,
    ) -> Walk<'a, ()> {
        let view = self.run.view;
        let call = &batch.calls[index];
        let at = Where::Call(batch.turn, &call.id);
        let ran = view.body_ran(batch, index);
        if body.is_none() && ran {
            let explanation = format!(
                "the model expected {predicted} without running the body of {}; the body ran",
                call.name
            );
            return disagree(Breach::ModelCall, at, explanation);
        }
        let Some(result) = RunCheck::result_of(batch, index) else {
            let explanation = format!(
                "the model expected one result ({predicted}); the call got {}",
                batch.finished_of(index).count()
            );
            return disagree(Breach::ModelCall, at, explanation);
        };
        let observed = match result.error_code() {
            None => Outcome::Ok,
            Some(code) => Outcome::Code(code),
        };
        if observed != predicted {
            let explanation = format!(
                "the model expected {predicted} for {}; the call got {observed}",
                call.name
            );
            return disagree(Breach::ModelCall, at, explanation);
        }
        if let (Some(error), Some((retryable, action, message))) =
            (result.error(), self.envelope(&call.name, observed))
        {
            // R22's guard may redact a configured value out of any text; a redacted text is
            // compared no further.
            let differs = |observed: &str, expected: &str| {
                observed != expected && !observed.contains(REDACTED)
            };
            let message_differs = message.is_some_and(|message| differs(&error.message, &message));
            if error.retryable != retryable
                || differs(&error.recommended_action, &action)
                || message_differs
            {
                let explanation = format!(
                    "the model expected {predicted} for {} to be retryable {retryable} with the action {action:?} (SPEC §4); it is retryable {} with {:?}, message {:?}",
                    call.name, error.retryable, error.recommended_action, error.message
                );
                return disagree(Breach::ModelCall, at, explanation);
            }
        }
        let state_changed =
            predicted == Outcome::Ok && body.is_some() && self.run.state_moved(batch, index);
        if result.state_changed != state_changed {
            let explanation = format!(
                "the model expected stateChanged {state_changed} for {}; the result says {}",
                call.name, result.state_changed
            );
            return disagree(Breach::ModelCall, at, explanation);
        }
        Ok(())
    }

    /// SPEC §4's table for the runtime's own codes: whether a failure with `outcome` is
    /// retryable, its recommended action, and its message where the table fixes it. `None`
    /// for a success and for a body's own codes.
    fn envelope(&self, name: &str, outcome: Outcome<'_>) -> Option<(bool, String, Option<String>)> {
        let Outcome::Code(code) = outcome else {
            return None;
        };
        let fixed = |retryable: bool, action: &str| Some((retryable, action.to_owned(), None));
        let read_only_refusal = self.run.script.read_only
            && catalogue::entry(name).is_some_and(|entry| {
                !entry.read_only && (!entry.opt_in || self.run.scenario.code_interpreter)
            });
        match code {
            "INVALID_CALL_ID" => fixed(
                true,
                "Give every tool call a non-empty id of at most 160 characters.",
            ),
            "DUPLICATE_CALL_ID" => fixed(true, "Give every tool call its own id."),
            "TOOL_NOT_FOUND" => {
                let offer = self.announced_offer().join(", ");
                let action = format!("Call one of the available tools: {offer}.");
                Some((true, action, None))
            }
            "TOOL_NOT_ALLOWED" if read_only_refusal => Some((
                false,
                "Use a read-only tool, or ask the user for a run that may change the chart."
                    .to_owned(),
                Some(format!("Tool '{name}' is not allowed in a read-only run.")),
            )),
            "TOOL_NOT_ALLOWED" => Some((
                false,
                "Use another tool, or ask the user to switch it on.".to_owned(),
                Some(format!(
                    "Tool '{name}' is switched off in the agent settings."
                )),
            )),
            "PAYLOAD_TOO_LARGE" => fixed(true, "Send a smaller input."),
            "SECRET_IN_INPUT" => fixed(false, "Never pass credentials to tools."),
            "TOOL_INPUT_INVALID" => fixed(true, "Correct the invalid field and retry the request."),
            "TOO_MANY_CALLS" => {
                let cap = self.run.limits.calls_per_batch_max;
                let action = format!("Send at most {cap} tool calls in one message.");
                Some((true, action, None))
            }
            "INTERNAL_ERROR" => fixed(
                false,
                "Do not retry with different input; report this tool failure.",
            ),
            "ABORTED" => fixed(true, "Start a new run."),
            _ => None,
        }
    }

    /// The tools `run.started` announced, in its order (I13 checks they are the allowed ones).
    fn announced_offer(&self) -> Vec<&'a str> {
        self.run
            .view
            .events
            .iter()
            .find_map(|event| match &event.kind {
                EventKind::RunStarted { tools, .. } => {
                    Some(tools.iter().map(|name| &**name).collect())
                }
                _ => None,
            })
            .unwrap_or_default()
    }

    /// Compares the run's terminal event with the predicted end.
    fn compare_end(&self, end: &End) -> Walk<'a, ()> {
        let view = self.run.view;
        let (kind, code) = end.cause.terminal();
        let predicted = match code {
            Some(code) => format!("{kind} {code} at {} ms", end.at_ms),
            None => format!("{kind} at {} ms", end.at_ms),
        };
        let Some(terminal) = view.terminal() else {
            let explanation = format!("the model expected {predicted}; the run has no end");
            return disagree(Breach::ModelRunEnd, Where::Run, explanation);
        };
        let (observed_kind, observed_code) = match &terminal.kind {
            EventKind::RunCompleted { .. } => ("run.completed", None),
            EventKind::RunFailed { error } => ("run.failed", Some(error.code.as_str())),
            EventKind::RunCancelled => ("run.cancelled", None),
            _ => ("another event", None),
        };
        if (observed_kind, observed_code) != (kind, code) || terminal.time_ms != end.at_ms {
            let observed = match observed_code {
                Some(code) => format!("{observed_kind} {code} at {} ms", terminal.time_ms),
                None => format!("{observed_kind} at {} ms", terminal.time_ms),
            };
            let explanation = format!("the model expected {predicted}; the run ended {observed}");
            return disagree(Breach::ModelRunEnd, Where::Run, explanation);
        }
        // What the entry point returned: the same end, the batches the model ran and a
        // result for every call of every reply the runtime took.
        let calls: usize = view.batches.iter().map(|batch| batch.calls.len()).sum();
        let reported = view.report.is_some_and(|report| {
            (report.outcome, report.code) == (observed_kind, observed_code)
                && report.batches == self.batches_run
                && report.calls as usize == calls
        });
        if !reported {
            let explanation = format!(
                "the model expected the run's report to say {observed_kind}, {} batches and {calls} calls with a result; it says {:?}",
                self.batches_run, view.report
            );
            return disagree(Breach::ModelRunEnd, Where::Run, explanation);
        }
        // R19 and R21: the failure's envelope.
        if let EventKind::RunFailed { error } = &terminal.kind {
            let turns_max = self.run.limits.turns_max;
            let (retryable, action, message) = match end.cause {
                Cause::TurnLimit => (
                    true,
                    Some("Refine the request and retry."),
                    Some(format!("The agent stopped after {turns_max} tool turns.")),
                ),
                Cause::Deadline => (true, Some("Retry with a narrower request."), None),
                Cause::Provider(code) => (
                    !matches!(
                        code,
                        "PROVIDER_AUTHENTICATION"
                            | "PROVIDER_PERMISSION"
                            | "PROVIDER_MODEL_NOT_FOUND"
                    ),
                    None,
                    None,
                ),
                Cause::Completed | Cause::Cancelled => (error.retryable, None, None),
            };
            let text_differs = |observed: &str, expected: &str| {
                observed != expected && !observed.contains(REDACTED)
            };
            let differs = error.retryable != retryable
                || action.is_some_and(|action| text_differs(&error.recommended_action, action))
                || message
                    .as_ref()
                    .is_some_and(|message| text_differs(&error.message, message));
            if differs {
                let explanation = format!(
                    "the model expected {predicted} to be retryable {retryable} with the action {action:?} and message {message:?}; it is retryable {} with {:?} and {:?}",
                    error.retryable, error.recommended_action, error.message
                );
                return disagree(Breach::ModelRunEnd, Where::Run, explanation);
            }
        }
        Ok(())
    }
}

/// R23 and R15 at the start of a run: the events are numbered from 0 without a gap and never
/// go back in time; the run opens with `run.started` and `user.message.created` at 0 ms; the
/// prompt that event announces (redacted) is the session store's first record of the run and
/// the last message of the provider's first request. Returns the prompt.
fn start_events<'a>(run: &RunCheck<'a>) -> Walk<'a, &'a str> {
    let view = run.view;
    let events = &view.events;
    let numbered = events
        .iter()
        .enumerate()
        .all(|(index, event)| event.seq == index as u64);
    let in_time = events
        .windows(2)
        .all(|pair| pair[0].time_ms <= pair[1].time_ms);
    let opening = match (events.first(), events.get(1)) {
        (Some(first), Some(second)) if first.time_ms == 0 && second.time_ms == 0 => {
            match (&first.kind, &second.kind) {
                (EventKind::RunStarted { .. }, EventKind::UserMessageCreated { text }) => {
                    Some(text.as_str())
                }
                _ => None,
            }
        }
        _ => None,
    };
    let Some(prompt) = opening.filter(|_| numbered && in_time) else {
        let explanation = "the model expected events numbered from 0 in time order, opening with run.started and user.message.created at 0 ms".to_owned();
        return disagree(Breach::ModelEvents, Where::Run, explanation);
    };
    let is_prompt = |message: &Message| matches!(message, Message::User { text } if text == prompt);
    let stored = view
        .appends
        .first()
        .is_some_and(|message| is_prompt(message));
    let sent = view.requests.first().is_none_or(|request| {
        request
            .appended
            .last()
            .is_some_and(|message| is_prompt(message))
    });
    if !(stored && sent) {
        let explanation = format!(
            "the model expected the announced prompt to be stored first ({stored}) and to end the first request ({sent})"
        );
        return disagree(Breach::ModelEvents, Where::Run, explanation);
    }
    Ok(prompt)
}

/// R16, R22 and R23 for the transcript: the session store keeps, in order, the prompt, then
/// each reply the runtime took as its `assistant.message.completed` event announced it,
/// followed by its calls' results in the order sent as their `tool.finished` events carried
/// them; each request resends the previous request's transcript whole, a retry adds nothing,
/// and the first attempt of a turn adds exactly what the turn before entered.
fn transcript<'a>(run: &RunCheck<'a>, prompt: &'a str) -> Walk<'a, ()> {
    let view = run.view;
    let mut expected: Vec<Expected<'a>> = vec![Expected::User(prompt)];
    // Where each turn's reply is, in `expected`.
    let mut turn_starts: Vec<usize> = Vec::new();
    let mut results: Vec<(usize, Expected<'a>)> = Vec::new();
    let enter = |expected: &mut Vec<Expected<'a>>, results: &mut Vec<(usize, Expected<'a>)>| {
        results.sort_by_key(|&(index, _)| index);
        expected.extend(results.drain(..).map(|(_, message)| message));
    };
    for event in &view.events {
        match &event.kind {
            EventKind::AssistantMessageCompleted { text, calls, .. } => {
                enter(&mut expected, &mut results);
                turn_starts.push(expected.len());
                expected.push(Expected::Assistant(text, calls));
            }
            EventKind::ToolFinished {
                index,
                call_id,
                name,
                result,
            } => results.push((*index, Expected::Tool(call_id, name, result))),
            _ => {}
        }
    }
    enter(&mut expected, &mut results);
    let stored = &view.appends;
    if stored.len() != expected.len()
        || stored
            .iter()
            .zip(&expected)
            .any(|(message, expected)| !expected.matches(message))
    {
        let explanation = format!(
            "the session store holds {} records of the run; the model expected {}: the prompt, then each reply and its results in the order sent, as the events announced them",
            stored.len(),
            expected.len()
        );
        return disagree(Breach::ModelEvents, Where::Run, explanation);
    }
    let mut previous_len: Option<usize> = None;
    for request in &view.requests {
        let added: &[Expected<'a>] = match (request.turn, request.attempt) {
            (0, 0) => &[],
            (_, attempt) if attempt > 0 => &[],
            (turn, _) => {
                let from = turn_starts.get(turn as usize - 1).copied();
                let to = turn_starts
                    .get(turn as usize)
                    .copied()
                    .unwrap_or(expected.len());
                from.map_or(&[][..], |from| &expected[from..to])
            }
        };
        let first = previous_len.is_none();
        let resends = previous_len.is_none_or(|length| request.kept == length);
        let adds = first
            || (request.appended.len() == added.len()
                && request
                    .appended
                    .iter()
                    .zip(added)
                    .all(|(message, expected)| expected.matches(message)));
        if !(resends && adds) {
            let explanation = format!(
                "the request of turn {} attempt {} keeps {} messages and adds {}; the model expected it to keep {} and add the {} the turn before entered",
                request.turn,
                request.attempt,
                request.kept,
                request.appended.len(),
                previous_len.unwrap_or(0),
                added.len()
            );
            return disagree(Breach::ModelEvents, Where::Turn(request.turn), explanation);
        }
        previous_len = Some(request.kept + request.appended.len());
    }
    Ok(())
}

/// A message the model expects in the transcript, borrowed from the event that announced it.
enum Expected<'a> {
    User(&'a str),
    Assistant(&'a str, &'a [ToolCall]),
    Tool(&'a str, &'a str, &'a ToolResult),
}

impl Expected<'_> {
    fn matches(&self, message: &Message) -> bool {
        match (self, message) {
            (Expected::User(expected), Message::User { text }) => text == expected,
            (Expected::Assistant(expected, expected_calls), Message::Assistant { text, calls }) => {
                text == expected && **calls == **expected_calls
            }
            (
                Expected::Tool(expected_id, expected_name, expected_result),
                Message::Tool {
                    call_id,
                    name,
                    result,
                },
            ) => {
                **call_id == **expected_id
                    && **name == **expected_name
                    && result == *expected_result
            }
            _ => false,
        }
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
