//! The oracles' own copy of the tool catalogue (SPEC §8) and their own compiled schemas.
//!
//! The oracles never ask the runtime what a tool is: they carry the table of the
//! specification here, written out by hand, and compile the published parameter schemas
//! (what `ward tools --json` prints) with `jsonschema` themselves. They carry the SPEC's
//! default limits too ([`DEFAULT_LIMITS`]). If the runtime's metadata or defaults drifted
//! from the specification, the oracles would notice.

use std::collections::BTreeMap;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use ward_core::driver::Limits;
use ward_core::registry::Registry;

/// One row of the SPEC §8 table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The tool's name.
    pub name: &'static str,
    /// `read-only` in the table.
    pub read_only: bool,
    /// `sequential` in the table.
    pub sequential: bool,
    /// Registered only when asked for (`code_interpreter`).
    pub opt_in: bool,
}

const fn read(name: &'static str) -> Entry {
    Entry {
        name,
        read_only: true,
        sequential: false,
        opt_in: false,
    }
}

const fn write(name: &'static str) -> Entry {
    Entry {
        name,
        read_only: false,
        sequential: true,
        opt_in: false,
    }
}

/// The SPEC §8 table, with the extras it expects.
pub const TABLE: &[Entry] = &[
    read("panes_list"),
    read("indicators_query"),
    read("instruments_query_name"),
    read("market_bars_query"),
    read("market_timeshare_query"),
    read("market_timeshare_range_query"),
    read("drawings_list"),
    read("comparisons_list"),
    read("settings_get"),
    read("web_search"),
    Entry {
        name: "ask_user",
        read_only: true,
        sequential: true,
        opt_in: false,
    },
    write("pane_create"),
    write("pane_replace_content"),
    write("panes_clear"),
    write("drawing_create"),
    write("drawing_update"),
    write("drawing_delete"),
    write("drawings_copy"),
    write("drawings_clear"),
    write("comparison_create"),
    write("comparisons_clear"),
    write("settings_update"),
    write("settings_reset"),
    write("pane_update"),
    write("pane_remove"),
    write("pane_move"),
    write("pane_update_content"),
    write("comparison_remove"),
    Entry {
        name: "code_interpreter",
        read_only: false,
        sequential: true,
        opt_in: true,
    },
];

/// The table's rows in name order (worked out once).
pub fn by_name() -> &'static [Entry] {
    static SORTED: std::sync::OnceLock<Vec<Entry>> = std::sync::OnceLock::new();
    SORTED.get_or_init(|| {
        let mut rows = TABLE.to_vec();
        rows.sort_unstable_by_key(|entry| entry.name);
        rows
    })
}

/// The range of each limit of a run (R14: a limit outside its range is refused at start), as
/// (name, smallest, largest). The SPEC states `turns_max`'s (1–20); the others are ward's,
/// from the runtime's documentation: 1–128 calls per batch, a provider timeout of 1 s to
/// 600 s, an inactivity timeout of 1 s to 3600 s, 0–5 retries.
pub const LIMIT_RANGES: [(&str, u64, u64); 5] = [
    ("turns_max", 1, 20),
    ("calls_per_batch_max", 1, 128),
    ("provider_timeout_ms", 1_000, 600_000),
    ("inactivity_timeout_ms", 1_000, 3_600_000),
    ("provider_retries_max", 0, 5),
];

/// The limits of `limits` in [`LIMIT_RANGES`] order.
pub fn limit_values(limits: &Limits) -> [u64; 5] {
    [
        u64::from(limits.turns_max),
        u64::from(limits.calls_per_batch_max),
        limits.provider_timeout_ms,
        limits.inactivity_timeout_ms,
        u64::from(limits.provider_retries_max),
    ]
}

/// The first limit of `limits` outside its range: (name, value, smallest, largest).
pub fn limit_out_of_range(limits: &Limits) -> Option<(&'static str, u64, u64, u64)> {
    LIMIT_RANGES
        .iter()
        .zip(limit_values(limits))
        .find(|((_, low, high), value)| !(low..=high).contains(&value))
        .map(|(&(name, low, high), value)| (name, value, low, high))
}

/// The table's row for `name`.
pub fn entry(name: &str) -> Option<&'static Entry> {
    TABLE.iter().find(|entry| entry.name == name)
}

/// The default limits of a run as the SPEC states them (R18, R19): at most 8 batches, 32
/// calls per batch, a provider request times out after 60 s, the run after 120 s without
/// activity, and a retryable provider error is retried up to 2 times. A scenario's missing
/// limits mean these.
pub const DEFAULT_LIMITS: Limits = Limits {
    turns_max: 8,
    calls_per_batch_max: 32,
    provider_timeout_ms: 60_000,
    inactivity_timeout_ms: 120_000,
    provider_retries_max: 2,
};

/// Whether a registry with or without the opt-in tools registers `name`.
pub fn is_registered(name: &str, code_interpreter: bool) -> bool {
    entry(name).is_some_and(|entry| !entry.opt_in || code_interpreter)
}

/// The oracles' compiled schemas, by tool name.
pub struct Schemas {
    /// The compiled schema and its published text of every tool of the table the registry
    /// registers (and whose schema compiles).
    compiled: BTreeMap<&'static str, (jsonschema::Validator, String)>,
}

