//! Drawing tools: `drawings_list`, `drawing_create`, `drawing_update`, `drawing_delete`,
//! `drawings_copy`, `drawings_clear`.
//!
//! Anchors sit on the loaded bar series: a `tradingDate` must be a real date within the
//! loaded range (a missing date means the last trading day), and each kind takes an exact
//! number of anchors. Errors name the valid pane ids, the anchor count for the kind and the
//! loaded range.

use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    date_schema, id_schema, input, listed, object, object_at_least, pane_index, reader, writer,
};
use crate::chart::calendar::{Date, FIRST_TRADING_DAY, LAST_TRADING_DAY};
use crate::chart::{
    Anchor, COLOR_NAMES, ChartState, Color, DRAWING_KIND_NAMES, DRAWINGS_PER_PANE_MAX, Drawing,
    DrawingKind, LineStyle, Style,
};
use crate::envelope::ToolError;
use crate::registry::{RegistryBuilder, RegistryError};
use crate::tool::ToolContext;

/// The highest price an anchor accepts.
const PRICE_MAX: f64 = 1e9;
/// The longest text label.
const TEXT_CHARS_MAX: usize = 500;

fn anchors_schema() -> Value {
    json!({
        "type": "array",
        "minItems": 1,
        "maxItems": 3,
        "items": {
            "type": "object",
            "properties": {
                "tradingDate": date_schema(),
                "price": {"type": "number", "exclusiveMinimum": 0, "maximum": PRICE_MAX}
            },
            "required": ["price"],
            "additionalProperties": false
        }
    })
}

fn style_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "color": {"enum": COLOR_NAMES},
            "lineWidth": {"type": "integer", "minimum": 1, "maximum": 4},
            "lineStyle": {"enum": ["solid", "dashed", "dotted"]}
        },
        "additionalProperties": false
    })
}

fn text_schema() -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": TEXT_CHARS_MAX})
}

pub(super) fn register_reads(builder: &mut RegistryBuilder) -> Result<(), RegistryError> {
    reader(
        builder,
        "drawings_list",
        "List drawings",
        "Lists the drawings on the chart, or on one pane, with their kind, anchors, style and text.",
        object(json!({"paneId": id_schema()}), &[]),
        drawings_list,
    )
}

