//! One provider turn of the model (R16, R18, R19, R21): the requests and their retries on
//! virtual time, the provider's errors, the turn limit, and the batch a reply starts.

use super::clock::{Cause, Stop};
use super::{DONE, End, Model, Outcome, Walk, Where, disagree, within_horizon};
use crate::catalogue::{self, RETRY_WAIT_MAX_MS};
use crate::oracle::Breach;
use crate::scenario::FailureKind;

/// What became of one attempt at a provider request.
enum Attempt {
    /// The provider replied at this instant.
    Replied(u64),
    /// The request failed and is retried at this instant.
    Retried(u64),
    /// The run ended first.
    Ended(End),
}

impl<'r, 'a> Model<'r, 'a> {
    /// One provider turn from `now_ms` (R16, R18, R19, R21): `Ok(end)` when the run ends,
    /// `Err(instant)` when the next turn starts then.
    pub(super) fn turn(&mut self, turn: u32, now_ms: u64) -> Walk<'a, Result<End, u64>> {
        let (attempt, reply_ms) = match self.ask(turn, now_ms)? {
            Ok(replied) => replied,
            Err(end) => return Ok(Ok(end)),
        };
        self.clock.activity(reply_ms);
        let Some(reply) = self
            .run
            .view
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
        self.batch(reply_ms)
    }

    /// Asks the provider from `now_ms` until it replies (R18: retrying what is retryable, at
    /// most `provider_retries_max` times): `Ok((attempt, instant))` of the reply taken, or
    /// `Err(end)` when the run ends first.
    fn ask(&mut self, turn: u32, mut now_ms: u64) -> Walk<'a, Result<(u32, u64), End>> {
        let mut attempt = 0;
        loop {
            match self.attempt(turn, attempt, now_ms)? {
                Attempt::Replied(reply_ms) => return Ok(Ok((attempt, reply_ms))),
                Attempt::Retried(retry_ms) => now_ms = retry_ms,
                Attempt::Ended(end) => return Ok(Err(end)),
            }
            attempt += 1;
        }
    }

    /// Attempt `attempt` of `turn`'s request, sent at `now_ms`.
    fn attempt(&mut self, turn: u32, attempt: u32, now_ms: u64) -> Walk<'a, Attempt> {
        let limits = self.run.limits;
        let view = self.run.view;
        if let Some(stop) = self.clock.stop_by(now_ms) {
            // Due at the instant the request is sent: either may come first, and the trace
            // says which.
            let asked = view
                .requests
                .get(self.requests)
                .is_some_and(|request| request.turn == turn && request.attempt == attempt);
            if stop.at_ms < now_ms || !asked {
                return Ok(Attempt::Ended(ended(stop)));
            }
        }
        let step = self.run.script.turns.get(self.requests).unwrap_or(&DONE);
        self.asked(turn, attempt, now_ms)?;
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
            let stop_first =
                stop.at_ms < due_ms || (recorded.is_none() && view.requests.len() == self.requests);
            if stop_first {
                return Ok(Attempt::Ended(ended(stop)));
            }
        }
        let failure = if timed_out {
            Some((FailureKind::Timeout, None))
        } else {
            step.error
                .as_ref()
                .map(|failure| (failure.kind, failure.retry_after_ms))
        };
        match failure {
            None => Ok(Attempt::Replied(due_ms)),
            Some((kind, retry_after_ms)) => {
                self.failed(turn, attempt, kind, retry_after_ms, due_ms)
            }
        }
    }

    /// Matches the trace's next request with attempt `attempt` of `turn`, sent at `now_ms`.
    fn asked(&mut self, turn: u32, attempt: u32, now_ms: u64) -> Walk<'a, ()> {
        match self.run.view.requests.get(self.requests) {
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
        Ok(())
    }

    /// A provider error of `kind` at `due_ms` (R18, R21): the run fails by it unless it is
    /// retryable and retries are left; a retry waits `retry-after` when given, at most 60 s.
    /// Without a `retry-after` the trace tells the wait: the retry's instant, or, when there
    /// was no retry, a stop within the longest wait.
    fn failed(
        &mut self,
        turn: u32,
        attempt: u32,
        kind: FailureKind,
        retry_after_ms: Option<u64>,
        due_ms: u64,
    ) -> Walk<'a, Attempt> {
        let error = catalogue::provider_error(kind);
        if !error.retryable || attempt >= self.run.limits.provider_retries_max {
            return Ok(Attempt::Ended(End {
                at_ms: due_ms,
                cause: Cause::Provider(error),
            }));
        }
        let retry = self.run.view.requests.get(self.requests);
        let wait_ms = match (retry_after_ms, retry) {
            (Some(retry_after_ms), _) => retry_after_ms.min(RETRY_WAIT_MAX_MS),
            (None, Some(retry)) => retry.at_ms.saturating_sub(due_ms),
            (None, None) => RETRY_WAIT_MAX_MS,
        };
        if wait_ms > RETRY_WAIT_MAX_MS {
            let explanation = format!(
                "the provider's {} was retried after {wait_ms} ms; R18 caps the wait at {RETRY_WAIT_MAX_MS} ms",
                error.code
            );
            return disagree(Breach::ModelTiming, Where::Turn(turn), explanation);
        }
        let retry_ms = within_horizon(due_ms.saturating_add(wait_ms))?;
        if let Some(stop) = self.clock.stop_by(retry_ms)
            && (stop.at_ms < retry_ms || retry.is_none())
        {
            return Ok(Attempt::Ended(ended(stop)));
        }
        Ok(Attempt::Retried(retry_ms))
    }

    /// The batch of the reply taken at `reply_ms` (R19): past the turn limit every call gets
    /// `ABORTED` and the run fails; otherwise it runs, sequential or parallel (R17).
    fn batch(&mut self, reply_ms: u64) -> Walk<'a, Result<End, u64>> {
        let batch = &self.run.view.batches[self.batches];
        let facts = &self.run.facts[self.batches];
        self.batches += 1;
        if self.batches_run >= self.run.limits.turns_max {
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
}

/// The run's end at a stop.
fn ended(stop: Stop) -> End {
    End {
        at_ms: stop.at_ms,
        cause: stop.cause,
    }
}
