//! Property suite: a state machine of the chart (SPEC §8, R3, SPEC §4's `stateChanged`, I9).
//!
//! The reference is a model written from the specification: the chart's panes, drawings,
//! comparisons and settings, the undo stack, and what each tool does to them, with the
//! domain errors of each tool in the order its checks run. Transitions are calls of the
//! catalogue's tools through the real core's single entry point (`Registry::execute`) and
//! the UI's undo:
//!
//! - calls aimed at the chart: valid inputs drawn from each tool's schema, then aimed at the
//!   ids the model holds (panes, drawings, comparisons), at the anchor count of the kind, at
//!   indicators allowed on the pane, at dates inside and just outside the loaded range;
//! - near-valid inputs from the schema (see `strategies`), broken and blank argument texts;
//! - the same calls in a read-only run and with the tool switched off;
//! - bursts of changes that fill the undo stack past its bound, and undo, once or many
//!   times in a row.
//!
//! The model decides validity with its own `jsonschema` validators of the published
//! schemas (never ward's validator). After every transition, `check_invariants` compares
//! the observable state: the snapshot, the undo depth, and what `panes_list`,
//! `drawings_list` (whole and per pane), `comparisons_list` and `settings_get` return.
//! Each call's code, `stateChanged` and data must be what the model predicts; undo must
//! report whether there was anything to undo and restore the state before the change
//! exactly.

mod strategies;

use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::LazyLock;

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::strategy::Union;
use proptest_state_machine::{ReferenceStateMachine, StateMachineTest, prop_state_machine};
use serde_json::{Map, Value, json};
use strategies::{config, near_valid, regressions, valid};
use ward_core::chart::indicators::Indicator;
use ward_core::chart::market::CATALOGUE as INSTRUMENTS;
use ward_core::chart::tools::{CatalogueOptions, registry};
use ward_core::chart::{
    Anchor, ChartState, Comparison, Drawing, DrawingKind, Pane, SharedChart, Style, UNDO_DEPTH_MAX,
};
use ward_core::envelope::{Outcome, ToolResult, codes};
use ward_core::fault::FaultSet;
use ward_core::guard::SecretGuard;
use ward_core::policy::RunPolicy;
use ward_core::registry::{CallIds, CallScope, Registry};
use ward_core::tool::{ToolCall, ToolContext};

// ---------------------------------------------------------------------------------------------
// The model's own knowledge of the catalogue (SPEC §8).

/// The tools that change the chart (or the world): destructive, refused in read-only runs.
const WRITES: &[&str] = &[
    "pane_create",
    "pane_update",
    "pane_remove",
    "pane_move",
    "pane_replace_content",
    "pane_update_content",
    "panes_clear",
    "drawing_create",
    "drawing_update",
    "drawing_delete",
    "drawings_copy",
    "drawings_clear",
    "comparison_create",
    "comparison_remove",
    "comparisons_clear",
    "settings_update",
    "settings_reset",
    "code_interpreter",
];

/// The tools the machine calls, with how often an aimed call picks each.
const CALLED: &[(&str, u32)] = &[
    ("pane_create", 3),
    ("pane_update", 2),
    ("pane_remove", 2),
    ("pane_move", 2),
    ("pane_replace_content", 2),
    ("pane_update_content", 2),
    ("panes_clear", 1),
    ("drawing_create", 8),
    ("drawing_update", 3),
    ("drawing_delete", 2),
    ("drawings_copy", 2),
    ("drawings_clear", 1),
    ("comparison_create", 3),
    ("comparison_remove", 2),
    ("comparisons_clear", 1),
    ("settings_update", 2),
    ("settings_reset", 1),
    ("code_interpreter", 1),
    ("panes_list", 1),
    ("indicators_query", 1),
    ("drawings_list", 1),
    ("comparisons_list", 1),
    ("settings_get", 1),
    ("market_bars_query", 1),
    ("web_search", 1),
    ("ask_user", 1),
];

const OVERLAYS: &[&str] = &["MA", "EMA", "BOLL"];
const OSCILLATORS: &[&str] = &["VOL", "MACD", "RSI", "KDJ", "ATR", "OBV", "CCI"];

/// An indicator's default period; `None` for the ones that take no period.
fn default_period(name: &str) -> Option<u32> {
    match name {
        "MA" | "EMA" | "BOLL" => Some(20),
        "RSI" | "ATR" | "CCI" => Some(14),
        "KDJ" => Some(9),
        _ => None,
    }
}

fn anchor_count(kind: &str) -> usize {
    match kind {
        "horizontal-line" | "horizontal-ray" | "vertical-line" | "text" => 1,
        "triangle" | "parallel-channel" | "fib-extension" => 3,
        _ => 2,
    }
}

const DRAWINGS_PER_PANE_MAX: usize = 50;
const PANES_MAX: usize = 8;
const INDICATORS_PER_PANE_MAX: usize = 4;
const COMPARISONS_MAX: usize = 5;
const ARGUMENT_BYTES_MAX: usize = 256 * 1024;
/// The loaded range, as (year, month, day).
const FIRST_DAY: (i64, u32, u32) = (2024, 1, 2);
const LAST_DAY: (i64, u32, u32) = (2025, 12, 31);

/// Dates inside the loaded range an anchor is aimed at: its ends, a weekend, a leap day.
const DATES_IN_RANGE: &[&str] = &[
    "2024-01-02",
    "2025-12-31",
    "2024-06-14",
    "2024-06-15",
    "2025-03-03",
    "2024-02-29",
];

/// Dates just outside the loaded range, and days no calendar has.
const DATES_REFUSED: &[&str] = &[
    "2024-01-01",
    "2026-01-01",
    "2025-02-29",
    "2024-04-31",
    "2024-13-01",
    "0000-00-00",
];

