//! The reference model: the chart's panes, drawings, comparisons and settings, the undo
//! stack, and what each tool does to them, with the domain errors of each tool in the order
//! its checks run, after R3's checks in their order. Validity is decided with the model's own
//! validators of the published schemas, never ward's validator.

use serde_json::{Value, json};
use ward_core::chart::indicators::Indicator;
use ward_core::chart::market::CATALOGUE as INSTRUMENTS;
use ward_core::chart::{
    Anchor, ChartState, Comparison, Drawing, DrawingKind, Pane, Style, UNDO_DEPTH_MAX,
};
use ward_core::envelope::codes;

use super::catalogue::{
    ARGUMENT_BYTES_MAX, COMPARISONS_MAX, DRAWINGS_PER_PANE_MAX, FIRST_DAY, INDICATORS_PER_PANE_MAX,
    LAST_DAY, ORACLES, OVERLAYS, PANES_MAX, WRITES, anchor_count, default_period,
};

/// How the run a call belongs to is configured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Run {
    Normal,
    ReadOnly,
    /// The called tool is switched off.
    SwitchedOff,
}

/// Whether the argument text is JSON without repeated keys (or blank).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Text {
    Json,
    Broken,
}

#[derive(Clone, Debug)]
pub enum Transition {
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
pub enum Expected {
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
pub struct Model {
    pub chart: ChartState,
    /// The states before each change, the most recent last.
    pub undo: Vec<ChartState>,
    pub expected: Expected,
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

pub fn allocate(chart: &mut ChartState, prefix: &str) -> String {
    let id = format!("{prefix}-{}", chart.next_id);
    chart.next_id += 1;
    id
}

fn indicator_of(value: &Value) -> (String, Option<u32>) {
    let name = text(value, "name").unwrap_or_default().to_owned();
    let period = value.get("period").and_then(integer).map(|p| p as u32);
    (name, period)
}

pub fn to_indicator(name: &str, period: Option<u32>) -> Indicator {
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

pub fn kind_name(kind: DrawingKind) -> String {
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
    pub fn call(mut self, tool: &str, arguments: &str, text: Text, run: Run) -> Model {
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

    pub fn changes(mut self, times: usize) -> Model {
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

    pub fn undo(mut self, times: usize) -> Model {
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
