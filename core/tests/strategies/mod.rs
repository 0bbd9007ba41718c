//! Shared strategies of the property suites: JSON derived from a tool's own `parameters`
//! schema, and the configuration every suite runs with.
//!
//! # Schema-derived inputs
//!
//! [`valid`] builds values that satisfy a schema of the subset ward's tools use (`type`,
//! `enum`, `properties`, `required`, `additionalProperties`, `minProperties`, `items`,
//! `minItems`/`maxItems`, `minLength`/`maxLength`, `pattern`, `minimum`/`maximum`,
//! `exclusiveMinimum`), biased toward the bounds: exact minimum and maximum lengths, the
//! largest and smallest numbers allowed, integers spelled as `5.0`.
//!
//! [`near_valid`] starts from such a value and applies one to four [`Mutation`]s, each
//! aimed at a node of the value chosen by index: a wrong type, a removed member, a missing
//! required property, an unexpected key (including `""`, `a/b` and `~`, which JSON Pointer
//! escapes), a value just outside a bound the schema states, deep nesting, a huge array, or
//! an argument text over the 256 KiB limit. Mutations are generated independently of the
//! value they are applied to, so proptest shrinks them like any other data.
//!
//! # Configuration
//!
//! [`config`] gives a suite its default case count, overridden by `PROPTEST_CASES`, and
//! persists failures in `core/proptest-regressions/<suite>.txt` (proptest's default location
//! cannot be derived for files under `tests/`), where they are committed and replayed first.
//!
//! # Seeded bugs
//!
//! With the `fault-injection` feature (on in `cargo test --workspace`, which builds the
//! simulator too), each suite also runs its own properties against the core with the seeded
//! bugs it is meant to catch, through [`fails_somewhere`], and requires them to fail: a
//! property that cannot fail is a defect.
#![allow(dead_code)]

use std::collections::BTreeMap;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, FileFailurePersistence, TestCaseError, TestRng, TestRunner};
use serde_json::{Map, Value, json};

/// The absolute path of a suite's regression file, `core/proptest-regressions/<name>.txt`.
macro_rules! regressions {
    ($name:literal) => {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/proptest-regressions/",
            $name,
            ".txt"
        )
    };
}
pub(crate) use regressions;

/// `cases` by default, or `PROPTEST_CASES` when set; failures persisted in `regressions`.
pub fn config(cases: u32, regressions: &'static str) -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(cases);
    Config {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(regressions))),
        ..Config::default()
    }
}

/// Whether `property` fails on some of `cases` cases of `strategy`: how a suite shows that it
/// catches a seeded bug (SPEC §11). A fixed seed, no persistence, no shrinking.
pub fn fails_somewhere<S: Strategy>(
    cases: u32,
    strategy: S,
    property: impl Fn(S::Value) -> Result<(), TestCaseError>,
) -> bool {
    let config = Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 0,
        ..Config::default()
    };
    let rng = TestRng::deterministic_rng(config.rng_algorithm);
    TestRunner::new_with_rng(config, rng)
        .run(&strategy, property)
        .is_err()
}

/// The date pattern of ward's schemas.
pub const DATE_PATTERN: &str = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$";

/// Argument text larger than this is refused before parsing (R3, `PAYLOAD_TOO_LARGE`).
pub const OVERSIZED_CHARS: usize = 256 * 1024 + 1;

// ---------------------------------------------------------------------------------------------
// Valid values.

/// Values that satisfy `schema`, biased toward its bounds.
pub fn valid(schema: &Value) -> BoxedStrategy<Value> {
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        return proptest::sample::select(options.clone()).boxed();
    }
    if let Some(constant) = schema.get("const") {
        return Just(constant.clone()).boxed();
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("object") => valid_object(schema),
        Some("array") => valid_array(schema),
        Some("string") => valid_string(schema),
        Some("integer") => valid_integer(schema),
        Some("number") => valid_number(schema),
        Some("boolean") => any::<bool>().prop_map(Value::Bool).boxed(),
        Some("null") => Just(Value::Null).boxed(),
        _ => arbitrary_json(),
    }
}