/// Argument texts that are not JSON or repeat a key.
const BROKEN: &[&str] = &[
    "{",
    "{\"paneId\": }",
    "[1,]",
    "nul",
    "\"unterminated",
    "{} {}",
    "{'paneId': 'main'}",
    "{\"paneId\":\"main\",\"paneId\":\"pane-1\"}",
    "{\"style\":{\"color\":\"red\",\"color\":\"red\"}}",
];

/// Argument texts that mean `{}`.
const BLANK: &[&str] = &["", "   ", "\n\t "];

/// Validators of the published schemas, compiled by the model itself.
static ORACLES: LazyLock<BTreeMap<String, jsonschema::Validator>> = LazyLock::new(|| {
    REGISTRY
        .tools()
        .map(|tool| {
            let oracle = jsonschema::validator_for(tool.meta().parameters()).expect("compiles");
            (tool.name().to_owned(), oracle)
        })
        .collect()
});

static REGISTRY: LazyLock<Registry> = LazyLock::new(|| {
    registry(CatalogueOptions {
        code_interpreter: true,
    })
    .expect("the catalogue registers")
});

fn parameters(tool: &str) -> Value {
    REGISTRY
        .get(tool)
        .expect("a catalogue tool")
        .meta()
        .parameters()
        .clone()
}

// ---------------------------------------------------------------------------------------------
// The model.

/// How the run a call belongs to is configured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Run {
    Normal,
    ReadOnly,
    /// The called tool is switched off.
    SwitchedOff,
}

/// Whether the argument text is JSON without repeated keys (or blank).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Text {
    Json,
    Broken,
}

#[derive(Clone, Debug)]
enum Transition {
    Call {
        tool: &'static str,
        arguments: String,
        text: Text,
        run: Run,
    },
    /// `settings_update` calls that flip the theme, each a change: enough of them fill the
    /// undo stack past its bound.
    Changes { times: usize },
    /// Undo, `times` times in a row.
    Undo { times: usize },
}

/// What the last transition must have produced.
#[derive(Clone, Debug, PartialEq)]
enum Expected {
    Nothing,
    Call {
        /// `OK`, an error code, or `None` when any outcome is right (market reads).
        code: Option<String>,
        state_changed: bool,
        /// The data a success returns, when the model knows it.
        data: Option<Value>,
    },
    /// Each call of a [`Transition::Changes`] succeeds and changes the chart.
    Changes,
    /// What each undo returns.
    Undo {
        undone: Vec<bool>,
    },
}

#[derive(Clone, Debug)]
struct Model {
    chart: ChartState,
    /// The states before each change, the most recent last.
    undo: Vec<ChartState>,
    expected: Expected,
}

/// A tool's reply as the model predicts it.
enum Reply {
    /// Success with this data.
    Data(Value),
    /// Success whose data the model does not compute.
    Unchecked,
    /// Failure with this code.
    Error(&'static str),
    /// Any outcome, as long as nothing changes.
    Any,
}

fn integer(value: &Value) -> Option<i64> {
    value.as_i64().or_else(|| {
        value
            .as_f64()
            .filter(|f| f.fract() == 0.0)
            .map(|f| f as i64)
    })
}

fn text<'v>(input: &'v Value, key: &str) -> Option<&'v str> {
    input.get(key).and_then(Value::as_str)
}

fn pane_at(chart: &ChartState, id: &str) -> Option<usize> {
    chart.panes.iter().position(|pane| pane.id == id)
}

fn allocate(chart: &mut ChartState, prefix: &str) -> String {
    let id = format!("{prefix}-{}", chart.next_id);
    chart.next_id += 1;
    id
}

fn indicator_of(value: &Value) -> (String, Option<u32>) {
    let name = text(value, "name").unwrap_or_default().to_owned();
    let period = value.get("period").and_then(integer).map(|p| p as u32);
    (name, period)
}

fn to_indicator(name: &str, period: Option<u32>) -> Indicator {
    serde_json::from_value(json!({"name": name, "period": period})).expect("a known indicator")
}

/// Places one indicator on the pane at `index`, with the domain's checks in order.
fn place(chart: &mut ChartState, index: usize, value: &Value) -> Result<(), &'static str> {
    let (name, period) = indicator_of(value);
    let pane = &chart.panes[index];
    if OVERLAYS.contains(&name.as_str()) != (pane.id == "main") {
        return Err("INDICATOR_NOT_ALLOWED_ON_PANE");
    }
    if default_period(&name).is_none() && period.is_some() {
        return Err("INDICATOR_TAKES_NO_PERIOD");
    }
    let effective = period.or(default_period(&name));
    let duplicate = pane.indicators.iter().any(|existing| {
        let existing = serde_json::to_value(existing).expect("serialises");
        let (existing_name, existing_period) = indicator_of(&existing);
        existing_name == name && existing_period.or(default_period(&existing_name)) == effective
    });
    if duplicate {
        return Err("INDICATOR_ALREADY_ON_PANE");
    }
    if pane.indicators.len() >= INDICATORS_PER_PANE_MAX {
        return Err("INDICATOR_LIMIT_REACHED");
    }
    chart.panes[index]
        .indicators
        .push(to_indicator(&name, period));
    Ok(())
}

fn place_all(
    chart: &mut ChartState,
    index: usize,
    list: Option<&Value>,
) -> Result<(), &'static str> {
    for value in list.and_then(Value::as_array).into_iter().flatten() {
        place(chart, index, value)?;
    }
    Ok(())
}

