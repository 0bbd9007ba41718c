//! Sessions and runs: whether each run is read-only, which tools it switches off and so is
//! offered, and its limits.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::catalogue::{LIMIT_RANGES, Limit};
use crate::scenario::{Answer, Effect, LimitsScript, RunScript, SessionScript, ToolBehaviour};

use super::plan::{Catalogue, RegisteredTool};
use super::vocabulary::{CallIds, UNKNOWN_TOOLS};
use super::{Generator, Misbehaviour};

/// The state of one run being generated.
pub(super) struct RunPlan<'p> {
    pub(super) read_only: bool,
    pub(super) disabled: Vec<String>,
    pub(super) configured: Vec<String>,
    /// The offered tools.
    pub(super) offered: Vec<&'p RegisteredTool>,
    pub(super) limits: LimitsScript,
    pub(super) answers: Vec<Answer>,
    pub(super) tools: BTreeMap<Arc<str>, ToolBehaviour>,
    pub(super) ids: CallIds,
    /// A first batch the deadline edge scripts, in place of a drawn one.
    pub(super) first_batch: Option<FirstBatch>,
}

/// The first batch of a run at the inactivity deadline's edge, with activity just before it.
#[derive(Debug)]
pub(super) enum FirstBatch {
    /// The provider answers at `delay_ms` (the timeout − 1) with one call of `tool`.
    AfterReply { delay_ms: u64, tool: Arc<str> },
    /// Two parallel calls: `quick` finishes at the timeout − 1, resetting the deadline.
    Pair { quick: Arc<str>, slow: Arc<str> },
}

impl<'p> Generator<'p> {
    /// One session: one run, or several alternating between read-only and not.
    pub(super) fn session(&mut self) -> SessionScript {
        let runs_count = if self.fire(Misbehaviour::MultiRun) {
            self.rng.range_usize(2, 3)
        } else {
            1
        };
        let first_read_only = self.rng.percent(35);
        let mut runs: Vec<RunScript> = (0..runs_count)
            .map(|index| {
                let read_only = if runs_count > 1 {
                    (index % 2 == 0) == first_read_only
                } else {
                    first_read_only
                };
                self.run(read_only)
            })
            .collect();
        // Half the time, a value the first run carries without configuring it is configured by
        // the last: the history the last run loads must pass its guard (R22).
        // Only a value the first run does not leak on purpose (its planted errors and results
        // would carry it unguarded) and that shares nothing with a planted part.
        let first = runs[0].secrets.first().filter(|_| runs_count > 1).cloned();
        let movable = first.filter(|label| {
            let leaks = runs[0].turns.iter().any(|turn| {
                turn.error
                    .as_ref()
                    .is_some_and(|error| error.leak.as_ref() == Some(label))
            }) || runs[0].tools.values().any(|behaviour| {
                matches!(&behaviour.effect, Effect::LeakSecret { label: leaked, .. } if leaked == label)
            });
            let value = self.secrets.iter().find(|secret| secret.label == *label);
            let alone = value.is_some_and(|value| {
                self.secrets.iter().all(|other| {
                    other.label == value.label || !shares_a_window(&value.value, &other.value)
                })
            });
            !leaks && alone
        });
        if let Some(label) = movable.filter(|_| self.rng.percent(50)) {
            runs[0].secrets.remove(0);
            let last = runs.last_mut().expect("two runs or more");
            if !last.secrets.contains(&label) {
                last.secrets.push(label);
            }
        }
        SessionScript { runs }
    }

