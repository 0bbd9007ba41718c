//! The result envelope (SPEC §4): every call gets exactly one result, as data.
//!
//! ```json
//! {"success": true, "data": <value>, "stateChanged": true}
//! {"success": false, "error": {"code": "…", "message": "…", "retryable": true,
//!   "recommendedAction": "…"}, "stateChanged": false}
//! ```
//!
//! The runtime's own codes, with their exact messages, retry flags and recommended actions,
//! are built here and nowhere else, so the table of SPEC §4 has one home. Domain codes (the
//! chart's `UNKNOWN_PANE_ID` and friends) are built by the domain with [`ToolError::domain`].
//!
//! A failure never reports a state change: [`ToolResult::failure`] fixes `stateChanged` to
//! `false`, and the registry rolls a failed write back before building it.

use std::sync::Arc;

use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The codes of SPEC §4 that the runtime itself produces.
pub mod codes {
    /// The call id is empty or longer than 160 characters.
    pub const INVALID_CALL_ID: &str = "INVALID_CALL_ID";
    /// The id repeats an earlier id in the same message; the repeat is not run.
    pub const DUPLICATE_CALL_ID: &str = "DUPLICATE_CALL_ID";
    /// No tool of that name is registered.
    pub const TOOL_NOT_FOUND: &str = "TOOL_NOT_FOUND";
    /// A destructive tool in a read-only run, or a switched-off tool.
    pub const TOOL_NOT_ALLOWED: &str = "TOOL_NOT_ALLOWED";
    /// The argument text is over 256 KiB.
    pub const PAYLOAD_TOO_LARGE: &str = "PAYLOAD_TOO_LARGE";
    /// The arguments contain a configured secret value; the call is not run.
    pub const SECRET_IN_INPUT: &str = "SECRET_IN_INPUT";
    /// The arguments are not valid JSON or break the tool's schema (R6).
    pub const TOOL_INPUT_INVALID: &str = "TOOL_INPUT_INVALID";
    /// The call is past the batch cap (R19); it is not run.
    pub const TOO_MANY_CALLS: &str = "TOO_MANY_CALLS";
    /// The tool body failed unexpectedly (a panic is caught).
    pub const INTERNAL_ERROR: &str = "INTERNAL_ERROR";
    /// The run was cancelled, failed or timed out before this call finished.
    pub const ABORTED: &str = "ABORTED";
    /// A call with an effect outside the store was cut by a crash after its intent was
    /// committed (R32); it is not run again.
    pub const OUTCOME_UNKNOWN: &str = "OUTCOME_UNKNOWN";
}

/// The longest call id accepted, in characters (SPEC §4, `INVALID_CALL_ID`).
pub const CALL_ID_CHARS_MAX: usize = 160;

/// One field error of a `TOOL_INPUT_INVALID` result (R6): the JSON Pointer of the failing
/// value in the input (the root written `/`) and a message that states the rule without
/// quoting the value (R7).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldError {
    /// JSON Pointer into the input; `/` for the root.
    pub path: String,
    /// The rule that failed, e.g. `must be a string`.
    pub message: String,
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// The `error` object of a failed call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolError {
    /// A stable, upper-case code such as `TOOL_NOT_FOUND` or `UNKNOWN_PANE_ID`.
    pub code: String,
    /// One sentence for the model.
    pub message: String,
    /// Whether the same call may succeed if retried (possibly with corrected input).
    pub retryable: bool,
    /// What the model should do next.
    pub recommended_action: String,
    /// The field errors of a `TOOL_INPUT_INVALID` result, 1 to 5 of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fields: Option<Vec<FieldError>>,
}

impl ToolError {
    fn runtime(code: &str, message: String, retryable: bool, action: &str) -> ToolError {
        ToolError {
            code: code.to_owned(),
            message,
            retryable,
            recommended_action: action.to_owned(),
            fields: None,
        }
    }

    /// A domain error with a concrete recovery hint. Domain errors are retryable: the model
    /// can correct its input (SPEC §4).
    pub fn domain(code: &str, message: impl Into<String>, hint: impl Into<String>) -> ToolError {
        ToolError {
            code: code.to_owned(),
            message: message.into(),
            retryable: true,
            recommended_action: hint.into(),
            fields: None,
        }
    }

    /// `INVALID_CALL_ID`.
    pub fn invalid_call_id() -> ToolError {
        ToolError::runtime(
            codes::INVALID_CALL_ID,
            format!(
                "The tool call id must be non-empty and at most {CALL_ID_CHARS_MAX} characters."
            ),
            true,
            "Give every tool call a non-empty id of at most 160 characters.",
        )
    }

    /// `DUPLICATE_CALL_ID`.
    pub fn duplicate_call_id() -> ToolError {
        ToolError::runtime(
            codes::DUPLICATE_CALL_ID,
            "The tool call id repeats an earlier call in this message; the repeat was not run."
                .to_owned(),
            true,
            "Give every tool call its own id.",
        )
    }

