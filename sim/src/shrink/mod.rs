//! Shrinking a failing scenario (SPEC §10; a crash plan's: [`plan`]): fewer sessions, runs, turns, calls and fields,
//! shorter strings, while the same invariant still fails — and by the same check: the first
//! violation of that invariant must stay the same [`Breach`], so the file a user gets shows
//! the failure they were told about (shrinking the arguments of a write in a read-only run
//! until they are invalid would keep I2 but trade "the body ran" for "the wrong code").
//!
//! Greedy, one element at a time, in passes from the coarsest (whole sessions) to the finest
//! (one key of one call's arguments, half a prompt), repeated until a whole round removes
//! nothing or the budget of executions runs out. Each candidate is an ordinary scenario, so
//! every step is checked by the same execution and oracles as the original.

pub mod plan;

use std::sync::Arc;

use serde_json::Value;

use crate::oracle::{Breach, Invariant};
use crate::scenario::{Effect, RunScript, Scenario, ScenarioSize};
use crate::simulate::{Engine, faults_of};

/// The result of shrinking.
#[derive(Debug, Clone)]
pub struct Shrunk {
    /// The smallest failing scenario found.
    pub scenario: Scenario,
    /// The size before.
    pub before: ScenarioSize,
    /// The size after.
    pub after: ScenarioSize,
    /// Executions spent.
    pub executions: usize,
}

/// The default budget of executions.
pub const EXECUTIONS_MAX: usize = 4_000;

/// Shrinks `scenario` while the first violation of `breach`'s invariant is still `breach`.
pub fn shrink(
    engine: &Engine,
    scenario: &Scenario,
    breach: Breach,
    executions_max: usize,
) -> Shrunk {
    let mut shrinker = Shrinker {
        engine,
        invariant: breach.invariant(),
        breach,
        executions: 0,
        executions_max,
    };
    let before = scenario.size();
    let mut current = scenario.clone();
    loop {
        let mut progressed = false;
        for pass in PASSES {
            if shrinker.exhausted() {
                break;
            }
            progressed |= shrinker.pass(&mut current, *pass);
        }
        if !progressed || shrinker.exhausted() {
            break;
        }
    }
    remove_unused_secrets(&mut current);
    if !shrinker.fails(&current) {
        // Removing unreferenced secrets cannot change a run, but the oracle decides.
        current = scenario.clone();
    }
    Shrunk {
        after: current.size(),
        scenario: current,
        before,
        executions: shrinker.executions,
    }
}

struct Shrinker<'e> {
    engine: &'e Engine,
    invariant: Invariant,
    breach: Breach,
    executions: usize,
    executions_max: usize,
}

/// One way to make a scenario smaller: the number of candidates it offers, and candidate
/// `index` applied to a scenario (`false` when it does not apply).
type Pass = fn(&mut Scenario, usize) -> bool;

const PASSES: &[Pass] = &[
    remove_session,
    remove_run,
    remove_turn,
    remove_call,
    remove_reaction,
    remove_behaviour,
    zero_latency,
    remove_answer,
    remove_cancel,
    remove_disabled,
    remove_run_secret,
    reset_limit,
    remove_prompt_sentence,
    halve_prompt,
    remove_argument_key,
    remove_fix,
];

impl Shrinker<'_> {
    fn exhausted(&self) -> bool {
        self.executions >= self.executions_max
    }

    fn fails(&mut self, scenario: &Scenario) -> bool {
        self.executions += 1;
        let faults = faults_of(scenario, None);
        let mut checked = self.engine.check(scenario, faults);
        if self.invariant == Invariant::I11 {
            self.executions += 1;
            self.engine.rerun(scenario, faults, &mut checked);
        }
        checked
            .verdict
            .first(self.invariant)
            .is_some_and(|violation| violation.breach == self.breach)
    }

    /// Applies every candidate of `pass` that keeps the failure; true if any did.
    fn pass(&mut self, current: &mut Scenario, pass: Pass) -> bool {
        let mut progressed = false;
        // Candidates are tried from the last to the first, so removing one never shifts the
        // index of a candidate not yet tried.
        let mut index = candidates_upper_bound(current);
        while index > 0 && !self.exhausted() {
            index -= 1;
            let mut candidate = current.clone();
            if !pass(&mut candidate, index) || candidate == *current {
                continue;
            }
            if self.fails(&candidate) {
                *current = candidate;
                progressed = true;
            }
        }
        progressed
    }
}