fn pane_ids(chart: &ChartState) -> String {
    chart
        .panes
        .iter()
        .map(|pane| pane.id.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A sub-pane's index, refusing an unknown pane and the main pane.
fn sub_pane(chart: &ChartState, input: &Value) -> Result<usize, &'static str> {
    let index =
        pane_at(chart, text(input, "paneId").unwrap_or_default()).ok_or("UNKNOWN_PANE_ID")?;
    if chart.panes[index].id == "main" {
        return Err("MAIN_PANE_FIXED");
    }
    Ok(index)
}

fn panes(chart: &mut ChartState, tool: &str, input: &Value) -> Result<Value, &'static str> {
    match tool {
        "pane_create" => {
            if chart.panes.len() >= PANES_MAX {
                return Err("PANE_LIMIT_REACHED");
            }
            let id = allocate(chart, "pane");
            let height = input.get("height").and_then(integer).unwrap_or(20) as u32;
            chart.panes.push(Pane {
                id,
                indicators: Vec::new(),
                height,
                collapsed: false,
            });
            let index = chart.panes.len() - 1;
            place_all(chart, index, input.get("indicators"))?;
            Ok(json!({"pane": chart.panes[index]}))
        }
        "pane_update" => {
            let index = sub_pane(chart, input)?;
            let pane = &mut chart.panes[index];
            if let Some(height) = input.get("height").and_then(integer) {
                pane.height = height as u32;
            }
            if let Some(collapsed) = input.get("collapsed").and_then(Value::as_bool) {
                pane.collapsed = collapsed;
            }
            Ok(json!({"pane": pane}))
        }
        "pane_remove" => {
            let index = sub_pane(chart, input)?;
            let pane = chart.panes.remove(index);
            let before = chart.drawings.len();
            chart.drawings.retain(|drawing| drawing.pane_id != pane.id);
            Ok(json!({"removedPaneId": pane.id, "removedDrawings": before - chart.drawings.len()}))
        }
        "pane_move" => {
            let index = sub_pane(chart, input)?;
            let position = input.get("position").and_then(integer).unwrap_or(0) as usize;
            if position > chart.panes.len() - 1 {
                return Err("INVALID_PANE_POSITION");
            }
            let pane = chart.panes.remove(index);
            chart.panes.insert(position, pane);
            Ok(json!({"panes": pane_ids(chart)}))
        }
        "pane_replace_content" => {
            let index = pane_at(chart, text(input, "paneId").unwrap_or_default())
                .ok_or("UNKNOWN_PANE_ID")?;
            chart.panes[index].indicators.clear();
            place_all(chart, index, input.get("indicators"))?;
            Ok(json!({"pane": chart.panes[index]}))
        }
        "pane_update_content" => {
            let index = pane_at(chart, text(input, "paneId").unwrap_or_default())
                .ok_or("UNKNOWN_PANE_ID")?;
            for name in input
                .get("remove")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let indicators = &mut chart.panes[index].indicators;
                let before = indicators.len();
                indicators.retain(|indicator| {
                    serde_json::to_value(indicator).expect("serialises")["name"] != *name
                });
                if indicators.len() == before {
                    return Err("INDICATOR_NOT_ON_PANE");
                }
            }
            place_all(chart, index, input.get("add"))?;
            Ok(json!({"pane": chart.panes[index]}))
        }
        "panes_clear" => {
            let before = (chart.panes.len(), chart.drawings.len());
            chart.panes.retain(|pane| pane.id == "main");
            chart.drawings.retain(|drawing| drawing.pane_id == "main");
            Ok(json!({
                "removedPanes": before.0 - chart.panes.len(),
                "removedDrawings": before.1 - chart.drawings.len()
            }))
        }
        _ => unreachable!("not a pane tool: {tool}"),
    }
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// The anchors of a drawing of `kind`, checked as the domain checks them.
fn anchors(kind: &str, given: &Value) -> Result<Vec<Anchor>, &'static str> {
    let given = given.as_array().cloned().unwrap_or_default();
    if given.len() != anchor_count(kind) {
        return Err("INVALID_ANCHOR_COUNT");
    }
    given
        .iter()
        .map(|anchor| {
            let date = text(anchor, "tradingDate").unwrap_or("2025-12-31");
            let (year, month, day): (i64, u32, u32) = (
                date[0..4].parse().expect("the pattern holds digits"),
                date[5..7].parse().expect("digits"),
                date[8..10].parse().expect("digits"),
            );
            if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
                return Err("ANCHOR_DATE_INVALID");
            }
            if !(FIRST_DAY..=LAST_DAY).contains(&(year, month, day)) {
                return Err("ANCHOR_DATE_OUT_OF_RANGE");
            }
            let price = anchor.get("price").and_then(Value::as_f64).unwrap_or(0.0);
            if !(price > 0.0 && price <= 1e9) {
                return Err("ANCHOR_PRICE_OUT_OF_RANGE");
            }
            Ok(Anchor {
                trading_date: date.to_owned(),
                price,
            })
        })
        .collect()
}

fn restyle(style: &mut Style, given: Option<&Value>) {
    let Some(given) = given else { return };
    let mut current = serde_json::to_value(*style).expect("serialises");
    for key in ["color", "lineWidth", "lineStyle"] {
        if let Some(value) = given.get(key) {
            // The width may be written `2.0`; the model stores integers as integers.
            current[key] = integer(value).map_or_else(|| value.clone(), Value::from);
        }
    }
    *style = serde_json::from_value(current).expect("a palette style");
}

fn drawings_on(chart: &ChartState, pane_id: &str) -> usize {
    chart
        .drawings
        .iter()
        .filter(|drawing| drawing.pane_id == pane_id)
        .count()
}

fn kind_name(kind: DrawingKind) -> String {
    serde_json::to_value(kind)
        .expect("serialises")
        .as_str()
        .expect("a name")
        .to_owned()
}

fn drawing_at(chart: &ChartState, input: &Value) -> Result<usize, &'static str> {
    let id = text(input, "drawingId").unwrap_or_default();
    chart
        .drawings
        .iter()
        .position(|drawing| drawing.id == id)
        .ok_or("UNKNOWN_DRAWING_ID")
}

