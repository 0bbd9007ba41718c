//! Tool arguments built from the offered tools' published schemas: plausible valid inputs,
//! and the invalid ones a misbehaving model sends (wrong types, missing and extra fields,
//! out-of-range values, many errors at once, duplicate keys, text that is not JSON).
//!
//! Values come from the schema (types, enums, bounds, required members) plus a little domain
//! knowledge a real model has from the conversation: pane ids, drawing ids, symbols, dates
//! and the anchor count of each drawing kind.
//!
//! This file builds the valid inputs; `broken.rs` builds the invalid ones and the argument
//! texts that are padded, oversized, repeat a key or are not JSON (re-exported here).

mod bounds;
mod broken;

use serde_json::{Map, Value, json};

use crate::rng::SimRng;

pub use bounds::{at_bounds, repeated_key};
pub use broken::{
    invalid, invalid_nested, not_json, oversized, padded, padded_multibyte, with_duplicate_key,
};

const PANES: &[&str] = &["main", "pane-1", "pane-2", "main", "pane-1"];
const SYMBOLS: &[&str] = &[
    "600519.SH",
    "AAPL",
    "000001.SZ",
    "TSLA",
    "0700.HK",
    "BTCUSDT",
    "NVDA",
];
const WORDS: &[&str] = &[
    "moutai", "earnings", "trend", "support", "volume", "breakout", "rates", "dividend", "outlook",
];

/// A valid input for a tool with `schema`, as a JSON value.
pub fn valid(rng: &mut SimRng, tool: &str, schema: &Value) -> Value {
    Arguments::compile(tool, schema).valid(rng)
}

/// How to build a tool's valid input, worked out once from its published schema: the
/// generator makes several inputs per run, and reading the schema's members by name for each
/// value would cost more than building the value.
#[derive(Clone, Debug)]
pub struct Arguments {
    shape: Shape,
    /// `drawing_create`: the anchor count follows the drawing kind.
    fits_anchors: bool,
}

impl Arguments {
    /// The plan of `tool`'s input with `schema`.
    pub fn compile(tool: &str, schema: &Value) -> Arguments {
        Arguments {
            shape: Shape::compile("", schema),
            fits_anchors: tool == "drawing_create",
        }
    }

    /// A valid input.
    pub fn valid(&self, rng: &mut SimRng) -> Value {
        let mut value = self.shape.value(rng);
        if self.fits_anchors {
            fit_anchors(rng, &mut value);
        }
        value
    }
}

/// A schema as the generator reads it. Each value is drawn as the schema reads: `enum` first,
/// then `type` (a missing or non-string `type` gives `null`).
#[derive(Clone, Debug)]
enum Shape {
    Enum(Vec<Value>),
    Object {
        /// In the schema's key order.
        properties: Vec<Property>,
        properties_min: usize,
    },
    Array {
        minimum: u64,
        maximum: u64,
        /// `None`: no `items`, the empty schema, which gives `null`.
        items: Option<Box<Shape>>,
    },
    String {
        kind: Text,
        length_max: usize,
    },
    Integer {
        minimum: u64,
        maximum: u64,
    },
    Number,
    Boolean,
    Null,
}

#[derive(Clone, Debug)]
struct Property {
    name: String,
    shape: Shape,
    required: bool,
    /// Percent chance that an optional property is given.
    wanted: u64,
}

/// What a string holds, by the name of the member it stands for.
#[derive(Clone, Copy, Debug)]
enum Text {
    Pane,
    Drawing,
    Comparison,
    Symbol,
    Date,
    Code,
    Question,
    Words,
}

impl Text {
    fn for_member(name: &str) -> Text {
        match name {
            "paneId" | "sourcePaneId" | "targetPaneId" => Text::Pane,
            "drawingId" => Text::Drawing,
            "comparisonId" => Text::Comparison,
            "symbol" => Text::Symbol,
            "tradingDate" | "startDate" | "endDate" => Text::Date,
            "code" => Text::Code,
            "question" => Text::Question,
            _ => Text::Words,
        }
    }

    fn draw(self, rng: &mut SimRng) -> String {
        match self {
            Text::Pane => (*rng.pick(PANES)).to_owned(),
            Text::Drawing => format!("drawing-{}", rng.range(3, 8)),
            Text::Comparison => format!("comparison-{}", rng.range(3, 8)),
            Text::Symbol => (*rng.pick(SYMBOLS)).to_owned(),
            Text::Date => date(rng),
            Text::Code => "print(sum(range(10)))".to_owned(),
            Text::Question => "Which pane should I use?".to_owned(),
            Text::Words => {
                let (first, second) = (*rng.pick(WORDS), *rng.pick(WORDS));
                let mut text = String::with_capacity(first.len() + 1 + second.len());
                text.push_str(first);
                text.push(' ');
                text.push_str(second);
                text
            }
        }
    }
}