/// An upper bound of candidate indices for any pass: every element of the scenario counted.
fn candidates_upper_bound(scenario: &Scenario) -> usize {
    let mut count = scenario.sessions.len();
    for run in runs(scenario) {
        count += 8
            + run.turns.len()
            + run.tools.len()
            + run.answers.len()
            + run.disabled_tools.len()
            + run.secrets.len();
        count += run.prompt.matches(". ").count();
        for turn in &run.turns {
            count += turn.calls.len() + turn.react.len();
            for call in &turn.calls {
                count += serde_json::from_str::<Value>(&call.arguments)
                    .ok()
                    .and_then(|value| value.as_object().map(|object| object.len()))
                    .unwrap_or(0);
            }
        }
    }
    count
}

fn runs(scenario: &Scenario) -> impl Iterator<Item = &RunScript> {
    scenario.sessions.iter().flat_map(|session| &session.runs)
}

fn runs_mut(scenario: &mut Scenario) -> impl Iterator<Item = &mut RunScript> {
    scenario
        .sessions
        .iter_mut()
        .flat_map(|session| &mut session.runs)
}

/// The `index`-th element of a flattening over runs: (run, position within the run).
fn nth_in_runs(
    scenario: &mut Scenario,
    index: usize,
    count: impl Fn(&RunScript) -> usize,
) -> Option<(&mut RunScript, usize)> {
    let mut index = index;
    for run in runs_mut(scenario) {
        let here = count(run);
        if index < here {
            return Some((run, index));
        }
        index -= here;
    }
    None
}

fn remove_session(scenario: &mut Scenario, index: usize) -> bool {
    if scenario.sessions.len() < 2 || index >= scenario.sessions.len() {
        return false;
    }
    scenario.sessions.remove(index);
    true
}

fn remove_run(scenario: &mut Scenario, index: usize) -> bool {
    let mut index = index;
    for session in &mut scenario.sessions {
        if index < session.runs.len() {
            if session.runs.len() < 2 {
                return false;
            }
            session.runs.remove(index);
            return true;
        }
        index -= session.runs.len();
    }
    false
}

fn remove_turn(scenario: &mut Scenario, index: usize) -> bool {
    let Some((run, position)) = nth_in_runs(scenario, index, |run| run.turns.len()) else {
        return false;
    };
    run.turns.remove(position);
    true
}

fn remove_call(scenario: &mut Scenario, index: usize) -> bool {
    let count = |run: &RunScript| run.turns.iter().map(|turn| turn.calls.len()).sum();
    let Some((run, mut position)) = nth_in_runs(scenario, index, count) else {
        return false;
    };
    for turn in &mut run.turns {
        if position < turn.calls.len() {
            turn.calls.remove(position);
            return true;
        }
        position -= turn.calls.len();
    }
    false
}

fn remove_reaction(scenario: &mut Scenario, index: usize) -> bool {
    let count = |run: &RunScript| run.turns.iter().map(|turn| turn.react.len()).sum();
    let Some((run, mut position)) = nth_in_runs(scenario, index, count) else {
        return false;
    };
    for turn in &mut run.turns {
        if position < turn.react.len() {
            turn.react.remove(position);
            return true;
        }
        position -= turn.react.len();
    }
    false
}

fn remove_behaviour(scenario: &mut Scenario, index: usize) -> bool {
    let Some((run, position)) = nth_in_runs(scenario, index, |run| run.tools.len()) else {
        return false;
    };
    let Some(name) = run.tools.keys().nth(position).cloned() else {
        return false;
    };
    Arc::make_mut(&mut run.tools).remove(&name);
    true
}

fn zero_latency(scenario: &mut Scenario, index: usize) -> bool {
    let Some((run, position)) = nth_in_runs(scenario, index, |run| run.tools.len()) else {
        return false;
    };
    let Some(behaviour) = Arc::make_mut(&mut run.tools).values_mut().nth(position) else {
        return false;
    };
    if behaviour.latency_ms == 0 {
        return false;
    }
    behaviour.latency_ms = if behaviour.latency_ms > 10 { 10 } else { 0 };
    true
}

fn remove_answer(scenario: &mut Scenario, index: usize) -> bool {
    let Some((run, position)) = nth_in_runs(scenario, index, |run| run.answers.len()) else {
        return false;
    };
    run.answers.remove(position);
    true
}

fn remove_cancel(scenario: &mut Scenario, index: usize) -> bool {
    let Some(run) = runs_mut(scenario).nth(index) else {
        return false;
    };
    run.cancel_at_ms.take().is_some()
}