fn drawings(chart: &mut ChartState, tool: &str, input: &Value) -> Result<Value, &'static str> {
    match tool {
        "drawing_create" => {
            let index = pane_at(chart, text(input, "paneId").unwrap_or_default())
                .ok_or("UNKNOWN_PANE_ID")?;
            let pane_id = chart.panes[index].id.clone();
            let kind = text(input, "kind").unwrap_or_default();
            let anchors = anchors(kind, &input["anchors"])?;
            let label = text(input, "text").map(str::to_owned);
            if kind == "text" && label.is_none() {
                return Err("TEXT_REQUIRED");
            }
            if drawings_on(chart, &pane_id) >= DRAWINGS_PER_PANE_MAX {
                return Err("DRAWING_LIMIT_REACHED");
            }
            let mut style = Style::default();
            restyle(&mut style, input.get("style"));
            let drawing = Drawing {
                id: allocate(chart, "drawing"),
                kind: serde_json::from_value(json!(kind)).expect("a kind"),
                pane_id,
                anchors,
                style,
                text: label,
            };
            let data = json!({"drawing": drawing});
            chart.drawings.push(drawing);
            Ok(data)
        }
        "drawing_update" => {
            let index = drawing_at(chart, input)?;
            let kind = kind_name(chart.drawings[index].kind);
            let anchors = input
                .get("anchors")
                .map(|given| anchors(&kind, given))
                .transpose()?;
            let drawing = &mut chart.drawings[index];
            if let Some(anchors) = anchors {
                drawing.anchors = anchors;
            }
            restyle(&mut drawing.style, input.get("style"));
            if let Some(label) = text(input, "text") {
                drawing.text = Some(label.to_owned());
            }
            Ok(json!({"drawing": drawing}))
        }
        "drawing_delete" => {
            let index = drawing_at(chart, input)?;
            let drawing = chart.drawings.remove(index);
            Ok(json!({"deletedDrawingId": drawing.id}))
        }
        "drawings_copy" => {
            let source = pane_at(chart, text(input, "sourcePaneId").unwrap_or_default())
                .ok_or("UNKNOWN_PANE_ID")?;
            let target = pane_at(chart, text(input, "targetPaneId").unwrap_or_default())
                .ok_or("UNKNOWN_PANE_ID")?;
            let (source, target) = (
                chart.panes[source].id.clone(),
                chart.panes[target].id.clone(),
            );
            let on_source: Vec<Drawing> = chart
                .drawings
                .iter()
                .filter(|drawing| drawing.pane_id == source)
                .cloned()
                .collect();
            let chosen: Vec<Drawing> = match input.get("drawingIds").and_then(Value::as_array) {
                None => on_source,
                Some(ids) => ids
                    .iter()
                    .map(|id| {
                        on_source
                            .iter()
                            .find(|drawing| Some(drawing.id.as_str()) == id.as_str())
                            .cloned()
                            .ok_or("DRAWING_NOT_ON_PANE")
                    })
                    .collect::<Result<_, _>>()?,
            };
            let mut copied = Vec::new();
            for original in chosen {
                if drawings_on(chart, &target) >= DRAWINGS_PER_PANE_MAX {
                    return Err("DRAWING_LIMIT_REACHED");
                }
                let copy = Drawing {
                    id: allocate(chart, "drawing"),
                    pane_id: target.clone(),
                    ..original
                };
                copied.push(copy.id.clone());
                chart.drawings.push(copy);
            }
            Ok(json!({"copiedDrawingIds": copied}))
        }
        "drawings_clear" => {
            let filter = text(input, "paneId");
            if let Some(pane_id) = filter {
                pane_at(chart, pane_id).ok_or("UNKNOWN_PANE_ID")?;
            }
            let before = chart.drawings.len();
            chart
                .drawings
                .retain(|drawing| filter.is_some_and(|pane_id| drawing.pane_id != pane_id));
            Ok(json!({"deletedDrawings": before - chart.drawings.len()}))
        }
        _ => unreachable!("not a drawing tool: {tool}"),
    }
}

fn comparisons_and_settings(
    chart: &mut ChartState,
    tool: &str,
    input: &Value,
) -> Result<Value, &'static str> {
    match tool {
        "comparison_create" => {
            let symbol = text(input, "symbol").unwrap_or_default();
            if !INSTRUMENTS
                .iter()
                .any(|instrument| instrument.symbol == symbol)
            {
                return Err("UNKNOWN_SYMBOL");
            }
            if chart.symbol == symbol {
                return Err("COMPARISON_IS_MAIN_SYMBOL");
            }
            if chart
                .comparisons
                .iter()
                .any(|comparison| comparison.symbol == symbol)
            {
                return Err("COMPARISON_EXISTS");
            }
            if chart.comparisons.len() >= COMPARISONS_MAX {
                return Err("COMPARISON_LIMIT_REACHED");
            }
            let comparison = Comparison {
                id: allocate(chart, "comparison"),
                symbol: symbol.to_owned(),
                mode: serde_json::from_value(json!(text(input, "mode").unwrap_or("percent")))
                    .expect("a mode"),
            };
            let data = json!({"comparison": comparison});
            chart.comparisons.push(comparison);
            Ok(data)
        }
        "comparison_remove" => {
            let id = text(input, "comparisonId").unwrap_or_default();
            let index = chart
                .comparisons
                .iter()
                .position(|comparison| comparison.id == id)
                .ok_or("UNKNOWN_COMPARISON_ID")?;
            let removed = chart.comparisons.remove(index);
            Ok(json!({"removedComparisonId": removed.id}))
        }
        "comparisons_clear" => {
            let removed = chart.comparisons.len();
            chart.comparisons.clear();
            Ok(json!({"removedComparisons": removed}))
        }
        "settings_update" => {
            let mut settings = serde_json::to_value(&chart.settings).expect("serialises");
            for (key, value) in input.as_object().into_iter().flatten() {
                settings[key] = value.clone();
            }
            chart.settings = serde_json::from_value(settings).expect("settings");
            Ok(json!({"settings": chart.settings}))
        }
        "settings_reset" => {
            chart.settings = serde_json::from_value(json!({
                "theme": "light", "chartType": "candles", "showVolume": true, "showGrid": true,
                "priceScale": "linear", "timezone": "exchange", "crosshair": true
            }))
            .expect("settings");
            Ok(json!({"settings": chart.settings}))
        }
        _ => unreachable!("not a comparison or settings tool: {tool}"),
    }
}

