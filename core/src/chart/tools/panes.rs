//! Pane tools: `panes_list`, `indicators_query`, `pane_create`, `pane_update`, `pane_remove`,
//! `pane_move`, `pane_replace_content`, `pane_update_content`, `panes_clear`.
//!
//! The main pane holds the price series and the overlay indicators; sub-panes hold
//! oscillators. The main pane cannot be removed, moved or resized.

use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    data, id_schema, input, object, object_at_least, pane_ids, pane_index, reader, writer,
};
use crate::chart::indicators::{INDICATOR_NAMES, INDICATOR_PERIOD_MAX, Indicator, IndicatorName};
use crate::chart::market::{Adjustment, BARS_MAX, instrument_for};
use crate::chart::{ChartState, INDICATORS_PER_PANE_MAX, MAIN_PANE_ID, PANES_MAX, Pane};
use crate::envelope::ToolError;
use crate::registry::{RegistryBuilder, RegistryError};
use crate::tool::ToolContext;

/// The most values per indicator one query returns.
const INDICATOR_VALUES_MAX: usize = 100;
/// The bars indicators are computed on: the last 350 of the chart's series, as a chart
/// computes its indicators on the bars it has loaded. With them every value a query can
/// return (the last 100) of every windowed indicator (a window of at most
/// [`INDICATOR_PERIOD_MAX`] = 250 bars) sees its whole window; recursive ones (EMA, MACD,
/// RSI) start from the first of them. Fewer bars than [`BARS_MAX`] also keeps the query
/// cheap: the series is generated for every query.
const INDICATOR_BARS: usize = INDICATOR_VALUES_MAX + INDICATOR_PERIOD_MAX as usize;
const _: () = assert!(INDICATOR_BARS <= BARS_MAX);
const HEIGHT_MIN: u32 = 10;
const HEIGHT_MAX: u32 = 60;

fn indicator_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"enum": INDICATOR_NAMES},
            "period": {"type": "integer", "minimum": 1, "maximum": INDICATOR_PERIOD_MAX}
        },
        "required": ["name"],
        "additionalProperties": false
    })
}

fn indicators_schema(items_min: usize) -> Value {
    json!({"type": "array", "minItems": items_min, "maxItems": INDICATORS_PER_PANE_MAX, "items": indicator_schema()})
}

fn height_schema() -> Value {
    json!({"type": "integer", "minimum": HEIGHT_MIN, "maximum": HEIGHT_MAX})
}

pub(super) fn register_reads(builder: &mut RegistryBuilder) -> Result<(), RegistryError> {
    reader(
        builder,
        "panes_list",
        "List panes",
        "Lists the chart's panes in display order: the main price pane first, then the indicator sub-panes, each with its indicators, height and collapsed state.",
        object(json!({}), &[]),
        panes_list,
    )?;
    reader(
        builder,
        "indicators_query",
        "Query indicator values",
        "Returns the latest values of every indicator on a pane, computed on the last 350 bars of the main series; each indicator's values are a table with its fields named once in `columns` and one row per bar (`null` while warming up).",
        object(
            json!({"paneId": id_schema(), "limit": {"type": "integer", "minimum": 1, "maximum": INDICATOR_VALUES_MAX}}),
            &["paneId"],
        ),
        indicators_query,
    )
}