fn remove_disabled(scenario: &mut Scenario, index: usize) -> bool {
    let Some((run, position)) = nth_in_runs(scenario, index, |run| run.disabled_tools.len()) else {
        return false;
    };
    run.disabled_tools.remove(position);
    true
}

fn remove_run_secret(scenario: &mut Scenario, index: usize) -> bool {
    let Some((run, position)) = nth_in_runs(scenario, index, |run| run.secrets.len()) else {
        return false;
    };
    run.secrets.remove(position);
    true
}

fn reset_limit(scenario: &mut Scenario, index: usize) -> bool {
    let Some((run, position)) = nth_in_runs(scenario, index, |_| 5) else {
        return false;
    };
    let limits = &mut run.limits;
    match position {
        0 => limits.turns_max.take().is_some(),
        1 => limits.calls_per_batch_max.take().is_some(),
        2 => limits.provider_timeout_ms.take().is_some(),
        3 => limits.inactivity_timeout_ms.take().is_some(),
        _ => limits.provider_retries_max.take().is_some(),
    }
}

fn remove_prompt_sentence(scenario: &mut Scenario, index: usize) -> bool {
    let Some((run, position)) =
        nth_in_runs(scenario, index, |run| run.prompt.matches(". ").count() + 1)
    else {
        return false;
    };
    let sentences: Vec<&str> = run.prompt.split(". ").collect();
    if sentences.len() < 2 {
        return false;
    }
    let kept: Vec<&str> = sentences
        .iter()
        .enumerate()
        .filter(|(at, _)| *at != position)
        .map(|(_, sentence)| *sentence)
        .collect();
    run.prompt = kept.join(". ");
    true
}

fn halve_prompt(scenario: &mut Scenario, index: usize) -> bool {
    let Some(run) = runs_mut(scenario).nth(index) else {
        return false;
    };
    let characters = run.prompt.chars().count();
    if characters < 2 {
        return false;
    }
    run.prompt = run.prompt.chars().take(characters / 2).collect();
    true
}

fn remove_argument_key(scenario: &mut Scenario, index: usize) -> bool {
    let keys = |arguments: &str| -> usize {
        serde_json::from_str::<Value>(arguments)
            .ok()
            .and_then(|value| value.as_object().map(|object| object.len()))
            .unwrap_or(0)
    };
    let count = move |run: &RunScript| {
        run.turns
            .iter()
            .flat_map(|turn| &turn.calls)
            .map(|call| keys(&call.arguments))
            .sum()
    };
    let Some((run, mut position)) = nth_in_runs(scenario, index, count) else {
        return false;
    };
    for call in run.turns.iter_mut().flat_map(|turn| &mut turn.calls) {
        let here = keys(&call.arguments);
        if position < here {
            let Ok(Value::Object(mut object)) = serde_json::from_str::<Value>(&call.arguments)
            else {
                return false;
            };
            let Some(key) = object.keys().nth(position).cloned() else {
                return false;
            };
            object.remove(&key);
            call.arguments = Value::Object(object).to_string();
            return true;
        }
        position -= here;
    }
    false
}

fn remove_fix(scenario: &mut Scenario, index: usize) -> bool {
    let count = |run: &RunScript| run.turns.iter().map(|turn| turn.calls.len()).sum();
    let Some((run, position)) = nth_in_runs(scenario, index, count) else {
        return false;
    };
    let Some(call) = run
        .turns
        .iter_mut()
        .flat_map(|turn| &mut turn.calls)
        .nth(position)
    else {
        return false;
    };
    call.fix.take().is_some()
}

/// Drops planted secrets that no run configures, no prompt carries and no behaviour leaks.
fn remove_unused_secrets(scenario: &mut Scenario) {
    let used: Vec<bool> = scenario
        .secrets
        .iter()
        .map(|secret| {
            runs(scenario).any(|run| {
                run.secrets.contains(&secret.label)
                    || run.prompt.contains(&secret.value)
                    || run.tools.values().any(|behaviour| matches!(&behaviour.effect, Effect::LeakSecret { label, .. } if *label == secret.label))
                    || run.turns.iter().any(|turn| {
                        turn.error.as_ref().and_then(|error| error.leak.as_ref()) == Some(&secret.label)
                    })
            })
        })
        .collect();
    let mut used = used.into_iter();
    scenario.secrets.retain(|_| used.next().unwrap_or(true));
}