/// What `tool` does with a valid `input`.
fn domain(chart: &mut ChartState, tool: &str, input: &Value) -> Reply {
    let reply = |result: Result<Value, &'static str>| match result {
        Ok(data) => Reply::Data(data),
        Err(code) => Reply::Error(code),
    };
    match tool {
        "panes_list" => Reply::Data(
            json!({"symbol": chart.symbol, "period": chart.period, "panes": chart.panes}),
        ),
        "drawings_list" => match text(input, "paneId") {
            Some(pane_id) if pane_at(chart, pane_id).is_none() => Reply::Error("UNKNOWN_PANE_ID"),
            filter => {
                let listed: Vec<&Drawing> = chart
                    .drawings
                    .iter()
                    .filter(|drawing| filter.is_none_or(|pane_id| drawing.pane_id == pane_id))
                    .collect();
                Reply::Data(json!({"drawings": listed}))
            }
        },
        "comparisons_list" => Reply::Data(json!({"comparisons": chart.comparisons})),
        "settings_get" => Reply::Data(json!({"settings": chart.settings})),
        "indicators_query" => match pane_at(chart, text(input, "paneId").unwrap_or_default()) {
            None => Reply::Error("UNKNOWN_PANE_ID"),
            Some(_) => Reply::Unchecked,
        },
        "ask_user" => Reply::Error("USER_UNAVAILABLE"),
        "code_interpreter" => Reply::Unchecked,
        "market_bars_query" | "web_search" => Reply::Any,
        tool if tool.starts_with("pane") => reply(panes(chart, tool, input)),
        tool if tool.starts_with("drawing") => reply(drawings(chart, tool, input)),
        tool => reply(comparisons_and_settings(chart, tool, input)),
    }
}

/// R3's checks in order, then the domain.
fn decide(chart: &mut ChartState, tool: &str, arguments: &str, text: Text, run: Run) -> Reply {
    match run {
        Run::SwitchedOff => return Reply::Error(codes::TOOL_NOT_ALLOWED),
        Run::ReadOnly if WRITES.contains(&tool) => return Reply::Error(codes::TOOL_NOT_ALLOWED),
        _ => {}
    }
    if arguments.len() > ARGUMENT_BYTES_MAX {
        return Reply::Error(codes::PAYLOAD_TOO_LARGE);
    }
    let input = if arguments.trim().is_empty() {
        Some(json!({}))
    } else if text == Text::Broken {
        None
    } else {
        serde_json::from_str::<Value>(arguments).ok()
    };
    let Some(input) = input.filter(|input| ORACLES[tool].is_valid(input)) else {
        return Reply::Error(codes::TOOL_INPUT_INVALID);
    };
    domain(chart, tool, &input)
}

impl Model {
    fn call(mut self, tool: &str, arguments: &str, text: Text, run: Run) -> Model {
        let before = self.chart.clone();
        let reply = decide(&mut self.chart, tool, arguments, text, run);
        let (code, data) = match reply {
            Reply::Data(data) => (Some("OK".to_owned()), Some(data)),
            Reply::Unchecked => (Some("OK".to_owned()), None),
            Reply::Error(code) => (Some(code.to_owned()), None),
            Reply::Any => (None, None),
        };
        if code.as_deref() != Some("OK") {
            // A failed call, or a read, leaves the chart exactly as it was.
            self.chart = before;
            self.expected = Expected::Call {
                code,
                state_changed: false,
                data: None,
            };
            return self;
        }
        let state_changed = self.chart != before;
        if state_changed {
            if self.undo.len() == UNDO_DEPTH_MAX {
                self.undo.remove(0);
            }
            self.undo.push(before);
        }
        self.expected = Expected::Call {
            code,
            state_changed,
            data,
        };
        self
    }

    fn changes(mut self, times: usize) -> Model {
        for _ in 0..times {
            let before = self.chart.clone();
            let theme = if self.chart.settings.theme == "dark" {
                "light"
            } else {
                "dark"
            };
            self.chart.settings.theme = theme.to_owned();
            if self.undo.len() == UNDO_DEPTH_MAX {
                self.undo.remove(0);
            }
            self.undo.push(before);
        }
        self.expected = Expected::Changes;
        self
    }

    fn undo(mut self, times: usize) -> Model {
        let undone = (0..times)
            .map(|_| match self.undo.pop() {
                Some(before) => {
                    self.chart = before;
                    true
                }
                None => false,
            })
            .collect();
        self.expected = Expected::Undo { undone };
        self
    }
}

// ---------------------------------------------------------------------------------------------
// Transitions aimed at the model's state.

/// The ids the model holds, for aiming calls.
#[derive(Clone, Debug)]
struct Aims {
    /// Pane ids with the names of their indicators.
    panes: Vec<(String, Vec<String>)>,
    /// Drawing ids with their kind and pane.
    drawings: Vec<(String, String, String)>,
    comparisons: Vec<String>,
}

impl Aims {
    fn of(chart: &ChartState) -> Aims {
        Aims {
            panes: chart
                .panes
                .iter()
                .map(|pane| {
                    let names = pane
                        .indicators
                        .iter()
                        .map(|indicator| {
                            serde_json::to_value(indicator).expect("serialises")["name"]
                                .as_str()
                                .unwrap_or_default()
                                .to_owned()
                        })
                        .collect();
                    (pane.id.clone(), names)
                })
                .collect(),
            drawings: chart
                .drawings
                .iter()
                .map(|drawing| {
                    (
                        drawing.id.clone(),
                        kind_name(drawing.kind),
                        drawing.pane_id.clone(),
                    )
                })
                .collect(),
            comparisons: chart
                .comparisons
                .iter()
                .map(|comparison| comparison.id.clone())
                .collect(),
        }
    }
}