impl Shape {
    /// The shape of `schema`, standing for member `name` (`""` at the top).
    fn compile(name: &str, schema: &Value) -> Shape {
        if let Some(options) = schema.get("enum").and_then(Value::as_array) {
            return Shape::Enum(options.clone());
        }
        let bound = |key: &str| schema.get(key).and_then(Value::as_u64);
        match schema.get("type").and_then(Value::as_str) {
            Some("object") => {
                let required: Vec<&str> = schema
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|names| names.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let properties = schema
                    .get("properties")
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                    .map(|(name, property)| Property {
                        name: name.clone(),
                        shape: Shape::compile(name, property),
                        required: required.contains(&name.as_str()),
                        wanted: if name == "limit" { 95 } else { 40 },
                    })
                    .collect();
                Shape::Object {
                    properties,
                    properties_min: bound("minProperties").unwrap_or(0) as usize,
                }
            }
            Some("array") => {
                let minimum = bound("minItems").unwrap_or(0);
                let maximum = bound("maxItems").unwrap_or(3).min(minimum.max(1) + 2);
                Shape::Array {
                    minimum,
                    maximum: maximum.max(minimum),
                    items: schema
                        .get("items")
                        .map(|items| Box::new(Shape::compile(name, items))),
                }
            }
            Some("string") => Shape::String {
                kind: Text::for_member(name),
                length_max: bound("maxLength").unwrap_or(200) as usize,
            },
            Some("integer") => {
                let minimum = bound("minimum").unwrap_or(0);
                Shape::Integer {
                    minimum,
                    maximum: bound("maximum").unwrap_or(100).min(minimum + 120),
                }
            }
            Some("number") => Shape::Number,
            Some("boolean") => Shape::Boolean,
            _ => Shape::Null,
        }
    }

    fn value(&self, rng: &mut SimRng) -> Value {
        match self {
            Shape::Enum(options) => rng.pick(options).clone(),
            Shape::Object {
                properties,
                properties_min,
            } => {
                let mut object = Map::new();
                for property in properties {
                    if property.required || rng.percent(property.wanted) {
                        object.insert(property.name.clone(), property.shape.value(rng));
                    }
                }
                for property in properties {
                    if object.len() >= *properties_min {
                        break;
                    }
                    if !object.contains_key(&property.name) {
                        object.insert(property.name.clone(), property.shape.value(rng));
                    }
                }
                Value::Object(object)
            }
            Shape::Array {
                minimum,
                maximum,
                items,
            } => {
                let count = rng.range(*minimum, *maximum);
                Value::Array(
                    (0..count)
                        .map(|_| match items {
                            Some(items) => items.value(rng),
                            None => Value::Null,
                        })
                        .collect(),
                )
            }
            Shape::String { kind, length_max } => {
                let mut text = kind.draw(rng);
                if let Some((cut, _)) = text.char_indices().nth((*length_max).max(1)) {
                    text.truncate(cut);
                }
                Value::String(text)
            }
            Shape::Integer { minimum, maximum } => Value::from(rng.range(*minimum, *maximum)),
            Shape::Number => Value::from(rng.range(1, 3000) as f64 + 0.25),
            Shape::Boolean => Value::Bool(rng.percent(50)),
            Shape::Null => Value::Null,
        }
    }
}

/// Anchor counts by drawing kind, as the tool's description states them.
fn fit_anchors(rng: &mut SimRng, value: &mut Value) {
    let count = match value.get("kind").and_then(Value::as_str) {
        Some("horizontal-line" | "horizontal-ray" | "vertical-line" | "text") => 1,
        Some("triangle" | "parallel-channel" | "fib-extension") => 3,
        _ => 2,
    };
    let anchors: Vec<Value> = (0..count)
        .map(|_| json!({"price": rng.range(10, 3000)}))
        .collect();
    value["anchors"] = Value::Array(anchors);
    if value.get("kind").and_then(Value::as_str) == Some("text") && value.get("text").is_none() {
        value["text"] = json!("support zone");
    }
}

fn date(rng: &mut SimRng) -> String {
    // Weekdays of 2025-06, inside the loaded range.
    let day = *rng.pick(&[2, 3, 4, 5, 6, 9, 10, 11, 12, 13, 16, 17, 18, 19, 20]);
    format!("2025-06-{day:02}")
}

/// The compact JSON text of `value`: what `value.to_string()` gives, written straight to a
/// buffer instead of through the formatter (a call's arguments are written this way for
/// every generated call).
pub fn text(value: &Value) -> String {
    // Serialising a `Value` cannot fail: its keys are strings and its numbers finite.
    serde_json::to_string(value).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ward_core::chart::tools::{CatalogueOptions, registry};

    #[test]
    fn valid_inputs_satisfy_every_published_schema_and_broken_ones_mostly_do_not() {
        let registry = registry(CatalogueOptions {
            code_interpreter: true,
        })
        .unwrap();
        let mut rng = SimRng::new(11);
        let (mut broken_count, mut refused) = (0, 0);
        for tool in registry.tools() {
            let validator = jsonschema::validator_for(tool.meta().parameters()).unwrap();
            for _ in 0..50 {
                let value = valid(&mut rng, tool.name(), tool.meta().parameters());
                assert!(validator.is_valid(&value), "{}: {value}", tool.name());
                for errors in 1..8 {
                    let broken = invalid(&mut rng, &value, tool.meta().parameters(), errors);
                    let accepted = validator.is_valid(&broken);
                    // Every schema refuses members it does not describe.
                    let unexpected = broken.as_object().is_some_and(|members| {
                        members.keys().any(|key| key.starts_with("unexpected_"))
                    });
                    assert!(!(unexpected && accepted), "{}: {broken}", tool.name());
                    broken_count += 1;
                    refused += u32::from(!accepted);
                }
            }
        }
        // A mutation can cancel out (a removed optional member, a free string replaced by
        // another); nearly all must not.
        assert!(
            refused * 100 >= broken_count * 95,
            "{refused} of {broken_count} broken inputs refused"
        );
    }
}
