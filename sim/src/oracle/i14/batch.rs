//! A batch of the model (R17, R19's cap, R20): a sequential batch one call at a time, a
//! parallel one all at once, each call's body on virtual time and the stops that cut it.

use ward_core::events::EventKind;

use super::clock::{Cause, Stop};
use super::refusal::{Call, refusal};
use super::{Model, Outcome, Walk, Where, body_outcome, disagree, observed_code, within_horizon};
use crate::oracle::Breach;
use crate::scenario::Effect;
use crate::view::{BatchView, BodyView};

/// When a body of a sequential batch runs: it starts, waits for the user from `asks_ms` (its
/// own latency passed) for `wait_ms`, and ends.
#[derive(Clone, Copy)]
struct Span {
    start_ms: u64,
    asks_ms: u64,
    end_ms: u64,
    wait_ms: u64,
}

impl<'r, 'a> Model<'r, 'a> {
    /// A batch that names a sequential tool (R17): one call at a time, in the order sent.
    /// Returns the instant every call has its result, and the stop, if the run stopped.
    pub(super) fn sequential(
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
            let span = Span {
                start_ms: now_ms,
                asks_ms,
                end_ms: within_horizon(asks_ms.saturating_add(wait_ms))?,
                wait_ms,
            };
            (now_ms, stopped) = if call.facts.destructive() {
                self.sequential_write(batch, index, body, span)?
            } else {
                self.sequential_read(batch, index, body, span, aborted)?
            };
        }
        Ok((now_ms, stopped))
    }

    /// A write of a sequential batch, over `span`: it completes and keeps its result (R20); a
    /// stop while it ran takes effect after it. Returns the instant it ended, and the stop.
    fn sequential_write(
        &mut self,
        batch: &BatchView<'a>,
        index: usize,
        body: &BodyView<'_>,
        span: Span,
    ) -> Walk<'a, (u64, Option<Stop>)> {
        let stop = self.stop_during(span.start_ms, span.asks_ms, span.end_ms);
        self.expect(batch, index, body_outcome(body), Some(body))?;
        let deadline_at_end = stop.is_some_and(|stop| {
            stop.at_ms == span.end_ms
                && stop.cause == Cause::Deadline
                && self.ended_by(Cause::Deadline, span.end_ms)
        });
        match stop {
            Some(stop) if stop.at_ms < span.end_ms || deadline_at_end => {
                Ok((span.end_ms, Some(stop)))
            }
            _ => {
                self.clock.activity(span.end_ms);
                Ok((span.end_ms, None))
            }
        }
    }

    /// A read of a sequential batch, over `span`: a stop while it runs abandons it (R20).
    /// The deadline due just as the body starts waiting for the user either fires (the run
    /// ends by it then) or is paused, and then only the cancel can stop the body. At the
    /// instant the body ends, either may come first (a body the stop came before gets
    /// `ABORTED`, which the trace shows as `aborted`). Returns the instant the call has its
    /// result, and the stop.
    fn sequential_read(
        &mut self,
        batch: &BatchView<'a>,
        index: usize,
        body: &BodyView<'_>,
        span: Span,
        aborted: bool,
    ) -> Walk<'a, (u64, Option<Stop>)> {
        let stop = self.stop_during(span.start_ms, span.asks_ms, span.end_ms);
        let paused_first = stop.is_some_and(|stop| {
            stop.at_ms == span.asks_ms
                && span.wait_ms > 0
                && stop.cause == Cause::Deadline
                && !self.ended_by(Cause::Deadline, stop.at_ms)
        });
        let stop = if paused_first {
            self.clock
                .cancel_at_ms
                .filter(|at_ms| (span.asks_ms..=span.end_ms).contains(at_ms))
                .map(|at_ms| Stop {
                    at_ms,
                    cause: Cause::Cancelled,
                })
        } else {
            stop
        };
        let abandoned = stop.filter(|stop| stop.at_ms < span.end_ms || aborted);
        if let Some(stop) = abandoned {
            self.expect(batch, index, Outcome::Code("ABORTED"), Some(body))?;
            return Ok((stop.at_ms, Some(stop)));
        }
        self.expect(batch, index, body_outcome(body), Some(body))?;
        if self.asks_user(batch, index) {
            self.answers += 1;
        }
        self.clock.activity(span.end_ms);
        Ok((span.end_ms, None))
    }

    /// The first stop due while a body runs from `start_ms` to `end_ms`: the cancel at any
    /// time, the deadline only until `asks_ms`, when the body starts waiting for the user
    /// (R19: the wait pauses it, and the answer resets it).
    fn stop_during(&self, start_ms: u64, asks_ms: u64, end_ms: u64) -> Option<Stop> {
        self.clock.first_within(start_ms, end_ms, asks_ms)
    }

    /// Whether the trace's run ended by `cause` at `at_ms`.
    pub(super) fn ended_by(&self, cause: Cause, at_ms: u64) -> bool {
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
    pub(super) fn parallel(
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
}
