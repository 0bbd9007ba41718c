//! One batch of calls: plausible calls to offered tools with valid arguments, and the
//! misbehaviours of a model's calls (tools not offered, bad ids, mixed batches, secrets in
//! ids, names, keys and text, two refusals at once), each at its own decision point; those of
//! a call's arguments are `misbehave.rs`'s.

use serde_json::{Value, json};

use crate::catalogue::{DEFAULT_LIMITS, SECRET_RUN_CHARS_MIN};
use crate::scenario::{Answer, CallScript, Effect, Reaction};

use super::edges::{CALL_ID_CHARS_MAX, around};
use super::plan::Plan;
use super::runs::RunPlan;
use super::vocabulary::{self, UNKNOWN_TOOLS};
use super::{Generator, Misbehaviour, args};

/// One batch of calls, and the reactions its results call for next turn.
pub(super) struct Batch {
    pub(super) calls: Vec<CallScript>,
    pub(super) reactions: Vec<Reaction>,
    /// The reply's text beside its calls.
    pub(super) text: String,
}

/// A call with valid arguments, and those arguments as a value (to make invalid ones from).
struct DrawnCall {
    call: CallScript,
    valid: Value,
}

impl<'p> Generator<'p> {
    /// One batch of calls: its size drawn around the run's batch cap, then the batch-wide
    /// misbehaviours (mixed modes, bad ids, an id at its length limit).
    pub(super) fn batch(&mut self, plan: &mut RunPlan<'p>) -> Batch {
        let size = match plan.limits.calls_per_batch_max {
            _ if self.fire(Misbehaviour::EdgeBatch) => {
                let cap = plan
                    .limits
                    .calls_per_batch_max
                    .unwrap_or(DEFAULT_LIMITS.calls_per_batch_max) as u64;
                around(&mut self.rng, cap).max(1)
            }
            Some(cap) if self.rng.percent(70) => cap as u64 + self.rng.range(1, 3),
            _ => self.rng.range(1, 4),
        };
        let mut calls = Vec::new();
        let mut reactions = Vec::new();
        for _ in 0..size {
            let call = self.call(plan, &mut reactions);
            calls.push(call);
        }
        if self.fire(Misbehaviour::MixedBatch) {
            self.mix(plan, &mut calls);
        }
        if self.fire(Misbehaviour::BadIds) && !calls.is_empty() {
            let position = self.rng.range_usize(0, calls.len() - 1);
            calls[position].id = match self.rng.below(3) {
                0 => String::new(),
                1 => vocabulary::overlong_call_id(),
                _ => calls[0].id.clone(),
            };
            if position == 0 && calls.len() > 1 {
                calls[1].id = calls[0].id.clone();
            }
        }
        if self.fire(Misbehaviour::EdgeId) {
            let position = self.rng.range_usize(0, calls.len() - 1);
            let chars = around(&mut self.rng, CALL_ID_CHARS_MAX) as usize;
            let letter = if self.rng.percent(50) { 'x' } else { 'é' };
            calls[position].id = vocabulary::call_id_of(&calls[position].id, chars, letter);
        }
        let mut text = String::new();
        if !plan.configured.is_empty()
            && !calls.is_empty()
            && self.fire(Misbehaviour::SecretsEverywhere)
        {
            self.secret_somewhere(plan, &mut calls, &mut text);
        }
        if plan
            .tools
            .values()
            .any(|behaviour| matches!(behaviour.effect, Effect::Inject { .. }))
        {
            reactions.push(Reaction::FollowInjection);
        }
        reactions.dedup();
        Batch {
            calls,
            reactions,
            text,
        }
    }

