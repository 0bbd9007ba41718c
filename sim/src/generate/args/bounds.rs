//! Arguments at the schema's edges, at every depth: each keyword of the published schemas
//! met at its bound or one past it (string lengths counted in characters, written with
//! multi-byte characters half the time, so that a runtime counting bytes is caught), errors
//! spread over several nesting levels at once (so the cap of R6 must count across levels), and
//! a key repeated in any object of the input, a property of the schema or not.

use serde_json::{Value, json};

use crate::rng::SimRng;

/// One step of a path into a value.
#[derive(Clone, Debug)]
enum Step {
    Key(String),
    Index(usize),
}

/// Every place of `value` that `schema` describes, with its sub-schema, in pre-order.
fn sites<'s>(
    value: &Value,
    schema: &'s Value,
    path: &mut Vec<Step>,
    into: &mut Vec<(Vec<Step>, &'s Value)>,
) {
    into.push((path.clone(), schema));
    match value {
        Value::Object(members) => {
            let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
                return;
            };
            for (key, member) in members {
                if let Some(sub_schema) = properties.get(key) {
                    path.push(Step::Key(key.clone()));
                    sites(member, sub_schema, path, into);
                    path.pop();
                }
            }
        }
        Value::Array(items) => {
            let Some(sub_schema) = schema.get("items") else {
                return;
            };
            for (index, item) in items.iter().enumerate() {
                path.push(Step::Index(index));
                sites(item, sub_schema, path, into);
                path.pop();
            }
        }
        _ => {}
    }
}

fn at_path<'v>(value: &'v mut Value, path: &[Step]) -> Option<&'v mut Value> {
    path.iter().try_fold(value, |value, step| match step {
        Step::Key(key) => value.get_mut(key.as_str()),
        Step::Index(index) => value.get_mut(*index),
    })
}

/// Text of `characters` characters: ASCII, or a two- or four-byte character repeated.
fn text_of(rng: &mut SimRng, characters: u64) -> String {
    let letter = *rng.pick(&['x', 'é', '𝄞']);
    std::iter::repeat_n(letter, characters as usize).collect()
}

/// Keys a schema does not describe: plain, close to a property's name, holding the pointer's
/// escaped characters, multi-byte.
const STRANGE_KEYS: &[&str] = &["extra", "Symbol", "a/b", "t~1", "名前", "", "limit "];

/// `valid` with `errors` keywords met at their bound or one past it, at places drawn over
/// every nesting level. Some draws stay valid (the bound itself): the verdict must agree.
pub fn at_bounds(rng: &mut SimRng, valid: &Value, schema: &Value, errors: usize) -> Value {
    let mut value = valid.clone();
    for _ in 0..errors {
        let mut found = Vec::new();
        sites(&value, schema, &mut Vec::new(), &mut found);
        let (path, sub_schema) = rng.pick(&found).clone();
        let Some(place) = at_path(&mut value, &path) else {
            continue;
        };
        edge(rng, place, sub_schema);
    }
    value
}