fn properties_of(schema: &Value) -> BTreeMap<String, Value> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| {
            properties
                .iter()
                .map(|(key, value)| (key.clone(), value.clone()))
                .collect()
        })
        .unwrap_or_default()
}

fn required_of(schema: &Value) -> Vec<String> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn bound(schema: &Value, keyword: &str) -> Option<f64> {
    schema.get(keyword).and_then(Value::as_f64)
}

fn count_bound(schema: &Value, keyword: &str) -> Option<usize> {
    schema
        .get(keyword)
        .and_then(Value::as_u64)
        .map(|count| count as usize)
}

fn valid_object(schema: &Value) -> BoxedStrategy<Value> {
    let properties = properties_of(schema);
    let required = required_of(schema);
    let optional: Vec<String> = properties
        .keys()
        .filter(|key| !required.contains(key))
        .cloned()
        .collect();
    let properties_min = count_bound(schema, "minProperties").unwrap_or(0);
    let optional_min = properties_min
        .saturating_sub(required.len())
        .min(optional.len());
    let members: BTreeMap<String, BoxedStrategy<Value>> = properties
        .iter()
        .map(|(key, sub_schema)| (key.clone(), valid(sub_schema)))
        .collect();
    let optional_count = optional.len();
    proptest::sample::subsequence(optional, optional_min..=optional_count)
        .prop_flat_map(move |chosen| {
            let keys: Vec<String> = required.iter().chain(chosen.iter()).cloned().collect();
            let values: Vec<BoxedStrategy<Value>> =
                keys.iter().map(|key| members[key].clone()).collect();
            values.prop_map(move |values| {
                Value::Object(keys.iter().cloned().zip(values).collect::<Map<_, _>>())
            })
        })
        .boxed()
}

fn valid_array(schema: &Value) -> BoxedStrategy<Value> {
    let items_min = count_bound(schema, "minItems").unwrap_or(0);
    let items_max = count_bound(schema, "maxItems").unwrap_or(items_min + 4);
    let items = schema.get("items").map_or_else(arbitrary_json, valid);
    vec(items, items_min..=items_max)
        .prop_map(Value::Array)
        .boxed()
}

/// Characters of generated strings: ASCII, pointer metacharacters, quotes, escapes,
/// multi-byte and invisible characters.
const CHARACTERS: &[char] = &[
    'a', 'b', 'e', 'k', 'q', 'x', 'z', 'A', 'Q', 'Z', '0', '1', '7', '9', ' ', '-', '_', '.', '/',
    '~', '"', '\\', '\n', 'é', 'ß', '市', '場', '\u{200B}', '😀',
];

fn string_of_length(lengths: BoxedStrategy<usize>) -> BoxedStrategy<String> {
    lengths
        .prop_flat_map(|length| vec(proptest::sample::select(CHARACTERS), length))
        .prop_map(|characters| characters.into_iter().collect())
        .boxed()
}

fn valid_string(schema: &Value) -> BoxedStrategy<Value> {
    if schema.get("pattern").and_then(Value::as_str) == Some(DATE_PATTERN) {
        return (0u32..10_000, 0u32..100, 0u32..100)
            .prop_map(|(year, month, day)| json!(format!("{year:04}-{month:02}-{day:02}")))
            .boxed();
    }
    let length_min = count_bound(schema, "minLength").unwrap_or(0);
    let length_max = count_bound(schema, "maxLength").unwrap_or(length_min + 16);
    let lengths = prop_oneof![
        6 => length_min..=length_max.min(length_min + 12),
        1 => Just(length_min),
        1 => Just(length_max),
    ]
    .boxed();
    string_of_length(lengths).prop_map(Value::String).boxed()
}

