//! The misbehaviours of one call's arguments, combined as a model combines them.
//!
//! A model that gets one thing wrong in a call often gets several wrong at once: it sends an
//! invalid input with a repeated key, pastes a key into a call whose arguments are cut short,
//! pads a refused input past R3's size limit. Each misbehaviour is therefore its own decision
//! point, met for every call whatever the others decided, and the ones that fire are applied
//! in the order a call's text is made:
//!
//! 1. **The value**: at most one way of breaking it — `edge-errors` (4, 5 or 6 errors),
//!    `invalid-args` (1 to 3), `many-errors` (6 to 10) or `edge-bounds` (keywords at their
//!    bounds) — since each decides how many errors the input holds, the first that fires
//!    breaks it; the valid input stays as the fix a retry sends.
//! 2. **A secret**: `edge-secrets` (7, 8 or 9 characters of a configured value) or
//!    `echo-secret` (the whole value, its first character sometimes `\u`-escaped). Into a
//!    valid input it goes as a search that is valid but for the secret; into a broken one as
//!    one more member, `note`.
//! 3. **The text**: `duplicate-keys` (a key written twice), then `not-json` (text no parser
//!    takes), each on whatever text the steps before made.
//! 4. **The size**: `edge-payload` (256 KiB ± 1 byte) or `huge-args` (just over 256 KiB),
//!    padding whatever text the steps before made.
//!
//! R3 names the refusal a call meets first (size, then a secret, then the text and the
//! schema), so the later steps hide the earlier ones' refusals, and I14 predicts which one
//! wins; I4 predicts the error list only where the schema's check is the one reached.

use serde_json::{Value, json};

use crate::catalogue::SECRET_RUN_CHARS_MIN;
use crate::scenario::{CallScript, Reaction};

use super::edges::{ARGUMENT_BYTES_MAX, FIELD_ERRORS_MAX, around};
use super::runs::RunPlan;
use super::{Generator, Misbehaviour, args, vocabulary};

/// A configured value's characters to put into a call: the text, and whether its first
/// character is written as a `\u` escape.
struct Echo {
    text: String,
    escaped: bool,
}

impl<'p> Generator<'p> {
    /// The misbehaviours of one call's arguments, each drawn, applied in the order above.
    pub(super) fn misbehave(
        &mut self,
        plan: &RunPlan<'p>,
        call: &mut CallScript,
        valid: &Value,
        reactions: &mut Vec<Reaction>,
    ) {
        let mut value = match self.broken(&call.name, valid) {
            Some(broken) => {
                call.fix = Some(args::text(valid));
                if self.rng.percent(70) {
                    reactions.push(Reaction::RetryInvalid);
                }
                broken
            }
            None => valid.clone(),
        };
        let echo = self.echo(plan);
        if let Some(echo) = &echo {
            let said = format!("login with {}", echo.text);
            match value.as_object_mut() {
                Some(members) if call.fix.is_some() => {
                    members.insert("note".to_owned(), json!(said));
                }
                _ => {
                    call.name = vocabulary::ECHO_TOOL.to_owned();
                    call.fix = None;
                    value = json!({ "query": said });
                }
            }
        }
        let mut text = if self.fire(Misbehaviour::DuplicateKeys) {
            if self.rng.percent(30) {
                args::with_duplicate_key(&value)
            } else {
                args::repeated_key(&mut self.rng, &value)
            }
        } else {
            args::text(&value)
        };
        if let Some(Echo {
            text: secret,
            escaped: true,
        }) = &echo
        {
            text = vocabulary::escape_first(&text, secret);
        }
        if self.fire(Misbehaviour::NotJson) {
            text = args::not_json(&mut self.rng, &text);
        }
        call.arguments = self.sized(text);
    }

    /// `valid` broken by the first of the value's misbehaviours that fires, if one does.
    fn broken(&mut self, tool: &str, valid: &Value) -> Option<Value> {
        let schema = self.schema(tool);
        if self.fire(Misbehaviour::EdgeErrors) {
            let errors = around(&mut self.rng, FIELD_ERRORS_MAX) as usize;
            let nested = self
                .rng
                .percent(50)
                .then(|| args::invalid_nested(&mut self.rng, valid, errors))
                .flatten();
            Some(nested.unwrap_or_else(|| args::invalid(&mut self.rng, valid, schema, errors)))
        } else if self.fire(Misbehaviour::InvalidArgs) {
            let errors = self.rng.range_usize(1, 3);
            Some(args::invalid(&mut self.rng, valid, schema, errors))
        } else if self.fire(Misbehaviour::ManyErrors) {
            let errors = self.rng.range_usize(6, 10);
            Some(args::invalid(&mut self.rng, valid, schema, errors))
        } else if self.fire(Misbehaviour::EdgeBounds) {
            let errors = self.rng.range_usize(1, 7);
            Some(args::at_bounds(&mut self.rng, valid, schema, errors))
        } else {
            None
        }
    }

    /// A configured value's characters the call carries, if a secret's misbehaviour fires:
    /// 7, 8 or 9 of its first characters, or all of it.
    fn echo(&mut self, plan: &RunPlan<'p>) -> Option<Echo> {
        if plan.configured.is_empty() {
            return None;
        }
        if self.fire(Misbehaviour::EdgeSecrets) {
            let label = self.rng.pick(&plan.configured).clone();
            let chars = around(&mut self.rng, SECRET_RUN_CHARS_MIN as u64) as usize;
            let value = self.secret_value(&label).unwrap_or_default();
            let text = value.chars().take(chars).collect();
            return Some(Echo {
                text,
                escaped: false,
            });
        }
        if self.fire(Misbehaviour::EchoSecret) {
            let label = self.rng.pick(&plan.configured).clone();
            let text = self.secret_value(&label).unwrap_or_default().to_owned();
            let escaped = self.rng.percent(30);
            return Some(Echo { text, escaped });
        }
        None
    }

    /// `text` padded to R3's limit ± 1 byte, or just past it, if a size's misbehaviour fires.
    fn sized(&mut self, text: String) -> String {
        if self.fire(Misbehaviour::EdgePayload) {
            let bytes = around(&mut self.rng, ARGUMENT_BYTES_MAX) as usize;
            return if self.rng.percent(50) {
                args::padded(&text, bytes)
            } else {
                args::padded_multibyte(&text, bytes)
            };
        }
        let huge = self.swarm.rate(Misbehaviour::HugeArgs) > 0
            && self.rng.percent(3)
            && self.fire(Misbehaviour::HugeArgs);
        if huge { args::oversized(&text) } else { text }
    }
}