/// Puts `place` at one edge of one keyword of `schema`: the bound, or (three times in four)
/// one past it.
fn edge(rng: &mut SimRng, place: &mut Value, schema: &Value) {
    let past = rng.percent(75);
    let keywords: Vec<&str> = schema
        .as_object()
        .map(|object| object.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let Some(&keyword) = rng.pick_from(keywords.iter()) else {
        return;
    };
    let bound = schema.get(keyword).and_then(Value::as_u64).unwrap_or(0);
    match keyword {
        "type" => *place = wrong_type(rng, schema),
        "enum" => *place = enum_edge(schema, past),
        "minLength" => *place = json!(text_of(rng, bound.saturating_sub(u64::from(past)))),
        "maxLength" => *place = json!(text_of(rng, bound + u64::from(past))),
        "pattern" => *place = json!(if past { "2025-6-01" } else { "2025-06-01" }),
        "minimum" | "maximum" | "exclusiveMinimum" => {
            *place = number_edge(schema, keyword, past);
        }
        "minItems" | "maxItems" => items_edge(place, keyword, bound as usize, past),
        "minProperties" => {
            let Some(members) = place.as_object_mut() else {
                return;
            };
            let keep = (bound as usize).saturating_sub(usize::from(past));
            let keys: Vec<String> = members.keys().skip(keep).cloned().collect();
            for key in keys {
                members.remove(&key);
            }
        }
        "required" => {
            let required = schema["required"].as_array().cloned().unwrap_or_default();
            if let (Some(members), Some(name)) =
                (place.as_object_mut(), rng.pick_from(required.iter()))
            {
                members.remove(name.as_str().unwrap_or_default());
            }
        }
        "additionalProperties" | "properties" => {
            if let Some(members) = place.as_object_mut() {
                members.insert((*rng.pick(STRANGE_KEYS)).to_owned(), json!(1));
            }
        }
        _ => {}
    }
}

/// A value of another type than `schema`'s.
fn wrong_type(rng: &mut SimRng, schema: &Value) -> Value {
    match schema["type"].as_str() {
        Some("string") => json!(7),
        // 0.5 and -1.5 are below every minimum of the catalogue too: two errors at one
        // value, in the documented order.
        Some("integer") => json!(*rng.pick(&[1.5, 2.0, 0.5, -1.5])),
        Some("number") => json!("1"),
        Some("boolean") => json!("true"),
        Some("array") => json!({}),
        Some("object") => json!([]),
        _ => Value::Null,
    }
}

/// `schema`'s first allowed value, or past it, one that differs only a little.
fn enum_edge(schema: &Value, past: bool) -> Value {
    let first = schema["enum"].get(0).cloned().unwrap_or(Value::Null);
    match first {
        Value::String(text) if past => json!(text.to_uppercase() + "x"),
        Value::Number(number) if past => json!(number.as_f64().unwrap_or(0.0) + 0.5),
        other => other,
    }
}

/// A number at `keyword`'s bound (just inside an exclusive one), or one step past it (1 for
/// an integer, 0.5 otherwise).
fn number_edge(schema: &Value, keyword: &str, past: bool) -> Value {
    let limit = schema[keyword].as_f64().unwrap_or(0.0);
    let integer = schema["type"] == "integer";
    let step = if integer { 1.0 } else { 0.5 };
    let beyond = match keyword {
        "maximum" => limit + step,
        "minimum" => limit - step,
        _ => limit,
    };
    let at = match keyword {
        "exclusiveMinimum" => limit + step,
        _ => limit,
    };
    let number = if past { beyond } else { at };
    if integer || number.fract() == 0.0 && limit.fract() == 0.0 {
        json!(number as i64)
    } else {
        json!(number)
    }
}

/// The array `place` at `keyword`'s bound of `limit` items, or one past it.
fn items_edge(place: &mut Value, keyword: &str, limit: usize, past: bool) {
    let Some(items) = place.as_array_mut() else {
        return;
    };
    let length = match keyword {
        "minItems" => limit.saturating_sub(usize::from(past)),
        _ => limit + usize::from(past),
    };
    let filler = items.first().cloned().unwrap_or(json!("x"));
    items.resize(length, filler);
}

/// The text of `valid` with one key written twice in one of its objects, at any depth: a
/// member it has (a property of the schema) or a key the schema does not know, the second
/// time at a drawn place among the members.
pub fn repeated_key(rng: &mut SimRng, valid: &Value) -> String {
    let mut objects = Vec::new();
    object_paths(valid, &mut Vec::new(), &mut objects);
    let Some(target) = rng.pick_from(objects.iter()).cloned() else {
        return r#"{"a":1,"a":2}"#.to_owned();
    };
    let mut value = valid.clone();
    let Some(Value::Object(members)) = at_path(&mut value, &target) else {
        return r#"{"a":1,"a":2}"#.to_owned();
    };
    let (key, member) = match rng.pick_from(members.iter()) {
        Some((key, member)) if rng.percent(60) => (key.clone(), member.clone()),
        _ => {
            let key = (*rng.pick(STRANGE_KEYS)).to_owned();
            members.insert(key.clone(), json!(1));
            (key, json!(2))
        }
    };
    let position = rng.range_usize(0, members.len());
    let mut text = String::new();
    write(&value, &target, &(key, member, position), &mut text);
    text
}

fn object_paths(value: &Value, path: &mut Vec<Step>, into: &mut Vec<Vec<Step>>) {
    match value {
        Value::Object(members) => {
            into.push(path.clone());
            for (key, member) in members {
                path.push(Step::Key(key.clone()));
                object_paths(member, path, into);
                path.pop();
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                path.push(Step::Index(index));
                object_paths(item, path, into);
                path.pop();
            }
        }
        _ => {}
    }
}

/// Writes `value` as JSON, with the object at `target` given the extra member `(key, member)`
/// before its member number `position`.
fn write(value: &Value, target: &[Step], extra: &(String, Value, usize), out: &mut String) {
    match value {
        Value::Object(members) => {
            let here = target.is_empty();
            let mut entries: Vec<(String, &Value)> = members
                .iter()
                .map(|(key, member)| (key.clone(), member))
                .collect();
            if here {
                let at = extra.2.min(entries.len());
                entries.insert(at, (extra.0.clone(), &extra.1));
            }
            out.push('{');
            for (index, (key, member)) in entries.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                match target.first() {
                    Some(Step::Key(step)) if !here && *step == key => {
                        write(member, &target[1..], extra, out)
                    }
                    _ => out.push_str(&member.to_string()),
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                match target.first() {
                    Some(Step::Index(step)) if *step == index => {
                        write(item, &target[1..], extra, out)
                    }
                    _ => out.push_str(&item.to_string()),
                }
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// An object of `value`'s members without the map type: used by tests.
#[cfg(test)]
fn keys(value: &Value) -> Vec<&str> {
    value
        .as_object()
        .map(serde_json::Map::keys)
        .into_iter()
        .flatten()
        .map(String::as_str)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_key_stands_twice_in_one_object_at_any_depth() {
        let valid = json!({"anchors": [{"price": 1.5}, {"price": 2.5}], "kind": "line"});
        let mut depths = [0; 3];
        for seed in 0..200 {
            let mut rng = SimRng::new(seed);
            let text = repeated_key(&mut rng, &valid);
            assert!(serde_json::from_str::<Value>(&text).is_ok(), "{text}");
            assert!(crate::catalogue::strict_parse(&text).is_none(), "{text}");
            let depth = if text.contains(r#"{"price""#) && text.matches("price").count() == 3 {
                2
            } else {
                0
            };
            depths[depth] += 1;
        }
        assert!(depths[0] > 0 && depths[2] > 0, "{depths:?}");
    }

    #[test]
    fn bounds_are_met_at_every_depth() {
        let schema = json!({"type": "object", "additionalProperties": false, "required": ["anchors"],
            "properties": {"anchors": {"type": "array", "minItems": 1, "maxItems": 3, "items": {
                "type": "object", "properties": {"price": {"type": "number", "maximum": 9}}}}}});
        let valid = json!({"anchors": [{"price": 1.5}]});
        let mut nested = 0;
        for seed in 0..300 {
            let mut rng = SimRng::new(seed);
            let broken = at_bounds(&mut rng, &valid, &schema, 2);
            nested += usize::from(broken["anchors"][0]["price"] != json!(1.5));
            assert!(keys(&broken).len() <= 3);
        }
        assert!(nested > 20, "{nested}");
    }
}