fn integer_range(schema: &Value) -> (i64, i64) {
    let minimum = bound(schema, "minimum")
        .or_else(|| bound(schema, "exclusiveMinimum").map(|limit| limit.floor() + 1.0))
        .map_or(-1_000_000, |limit| limit.ceil() as i64);
    let maximum = bound(schema, "maximum")
        .or_else(|| bound(schema, "exclusiveMaximum").map(|limit| limit.ceil() - 1.0))
        .map_or(1_000_000, |limit| limit.floor() as i64);
    (minimum, maximum)
}

fn valid_integer(schema: &Value) -> BoxedStrategy<Value> {
    let (minimum, maximum) = integer_range(schema);
    prop_oneof![
        6 => (minimum..=maximum).prop_map(Value::from),
        1 => Just(Value::from(minimum)),
        1 => Just(Value::from(maximum)),
        // JSON Schema counts a number without a fractional part as an integer.
        1 => (minimum..=maximum).prop_map(|integer| Value::from(integer as f64)),
    ]
    .boxed()
}

fn valid_number(schema: &Value) -> BoxedStrategy<Value> {
    let exclusive_minimum = bound(schema, "exclusiveMinimum");
    let minimum = bound(schema, "minimum")
        .or(exclusive_minimum)
        .unwrap_or(-1e6);
    let maximum = bound(schema, "maximum").unwrap_or(1e6);
    let in_range = move |number: &f64| {
        *number <= maximum
            && *number >= minimum
            && exclusive_minimum.is_none_or(|limit| *number > limit)
    };
    prop_oneof![
        4 => (1u32..=200_000).prop_map(|cents| f64::from(cents) / 100.0),
        2 => minimum..maximum,
        1 => Just(maximum),
        1 => Just(minimum + 1e-9),
        1 => Just(1e-300),
    ]
    .prop_filter("within the schema's bounds", in_range)
    .prop_map(Value::from)
    .boxed()
}

// ---------------------------------------------------------------------------------------------
// Arbitrary values.

/// Strings that a message must never quote: distinctive, and never part of a schema.
pub fn marker_string() -> BoxedStrategy<String> {
    prop_oneof![
        "[a-z]{4,12}",
        "sk-[A-Za-z0-9]{16,24}",
        "[A-Z0-9 é市~/]{4,10}",
        "zq[0-9a-f]{6}",
    ]
    .boxed()
}

/// Object keys, including the empty key and keys JSON Pointer must escape.
pub fn key() -> BoxedStrategy<String> {
    prop_oneof![
        4 => "[a-z]{1,10}",
        1 => Just(String::new()),
        1 => Just("a/b".to_owned()),
        1 => Just("~0~1".to_owned()),
        1 => Just("é市".to_owned()),
        1 => Just("paneId".to_owned()),
        1 => Just("unexpected_key".to_owned()),
    ]
    .boxed()
}

/// A scalar of any JSON type.
pub fn scalar() -> BoxedStrategy<Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e12f64..1e12).prop_map(Value::from),
        Just(json!(0.5)),
        Just(json!(-1)),
        marker_string().prop_map(Value::String),
    ]
    .boxed()
}

/// Any JSON value, up to four levels deep.
pub fn arbitrary_json() -> BoxedStrategy<Value> {
    scalar()
        .prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::btree_map(key(), inner, 0..6)
                    .prop_map(|members| Value::Object(members.into_iter().collect())),
            ]
        })
        .boxed()
}

// ---------------------------------------------------------------------------------------------
// Near-valid values.

/// One change that likely breaks a valid value. `node` picks the value it applies to, in
/// pre-order over the value being mutated.
#[derive(Clone, Debug)]
pub enum Mutation {
    /// The node becomes a value of another type.
    WrongType { node: Index, replacement: Value },
    /// The node is removed from its parent.
    Remove { node: Index },
    /// A required property of the nearest object is removed.
    RemoveRequired { node: Index, which: Index },
    /// The nearest object gets a key the schema does not declare.
    AddKey {
        node: Index,
        key: String,
        value: Value,
    },
    /// The node gets a value just outside a bound its schema states.
    Violate { node: Index, which: Index },
    /// The node is wrapped in `depth` arrays and objects.
    Nest { node: Index, depth: usize },
    /// The node becomes an array of `length` copies of `element`.
    Huge {
        node: Index,
        length: usize,
        element: Value,
    },
    /// The node becomes a string whose argument text is over the size limit.
    Oversized { node: Index },
}

