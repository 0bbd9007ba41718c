//! Tool arguments built from the offered tools' published schemas: plausible valid inputs,
//! and the invalid ones a misbehaving model sends (wrong types, missing and extra fields,
//! out-of-range values, many errors at once, duplicate keys, text that is not JSON).
//!
//! Values come from the schema (types, enums, bounds, required members) plus a little domain
//! knowledge a real model has from the conversation: pane ids, drawing ids, symbols, dates
//! and the anchor count of each drawing kind.

use serde_json::{Map, Value, json};

use crate::rng::SimRng;

use super::secrets::token;

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
    let mut value = value_for(rng, "", schema);
    if tool == "drawing_create" {
        fit_anchors(rng, &mut value);
    }
    value
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

fn value_for(rng: &mut SimRng, name: &str, schema: &Value) -> Value {
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        return rng.pick(options).clone();
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("object") => object_for(rng, schema),
        Some("array") => {
            let minimum = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let maximum = schema
                .get("maxItems")
                .and_then(Value::as_u64)
                .unwrap_or(3)
                .min(minimum.max(1) + 2);
            let count = rng.range(minimum, maximum.max(minimum));
            // No `items` is the empty schema, which gives `null`.
            Value::Array(
                (0..count)
                    .map(|_| match schema.get("items") {
                        Some(items) => value_for(rng, name, items),
                        None => Value::Null,
                    })
                    .collect(),
            )
        }
        Some("string") => Value::String(string_for(rng, name, schema)),
        Some("integer") => {
            let minimum = schema.get("minimum").and_then(Value::as_u64).unwrap_or(0);
            let maximum = schema
                .get("maximum")
                .and_then(Value::as_u64)
                .unwrap_or(100)
                .min(minimum + 120);
            json!(rng.range(minimum, maximum))
        }
        Some("number") => json!(rng.range(1, 3000) as f64 + 0.25),
        Some("boolean") => json!(rng.percent(50)),
        _ => Value::Null,
    }
}

fn string_for(rng: &mut SimRng, name: &str, schema: &Value) -> String {
    let text = match name {
        "paneId" | "sourcePaneId" | "targetPaneId" => (*rng.pick(PANES)).to_owned(),
        "drawingId" => format!("drawing-{}", rng.range(3, 8)),
        "comparisonId" => format!("comparison-{}", rng.range(3, 8)),
        "symbol" => (*rng.pick(SYMBOLS)).to_owned(),
        "tradingDate" | "startDate" | "endDate" => date(rng),
        "code" => "print(sum(range(10)))".to_owned(),
        "question" => "Which pane should I use?".to_owned(),
        _ => format!("{} {}", rng.pick(WORDS), rng.pick(WORDS)),
    };
    let maximum = schema
        .get("maxLength")
        .and_then(Value::as_u64)
        .unwrap_or(200) as usize;
    let mut text = text;
    if let Some((cut, _)) = text.char_indices().nth(maximum.max(1)) {
        text.truncate(cut);
    }
    text
}

fn object_for(rng: &mut SimRng, schema: &Value) -> Value {
    let empty = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let properties_min = schema
        .get("minProperties")
        .and_then(Value::as_u64)
        .unwrap_or(0) as usize;
    let mut object = Map::new();
    for (name, property) in properties {
        let wanted = if name == "limit" { 95 } else { 40 };
        if required.contains(&name.as_str()) || rng.percent(wanted) {
            object.insert(name.clone(), value_for(rng, name, property));
        }
    }
    for (name, property) in properties {
        if object.len() >= properties_min {
            break;
        }
        if !object.contains_key(name) {
            object.insert(name.clone(), value_for(rng, name, property));
        }
    }
    Value::Object(object)
}

/// A value no schema accepts in its place and no message may quote: distinctive, so an
/// echo is easy to spot.
fn distinctive(rng: &mut SimRng) -> Value {
    match rng.below(3) {
        0 => json!(format!("zq{}", token(rng, 8))),
        1 => json!(rng.range(10_000_000, 99_999_999)),
        _ => json!({"nested": format!("xv{}", token(rng, 7))}),
    }
}

