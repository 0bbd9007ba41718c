//! R3's refusals as a table, in the order the entry point checks them, and what R3 looks at
//! for each call of a batch.

use super::Model;
use crate::catalogue::{ARGUMENT_BYTES_MAX, CALL_ID_CHARS_MAX};
use crate::oracle::CallFacts;
use crate::view::BatchView;

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
pub(super) struct Call<'f> {
    pub(super) facts: &'f CallFacts,
    id_shape_ok: bool,
    id_repeats: bool,
    read_only_run: bool,
    switched_off: bool,
    too_large: bool,
}

/// R3: the code a call within the cap is refused with, or `None` when its body runs.
pub(super) fn refusal(call: &Call<'_>) -> Option<&'static str> {
    REFUSALS
        .iter()
        .find(|(_, applies)| applies(call))
        .map(|(code, _)| *code)
}

impl<'r, 'a> Model<'r, 'a> {
    /// What R3 looks at for each call of `batch`.
    pub(super) fn calls<'f>(&self, batch: &BatchView<'_>, facts: &'f [CallFacts]) -> Vec<Call<'f>> {
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
}