/// Choices drawn once per transition and consumed in order while aiming.
struct Picks {
    picks: Vec<Index>,
    next: usize,
}

impl Picks {
    fn index(&mut self, size: usize) -> usize {
        let pick = &self.picks[self.next % self.picks.len()];
        self.next += 1;
        pick.index(size.max(1))
    }

    /// True `numerator` times in `denominator`.
    fn chance(&mut self, numerator: usize, denominator: usize) -> bool {
        self.index(denominator) < numerator
    }

    fn one_of<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        (!items.is_empty()).then(|| &items[self.index(items.len())])
    }
}

/// Aims a valid input of `tool` at the model's ids and at the domain's rules, most of the
/// time; the rest of the time the input goes as drawn, usually to a domain error.
fn aim(tool: &str, mut input: Value, aims: &Aims, picks: &mut Picks) -> Value {
    let Some(members) = input.as_object_mut() else {
        return input;
    };
    for key in ["paneId", "sourcePaneId", "targetPaneId"] {
        if members.contains_key(key) && picks.chance(9, 10) {
            let pane = picks.one_of(&aims.panes).expect("the main pane exists");
            members.insert(key.to_owned(), json!(pane.0));
        }
    }
    if members.contains_key("drawingId") && picks.chance(9, 10) {
        if let Some(drawing) = picks.one_of(&aims.drawings) {
            members.insert("drawingId".to_owned(), json!(drawing.0));
        }
    }
    if tool == "drawings_copy" && picks.chance(4, 5) {
        // Copy from a pane that holds drawings, the listed ones among them.
        if let Some(drawing) = picks.one_of(&aims.drawings) {
            members.insert("sourcePaneId".to_owned(), json!(drawing.2));
        }
    }
    let source = members.get("sourcePaneId").cloned();
    if let Some(Value::Array(ids)) = members.get_mut("drawingIds") {
        let on_source: Vec<&(String, String, String)> = aims
            .drawings
            .iter()
            .filter(|drawing| Some(json!(drawing.2)) == source)
            .collect();
        for id in ids.iter_mut() {
            if let Some(drawing) = picks.one_of(&on_source).filter(|_| picks.chance(9, 10)) {
                *id = json!(drawing.0);
            }
        }
    }
    if members.contains_key("comparisonId") && picks.chance(9, 10) {
        if let Some(comparison) = picks.one_of(&aims.comparisons) {
            members.insert("comparisonId".to_owned(), json!(comparison));
        }
    }
    if tool == "comparison_create" && picks.chance(9, 10) {
        // Seven symbols, the main one among them: repeats and the limit come soon.
        let instrument = picks.one_of(&INSTRUMENTS[..7]).expect("a catalogue");
        members.insert("symbol".to_owned(), json!(instrument.symbol));
    }
    aim_anchors(tool, members, aims, picks);
    aim_indicators(tool, members, aims, picks);
    if tool == "pane_move" && picks.chance(1, 2) {
        let sub_panes = aims.panes.len().saturating_sub(1).max(1);
        members.insert("position".to_owned(), json!(1 + picks.index(sub_panes)));
    }
    input
}

fn aim_anchors(tool: &str, members: &mut Map<String, Value>, aims: &Aims, picks: &mut Picks) {
    let kind = match tool {
        "drawing_create" => members
            .get("kind")
            .and_then(Value::as_str)
            .map(str::to_owned),
        "drawing_update" => {
            let id = members.get("drawingId").and_then(Value::as_str);
            aims.drawings
                .iter()
                .find(|drawing| Some(drawing.0.as_str()) == id)
                .map(|drawing| drawing.1.clone())
        }
        _ => None,
    };
    if tool == "drawing_create" && kind.as_deref() == Some("text") && picks.chance(4, 5) {
        members.insert("text".to_owned(), json!("note"));
    }
    let Some(Value::Array(anchors)) = members.get_mut("anchors") else {
        return;
    };
    if let Some(kind) = kind.filter(|_| picks.chance(4, 5)) {
        let first = anchors[0].clone();
        anchors.resize(anchor_count(&kind), first);
    }
    for anchor in anchors.iter_mut().filter_map(Value::as_object_mut) {
        // Mostly a date of the range or none (the last trading day), sometimes a refused
        // date, rarely the date as drawn (which is rarely a calendar day).
        match picks.index(20) {
            0..=11 => {
                let date = DATES_IN_RANGE[picks.index(DATES_IN_RANGE.len())];
                anchor.insert("tradingDate".to_owned(), json!(date));
            }
            12..=15 => {
                anchor.remove("tradingDate");
            }
            16..=18 => {
                let date = DATES_REFUSED[picks.index(DATES_REFUSED.len())];
                anchor.insert("tradingDate".to_owned(), json!(date));
            }
            _ => {}
        }
    }
}

fn aim_indicators(tool: &str, members: &mut Map<String, Value>, aims: &Aims, picks: &mut Picks) {
    let on_main = match tool {
        "pane_create" => false,
        "pane_replace_content" | "pane_update_content" => {
            members.get("paneId").and_then(Value::as_str) == Some("main")
        }
        _ => return,
    };
    let allowed = if on_main { OVERLAYS } else { OSCILLATORS };
    for key in ["indicators", "add"] {
        let Some(Value::Array(list)) = members.get_mut(key) else {
            continue;
        };
        for indicator in list.iter_mut().filter_map(Value::as_object_mut) {
            if picks.chance(7, 10) {
                let name = allowed[picks.index(allowed.len())];
                indicator.insert("name".to_owned(), json!(name));
                if default_period(name).is_none() && picks.chance(4, 5) {
                    indicator.remove("period");
                }
            }
        }
    }
    let pane_id = members
        .get("paneId")
        .and_then(Value::as_str)
        .map(str::to_owned);
    if let Some(Value::Array(names)) = members.get_mut("remove") {
        let present = aims
            .panes
            .iter()
            .find(|pane| Some(&pane.0) == pane_id.as_ref())
            .map(|pane| pane.1.clone())
            .unwrap_or_default();
        for name in names.iter_mut() {
            if let Some(present) = picks.one_of(&present).filter(|_| picks.chance(7, 10)) {
                *name = json!(present);
            }
        }
    }
}