pub fn mutation() -> BoxedStrategy<Mutation> {
    prop_oneof![
        12 => (any::<Index>(), arbitrary_json())
            .prop_map(|(node, replacement)| Mutation::WrongType { node, replacement }),
        8 => any::<Index>().prop_map(|node| Mutation::Remove { node }),
        8 => (any::<Index>(), any::<Index>())
            .prop_map(|(node, which)| Mutation::RemoveRequired { node, which }),
        12 => (any::<Index>(), key(), scalar())
            .prop_map(|(node, key, value)| Mutation::AddKey { node, key, value }),
        20 => (any::<Index>(), any::<Index>())
            .prop_map(|(node, which)| Mutation::Violate { node, which }),
        4 => (any::<Index>(), prop_oneof![4 => 1usize..40, 1 => 120usize..140])
            .prop_map(|(node, depth)| Mutation::Nest { node, depth }),
        4 => (any::<Index>(), 100usize..3_000, scalar())
            .prop_map(|(node, length, element)| Mutation::Huge { node, length, element }),
        // Rare: each one costs a string over 256 KiB.
        1 => any::<Index>().prop_map(|node| Mutation::Oversized { node }),
    ]
    .boxed()
}

/// Values of `schema`: valid ones, near-valid ones (a valid value and 1–4 mutations), and
/// arbitrary JSON.
pub fn near_valid(schema: &Value) -> BoxedStrategy<Value> {
    let schema_for_mutation = schema.clone();
    prop_oneof![
        2 => valid(schema),
        7 => (valid(schema), vec(mutation(), 1..=4)).prop_map(move |(value, mutations)| {
            mutate(value, &schema_for_mutation, &mutations)
        }),
        1 => arbitrary_json(),
    ]
    .boxed()
}

/// One step of a JSON Pointer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Segment {
    Key(String),
    Index(usize),
}

/// A node of a value: its path and the sub-schema that governs it, if any.
struct Node {
    path: Vec<Segment>,
    schema: Option<Value>,
}

/// The sub-schema of member `key` of an object governed by `schema`.
pub fn member_schema(schema: &Value, key: &str) -> Option<Value> {
    if let Some(sub_schema) = schema.get("properties").and_then(|p| p.get(key)) {
        return Some(sub_schema.clone());
    }
    schema
        .get("additionalProperties")
        .filter(|additional| additional.is_object())
        .cloned()
}

