//! The `tool_args` check: raw bytes as argument text through the single entry point (R3).
//!
//! # Input
//!
//! A selector byte, a flags byte, then the argument text.
//!
//! - The tool is number `selector % (tools + 1)` of the catalogue (with `code_interpreter`),
//!   in registration order; the extra last number is a name no tool has.
//! - Flags: bit 0 makes the run read-only, bit 1 switches the tool off, bit 2 configures the
//!   secret value [`SECRET_VALUE`], bit 3 starts from a chart that already holds a pane,
//!   drawings, a comparison and changed settings (so updates and deletes can succeed),
//!   bit 4 pads the text with spaces past 256 KiB (so a short input reaches
//!   `PAYLOAD_TOO_LARGE`; the padding keeps JSON valid); other bits are ignored.
//! - The entry point takes `&str` (a model's argument text is a Unicode string), so bytes
//!   that are not UTF-8 are replaced by U+FFFD, as a provider client decoding a reply would.
//!
//! # Properties
//!
//! - Exactly one envelope of SPEC §4's shape; runtime codes carry the table's retry flag
//!   and recommended action.
//! - R3's order: `TOOL_NOT_FOUND`, then `TOOL_NOT_ALLOWED` (read-only, then switched off),
//!   `PAYLOAD_TOO_LARGE`, `SECRET_IN_INPUT`, then `TOOL_INPUT_INVALID` with exactly the
//!   parse error or the schema's field errors (checked as the `validate` check does), and
//!   only a call that passes all of them reaches the body.
//! - Never a panic: a real tool body never ends in `INTERNAL_ERROR`.
//! - A failure never changes the chart and says `stateChanged: false`; a success says
//!   `stateChanged: true` exactly when the chart's snapshot differs; a change is one undo
//!   step, and undo restores the chart before the call.
//! - After the exact-value guard, the envelope carries no configured value.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::sync::OnceLock;

use serde_json::Value;

use crate::CheckResult;
use crate::validate::{check_field_errors, subject};
use ward_core::chart::{ChartState, SharedChart};
use ward_core::envelope::{FieldError, ToolResult, codes};
use ward_core::fault::FaultSet;
use ward_core::guard::SecretGuard;
use ward_core::policy::RunPolicy;
use ward_core::registry::{CallIds, CallScope, Registry};
use ward_core::tool::{ToolCall, ToolContext};
use ward_core::validation::{ARGUMENT_BYTES_MAX, parse_arguments};

/// The configured secret value of flag bit 2.
pub const SECRET_VALUE: &str = "provider-key-0123456789";

/// The name of flag-selector's extra tool number: registered nowhere.
pub const UNKNOWN_TOOL: &str = "chart_delete_everything";

/// The seed of the chart's market.
const CHART_SEED: u64 = 42;

/// Calls that build the prepared chart of flag bit 3.
const PREPARATION: &[(&str, &str)] = &[
    (
        "pane_create",
        r#"{"indicators":[{"name":"RSI","period":14}],"height":20}"#,
    ),
    (
        "drawing_create",
        r#"{"kind":"trend-line","paneId":"main","anchors":[{"price":10},{"price":12}]}"#,
    ),
    (
        "drawing_create",
        r#"{"kind":"horizontal-line","paneId":"main","anchors":[{"price":11}]}"#,
    ),
    ("comparison_create", r#"{"symbol":"AAPL","mode":"percent"}"#),
    ("settings_update", r#"{"theme":"dark","showGrid":false}"#),
];

thread_local! {
    /// One current-thread runtime per thread: building one per input would cost more than
    /// most calls.
    static RUNTIME: RefCell<Option<tokio::runtime::Runtime>> = const { RefCell::new(None) };
}

fn block_on<F: std::future::Future>(future: F) -> Result<F::Output, String> {
    RUNTIME.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .map_err(|error| format!("cannot start a runtime: {error}"))?;
            *slot = Some(runtime);
        }
        let runtime = slot
            .as_ref()
            .ok_or_else(|| "the runtime is missing".to_owned())?;
        Ok(runtime.block_on(future))
    })
}