fn aimed_call(state: &Model, run: Run) -> BoxedStrategy<Transition> {
    let aims = Aims::of(&state.chart);
    let choices: Vec<(u32, BoxedStrategy<Transition>)> = CALLED
        .iter()
        .map(|&(tool, weight)| {
            let aims = aims.clone();
            let strategy = (
                valid(&parameters(tool)),
                proptest::collection::vec(any::<Index>(), 24),
            )
                .prop_map(move |(input, picks)| {
                    let mut picks = Picks { picks, next: 0 };
                    Transition::Call {
                        tool,
                        arguments: aim(tool, input, &aims, &mut picks).to_string(),
                        text: Text::Json,
                        run,
                    }
                })
                .boxed();
            (weight, strategy)
        })
        .collect();
    Union::new_weighted(choices).boxed()
}

fn any_tool() -> impl Strategy<Value = &'static str> {
    proptest::sample::select(CALLED.iter().map(|(tool, _)| *tool).collect::<Vec<_>>())
}

fn near_valid_call() -> BoxedStrategy<Transition> {
    any_tool()
        .prop_flat_map(|tool| {
            near_valid(&parameters(tool)).prop_map(move |input| Transition::Call {
                tool,
                arguments: input.to_string(),
                text: Text::Json,
                run: Run::Normal,
            })
        })
        .boxed()
}

fn text_call(texts: &'static [&'static str], text: Text) -> BoxedStrategy<Transition> {
    (any_tool(), proptest::sample::select(texts))
        .prop_map(move |(tool, arguments)| Transition::Call {
            tool,
            arguments: arguments.to_owned(),
            text,
            run: Run::Normal,
        })
        .boxed()
}

/// A fresh chart, or one already holding up to the limits: sub-panes, comparisons,
/// drawings and settings, so that the limits come within a few transitions.
fn initial_chart() -> impl Strategy<Value = ChartState> {
    let settings = valid(&parameters("settings_update"));
    let drawings = proptest::collection::vec(
        (
            any::<Index>(),
            proptest::sample::select(DRAWING_KINDS),
            1u32..200_000,
        ),
        0..12,
    );
    prop_oneof![
        1 => Just(ChartState::fresh()),
        3 => (
            0..=PANES_MAX - 3,
            proptest::sample::subsequence(INSTRUMENTS[1..7].to_vec(), 0..=COMPARISONS_MAX),
            drawings,
            settings,
        )
            .prop_map(|(panes, compared, drawings, settings)| {
                let mut chart = ChartState::fresh();
                for index in 0..panes {
                    let id = allocate(&mut chart, "pane");
                    let name = OSCILLATORS[index % OSCILLATORS.len()];
                    chart.panes.push(Pane {
                        id,
                        indicators: vec![to_indicator(name, None)],
                        height: 10 + 5 * index as u32,
                        collapsed: index % 2 == 1,
                    });
                }
                for instrument in compared {
                    let id = allocate(&mut chart, "comparison");
                    chart.comparisons.push(Comparison {
                        id,
                        symbol: instrument.symbol.to_owned(),
                        mode: Default::default(),
                    });
                }
                for (pane, kind, cents) in drawings {
                    let pane_id = chart.panes[pane.index(chart.panes.len())].id.clone();
                    let anchor = Anchor {
                        trading_date: "2024-06-14".to_owned(),
                        price: f64::from(cents) / 100.0,
                    };
                    let drawing = Drawing {
                        id: allocate(&mut chart, "drawing"),
                        kind: serde_json::from_value(json!(kind)).expect("a kind"),
                        pane_id,
                        anchors: vec![anchor; anchor_count(kind)],
                        style: Style::default(),
                        text: (kind == "text").then(|| "label".to_owned()),
                    };
                    chart.drawings.push(drawing);
                }
                let mut current = serde_json::to_value(&chart.settings).expect("serialises");
                for (key, value) in settings.as_object().into_iter().flatten() {
                    current[key] = value.clone();
                }
                chart.settings = serde_json::from_value(current).expect("settings");
                chart
            }),
    ]
}

const DRAWING_KINDS: &[&str] = &[
    "trend-line",
    "ray",
    "extended-line",
    "arrow",
    "horizontal-line",
    "horizontal-ray",
    "vertical-line",
    "rectangle",
    "ellipse",
    "triangle",
    "parallel-channel",
    "fib-retracement",
    "fib-extension",
    "price-range",
    "text",
];

struct ChartMachine;

impl ReferenceStateMachine for ChartMachine {
    type State = Model;
    type Transition = Transition;

    fn init_state() -> BoxedStrategy<Model> {
        initial_chart()
            .prop_map(|chart| Model {
                chart,
                undo: Vec::new(),
                expected: Expected::Nothing,
            })
            .boxed()
    }

    fn transitions(state: &Model) -> BoxedStrategy<Transition> {
        prop_oneof![
            12 => aimed_call(state, Run::Normal),
            3 => near_valid_call(),
            1 => text_call(BROKEN, Text::Broken),
            1 => text_call(BLANK, Text::Json),
            2 => aimed_call(state, Run::ReadOnly),
            1 => aimed_call(state, Run::SwitchedOff),
            3 => prop_oneof![9 => Just(1usize), 1 => 2usize..=110]
                .prop_map(|times| Transition::Undo { times }),
            1 => (1usize..=110).prop_map(|times| Transition::Changes { times }),
        ]
        .boxed()
    }