    fn run(&mut self, read_only: bool) -> RunScript {
        let disabled = self.disabled();
        let catalogue: &'p Catalogue = self.catalogue;
        let offered: Vec<&'p RegisteredTool> = catalogue
            .registered
            .iter()
            .filter(|tool| {
                (!read_only || tool.reads_only) && !disabled.iter().any(|off| **off == *tool.name)
            })
            .collect();
        let mut plan = RunPlan {
            read_only,
            disabled,
            configured: Vec::new(),
            offered,
            limits: LimitsScript::default(),
            answers: Vec::new(),
            tools: BTreeMap::new(),
            ids: CallIds::default(),
            first_batch: None,
        };
        let prompt = self.prompt(&mut plan);
        self.limits(&mut plan);
        self.behaviours(&mut plan);
        let turns = self.turns(&mut plan);
        let cancel_at_ms = if self.fire(Misbehaviour::Cancel) {
            Some(if self.rng.percent(70) {
                self.rng.range(0, 120)
            } else {
                self.rng.range(0, 5_000)
            })
        } else {
            None
        };
        RunScript {
            prompt,
            read_only,
            disabled_tools: plan.disabled,
            secrets: plan.configured,
            limits: plan.limits,
            cancel_at_ms,
            answers: plan.answers,
            tools: Arc::new(plan.tools),
            turns,
        }
    }

    /// The tools a run switches off, sorted: now and then one or two registered ones, and
    /// perhaps a name nothing registers.
    fn disabled(&mut self) -> Vec<String> {
        let mut disabled = Vec::new();
        if self.rng.percent(20) || self.fire(Misbehaviour::NotOffered) {
            for _ in 0..self.rng.range(1, 2) {
                disabled.push(self.rng.pick(&self.catalogue.registered).name.to_string());
            }
            if self.rng.percent(20) {
                disabled.push((*self.rng.pick(UNKNOWN_TOOLS)).to_owned());
            }
            disabled.sort();
            disabled.dedup();
        }
        disabled
    }

    /// The run's limits: one at its range's edge, or a low turn limit or batch cap for the
    /// misbehaviours that go past them.
    fn limits(&mut self, plan: &mut RunPlan<'p>) {
        if self.fire(Misbehaviour::EdgeLimits) {
            let range = LIMIT_RANGES[self.rng.range_usize(0, LIMIT_RANGES.len() - 1)];
            let bound = if self.rng.percent(50) {
                range.low
            } else {
                range.high
            };
            let Some(value) = (bound + self.rng.range(0, 2)).checked_sub(1) else {
                return;
            };
            let limits = &mut plan.limits;
            match range.limit {
                Limit::TurnsMax => limits.turns_max = Some(value as u32),
                Limit::CallsPerBatchMax => limits.calls_per_batch_max = Some(value as u32),
                Limit::ProviderTimeoutMs => limits.provider_timeout_ms = Some(value),
                Limit::InactivityTimeoutMs => limits.inactivity_timeout_ms = Some(value),
                Limit::ProviderRetriesMax => limits.provider_retries_max = Some(value as u32),
            }
            return;
        }
        if self.fire(Misbehaviour::EndlessLoop) {
            plan.limits.turns_max = Some(self.rng.range(1, 4) as u32);
        }
        if self.fire(Misbehaviour::OverCap) {
            plan.limits.calls_per_batch_max = Some(self.rng.range(1, 4) as u32);
        }
    }
}

/// Whether two texts share a stretch of 8 characters (a leak of one could show the other).
fn shares_a_window(one: &str, other: &str) -> bool {
    let starts: Vec<usize> = one
        .char_indices()
        .map(|(at, _)| at)
        .chain([one.len()])
        .collect();
    starts
        .windows(crate::catalogue::SECRET_RUN_CHARS_MIN + 1)
        .any(|window| other.contains(&one[window[0]..window[window.len() - 1]]))
}

#[cfg(test)]
mod tests {
    use super::shares_a_window;

    #[test]
    fn texts_share_a_window_of_eight_characters_not_bytes() {
        assert!(shares_a_window("abcdefgh", "xxabcdefghxx"));
        assert!(!shares_a_window("abcdefgh", "xxabcdefgxx"));
        assert!(!shares_a_window("abcdefg", "abcdefg"));
        // Eight characters of sixteen bytes; seven of them are not a window.
        assert!(shares_a_window("ééééééééx", "-éééééééé-"));
        assert!(!shares_a_window("ééééééééx", "-ééééééé-"));
    }
}
