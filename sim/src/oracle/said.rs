//! What the world itself said in a run's session, for I8: the model's replies (their text,
//! and each call's id, tool name and arguments, also as the JSON strings and keys the
//! arguments decode to), the fixed inputs of its retries, the instructions its bodies inject,
//! the user's answers, and what the bodies returned.
//!
//! I8 takes the planted parts as ground truth because only the user's prompt holds them and
//! they are high-entropy, "so ordinary text never contains them by chance" (SPEC §9). The
//! world's own words can still hold some of their characters, not by chance but because the
//! world was handed them: a planted part may share characters with a configured value
//! (`configured_touching_a_key`, `nested` in [`crate::generate::secrets`]), and a model that
//! echoes 7 characters of that value (one fewer than R22's guard replaces) next to text that
//! goes on as the planted part does says 8 characters of the planted part. No rule asks a
//! runtime to remove those: R22's guard replaces configured values wherever they come from,
//! and the pattern rules apply to the user's prompt alone. So a runtime that keeps every rule
//! hands them on, and a stretch of a planted part is the runtime's leak only where some 8 of
//! its characters (or the whole of a shorter part) stand in nothing the world said.
//!
//! The prompt is not the world's word here: it is what the runtime must redact.
//! Configured values get no such allowance: the guard must replace them wherever they come
//! from (R22).

use std::borrow::Cow;

use memchr::memmem;
use serde_json::Value;
use ward_core::envelope::ToolError;
use ward_core::tool::ToolCall;

use crate::catalogue::SECRET_RUN_CHARS_MIN;
use crate::scenario::{Effect, Scenario};
use crate::view::RunView;

/// Every text the world said in one run's session.
pub(super) struct Said<'a> {
    texts: Vec<Cow<'a, str>>,
}

impl<'a> Said<'a> {
    /// What the world said in the session of `view`: every run the scenario scripts for that
    /// session, and what the run's replies and bodies gave (a reaction's call is made while
    /// the run goes on; a body's result, from the chart, may hand on what the model wrote
    /// into it in an earlier run).
    pub(super) fn of(scenario: &'a Scenario, view: &'a RunView<'a>) -> Said<'a> {
        let mut said = Said { texts: Vec::new() };
        let runs = scenario
            .sessions
            .get(view.trace.session)
            .map_or(&[][..], |session| &session.runs[..]);
        for run in runs {
            for turn in &run.turns {
                said.texts.push(Cow::Borrowed(&turn.text));
                for call in &turn.calls {
                    said.texts.push(Cow::Borrowed(&call.id));
                    said.texts.push(Cow::Borrowed(&call.name));
                    said.arguments(&call.arguments);
                    if let Some(fix) = &call.fix {
                        said.arguments(fix);
                    }
                }
            }
            let answers = run.answers.iter().filter_map(|answer| answer.text.as_ref());
            said.texts
                .extend(answers.map(|text| Cow::Borrowed(text.as_str())));
            for behaviour in run.tools.values() {
                if let Effect::Inject { tool, arguments } = &behaviour.effect {
                    said.texts.push(Cow::Borrowed(tool));
                    said.arguments(arguments);
                }
            }
        }
        for reply in &view.replies {
            said.texts.push(Cow::Borrowed(reply.text));
            said.calls(reply.calls);
        }
        for output in view.bodies.iter().filter_map(|body| body.output) {
            match output {
                Ok(data) => said.value(data),
                Err(error) => said.error(error),
            }
        }
        said
    }

    fn calls(&mut self, calls: &'a [ToolCall]) {
        for call in calls {
            self.texts.push(Cow::Borrowed(&call.id));
            self.texts.push(Cow::Borrowed(&call.name));
            self.arguments(&call.arguments);
        }
    }

    /// Argument text as sent, and the strings and keys it decodes to (an escape in the text
    /// says a character the text does not hold as it is).
    fn arguments(&mut self, text: &'a str) {
        self.texts.push(Cow::Borrowed(text));
        if let Ok(value) = serde_json::from_str::<Value>(text) {
            self.owned_value(value);
        }
    }

    fn owned_value(&mut self, value: Value) {
        match value {
            Value::String(text) => self.texts.push(Cow::Owned(text)),
            Value::Array(items) => items.into_iter().for_each(|item| self.owned_value(item)),
            Value::Object(members) => {
                for (key, member) in members {
                    self.texts.push(Cow::Owned(key));
                    self.owned_value(member);
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    fn value(&mut self, value: &'a Value) {
        match value {
            Value::String(text) => self.texts.push(Cow::Borrowed(text)),
            Value::Array(items) => items.iter().for_each(|item| self.value(item)),
            Value::Object(members) => {
                for (key, member) in members {
                    self.texts.push(Cow::Borrowed(key));
                    self.value(member);
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    fn error(&mut self, error: &'a ToolError) {
        self.texts.push(Cow::Borrowed(&error.message));
        self.texts.push(Cow::Borrowed(&error.recommended_action));
        for field in error.fields.iter().flatten() {
            self.texts.push(Cow::Borrowed(&field.path));
            self.texts.push(Cow::Borrowed(&field.message));
        }
    }

    /// Whether the world said every 8 consecutive characters of `stretch` (all of it, when it
    /// holds fewer), each somewhere in one of its texts.
    pub(super) fn covers(&self, stretch: &[u8]) -> bool {
        // Where each character starts, and the end: a window is 8 characters, not bytes.
        let starts: Vec<usize> = (0..stretch.len())
            .filter(|&at| stretch[at] & 0xC0 != 0x80)
            .chain([stretch.len()])
            .collect();
        let width = SECRET_RUN_CHARS_MIN.min(starts.len() - 1);
        starts.windows(width + 1).all(|window| {
            let needle = &stretch[window[0]..window[width]];
            let finder = memmem::Finder::new(needle);
            self.texts
                .iter()
                .any(|text| finder.find(text.as_bytes()).is_some())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Said;
    use std::borrow::Cow;

    fn said(texts: &[&'static str]) -> Said<'static> {
        Said {
            texts: texts.iter().map(|text| Cow::Borrowed(*text)).collect(),
        }
    }

    #[test]
    fn a_stretch_is_covered_when_every_eight_characters_of_it_were_said() {
        let world = said(&["8iuA9S7call_9", "xx Q8iuA9S7 yy"]);
        assert!(world.covers(b"8iuA9S7c"));
        // Two windows, each said in another text.
        assert!(world.covers(b"Q8iuA9S7c"));
        // A window no text holds: the part reached the record some other way.
        assert!(!world.covers(b"Q8iuA9S7cr"));
        assert!(!world.covers(b"iuA9S7cr"));
        // A stretch of fewer than 8 characters counts whole.
        assert!(world.covers(b"call_9"));
        assert!(!world.covers(b"call_8"));
    }

    #[test]
    fn windows_are_counted_in_characters() {
        let world = said(&["-éééééééé-"]);
        assert!(world.covers("éééééééé".as_bytes()));
        // Nine characters: two windows, one of them never said.
        assert!(!world.covers("ééééééééx".as_bytes()));
        // Seven characters of sixteen bytes are one window, the whole stretch.
        assert!(world.covers("ééééééé".as_bytes()));
    }
}