    /// A configured value, or a stretch of one (8 or more characters: a fragment; 7: not
    /// one), at the start or the end of a call id, a tool name, an argument key or the reply's
    /// text, or as the whole of it: R22's guard must replace exactly that stretch.
    fn secret_somewhere(
        &mut self,
        plan: &RunPlan<'p>,
        calls: &mut [CallScript],
        text: &mut String,
    ) {
        let label = self.rng.pick(&plan.configured).clone();
        let value: Vec<char> = self
            .secret_value(&label)
            .unwrap_or_default()
            .chars()
            .collect();
        let length = match self.rng.below(3) {
            0 => value.len(),
            1 => SECRET_RUN_CHARS_MIN - 1,
            _ => self
                .rng
                .range_usize(SECRET_RUN_CHARS_MIN, value.len().max(SECRET_RUN_CHARS_MIN)),
        }
        .min(value.len());
        let from = self.rng.range_usize(0, value.len() - length);
        let mut piece: String = value[from..from + length].iter().collect();
        // Two values side by side: a whole one touching a fragment of the other (R29 joins them).
        if plan.configured.len() > 1 && self.rng.percent(30) {
            let other = plan
                .configured
                .iter()
                .find(|other| **other != label)
                .cloned();
            let other = other
                .and_then(|other| self.secret_value(&other))
                .unwrap_or_default();
            let fragment: String = other.chars().skip(1).collect();
            piece = if self.rng.percent(50) {
                format!("{piece}{fragment}")
            } else {
                format!("{fragment}{piece}")
            };
        }
        let placement = self.rng.below(3);
        let placed = |host: &str| match placement {
            0 => format!("{piece}{host}"),
            1 => format!("{host}{piece}"),
            _ => piece.clone(),
        };
        let position = self.rng.range_usize(0, calls.len() - 1);
        let call = &mut calls[position];
        match self.rng.below(4) {
            0 => call.id = placed(&call.id),
            1 => call.name = placed(&call.name),
            2 => {
                if let Ok(Value::Object(mut members)) = serde_json::from_str(&call.arguments) {
                    members.insert(placed("k"), json!(1));
                    call.arguments = args::text(&Value::Object(members));
                }
            }
            _ => *text = placed("Looking that up: "),
        }
    }

    /// Mixes modes in `calls`: a parallel read first, and often a sequential tool (a write or
    /// `ask_user`) last.
    fn mix(&mut self, plan: &mut RunPlan<'p>, calls: &mut Vec<CallScript>) {
        let read = self.plausible(plan, true);
        calls.insert(0, read);
        if !plan.read_only || self.rng.percent(50) {
            let sequential = if self.rng.percent(70) {
                self.rng.pick(&self.catalogue.writes).to_string()
            } else {
                "ask_user".to_owned()
            };
            let call = self.call_to(plan, &sequential);
            calls.push(call);
        }
    }

    /// A call to a tool offered in the run, with valid arguments.
    fn plausible(&mut self, plan: &mut RunPlan<'p>, reads_only: bool) -> CallScript {
        self.plausible_with_value(plan, reads_only).call
    }

    /// [`plausible`](Self::plausible), with its arguments as a value.
    fn plausible_with_value(&mut self, plan: &mut RunPlan<'p>, reads_only: bool) -> DrawnCall {
        let candidates = plan
            .offered
            .iter()
            .filter(|tool| (!reads_only || tool.reads_only) && &*tool.name != "ask_user")
            .map(|tool| &*tool.name);
        let name = self
            .rng
            .pick_from(candidates)
            .unwrap_or("panes_list")
            .to_owned();
        self.call_with_value(plan, &name)
    }

    /// A call to `name` with valid arguments.
    pub(super) fn call_to(&mut self, plan: &mut RunPlan<'p>, name: &str) -> CallScript {
        self.call_with_value(plan, name).call
    }

    /// [`call_to`](Self::call_to), with its arguments as a value. A call of `ask_user` also
    /// scripts the user's answer.
    fn call_with_value(&mut self, plan: &mut RunPlan<'p>, name: &str) -> DrawnCall {
        let valid = self.valid_value(name);
        if name == "ask_user" {
            let delay_ms = if self.rng.percent(20) {
                self.rng.range(1_000, 600_000)
            } else {
                self.rng.range(0, 500)
            };
            let text = (!self.rng.percent(10)).then(|| vocabulary::ANSWER.to_owned());
            plan.answers.push(Answer {
                text,
                delay_ms,
                cancels: false,
            });
        }
        let call = CallScript {
            id: plan.ids.next_id(),
            name: name.to_owned(),
            arguments: args::text(&valid),
            fix: None,
        };
        DrawnCall { call, valid }
    }

    /// A valid input of `name` (`{}` for an unknown name).
    fn valid_value(&mut self, name: &str) -> Value {
        match self.plan.arguments.get(name) {
            Some(tool) => tool.arguments.valid(&mut self.rng),
            None => json!({}),
        }
    }

