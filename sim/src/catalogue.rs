//! The oracles' own copy of the tool catalogue (SPEC §8) and their own compiled schemas.
//!
//! The oracles never ask the runtime what a tool is: they carry the table of the
//! specification here, written out by hand, and compile the published parameter schemas
//! (what `ward tools --json` prints) with `jsonschema` themselves. If the runtime's metadata
//! drifted from the specification, the oracles would notice.

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
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

/// The table's row for `name`.
pub fn entry(name: &str) -> Option<&'static Entry> {
    position(name).map(|index| &TABLE[index])
}

/// Where `name` stands in [`TABLE`].
///
/// Looked up by hash: a name's length and its first and last 8 bytes pick a slot of a small
/// open-addressing table built at compile time, and tell the rows apart (no two rows share
/// them; a test checks). A name of at most 16 bytes is then known in full; a longer one is
/// compared once more, 8 bytes at a time. A scan comparing names would call `memcmp` for
/// every row of the same length, and several names share a length.
pub fn position(name: &str) -> Option<usize> {
    let key = name_key(name.as_bytes())?;
    let mut slot = slot_of(key);
    for _ in 0..SLOTS {
        let row = usize::from(ROW_OF_SLOT[slot]).checked_sub(1)?;
        if NAME_KEYS[row] == Some(key) {
            let row_name = TABLE[row].name.as_bytes();
            let same = row_name.len() <= 16 || same_bytes(row_name, name.as_bytes());
            return same.then_some(row);
        }
        slot = (slot + 1) % SLOTS;
    }
    None
}

/// (length, first 8 bytes, last 8 bytes) of a name; `None` for a name shorter than 8 bytes
/// (the table has none).
const fn name_key(name: &[u8]) -> Option<(usize, u64, u64)> {
    let length = name.len();
    if length < 8 {
        return None;
    }
    let (mut first, mut last) = (0u64, 0u64);
    let mut index = 0;
    while index < 8 {
        first |= (name[index] as u64) << (8 * index);
        last |= (name[length - 8 + index] as u64) << (8 * index);
        index += 1;
    }
    Some((length, first, last))
}

/// Slots of the lookup table: over twice the rows, so that probes stay short.
const SLOTS: usize = 64;
const _: () = assert!(TABLE.len() < SLOTS / 2);

/// The first slot looked at for `key`.
const fn slot_of(key: (usize, u64, u64)) -> usize {
    let mixed = key.1 ^ key.2.rotate_left(29) ^ key.0 as u64;
    (mixed.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58) as usize
}

/// The [`name_key`] of each row.
const NAME_KEYS: [Option<(usize, u64, u64)>; TABLE.len()] = {
    let mut keys = [None; TABLE.len()];
    let mut row = 0;
    while row < TABLE.len() {
        keys[row] = name_key(TABLE[row].name.as_bytes());
        row += 1;
    }
    keys
};

/// Per slot, 1 + the row placed there (0: empty), placed with linear probing.
const ROW_OF_SLOT: [u8; SLOTS] = {
    let mut slots = [0u8; SLOTS];
    let mut row = 0;
    while row < TABLE.len() {
        if let Some(key) = NAME_KEYS[row] {
            let mut slot = slot_of(key);
            while slots[slot] != 0 {
                slot = (slot + 1) % SLOTS;
            }
            slots[slot] = row as u8 + 1;
        }
        row += 1;
    }
    slots
};

/// Whether two byte strings are equal, compared 8 bytes at a time.
fn same_bytes(left: &[u8], right: &[u8]) -> bool {
    left.len() == right.len()
        && left
            .chunks(8)
            .zip(right.chunks(8))
            .all(|(left, right)| left == right)
}

/// Whether a registry with or without the opt-in tools registers `name`.
pub fn is_registered(name: &str, code_interpreter: bool) -> bool {
    entry(name).is_some_and(|entry| !entry.opt_in || code_interpreter)
}

/// The oracles' compiled schemas, by the tool's row in [`TABLE`].
pub struct Schemas {
    /// Per row: the compiled schema and its published text; `None` for a tool the registry
    /// does not register (or whose schema does not compile).
    validators: Vec<Option<(jsonschema::Validator, String)>>,
}

impl std::fmt::Debug for Schemas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Schemas")
            .field("tools", &self.validators.iter().flatten().count())
            .finish()
    }
}

impl Schemas {
    /// Compiles every published schema of `registry`.
    pub fn compile(registry: &Registry) -> Schemas {
        let validators = TABLE
            .iter()
            .map(|entry| {
                let parameters = registry.get(entry.name)?.meta().parameters();
                let validator = jsonschema::validator_for(parameters).ok()?;
                Some((validator, parameters.to_string()))
            })
            .collect();
        Schemas { validators }
    }

    /// Whether `arguments` is a valid input of `tool` (R6: empty text is `{}`; text that is not
    /// JSON, or repeats a key, is invalid).
    pub fn accepts(&self, tool: &str, arguments: &str) -> bool {
        self.accepts_parsed(tool, strict_parse(arguments).as_ref())
    }

    /// [`accepts`](Self::accepts), for argument text already read by [`strict_parse`].
    pub fn accepts_parsed(&self, tool: &str, parsed: Option<&Value>) -> bool {
        position(tool).is_some_and(|row| self.row_accepts(row, parsed))
    }

    /// [`accepts_parsed`](Self::accepts_parsed) for the tool of `row` in [`TABLE`].
    pub fn row_accepts(&self, row: usize, parsed: Option<&Value>) -> bool {
        match (self.validators.get(row).and_then(Option::as_ref), parsed) {
            (Some((validator, _)), Some(value)) => validator.is_valid(value),
            _ => false,
        }
    }

    /// The published schema of `tool`, as JSON text (empty for an unknown tool).
    pub fn published(&self, tool: &str) -> &str {
        position(tool)
            .and_then(|row| self.validators[row].as_ref())
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
    fn every_row_is_found_where_it_stands_and_nothing_else_is() {
        for (row, entry) in TABLE.iter().enumerate() {
            assert!(entry.name.len() >= 8, "{}", entry.name);
            assert_eq!(position(entry.name), Some(row), "{}", entry.name);
            let keys = NAME_KEYS
                .iter()
                .filter(|&&key| key == NAME_KEYS[row])
                .count();
            assert_eq!(keys, 1, "{} shares its length and outer bytes", entry.name);
        }
        let near = [
            "",
            "x",
            "ask_use",
            "ask_userr",
            "Ask_user",
            "xpanes_list",
            "panes_lisT",
            "market_timeshare_rangX_query",
            "instruments_quXry_name",
        ];
        for name in near {
            assert_eq!(position(name), None, "{name}");
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
