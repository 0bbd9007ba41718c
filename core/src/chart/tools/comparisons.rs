//! Comparison tools: `comparisons_list`, `comparison_create`, `comparison_remove`,
//! `comparisons_clear`.
//!
//! A comparison overlays another catalogue instrument on the main pane, as percent change or
//! on its own price scale.

use serde::Deserialize;
use serde_json::{Value, json};

use super::{id_schema, input, listed, object, reader, symbol_schema, writer};
use crate::chart::market::{instrument_for, symbols};
use crate::chart::{COMPARISONS_MAX, Comparison, ComparisonMode};
use crate::envelope::ToolError;
use crate::registry::{RegistryBuilder, RegistryError};
use crate::tool::ToolContext;

pub(super) fn register_reads(builder: &mut RegistryBuilder) -> Result<(), RegistryError> {
    reader(
        builder,
        "comparisons_list",
        "List comparisons",
        "Lists the comparison series shown on the main pane.",
        object(json!({}), &[]),
        |context, _raw| {
            Ok(context
                .chart()
                .read(|state| json!({"comparisons": state.comparisons})))
        },
    )
}

pub(super) fn register_writes(builder: &mut RegistryBuilder) -> Result<(), RegistryError> {
    writer(
        builder,
        "comparison_create",
        "Add comparison",
        "Overlays another instrument on the main pane, as percent change (default) or price.",
        object(
            json!({"symbol": symbol_schema(), "mode": {"enum": ["percent", "price"]}}),
            &["symbol"],
        ),
        comparison_create,
    )?;
    writer(
        builder,
        "comparison_remove",
        "Remove comparison",
        "Removes one comparison series.",
        object(json!({"comparisonId": id_schema()}), &["comparisonId"]),
        comparison_remove,
    )?;
    writer(
        builder,
        "comparisons_clear",
        "Clear comparisons",
        "Removes every comparison series.",
        object(json!({}), &[]),
        |context, _raw| {
            context.chart().update(|state| {
                let removed = state.comparisons.len();
                state.comparisons.clear();
                Ok(json!({"removedComparisons": removed}))
            })
        },
    )
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ComparisonCreate {
    symbol: String,
    mode: Option<ComparisonMode>,
}

fn comparison_create(context: &ToolContext, raw: Value) -> Result<Value, ToolError> {
    let request: ComparisonCreate = input(raw)?;
    let Some(instrument) = instrument_for(&request.symbol) else {
        return Err(ToolError::domain(
            "UNKNOWN_SYMBOL",
            "No instrument has that symbol.",
            format!(
                "Use instruments_query_name to find one; known symbols: {}.",
                symbols()
            ),
        ));
    };
    context.chart().update(|state| {
        if state.symbol == instrument.symbol {
            return Err(ToolError::domain(
                "COMPARISON_IS_MAIN_SYMBOL",
                "The main series already shows that symbol.",
                "Compare against another symbol.",
            ));
        }
        if state
            .comparisons
            .iter()
            .any(|comparison| comparison.symbol == instrument.symbol)
        {
            return Err(ToolError::domain(
                "COMPARISON_EXISTS",
                "That symbol is already compared.",
                "Use comparisons_list to see the comparisons shown.",
            ));
        }
        if state.comparisons.len() >= COMPARISONS_MAX {
            return Err(ToolError::domain(
                "COMPARISON_LIMIT_REACHED",
                format!("A chart shows at most {COMPARISONS_MAX} comparisons."),
                "Remove a comparison first.",
            ));
        }
        let comparison = Comparison {
            id: state.allocate_id("comparison"),
            symbol: instrument.symbol.to_owned(),
            mode: request.mode.unwrap_or_default(),
        };
        let data = json!({"comparison": comparison});
        state.comparisons.push(comparison);
        Ok(data)
    })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ComparisonTarget {
    comparison_id: String,
}

fn comparison_remove(context: &ToolContext, raw: Value) -> Result<Value, ToolError> {
    let request: ComparisonTarget = input(raw)?;
    context.chart().update(|state| {
        let Some(index) = state
            .comparisons
            .iter()
            .position(|comparison| comparison.id == request.comparison_id)
        else {
            return Err(ToolError::domain(
                "UNKNOWN_COMPARISON_ID",
                "No comparison has that id.",
                format!(
                    "Use one of the comparison ids: {}.",
                    listed(
                        state
                            .comparisons
                            .iter()
                            .map(|comparison| comparison.id.as_str())
                    )
                ),
            ));
        };
        let removed = state.comparisons.remove(index);
        Ok(json!({"removedComparisonId": removed.id}))
    })
}