fn panes_list(context: &ToolContext, _raw: Value) -> Result<Value, ToolError> {
    Ok(context.chart().read(
        |state| json!({"symbol": state.symbol, "period": state.period, "panes": state.panes}),
    ))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct IndicatorsQuery {
    pane_id: String,
    limit: Option<usize>,
}

fn indicators_query(context: &ToolContext, raw: Value) -> Result<Value, ToolError> {
    let query: IndicatorsQuery = input(raw)?;
    let (pane, symbol, period) = context.chart().read(|state| {
        let index = pane_index(state, &query.pane_id)?;
        Ok::<_, ToolError>((
            state.panes[index].clone(),
            state.symbol.clone(),
            state.period,
        ))
    })?;
    let Some(instrument) = instrument_for(&symbol) else {
        return Err(ToolError::domain(
            "UNKNOWN_SYMBOL",
            "The chart's symbol is not in the catalogue.",
            "Query a pane of a chart showing a catalogue symbol.",
        ));
    };
    let bars = context
        .chart()
        .market()
        .bars(instrument, period, Adjustment::None, INDICATOR_BARS);
    let limit = query.limit.unwrap_or(10).min(INDICATOR_VALUES_MAX);
    let indicators: Vec<Value> = pane
        .indicators
        .iter()
        .map(|indicator| {
            let indicator = indicator.normalised();
            let (columns, rows) = indicator.values(&bars, limit);
            data([
                ("name", json!(indicator.name)),
                ("period", json!(indicator.period)),
                ("columns", json!(columns)),
                ("values", Value::Array(rows)),
            ])
        })
        .collect();
    Ok(data([
        ("paneId", Value::String(pane.id)),
        ("symbol", Value::String(symbol)),
        ("indicators", Value::Array(indicators)),
    ]))
}

/// The writes of panes themselves: create, update, remove, move (R1, R2: each destructive and
/// sequential), then those of their content.
pub(super) fn register_writes(builder: &mut RegistryBuilder) -> Result<(), RegistryError> {
    writer(
        builder,
        "pane_create",
        "Create pane",
        "Adds an indicator sub-pane below the existing ones, holding 1 to 4 oscillators (VOL, MACD, RSI, KDJ, ATR, OBV, CCI).",
        object(
            json!({"indicators": indicators_schema(1), "height": height_schema()}),
            &["indicators"],
        ),
        pane_create,
    )?;
    writer(
        builder,
        "pane_update",
        "Update pane",
        "Changes an indicator sub-pane's height (percent of the chart) or collapsed state.",
        object_at_least(
            json!({"paneId": id_schema(), "height": height_schema(), "collapsed": {"type": "boolean"}}),
            &["paneId"],
            2,
        ),
        pane_update,
    )?;
    writer(
        builder,
        "pane_remove",
        "Remove pane",
        "Removes an indicator sub-pane and the drawings on it.",
        object(json!({"paneId": id_schema()}), &["paneId"]),
        pane_remove,
    )?;
    writer(
        builder,
        "pane_move",
        "Move pane",
        "Moves an indicator sub-pane to another position below the main pane (1 is directly below it).",
        object(
            json!({"paneId": id_schema(), "position": {"type": "integer", "minimum": 1, "maximum": PANES_MAX - 1}}),
            &["paneId", "position"],
        ),
        pane_move,
    )?;
    register_content_writes(builder)
}

/// The writes of a pane's content, and the one that clears every sub-pane.
fn register_content_writes(builder: &mut RegistryBuilder) -> Result<(), RegistryError> {
    writer(
        builder,
        "pane_replace_content",
        "Replace pane content",
        "Replaces every indicator on a pane: overlays (MA, EMA, BOLL) on the main pane, oscillators on sub-panes.",
        object(
            json!({"paneId": id_schema(), "indicators": indicators_schema(0)}),
            &["paneId", "indicators"],
        ),
        pane_replace_content,
    )?;
    writer(
        builder,
        "pane_update_content",
        "Update pane content",
        "Removes indicators from a pane by name, then adds indicators to it.",
        object_at_least(
            json!({
                "paneId": id_schema(),
                "add": indicators_schema(1),
                "remove": {"type": "array", "minItems": 1, "maxItems": INDICATORS_PER_PANE_MAX, "items": {"enum": INDICATOR_NAMES}}
            }),
            &["paneId"],
            2,
        ),
        pane_update_content,
    )?;
    writer(
        builder,
        "panes_clear",
        "Clear panes",
        "Removes every indicator sub-pane and the drawings on them; the main pane stays.",
        object(json!({}), &[]),
        panes_clear,
    )
}

fn main_pane_fixed(state: &ChartState) -> ToolError {
    let sub_panes: Vec<&str> = state
        .panes
        .iter()
        .filter(|pane| !pane.is_main())
        .map(|pane| pane.id.as_str())
        .collect();
    let hint = if sub_panes.is_empty() {
        "Create an indicator pane with pane_create first.".to_owned()
    } else {
        format!("Use an indicator pane: {}.", sub_panes.join(", "))
    };
    ToolError::domain(
        "MAIN_PANE_FIXED",
        "The main pane cannot be removed, moved or resized.",
        hint,
    )
}

/// Adds `indicator` to the pane at `index`, checking placement, duplicates and the limit.
fn place(state: &mut ChartState, index: usize, indicator: &Indicator) -> Result<(), ToolError> {
    let pane = &state.panes[index];
    if indicator.name.is_overlay() != pane.is_main() {
        let (where_, allowed) = if pane.is_main() {
            ("the main pane", IndicatorName::names_for(true))
        } else {
            ("an indicator pane", IndicatorName::names_for(false))
        };
        return Err(ToolError::domain(
            "INDICATOR_NOT_ALLOWED_ON_PANE",
            format!("{} cannot be placed on {where_}.", indicator.name.as_str()),
            format!("On {where_} use one of: {allowed}."),
        ));
    }
    if indicator.name.default_period().is_none() && indicator.period.is_some() {
        return Err(ToolError::domain(
            "INDICATOR_TAKES_NO_PERIOD",
            format!("{} has no period.", indicator.name.as_str()),
            "Leave out `period` for VOL, MACD and OBV.",
        ));
    }
    let normalised = indicator.normalised();
    if pane
        .indicators
        .iter()
        .any(|existing| existing.normalised() == normalised)
    {
        return Err(ToolError::domain(
            "INDICATOR_ALREADY_ON_PANE",
            format!(
                "The pane already shows {} with that period.",
                indicator.name.as_str()
            ),
            "Choose another period or indicator.",
        ));
    }
    if pane.indicators.len() >= INDICATORS_PER_PANE_MAX {
        return Err(ToolError::domain(
            "INDICATOR_LIMIT_REACHED",
            format!("A pane holds at most {INDICATORS_PER_PANE_MAX} indicators."),
            "Remove an indicator first, or create another pane.",
        ));
    }
    state.panes[index].indicators.push(indicator.clone());
    Ok(())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PaneCreate {
    indicators: Vec<Indicator>,
    height: Option<u32>,
}

fn pane_create(context: &ToolContext, raw: Value) -> Result<Value, ToolError> {
    let request: PaneCreate = input(raw)?;
    context.chart().update(|state| {
        if state.panes.len() >= PANES_MAX {
            return Err(ToolError::domain(
                "PANE_LIMIT_REACHED",
                format!("A chart holds at most {PANES_MAX} panes."),
                format!("Remove a pane first; the panes are {}.", pane_ids(state)),
            ));
        }
        let id = state.allocate_id("pane");
        state.panes.push(Pane {
            id: id.clone(),
            indicators: Vec::new(),
            height: request.height.unwrap_or(20),
            collapsed: false,
        });
        let index = state.panes.len() - 1;
        for indicator in &request.indicators {
            place(state, index, indicator)?;
        }
        Ok(json!({"pane": state.panes[index]}))
    })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PaneUpdate {
    pane_id: String,
    height: Option<u32>,
    collapsed: Option<bool>,
}

fn pane_update(context: &ToolContext, raw: Value) -> Result<Value, ToolError> {
    let request: PaneUpdate = input(raw)?;
    context.chart().update(|state| {
        let index = pane_index(state, &request.pane_id)?;
        if state.panes[index].is_main() {
            return Err(main_pane_fixed(state));
        }
        let pane = &mut state.panes[index];
        if let Some(height) = request.height {
            pane.height = height;
        }
        if let Some(collapsed) = request.collapsed {
            pane.collapsed = collapsed;
        }
        Ok(json!({"pane": pane}))
    })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PaneTarget {
    pane_id: String,
}

fn pane_remove(context: &ToolContext, raw: Value) -> Result<Value, ToolError> {
    let request: PaneTarget = input(raw)?;
    context.chart().update(|state| {
        let index = pane_index(state, &request.pane_id)?;
        if state.panes[index].is_main() {
            return Err(main_pane_fixed(state));
        }
        let pane = state.panes.remove(index);
        let before = state.drawings.len();
        state.drawings.retain(|drawing| drawing.pane_id != pane.id);
        Ok(json!({"removedPaneId": pane.id, "removedDrawings": before - state.drawings.len()}))
    })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PaneMove {
    pane_id: String,
    position: usize,
}

fn pane_move(context: &ToolContext, raw: Value) -> Result<Value, ToolError> {
    let request: PaneMove = input(raw)?;
    context.chart().update(|state| {
        let index = pane_index(state, &request.pane_id)?;
        if state.panes[index].is_main() {
            return Err(main_pane_fixed(state));
        }
        let sub_panes = state.panes.len() - 1;
        if request.position > sub_panes {
            return Err(ToolError::domain(
                "INVALID_PANE_POSITION",
                "There is no such position below the main pane.",
                format!("Use a position from 1 to {sub_panes}."),
            ));
        }
        let pane = state.panes.remove(index);
        state.panes.insert(request.position, pane);
        Ok(json!({"panes": pane_ids(state)}))
    })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PaneReplaceContent {
    pane_id: String,
    indicators: Vec<Indicator>,
}

fn pane_replace_content(context: &ToolContext, raw: Value) -> Result<Value, ToolError> {
    let request: PaneReplaceContent = input(raw)?;
    context.chart().update(|state| {
        let index = pane_index(state, &request.pane_id)?;
        // One indicator at a time, as the UI does; a refusal half-way is rolled back by the
        // registry's transaction.
        state.panes[index].indicators.clear();
        for indicator in &request.indicators {
            place(state, index, indicator)?;
        }
        Ok(json!({"pane": state.panes[index]}))
    })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PaneUpdateContent {
    pane_id: String,
    #[serde(default)]
    add: Vec<Indicator>,
    #[serde(default)]
    remove: Vec<IndicatorName>,
}

fn pane_update_content(context: &ToolContext, raw: Value) -> Result<Value, ToolError> {
    let request: PaneUpdateContent = input(raw)?;
    context.chart().update(|state| {
        let index = pane_index(state, &request.pane_id)?;
        for name in &request.remove {
            let indicators = &mut state.panes[index].indicators;
            let before = indicators.len();
            indicators.retain(|indicator| indicator.name != *name);
            if indicators.len() == before {
                let present: Vec<&str> = indicators
                    .iter()
                    .map(|indicator| indicator.name.as_str())
                    .collect();
                return Err(ToolError::domain(
                    "INDICATOR_NOT_ON_PANE",
                    format!("The pane does not show {}.", name.as_str()),
                    format!(
                        "Remove one of the pane's indicators: {}.",
                        super::listed(present.into_iter())
                    ),
                ));
            }
        }
        for indicator in &request.add {
            place(state, index, indicator)?;
        }
        Ok(json!({"pane": state.panes[index]}))
    })
}

fn panes_clear(context: &ToolContext, _raw: Value) -> Result<Value, ToolError> {
    context.chart().update(|state| {
        let before = (state.panes.len(), state.drawings.len());
        state.panes.retain(|pane| pane.id == MAIN_PANE_ID);
        state
            .drawings
            .retain(|drawing| drawing.pane_id == MAIN_PANE_ID);
        Ok(json!({
            "removedPanes": before.0 - state.panes.len(),
            "removedDrawings": before.1 - state.drawings.len()
        }))
    })
}
