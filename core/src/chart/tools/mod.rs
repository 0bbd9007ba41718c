//! The tools of the chart agent (SPEC §8), with the safety and mode of the SPEC table.
//!
//! | safety | mode | tools |
//! |---|---|---|
//! | read-only | parallel | `panes_list`, `indicators_query`, `instruments_query_name`, `market_bars_query`, `market_timeshare_query`, `market_timeshare_range_query`, `drawings_list`, `comparisons_list`, `settings_get`, `web_search` |
//! | read-only | sequential | `ask_user` |
//! | destructive | sequential | `pane_create`, `pane_update`, `pane_remove`, `pane_move`, `pane_replace_content`, `pane_update_content`, `panes_clear`, `drawing_create`, `drawing_update`, `drawing_delete`, `drawings_copy`, `drawings_clear`, `comparison_create`, `comparison_remove`, `comparisons_clear`, `settings_update`, `settings_reset` |
//! | destructive | sequential, opt-in | `code_interpreter` (simulated; its policy always asks for a disabled network) |
//!
//! Every schema is strict (`additionalProperties: false`) with real bounds. Bodies read
//! their input through serde after validation; domain errors carry a concrete recovery hint
//! (the valid pane ids, the exact anchor count for the kind, the loaded date range).
//!
//! Series come back as tables: a `columns` list names the fields once and every bar, minute
//! or indicator value is a row, an array in that order. The model pays for every character
//! of a result, and 798 bars as rows are about 40 % shorter than the same bars as objects
//! that repeat each field name; every observer of the result (the secret guard, the store,
//! the simulator's oracles and digest) also walks one small array per row instead of a map.

mod assistant;
mod comparisons;
mod drawings;
mod market;
mod panes;
mod settings;

use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::envelope::ToolError;
use crate::registry::{Registry, RegistryBuilder, RegistryError};
use crate::tool::{ExecutionMode, Safety, ToolContext, ToolSpec};

use super::ChartState;

/// Which optional tools to register.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CatalogueOptions {
    /// Register the opt-in `code_interpreter`.
    pub code_interpreter: bool,
}

/// Registers the whole catalogue on `builder`, in the order of the SPEC §8 table.
pub fn register_tools(
    builder: &mut RegistryBuilder,
    options: CatalogueOptions,
) -> Result<(), RegistryError> {
    panes::register_reads(builder)?;
    market::register(builder)?;
    drawings::register_reads(builder)?;
    comparisons::register_reads(builder)?;
    settings::register_reads(builder)?;
    assistant::register_reads(builder)?;
    panes::register_writes(builder)?;
    drawings::register_writes(builder)?;
    comparisons::register_writes(builder)?;
    settings::register_writes(builder)?;
    if options.code_interpreter {
        assistant::register_code_interpreter(builder)?;
    }
    Ok(())
}

/// The chart agent's registry.
///
/// ```
/// use ward_core::chart::tools::{CatalogueOptions, registry};
/// let registry = registry(CatalogueOptions::default()).unwrap();
/// assert!(registry.get("drawing_create").is_some());
/// assert!(registry.get("code_interpreter").is_none());
/// ```
pub fn registry(options: CatalogueOptions) -> Result<Registry, RegistryError> {
    let mut builder = RegistryBuilder::new();
    register_tools(&mut builder, options)?;
    Ok(builder.build())
}

/// A tool's declaration.
fn spec(
    name: &str,
    label: &str,
    safety: Safety,
    execution_mode: ExecutionMode,
    description: &str,
    parameters: Value,
) -> ToolSpec {
    ToolSpec {
        name: name.to_owned(),
        label: label.to_owned(),
        description: description.to_owned(),
        parameters,
        safety,
        execution_mode,
    }
}

/// The body of a tool that runs synchronously against the chart.
type Body = fn(&ToolContext, Value) -> Result<Value, ToolError>;

/// Registers a read-only, parallel tool.
fn reader(
    builder: &mut RegistryBuilder,
    name: &str,
    label: &str,
    description: &str,
    parameters: Value,
    body: Body,
) -> Result<(), RegistryError> {
    builder.register(
        spec(
            name,
            label,
            Safety::ReadOnly,
            ExecutionMode::Parallel,
            description,
            parameters,
        ),
        body,
    )
}

/// Registers a destructive, sequential tool.
fn writer(
    builder: &mut RegistryBuilder,
    name: &str,
    label: &str,
    description: &str,
    parameters: Value,
    body: Body,
) -> Result<(), RegistryError> {
    builder.register(
        spec(
            name,
            label,
            Safety::Destructive,
            ExecutionMode::Sequential,
            description,
            parameters,
        ),
        body,
    )
}

/// Tool data: an object of `members`, each value moved in. (`json!` would copy a value it is
/// given, through the serialiser; results of hundreds of rows would be built twice.)
fn data<const N: usize>(members: [(&str, Value); N]) -> Value {
    Value::Object(
        members
            .into_iter()
            .map(|(key, value)| (key.to_owned(), value))
            .collect(),
    )
}

/// A strict object schema.
fn object(properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// A strict object schema that needs at least `properties_min` members.
fn object_at_least(properties: Value, required: &[&str], properties_min: usize) -> Value {
    let mut schema = object(properties, required);
    schema["minProperties"] = json!(properties_min);
    schema
}

fn id_schema() -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": 64})
}

