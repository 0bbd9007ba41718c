//! Broken tool arguments: inputs a schema refuses (wrong types, missing and extra fields,
//! out-of-range values, errors nested in an array's objects), and argument text that is
//! padded, oversized, repeats a key or is not JSON.

use serde_json::{Map, Value, json};

use crate::catalogue::ARGUMENT_BYTES_MAX;
use crate::generate::secrets::token;
use crate::rng::SimRng;

use super::text;

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
    // A member present now.
    let pick = |rng: &mut SimRng, object: &Map<String, Value>| {
        rng.pick_from(object.keys()).cloned().unwrap_or_default()
    };
    for error in 0..errors {
        let present = !object.is_empty();
        match rng.below(4) {
            0 if present => {
                let key = pick(rng, object);
                let wrong = match object[&key] {
                    Value::String(_) => json!(rng.range(10_000_000, 99_999_999)),
                    _ => json!(format!("zq{}", token(rng, 8))),
                };
                object.insert(key, wrong);
            }
            1 if present => {
                let key = pick(rng, object);
                // A property the schema does not describe is judged as the empty schema.
                const UNDESCRIBED: Value = Value::Null;
                let property = properties.get(&key).unwrap_or(&UNDESCRIBED);
                object.insert(key, out_of_range(rng, property));
            }
            2 if present && rng.percent(50) => {
                let key = pick(rng, object);
                object.remove(&key);
            }
            _ => {
                object.insert(format!("unexpected_{error}"), distinctive(rng));
            }
        }
    }
    value
}

/// `valid` with `errors` errors inside the objects of its first array of objects (an unexpected
/// key, or a member of the wrong type), so every error's path is nested (`/anchors/1/price`);
/// `None` when `valid` holds no such array.
pub fn invalid_nested(rng: &mut SimRng, valid: &Value, errors: usize) -> Option<Value> {
    let mut value = valid.clone();
    let items = value
        .as_object_mut()?
        .values_mut()
        .filter_map(Value::as_array_mut)
        .find(|items| !items.is_empty() && items.iter().all(Value::is_object))?;
    for error in 0..errors {
        let position = rng.range_usize(0, items.len() - 1);
        let object = items[position].as_object_mut()?;
        let key = rng.pick_from(object.keys()).cloned();
        match key {
            Some(key) if rng.percent(50) && !object[&key].is_boolean() => {
                object.insert(key, json!(true));
            }
            _ => {
                object.insert(format!("unexpected_{error}"), distinctive(rng));
            }
        }
    }
    Some(value)
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

/// `text` followed by white space up to `bytes` bytes (JSON allows it after a value), or
/// `text` when it is already that long.
pub fn padded(text: &str, bytes: usize) -> String {
    let mut padded = String::with_capacity(bytes.max(text.len()));
    padded.push_str(text);
    padded.push_str(&" ".repeat(bytes.saturating_sub(text.len())));
    padded
}

/// `text` (an object's JSON) with a member `"pad"` of two-byte characters in front, making
/// it exactly `bytes` bytes long, far fewer characters: R3's limit counts bytes. `text` when it
/// is not an object or already that long.
pub fn padded_multibyte(text: &str, bytes: usize) -> String {
    let Some(rest) = text.strip_prefix('{') else {
        return text.to_owned();
    };
    let separator = if rest == "}" { "" } else { "," };
    let frame = "{\"pad\":\"\"".len() + separator.len() + rest.len();
    let Some(filling) = bytes.checked_sub(frame) else {
        return text.to_owned();
    };
    let mut padded = String::with_capacity(bytes);
    padded.push_str("{\"pad\":\"");
    padded.push_str(&"é".repeat(filling / 2));
    padded.push_str(&"x".repeat(filling % 2));
    padded.push('"');
    padded.push_str(separator);
    padded.push_str(rest);
    padded
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

/// Argument text just over the limit of R3 (256 KiB): `text` (an object's JSON) with a padding
/// member in front, written directly (serialising a 256 KiB value would cost more than the
/// run); a text that is not an object's, followed by white space to just over the limit.
pub fn oversized(text: &str) -> String {
    const LIMIT_BYTES: usize = ARGUMENT_BYTES_MAX;
    let Some(rest) = text.strip_prefix('{') else {
        return padded(text, LIMIT_BYTES + 1);
    };
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

/// Argument text that is not JSON: `text` cut in half (at a character's start), `text` with a
/// word after it, or a fixed text in single quotes.
pub fn not_json(rng: &mut SimRng, text: &str) -> String {
    match rng.below(3) {
        0 if text.len() > 2 => {
            let half = (0..=text.len() / 2)
                .rev()
                .find(|&at| text.is_char_boundary(at))
                .unwrap_or(0);
            text[..half].to_owned()
        }
        1 => format!("{text} trailing"),
        _ => "{'symbol': 'AAPL'}".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oversized_arguments_are_json_just_over_the_limit() {
        for valid in [json!({}), json!({"symbol": "AAPL", "period": "daily"})] {
            let text = oversized(&super::text(&valid));
            assert!(
                text.len() > ARGUMENT_BYTES_MAX && text.len() < ARGUMENT_BYTES_MAX + 64,
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
    fn multi_byte_padding_is_exact_in_bytes() {
        for text in ["{}", r#"{"symbol":"AAPL"}"#] {
            for bytes in [
                ARGUMENT_BYTES_MAX - 1,
                ARGUMENT_BYTES_MAX,
                ARGUMENT_BYTES_MAX + 1,
            ] {
                let padded = padded_multibyte(text, bytes);
                assert_eq!(padded.len(), bytes);
                assert!(padded.chars().count() < bytes * 2 / 3);
                assert!(serde_json::from_str::<Value>(&padded).is_ok());
            }
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