fn nodes(value: &Value, schema: Option<&Value>, path: &mut Vec<Segment>, out: &mut Vec<Node>) {
    out.push(Node {
        path: path.clone(),
        schema: schema.cloned(),
    });
    match value {
        Value::Object(members) => {
            for (key, member) in members {
                let sub_schema = schema.and_then(|schema| member_schema(schema, key));
                path.push(Segment::Key(key.clone()));
                nodes(member, sub_schema.as_ref(), path, out);
                path.pop();
            }
        }
        Value::Array(items) => {
            let item_schema = schema.and_then(|schema| schema.get("items"));
            for (index, item) in items.iter().enumerate() {
                path.push(Segment::Index(index));
                nodes(item, item_schema, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

fn node_mut<'v>(value: &'v mut Value, path: &[Segment]) -> &'v mut Value {
    path.iter().fold(value, |value, segment| match segment {
        Segment::Key(key) => &mut value[key.as_str()],
        Segment::Index(index) => &mut value[*index],
    })
}

/// Applies `mutations` in order to `value`, governed by `schema`.
pub fn mutate(mut value: Value, schema: &Value, mutations: &[Mutation]) -> Value {
    for mutation in mutations {
        let mut all = Vec::new();
        nodes(&value, Some(schema), &mut Vec::new(), &mut all);
        let pick = |node: &Index| &all[node.index(all.len())];
        match mutation {
            Mutation::WrongType { node, replacement } => {
                *node_mut(&mut value, &pick(node).path) = replacement.clone();
            }
            Mutation::Remove { node } => remove(&mut value, &pick(node).path),
            Mutation::RemoveRequired { node, which } => {
                let node = nearest_object(&value, &all, pick(node));
                let required = node.schema.as_ref().map(required_of).unwrap_or_default();
                if !required.is_empty() {
                    let name = &required[which.index(required.len())];
                    if let Value::Object(members) = node_mut(&mut value, &node.path) {
                        members.remove(name);
                    }
                }
            }
            Mutation::AddKey {
                node,
                key,
                value: member,
            } => {
                let node = nearest_object(&value, &all, pick(node));
                if let Value::Object(members) = node_mut(&mut value, &node.path) {
                    members.insert(key.clone(), member.clone());
                }
            }
            Mutation::Violate { node, which } => {
                let node = pick(node);
                let target = node_mut(&mut value, &node.path);
                let candidates = violations(target, node.schema.as_ref());
                if !candidates.is_empty() {
                    *target = candidates[which.index(candidates.len())].clone();
                }
            }
            Mutation::Nest { node, depth } => {
                let target = node_mut(&mut value, &pick(node).path);
                let mut nested = target.take();
                for level in 0..*depth {
                    nested = if level % 2 == 0 {
                        json!([nested])
                    } else {
                        json!({"k": nested})
                    };
                }
                *target = nested;
            }
            Mutation::Huge {
                node,
                length,
                element,
            } => {
                *node_mut(&mut value, &pick(node).path) =
                    Value::Array(vec![element.clone(); *length]);
            }
            Mutation::Oversized { node } => {
                *node_mut(&mut value, &pick(node).path) = json!("w".repeat(OVERSIZED_CHARS));
            }
        }
    }
    value
}

fn nearest_object<'n>(value: &Value, all: &'n [Node], node: &'n Node) -> &'n Node {
    let mut path = node.path.as_slice();
    loop {
        let here = all
            .iter()
            .find(|candidate| candidate.path == path)
            .expect("every prefix of a node's path is a node");
        let is_object = path
            .iter()
            .try_fold(value, |value, segment| match segment {
                Segment::Key(key) => value.get(key.as_str()),
                Segment::Index(index) => value.get(*index),
            })
            .is_some_and(Value::is_object);
        if is_object || path.is_empty() {
            return here;
        }
        path = &path[..path.len() - 1];
    }
}

fn remove(value: &mut Value, path: &[Segment]) {
    let Some((last, parent)) = path.split_last() else {
        // The root cannot be removed; an absent object is no object at all.
        *value = Value::Null;
        return;
    };
    match (node_mut(value, parent), last) {
        (Value::Object(members), Segment::Key(key)) => {
            members.remove(key);
        }
        (Value::Array(items), Segment::Index(index)) => {
            items.remove(*index);
        }
        _ => {}
    }
}

/// Values just outside the bounds `schema` states for `value`'s place.
fn violations(value: &Value, schema: Option<&Value>) -> Vec<Value> {
    let Some(schema) = schema else {
        return vec![json!({"unexpected": [1, "two"]})];
    };
    let mut out = Vec::new();
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        if let Some(first) = options.first().and_then(Value::as_str) {
            out.push(json!(first.to_uppercase()));
            out.push(json!(format!("{first}x")));
            out.push(json!(format!(" {first}")));
        }
        out.push(json!(""));
        out.push(json!(0));
        out.push(Value::Null);
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("string") => {
            if let Some(length) = count_bound(schema, "minLength").filter(|length| *length > 0) {
                out.push(json!("q".repeat(length - 1)));
            }
            if let Some(length) = count_bound(schema, "maxLength") {
                out.push(json!("w".repeat(length + 1)));
                out.push(json!("市".repeat(length + 1)));
            }
            if schema.get("pattern").is_some() {
                for text in [
                    "2024/01/02",
                    "24-01-02",
                    "2024-01-02\n",
                    "２０２４-01-02",
                    "abcd-ef-gh",
                ] {
                    out.push(json!(text));
                }
            }
            out.push(json!(42));
        }
        Some("integer") => {
            let (minimum, maximum) = integer_range(schema);
            out.push(json!(minimum - 1));
            out.push(json!(maximum + 1));
            out.push(json!(minimum as f64 + 0.5));
            out.push(json!(i64::MAX));
            out.push(json!(u64::MAX));
            out.push(json!(-1e300));
            out.push(json!("12"));
        }
        Some("number") => {
            if let Some(limit) = bound(schema, "exclusiveMinimum") {
                out.push(json!(limit));
                out.push(json!(limit - 1.0));
            }
            if let Some(limit) = bound(schema, "minimum") {
                out.push(json!(limit - 1.0));
            }
            if let Some(limit) = bound(schema, "maximum") {
                out.push(json!(limit * 2.0 + 1.0));
            }
            out.push(json!("1.5"));
        }
        Some("array") => {
            let items = value.as_array().cloned().unwrap_or_default();
            if let Some(count) = count_bound(schema, "minItems").filter(|count| *count > 0) {
                out.push(Value::Array(
                    items.iter().take(count - 1).cloned().collect(),
                ));
            }
            if let Some(count) = count_bound(schema, "maxItems") {
                let filler = items.first().cloned().unwrap_or(Value::Null);
                out.push(Value::Array(vec![filler; count + 1]));
            }
            out.push(json!({"0": items}));
        }
        Some("object") => {
            let members = value.as_object().cloned().unwrap_or_default();
            let required = required_of(schema);
            if let Some(count) = count_bound(schema, "minProperties").filter(|count| *count > 0) {
                let kept: Map<String, Value> = members
                    .iter()
                    .filter(|(key, _)| required.contains(key))
                    .take(count - 1)
                    .map(|(key, member)| (key.clone(), member.clone()))
                    .collect();
                out.push(Value::Object(kept));
            }
            if !required.is_empty() {
                out.push(json!({}));
            }
            out.push(json!([members]));
        }
        Some("boolean") => {
            out.push(json!("true"));
            out.push(json!(1));
        }
        _ => {}
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Reading values.

/// The JSON Pointer of `path`, the root written `/` (R6).
pub fn pointer(path: &[Segment]) -> String {
    if path.is_empty() {
        return "/".to_owned();
    }
    let mut text = String::new();
    for segment in path {
        text.push('/');
        match segment {
            Segment::Key(key) => text.push_str(&key.replace('~', "~0").replace('/', "~1")),
            Segment::Index(index) => text.push_str(&index.to_string()),
        }
    }
    text
}

/// Every value of `value` in pre-order (object members in key order), with its pointer
/// (the root written as the empty string) and its position.
pub fn preorder(value: &Value) -> BTreeMap<String, usize> {
    fn visit(value: &Value, path: &mut Vec<Segment>, out: &mut BTreeMap<String, usize>) {
        let position = out.len();
        let text = if path.is_empty() {
            String::new()
        } else {
            pointer(path)
        };
        out.insert(text, position);
        match value {
            Value::Object(members) => {
                for (key, member) in members {
                    path.push(Segment::Key(key.clone()));
                    visit(member, path, out);
                    path.pop();
                }
            }
            Value::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    path.push(Segment::Index(index));
                    visit(item, path, out);
                    path.pop();
                }
            }
            _ => {}
        }
    }
    let mut out = BTreeMap::new();
    visit(value, &mut Vec::new(), &mut out);
    out
}

/// Every scalar of `value` as text, and every object key: what a message must not quote.
pub fn quotable(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(members) => {
            for (key, member) in members {
                out.push(key.clone());
                quotable(member, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|item| quotable(item, out)),
        Value::String(text) => out.push(text.clone()),
        other => out.push(other.to_string()),
    }
}