    /// The published schema of `name` (an empty schema for an unknown name).
    pub(super) fn schema(&self, name: &str) -> &'p Value {
        static EMPTY: Value = Value::Null;
        let plan: &'p Plan = self.plan;
        plan.arguments.get(name).map_or(&EMPTY, |tool| &tool.schema)
    }

    /// One call: plausible, or misbehaving as the swarm decides.
    fn call(&mut self, plan: &mut RunPlan<'p>, reactions: &mut Vec<Reaction>) -> CallScript {
        if self.fire(Misbehaviour::RefusalTies) {
            return self.tie(plan);
        }
        if self.fire(Misbehaviour::NotOffered) {
            let name = match self.rng.below(3) {
                0 => self.rng.pick(&self.catalogue.writes).to_string(),
                1 if !plan.disabled.is_empty() => self.rng.pick(&plan.disabled).clone(),
                _ => (*self.rng.pick(UNKNOWN_TOOLS)).to_owned(),
            };
            return self.call_to(plan, &name);
        }
        let asks = self.rng.percent(8) || self.fire(Misbehaviour::AskUser);
        if asks && plan.offered.iter().any(|tool| &*tool.name == "ask_user") {
            return self.call_to(plan, "ask_user");
        }
        let reads_only = plan.read_only || self.rng.percent(45);
        let DrawnCall { mut call, valid } = self.plausible_with_value(plan, reads_only);
        self.misbehave(plan, &mut call, &valid, reactions);
        call
    }

    /// A call that meets two of R3's refusals at once, drawn among those the run allows: the
    /// code R3 names first must win (I14).
    fn tie(&mut self, plan: &mut RunPlan<'p>) -> CallScript {
        let disabled_write = plan
            .disabled
            .iter()
            .find(|name| self.catalogue.writes.iter().any(|write| **write == ***name))
            .cloned();
        let mut checks: Vec<Refusal> = vec![Refusal::Id, Refusal::Unknown, Refusal::Schema];
        // A 256 KiB argument text costs a campaign more than a whole run: seldom (as huge-args).
        if self.rng.percent(3) {
            checks.push(Refusal::Size);
        }
        if plan.read_only {
            checks.push(Refusal::ReadOnly);
        }
        if !plan.disabled.is_empty() {
            checks.push(Refusal::Off);
        }
        if !plan.configured.is_empty() {
            checks.push(Refusal::Secret);
        }
        let first = *self.rng.pick(&checks);
        let others: Vec<Refusal> = checks
            .iter()
            .copied()
            .filter(|check| *check != first && compatible(first, *check, disabled_write.is_some()))
            .collect();
        let second = self.rng.pick_from(others.iter()).copied().unwrap_or(first);
        let meets = |check: Refusal| first == check || second == check;
        let name = if meets(Refusal::Unknown) {
            (*self.rng.pick(UNKNOWN_TOOLS)).to_owned()
        } else if meets(Refusal::ReadOnly) && meets(Refusal::Off) {
            disabled_write.unwrap_or_default()
        } else if meets(Refusal::ReadOnly) {
            self.rng.pick(&self.catalogue.writes).to_string()
        } else if meets(Refusal::Off) {
            self.rng.pick(&plan.disabled).clone()
        } else {
            self.plausible_with_value(plan, plan.read_only).call.name
        };
        let DrawnCall { mut call, valid } = self.call_with_value(plan, &name);
        let mut value = valid.clone();
        if meets(Refusal::Schema) {
            let errors = self.rng.range_usize(1, 3);
            let schema = self.schema(&name);
            value = args::invalid(&mut self.rng, &valid, schema, errors);
        }
        if meets(Refusal::Secret) {
            let label = self.rng.pick(&plan.configured).clone();
            let secret = self.secret_value(&label).unwrap_or_default().to_owned();
            if let Some(object) = value.as_object_mut() {
                object.insert("note".to_owned(), json!(format!("key {secret}")));
            }
        }
        call.arguments = if meets(Refusal::Size) {
            args::oversized(&args::text(&value))
        } else {
            args::text(&value)
        };
        if meets(Refusal::Id) {
            call.id = if self.rng.percent(50) {
                String::new()
            } else {
                vocabulary::overlong_call_id()
            };
        }
        call
    }

    /// The value of the planted secret labelled `label`.
    pub(super) fn secret_value(&self, label: &str) -> Option<&str> {
        self.secrets
            .iter()
            .find(|secret| secret.label == label)
            .map(|secret| secret.value.as_str())
    }
}

/// One of R3's refusals, for [`Generator::tie`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Refusal {
    /// `INVALID_CALL_ID`.
    Id,
    /// `TOOL_NOT_FOUND`.
    Unknown,
    /// `TOOL_NOT_ALLOWED`, read-only.
    ReadOnly,
    /// `TOOL_NOT_ALLOWED`, switched off.
    Off,
    /// `PAYLOAD_TOO_LARGE`.
    Size,
    /// `SECRET_IN_INPUT`.
    Secret,
    /// `TOOL_INPUT_INVALID`.
    Schema,
}

/// Whether one call can meet both refusals: an unknown tool is neither a write nor switched
/// off, and a write switched off in a read-only run needs such a write.
fn compatible(first: Refusal, second: Refusal, disabled_write: bool) -> bool {
    let pair = |a: Refusal, b: Refusal| (first == a && second == b) || (first == b && second == a);
    !(pair(Refusal::Unknown, Refusal::ReadOnly)
        || pair(Refusal::Unknown, Refusal::Off)
        || (pair(Refusal::ReadOnly, Refusal::Off) && !disabled_write))
}