    fn apply(state: Model, transition: &Transition) -> Model {
        match transition {
            Transition::Call {
                tool,
                arguments,
                text,
                run,
            } => state.call(tool, arguments, *text, *run),
            Transition::Changes { times } => state.changes(*times),
            Transition::Undo { times } => state.undo(*times),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The system under test: the real core, through its single entry point.

thread_local! {
    /// The seeded bugs the core runs with on this thread: none, except in the check that
    /// the machine catches them.
    static FAULTS: Cell<FaultSet> = const { Cell::new(FaultSet::EMPTY) };
}

struct Core {
    chart: SharedChart,
    faults: FaultSet,
}

impl Core {
    fn execute(&self, tool: &str, arguments: &str, run: Run) -> ToolResult {
        let policy = match run {
            Run::Normal => RunPolicy::normal(),
            Run::ReadOnly => RunPolicy::read_only(),
            Run::SwitchedOff => RunPolicy {
                read_only: false,
                disabled: [tool.to_owned()].into(),
            },
        };
        let guard = SecretGuard::default();
        let scope = CallScope {
            policy: &policy,
            offered: &[],
            guard: &guard,
            faults: self.faults,
        };
        let call = ToolCall {
            id: "call-1".to_owned(),
            name: tool.to_owned(),
            arguments: arguments.to_owned(),
        };
        let context = ToolContext::standalone(self.chart.clone(), &call);
        futures::executor::block_on(REGISTRY.execute(
            &scope,
            &mut CallIds::default(),
            &call,
            &context,
        ))
    }

    /// The data of a read that must succeed.
    fn read(&self, tool: &str, arguments: Value) -> Value {
        match self
            .execute(tool, &arguments.to_string(), Run::Normal)
            .outcome
        {
            Outcome::Success(data) => Value::clone(&data),
            Outcome::Failure(error) => panic!("{tool} {arguments} failed: {error:?}"),
        }
    }
}

fn code(result: &ToolResult) -> &str {
    result.error_code().unwrap_or("OK")
}

impl StateMachineTest for Core {
    type SystemUnderTest = Core;
    type Reference = ChartMachine;

    fn init_test(model: &Model) -> Core {
        Core {
            chart: SharedChart::with_state(11, model.chart.clone()),
            faults: FAULTS.get(),
        }
    }

    fn apply(core: Core, model: &Model, transition: Transition) -> Core {
        match (&transition, &model.expected) {
            (
                Transition::Call {
                    tool,
                    arguments,
                    run,
                    ..
                },
                Expected::Call {
                    code: expected_code,
                    state_changed,
                    data,
                },
            ) => {
                let result = core.execute(tool, arguments, *run);
                if let Some(expected_code) = expected_code {
                    assert_eq!(
                        code(&result),
                        expected_code,
                        "{tool} {arguments}: {result:?}"
                    );
                }
                assert_eq!(
                    result.state_changed, *state_changed,
                    "{tool} {arguments}: stateChanged does not tell the truth"
                );
                if let (Some(data), Outcome::Success(got)) = (data, &result.outcome) {
                    assert_eq!(&**got, data, "{tool} {arguments}: data");
                }
            }
            (Transition::Changes { times }, Expected::Changes) => {
                for _ in 0..*times {
                    let theme = core.chart.snapshot().settings.theme;
                    let flipped = if theme == "dark" { "light" } else { "dark" };
                    let arguments = json!({"theme": flipped}).to_string();
                    let result = core.execute("settings_update", &arguments, Run::Normal);
                    assert_eq!(code(&result), "OK", "{result:?}");
                    assert!(result.state_changed, "a change was not reported");
                }
            }
            (Transition::Undo { times }, Expected::Undo { undone }) => {
                let got: Vec<bool> = (0..*times).map(|_| core.chart.undo()).collect();
                assert_eq!(&got, undone, "undo reported the wrong thing");
            }
            other => unreachable!("the model expects what it applied: {other:?}"),
        }
        core
    }

    fn check_invariants(core: &Core, model: &Model) {
        assert_eq!(
            core.chart.snapshot(),
            model.chart,
            "the snapshot differs from the model"
        );
        assert_eq!(
            core.chart.undo_depth(),
            model.undo.len(),
            "the undo depth differs"
        );
        let chart = &model.chart;
        assert_eq!(
            core.read("panes_list", json!({})),
            json!({"symbol": chart.symbol, "period": chart.period, "panes": chart.panes})
        );
        assert_eq!(
            core.read("drawings_list", json!({})),
            json!({"drawings": chart.drawings})
        );
        for pane in &chart.panes {
            let on_pane: Vec<&Drawing> = chart
                .drawings
                .iter()
                .filter(|drawing| drawing.pane_id == pane.id)
                .collect();
            assert_eq!(
                core.read("drawings_list", json!({"paneId": pane.id})),
                json!({"drawings": on_pane})
            );
        }
        assert_eq!(
            core.read("comparisons_list", json!({})),
            json!({"comparisons": chart.comparisons})
        );
        assert_eq!(
            core.read("settings_get", json!({})),
            json!({"settings": chart.settings})
        );
        assert_eq!(
            core.chart.undo_depth(),
            model.undo.len(),
            "a read changed the undo depth"
        );
    }
}

prop_state_machine! {
    #![proptest_config(config(48, regressions!("prop_chart_state_machine")))]

    /// The chart, its tools and undo agree with the model after every transition.
    #[test]
    fn the_chart_agrees_with_its_model(sequential 1..80 => Core);
}

/// The machine catches a write that leaves part of its change behind when it fails (I9).
#[cfg(feature = "fault-injection")]
#[test]
fn the_machine_catches_a_partial_write() {
    use ward_core::fault::Fault;
    FAULTS.set(FaultSet::only(Fault::PartialWriteOnError));
    let caught = strategies::fails_somewhere(
        32,
        ChartMachine::sequential_strategy(1..80),
        |(initial, transitions, _seen)| {
            // No shrinking, so the strategy need not count the transitions seen.
            Core::test_sequential(Default::default(), initial, transitions, None);
            Ok(())
        },
    );
    FAULTS.set(FaultSet::EMPTY);
    assert!(caught, "partial-write-on-error went unnoticed");
}
