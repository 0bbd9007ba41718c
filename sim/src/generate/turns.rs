//! The provider's script of a run: a batch of calls per turn, provider errors and timeouts
//! before a step, and the final reply.

use crate::scenario::{CallScript, FailureKind, ProviderFailure, Reaction, Turn};

use super::calls::Batch;
use super::edges::{PROVIDER_TIMEOUT_MS, RETRIES_MAX, RETRY_WAIT_MAX_MS, around};
use super::runs::FirstBatch;
use super::runs::RunPlan;
use super::vocabulary;
use super::{Generator, Misbehaviour};

/// One reply with calls: the batch, the reactions its results call for next turn, and when
/// the provider answers.
struct Reply {
    calls: Vec<CallScript>,
    text: String,
    reactions: Vec<Reaction>,
    delay_ms: u64,
}

impl<'p> Generator<'p> {
    /// The provider's turns: as many replies with calls as the run's turn limit calls for
    /// (past it, at its edge, or a few), then the final reply.
    pub(super) fn turns(&mut self, plan: &mut RunPlan<'p>) -> Vec<Turn> {
        let turns_max = plan.limits.turns_max.unwrap_or(8) as u64;
        let edge = self.fire(Misbehaviour::EdgeTurns);
        let call_turns = if edge {
            around(&mut self.rng, turns_max).max(1)
        } else if plan.limits.turns_max.is_some() {
            turns_max + self.rng.range(1, 2)
        } else {
            self.rng.range(1, 4)
        };
        let mut turns = Vec::new();
        let mut react_next = Vec::new();
        for _ in 0..call_turns {
            self.provider_trouble(plan, &mut turns);
            let reply = self.reply(plan);
            turns.push(Turn {
                delay_ms: reply.delay_ms,
                calls: reply.calls,
                text: reply.text,
                react: std::mem::take(&mut react_next),
                ..Turn::default()
            });
            react_next = reply.reactions;
            if !edge && self.rng.percent(10) {
                break;
            }
        }
        self.provider_trouble(plan, &mut turns);
        turns.push(Turn {
            text: vocabulary::FINAL_REPLY.to_owned(),
            react: react_next,
            ..Turn::default()
        });
        turns
    }

    /// The next reply with calls: the first batch the deadline edge scripted, or a drawn one,
    /// perhaps at the provider timeout's edge.
    fn reply(&mut self, plan: &mut RunPlan<'p>) -> Reply {
        match plan.first_batch.take() {
            Some(FirstBatch::AfterReply { delay_ms, tool }) => Reply {
                calls: vec![self.call_to(plan, &tool)],
                text: String::new(),
                reactions: Vec::new(),
                delay_ms,
            },
            Some(FirstBatch::Pair { quick, slow }) => {
                let calls = vec![self.call_to(plan, &quick), self.call_to(plan, &slow)];
                Reply {
                    calls,
                    text: String::new(),
                    reactions: Vec::new(),
                    delay_ms: 0,
                }
            }
            None => {
                let Batch {
                    calls,
                    reactions,
                    text,
                } = self.batch(plan);
                let delay_ms = if self.fire(Misbehaviour::EdgeProviderTimeout) {
                    around(&mut self.rng, PROVIDER_TIMEOUT_MS)
                } else {
                    0
                };
                Reply {
                    calls,
                    text,
                    reactions,
                    delay_ms,
                }
            }
        }
    }

    /// Provider errors and timeouts before a step. An error's message may carry one of the
    /// run's configured values (the runtime's guard must keep it out of `run.failed`).
    fn provider_trouble(&mut self, plan: &RunPlan<'p>, turns: &mut Vec<Turn>) {
        if self.fire(Misbehaviour::EdgeRetries) {
            self.retries_edge(plan, turns);
        }
        if self.fire(Misbehaviour::ProviderErrors) {
            let kind = if self.rng.percent(85) {
                *self.rng.pick(&[
                    FailureKind::RateLimited,
                    FailureKind::Unavailable,
                    FailureKind::MalformedResponse,
                ])
            } else {
                *self.rng.pick(&[
                    FailureKind::Authentication,
                    FailureKind::Permission,
                    FailureKind::ModelNotFound,
                ])
            };
            let retry_after_ms = (kind == FailureKind::RateLimited && self.rng.percent(50))
                .then(|| self.rng.range(100, 90_000));
            let leak = self.leak(plan);
            turns.push(Turn {
                error: Some(ProviderFailure {
                    kind,
                    retry_after_ms,
                    leak,
                }),
                ..Turn::default()
            });
        }
        if self.fire(Misbehaviour::ProviderTimeout) {
            turns.push(Turn {
                delay_ms: 60_001,
                text: "too late".to_owned(),
                ..Turn::default()
            });
        }
    }

    /// As many rate-limited errors in a row as the retries allow, or one more, each perhaps
    /// with a `retry-after` at the cap ± 1 ms (R18).
    fn retries_edge(&mut self, plan: &RunPlan<'p>, turns: &mut Vec<Turn>) {
        let errors = RETRIES_MAX + self.rng.range(0, 1);
        for _ in 0..errors {
            let retry_after_ms = self
                .rng
                .percent(50)
                .then(|| around(&mut self.rng, RETRY_WAIT_MAX_MS));
            let leak = self.leak(plan);
            turns.push(Turn {
                error: Some(ProviderFailure {
                    kind: FailureKind::RateLimited,
                    retry_after_ms,
                    leak,
                }),
                ..Turn::default()
            });
        }
    }

    /// Now and then, the label of one of the run's configured values for an error to carry.
    fn leak(&mut self, plan: &RunPlan<'p>) -> Option<String> {
        if plan.configured.is_empty() || !self.rng.percent(30) {
            return None;
        }
        Some(self.rng.pick(&plan.configured).clone())
    }
}