/// The chart state after [`PREPARATION`], built once per process.
fn prepared_state() -> Result<&'static ChartState, String> {
    static PREPARED: OnceLock<Result<ChartState, String>> = OnceLock::new();
    PREPARED
        .get_or_init(|| {
            let (registry, _) = subject("panes_list")?.ok_or("the catalogue lost panes_list")?;
            let chart = SharedChart::new(CHART_SEED);
            let policy = RunPolicy::default();
            let guard = SecretGuard::default();
            let scope = CallScope {
                policy: &policy,
                offered: &[],
                guard: &guard,
                faults: FaultSet::EMPTY,
            };
            for (index, (name, arguments)) in PREPARATION.iter().enumerate() {
                let call = ToolCall {
                    id: format!("prepare_{index}"),
                    name: (*name).to_owned(),
                    arguments: (*arguments).to_owned(),
                };
                let context = ToolContext::standalone(chart.clone(), &call);
                let result =
                    block_on(registry.execute(&scope, &mut CallIds::default(), &call, &context))?;
                if !result.is_success() {
                    return Err(format!("preparing the chart: {name} failed: {result:?}"));
                }
            }
            Ok(chart.snapshot())
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// One decoded input.
struct Case {
    tool: String,
    read_only: bool,
    switched_off: bool,
    secret: bool,
    prepared: bool,
    arguments: String,
}

/// The padded length of flag bit 4: one byte past the limit.
const PADDED_BYTES: usize = ARGUMENT_BYTES_MAX + 1;

fn decode(registry: &Registry, data: &[u8]) -> Option<Case> {
    let [selector, flags, text @ ..] = data else {
        return None;
    };
    let names: Vec<&str> = registry.tools().map(|tool| tool.name()).collect();
    let index = usize::from(*selector) % (names.len() + 1);
    let mut arguments = String::from_utf8_lossy(text).into_owned();
    if flags & 16 != 0 && arguments.len() < PADDED_BYTES {
        // One copy of a run of spaces: pushing 256 Ki characters one at a time costs more
        // than the whole call under coverage instrumentation.
        arguments.push_str(&" ".repeat(PADDED_BYTES - arguments.len()));
    }
    Some(Case {
        tool: names.get(index).copied().unwrap_or(UNKNOWN_TOOL).to_owned(),
        read_only: flags & 1 != 0,
        switched_off: flags & 2 != 0,
        secret: flags & 4 != 0,
        prepared: flags & 8 != 0,
        arguments,
    })
}

/// Runs one `tool_args` input (format in the module docs) through the entry point and
/// checks R3 and SPEC §4.
///
/// ```
/// use ward_checks::check_tool_args;
///
/// // Tool 3 is `market_bars_query`; no flag.
/// assert_eq!(check_tool_args(b"\x03\x00{\"symbol\":\"AAPL\",\"period\":\"daily\"}"), Ok(()));
/// assert_eq!(check_tool_args(b"\x03\x00{\"symbol\":1}"), Ok(()));
/// ```
pub fn check_tool_args(data: &[u8]) -> CheckResult {
    let (registry, _) = subject("panes_list")?.ok_or("the catalogue lost panes_list")?;
    let Some(case) = decode(registry, data) else {
        return Ok(());
    };
    let policy = RunPolicy {
        read_only: case.read_only,
        disabled: if case.switched_off {
            BTreeSet::from([case.tool.clone()])
        } else {
            BTreeSet::new()
        },
    };
    let secrets: Vec<&str> = if case.secret {
        vec![SECRET_VALUE]
    } else {
        Vec::new()
    };
    let guard =
        SecretGuard::new(&secrets).map_err(|error| format!("the guard refuses: {error}"))?;
    let offered: Vec<&str> = registry
        .offered(&policy)
        .iter()
        .map(|tool| tool.name())
        .collect();
    let scope = CallScope {
        policy: &policy,
        offered: &offered,
        guard: &guard,
        faults: FaultSet::EMPTY,
    };
    let call = ToolCall {
        id: "call_1".to_owned(),
        name: case.tool.clone(),
        arguments: case.arguments.clone(),
    };
    let chart = if case.prepared {
        SharedChart::with_state(CHART_SEED, prepared_state()?.clone())
    } else {
        SharedChart::new(CHART_SEED)
    };
    let before = chart.snapshot();
    let context = ToolContext::standalone(chart.clone(), &call);
    let result = block_on(registry.execute(&scope, &mut CallIds::default(), &call, &context))?;
    let after = chart.snapshot();
    check_envelope(&result)?;
    check_order(registry, &case, &result)?;
    check_state(&chart, &result, &before, &after)?;
    let guarded = guard.result(result).to_json().to_string();
    ensure!(
        !case.secret || !guarded.contains(SECRET_VALUE),
        "R22: the guarded envelope carries the configured value"
    );
    Ok(())
}

/// SPEC §4: the envelope's shape, and the table's retry flag and action for runtime codes.
fn check_envelope(result: &ToolResult) -> CheckResult {
    let json = result.to_json();
    let object = json.as_object().ok_or("the envelope is not an object")?;
    let success = object.get("success").and_then(Value::as_bool);
    let keys: Vec<&str> = object.keys().map(String::as_str).collect();
    let expected_keys: &[&str] = if success == Some(true) {
        &["data", "stateChanged", "success"]
    } else {
        &["error", "stateChanged", "success"]
    };
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    ensure!(
        sorted == expected_keys,
        "SPEC §4: the envelope has the members {keys:?}"
    );
    ensure!(
        object.get("stateChanged").is_some_and(Value::is_boolean),
        "SPEC §4: stateChanged is not a boolean"
    );
    let Some(error) = result.error() else {
        return Ok(());
    };
    ensure!(
        !result.state_changed,
        "SPEC §4: failure {} says stateChanged: true",
        error.code
    );
    ensure!(
        !error.code.is_empty()
            && error
                .code
                .bytes()
                .all(|byte| byte.is_ascii_uppercase() || byte == b'_'),
        "SPEC §4: the code {:?} is not an upper-case code",
        error.code
    );
    ensure!(
        !error.message.trim().is_empty() && !error.recommended_action.trim().is_empty(),
        "SPEC §4: {} has an empty message or recommended action",
        error.code
    );
    if let Some((retryable, action)) = runtime_row(&error.code) {
        ensure!(
            error.retryable == retryable,
            "SPEC §4: {} says retryable: {}",
            error.code,
            error.retryable
        );
        ensure!(
            action.is_none_or(|action| error.recommended_action == action),
            "SPEC §4: {} recommends {:?}",
            error.code,
            error.recommended_action
        );
    }
    ensure!(
        error.fields.is_some() == (error.code == codes::TOOL_INPUT_INVALID),
        "SPEC §4: {} has fields {}",
        error.code,
        error.fields.is_some()
    );
    Ok(())
}

/// The retry flag and (when fixed) the recommended action of a runtime code.
fn runtime_row(code: &str) -> Option<(bool, Option<&'static str>)> {
    Some(match code {
        codes::INVALID_CALL_ID => (
            true,
            Some("Give every tool call a non-empty id of at most 160 characters."),
        ),
        codes::DUPLICATE_CALL_ID => (true, Some("Give every tool call its own id.")),
        codes::TOOL_NOT_FOUND => (true, None),
        codes::TOOL_NOT_ALLOWED => (false, None),
        codes::PAYLOAD_TOO_LARGE => (true, Some("Send a smaller input.")),
        codes::SECRET_IN_INPUT => (false, Some("Never pass credentials to tools.")),
        codes::TOOL_INPUT_INVALID => (
            true,
            Some("Correct the invalid field and retry the request."),
        ),
        codes::TOO_MANY_CALLS => (true, None),
        codes::INTERNAL_ERROR => (
            false,
            Some("Do not retry with different input; report this tool failure."),
        ),
        codes::ABORTED => (true, Some("Start a new run.")),
        _ => return None,
    })
}

/// R3: the refusal the order of checks calls for, or the body.
fn check_order(registry: &Registry, case: &Case, result: &ToolResult) -> CheckResult {
    let code = result.error_code();
    let expect = |expected: &str| -> CheckResult {
        ensure!(
            code == Some(expected),
            "R3: {} got {} where {expected} comes first",
            case.tool,
            code.unwrap_or("success")
        );
        Ok(())
    };
    let Some(tool) = registry.get(&case.tool) else {
        return expect(codes::TOOL_NOT_FOUND);
    };
    if case.read_only && !tool.meta().is_read_only() {
        return expect(codes::TOOL_NOT_ALLOWED);
    }
    if case.switched_off {
        return expect(codes::TOOL_NOT_ALLOWED);
    }
    if case.arguments.len() > ARGUMENT_BYTES_MAX {
        return expect(codes::PAYLOAD_TOO_LARGE);
    }
    let carries = |text: &str| case.secret && strip_invisible(text).contains(SECRET_VALUE);
    if carries(&case.arguments) {
        return expect(codes::SECRET_IN_INPUT);
    }
    let input = match parse_arguments(&case.arguments) {
        Ok(input) => input,
        Err(error) => {
            expect(codes::TOOL_INPUT_INVALID)?;
            let fields = result.error().and_then(|error| error.fields.as_deref());
            ensure!(
                fields == Some(std::slice::from_ref(&error)),
                "R6: {}: unparsable text got {fields:?}, not the parse error {error:?}",
                case.tool
            );
            return Ok(());
        }
    };
    if any_text(&input, &carries) {
        return expect(codes::SECRET_IN_INPUT);
    }
    if let Err(errors) = tool.schema().validate(&input) {
        expect(codes::TOOL_INPUT_INVALID)?;
        return check_invalid(case, result, &input, &errors);
    }
    // The call reached the body: a domain outcome, never a runtime refusal or a panic.
    if let Some(error) = result.error() {
        ensure!(
            error.code != codes::INTERNAL_ERROR,
            "the body of {} panicked on valid input {:?}",
            case.tool,
            case.arguments
        );
        ensure!(
            runtime_row(&error.code).is_none(),
            "R3: {} passed every check but got the runtime code {}",
            case.tool,
            error.code
        );
    }
    Ok(())
}

/// R6 for input the schema refuses: the envelope lists exactly the schema's errors, in its
/// fields and after the message's prefix, and each error is as R6 and R7 write it.
fn check_invalid(
    case: &Case,
    result: &ToolResult,
    input: &Value,
    errors: &[FieldError],
) -> CheckResult {
    let error = result
        .error()
        .ok_or("TOOL_INPUT_INVALID without an error")?;
    let schema_text = subject(&case.tool)?
        .map(|(_, subject)| subject.schema_text().to_owned())
        .unwrap_or_default();
    check_field_errors(&case.tool, &schema_text, input, errors)?;
    ensure!(
        error.fields.as_deref() == Some(errors),
        "R6: {}: the envelope's fields {:?} are not the schema's errors {errors:?}",
        case.tool,
        error.fields
    );
    let listed: Vec<String> = errors.iter().map(ToString::to_string).collect();
    let message = format!("The tool input is invalid: {}", listed.join("; "));
    ensure!(
        error.message == message,
        "R6: {}: the message {:?} is not {message:?}",
        case.tool,
        error.message
    );
    Ok(())
}

/// SPEC §4: failures leave the chart as it was; `stateChanged` tells the truth; a change
/// is one undo step.
fn check_state(
    chart: &SharedChart,
    result: &ToolResult,
    before: &ChartState,
    after: &ChartState,
) -> CheckResult {
    let changed = before != after;
    if !result.is_success() {
        ensure!(
            !changed,
            "SPEC §4: failed call {:?} changed the chart",
            result.error_code()
        );
        return Ok(());
    }
    ensure!(
        result.state_changed == changed,
        "SPEC §4: stateChanged is {} but the chart {}",
        result.state_changed,
        if changed { "changed" } else { "did not change" }
    );
    ensure!(
        chart.undo_depth() == usize::from(changed),
        "a call left {} undo steps (changed: {changed})",
        chart.undo_depth()
    );
    if changed {
        ensure!(chart.undo(), "undo refused after a change");
        ensure!(
            chart.snapshot() == *before,
            "undo did not restore the chart before the call"
        );
    }
    Ok(())
}

/// Whether any string or object key of `value` satisfies `test`.
fn any_text(value: &Value, test: &dyn Fn(&str) -> bool) -> bool {
    match value {
        Value::String(text) => test(text),
        Value::Array(items) => items.iter().any(|item| any_text(item, test)),
        Value::Object(members) => members
            .iter()
            .any(|(key, member)| test(key) || any_text(member, test)),
        _ => false,
    }
}

/// `text` without the invisible format characters of R28 (which the guard reads through).
fn strip_invisible(text: &str) -> String {
    text.chars()
        .filter(|&character| !super::is_invisible(character))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ward_core::envelope::ToolError;

    #[test]
    fn the_prepared_chart_is_built() {
        let state = prepared_state().unwrap();
        assert_eq!(state.drawings.len(), 2);
        assert_eq!(state.comparisons.len(), 1);
    }

    #[test]
    fn a_wrong_refusal_is_reported() {
        let (registry, _) = subject("panes_list").unwrap().unwrap();
        let case = decode(registry, b"\x0b\x01{}").unwrap();
        assert_eq!(case.tool, "pane_create");
        let allowed = ToolResult::success(Value::Null, false);
        assert!(check_order(registry, &case, &allowed).is_err());
        let refused = ToolResult::failure(ToolError::not_allowed_read_only("pane_create"));
        assert!(check_order(registry, &case, &refused).is_ok());
    }

    #[test]
    fn a_lying_state_flag_is_reported() {
        let chart = SharedChart::new(CHART_SEED);
        let state = chart.snapshot();
        let changed = ToolResult::success(Value::Null, true);
        assert!(check_state(&chart, &changed, &state, &state).is_err());
    }
}