pub(super) fn register_writes(builder: &mut RegistryBuilder) -> Result<(), RegistryError> {
    writer(
        builder,
        "drawing_create",
        "Create drawing",
        "Draws on a pane. Kinds and their anchor counts: horizontal-line, horizontal-ray, vertical-line and text take 1; triangle, parallel-channel and fib-extension take 3; the others take 2. An anchor without tradingDate sits on the last trading day.",
        object(
            json!({
                "kind": {"enum": DRAWING_KIND_NAMES},
                "paneId": id_schema(),
                "anchors": anchors_schema(),
                "style": style_schema(),
                "text": text_schema()
            }),
            &["kind", "paneId", "anchors"],
        ),
        drawing_create,
    )?;
    writer(
        builder,
        "drawing_update",
        "Update drawing",
        "Moves a drawing's anchors, restyles it or changes its text.",
        object_at_least(
            json!({"drawingId": id_schema(), "anchors": anchors_schema(), "style": style_schema(), "text": text_schema()}),
            &["drawingId"],
            2,
        ),
        drawing_update,
    )?;
    writer(
        builder,
        "drawing_delete",
        "Delete drawing",
        "Deletes one drawing.",
        object(json!({"drawingId": id_schema()}), &["drawingId"]),
        drawing_delete,
    )?;
    writer(
        builder,
        "drawings_copy",
        "Copy drawings",
        "Copies the drawings of one pane (all of them, or those listed) onto another pane.",
        object(
            json!({
                "sourcePaneId": id_schema(),
                "targetPaneId": id_schema(),
                "drawingIds": {"type": "array", "minItems": 1, "maxItems": DRAWINGS_PER_PANE_MAX, "items": id_schema()}
            }),
            &["sourcePaneId", "targetPaneId"],
        ),
        drawings_copy,
    )?;
    writer(
        builder,
        "drawings_clear",
        "Clear drawings",
        "Deletes every drawing on the chart, or on one pane.",
        object(json!({"paneId": id_schema()}), &[]),
        drawings_clear,
    )
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PaneFilter {
    pane_id: Option<String>,
}

fn drawings_list(context: &ToolContext, raw: Value) -> Result<Value, ToolError> {
    let filter: PaneFilter = input(raw)?;
    context.chart().read(|state| {
        if let Some(pane_id) = &filter.pane_id {
            pane_index(state, pane_id)?;
        }
        let drawings: Vec<&Drawing> = state
            .drawings
            .iter()
            .filter(|drawing| {
                filter
                    .pane_id
                    .as_ref()
                    .is_none_or(|pane_id| &drawing.pane_id == pane_id)
            })
            .collect();
        Ok(json!({"drawings": drawings}))
    })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AnchorInput {
    trading_date: Option<String>,
    price: f64,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct StyleInput {
    color: Option<Color>,
    line_width: Option<u8>,
    line_style: Option<LineStyle>,
}

impl StyleInput {
    fn apply(&self, style: &mut Style) {
        if let Some(color) = self.color {
            style.color = color;
        }
        if let Some(line_width) = self.line_width {
            style.line_width = line_width;
        }
        if let Some(line_style) = self.line_style {
            style.line_style = line_style;
        }
    }
}

fn loaded_range() -> String {
    format!("Use trading dates from {FIRST_TRADING_DAY} to {LAST_TRADING_DAY}, the loaded range.")
}

/// Checks the anchors against the kind and the loaded range.
fn anchors(kind: DrawingKind, given: &[AnchorInput]) -> Result<Vec<Anchor>, ToolError> {
    let count = kind.anchor_count();
    if given.len() != count {
        return Err(ToolError::domain(
            "INVALID_ANCHOR_COUNT",
            format!(
                "A {} takes exactly {count} anchor{}.",
                kind.as_str(),
                if count == 1 { "" } else { "s" }
            ),
            format!(
                "Send exactly {count} anchor{} for a {}.",
                if count == 1 { "" } else { "s" },
                kind.as_str()
            ),
        ));
    }
    given
        .iter()
        .map(|anchor| {
            let date = match &anchor.trading_date {
                None => LAST_TRADING_DAY,
                Some(text) => Date::parse(text).ok_or_else(|| {
                    ToolError::domain(
                        "ANCHOR_DATE_INVALID",
                        "An anchor's tradingDate is not a calendar date.",
                        loaded_range(),
                    )
                })?,
            };
            if !(FIRST_TRADING_DAY..=LAST_TRADING_DAY).contains(&date) {
                return Err(ToolError::domain(
                    "ANCHOR_DATE_OUT_OF_RANGE",
                    "An anchor's tradingDate is outside the loaded bars.",
                    loaded_range(),
                ));
            }
            if !(anchor.price > 0.0 && anchor.price <= PRICE_MAX) {
                return Err(ToolError::domain(
                    "ANCHOR_PRICE_OUT_OF_RANGE",
                    "An anchor's price is out of range.",
                    "Use a price above 0 and at most 1000000000.",
                ));
            }
            Ok(Anchor {
                trading_date: date.to_string(),
                price: anchor.price,
            })
        })
        .collect()
}

fn pane_full(pane_id: &str) -> ToolError {
    ToolError::domain(
        "DRAWING_LIMIT_REACHED",
        format!("A pane holds at most {DRAWINGS_PER_PANE_MAX} drawings."),
        format!("Delete drawings on {pane_id} first, or draw on another pane."),
    )
}

fn drawings_on(state: &ChartState, pane_id: &str) -> usize {
    state
        .drawings
        .iter()
        .filter(|drawing| drawing.pane_id == pane_id)
        .count()
}

fn unknown_drawing(state: &ChartState) -> ToolError {
    ToolError::domain(
        "UNKNOWN_DRAWING_ID",
        "No drawing has that id.",
        format!(
            "Use one of the drawing ids: {}.",
            listed(state.drawings.iter().map(|drawing| drawing.id.as_str()))
        ),
    )
}

fn text_required() -> ToolError {
    ToolError::domain(
        "TEXT_REQUIRED",
        "A text drawing needs a text.",
        "Send `text` with the text to show.",
    )
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct DrawingCreate {
    kind: DrawingKind,
    pane_id: String,
    anchors: Vec<AnchorInput>,
    style: Option<StyleInput>,
    text: Option<String>,
}

fn drawing_create(context: &ToolContext, raw: Value) -> Result<Value, ToolError> {
    let request: DrawingCreate = input(raw)?;
    context.chart().update(|state| {
        let index = pane_index(state, &request.pane_id)?;
        let pane_id = state.panes[index].id.clone();
        let anchors = anchors(request.kind, &request.anchors)?;
        if request.kind == DrawingKind::Text && request.text.is_none() {
            return Err(text_required());
        }
        if drawings_on(state, &pane_id) >= DRAWINGS_PER_PANE_MAX {
            return Err(pane_full(&pane_id));
        }
        let mut style = Style::default();
        request.style.unwrap_or_default().apply(&mut style);
        let drawing = Drawing {
            id: state.allocate_id("drawing"),
            kind: request.kind,
            pane_id,
            anchors,
            style,
            text: request.text,
        };
        let data = json!({"drawing": drawing});
        state.drawings.push(drawing);
        Ok(data)
    })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct DrawingUpdate {
    drawing_id: String,
    anchors: Option<Vec<AnchorInput>>,
    style: Option<StyleInput>,
    text: Option<String>,
}

fn drawing_update(context: &ToolContext, raw: Value) -> Result<Value, ToolError> {
    let request: DrawingUpdate = input(raw)?;
    context.chart().update(|state| {
        let index = state
            .drawings
            .iter()
            .position(|drawing| drawing.id == request.drawing_id)
            .ok_or_else(|| unknown_drawing(state))?;
        let kind = state.drawings[index].kind;
        let anchors = request
            .anchors
            .as_deref()
            .map(|given| anchors(kind, given))
            .transpose()?;
        let drawing = &mut state.drawings[index];
        if let Some(anchors) = anchors {
            drawing.anchors = anchors;
        }
        if let Some(style) = &request.style {
            style.apply(&mut drawing.style);
        }
        if let Some(text) = request.text {
            drawing.text = Some(text);
        }
        Ok(json!({"drawing": drawing}))
    })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct DrawingTarget {
    drawing_id: String,
}

fn drawing_delete(context: &ToolContext, raw: Value) -> Result<Value, ToolError> {
    let request: DrawingTarget = input(raw)?;
    context.chart().update(|state| {
        let index = state
            .drawings
            .iter()
            .position(|drawing| drawing.id == request.drawing_id)
            .ok_or_else(|| unknown_drawing(state))?;
        let drawing = state.drawings.remove(index);
        Ok(json!({"deletedDrawingId": drawing.id}))
    })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct DrawingsCopy {
    source_pane_id: String,
    target_pane_id: String,
    drawing_ids: Option<Vec<String>>,
}

fn drawings_copy(context: &ToolContext, raw: Value) -> Result<Value, ToolError> {
    let request: DrawingsCopy = input(raw)?;
    context.chart().update(|state| {
        let source = state.panes[pane_index(state, &request.source_pane_id)?]
            .id
            .clone();
        let target = state.panes[pane_index(state, &request.target_pane_id)?]
            .id
            .clone();
        let on_source: Vec<Drawing> = state
            .drawings
            .iter()
            .filter(|drawing| drawing.pane_id == source)
            .cloned()
            .collect();
        let chosen: Vec<Drawing> = match &request.drawing_ids {
            None => on_source,
            Some(ids) => ids
                .iter()
                .map(|id| {
                    on_source
                        .iter()
                        .find(|drawing| &drawing.id == id)
                        .cloned()
                        .ok_or_else(|| {
                            ToolError::domain(
                                "DRAWING_NOT_ON_PANE",
                                "A listed drawing is not on the source pane.",
                                format!(
                                    "Copy drawings of {source}: {}.",
                                    listed(on_source.iter().map(|drawing| drawing.id.as_str()))
                                ),
                            )
                        })
                })
                .collect::<Result<_, _>>()?,
        };
        // One drawing at a time, as the UI copies them; running out of room half-way fails
        // the whole command and the registry rolls the copies made so far back.
        let mut copied = Vec::with_capacity(chosen.len());
        for original in chosen {
            if drawings_on(state, &target) >= DRAWINGS_PER_PANE_MAX {
                return Err(pane_full(&target));
            }
            let copy = Drawing {
                id: state.allocate_id("drawing"),
                pane_id: target.clone(),
                ..original
            };
            copied.push(copy.id.clone());
            state.drawings.push(copy);
        }
        Ok(json!({"copiedDrawingIds": copied}))
    })
}

fn drawings_clear(context: &ToolContext, raw: Value) -> Result<Value, ToolError> {
    let filter: PaneFilter = input(raw)?;
    context.chart().update(|state| {
        if let Some(pane_id) = &filter.pane_id {
            pane_index(state, pane_id)?;
        }
        let before = state.drawings.len();
        state.drawings.retain(|drawing| {
            filter
                .pane_id
                .as_ref()
                .is_some_and(|pane_id| &drawing.pane_id != pane_id)
        });
        Ok(json!({"deletedDrawings": before - state.drawings.len()}))
    })
}