fn date_schema() -> Value {
    json!({"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"})
}

fn symbol_schema() -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": 32})
}

/// Reads a validated input into its typed form. Validation runs first, so a failure here
/// means the schema and the type disagree; it is reported, never a panic.
fn input<T: DeserializeOwned>(mut input: Value) -> Result<T, ToolError> {
    integral_numbers_as_integers(&mut input);
    serde_json::from_value(input).map_err(|_| {
        ToolError::domain(
            "INPUT_NOT_UNDERSTOOD",
            "The tool input could not be read.",
            "Send the input exactly as the tool's schema describes it.",
        )
    })
}

/// JSON Schema counts a number without a fractional part as an integer, so `5.0` satisfies
/// `"type": "integer"`; serde reads such a number only into a float. Writing every integral
/// number as an integer lets integer fields read it, and float fields read integers as well.
fn integral_numbers_as_integers(value: &mut Value) {
    match value {
        Value::Number(number) if number.is_f64() => {
            let float = number.as_f64().unwrap_or(f64::NAN);
            // Both bounds are powers of two, exact as floats; inside them the cast is exact.
            if float.fract() == 0.0 && (-9_223_372_036_854_775_808.0..0.0).contains(&float) {
                *value = Value::from(float as i64);
            } else if float.fract() == 0.0 && (0.0..18_446_744_073_709_551_616.0).contains(&float) {
                *value = Value::from(float as u64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_numbers_as_integers),
        Value::Object(members) => members.values_mut().for_each(integral_numbers_as_integers),
        _ => {}
    }
}

/// The pane ids, for hints.
fn pane_ids(state: &ChartState) -> String {
    state
        .panes
        .iter()
        .map(|pane| pane.id.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn unknown_pane(state: &ChartState) -> ToolError {
    ToolError::domain(
        "UNKNOWN_PANE_ID",
        "No pane has that id.",
        format!("Use one of the pane ids: {}.", pane_ids(state)),
    )
}

/// The index of pane `id`, or `UNKNOWN_PANE_ID` naming the valid ids.
fn pane_index(state: &ChartState, id: &str) -> Result<usize, ToolError> {
    state
        .panes
        .iter()
        .position(|pane| pane.id == id)
        .ok_or_else(|| unknown_pane(state))
}

/// Up to 20 ids, for hints.
fn listed<'a>(ids: impl Iterator<Item = &'a str>) -> String {
    let ids: Vec<&str> = ids.take(20).collect();
    if ids.is_empty() {
        "none".to_owned()
    } else {
        ids.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chart::SharedChart;
    use crate::envelope::Outcome;
    use crate::guard::SecretGuard;
    use crate::policy::RunPolicy;
    use crate::tool::ToolCall;

    fn call(registry: &Registry, chart: &SharedChart, name: &str, arguments: Value) -> Outcome {
        let call = ToolCall {
            id: "call-1".into(),
            name: name.into(),
            arguments: arguments.to_string(),
        };
        let policy = RunPolicy::normal();
        futures::executor::block_on(registry.execute_standalone(
            &policy,
            &SecretGuard::default(),
            chart,
            &call,
        ))
        .outcome
    }

    /// Found by the validation and chart state-machine property suites: `1.0` is a valid
    /// integer, and every tool reading one failed with `INPUT_NOT_UNDERSTOOD`.
    #[test]
    fn integers_written_with_a_zero_fraction_are_read() {
        let registry = registry(CatalogueOptions::default()).unwrap();
        let chart = SharedChart::new(7);
        for (name, arguments) in [
            ("pane_move", json!({"paneId": "pane-2", "position": 1.0})),
            ("pane_update", json!({"paneId": "pane-1", "height": 30.0})),
            (
                "pane_create",
                json!({"indicators": [{"name": "RSI", "period": 6.0}], "height": 15.0}),
            ),
            (
                "market_bars_query",
                json!({"symbol": "600519.SH", "period": "daily", "limit": 3.0}),
            ),
            (
                "drawing_create",
                json!({"kind": "horizontal-line", "paneId": "main", "anchors": [{"price": 12.0}], "style": {"lineWidth": 2.0}}),
            ),
        ] {
            let outcome = call(&registry, &chart, name, arguments);
            assert!(
                matches!(outcome, Outcome::Success(_)),
                "{name}: {outcome:?}"
            );
        }
        let state = chart.snapshot();
        assert_eq!(state.panes[1].id, "pane-2");
        assert_eq!(state.panes[2].height, 30);
        assert_eq!(state.drawings[0].anchors[0].price, 12.0);
        assert_eq!(state.drawings[0].style.line_width, 2);
    }

    #[test]
    fn only_integral_numbers_in_range_change_spelling() {
        let mut value = json!([1.5, -2.0, 3.0, 1e300, -0.0, 7, {"a": [4.0]}]);
        integral_numbers_as_integers(&mut value);
        assert_eq!(value, json!([1.5, -2, 3, 1e300, 0, 7, {"a": [4]}]));
        assert!(value[3].is_f64());
    }
}