    /// `TOOL_NOT_FOUND`, listing the tools offered in this run (never ones hidden from it).
    /// The unknown name is not quoted: it came from the model and may carry anything.
    pub fn tool_not_found<'a>(offered: impl IntoIterator<Item = &'a str>) -> ToolError {
        let names: Vec<&str> = offered.into_iter().collect();
        ToolError::runtime(
            codes::TOOL_NOT_FOUND,
            "No tool of that name is available.".to_owned(),
            true,
            &format!("Call one of the available tools: {}.", names.join(", ")),
        )
    }

    /// `TOOL_NOT_ALLOWED` for a destructive tool in a read-only run.
    pub fn not_allowed_read_only(name: &str) -> ToolError {
        ToolError::runtime(
            codes::TOOL_NOT_ALLOWED,
            format!("Tool '{name}' is not allowed in a read-only run."),
            false,
            "Use a read-only tool, or ask the user for a run that may change the chart.",
        )
    }

    /// `TOOL_NOT_ALLOWED` for a tool the user switched off.
    pub fn not_allowed_switched_off(name: &str) -> ToolError {
        ToolError::runtime(
            codes::TOOL_NOT_ALLOWED,
            format!("Tool '{name}' is switched off in the agent settings."),
            false,
            "Use another tool, or ask the user to switch it on.",
        )
    }

    /// `PAYLOAD_TOO_LARGE`.
    pub fn payload_too_large(bytes_max: usize) -> ToolError {
        ToolError::runtime(
            codes::PAYLOAD_TOO_LARGE,
            format!("The tool input is larger than {} KiB.", bytes_max / 1024),
            true,
            "Send a smaller input.",
        )
    }

    /// `SECRET_IN_INPUT`.
    pub fn secret_in_input() -> ToolError {
        ToolError::runtime(
            codes::SECRET_IN_INPUT,
            "The tool input contains a configured secret value; the call was not run.".to_owned(),
            false,
            "Never pass credentials to tools.",
        )
    }

    /// `TOOL_INPUT_INVALID` with 1 to 5 field errors (R6).
    pub fn input_invalid(fields: Vec<FieldError>) -> ToolError {
        debug_assert!(!fields.is_empty());
        let listed: Vec<String> = fields.iter().map(FieldError::to_string).collect();
        ToolError {
            fields: Some(fields),
            ..ToolError::runtime(
                codes::TOOL_INPUT_INVALID,
                format!("The tool input is invalid: {}", listed.join("; ")),
                true,
                "Correct the invalid field and retry the request.",
            )
        }
    }

    /// `TOO_MANY_CALLS` for a call past the batch cap.
    pub fn too_many_calls(calls_per_batch_max: u32) -> ToolError {
        ToolError::runtime(
            codes::TOO_MANY_CALLS,
            format!(
                "The message holds more than {calls_per_batch_max} tool calls; this call was not run."
            ),
            true,
            &format!("Send at most {calls_per_batch_max} tool calls in one message."),
        )
    }

    /// `INTERNAL_ERROR`: generic, never the panic's payload or the body's own words.
    pub fn internal() -> ToolError {
        ToolError::runtime(
            codes::INTERNAL_ERROR,
            "The tool failed unexpectedly.".to_owned(),
            false,
            "Do not retry with different input; report this tool failure.",
        )
    }

    /// `OUTCOME_UNKNOWN` (R32).
    pub fn outcome_unknown() -> ToolError {
        ToolError::runtime(
            codes::OUTCOME_UNKNOWN,
            "The tool may or may not have run before the runtime stopped.".to_owned(),
            false,
            "Check the outside world before calling the tool again.",
        )
    }

    /// `ABORTED`.
    pub fn aborted() -> ToolError {
        ToolError::runtime(
            codes::ABORTED,
            "The run ended before this tool call finished.".to_owned(),
            true,
            "Start a new run.",
        )
    }
}

/// The outcome of one call.
///
/// Data and errors are shared (`Arc`): a result is never changed once made, and it is handed
/// to the transcript, the session store and the event stream, so each gets it without a copy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The tool ran and returned data.
    Success(Arc<Value>),
    /// The call was refused or failed.
    Failure(Arc<ToolError>),
}

/// The envelope of one call (SPEC §4).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolResult {
    /// Data or error.
    pub outcome: Outcome,
    /// True exactly when the chart state differs after the call; always false on failure.
    pub state_changed: bool,
}

impl ToolResult {
    /// A success.
    pub fn success(data: Value, state_changed: bool) -> ToolResult {
        ToolResult {
            outcome: Outcome::Success(Arc::new(data)),
            state_changed,
        }
    }

    /// A failure; failures never change state.
    pub fn failure(error: ToolError) -> ToolResult {
        ToolResult {
            outcome: Outcome::Failure(Arc::new(error)),
            state_changed: false,
        }
    }

    /// The data, when the call succeeded.
    pub fn data(&self) -> Option<&Value> {
        match &self.outcome {
            Outcome::Success(data) => Some(data),
            Outcome::Failure(_) => None,
        }
    }