impl std::fmt::Debug for Schemas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Schemas")
            .field("tools", &self.compiled.len())
            .finish()
    }
}

impl Schemas {
    /// Compiles every published schema of `registry`.
    pub fn compile(registry: &Registry) -> Schemas {
        let compiled = TABLE
            .iter()
            .filter_map(|entry| {
                let parameters = registry.get(entry.name)?.meta().parameters();
                let validator = jsonschema::validator_for(parameters).ok()?;
                Some((entry.name, (validator, parameters.to_string())))
            })
            .collect();
        Schemas { compiled }
    }

    /// Whether `parsed` (argument text as [`strict_parse`] reads it, R6) is a valid input of
    /// `tool`.
    pub fn accepts_parsed(&self, tool: &str, parsed: Option<&Value>) -> bool {
        match (self.compiled.get(tool), parsed) {
            (Some((validator, _)), Some(value)) => validator.is_valid(value),
            _ => false,
        }
    }

    /// The published schema of `tool`, as JSON text (empty for an unknown tool).
    pub fn published(&self, tool: &str) -> &str {
        self.compiled
            .get(tool)
            .map_or("", |(_, text)| text.as_str())
    }
}

/// Parses argument text as R6 reads it: empty text is `{}`; `None` for text that is not JSON or
/// repeats an object key.
pub fn strict_parse(text: &str) -> Option<Value> {
    if text.trim().is_empty() {
        return Some(Value::Object(Map::new()));
    }
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let value = Strict.deserialize(&mut deserializer).ok()?;
    deserializer.end().ok()?;
    Some(value)
}

struct Strict;

impl<'de> DeserializeSeed<'de> for Strict {
    type Value = Value;
    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict {
    type Value = Value;
    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("JSON")
    }
    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }
    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(value.into())
    }
    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(value.into())
    }
    fn visit_f64<E>(self, value: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Value, A::Error> {
        let mut array = Vec::new();
        while let Some(item) = items.next_element_seed(Strict)? {
            array.push(item);
        }
        Ok(Value::Array(array))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = members.next_key::<String>()? {
            let value = members.next_value_seed(Strict)?;
            if object.insert(key, value).is_some() {
                return Err(de::Error::custom("a key repeats"));
            }
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ward_core::chart::tools::{CatalogueOptions, registry};

    #[test]
    fn the_copy_matches_what_the_runtime_registers() {
        // Not an oracle: a guard that the hand-written table and the catalogue agree, so the
        // oracles start from the same facts the specification states.
        let registry = registry(CatalogueOptions {
            code_interpreter: true,
        })
        .unwrap();
        assert_eq!(registry.len(), TABLE.len());
        for row in TABLE {
            let tool = registry.get(row.name).unwrap();
            assert_eq!(tool.meta().is_read_only(), row.read_only, "{}", row.name);
            assert_eq!(tool.meta().is_sequential(), row.sequential, "{}", row.name);
        }
    }

    #[test]
    fn the_default_limits_match_what_the_runtime_uses() {
        // Not an oracle: a guard that the oracle's table and the runtime's defaults agree
        // today, so a campaign's verdicts start from the facts the specification states.
        assert_eq!(Limits::default(), DEFAULT_LIMITS);
    }

    #[test]
    fn the_limit_ranges_match_what_the_runtime_refuses() {
        // A guard like the one above: at each end of each range, the runtime accepts the
        // bound and refuses one past it, as the oracle's table says.
        for (index, &(name, low, high)) in LIMIT_RANGES.iter().enumerate() {
            let with = |value: u64| {
                let mut limits = DEFAULT_LIMITS;
                match index {
                    0 => limits.turns_max = value as u32,
                    1 => limits.calls_per_batch_max = value as u32,
                    2 => limits.provider_timeout_ms = value,
                    3 => limits.inactivity_timeout_ms = value,
                    _ => limits.provider_retries_max = value as u32,
                }
                assert_eq!(limit_values(&limits)[index], value, "{name}");
                limits
            };
            for value in [low, high] {
                assert!(with(value).check().is_ok(), "{name} {value}");
                assert_eq!(limit_out_of_range(&with(value)), None, "{name} {value}");
            }
            for value in [low.checked_sub(1), Some(high + 1)].into_iter().flatten() {
                assert!(with(value).check().is_err(), "{name} {value}");
                assert!(limit_out_of_range(&with(value)).is_some(), "{name} {value}");
            }
        }
    }

    #[test]
    fn every_row_is_found_by_its_name_and_nothing_else_is() {
        for row in TABLE {
            assert_eq!(entry(row.name), Some(row), "{}", row.name);
        }
        for name in ["", "ask_use", "ask_userr", "Ask_user", "panes_lisT", "zzz"] {
            assert_eq!(entry(name), None, "{name}");
        }
    }

    #[test]
    fn strict_parsing_refuses_repeated_keys() {
        assert_eq!(strict_parse(" "), Some(Value::Object(Map::new())));
        assert!(strict_parse(r#"{"a":1,"a":1}"#).is_none());
        assert!(strict_parse("{").is_none());
        assert!(strict_parse(r#"{"a":[{"b":1},{"b":2}]}"#).is_some());
    }
}