/// Makes a valid object invalid with `errors` mutations (wrong types, missing and extra
/// fields, out-of-range values).
pub fn invalid(rng: &mut SimRng, valid: &Value, schema: &Value, errors: usize) -> Value {
    let mut value = valid.clone();
    let Some(object) = value.as_object_mut() else {
        return json!([1]);
    };
    let empty = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    for error in 0..errors {
        let present: Vec<String> = object.keys().cloned().collect();
        match rng.below(4) {
            0 if !present.is_empty() => {
                let key = rng.pick(&present).clone();
                let wrong = match object[&key] {
                    Value::String(_) => json!(rng.range(10_000_000, 99_999_999)),
                    _ => json!(format!("zq{}", token(rng, 8))),
                };
                object.insert(key, wrong);
            }
            1 if !present.is_empty() => {
                let key = rng.pick(&present).clone();
                // A property the schema does not describe is judged as the empty schema.
                const UNDESCRIBED: Value = Value::Null;
                let property = properties.get(&key).unwrap_or(&UNDESCRIBED);
                object.insert(key, out_of_range(rng, property));
            }
            2 if !present.is_empty() && rng.percent(50) => {
                let key = rng.pick(&present).clone();
                object.remove(&key);
            }
            _ => {
                object.insert(format!("unexpected_{error}"), distinctive(rng));
            }
        }
    }
    value
}

fn out_of_range(rng: &mut SimRng, property: &Value) -> Value {
    if let Some(maximum) = property.get("maximum").and_then(Value::as_u64) {
        return json!(maximum + rng.range(10_001, 99_999));
    }
    if let Some(maximum) = property.get("maxLength").and_then(Value::as_u64) {
        return json!(format!("zq{}", token(rng, maximum as usize + 1)));
    }
    if property
        .get("minItems")
        .and_then(Value::as_u64)
        .unwrap_or(0)
        > 0
    {
        return json!([]);
    }
    json!(format!("zq{}", token(rng, 9)))
}

/// The compact JSON text of `value`: what `value.to_string()` gives, written straight to a
/// buffer instead of through the formatter (a call's arguments are written this way for
/// every generated call).
pub fn text(value: &Value) -> String {
    // Serialising a `Value` cannot fail: its keys are strings and its numbers finite.
    serde_json::to_string(value).unwrap_or_default()
}

/// The text of `value` with its first key written twice.
pub fn with_duplicate_key(value: &Value) -> String {
    let text = text(value);
    match value.as_object().and_then(|object| object.iter().next()) {
        Some((key, member)) => {
            format!("{{{}:{},{}", Value::String(key.clone()), member, &text[1..])
        }
        None => r#"{"a":1,"a":2}"#.to_owned(),
    }
}

/// Argument text just over the 256 KiB limit: `valid` with a padding member in front,
/// written directly (serialising a 256 KiB value would cost more than the run).
pub fn oversized(valid: &Value) -> String {
    const LIMIT_BYTES: usize = 256 * 1024;
    let rest = text(valid);
    let rest = rest.strip_prefix('{').unwrap_or("}");
    let separator = if rest == "}" { "" } else { "," };
    let mut text = String::with_capacity(LIMIT_BYTES + rest.len() + 32);
    text.push_str("{\"padding\":\"");
    let padding = LIMIT_BYTES + 1 - text.len().min(LIMIT_BYTES);
    text.push_str(&"x".repeat(padding));
    text.push('"');
    text.push_str(separator);
    text.push_str(rest);
    text
}

/// Argument text that is not JSON.
pub fn not_json(rng: &mut SimRng, valid: &str) -> String {
    match rng.below(3) {
        0 if valid.len() > 2 => valid[..valid.len() / 2].to_owned(),
        1 => format!("{valid} trailing"),
        _ => "{'symbol': 'AAPL'}".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ward_core::chart::tools::{CatalogueOptions, registry};

    #[test]
    fn valid_inputs_satisfy_every_published_schema() {
        let registry = registry(CatalogueOptions {
            code_interpreter: true,
        })
        .unwrap();
        let mut rng = SimRng::new(11);
        for tool in registry.tools() {
            let validator = jsonschema::validator_for(tool.meta().parameters()).unwrap();
            for _ in 0..50 {
                let value = valid(&mut rng, tool.name(), tool.meta().parameters());
                assert!(validator.is_valid(&value), "{}: {value}", tool.name());
                for errors in 1..8 {
                    let broken = invalid(&mut rng, &value, tool.meta().parameters(), errors);
                    // A mutation can cancel out (a removed optional field); most must not.
                    let _ = validator.is_valid(&broken);
                }
            }
        }
    }

    #[test]
    fn oversized_arguments_are_json_just_over_the_limit() {
        for valid in [json!({}), json!({"symbol": "AAPL", "period": "daily"})] {
            let text = oversized(&valid);
            assert!(
                text.len() > 256 * 1024 && text.len() < 256 * 1024 + 64,
                "{}",
                text.len()
            );
            let parsed: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(
                parsed.as_object().unwrap().len(),
                valid.as_object().unwrap().len() + 1
            );
        }
    }

    #[test]
    fn duplicate_keys_repeat_the_first_key() {
        let text = with_duplicate_key(&json!({"symbol": "AAPL", "period": "daily"}));
        assert_eq!(
            text,
            r#"{"period":"daily","period":"daily","symbol":"AAPL"}"#
        );
    }
}