    /// Whether the call succeeded.
    pub fn is_success(&self) -> bool {
        matches!(self.outcome, Outcome::Success(_))
    }

    /// The error, when the call failed.
    pub fn error(&self) -> Option<&ToolError> {
        match &self.outcome {
            Outcome::Success(_) => None,
            Outcome::Failure(error) => Some(error),
        }
    }

    /// The error code, when the call failed.
    pub fn error_code(&self) -> Option<&str> {
        self.error().map(|error| error.code.as_str())
    }

    /// The envelope as a JSON value.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

impl Serialize for ToolResult {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(3))?;
        match &self.outcome {
            Outcome::Success(data) => {
                map.serialize_entry("success", &true)?;
                map.serialize_entry("data", data)?;
            }
            Outcome::Failure(error) => {
                map.serialize_entry("success", &false)?;
                map.serialize_entry("error", error)?;
            }
        }
        map.serialize_entry("stateChanged", &self.state_changed)?;
        map.end()
    }
}

impl<'de> Deserialize<'de> for ToolResult {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        struct Raw {
            success: bool,
            #[serde(default)]
            data: Option<Value>,
            #[serde(default)]
            error: Option<ToolError>,
            state_changed: bool,
        }
        let raw = Raw::deserialize(deserializer)?;
        let outcome = match (raw.success, raw.data, raw.error) {
            (true, data, None) => Outcome::Success(Arc::new(data.unwrap_or(Value::Null))),
            (false, None, Some(error)) => Outcome::Failure(Arc::new(error)),
            _ => {
                return Err(serde::de::Error::custom(
                    "an envelope holds `data` on success and `error` on failure",
                ));
            }
        };
        Ok(ToolResult {
            outcome,
            state_changed: raw.state_changed,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn success_serialises_in_the_documented_shape() {
        let result = ToolResult::success(json!({"panes": []}), true);
        assert_eq!(
            serde_json::to_string(&result).unwrap(),
            r#"{"success":true,"data":{"panes":[]},"stateChanged":true}"#
        );
    }

    #[test]
    fn failure_serialises_with_camel_case_fields_and_round_trips() {
        let result = ToolResult::failure(ToolError::input_invalid(vec![FieldError {
            path: "/symbol".into(),
            message: "must be a string".into(),
        }]));
        let text = serde_json::to_string(&result).unwrap();
        assert_eq!(
            text,
            r#"{"success":false,"error":{"code":"TOOL_INPUT_INVALID","message":"The tool input is invalid: /symbol: must be a string","retryable":true,"recommendedAction":"Correct the invalid field and retry the request.","fields":[{"path":"/symbol","message":"must be a string"}]},"stateChanged":false}"#
        );
        let back: ToolResult = serde_json::from_str(&text).unwrap();
        assert_eq!(back, result);
    }

    #[test]
    fn runtime_codes_carry_the_spec_table() {
        let table = [
            (
                ToolError::invalid_call_id(),
                true,
                "Give every tool call a non-empty id of at most 160 characters.",
            ),
            (
                ToolError::duplicate_call_id(),
                true,
                "Give every tool call its own id.",
            ),
            (
                ToolError::not_allowed_read_only("x"),
                false,
                "Use a read-only tool, or ask the user for a run that may change the chart.",
            ),
            (
                ToolError::not_allowed_switched_off("x"),
                false,
                "Use another tool, or ask the user to switch it on.",
            ),
            (
                ToolError::payload_too_large(256 * 1024),
                true,
                "Send a smaller input.",
            ),
            (
                ToolError::secret_in_input(),
                false,
                "Never pass credentials to tools.",
            ),
            (
                ToolError::too_many_calls(32),
                true,
                "Send at most 32 tool calls in one message.",
            ),
            (
                ToolError::internal(),
                false,
                "Do not retry with different input; report this tool failure.",
            ),
            (ToolError::aborted(), true, "Start a new run."),
        ];
        for (error, retryable, action) in table {
            assert_eq!(error.retryable, retryable, "{}", error.code);
            assert_eq!(error.recommended_action, action, "{}", error.code);
        }
        assert_eq!(
            ToolError::not_allowed_read_only("drawings_clear").message,
            "Tool 'drawings_clear' is not allowed in a read-only run."
        );
        assert_eq!(
            ToolError::not_allowed_switched_off("panes_list").message,
            "Tool 'panes_list' is switched off in the agent settings."
        );
        assert_eq!(
            ToolError::tool_not_found(["a", "b"]).recommended_action,
            "Call one of the available tools: a, b."
        );
    }

    #[test]
    fn an_envelope_with_both_data_and_error_is_refused() {
        let text = r#"{"success":true,"data":1,"error":{"code":"X","message":"m","retryable":true,"recommendedAction":"a"},"stateChanged":false}"#;
        assert!(serde_json::from_str::<ToolResult>(text).is_err());
    }
}
